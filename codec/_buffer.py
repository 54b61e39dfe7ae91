"""Buffers: a reusable output buffer and a receive window, both over one ``bytearray``.

Strategy: each object owns a single ``bytearray`` whose length is its
capacity; positions inside it say what is written or received. Bytes are
copied with ``memcpy`` (compiled) or ``memoryview`` slice assignment
(uncompiled), never with ``bytearray[a:b] = src``, which copies ``src`` into a
temporary first.

Views of the storage are handed out (``getbuffer()``, received frames), so
every operation that could move bytes under a live view checks for exports
first, as msgpack's Packer does:

* :class:`WriteBuffer` refuses to grow or be cleared while a view from
  ``getbuffer()`` is alive (:class:`BufferError`), because a transport may
  still be reading it.
* :class:`ReceiveWindow` never moves received bytes under a live view: when
  views are exported it copies the unread bytes into a fresh ``bytearray``
  and leaves the old one to the views, which keep it alive (copy on write).
  Memory it grows into is zeroed first, so the room it hands out holds zeros
  or bytes it received before, never what other objects left there.

A :class:`WriteBuffer` is written by one operation at a time: each write
(a frame, a field) claims it with a flag for its duration, and a nested
message or frame left open is counted, so a write from another thread, or
from Python code that a write runs (a value's ``__index__``), raises
:class:`RuntimeError` instead of interleaving its bytes with the first.
Testing and setting the flag makes no call, so under the GIL no other
thread runs in between.

An object made with ``cls.__new__(cls)`` (its ``__init__`` never run) has no
storage; every method that needs it raises :class:`RuntimeError`.
"""

from __future__ import annotations

from typing import Any

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython  # type: ignore[no-redef]

from codec._introspection import InitSignature
from codec._varint import Bytes

COMPILED: bool = cython.compiled

INITIAL_CAPACITY = 4096
# The room a read is given when it asks for no size (asyncio's transports do not).
RECEIVE_CHUNK = 64 * 1024
# A receive window more than RECEIVE_SLACK times larger than it needs (its
# unread bytes and the room asked for; at least one RECEIVE_CHUNK) is cut back
# to what it needs (receive_capacity), when room is made and when its owner
# trims it (FrameDecoder.shrink(), which codec.aio calls whenever its reader
# waits). Growth at most doubles a window, so a window in steady use is not cut
# back and grown again in turn, while one grown for a large frame gives its
# memory back once the frame is taken: an idle connection keeps about one
# RECEIVE_CHUNK, not twice its largest frame.
RECEIVE_SLACK = 4
_INITIAL_CAPACITY = INITIAL_CAPACITY
_RECEIVE_CHUNK = RECEIVE_CHUNK
_RECEIVE_SLACK = RECEIVE_SLACK


def byte_pointer(data: bytearray) -> bytearray:
    """The storage of ``data``: a raw pointer compiled, the ``bytearray`` itself uncompiled.

    Take it again after anything that may resize ``data``.
    """
    if cython.compiled:
        return cython.cast(cython.p_uchar, PyByteArray_AS_STRING(data))
    return data


def copy_bytes(out: bytearray, pos: int, source: Bytes, size: int) -> None:
    """Copy ``size`` bytes from ``source`` to ``out[pos:]`` (room already made)."""
    if cython.compiled:
        if size:
            memcpy(out + pos, source, size)
        return
    memoryview(out)[pos : pos + size] = source


def resize(data: bytearray, size: int) -> None:
    """Set ``len(data)`` to ``size`` without building a temporary.

    Raises :class:`BufferError` while a view of ``data`` is exported.
    """
    if cython.compiled:
        PyByteArray_Resize(data, size)
        return
    if size < len(data):
        del data[size:]
    else:
        data.extend(bytes(size - len(data)))


def resize_zeroed(data: bytearray, size: int) -> None:
    """:func:`resize`, with the bytes added set to zero.

    Compiled, ``PyByteArray_Resize`` leaves them as the allocator found them:
    bytes of freed objects.
    """
    if cython.compiled:
        previous = len(data)
        PyByteArray_Resize(data, size)
        if size > previous:
            memset(PyByteArray_AS_STRING(data) + previous, 0, size - previous)
        return
    resize(data, size)  # extends with zeros


def is_exported(data: bytearray) -> bool:
    """Whether a view (``memoryview``, buffer) of ``data`` is alive."""
    if cython.compiled:
        return cython.cast(cython.pointer(PyByteArrayObject), data).ob_exports > 0
    try:
        data.append(0)  # resizing fails exactly when a view is exported
    except BufferError:
        return True
    data.pop()
    return False


def grown(capacity: int, needed: int) -> int:
    """Capacity after geometric growth to hold ``needed`` bytes."""
    return max(needed, capacity * 2, _INITIAL_CAPACITY)


def make_room(data: bytearray, end: int, exact: bool) -> None:
    """Make ``data`` hold ``end`` bytes: the growth rule of every output buffer.

    With ``exact`` (a caller's ``bytearray``, which ends where its last frame
    does), ``data`` is resized to ``end``; otherwise (a :class:`WriteBuffer`'s
    storage) it grows geometrically when ``end`` does not fit, and never
    shrinks.
    """
    if exact:
        resize(data, end)
    elif end > len(data):
        resize(data, grown(len(data), end))


def receive_capacity(capacity: int, needed: int) -> int:
    """The capacity a receive window of ``capacity`` bytes takes on when it needs ``needed``.

    It grows geometrically; it is cut back to ``needed`` (at least the
    initial capacity) once it is more than ``RECEIVE_SLACK`` times larger
    than both ``needed`` and one ``RECEIVE_CHUNK``; otherwise it stays.
    """
    if needed > capacity:
        return grown(capacity, needed)
    if capacity > _RECEIVE_SLACK * max(needed, _RECEIVE_CHUNK):
        return max(needed, _INITIAL_CAPACITY)
    return capacity


def uninitialised(obj: object) -> RuntimeError:
    """The error of a method called on an object whose ``__init__`` never ran."""
    return RuntimeError(f"{type(obj).__name__} is not initialised: its __init__ never ran")


def not_copied(obj: object) -> TypeError:
    """The error of copying or pickling an object that owns a buffer or a decode's state.

    A copy would share that memory with the original (one would then read
    or overwrite what the other holds), so none is made: a new object is.
    """
    name = type(obj).__name__
    return TypeError(f"a {name} cannot be copied or pickled: it owns its buffer; make a new {name}")


class WriteBuffer:
    """A reusable, growable output buffer.

    Bytes written accumulate until :meth:`clear`, which keeps the capacity for
    the next round. :meth:`getbuffer` returns a zero-copy view of the pending
    bytes; while such a view is alive the buffer refuses to grow or be
    cleared (:class:`BufferError`), so a transport holding it never sees the
    memory move or change. Release the view (``del``, or ``with``) first.

    One write at a time: while a write is under way (from another thread, or
    in Python code the write runs), or a nested message or frame is open,
    :meth:`clear`, :meth:`getbuffer` and any other write that would break it
    raise :class:`RuntimeError`.
    """

    __signature__ = InitSignature()  # what inspect.signature(cls) reads

    @cython.embedsignature(True)  # the signature line InitSignature reads, compiled
    def __init__(self, capacity: int = INITIAL_CAPACITY) -> None:
        """An empty buffer of ``capacity`` bytes."""
        if capacity < 0:
            raise ValueError(f"capacity must not be negative, got {capacity}")
        if self._busy or self._regions:  # __init__ called again, mid-write
            raise self._busy_error(True)
        self._data = bytearray(capacity)
        self._length = 0
        self._busy: bool = False  # a write is under way (_claim)
        self._regions: int = 0  # nested messages and frames open

    def __reduce__(self) -> Any:
        raise not_copied(self)

    def __len__(self) -> int:
        return self._length

    @property
    def capacity(self) -> int:
        """Bytes the buffer holds before it must grow."""
        if self._data is None:
            raise uninitialised(self)
        return len(self._data)

    def getbuffer(self) -> memoryview:
        """A read-only view of the pending bytes (no copy).

        Raises :class:`RuntimeError` while a write is under way or a nested
        message or frame is open: the pending bytes may then end inside it.
        """
        if self._data is None:
            raise uninitialised(self)
        if self._busy or self._regions:
            raise self._busy_error(True)
        return memoryview(self._data)[: self._length].toreadonly()

    def clear(self) -> None:
        """Forget the pending bytes, keeping the capacity."""
        self._claim(True)
        try:
            if is_exported(self._data):
                raise BufferError("cannot clear while a view from getbuffer() is alive")
            self._length = 0
        finally:
            self._busy = False

    def shrink(self, capacity: int = INITIAL_CAPACITY) -> None:
        """Give back memory: cut the capacity to ``capacity``, or to the pending bytes if more.

        For a buffer that grew for one large frame and is to be kept, idle,
        for small ones. :meth:`clear` keeps the capacity, so that a warm
        buffer allocates nothing; this is the way to drop it. Like
        :meth:`clear`, refused (:class:`BufferError`) while a view from
        :meth:`getbuffer` is alive, and between the fields of a write.
        """
        if capacity < 0:
            raise ValueError(f"capacity must not be negative, got {capacity}")
        self._claim(True)
        try:
            if is_exported(self._data):
                raise BufferError("cannot shrink while a view from getbuffer() is alive")
            if capacity < len(self._data):
                resize(self._data, max(capacity, self._length))
        finally:
            self._busy = False

    def _room(self, size: int) -> int:
        """Make room for ``size`` more bytes; return where they go (the pending length)."""
        pos = self._length
        make_room(self._data, pos + size, False)
        return pos

    def _claim(self, whole: bool) -> None:
        """Take the buffer for one write; :func:`release_claim` ends it.

        ``whole``: the write needs the buffer at a boundary between fields or
        frames (a frame, ``clear()``), not inside an open nested message or frame.
        """
        if self._data is None:
            raise uninitialised(self)
        if self._busy or (whole and self._regions):
            raise self._busy_error(whole)
        self._busy = True

    def _busy_error(self, whole: bool) -> RuntimeError:
        name = type(self).__name__
        if whole and self._regions and not self._busy:
            return RuntimeError(f"{name} is already encoding: a nested message or frame is open")
        return RuntimeError(f"{name} is already encoding")


class ReceiveWindow:
    """Received bytes that have not been consumed yet, in one reusable ``bytearray``.

    ``_data[_start:_end]`` holds the unread bytes; ``_data[_end:]`` is spare
    room that :meth:`_make_room` hands out. ``_base`` is the stream offset of
    ``_data[0]``, so positions convert to offsets in the whole stream.
    """

    __signature__ = InitSignature()  # what inspect.signature(cls) reads

    @cython.embedsignature(True)  # the signature line InitSignature reads, compiled
    def __init__(self) -> None:
        """An empty window."""
        self._data = bytearray(_INITIAL_CAPACITY)
        self._view: memoryview | None = None  # of all of _data, to cut received views from
        self._start = 0
        self._end = 0
        self._base = 0

    def __reduce__(self) -> Any:
        raise not_copied(self)

    @property
    def buffered(self) -> int:
        """Bytes received and not yet consumed."""
        return self._end - self._start

    def _make_room(self, size: int) -> None:
        """Move the unread bytes to the front and make ``size`` bytes of room after them.

        Views handed out earlier stay valid: if any is alive, the unread
        bytes move to a new ``bytearray`` and the old one is left to them.
        """
        self._view = None  # our own export must not count as a live view
        self._relocate(receive_capacity(len(self._data), self._end - self._start + size))

    def _trim(self) -> None:
        """Give back the memory of a window grown for frames that have been taken.

        The window keeps room for its unread bytes and one ``RECEIVE_CHUNK``
        read (:func:`receive_capacity`). The unread bytes are copied only when
        the window is cut to a quarter or less, so the copies cost less than
        the bytes consumed meanwhile.
        """
        unread = self._end - self._start
        capacity = receive_capacity(len(self._data), unread + _RECEIVE_CHUNK)
        if capacity < len(self._data):
            self._view = None  # our own export must not count as a live view
            self._relocate(capacity)

    def _relocate(self, capacity: int) -> None:
        """Move the unread bytes to the front of a window of ``capacity`` bytes.

        If a view of the window is alive, the unread bytes go to a new
        ``bytearray`` and the old one is left to the views.
        """
        unread = self._end - self._start
        if is_exported(self._data):
            fresh = bytearray(capacity)
            copy_bytes(byte_pointer(fresh), 0, self._unread(), unread)
            self._data = fresh
        else:
            if self._start:
                data = byte_pointer(self._data)
                move_bytes(data, self._start, unread)
            if capacity != len(self._data):
                resize_zeroed(self._data, capacity)
        self._base += self._start
        self._start = 0
        self._end = unread

    def _received(self, start: int, end: int) -> memoryview:
        """A view of ``_data[start:end]``, which keeps those bytes alive and unchanged."""
        if self._view is None:
            self._view = memoryview(self._data)
        if cython.compiled:
            # Narrow a copy of the whole-window view in place: the generic
            # slicing path (slice object, index checks) costs more than the
            # frame itself.
            view = PyMemoryView_FromObject(self._view)
            narrowed = cython.cast(cython.pointer(PyMemoryViewObject), view)
            narrowed.view.buf = cython.cast(cython.p_char, narrowed.view.buf) + start
            narrowed.view.len = end - start
            narrowed.view.shape[0] = end - start
            return view  # type: ignore[no-any-return]
        return self._view[start:end]

    def _copied(self, start: int, end: int) -> bytes:
        """A copy of ``_data[start:end]``, as ``bytes``."""
        if cython.compiled:
            return PyBytes_FromStringAndSize(PyByteArray_AS_STRING(self._data) + start, end - start)
        with memoryview(self._data) as window:
            return bytes(window[start:end])

    def _unread(self) -> memoryview:
        """The unread bytes as a source for copy_bytes."""
        if cython.compiled:
            return byte_pointer(self._data) + self._start
        return memoryview(self._data)[self._start : self._end]


def move_bytes(data: bytearray, start: int, size: int) -> None:
    """Move ``data[start:start + size]`` to the front of ``data`` (regions may overlap)."""
    if cython.compiled:
        memmove(data, data + start, size)
        return
    with memoryview(data) as view:
        view[:size] = view[start : start + size]


if not cython.compiled:  # compiled, _buffer.pxd holds these, inlined where they are used

    def release_claim(buffer: WriteBuffer) -> None:
        """End the write that :meth:`WriteBuffer._claim` began."""
        buffer._busy = False

    def set_end(buffer: WriteBuffer, end: int) -> None:
        """The buffer's bytes now end at ``end`` (written up to there)."""
        buffer._length = end

    def cut_to(buffer: WriteBuffer, start: int) -> None:
        """Forget what was written after ``start``."""
        if buffer._length > start:
            buffer._length = start

    def open_region(buffer: WriteBuffer) -> None:
        """A nested message or frame is open on the buffer."""
        buffer._regions += 1

    def close_region(buffer: WriteBuffer) -> None:
        """A nested message or frame is closed."""
        buffer._regions -= 1

    from codec._pure import fields_as_allocated

    fields_as_allocated(WriteBuffer, _data=None, _length=0, _busy=False, _regions=0)
    fields_as_allocated(ReceiveWindow, _data=None, _view=None, _start=0, _end=0, _base=0)
