# C types for _decode.py (Cython pure-Python mode).
cimport cython
from cpython.object cimport PyObject
from libc.stdint cimport uint64_t

from codec._buffer cimport uninitialised
from codec.structs._plan cimport (
    CHECK_ELEMENT, CHECK_FIXED32, CHECK_FIXED64, CHECK_GENERAL, CHECK_TEXT, CHECK_VARINT, SHAPE_TEXT,
    FieldPlan, MessagePlan, _field_numbered, packed_run,
)
from codec.structs._struct cimport (
    Frame, Struct, _container, _plan_of_class, _set_field, _set_value, _slot, _store,
    add_decoded_entry,
    codec_below, codec_stack_floor, defer, new_struct, set_range, set_unknown, unknown_of,
    untrack_decoded,
)
from codec._varint cimport read_le, stream_base, varint_value
from codec._wire cimport (
    BYTES, EGROUP, ENUM, GROUP, I32, I64, LEN, MESSAGE, VARINT,
    fixed_end, fixed_value_of, length_end, packed_width, read_tag, skip_field, skip_value,
    stray_end_group, varint_length, varint_value_of,
)

ctypedef unsigned char uchar

cdef extern from "Python.h":
    bytes PyBytes_FromStringAndSize(const char *data, Py_ssize_t size)
    Py_buffer *PyMemoryView_GET_BUFFER(object view)

cdef extern from *:
    """
    /* Whether n bytes are ASCII (no byte has its high bit set), and a hash of them in
       *hash. Read 8 at a time, the last 8 in a load that may overlap the one before;
       fewer than 8 in two loads of 4, or three of a byte, that may overlap: few branches
       on the length, which strings of mixed lengths would mispredict. Each load is mixed
       into the hash as it is read; a caller that drops the hash has that work left out
       by the compiler. */
    static CYTHON_INLINE int codec_ascii_hash(const char *s, Py_ssize_t n, uint64_t *hash) {
        const uint64_t mix = 0x9E3779B97F4A7C15ULL;
        uint64_t h = (uint64_t)n * mix, high = 0, word;
        uint32_t half, other;
        Py_ssize_t i;
        if (n >= 8) {
            for (i = 0; i + 8 < n; i += 8) {
                memcpy(&word, s + i, 8);
                high |= word;
                h = (h ^ word) * mix;
            }
            memcpy(&word, s + n - 8, 8);
        } else if (n >= 4) {
            memcpy(&half, s, 4);
            memcpy(&other, s + n - 4, 4);
            word = ((uint64_t)half << 32) | other;
        } else {
            word = n == 0 ? 0 : ((uint64_t)(unsigned char)s[0] << 16)
                   | ((uint64_t)(unsigned char)s[n >> 1] << 8) | (unsigned char)s[n - 1];
        }
        *hash = (h ^ word) * mix;  /* its high bits depend on every bit read */
        return ((high | word) & 0x8080808080808080ULL) == 0;
    }
    static CYTHON_INLINE int codec_ascii(const char *s, Py_ssize_t n) {
        uint64_t unused;
        return codec_ascii_hash(s, n, &unused);
    }
    /* Short strings repeat from message to message (a map's keys, names, an enum-like
       value), so a str of at most CODEC_SHARED_BYTES ASCII bytes is looked up in a table
       of the 512 made last, by a hash of its bytes, and the one found is shared when its
       bytes are the same (its hash already computed, which a dict wants). A miss makes a
       new str, put in the table in place of the one there. */
    #define CODEC_SHARED_BITS 9
    #define CODEC_SHARED_BYTES 32
    static PyObject *codec_shared[1 << CODEC_SHARED_BITS];
    /* A str of n UTF-8 bytes: a short ASCII one from the table above, a longer one copied
       straight into a compact str; anything else goes to CPython's decoder. Bytes that
       are not UTF-8 set *bad and give None. */
    static PyObject *codec_text(const char *s, Py_ssize_t n, int *bad) {
        PyObject *text, **entry = NULL;
        uint64_t hash;
        *bad = 0;
        if (codec_ascii_hash(s, n, &hash)) {
            if (n <= CODEC_SHARED_BYTES) {
                entry = &codec_shared[hash >> (64 - CODEC_SHARED_BITS)];
                text = *entry;
                if (text != NULL && PyUnicode_GET_LENGTH(text) == n
                        && memcmp(PyUnicode_DATA(text), s, n) == 0) {
                    Py_INCREF(text);
                    return text;
                }
            }
            text = PyUnicode_New(n, 127);
            if (text == NULL) return NULL;
            memcpy(PyUnicode_DATA(text), s, n);
            if (entry != NULL) {
                Py_INCREF(text);
                Py_XSETREF(*entry, text);
            }
            return text;
        }
        text = PyUnicode_DecodeUTF8(s, n, NULL);
        if (text == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            *bad = 1;
            Py_RETURN_NONE;
        }
        return text;
    }
    """
    bint codec_ascii(const char *s, Py_ssize_t n)
    object codec_text(const char *s, Py_ssize_t n, int *bad)

cdef class Decoding(Frame):
    cdef object source  # a memoryview while a decode runs; a lazy frame's, always
    cdef Py_ssize_t base
    cdef bint zero_copy, numpy, busy, lazy, deferring, is_frame
    cdef Decoding frame
    cdef Py_ssize_t max_depth, max_elements, elements
    @cython.locals(message=Struct)
    cdef Struct run(self, MessagePlan plan, memoryview source, Py_ssize_t base)
    cdef int begin_checks(self, list taken, Py_ssize_t base) except -1
    cdef int check_next(self, MessagePlan plan, const uchar *data, Py_ssize_t start,
                        Py_ssize_t end) except -1
    @cython.locals(fresh=Decoding)
    cdef Decoding _fresh(self)
    cdef int _start(self, memoryview source, Py_ssize_t base) except -1
    @cython.locals(message=Struct)
    cdef Struct _message(self, MessagePlan plan, memoryview source)
    cdef int parse(self, Struct message, Py_ssize_t first, uint64_t pending) except -1
    @cython.locals(plan=MessagePlan, pos=Py_ssize_t, end=Py_ssize_t, start=Py_ssize_t,
                   tag=uint64_t, field=FieldPlan, after=Py_ssize_t)
    cdef int _parse(self, Struct message, Py_ssize_t first, uint64_t pending) except -1
    cdef bytes rejected_entry
    cdef bytearray stray_values
    cdef uint64_t tag
    cdef Py_ssize_t body, after
    cdef char *floor  # the lowest frame address nesting may reach (codec_stack_floor)

cdef class Decoder:
    cdef readonly object type
    cdef readonly bint zero_copy, numpy, lazy
    cdef readonly Py_ssize_t max_depth, max_elements
    cdef MessagePlan plan
    cdef Decoding state
    cdef bint _initialised(self) noexcept

cdef inline int _spend(Decoding state, Py_ssize_t count, Py_ssize_t offset) except -1
cdef object _NO_INPUT
cdef Py_ssize_t SMALL_PART


@cython.locals(start=Py_ssize_t, value_start=Py_ssize_t, tag=uint64_t, field=FieldPlan,
               after=Py_ssize_t, seen=uint64_t)
cdef Py_ssize_t decode_message(MessagePlan plan, Struct message, const uchar *data, Py_ssize_t pos,
                               Py_ssize_t end, Decoding state, int depth, int group) except -1
@cython.locals(after=Py_ssize_t, body=Py_ssize_t)
cdef Py_ssize_t _decode_field(FieldPlan field, MessagePlan plan, Struct message, const uchar *data,
                              Py_ssize_t pos, Py_ssize_t end, int wire, Decoding state,
                              int depth) except -2
@cython.locals(holder=FieldPlan, extensions=MessagePlan, field=FieldPlan)
cdef Py_ssize_t _decode_extension(MessagePlan plan, Struct message, const uchar *data,
                                  Py_ssize_t pos, Py_ssize_t end, uint64_t tag, Decoding state,
                                  int depth) except -2
cdef int _keep_stray(FieldPlan field, uint64_t raw, Decoding state) except -1
cdef Struct _new_part(MessagePlan plan, Decoding state, Py_ssize_t pos)
@cython.locals(kind=int, n=Py_ssize_t, width=Py_ssize_t, after=Py_ssize_t, start=Py_ssize_t)
cdef object _read_value(FieldPlan field, const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                        Decoding state)
cdef bytes _bytes_at(const uchar *data, Py_ssize_t start, Py_ssize_t end, Decoding state)
@cython.locals(first=cython.p_char, text=object, bad=int)
cdef object _text_at(const uchar *data, Py_ssize_t start, Py_ssize_t end, Decoding state)
cdef object _list_of(MessagePlan plan, Struct message, FieldPlan field)
@cython.locals(width=Py_ssize_t)
cdef int _decode_packed(MessagePlan plan, FieldPlan field, Struct message, const uchar *data,
                        Py_ssize_t pos, Py_ssize_t end, Decoding state) except -1
@cython.locals(count=Py_ssize_t)
cdef object _numpy_column(FieldPlan field, object current, const uchar *data, Py_ssize_t pos,
                          Py_ssize_t end, Decoding state, Py_ssize_t width)
cdef bint _decode_entry(FieldPlan field, object mapping, const uchar *data, Py_ssize_t pos,
                       Py_ssize_t end, Decoding state, int depth) except -1
@cython.locals(key_field=FieldPlan, value_field=FieldPlan, elements=Py_ssize_t, start=Py_ssize_t,
               at=Py_ssize_t)
cdef bint _read_entry(FieldPlan field, object mapping, const uchar *data, Py_ssize_t pos,
                      Py_ssize_t end, Decoding state, int depth) except -1
@cython.locals(entry_plan=MessagePlan, entry=Struct, value_field=FieldPlan)
cdef bint _decode_entry_struct(FieldPlan field, object mapping, const uchar *data,
                              Py_ssize_t pos, Py_ssize_t end, Decoding state,
                              int depth) except -1
cdef inline int _check_nesting(Decoding state, int depth, Py_ssize_t pos) except -1
cdef object _not_utf8(FieldPlan field, Decoding state, Py_ssize_t start)
cdef inline int _charge_part(MessagePlan plan, Decoding state, Py_ssize_t pos) except -1

cdef uint64_t _once(uint64_t seen, FieldPlan field) except 0
@cython.locals(tag=uint64_t, after=Py_ssize_t)
cdef Py_ssize_t _run_end(FieldPlan field, const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                         int wire, Decoding state, int depth) except -1
@cython.locals(after=Py_ssize_t)
cdef Py_ssize_t _defer(FieldPlan field, MessagePlan plan, Struct message, const uchar *data,
                       Py_ssize_t pos, Py_ssize_t end, int wire, Decoding state,
                       int depth) except -1
@cython.locals(source=memoryview, whole=bint)
cdef Decoding _pending_frame(Decoding state)
@cython.locals(frame=Decoding)
cdef Decoding _new_frame(Decoding state, memoryview source)
@cython.locals(seen=uint64_t, start=Py_ssize_t, tag=uint64_t, field=FieldPlan, after=Py_ssize_t,
               checks="const uchar *", size=Py_ssize_t, check=int)
cdef int _check_message(MessagePlan plan, const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                        Decoding state, int depth) except -1
@cython.locals(holder=FieldPlan)
cdef bint _is_extension(MessagePlan plan, uint64_t number) except -1
@cython.locals(after=Py_ssize_t)
cdef Py_ssize_t _check_field(FieldPlan field, const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                             int wire, Decoding state, int depth) except -2
@cython.locals(width=Py_ssize_t, after=Py_ssize_t, count=Py_ssize_t)
cdef int _check_packed(FieldPlan field, const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                       Decoding state) except -1
@cython.locals(entry=MessagePlan, value_field=FieldPlan, start=Py_ssize_t, at=Py_ssize_t,
               checks="const uchar *", size=Py_ssize_t, check=int, has_part=bint)
cdef inline int _check_entry(FieldPlan field, const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                      Decoding state, int depth) except -1
@cython.locals(after=Py_ssize_t)
cdef inline Py_ssize_t _value_end(FieldPlan field, const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                                  Decoding state) except -1
@cython.locals(after=Py_ssize_t, field=FieldPlan)
cdef inline Py_ssize_t _leaf_of(MessagePlan plan, int check, const uchar *data, Py_ssize_t pos,
                                Py_ssize_t end, Decoding state) except -1
@cython.locals(after=Py_ssize_t)
cdef inline Py_ssize_t _leaf_end(int check, const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                                 Decoding state) except -2
cdef inline bint _is_utf8(const uchar *data, Py_ssize_t start, Py_ssize_t end,
                   Decoding state) except -1
cdef int end_checks(list taken) except -1
cdef const uchar *_bytes_of(object source)


