# C types for _struct.py (Cython pure-Python mode).
cimport cython
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.dict cimport PyDict_SetItem
from cpython.exc cimport PyErr_Clear
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.tuple cimport PyTuple_GET_ITEM
from cpython.weakref cimport PyWeakref_NewRef
from libc.stdint cimport int64_t, uint64_t

from codec._varint cimport bits_float32, float32_bits
from codec._wire cimport (
    VARINT, I64, LEN, EGROUP, I32, INT32, INT64, UINT32, UINT64, BOOL, ENUM, FLOAT, DOUBLE,
    STRING, BYTES, MESSAGE, GROUP,
    scalar_bits, integer_of, truth_of, real_of, utf8_or_null,
)
from codec.structs._plan cimport SHAPE_NUMBER, SHAPE_TEXT, FieldPlan, MessagePlan

ctypedef unsigned char uchar

ctypedef PyObject *object_ptr
ctypedef PyObject **slot_ptr
ctypedef uint64_t *word_ptr
ctypedef PyTypeObject *type_object_ptr

cdef extern from "Python.h":
    ctypedef PyObject *(*vectorcallfunc)(PyObject *callable, PyObject **args, size_t nargsf,
                                         PyObject *kwnames)
    ctypedef struct TypeWithVectorcall "PyTypeObject":
        vectorcallfunc tp_vectorcall
    ctypedef struct VersionedType "PyTypeObject":
        unsigned int tp_version_tag  # 0 until looked up, and after any change to the class
    PyObject *_PyType_Lookup(PyTypeObject *type, PyObject *name)
    Py_ssize_t PyVectorcall_NARGS(size_t nargsf)

ctypedef TypeWithVectorcall *type_ptr
ctypedef VersionedType *versioned_type_ptr


cdef extern from "Python.h":
    PyTypeObject *Py_TYPE(object value) noexcept
    bint PyType_IS_GC(PyTypeObject *type) noexcept
    bint PyObject_GC_IsTracked(object value) noexcept
    void PyObject_GC_Track(object value) noexcept
    void PyObject_GC_UnTrack(object value) noexcept

cdef extern from *:
    """
    /* How much C stack the calling thread has left, from its stack bounds. The
       stack grows down on every platform CPython supports. */
    #if defined(__linux__) || defined(__APPLE__)
    #include <pthread.h>
    #endif
    #if defined(_WIN32)
    #include <windows.h>
    #endif
    /* The address of the calling frame. */
    #if defined(__GNUC__) || defined(__clang__)
    /* The frame itself: AddressSanitizer may move locals to a heap "fake stack". */
    #define CODEC_HERE() ((char *)__builtin_frame_address(0))
    #else
    static char *codec_here(void) { char local; return (char *)&local; }
    #define CODEC_HERE() codec_here()
    #endif
    /* The lowest address of the calling thread's stack, found once per thread;
       NULL where the platform does not tell it. One thread-local record: in a
       shared library each thread-local variable costs a call to find it. */
    typedef struct { char *low; int known; } CodecStack;
    static CYTHON_INLINE char *codec_stack_low(void) {
    #if defined(_MSC_VER)
        static __declspec(thread) CodecStack stack = {NULL, 0};
    #else
        static __thread CodecStack stack = {NULL, 0};
    #endif
        CodecStack *own = &stack;
        if (!own->known) {
            own->known = 1;
    #if defined(__linux__)
            pthread_attr_t attr;
            void *addr;
            size_t size;
            if (pthread_getattr_np(pthread_self(), &attr) == 0) {
                if (pthread_attr_getstack(&attr, &addr, &size) == 0) own->low = (char *)addr;
                pthread_attr_destroy(&attr);
            }
    #elif defined(__APPLE__)
            own->low = (char *)pthread_get_stackaddr_np(pthread_self())
                       - pthread_get_stacksize_np(pthread_self());
    #elif defined(_WIN32)
            ULONG_PTR lowest, highest;
            GetCurrentThreadStackLimits(&lowest, &highest);
            own->low = (char *)lowest;
    #endif
        }
        return own->low;
    }
    /* Bytes of C stack left below this point in the calling thread; PY_SSIZE_T_MAX
       where the bounds are unknown. */
    static CYTHON_INLINE Py_ssize_t codec_stack_left(void) {
        char *low = codec_stack_low();
        char *here = CODEC_HERE();
        if (low == NULL || here < low) return PY_SSIZE_T_MAX;
        return (Py_ssize_t)(here - low);
    }
    /* The stack to leave when nesting stops: 16 KiB for the Python code and the
       allocations of the level that stops. Under AddressSanitizer frames are
       larger and its allocator unwinds the whole stack on every allocation:
       256 KiB keeps a sanitized run clear of it (then a thread of 128 KiB or
       less stops at the first nested message, with DepthLimitError). */
    #if defined(__SANITIZE_ADDRESS__)
    #define CODEC_STACK_RESERVE (256 * 1024)
    #elif defined(__has_feature)
    #if __has_feature(address_sanitizer)
    #define CODEC_STACK_RESERVE (256 * 1024)
    #endif
    #endif
    #ifndef CODEC_STACK_RESERVE
    #define CODEC_STACK_RESERVE (16 * 1024)
    #endif
    /* The lowest address a frame may have before nesting stops, CODEC_STACK_RESERVE
       above the bottom of the calling thread's stack (NULL: no bound), so a walk
       compares one pointer a level. */
    static CYTHON_INLINE char *codec_stack_floor(void) {
        char *low = codec_stack_low();
        return low == NULL ? NULL : low + CODEC_STACK_RESERVE;
    }
    static CYTHON_INLINE int codec_below(char *floor) {
        return floor != NULL && CODEC_HERE() < floor;
    }
    """
    Py_ssize_t codec_stack_left() nogil
    Py_ssize_t CODEC_STACK_RESERVE
    char *codec_stack_floor() nogil
    bint codec_below(char *floor) nogil

cdef extern from *:
    """
    /* The deallocator of struct classes (enable_fast_paths installs it): the class's
       slots, then Struct's own fields, as CPython's generic deallocator of a class with
       __slots__ does, without its walk of the class chain and member tables per object.
       It serves a class whose objects are Struct's fields followed by its slots alone;
       an object of a subclass comes here after CPython's deallocator has emptied the
       subclass's own slots (and called the finaliser, if any); a class given a finaliser
       (__del__) has it called. */
    static void codec_struct_dealloc(PyObject *self) {
        PyTypeObject *type = Py_TYPE(self);
        PyTypeObject *own = type;  /* the struct class: the nearest one with this deallocator */
        PyTypeObject *base;  /* Struct: the first class up the chain not made by a class statement */
        PyObject **slot, **stop;
        int type_needs_decref;
        PyObject_GC_UnTrack(self);
        Py_TRASHCAN_BEGIN(self, codec_struct_dealloc)
        /* A finaliser of the class (a __del__ given to it); an object of a subclass comes
           here from CPython's deallocator, which considered its finaliser already */
        if (type->tp_finalize != NULL && type->tp_dealloc == codec_struct_dealloc) {
            PyObject_GC_Track(self);
            if (PyObject_CallFinalizerFromDealloc(self) < 0) goto done;  /* resurrected */
            PyObject_GC_UnTrack(self);
            type = own = Py_TYPE(self);  /* which the finaliser may have assigned */
        }
        while (own != NULL && own->tp_dealloc != codec_struct_dealloc) own = own->tp_base;
        if (own == NULL) {  /* a class of the same slots, assigned by the finaliser: its own */
            type->tp_dealloc(self);
            goto done;
        }
        base = own->tp_base;
        while (base->tp_flags & Py_TPFLAGS_HEAPTYPE) base = base->tp_base;
        stop = (PyObject **)((char *)self + own->tp_basicsize);
        for (slot = (PyObject **)((char *)self + base->tp_basicsize); slot < stop; slot++) {
            Py_CLEAR(*slot);
        }
        /* An object of a heap type holds a reference to it, which Struct's deallocator
           (a static type's) leaves */
        type_needs_decref = (type->tp_flags & Py_TPFLAGS_HEAPTYPE)
                            && !(base->tp_flags & Py_TPFLAGS_HEAPTYPE);
        base->tp_dealloc(self);
        if (type_needs_decref) Py_DECREF(type);
      done:
        Py_TRASHCAN_END
    }
    """
    void codec_struct_dealloc(PyObject *self) noexcept

cdef str _PLAN_NAME
cdef MessagePlan _RECENT_PLAN

@cython.locals(words=word_ptr)
cdef int _mark(Struct message, MessagePlan plan, Py_ssize_t bit, bint present) except -1
@cython.locals(mask=uint64_t, one=uint64_t)
cdef uint64_t _with_bit(uint64_t word, Py_ssize_t bit, bint present) noexcept
@cython.locals(size=Py_ssize_t, held=bytearray, grown=bytearray)
cdef word_ptr _more_words(Struct message, MessagePlan plan) except NULL
cdef object _container(MessagePlan plan, object message, FieldPlan field)
@cython.locals(items=Repeated, entries=Entries)
cdef object _items(MessagePlan plan, Struct message, FieldPlan field)
cdef int _store_read_container(Struct message, FieldPlan field, object container) except -1
@cython.locals(items=Repeated)
cdef Repeated _new_items(MessagePlan plan, FieldPlan field, object owner)
cdef object _element_of(Repeated items, object value)
cdef int _added(Repeated items) except -1
cdef int _write_through(object owner) except -1
cdef object _unowned(object container)
cdef MessagePlan _message_plan_of(FieldPlan field)
@cython.locals(entries=Entries)
cdef Entries _new_entries(FieldPlan field, object owner)
cdef object _entry_key(Entries entries, object key)
@cython.locals(plan=MessagePlan, key_field=FieldPlan, value_field=FieldPlan, checked=list)
cdef int _put_entries(Entries entries, dict pairs) except -1
cdef int _entries_added(Entries entries, bint tracked_before) except -1
cdef object _parent_of(Struct message)
cdef int _set_parent(Struct message, object parent) except -1
@cython.locals(plan=MessagePlan, field=FieldPlan, parent=Struct)
cpdef written(Struct message)
@cython.locals(fields=tuple, i=Py_ssize_t, field=FieldPlan)
cdef FieldPlan _field_holding(MessagePlan plan, Struct message, Struct part)
@cython.locals(place=slot_ptr, old=object_ptr)
cdef int _clear_field(MessagePlan plan, Struct message, FieldPlan field) except -1
@cython.locals(others=tuple, i=Py_ssize_t, member=object_ptr)
cdef int _clear_others(MessagePlan plan, Struct message, FieldPlan field) except -1
cdef inline bint _set_or_filled(Struct message, FieldPlan member) noexcept
@cython.locals(items=Repeated, entries=Entries, holds_structs=bint, checked=list)
cdef object _checked_by_kind(MessagePlan plan, FieldPlan field, object value)
@cython.locals(kind=int, sub=MessagePlan, real=double, converted=object)
cdef object _checked_value(MessagePlan plan, FieldPlan field, object value)
cdef object _type_error(MessagePlan plan, FieldPlan field, str expected, object value)
cdef object _enum_named(MessagePlan plan, FieldPlan field, str name)
@cython.locals(sub=MessagePlan)
cdef str _type_of(FieldPlan field, object value)
@cython.locals(found=object_ptr, bound=MessagePlan)
cdef MessagePlan _plan_of_class(object cls)
@cython.locals(message=Struct)
cdef Struct new_struct(MessagePlan plan)
@cython.locals(cls=type, message=object)
cdef Struct _allocated(MessagePlan plan)
@cython.locals(fields=tuple, i=Py_ssize_t, extensions=FieldPlan)
cdef int untrack_decoded(MessagePlan plan, Struct message) except -1
@cython.locals(untracked=bint)
cdef int add_decoded_entry(object mapping, object key, object value) except -1
cdef bint _is_tracked(object value) noexcept
cdef bint _is_node(object value) noexcept
@cython.locals(pending=list, item=object)
cdef int track_reachable(object root) except -1
cdef bint _holds_structs(FieldPlan field) noexcept
cdef bint _is_leaf(object item) except -1
cdef bint _push_held(object item, list pending) except -1
@cython.locals(found=bint, plan=MessagePlan, fields=tuple, i=Py_ssize_t, field=FieldPlan,
               value=object)
cdef bint _held(object item, list pending) except -1
cdef int track_store(object holder, object value) except -1
@cython.locals(needs_tracking=bint)
cdef int _put_below(Struct message, FieldPlan field, object value) except -1
cdef int _track_value(object value) except -1
cdef class Frame:
    cdef int parse(self, Struct message, Py_ssize_t first, uint64_t pending) except -1

cdef object PENDING
cdef object _field_value(Struct message, FieldPlan field)
cpdef field_value(Struct message, FieldPlan field)
cpdef defer(MessagePlan plan, Struct message, FieldPlan field, object frame)
@cython.locals(tracked=bint, plan=MessagePlan, fields=tuple, first=Py_ssize_t, pending=uint64_t,
               i=Py_ssize_t, field=FieldPlan)
cpdef ready(Struct message)
cdef object _frame_of(Struct message)
cdef int _set_frame(Struct message, object frame) except -1
cpdef set_range(Struct message, Py_ssize_t start, Py_ssize_t end)
@cython.locals(fields=tuple, i=Py_ssize_t, field="PyObject *")
cdef int _fill_defaults(MessagePlan plan, Struct message) except -1
cdef bint _is_empty(object message, FieldPlan field) noexcept
cdef int _reset(MessagePlan plan, Struct message) except -1
@cython.locals(plan=MessagePlan, holder=FieldPlan, held=MessagePlan)
cpdef Struct extensions_of(Struct message, bint make)
@cython.locals(plan=MessagePlan)
cpdef take_extensions(Struct message, Struct source)
@cython.locals(plan=MessagePlan)
cpdef Struct unset_part(Struct holder, FieldPlan field)
@cython.locals(field=FieldPlan, held=MessagePlan)
cdef bint _blank(MessagePlan plan, Struct message) except -1
cpdef bint negative_zero(object value) except -1
@cython.locals(held=MessagePlan)
cdef bint _extensions_equal(MessagePlan plan, Struct left, Struct right) except -1
cdef FieldPlan _named(MessagePlan plan, object name)
@cython.locals(plan=MessagePlan, version="unsigned int", names=tuple, i=Py_ssize_t,
               message=Struct, fields=tuple, after=Py_ssize_t, count=Py_ssize_t,
               field=FieldPlan, every_slot=bint)
cdef object _construct(PyObject *cls, PyObject **args, size_t nargsf, PyObject *kwnames)
cpdef bytes unknown_of(Struct message)
cpdef set_unknown(Struct message, bytes unknown)
@cython.locals(type_object=type_ptr)
cpdef enable_fast_paths(object cls)
cdef bint _slots_only(object cls) except -1
@cython.locals(field=FieldPlan)
cdef bint _fields_equal(MessagePlan plan, Struct left, Struct right) except -1
@cython.locals(held=MessagePlan)
cdef list _shown(MessagePlan plan, Struct message)


cdef class Struct:
    cdef uint64_t _has  # presence bits 0-63
    cdef bytearray _has_more  # the others, for messages with more than 64 (made on first use)
    cdef public bytes _unknown
    cdef object _parent  # a default sub-message's weak reference to its message (see _part)
    cdef object _frame  # the frame of its pending fields, or None (see "pending fields")
    cdef unsigned int _start, _end  # where its own fields are in that frame
    cdef object __weakref__

cdef class Repeated(list):
    cdef MessagePlan plan  # of the message holding the field, which errors name
    cdef readonly FieldPlan field
    cdef object owner  # a weak reference to a default sub-message holding it, or None

cdef class RepeatedMessages(Repeated):
    pass

cdef class Entries(dict):
    cdef MessagePlan plan  # of the map's entry message, which errors name
    cdef readonly FieldPlan field
    cdef object owner  # a weak reference to a default sub-message holding it, or None

cdef class MessageEntries(Entries):
    pass

cdef object _on_class(FieldAccess access, object owner)

cdef class FieldAccess:
    cdef readonly MessagePlan plan
    cdef readonly FieldPlan field
    cdef readonly object on_class

cdef object _encode_error(FieldPlan field, MessagePlan plan, str problem)
@cython.locals(number=int64_t)
cdef int _check_member(FieldPlan field, uint64_t bits) except -1
cdef object _lone_surrogate(FieldPlan field, MessagePlan plan)
@cython.locals(size=Py_ssize_t)
cdef int _check_text(FieldPlan field, MessagePlan plan, str text) except -1
cdef bint _sized(object value) except -1
cdef MessagePlan plan_of(object message)

# Reading and writing slots and presence bits, and finding a field by number: inline here,
# as the encoder and the decoder (_encode.py, _decode.py) use them per field.
cdef inline char *_address(object message, FieldPlan field) noexcept:
    # where field's slot is in message (an object of its plan's class)
    return <char *><PyObject *>message + field.offset


cdef inline object _slot(object message, FieldPlan field):
    # the value in field's slot of message (None for an empty slot)
    cdef PyObject *item = (<slot_ptr>_address(message, field))[0]
    if item == NULL:
        return None
    return <object>item


cdef inline PyObject *_lent(object message, FieldPlan field) noexcept:
    # the value in field's slot of message, not held (None for an empty slot): only for
    # reading it before any Python code can run, which may empty the slot
    cdef PyObject *item = (<slot_ptr>_address(message, field))[0]
    if item == NULL:
        return <PyObject *>None
    return item


cdef inline bint _has(Struct message, Py_ssize_t bit) noexcept:
    # whether presence bit ``bit`` of message is set
    if bit < 64:
        return (message._has >> bit) & 1
    # words made for another class of the same slots (``__class__`` assigned) may be fewer
    if message._has_more is None or PyByteArray_GET_SIZE(message._has_more) < (bit >> 6) * 8:
        return False
    return ((<uint64_t *>PyByteArray_AS_STRING(message._has_more))[(bit >> 6) - 1]
            >> (bit & 63)) & 1


cdef inline bint _is_present(Struct message, FieldPlan field, object value) noexcept:
    # whether a singular field with presence is set (its slot holds value)
    if field.has_bit >= 0:
        return _has(message, field.has_bit)
    return value is not None


cdef inline int _put(object message, FieldPlan field, object value) except -1:
    # put value in field's slot of message, unchecked, its tracking left as it is
    cdef PyObject **place = <slot_ptr>_address(message, field)
    cdef PyObject *old = place[0]
    Py_INCREF(value)
    place[0] = <PyObject *>value
    Py_XDECREF(old)  # last: a finaliser may run
    return 0


cdef inline int _track_holder(object message, object value) except -1:
    # message tracked by the cycle collector from the first value it holds that can refer
    # to other objects (a container, a struct, a memoryview); see "The cycle collector"
    # in _struct.py
    if PyType_IS_GC(Py_TYPE(value)) and not PyObject_GC_IsTracked(message):
        PyObject_GC_Track(message)
    return 0


cdef inline int _store(object message, FieldPlan field, object value) except -1:
    # _put, and message tracked as _track_holder says
    _track_holder(message, value)
    return _put(message, field, value)


cdef inline int _set_field(MessagePlan plan, Struct message, FieldPlan field,
                           object value) except -1:
    # store a checked (or decoded) value: presence set, other oneof members cleared
    _track_holder(message, value)
    return _set_value(plan, message, field, value)


cdef inline int _set_value(MessagePlan plan, Struct message, FieldPlan field,
                           object value) except -1:
    # _set_field, message's tracking left as it is: for a decoded sub-message, untracked
    # as the message being decoded is until it ends (see "The cycle collector" (2))
    if field.oneof_others:
        _clear_others(plan, message, field)
    _put(message, field, value)
    if field.has_bit >= 0:
        _mark(message, plan, field.has_bit, True)
    return 0


