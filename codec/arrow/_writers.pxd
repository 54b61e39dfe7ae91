# C types for _writers.py (Cython pure-Python mode).
cimport cython
from libc.stdint cimport uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memmove

from codec._buffer cimport (
    byte_pointer, codec_copy_value, cut_to, make_room, release_claim, set_end,
)
from codec._varint cimport (
    read_le, uchar, varint_size, varint_write, varint_write_padded, write_le,
)
from codec._wire cimport ENUM, GROUP, INT32, MESSAGE, SINT32, SINT64, STRING, VARINT
from codec.arrow._builders cimport (
    BOOLS, FIXED, LIST, MAP, STRUCT, TEXTS, ArrowArray, codec_ascii_span,
    codec_utf8_valid,
)
from codec.framing cimport FrameEncoder
from codec.structs._decode cimport Decoder, end_checks
from codec.structs._plan cimport FieldPlan, MessagePlan

cdef extern from "Python.h":
    ctypedef struct PyObject
    PyObject *PyTuple_GET_ITEM(object items, Py_ssize_t index)
    Py_buffer *PyMemoryView_GET_BUFFER(object view)
    object PyMemoryView_FromMemory(char *memory, Py_ssize_t size, int flags)
    int PyBUF_READ

cdef Py_ssize_t _MAX_POSITION, _MAX_DEPTH, _SCALAR_ROOM, _ASCII_AHEAD
cdef uint64_t _LOW_32, _LOW_64

@cython.final
cdef class Reader:
    cdef readonly int shape, depth
    cdef readonly FieldPlan field
    cdef readonly str path
    cdef readonly Py_ssize_t width
    cdef readonly tuple children, members, oneofs, required
    cdef readonly MessagePlan plan
    cdef bint rules
    cdef uint64_t oneof_bit
    cdef int kind
    cdef bint varint, implicit, packed, group, utf8
    cdef uint64_t tag, tag_word, end_tag_word
    cdef Py_ssize_t tag_size
    cdef readonly Py_ssize_t shift, size, span_limit
    cdef Py_ssize_t ascii_from, ascii_to
    cdef readonly bint wide
    cdef object held, checker
    cdef const uchar *validity
    cdef const uchar *offsets
    cdef const uchar *values
    cdef readonly bint made
    cpdef unbind(self)

cdef Py_ssize_t _data_reach(Reader reader, Py_ssize_t size) except -1
cdef bint _is_made(Reader reader) noexcept
@cython.locals(reach=Py_ssize_t, child=object)
cdef int _check_reach(Reader reader) except -1
cdef object _bytes(object buffer)
cdef int _check_holds(object view, Py_ssize_t size, str path) except -1
cdef const uchar *_address(object view) noexcept
cdef void _point(Reader reader, object held, const uchar *validity, const uchar *offsets,
                 const uchar *values) noexcept
cdef void _reach(Reader reader, Py_ssize_t shift, Py_ssize_t size,
                 Py_ssize_t span_limit) noexcept

@cython.locals(exportable=bint)
cpdef bint take_widths(Reader root, object pa, object schema) except -1
@cython.locals(shape=int, exportable=bint)
cdef bint _take_width(Reader reader, object pa, object arrow_type) except -1

cdef class Exported:
    cdef ArrowArray *array

@cython.locals(exported=Exported)
cpdef Py_ssize_t bind_exported(Reader root, object batch) except -1
@cython.locals(shape=int, buffers=Py_ssize_t, size=Py_ssize_t, slot=Py_ssize_t,
               child="ArrowArray *", at="const void **", validity="const uchar *",
               offsets="const uchar *", values="const uchar *", span_limit=Py_ssize_t)
cdef int _bind_node(Reader reader, ArrowArray *node, Py_ssize_t shift) except -1

@cython.final
cdef class Walk:
    cdef FrameEncoder target
    cdef bint partial
    cdef uchar *out
    cdef Py_ssize_t room, pos, row
    cdef list checkers
    cdef Reader checking

@cython.locals(target=FrameEncoder, walk=Walk, start=Py_ssize_t, rows=Py_ssize_t)
cpdef Py_ssize_t encode_batches(Reader root, object encoder, object batches, object bind,
                                bint partial) except -1
@cython.locals(row=Py_ssize_t, prefix=Py_ssize_t, size=Py_ssize_t)
cdef int _rows(Reader root, Py_ssize_t rows, Walk walk, Py_ssize_t limit) except -1
cdef inline int _room(Walk walk, Py_ssize_t size) except -1
cdef void _moved(Walk walk) noexcept
cdef inline Py_ssize_t _open_length(Walk walk) noexcept
@cython.locals(size=Py_ssize_t, extra=Py_ssize_t)
cdef inline Py_ssize_t _close_length(Walk walk, Py_ssize_t body) except -1
cdef void _move_up(uchar *out, Py_ssize_t start, Py_ssize_t size, Py_ssize_t by) noexcept
@cython.locals(members=tuple, i=Py_ssize_t, child="PyObject *", q=Py_ssize_t, shape=int,
               raw=uint64_t, start=Py_ssize_t, end=Py_ssize_t, chosen=uint64_t)
cdef int _message(Reader reader, Py_ssize_t p, Walk walk) except -1
@cython.locals(start=Py_ssize_t, end=Py_ssize_t, items=Reader)
cdef int _composite(Reader reader, Py_ssize_t q, Walk walk) except -1
@cython.locals(body=Py_ssize_t, k=Py_ssize_t)
cdef int _elements(Reader reader, Reader items, Py_ssize_t start, Py_ssize_t end,
                   Walk walk) except -1
@cython.locals(keys=Reader, values=Reader, e=Py_ssize_t, body=Py_ssize_t)
cdef int _entries(Reader reader, Reader entries, Py_ssize_t start, Py_ssize_t end,
                  Walk walk) except -1
cdef int _tagged(Reader reader, Py_ssize_t q, Walk walk) except -1
@cython.locals(shape=int)
cdef int _element(Reader reader, Py_ssize_t q, Walk walk) except -1
@cython.locals(body=Py_ssize_t)
cdef int _nested(Reader reader, Py_ssize_t q, Walk walk) except -1
cdef inline void _number(Reader reader, uint64_t raw, Walk walk) noexcept
@cython.locals(size=Py_ssize_t)
cdef int _text(Reader reader, Py_ssize_t q, Py_ssize_t start, Py_ssize_t end, Walk walk) except -1
cdef inline uint64_t _load(Reader reader, Py_ssize_t q) noexcept
cdef inline Py_ssize_t _tag_at(uchar *out, Py_ssize_t pos, Reader reader) noexcept
cdef inline uint64_t _varint_bits(int kind, uint64_t raw) noexcept
cdef inline bint _is_valid(Reader reader, Py_ssize_t q) noexcept
cdef inline bint _bit(const uchar *data, Py_ssize_t q) noexcept
@cython.locals(raw=uint64_t)
cdef inline Py_ssize_t _offset(Reader reader, Py_ssize_t q) noexcept
cdef inline bint _is_utf8(Reader reader, Py_ssize_t start, Py_ssize_t end) noexcept
@cython.locals(ahead=Py_ssize_t)
cdef bint _is_utf8_text(Reader reader, Py_ssize_t start, Py_ssize_t end) noexcept
cdef bint _is_utf8_alone(Reader reader, Py_ssize_t start, Py_ssize_t end) noexcept

@cython.locals(chosen=object, member=object)
cdef int _check_oneofs(Reader reader, Py_ssize_t p, Walk walk) except -1
@cython.locals(member=object)
@cython.locals(checker=Decoder, plan=MessagePlan)
cdef int _check_kept(Reader reader, Py_ssize_t start, Py_ssize_t end, Walk walk) except -1
cdef int _refuse_kept(Reader reader, Walk walk, object error) except -1
cdef int _check_required(Reader reader, Py_ssize_t p, Walk walk) except -1
cdef int _refuse(Reader reader, Walk walk, str what) except -1
cdef int _invalid_offsets(Reader reader, Py_ssize_t q) except -1
