# C types for _plan.py (Cython pure-Python mode).
cimport cython
from cpython.object cimport PyObject
from libc.stdint cimport uint64_t

from codec._varint cimport varint_size
from codec._wire cimport (
    DOUBLE, EGROUP, ENUM, GROUP, I32, I64, INT32, INT64, LEN, MESSAGE, STRING, UINT32, UINT64, VARINT,
    natural_wire_type,
)

ctypedef PyObject *object_ptr

cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef *d_member

ctypedef PyMemberDescrObject *member_descr_ptr

cdef Py_ssize_t _DIRECT_NUMBERS
cdef enum:  # FieldPlan.shape
    SHAPE_INTEGER = 0
    SHAPE_DOUBLE = 1
    SHAPE_NUMBER = 2
    SHAPE_TEXT = 3
    SHAPE_MESSAGE = 4
    SHAPE_PACKED = 5
    SHAPE_OTHER = 6
cdef enum:  # MessagePlan.checks
    CHECK_GENERAL = 0
    CHECK_VARINT = 1
    CHECK_FIXED64 = 2
    CHECK_BYTES = 3
    CHECK_TEXT = 4
    CHECK_FIXED32 = 5
    CHECK_ELEMENT = 8
cdef int _shape(int kind, bint repeated, bint packed, int wire_type, bint closed) noexcept
@cython.locals(descriptor=member_descr_ptr)
cdef Py_ssize_t _member_offset(object member) except? -1

cdef class FieldPlan:
    cdef readonly str name, label
    cdef readonly int number, kind, wire_type
    cdef readonly Py_ssize_t slot
    cdef readonly bint repeated, packed, presence, implicit
    cdef readonly int shape, check
    cdef readonly str utf8
    cdef readonly object closed_enum, default, enum_type
    cdef readonly dict enum_members
    cdef readonly uint64_t tag, end_tag, tag_word
    cdef readonly Py_ssize_t tag_size
    cdef readonly MessagePlan message
    cdef readonly FieldPlan map_key, map_value
    cdef readonly str numpy_type
    cdef readonly tuple oneof_others
    cdef readonly Py_ssize_t has_bit, offset
    cdef readonly object member
    cpdef link(self, MessagePlan message, bint is_map)

cdef class MessagePlan:
    cdef readonly str full_name
    cdef readonly tuple fields_by_slot, fields, numbered, containers, singular
    cdef readonly bytes checks
    cdef readonly tuple by_tag
    cdef readonly dict by_number, by_name, oneofs, oneof_members
    cdef readonly Py_ssize_t presence_words
    cdef readonly object cls, required, convert
    cdef readonly FieldPlan extensions  # the hidden slot of the extensions' struct, or None
    cdef unsigned int class_version  # cls's version tag when _construct last looked it up
    cpdef require(self, object check)
    cpdef accept(self, object convert)
    @cython.locals(field=FieldPlan)
    cpdef rename(self, str full_name)
    @cython.locals(member=FieldPlan, slot=Py_ssize_t)
    cpdef add_oneof(self, str name, tuple slots, bint synthetic=*)
    @cython.locals(bits=Py_ssize_t, field=FieldPlan)
    cpdef bind(self, object cls)
    cpdef extend(self, MessagePlan extensions)

cdef bint _opens_value(Py_ssize_t tag) noexcept
cdef int _check_of(FieldPlan field) except -1


cdef inline FieldPlan _field_numbered(MessagePlan plan, Py_ssize_t number):
    # the field numbered ``number`` in plan, or None (small numbers by list index)
    cdef tuple numbered = plan.numbered
    if number < len(numbered):
        return <FieldPlan>numbered[number]  # a FieldPlan or None, as MessagePlan made it
    return plan.by_number.get(number)


cdef inline bint packed_run(FieldPlan field, int wire) noexcept:
    # whether an occurrence of field on wire type ``wire`` is a packed run
    return field.repeated and wire == LEN and (
        field.wire_type == VARINT or field.wire_type == I32 or field.wire_type == I64
    )
