# C types for _builders.py (Cython pure-Python mode).
cimport cython
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from codec._buffer cimport codec_copy_value, grown, is_exported, resize_zeroed
from codec.framing cimport frames_end
from codec._varint cimport read_le, uchar, varint_scan, varint_value, write_le
from codec._wire cimport (
    BOOL, EGROUP, GROUP, I32, I64, LEN, MESSAGE, SINT32, SINT64, STRING, VARINT, fixed_end,
    length_end, packed_width, read_tag, skip_field, stray_end_group, varint_length,
    varint_length_in,
)
from codec.structs._decode cimport Decoder, codec_ascii, end_checks
from codec.structs._plan cimport FieldPlan, MessagePlan, _field_numbered, packed_run

cdef extern from "Python.h":
    ctypedef struct PyObject
    PyObject *PyTuple_GET_ITEM(object items, Py_ssize_t index)
    Py_buffer *PyMemoryView_GET_BUFFER(object view)
    char *PyByteArray_AS_STRING(object data)
    bytearray PyByteArray_FromStringAndSize(const char *data, Py_ssize_t size)

cdef extern from *:
    """
    /* Where a tuple's items are: read through it, an item is not held, nor the tuple. */
    #define codec_items(items) (((PyTupleObject *)(items))->ob_item)
    """
    PyObject **codec_items(tuple items) noexcept

cdef inline uchar *_pointer(bytearray data) noexcept:
    return <uchar *>PyByteArray_AS_STRING(data)

cdef extern from *:
    """
    /* Whether n bytes are UTF-8 as CPython reads it (no surrogates, no overlong forms):
       a DFA over the bytes, with no object made. */
    static int codec_utf8_valid(const char *text, Py_ssize_t n) {
        const unsigned char *s = (const unsigned char *)text;
        Py_ssize_t i = 0;
        while (i < n) {
            unsigned char c = s[i];
            if (c < 0x80) { i++; continue; }
            Py_ssize_t need;
            unsigned char low = 0x80, high = 0xBF;
            if (c >= 0xC2 && c <= 0xDF) need = 1;
            else if (c == 0xE0) { need = 2; low = 0xA0; }
            else if (c >= 0xE1 && c <= 0xEC) need = 2;
            else if (c == 0xED) { need = 2; high = 0x9F; }
            else if (c >= 0xEE && c <= 0xEF) need = 2;
            else if (c == 0xF0) { need = 3; low = 0x90; }
            else if (c >= 0xF1 && c <= 0xF3) need = 3;
            else if (c == 0xF4) { need = 3; high = 0x8F; }
            else return 0;
            if (n - i <= need) return 0;
            if (s[i + 1] < low || s[i + 1] > high) return 0;
            for (Py_ssize_t k = 2; k <= need; k++)
                if ((s[i + k] & 0xC0) != 0x80) return 0;
            i += need + 1;
        }
        return 1;
    }
    """
    bint codec_utf8_valid(const char *text, Py_ssize_t n) noexcept

cdef extern from *:
    """
    /* How many of the n bytes at s are ASCII before the first that is not: 32 at a time,
       then 8, then the byte found among them. */
    static Py_ssize_t codec_ascii_span(const char *s, Py_ssize_t n) {
        const uint64_t high = 0x8080808080808080ULL;
        uint64_t a, b, c, d;
        Py_ssize_t i = 0;
        for (; i + 32 <= n; i += 32) {
            memcpy(&a, s + i, 8); memcpy(&b, s + i + 8, 8);
            memcpy(&c, s + i + 16, 8); memcpy(&d, s + i + 24, 8);
            if ((a | b | c | d) & high) break;
        }
        for (; i + 8 <= n; i += 8) {
            memcpy(&a, s + i, 8);
            if (a & high) break;
        }
        while (i < n && (unsigned char)s[i] < 0x80) i++;
        return i;
    }
    """
    Py_ssize_t codec_ascii_span(const char *s, Py_ssize_t n) noexcept

cdef extern from *:
    """
    /* How many of the n bytes at p end a varint (their high bit clear): 8 at a time with
       GCC and Clang, one at a time elsewhere. */
    static Py_ssize_t codec_final_bytes(const unsigned char *p, Py_ssize_t n) {
        Py_ssize_t count = 0, i = 0;
    #if defined(__GNUC__) || defined(__clang__)
        for (; i + 8 <= n; i += 8) {
            unsigned long long word;
            memcpy(&word, p + i, 8);
            count += __builtin_popcountll(~word & 0x8080808080808080ULL);
        }
    #endif
        for (; i < n; i++) count += p[i] < 0x80;
        return count;
    }
    """
    Py_ssize_t codec_final_bytes(const uchar *p, Py_ssize_t n) noexcept

cdef extern from *:
    """
    /* The array of Arrow's C data interface (its ABI, as the Arrow specification gives
       it; a batch's schema goes over as the pyarrow object, so ArrowSchema is not used). */
    #ifndef CODEC_ARROW_ARRAY
    #define CODEC_ARROW_ARRAY
    struct ArrowArray {
        int64_t length; int64_t null_count; int64_t offset; int64_t n_buffers;
        int64_t n_children; const void **buffers; struct ArrowArray **children;
        struct ArrowArray *dictionary; void (*release)(struct ArrowArray *);
        void *private_data;
    };
    #endif
    /* The arrays of one batch, a node a column, in one block with their buffers'
       pointers and a view of each buffer (so that it stays put, and its owner sees it
       held: is_exported). The block lives until Arrow has released every node; a
       release may come from any thread, with or without the GIL. */
    typedef struct {
        Py_ssize_t used, slots, views, alive;
        struct ArrowArray *node;     /* a node a column, root first */
        struct ArrowArray **child;   /* each node's children, a run of them */
        const void **buffer;         /* 3 a node */
        Py_buffer *view;             /* 3 a node */
    } CodecBatch;
    static CodecBatch *codec_batch_new(Py_ssize_t size) {
        CodecBatch *batch = (CodecBatch *)PyMem_RawCalloc(1, sizeof(CodecBatch)
            + size * (sizeof(struct ArrowArray) + sizeof(struct ArrowArray *)
                      + 3 * sizeof(void *) + 3 * sizeof(Py_buffer)));
        if (batch == NULL) { PyErr_NoMemory(); return NULL; }
        batch->node = (struct ArrowArray *)(batch + 1);
        batch->child = (struct ArrowArray **)(batch->node + size);
        batch->buffer = (const void **)(batch->child + size);
        batch->view = (Py_buffer *)(batch->buffer + 3 * size);
        return batch;
    }
    /* Let the views go and free the block (the GIL held). */
    static void codec_batch_free(CodecBatch *batch) {
        for (Py_ssize_t i = 0; i < batch->views; i++) PyBuffer_Release(&batch->view[i]);
        PyMem_RawFree(batch);
    }
    static void codec_batch_release(struct ArrowArray *array) {
        CodecBatch *batch = (CodecBatch *)array->private_data;
        if (!Py_IsInitialized()) { array->release = NULL; return; }  /* after exit: kept */
        PyGILState_STATE gil = PyGILState_Ensure();
        for (int64_t i = 0; i < array->n_children; i++)
            if (array->children[i]->release != NULL)
                array->children[i]->release(array->children[i]);
        array->release = NULL;
        if (--batch->alive == 0) codec_batch_free(batch);
        PyGILState_Release(gil);
    }
    /* The next node, with room for n_children children and no buffer yet. */
    static struct ArrowArray *codec_batch_node(CodecBatch *batch, int64_t n_children) {
        struct ArrowArray *node = &batch->node[batch->used];
        node->buffers = &batch->buffer[3 * batch->used];
        node->children = &batch->child[batch->slots];
        node->n_children = n_children;
        node->private_data = batch;
        batch->used += 1;
        batch->slots += n_children;
        return node;
    }
    /* Add the bytes of data (a bytearray; None: no buffer, a bitmap of no nulls) as the
       node's next buffer; -1 with an exception set. */
    static int codec_batch_buffer(CodecBatch *batch, struct ArrowArray *node, PyObject *data) {
        const void *bytes = NULL;
        if (data != Py_None) {
            Py_buffer *view = &batch->view[batch->views];
            if (PyObject_GetBuffer(data, view, PyBUF_SIMPLE) < 0) return -1;
            batch->views += 1;
            bytes = view->buf;
        }
        node->buffers[node->n_buffers++] = bytes;
        return 0;
    }
    /* Ready the nodes for Arrow, each to be released once, the root last; the block is
       also held by the caller, until codec_batch_done (the root may be released before
       the call that hands it over returns). */
    static struct ArrowArray *codec_batch_root(CodecBatch *batch) {
        batch->alive = batch->used + 1;
        for (Py_ssize_t i = 0; i < batch->used; i++)
            batch->node[i].release = codec_batch_release;
        return &batch->node[0];
    }
    /* The caller lets the block go (the GIL held): the nodes too, if Arrow did not take
       the root (moved out, its release is NULL here). */
    static void codec_batch_done(CodecBatch *batch) {
        struct ArrowArray *root = &batch->node[0];
        if (root->release != NULL) root->release(root);
        if (--batch->alive == 0) codec_batch_free(batch);
    }
    """
    struct ArrowArray:
        int64_t length, null_count, offset, n_buffers, n_children
        const void **buffers
        ArrowArray **children
        ArrowArray *dictionary
        void (*release)(ArrowArray *)
    ctypedef struct CodecBatch:
        pass
    CodecBatch *codec_batch_new(Py_ssize_t size) except NULL
    void codec_batch_free(CodecBatch *batch)
    ArrowArray *codec_batch_node(CodecBatch *batch, int64_t n_children) noexcept
    int codec_batch_buffer(CodecBatch *batch, ArrowArray *node, object data) except -1
    ArrowArray *codec_batch_root(CodecBatch *batch) noexcept
    void codec_batch_done(CodecBatch *batch) noexcept

cpdef enum:  # Column.shape (Python sees them too: codec.arrow._schema)
    FIXED = 0
    BOOLS = 1
    TEXTS = 2
    LIST = 3
    MAP = 4
    STRUCT = 5

cdef Py_ssize_t _INITIAL, _RETIRED, _SPAN
cdef object _LOW_64

@cython.final
cdef class Oneof:
    cdef readonly tuple members
    cdef Py_ssize_t row, holder

@cython.final
cdef class Column:
    cdef readonly int shape
    cdef readonly FieldPlan field
    cdef readonly bint nullable
    cdef readonly Py_ssize_t width, offset_width
    cdef readonly tuple children, numbered, by_tag
    cdef PyObject **children_at  # their items (see _items_of)
    cdef PyObject **by_tag_at
    cdef readonly int plain_wire, kind
    cdef readonly MessagePlan plan
    cdef object checker
    cdef readonly Oneof oneof
    cdef readonly Py_ssize_t oneof_index
    cdef readonly bint built
    cdef readonly Py_ssize_t length, values_size, offsets_size
    cdef bytearray validity, values, offsets
    cdef list retired
    cdef tuple hint
    cdef bint fresh
    cdef uchar *validity_at
    cdef uchar *values_at
    cdef uchar *offsets_at
    cdef Py_ssize_t validity_room, values_room, offsets_room
    cdef int begin(self) except -1
    cdef inline int catch_up(self, Py_ssize_t row) except -1
    @cython.locals(gap=Py_ssize_t, end=Py_ssize_t)
    cdef int _fill(self, Py_ssize_t row) except -1
    cpdef int clear(self, bint sized=*) except -1
    cpdef int let_go(self) except -1
    cpdef int complete(self) except -1
    cdef int truncate(self, Py_ssize_t row) except -1
    cdef inline int put_bits(self, uint64_t bits) except -1
    @cython.locals(row=Py_ssize_t)
    cdef int put_bool(self, bint value) except -1
    @cython.locals(size=Py_ssize_t)
    cdef inline int put_text(self, const uchar *data, Py_ssize_t start, Py_ssize_t end) except -1
    cdef int extend_text(self, const uchar *data, Py_ssize_t start, Py_ssize_t end) except -1
    @cython.locals(row=Py_ssize_t)
    cdef inline int _mark(self) except -1
    cdef inline int _room(self, Py_ssize_t size) except -1
    @cython.locals(total=Py_ssize_t, generation=tuple)
    cpdef Py_ssize_t held(self) except -1
    cdef int _retire(self) except -1
    @cython.locals(bitmap=Py_ssize_t)
    cdef int _start(self, bint sized) except -1
    cdef inline Py_ssize_t _bitmap_written(self) noexcept
    @cython.locals(role=int)
    cdef int _grow(self, bytearray data, Py_ssize_t end) except -1
    @cython.locals(reused=tuple)
    cdef bint _adopt(self) except -1
    cdef int _moved(self) except -1
    @cython.locals(size=Py_ssize_t)
    cdef inline int _offset(self, Py_ssize_t offset, Py_ssize_t rows) except -1
    cdef Py_ssize_t _offset_at(self, Py_ssize_t row) noexcept

cdef inline PyObject **_items_of(tuple items) noexcept
cdef Py_ssize_t _sized(Py_ssize_t used) noexcept
@cython.locals(index=Py_ssize_t, generation=tuple)
cdef object _free_generation(list retired)
@cython.locals(data=bytearray)
cdef bytearray _small_buffer()
cdef bytearray _taken_over(bytearray data, Py_ssize_t used, bytearray current,
                          Py_ssize_t written)
cdef int _shape_of(Column column) noexcept
cdef bint _is_built(Column column) noexcept
cdef inline void _set_bit(uchar *data, Py_ssize_t index) noexcept
@cython.locals(index=Py_ssize_t)
cdef void _zero_bits(uchar *data, Py_ssize_t start, Py_ssize_t stop) noexcept
cdef void _zero_bytes(uchar *data, Py_ssize_t start, Py_ssize_t stop) noexcept

cdef class Walk:
    cdef memoryview view
    cdef Py_ssize_t base, max_depth, stop, body
    cdef bint dropped_value, dropped
    cdef list checkers

@cython.locals(walk=Walk)
cpdef Py_ssize_t decode_frames(Column root, memoryview view, Py_ssize_t base,
                               Py_ssize_t max_depth=*) except -1
@cython.locals(walk=Walk, data="const uchar *", end=Py_ssize_t)
cpdef Py_ssize_t decode_stream(Column root, memoryview view, Py_ssize_t pos, Py_ssize_t limit,
                               Py_ssize_t base, Py_ssize_t max_depth, Py_ssize_t max_frame_size,
                               bint strict) except -1
cdef Walk _walk_of(Column root, memoryview view, Py_ssize_t base, Py_ssize_t max_depth)
@cython.locals(rows=Py_ssize_t, n=Py_ssize_t, body=Py_ssize_t, row=Py_ssize_t)
cdef Py_ssize_t _rows(Column root, const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                      Walk walk) except -1
@cython.locals(row=Py_ssize_t, dropped=bint, start=Py_ssize_t, head=cython.longlong,
               tag=uint64_t, child="PyObject *", field=FieldPlan, after=Py_ssize_t)
cdef Py_ssize_t _fields(Column column, const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                        Walk walk, int depth, int group) except -1
@cython.locals(numbered=tuple, field=FieldPlan)
cdef inline PyObject *_column_numbered(Column column, uint64_t number)
@cython.locals(n=Py_ssize_t, bits=uint64_t, after=Py_ssize_t, width=Py_ssize_t)
cdef inline Py_ssize_t _plain(Column column, const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                              int wire, Walk walk, Py_ssize_t row) except -1
@cython.locals(after=Py_ssize_t, body=Py_ssize_t, entries=Column, entry=Py_ssize_t,
               items=Column, tag=int)
cdef Py_ssize_t _field(Column child, FieldPlan field, const uchar *data,
                       Py_ssize_t pos, Py_ssize_t end, int wire, Walk walk, int depth,
                       Py_ssize_t row) except -2
@cython.locals(tag=int)
cdef inline int _next_tag(FieldPlan field, int wire) noexcept
@cython.locals(keys="PyObject *", values="PyObject *", key_wire=int, value_wire=int,
               entry=Py_ssize_t)
cdef bint _pair(Column entries, const uchar *data, Py_ssize_t pos, Py_ssize_t end, Walk walk,
                int depth) except -1
@cython.locals(after=Py_ssize_t)
cdef inline Py_ssize_t _message(Column column, FieldPlan field, const uchar *data, Py_ssize_t pos,
                                Py_ssize_t end, Walk walk, int depth) except -1
@cython.locals(kind=int, n=Py_ssize_t, raw=uint64_t, width=Py_ssize_t, after=Py_ssize_t)
cdef Py_ssize_t _value(Column column, FieldPlan field, const uchar *data,
                       Py_ssize_t pos, Py_ssize_t end, int wire, Walk walk, Py_ssize_t row,
                       int depth) except -1
@cython.locals(wire=int, kind=int, width=Py_ssize_t, out="uchar *", at=Py_ssize_t,
               n=Py_ssize_t, raw=uint64_t)
cdef int _packed_numbers(Column items, FieldPlan field, const uchar *data, Py_ssize_t pos,
                         Py_ssize_t end, Walk walk) except -1
@cython.locals(count=Py_ssize_t, index=Py_ssize_t)
cdef inline Py_ssize_t _final_bytes(const uchar *data, Py_ssize_t pos, Py_ssize_t end) noexcept
@cython.locals(after=Py_ssize_t)
cdef inline Py_ssize_t _text(Column column, const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                             Walk walk, Py_ssize_t row, int depth) except -1
@cython.locals(plan=MessagePlan, checker=Decoder)
cdef int _check_kept(Column column, Py_ssize_t start, Py_ssize_t end, Walk walk,
                     int depth) except -1
cdef inline int _replace(Column column, Py_ssize_t row) except -1
@cython.locals(oneof=Oneof, holder="PyObject *")
cdef int _clear_others(Column column, Py_ssize_t row) except -1
@cython.locals(bits=uint64_t, low=uint32_t)
cdef inline uint64_t _varint_bits(int kind, uint64_t raw) noexcept
cdef inline int64_t _int32(uint64_t raw) noexcept
@cython.locals(bounds=cython.longlong)
cdef inline Py_ssize_t _length_end(const uchar *data, Py_ssize_t pos, Py_ssize_t end,
                                   Walk walk) except -1
cdef inline bint _is_utf8(const uchar *data, Py_ssize_t start, Py_ssize_t end) noexcept
@cython.locals(batch="CodecBatch *", root_node="ArrowArray *")
cpdef object arrow_batch(Column root, object record_batch, object schema)
@cython.locals(children=tuple, node="ArrowArray *", index=Py_ssize_t)
cdef ArrowArray *_node(CodecBatch *batch, Column column) except NULL
@cython.locals(total=Py_ssize_t)
cdef Py_ssize_t _nodes(Column column) noexcept
cdef const uchar *_bytes_of(memoryview view)
