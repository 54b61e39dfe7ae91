# C types for _recorder.py (Cython pure-Python mode).
cimport cython
from libc.stdint cimport int64_t, uint8_t, uint32_t
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

cdef Py_ssize_t _DEPTH_LIMIT

@cython.locals(ts=timespec)
cpdef int64_t now_ns() noexcept

cdef class ThreadRecorder:
    cdef readonly Py_ssize_t track_ref, max_rows, dropped
    cdef object _lock, _owner
    cdef int64_t[::1] _open
    cdef Py_ssize_t _depth, _drop_depth, _count, _finished, _taken, _capacity
    cdef int64_t _last_end
    cdef object _id_column, _start_column, _duration_column, _depth_column
    cdef uint32_t[::1] _ids
    cdef int64_t[::1] _starts, _durations
    cdef uint8_t[::1] _depths

    @cython.locals(depth=Py_ssize_t, row=Py_ssize_t)
    cpdef void begin(self, uint32_t scope_id) except *
    @cython.locals(stop=int64_t, depth=Py_ssize_t, row=Py_ssize_t)
    cpdef void end(self) except *
    cdef void _bind(self) except *
    @cython.locals(taken=Py_ssize_t, kept=Py_ssize_t, level=Py_ssize_t)
    cdef bint _make_room(self) except -1

cdef class Scope:
    cdef Recording _recording
    cdef readonly uint32_t scope_id

cdef class NullScope:
    pass

cdef NullScope NULL_SCOPE

cdef class Recording:
    cdef public bint enabled
    cdef object _local, _new_recorder, _register
    cdef public dict scopes
    @cython.locals(scope=Scope)
    cpdef object scope(self, str name)
    @cython.locals(loop=object, task=object, recorder=ThreadRecorder, state=object)
    cpdef ThreadRecorder recorder(self)
    @cython.locals(state=object, lane=ThreadRecorder)
    cdef ThreadRecorder _lane(self, object task)
    @cython.locals(state=object)
    cdef object _state(self)
