# C types for _encode.py (Cython pure-Python mode).
cimport cython
from cpython.exc cimport PyErr_Clear
from cpython.object cimport PyObject
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memmove

from codec.structs._plan cimport (
    SHAPE_INTEGER, SHAPE_DOUBLE, SHAPE_NUMBER, SHAPE_TEXT, SHAPE_MESSAGE, SHAPE_PACKED,
    FieldPlan, MessagePlan,
)
from codec.structs._struct cimport (
    Struct, _check_member, _encode_error, _has, _lent, _lone_surrogate,
    _sized, _slot, _type_of, codec_below, codec_stack_floor, object_ptr,
    plan_of, ready,
)
from codec._buffer cimport codec_copy_value
from codec._wire cimport utf8_or_null
from codec._varint cimport (
    twos_complement, varint_size, varint_write, varint_write_padded, write_le, zigzag,
)
from codec._wire cimport (
    MAX_PREFIX_BYTES, VARINT, LEN, SGROUP, I32, I64,
    INT32, UINT32, SINT32, FIXED32, SFIXED32, STRING, BYTES, GROUP, BOOL,
    codec_small_int, double_bits, int64_range, plain_varint_bits, scalar_bits, zigzagged,
)

ctypedef unsigned char uchar
ctypedef const char *data_ptr

cdef extern from "Python.h":
    char *PyBytes_AS_STRING(object data)
    char *PyByteArray_AS_STRING(object data)
    bytes PyBytes_FromStringAndSize(const char *data, Py_ssize_t size)
    bint PyDict_Next(object mapping, Py_ssize_t *pos, PyObject **key, PyObject **value)
    Py_ssize_t PyDict_Size(object mapping) except -1
    Py_buffer *PyMemoryView_GET_BUFFER(object view)
    long long PyLong_AsLongLongAndOverflow(object number, int *overflow) noexcept
    unsigned long long PyLong_AsUnsignedLongLong(object number) noexcept
    PyObject *PyErr_Occurred() noexcept

ctypedef struct Splice:  # what goes at ``at`` in the scratch bytes
    Py_ssize_t at
    uint64_t value  # a length prefix, or the length of the data
    const char *data  # NULL for a length prefix
ctypedef Splice *splice_ptr

ctypedef struct Prefix:  # a length prefix left open (see _open_length)
    Py_ssize_t at  # its scratch byte
    Py_ssize_t extra  # the tape's extra then
    Py_ssize_t count  # the tape's splices then: where its splice goes, if it needs one

ctypedef struct MapItem:  # a map entry taken, and perhaps sorted (see _dict_entries)
    PyObject *key
    PyObject *value
    uint64_t number  # integer keys: the masked 64-bit pattern
    const char *text  # string keys: UTF-8 and its length
    Py_ssize_t size
ctypedef MapItem *item_ptr
ctypedef int (*item_order)(const void *a, const void *b) noexcept nogil  # as qsort takes it

cdef class Tape:
    cdef uchar *scratch  # the encoded bytes, but for the splices
    cdef Py_ssize_t used, room
    cdef Splice *splices
    cdef Py_ssize_t count, capacity
    cdef Py_ssize_t extra  # bytes the splices add
    cdef PyObject **owners  # the references the splices' data needs
    cdef Py_ssize_t held, owner_room
    cdef char *floor  # the lowest frame address nesting may reach (codec_stack_floor)
    cdef readonly Py_ssize_t size
    cdef readonly bint busy
    cdef bint deterministic  # map entries in upb's deterministic order, else in the map's own

cdef int _MAX_DEPTH
cdef enum:  # the sizes of _encode.py, as constants
    _TAG_ROOM = 8
    _MAX_VARINT_BYTES = 10
    _MAX_SCALAR_BYTES = 15
    _RUN = 256
    _COPIED = 64
    _KEPT_BYTES = 1048576
    _FIRST_BYTES = 4096
    _FIRST_SPLICES = 64
    _STACK_ITEMS = 64
    _INSERTED = 16
cdef uint64_t _MASK32, _MASK64
cdef Tape _SHARED

cdef Tape _taken()
@cython.locals(kept=Py_ssize_t)
cpdef release(Tape tape)
@cython.locals(owner=object_ptr)
cdef void _drop_references(Tape tape) noexcept

@cython.locals(room=Py_ssize_t, grown=cython.p_void)
cdef int _grow_scratch(Tape tape, Py_ssize_t size) except -1
@cython.locals(capacity=Py_ssize_t, grown=cython.p_void)
cdef int _grow_splices(Tape tape) except -1
@cython.locals(splice=splice_ptr)
cdef int _splice(Tape tape, Py_ssize_t index, Py_ssize_t at, uint64_t value,
                 const char *data) except -1
@cython.locals(room=Py_ssize_t, grown=cython.p_void)
cdef int _hold(Tape tape, object owner) except -1
@cython.locals(end=Py_ssize_t)
cdef inline int _data(Tape tape, object owner, const char *data, Py_ssize_t size) except -1

cpdef Tape measure(object message, bint partial, bint deterministic)
@cython.locals(fields=object_ptr, i=Py_ssize_t, field=object_ptr)
cdef int _message(Tape tape, MessagePlan plan, Struct message, int depth) except -1
@cython.locals(unknown=bytes)
cdef int _unknown_fields(Tape tape, Struct message) except -1
@cython.locals(field=FieldPlan, extensions=MessagePlan)
cdef int _extensions(Tape tape, MessagePlan plan, Struct message, int depth) except -1
cdef int _field(Tape tape, FieldPlan field, MessagePlan plan, object value, int depth) except -1
@cython.locals(sub=MessagePlan)
cdef int _repeated(Tape tape, FieldPlan field, MessagePlan plan, object items, int depth) except -1
@cython.locals(start=Py_ssize_t, prefix=Prefix)
cdef int _packed(Tape tape, FieldPlan field, object items) except -1
@cython.locals(i=Py_ssize_t)
cdef int _list_elements(Tape tape, FieldPlan field, list items) except -1
@cython.locals(wire_type=int, kind=int, sub=MessagePlan, bits=uint64_t)
cdef int _value(Tape tape, FieldPlan field, MessagePlan plan, object value, int depth,
                bint implicit) except -1
@cython.locals(prefix=Prefix)
cdef inline int _nested(Tape tape, FieldPlan field, MessagePlan sub, Struct value, int depth) except -1
@cython.locals(data=data_ptr, size=Py_ssize_t)
cdef inline int _text(Tape tape, FieldPlan field, MessagePlan plan, object text, bint implicit) except -1
cdef object _not_text(FieldPlan field, MessagePlan plan, object value)
@cython.locals(size=Py_ssize_t)
cdef int _bytes(Tape tape, FieldPlan field, MessagePlan plan, object value,
                bint implicit) except -1
cdef object _view_of(FieldPlan field, MessagePlan plan, object value)
cdef object _not_message(FieldPlan field, MessagePlan plan, object value)
cdef int _check_sequence(FieldPlan field, MessagePlan plan, object value) except -1

cdef int _map(Tape tape, FieldPlan field, MessagePlan plan, object mapping, int depth) except -1
@cython.locals(entry=MessagePlan, prefix=Prefix)
cdef int _entry(Tape tape, FieldPlan field, object key, object item, int depth) except -1
@cython.locals(count=Py_ssize_t, on_stack=MapItem[64], items=item_ptr,
               scratch=cython.p_void, taken=Py_ssize_t, index=Py_ssize_t, key=object_ptr,
               item=object_ptr, kind=int, mask=uint64_t, i=Py_ssize_t)
cdef int _dict_entries(Tape tape, FieldPlan field, MessagePlan plan, object mapping,
                       int depth) except -1
@cython.locals(i=Py_ssize_t, j=Py_ssize_t, current=MapItem)
cdef inline void _sort_items(MapItem *items, Py_ssize_t count, item_order before) noexcept nogil
@cython.locals(key=object, i=Py_ssize_t)
cdef int _sort_value(MapItem *item, bint text, uint64_t mask) except -1
@cython.locals(number=int64_t, overflow=int, unsigned=uint64_t)
cdef uint64_t _key_number(object key) except? 0xfffffffffffffffe
@cython.locals(x=item_ptr, y=item_ptr, common=Py_ssize_t, head=uint64_t, order=int)
cdef int _text_before(const void *a, const void *b) noexcept nogil
@cython.locals(x=item_ptr, y=item_ptr)
cdef int _number_before(const void *a, const void *b) noexcept nogil

@cython.locals(done=Py_ssize_t, i=Py_ssize_t, splice=splice_ptr)
cdef Py_ssize_t _replay(Tape tape, uchar *out, Py_ssize_t pos) noexcept
cdef Py_ssize_t write_tape(Tape tape, bytearray data, Py_ssize_t pos) noexcept
@cython.locals(tape=Tape, out=bytes, data=bytearray)
cpdef bytes encode(object message, bint partial=*, bint deterministic=*)
@cython.locals(tape=Tape, size=Py_ssize_t)
cpdef Py_ssize_t message_size(object message) except -1
