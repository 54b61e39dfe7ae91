"""Framing: ``varint(len(payload)) ‖ payload``, written into reusable buffers and read sans-IO.

Strategy, encoding: a frame is written in one pass straight into a
``bytearray`` (the :class:`FrameEncoder`'s own, or the caller's with
:func:`encode_frame_into`): the payload's length is known before anything is
written, so the minimal prefix goes first and the payload is copied once
after it. The size limit is checked before a byte is written, so a refused
frame leaves the buffer as it was. A google.protobuf message is serialized
once by upb (which has no serialize-into-buffer API) and copied once.

Strategy, decoding: :class:`FrameDecoder` is sans-IO (no sockets, clocks or
event loop), in the shape of ``asyncio.BufferedProtocol``: ``get_buffer`` /
``buffer_updated`` let a socket write straight into its receive window, and
``feed`` copies bytes in. Frames come out as ``memoryview`` slices of the
window, without copying the payload. The decoder reads a length prefix in
place and only advances past it once it is complete, so any split of the
input gives the same frames and errors. A declared length is compared with
``max_frame_size`` as soon as its prefix is complete, before any of its body
is buffered, also behind complete frames not taken yet (a cursor remembers
how far the received frames were walked, so bytes arriving one at a time
cost no rescans); memory is never reserved from a declared length: the window grows only with
bytes actually received. After an error the decoder is poisoned: frames
completed before the error can still be read, then every call raises the
same error. A bad prefix behind frames not taken yet is reported by
``next_frame()`` once those frames are out, and every further byte is
refused at once, so the bytes held stay below ``max_frame_size`` plus a
prefix plus one ``feed()``. The prefix rules are written once, as functions
of a buffer (``_frame_end``, ``_prefix_error``, ``_cut_error``): the window's
walk applies them, and so does :func:`frames_end`, for a reader that walks
the frames of a stream held in memory where they lie.

Misuse, either way: neither class is thread-safe, and each turns concurrent
or re-entrant use into a :class:`RuntimeError` rather than a corrupt stream.
An encoder's write, and a decoder's every call, holds a flag for its
duration (the encoder's is its buffer's, shared with the
:class:`~codec.wire.WireWriter` of :meth:`FrameEncoder.frame`), so a call
made meanwhile, from another thread or from Python code the first runs (a
struct value's ``__index__``, a ``message_type``'s parser), raises at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import GenericAlias
from typing import Any, NoReturn

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython  # type: ignore[no-redef]

from codec._buffer import RECEIVE_CHUNK, ReceiveWindow, WriteBuffer
from codec._introspection import InitSignature
from codec._varint import Bytes, byte_view
from codec._wire import checked_count, checked_flag, checked_int

if not cython.compiled:  # compiled, framing.pxd cimports these C functions
    from codec._buffer import (
        byte_pointer,
        copy_bytes,
        make_room,
        release_claim,
        set_end,
        uninitialised,
    )
    from codec._varint import (
        acquire,
        varint_error,
        varint_scan,
        varint_size,
        varint_value,
        varint_write,
    )
    from codec.structs._dispatch import (
        parser_for,
        payload_of,
        release_staged,
        staged_size,
        write_staged,
    )
from codec.errors import DecodeError, FrameTooLargeError, TruncatedError
from codec.wire import Delimited, open_frame

COMPILED: bool = cython.compiled

# gRPC's default receive limit and Go protodelim's default MaxSize.
DEFAULT_MAX_FRAME_SIZE = 4 * 1024 * 1024


# The largest stream offset a decoder counts from: far from the overflow of a C size.
_MAX_STREAM_OFFSET = 1 << 62


def checked_size(name: str, value: Any, minimum: int = 0) -> int:
    """``value``, an argument called ``name``, as a number of bytes of at least ``minimum``."""
    return checked_count(name, value, minimum, unit="bytes")


def checked_offset(value: Any) -> int:
    """``value``, an ``offset`` argument: the stream offset of a decoder's first byte."""
    start = checked_size("offset", value)
    if start > _MAX_STREAM_OFFSET:
        raise ValueError(f"offset {start} is past {_MAX_STREAM_OFFSET}, the last a stream has")
    return start


def _receive_room(sizehint: int, limit: int) -> int:
    """The room :meth:`FrameDecoder.get_buffer` hands out for ``sizehint`` under ``limit``.

    64 KiB when ``sizehint`` is not positive; else ``sizehint``, up to the
    larger of 64 KiB and the largest frame (prefix and payload) ``limit``
    allows. The arguments are Python ints, so the sum cannot overflow.
    """
    if sizehint <= 0:
        return RECEIVE_CHUNK
    return min(sizehint, max(varint_size(limit) + limit, RECEIVE_CHUNK))


def _frame_into(data: bytearray, offset: int, payload: object, limit: int, exact: bool) -> int:
    """Write ``payload`` as a frame at ``offset`` of ``data``; return the frame's end.

    With ``exact``, ``data`` is resized to end with the frame; otherwise it
    grows geometrically when the frame does not fit.
    """
    if cython.compiled:
        acquire(payload, cython.address(view), PyBUF_SIMPLE)
        try:
            return _put_frame(
                data, offset, cython.cast(cython.p_uchar, view.buf), view.len, limit, exact
            )
        finally:
            PyBuffer_Release(cython.address(view))
    with byte_view(payload, False) as source:
        return _put_frame(data, offset, source, len(source), limit, exact)


def _put_frame(
    data: bytearray, offset: int, source: Bytes, size: int, limit: int, exact: bool
) -> int:
    body = _frame_room(data, offset, size, limit, exact)
    copy_bytes(byte_pointer(data), body, source, size)
    return body + size


def _put_message(
    data: bytearray,
    offset: int,
    message: Any,
    limit: int,
    exact: bool,
    partial: bool,
    deterministic: bool,
) -> int:
    """Write a message as a frame at ``offset`` of ``data`` (-1: its end); return the frame's end.

    The payload is staged first (:func:`~codec.structs._dispatch.payload_of`),
    every value checked before anything is written, so a refused message
    leaves ``data`` as it was. ``offset`` is checked after that: the Python
    code a struct's values may run could have resized ``data``.
    """
    staged = payload_of(message, partial, deterministic)
    try:
        body = _frame_room(data, _resolved(data, offset), staged_size(staged), limit, exact)
        return write_staged(staged, data, body)
    finally:
        release_staged(staged)


def _resolved(data: bytearray, offset: int) -> int:
    """``offset`` as a position of ``data``: -1 is its end; past the end is a ValueError."""
    if offset == -1:
        return len(data)
    if offset > len(data):
        raise ValueError(f"offset {offset} is outside the buffer (length {len(data)})")
    return offset


def _frame_room(data: bytearray, offset: int, size: int, limit: int, exact: bool) -> int:
    """Make room for a frame of ``size`` payload bytes at ``offset``, write its prefix.

    Returns where the payload goes. With ``exact``, ``data`` is resized to end
    with the frame; otherwise it grows as a :class:`WriteBuffer`'s storage does.
    """
    if size > limit:
        raise FrameTooLargeError(size, limit)
    body = offset + varint_size(size)
    make_room(data, body + size, exact)
    varint_write(byte_pointer(data), offset, size)
    return body


def encode_frame_into(
    message_or_payload: Any,
    buffer: bytearray,
    offset: int = -1,
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    partial: bool = False,
    deterministic: bool = False,
) -> int:
    """Write one frame into a caller's ``bytearray`` at ``offset``; return its end offset.

    ``message_or_payload`` is a struct (written in place), a google.protobuf
    message (serialized once) or any contiguous buffer used as the payload.
    ``partial`` and ``deterministic`` mean what they mean to
    :class:`FrameEncoder`. ``offset=-1`` appends. As with
    msgspec's ``encode_into``, ``buffer`` is resized to end where the frame
    ends. On error (:class:`FrameTooLargeError`, :class:`EncodeError`) the
    buffer is left unchanged.
    """
    if not isinstance(buffer, bytearray):
        raise TypeError(f"buffer must be a bytearray, not {type(buffer).__name__}")
    if not -1 <= offset <= len(buffer):
        raise ValueError(f"offset {offset} is outside the buffer (length {len(buffer)})")
    limit = checked_size("max_frame_size", max_frame_size)
    exact_order = checked_flag("deterministic", deterministic)
    return _put_message(buffer, offset, message_or_payload, limit, True, partial, exact_order)


class FrameEncoder(WriteBuffer):
    """Writes frames into one reusable, growable buffer.

    Frames accumulate until :meth:`clear`; :meth:`getbuffer` gives a zero-copy
    view of them for a transport. While that view is alive the encoder
    refuses to grow or clear (:class:`BufferError`). A frame over
    ``max_frame_size`` raises :class:`FrameTooLargeError` and writes nothing.

    As pb2's ``SerializeToString``, it writes the entries of a map in the
    map's own order (a dict's insertion order), which protobuf leaves
    unspecified; ``deterministic=True`` writes them in upb's deterministic
    order, so equal messages give equal bytes, those of upb's
    ``SerializeToString(deterministic=True)``.

    Not thread-safe: a call to :meth:`write`, :meth:`encode`, :meth:`frame`,
    :meth:`clear` or :meth:`getbuffer` while a frame is being written (by
    another thread, or by Python code the encode runs, or inside an open
    ``frame()`` block) raises ``RuntimeError("FrameEncoder is already
    encoding")`` and changes nothing.
    """

    __signature__ = InitSignature()  # what inspect.signature(cls) reads

    @cython.embedsignature(True)  # the signature line InitSignature reads, compiled
    def __init__(
        self,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        *,
        capacity: int = 4096,
        deterministic: bool = False,
    ) -> None:
        """Check the options; the buffer starts with room for ``capacity`` bytes."""
        limit = checked_size("max_frame_size", max_frame_size)
        exact_order = checked_flag("deterministic", deterministic)
        WriteBuffer.__init__(self, checked_size("capacity", capacity))
        self._max_frame_size = limit
        self._deterministic = exact_order

    @property
    def max_frame_size(self) -> int:
        """Largest payload accepted, in bytes."""
        return self._max_frame_size

    @property
    def deterministic(self) -> bool:
        """Whether map entries are written in upb's deterministic order."""
        return self._deterministic

    def write(self, payload: Any) -> int:
        """Append ``varint(len(payload)) ‖ payload`` for any contiguous buffer.

        Returns the number of bytes appended.
        """
        self._claim(True)
        try:
            end = _frame_into(self._data, self._length, payload, self._max_frame_size, False)
            written = end - self._length
            set_end(self, end)
        finally:
            release_claim(self)
        return written

    def frame(self) -> Delimited:
        """Write one frame field by field: ``with encoder.frame() as writer: ...``.

        The block gets a :class:`~codec.wire.WireWriter` over this encoder.
        On exit the frame's length prefix is back-patched, minimal, as for a
        nested message. A payload over ``max_frame_size`` raises
        :class:`FrameTooLargeError`; that, or any exception inside the block,
        removes the partial frame.
        """
        return open_frame(self, self._max_frame_size)

    def encode(self, message: Any, partial: bool = False) -> int:
        """Append one message as a frame: a struct, a google.protobuf message or a payload.

        Returns the bytes appended. A struct is written straight into the
        buffer; a google.protobuf message is serialized once, then copied; a
        bytes-like payload is copied, as by :meth:`write`. A message missing
        required fields is an EncodeError naming them, unless ``partial``
        (pb2's ``SerializePartialToString``).
        """
        self._claim(True)  # held while a struct's values or a message's serializer run
        try:
            start = self._length
            end = _put_message(
                self._data,
                start,
                message,
                self._max_frame_size,
                False,
                partial,
                self._deterministic,
            )
            set_end(self, end)
        finally:
            release_claim(self)
        return end - start


class FrameDecoder(ReceiveWindow):
    """Splits a byte stream into frames, incrementally and without copying payloads.

    Bytes go in through :meth:`get_buffer` + :meth:`buffer_updated` (a socket
    writes straight into the window) or :meth:`feed` (copied in). Frames come
    out of :meth:`next_frame` or by iterating the decoder, as ``memoryview``
    slices of the window that stay valid at least until the next
    ``get_buffer``/``feed``; they are never overwritten afterwards either (the
    window moves to fresh memory while they are alive). With ``copy=True``
    they come out as ``bytes`` instead, copied straight from the window (no
    view is made: for frames of a few hundred bytes a copy costs less than a
    view, and it holds no window memory). With ``message_type`` (a
    google.protobuf message class, a struct class, or a :class:`codec.Decoder`
    of a struct class with its decode options) they come out parsed, and
    ``copy`` does not apply. The window grows with the bytes received, never
    with a declared length; :meth:`shrink` gives back what it grew into for a
    large frame (a warm decoder keeps its window until then).

    Errors: :class:`FrameTooLargeError` and :class:`~codec.errors.VarintError`
    for a bad prefix, :class:`TruncatedError` from :meth:`feed_eof` when the
    stream ends inside a frame, :class:`DecodeError` for a payload that
    ``message_type`` cannot parse (a struct's own decode errors, and
    google.protobuf's ``DecodeError``). Each carries the stream offset of the
    frame at fault (counted from ``offset``, that of the first byte fed: a
    stream read from a frame in its middle, as a part of an indexed file, keeps
    the offsets of the whole), and poisons the decoder. Any other exception of the
    parser (``MemoryError``, ``RecursionError`` when the stack is nearly
    used up, a bug) is not a verdict on the input: it propagates unchanged,
    the frame is consumed and the decoder is not poisoned.

    Not thread-safe: a call made while another is under way (from another
    thread, or from ``message_type``'s parser) raises
    ``RuntimeError("FrameDecoder is already decoding")`` and changes nothing.
    """

    # FrameDecoder[Sample] in an annotation evaluated at run time (codec/_generic.pyi).
    @classmethod
    def __class_getitem__(cls, item: Any) -> GenericAlias:
        return GenericAlias(cls, item)

    __signature__ = InitSignature()  # what inspect.signature(cls) reads

    @cython.embedsignature(True)  # the signature line InitSignature reads, compiled
    def __init__(
        self,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        *,
        strict: bool = False,
        message_type: Any = None,
        copy: bool = False,
        offset: int = 0,
    ) -> None:
        """Check the options; the decoder starts empty."""
        if self._busy:  # __init__ called again, from a parser
            raise self._busy_error()
        limit = checked_size("max_frame_size", max_frame_size)  # checked before any change
        strict = checked_flag("strict", strict)
        copy = checked_flag("copy", copy)
        start = checked_offset(offset)
        parser = parser_for(message_type)
        ReceiveWindow.__init__(self)
        self._base = start  # the stream offset of the window's first byte
        self._max_frame_size = limit
        self._strict = strict
        self._message_type = message_type
        self._parser = parser  # None: raw frames
        self._copy = copy  # raw frames as bytes, not as views of the window
        # The cursor: the stream offset of the first frame not complete (or
        # with a bad prefix). Every frame before it is complete, its prefix
        # scanned and checked once, as its bytes arrived.
        self._walked = start
        self._error: DecodeError | None = None
        self._error_offset = 0  # stream offset of the frame at fault
        self._eof = False
        self._offered = 0  # free bytes given out by the last get_buffer()
        self._busy: bool = False  # a call is under way (_claim)

    @property
    def max_frame_size(self) -> int:
        """Largest payload accepted, in bytes."""
        return self._max_frame_size

    @property
    def message_type(self) -> Any:
        """What frames are parsed with (as given), or None for raw frames."""
        return self._message_type

    @property
    def frame_in_progress(self) -> bool:
        """True while a frame has started arriving but is not complete."""
        self._claim()
        try:
            head = self._base + self._start
            return self._error is None and head == self._walked and self._start < self._end
        finally:
            self._busy = False

    # --- bytes in ----------------------------------------------------------

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """A writable view of free space in the window, for ``recv_into``.

        It holds ``sizehint`` bytes (64 KiB when ``sizehint`` is not positive),
        but no more than the larger of 64 KiB and the largest frame
        ``max_frame_size`` allows, prefix included: a hint is a hint, as in
        asyncio, and none makes the window grow past what the limit needs.
        Report how many bytes were written with :meth:`buffer_updated`. The
        view holds zeros, or bytes this decoder received before: memory the
        window grows into is zeroed, so it never shows other objects' bytes.
        """
        hint = checked_int("sizehint", sizehint, "bytes")
        self._claim()
        try:
            self._check_receiving()
            room = _receive_room(hint, self._max_frame_size)
            self._make_room(room)
            self._offered = room
            return self._received(self._end, self._end + room)
        finally:
            self._busy = False

    def buffer_updated(self, nbytes: int) -> None:
        """Take ``nbytes`` written at the start of the last :meth:`get_buffer` view."""
        self._claim()
        try:
            self._check_receiving()
            if not 0 <= nbytes <= self._offered:
                raise ValueError(
                    f"buffer_updated({nbytes}): the last get_buffer() gave out"
                    f" {self._offered} bytes"
                )
            self._commit(nbytes)
        finally:
            self._busy = False

    def feed(self, data: Any) -> None:
        """Copy ``data`` (any contiguous buffer) into the window."""
        self._claim()
        try:
            self._check_receiving()
            with byte_view(data, False) as source:
                size = len(source)
                self._make_room(size)
                with memoryview(self._data) as window:
                    window[self._end : self._end + size] = source
            self._commit(size)
        finally:
            self._busy = False

    def feed_eof(self) -> None:
        """Mark the end of the stream.

        Returns quietly when the stream ended at a frame boundary; frames
        still buffered can then be read. Raises :class:`TruncatedError` when
        it ended inside a prefix or a body (``missing`` says how many bytes a
        body lacked); the complete frames before that point can still be read
        before the error repeats.
        """
        self._claim()
        try:
            if self._error is not None:
                raise self._repeated()
            self._eof = True
            pos = self._walked - self._base
            if pos == self._end:
                return
            self._fail(_cut_error(byte_pointer(self._data), pos, self._end, self._base), pos)
        finally:
            self._busy = False

    # --- frames out --------------------------------------------------------

    def next_frame(self) -> Any:
        """The next complete frame (a ``memoryview``, or a message), or ``None``."""
        self._claim()
        try:
            return self._take_frame()
        finally:
            self._busy = False

    def take_frames(self, limit: int) -> memoryview:
        """Up to ``limit`` complete frames at once, as one view of their bytes, prefixes
        included (empty when none is complete): for a reader that walks the frames
        itself, as :mod:`codec.arrow` does, with no object made per frame. Their
        prefixes are checked, as :meth:`next_frame`'s are; the view stays valid as a
        frame does. It ignores ``message_type`` and ``copy``.
        """
        count = checked_size("limit", limit)
        self._claim()
        try:
            start = self._start
            if self._error is not None and self._base + start >= self._error_offset:
                raise self._repeated()
            stop = self._walked - self._base  # every frame before it is complete
            data = byte_pointer(self._data)
            pos = start
            while pos < stop and count > 0:
                n = 1
                while data[pos + n - 1] >= 0x80:
                    n += 1
                pos += n + cython.cast(cython.Py_ssize_t, varint_value(data, pos, n))
                count -= 1
            self._start = pos
            return self._received(start, pos)
        finally:
            self._busy = False

    def shrink(self) -> None:
        """Give back the memory the window grew into for a large frame, once it is taken.

        The window keeps room for its unread bytes and one 64 KiB read; it is
        cut back to that only when it is more than four times larger, so
        calling this after every read costs nothing in steady use (the
        asyncio layer calls it whenever its reader waits for bytes). Frames
        handed out stay valid. While a :meth:`get_buffer` view is
        outstanding (not yet reported with :meth:`buffer_updated`) it does
        nothing: the bytes written there must land in the window.
        """
        self._claim()
        try:
            if not self._offered:
                self._trim()
        finally:
            self._busy = False

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        self._claim()
        try:
            frame = self._take_frame()
        finally:
            self._busy = False
        if frame is None:
            raise StopIteration
        return frame

    # --- internals ---------------------------------------------------------

    def _take_frame(self) -> Any:
        """Take the frame at ``_start`` if it is complete: a view, or its message; else None."""
        start = self._start
        if self._error is not None and self._base + start >= self._error_offset:
            raise self._repeated()
        if self._base + start == self._walked:
            return None  # the walk stopped here: the frame is not complete
        # The walk checked this prefix: only the length it holds is read again.
        data = byte_pointer(self._data)
        n = 1
        while data[start + n - 1] >= 0x80:
            n += 1
        body = start + n
        end = body + cython.cast(cython.Py_ssize_t, varint_value(data, start, n))
        self._start = end
        if self._parser is not None:
            return self._parse(self._received(body, end), start, n)
        if self._copy:
            return self._copied(body, end)
        return self._received(body, end)

    def _commit(self, nbytes: int) -> None:
        """Count ``nbytes`` written after ``_end`` as received, and walk the frames they end.

        A bad or oversized prefix of the next frame to take raises at once;
        one behind frames not taken yet poisons the decoder silently, for
        ``next_frame()`` to raise once those frames are out.
        """
        self._end += nbytes
        self._offered = 0
        self._walk()
        if self._error is not None and self._error_offset == self._base + self._start:
            raise self._repeated()

    def _walk(self) -> None:
        """Move the cursor over the frames received complete since the last walk.

        Each prefix is scanned and checked once, when the bytes that complete
        it arrive; the walk stops at the first frame not complete, or at a bad
        prefix, which poisons the decoder without raising.
        """
        pos = self._walked - self._base
        data = byte_pointer(self._data)
        end = self._end
        while pos < end:
            stop = _frame_end(data, pos, end, self._max_frame_size, self._strict)
            if stop < 0:
                error = _prefix_error(
                    data, pos, end, self._max_frame_size, self._strict, self._base
                )
                self._poison(error, pos)
            if stop <= pos:
                break
            pos = stop
        self._walked = self._base + pos

    def _claim(self) -> None:
        """Hold the decoder for one call; release it with ``_busy = False``."""
        if self._data is None:
            raise uninitialised(self)
        if self._busy:
            raise self._busy_error()
        self._busy = True

    def _busy_error(self) -> RuntimeError:
        return RuntimeError(f"{type(self).__name__} is already decoding")

    def _check_receiving(self) -> None:
        if self._error is not None:
            raise self._repeated()
        if self._eof:
            raise RuntimeError("no data may follow feed_eof()")

    def _repeated(self) -> DecodeError:
        """The error the decoder is poisoned with, to raise again: with no traceback of the
        earlier raises (each raise would add its own to it, for as long as it is kept)."""
        return self._error.with_traceback(None)  # type: ignore[union-attr]  # poisoned

    def _poison(self, error: DecodeError, pos: int) -> None:
        """Poison the decoder with ``error`` for the frame at window position ``pos``."""
        self._error = error
        self._error_offset = self._base + pos

    def _fail(self, error: DecodeError, pos: int) -> NoReturn:
        """Poison the decoder with ``error`` for the frame at ``pos``, and raise it."""
        self._poison(error, pos)
        raise error

    def _parse(self, frame: memoryview, start: int, prefix: int) -> Any:
        """The message in ``frame``, the frame at window position ``start``."""
        parser = self._parser
        assert parser is not None  # only frames of a decoder with a message_type are parsed
        try:
            return parser.parse(frame, self._base + start, prefix)
        except DecodeError as exc:
            self._fail(exc, start)
        finally:
            frame.release()


# --- the prefix rules, for the decoder and for readers of a stream held in memory ----


def _frame_end(data: Any, pos: int, end: int, max_frame_size: int, strict: bool) -> int:
    """Where the frame at ``data[pos:end]`` ends, if it is complete and its prefix good;
    ``pos`` if it is not complete (yet); -1 if its prefix is bad (:func:`_prefix_error`)."""
    n = varint_scan(data, pos, end, strict)
    if n <= 0:
        return -1 if n < 0 else pos
    size = varint_value(data, pos, n)
    if size > max_frame_size:
        return -1
    if size > end - pos - n:
        return pos
    return pos + n + size


def _prefix_error(
    data: Any, pos: int, end: int, max_frame_size: int, strict: bool, base: int
) -> DecodeError:
    """The error of the bad prefix at ``data[pos:end]``, at stream offset ``base + pos``."""
    n = varint_scan(data, pos, end, strict)
    if n < 0:
        return varint_error(n, base + pos)
    return FrameTooLargeError(varint_value(data, pos, n), max_frame_size, base + pos)


def _cut_error(data: Any, pos: int, end: int, base: int) -> TruncatedError:
    """The error of a stream that ends, at ``end``, inside the frame at ``pos``."""
    n = varint_scan(data, pos, end, False)
    if n == 0:
        return TruncatedError("stream ended inside a frame prefix", base + pos)
    missing = varint_value(data, pos, n) - (end - pos - n)
    return TruncatedError("stream ended inside a frame body", base + pos, missing=missing)


def frames_end(
    view: memoryview, pos: int, limit: int, max_frame_size: int, strict: bool, max_bytes: int
) -> int:
    """The end of up to ``limit`` complete frames of ``view`` from ``pos``, their prefixes
    checked as :class:`FrameDecoder` checks them; it stops before a frame not complete or
    with a bad prefix (:func:`frame_error` says which), and after the frame that reaches
    ``max_bytes`` past ``pos``. For a reader that walks the frames of a stream held in
    memory in place, as :mod:`codec.arrow` does: ``view`` is a flat byte view
    (``byte_view``'s).
    """
    end = len(view)
    if not 0 <= pos <= end:
        raise ValueError(f"pos {pos} is outside the view's {end} bytes")
    data = _view_bytes(view)
    start = pos
    while limit > 0 and pos < end and pos - start < max_bytes:
        stop = _frame_end(data, pos, end, max_frame_size, strict)
        if stop <= pos:
            break
        pos = stop
        limit -= 1
    return pos


def frame_error(
    view: memoryview, pos: int, max_frame_size: int, strict: bool, base: int
) -> DecodeError:
    """The error of the frame at ``pos`` where :func:`frames_end` stopped, in a stream
    that ends with ``view`` (``base``: the stream offset of its first byte): a bad
    prefix, or a frame the end cuts."""
    end = len(view)
    if not 0 <= pos < end:
        raise ValueError(f"pos {pos} is outside the view's {end} bytes")
    data = _view_bytes(view)
    stop = _frame_end(data, pos, end, max_frame_size, strict)
    if stop < 0:
        return _prefix_error(data, pos, end, max_frame_size, strict, base)
    if stop > pos:
        raise ValueError(f"the frame at {pos} is complete")
    return _cut_error(data, pos, end, base)


def _view_bytes(view: memoryview) -> Any:
    """The bytes of a flat byte view (compiled: a pointer); TypeError for any other view."""
    if cython.compiled:
        if not is_flat_bytes(view, False):
            raise TypeError("expected a flat byte memoryview")
        return cython.cast(cython.p_uchar, PyMemoryView_GET_BUFFER(view).buf)
    if not (view.ndim == 1 and view.itemsize == 1 and view.c_contiguous):
        raise TypeError("expected a flat byte memoryview")
    return view


if not cython.compiled:
    from codec._pure import fields_as_allocated

    fields_as_allocated(FrameEncoder, _max_frame_size=0, _deterministic=False)
    fields_as_allocated(
        FrameDecoder,
        _max_frame_size=0,
        _strict=False,
        _message_type=None,
        _parser=None,
        _copy=False,
        _walked=0,
        _error=None,
        _error_offset=0,
        _eof=False,
        _offered=0,
        _busy=False,
    )

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "FrameDecoder",
    "FrameEncoder",
    "encode_frame_into",
]
