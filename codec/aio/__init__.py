"""asyncio: framed message streams over TCP and Unix sockets, received without copying.

Strategy, receiving: :class:`FramedProtocol` is an ``asyncio.BufferedProtocol``
whose ``get_buffer``/``buffer_updated`` are those of a
:class:`~codec.framing.FrameDecoder`, so the kernel writes straight into the
decoder's receive window. Nothing is split or queued in this layer: complete
frames stay in the window until :meth:`FramedReader.recv` takes one with
``next_frame()`` (parsed, or as ``bytes``, or as a zero-copy ``memoryview``).
Because a frame is only taken out synchronously, after the last ``await``,
cancelling a pending ``recv()`` can never lose one. A frame already buffered
needs no wait, so ``recv()`` and ``async for`` yield to the loop after each
millisecond of frames (``TURN_SECONDS``), before taking one: a burst of frames
from one peer cannot keep the other connections of the loop waiting. The
window is also the backpressure queue: once ``read_high_water`` bytes are
buffered and the next frame is complete, the transport stops reading; it
resumes when the application has consumed down to ``read_low_water``, or as
soon as the next frame is incomplete (so a frame larger than the high-water
mark can always finish). A connection therefore holds at most about
``max(read_high_water, max_frame_size)`` plus one 64 KiB read of unread bytes,
whatever the peer sends (in a window of up to twice that capacity: it grows
geometrically; whenever the reader waits for bytes, ``FrameDecoder.shrink()``
cuts it back to room for the unread bytes and one 64 KiB read if it is more
than four times that, so an idle connection keeps no window sized for its
largest frame). A bad prefix (oversized or malformed) is refused by the
decoder as soon as it arrives: the transport is closed and ``recv()`` hands
out the frames before the fault, then raises the decoder's error. A payload
that ``message_type`` cannot parse does the same. The end of the stream goes
to ``FrameDecoder.feed_eof()``: at a frame boundary ``recv()`` raises
:class:`EOFError` (``async for`` stops); inside a frame it raises
:class:`~codec.errors.TruncatedError`. An optional ``frame_timeout`` closes a
connection whose frame stays incomplete for too long (slow loris), using the
decoder's ``frame_in_progress``.

Strategy, sending: :meth:`FramedWriter.send` encodes into a
:class:`~codec.framing.FrameEncoder` and schedules one flush with
``loop.call_soon``, so every message sent in the same loop iteration goes to
the transport in one ``write()`` (earlier once 64 KiB are pending, or the
transport's high-water mark if lower). The flush hands the transport a
zero-copy view of the encoder's buffer. A transport may keep that view
instead of copying it (CPython 3.12+ queues ``memoryview``\\ s on a partial
send, uvloop pins the buffer until libuv has written it), so after the write
the writer tries ``FrameEncoder.clear()``, which refuses while any view is
alive: if it succeeds, nothing holds the buffer and it is reused at once (the
common case: the kernel took everything); if it raises ``BufferError`` the
encoder is set aside, untouched, and a spare one takes its place until the
transport lets go. The export count is the proof, not a guess from
``get_write_buffer_size()``. When the transport is already backed up and less
than 4 KiB is pending, the writer hands it a ``bytes`` copy instead, so a
trickle of small sends cannot pin one 4 KiB+ buffer per write. An encoder
that grew past 128 KiB (a large message) is shrunk once flushed, or left to
the transport's view if that holds it, so an idle connection keeps no buffer
sized for its largest message.
:meth:`FramedWriter.drain` and :meth:`FramedWriter.asend` honour the
transport's write high-water mark as ``StreamWriter.drain()`` does.

The stream wrappers (:meth:`FramedReader.from_stream`,
:meth:`FramedWriter.from_stream`) run the same decoder and encoder over an
existing ``asyncio.StreamReader`` / ``StreamWriter``: bytes are copied once
from the ``StreamReader`` into the decoder (no zero-copy receive there), and
flow control is the ``StreamWriter``'s.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast, overload

from codec.errors import DecodeError, FrameTimeoutError
from codec.framing import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, FrameEncoder, checked_flag

if TYPE_CHECKING:
    from codec._generic import Decoder

__all__ = [
    "DEFAULT_READ_HIGH_WATER",
    "TURN_SECONDS",
    "FrameTimeoutError",
    "FramedProtocol",
    "FramedReader",
    "FramedWriter",
    "open_connection",
    "open_unix_connection",
    "start_server",
    "start_unix_server",
]

M = TypeVar("M")

# Unread bytes at which a connection stops reading: 2x asyncio's StreamReader
# (which pauses at 2 x its 64 KiB limit), so four 64 KiB reads fit.
DEFAULT_READ_HIGH_WATER = 256 * 1024
# Pending bytes that make send() flush at once instead of at the end of the
# loop iteration (capped by the transport's own high-water mark).
_FLUSH_SIZE = 64 * 1024
# Below this, a flush into an already backed-up transport is copied (see above).
_SMALL_WRITE = 4096
# Spare encoders kept for reuse (shrunk: they grow again as they are used).
_SPARES = 2
# An encoder that grew past this (for a large frame, or a burst) gives its memory
# back once flushed: small frames, flushed by _FLUSH_SIZE pending, never grow it
# so far, and an idle connection keeps no buffer grown for its largest message.
_KEPT_CAPACITY = 2 * _FLUSH_SIZE
# Bytes asked of a StreamReader per read by FramedReader.from_stream.
_STREAM_READ_SIZE = 64 * 1024
# recv() and async for yield to the event loop once they have handed out
# buffered frames for TURN_SECONDS without waiting (the clock is read every
# _TURN_CHECK frames). A buffered frame needs no wait, so without a yield one
# connection's burst (64 KiB of empty frames is 65,536 of them) would run its
# handler to the end of the burst while every other connection of the loop
# waits. A yield costs about one loop iteration (~25 us on a shared 2-core
# machine): one per 64 small frames cost a one-connection transfer 28 %, one
# per millisecond costs it at most a few per cent, and a turn lasts about as
# long whatever the handler does with each frame.
TURN_SECONDS = 0.001
_TURN_CHECK = 16


# --- sources and flows: what a reader and a writer are connected to ----------


class _Source:
    """Where a :class:`FramedReader`'s decoder gets bytes from, and how that ended.

    Each source keeps the end of its reading the same way: ``_ended`` once no
    more bytes will be decoded, with the error that ended it, if one did (the
    connection's, or a frame timeout), which :meth:`wait_readable` raises once
    the buffered frames are read.
    """

    def __init__(self) -> None:
        self.received = 0  # bytes handed to the decoder so far
        self._ended = False  # no more bytes will be decoded
        self._error: BaseException | None = None  # raised once the buffered frames are read
        self._error_tb: TracebackType | None = None  # its traceback when it was kept

    def wants_frame_taken(self) -> bool:
        """Whether the reader must call :meth:`frame_taken` after each frame, for now.

        A source whose answer changes sets its reader's ``_notify`` itself.
        """
        raise NotImplementedError

    async def wait_readable(self) -> None:
        """Return once more bytes or the end may be in the decoder; raise at the end."""
        raise NotImplementedError

    def frame_taken(self) -> None:
        """Called after each frame the reader takes out of the decoder, if wanted."""
        raise NotImplementedError

    def abort_reading(self) -> None:
        """The decoder is poisoned: stop reading and close the connection."""
        raise NotImplementedError

    def _end_with(self, exc: BaseException) -> None:
        """Reading ends with ``exc``, to be raised with its traceback of now."""
        self._ended = True
        self._error, self._error_tb = exc, exc.__traceback__

    def _end_error(self) -> BaseException | None:
        """What to raise if the reading has ended: its error, else ``EOFError``.

        Returned, not raised: raised by the caller, a kept error's traceback
        is the same on every call.
        """
        if self._error is not None:  # raised again as it was kept, not with every call's traceback
            return self._error.with_traceback(self._error_tb)
        if self._ended:
            return EOFError("end of stream")
        return None


class _Flow(Protocol):
    """Flow control and connection state behind a :class:`FramedWriter`."""

    # Whether the flow tells the writer when the connection closes; if not,
    # send() asks the transport.
    tells_closing: bool

    def may_be_paused(self) -> bool:
        """Whether writing may be paused now, so that ``asend()`` must ask.

        A flow whose answer changes sets its writer's ``_may_wait`` itself.
        """

    async def wait_if_paused(self) -> None:
        """``asend()``: return at once unless writing is paused, then as ``wait_writable``."""

    async def wait_writable(self) -> None:
        """``drain()``: return when the transport is below its high-water mark.

        Raises ``ConnectionResetError`` once the connection is lost.
        """

    def close_transport(self) -> None:
        """Close the transport (it sends what it holds first)."""

    async def wait_closed(self) -> None:
        """Return once the connection is closed."""


# --- reader -------------------------------------------------------------------


def _frame_decoder(
    max_frame_size: int, strict: bool, message_type: Any, zero_copy: bool
) -> FrameDecoder:
    """The decoder of a reader: raw frames as ``bytes``, or views with ``zero_copy``."""
    copy = not checked_flag("zero_copy", zero_copy)
    return FrameDecoder(max_frame_size, strict=strict, message_type=message_type, copy=copy)


def _buffered_frame_first(
    wait: Callable[[FramedReader[M]], Coroutine[Any, Any, M]],
) -> Callable[[FramedReader[M]], Coroutine[Any, Any, M]]:
    """A reader's ``recv`` or ``__anext__``: a buffered frame at once, else ``wait``'s.

    The decorated coroutine (``wait``) runs only when no frame is buffered:
    it waits for the next one and raises the end of the stream as its caller
    expects (``EOFError``, ``StopAsyncIteration``), the one way in which
    ``recv()`` and ``async for`` differ. What they share, the fast path, is
    the per-message cost, so it is written once here and makes no call but
    the decoder's: one more Python call would cost a small message 3 to 6 %
    of its loopback time (``benches/bench_aio.py``).
    """

    @functools.wraps(wait)
    async def next_message(self: FramedReader[M]) -> M:
        self._turn -= 1
        if not self._turn and self._turn_over():
            await asyncio.sleep(0)  # let the loop's other tasks run
        try:
            frame = self._decoder.next_frame()
        except DecodeError as exc:
            self._decode_failed(exc)
            raise
        if frame is None:
            return await wait(self)
        if self._notify:
            self._source.frame_taken()
        return frame  # type: ignore[no-any-return]

    return next_message


class FramedReader(Generic[M]):
    """Messages from a framed byte stream, one per :meth:`recv`, or by ``async for``.

    With ``message_type`` (a google.protobuf message class, a struct class,
    or a :class:`codec.Decoder`) each frame comes out parsed; without it, as
    ``bytes`` (or as a zero-copy ``memoryview`` into the receive window with
    ``zero_copy=True``: it stays valid, but holding it past the next read
    makes the window move to fresh memory, a copy of the unread bytes).

    Ends of stream: at a frame boundary :meth:`recv` raises :class:`EOFError`
    and iteration stops; inside a frame it raises
    :class:`~codec.errors.TruncatedError`. Oversized or malformed frames raise
    the decoder's :class:`~codec.errors.DecodeError` after the frames before
    them; an incomplete frame past ``frame_timeout`` raises
    :class:`FrameTimeoutError`; a connection lost with an error raises that
    ``OSError``. Each of these repeats on later calls.

    Fairness: :meth:`recv` and ``async for`` yield to the event loop after
    each :data:`TURN_SECONDS` (1 ms) of handing out frames without waiting,
    even when the next one is already buffered, so a peer's burst of frames
    cannot keep the loop's other connections waiting until its handler has
    seen them all.

    Made by :func:`open_connection`, :func:`start_server`,
    :class:`FramedProtocol` or :meth:`from_stream`, not directly.
    """

    def __init__(self, decoder: FrameDecoder, source: _Source) -> None:
        self._decoder = decoder
        self._source = source
        # Whether to call source.frame_taken() (the source keeps it up to date).
        self._notify = source.wants_frame_taken()
        self._turn = _TURN_CHECK  # frames to hand out before the clock is read
        self._turn_started = time.monotonic()  # when the current turn began
        self._fault: DecodeError | None = None  # the decoder's error, once seen
        self._fault_tb: TracebackType | None = None  # its traceback then

    @overload
    @classmethod
    def from_stream(
        cls,
        stream: asyncio.StreamReader,
        *,
        message_type: type[M] | Decoder[M],
        max_frame_size: int = ...,
        strict: bool = ...,
        zero_copy: bool = ...,
        frame_timeout: float | None = ...,
    ) -> FramedReader[M]: ...
    @overload
    @classmethod
    def from_stream(
        cls,
        stream: asyncio.StreamReader,
        *,
        message_type: None = None,
        max_frame_size: int = ...,
        strict: bool = ...,
        zero_copy: bool = ...,
        frame_timeout: float | None = ...,
    ) -> FramedReader[Any]: ...
    @classmethod
    def from_stream(
        cls,
        stream: asyncio.StreamReader,
        *,
        message_type: Any = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        strict: bool = False,
        zero_copy: bool = False,
        frame_timeout: float | None = None,
    ) -> FramedReader[Any]:
        """Read frames from an existing ``asyncio.StreamReader``.

        Bytes are copied once from the stream into the decoder; flow control
        is the ``StreamReader``'s own (its ``limit``). On a decode error or a
        frame timeout the stream's transport is closed. Options as for
        :class:`FramedProtocol`.
        """
        decoder = _frame_decoder(max_frame_size, strict, message_type, zero_copy)
        return cls(decoder, _StreamSource(stream, decoder, frame_timeout))

    @property
    def buffered(self) -> int:
        """Bytes received and not consumed yet (complete frames and the start of the next)."""
        return self._decoder.buffered

    @property
    def consumed(self) -> int:
        """Bytes of the stream taken so far: the frames handed out, each with its prefix as
        sent (a peer may pad prefixes), so the stream offset of the next frame."""
        return self._source.received - self._decoder.buffered

    def _buffered_frame(self) -> Any:
        """The next complete frame, unconverted, or ``None``."""
        try:
            frame = self._decoder.next_frame()
        except DecodeError as exc:
            self._decode_failed(exc)
            raise
        if frame is not None and self._notify:
            self._source.frame_taken()
        return frame

    def _decode_failed(self, exc: DecodeError) -> None:
        """The decoder is poisoned: stop reading; ``exc`` gets back its first traceback.

        The decoder raises the same error on every later call, which would
        otherwise add each call's traceback entries (and keep their frames)
        to those of the calls before.
        """
        self._source.abort_reading()
        if exc is not self._fault:
            self._fault, self._fault_tb = exc, exc.__traceback__
        else:
            exc.with_traceback(self._fault_tb)

    def _turn_over(self) -> bool:
        """Whether the task has handed out frames for ``TURN_SECONDS`` and must yield now.

        Asked every ``_TURN_CHECK`` frames, before a frame is taken (so a
        cancellation of the yield loses nothing); a yield starts the next turn.
        """
        self._turn = _TURN_CHECK
        now = time.monotonic()
        if now - self._turn_started < TURN_SECONDS:
            return False
        self._turn_started = now
        return True

    async def _wait_frame(self) -> Any:
        """The next frame, unconverted, once it has arrived."""
        frame = None
        while frame is None:
            self._decoder.shrink()  # idle until bytes come: keep no large frame's window
            await self._source.wait_readable()
            frame = self._buffered_frame()
        return frame

    @_buffered_frame_first
    async def recv(self) -> M:
        """The next message; :class:`EOFError` at a clean end of stream.

        Cancel-safe: a cancelled ``recv()`` consumes nothing, so it can be
        wrapped in ``asyncio.timeout()`` or ``wait_for()`` without losing a
        message. Only one task may wait in ``recv()`` at a time.
        """
        return await self._wait_frame()  # type: ignore[no-any-return]

    def recv_nowait(self) -> M | None:
        """The next message if it is already buffered, else ``None``.

        Raises like :meth:`recv` only for a fault reached in the buffered
        bytes; the end of the stream is reported by :meth:`recv`.
        """
        return self._buffered_frame()  # type: ignore[no-any-return]

    def __aiter__(self) -> FramedReader[M]:
        return self

    @_buffered_frame_first
    async def __anext__(self) -> M:
        try:
            return await self._wait_frame()  # type: ignore[no-any-return]
        except EOFError:
            raise StopAsyncIteration from None


class _StreamSource(_Source):
    """A :class:`FramedReader` source over an ``asyncio.StreamReader`` (bytes copied in)."""

    def __init__(
        self, stream: asyncio.StreamReader, decoder: FrameDecoder, frame_timeout: float | None
    ) -> None:
        super().__init__()
        self._stream = stream
        self._decoder = decoder
        self._frame_timeout = frame_timeout
        self._frame_started: float | None = None

    def wants_frame_taken(self) -> bool:
        return self._frame_timeout is not None  # a frame's time starts when it is waited for

    async def wait_readable(self) -> None:
        if (error := self._end_error()) is not None:
            raise error
        decoder = self._decoder
        timeout = self._frame_timeout
        if timeout is None or not decoder.frame_in_progress:
            self._frame_started = None
            chunk = await self._read_chunk()
        else:
            loop = asyncio.get_running_loop()
            if self._frame_started is None:
                self._frame_started = loop.time()
            try:
                async with asyncio.timeout_at(self._frame_started + timeout):
                    chunk = await self._read_chunk()
            except TimeoutError:
                if self._error is not None:  # the connection's own
                    raise
                error = FrameTimeoutError(timeout)
                self._end_with(error)
                self._close_transport()
                raise error from None
        self.received += len(chunk)
        try:
            if chunk:
                decoder.feed(chunk)
            else:
                self._ended = True
                decoder.feed_eof()
        except DecodeError:  # the decoder is poisoned; next_frame() raises it in order
            self._ended = True
            self._close_transport()

    async def _read_chunk(self) -> bytes:
        try:
            return await self._stream.read(_STREAM_READ_SIZE)
        except OSError as exc:  # the connection's error: kept, as the stream keeps it
            self._end_with(exc)
            raise

    def frame_taken(self) -> None:
        self._frame_started = None  # the next frame's time starts when it is waited for

    def abort_reading(self) -> None:
        self._ended = True
        self._close_transport()

    def _close_transport(self) -> None:
        # StreamReader keeps its transport (for pause/resume) in ``_transport``
        # since Python 3.4; it has no public accessor.
        transport = getattr(self._stream, "_transport", None)
        if transport is not None:
            transport.close()


class _TransportSource(_Source):
    """A :class:`FramedReader` source on :class:`FramedProtocol`: bytes land in the decoder.

    The protocol passes on the transport's reading callbacks:
    :meth:`connection_made`, :meth:`get_buffer`/:meth:`buffer_updated`, and
    the end of the stream or of the connection (:meth:`end`). The source
    pauses and resumes the transport's reading, times incomplete frames and
    keeps its reader's ``_notify`` equal to :meth:`wants_frame_taken`.
    """

    def __init__(
        self,
        decoder: FrameDecoder,
        read_high_water: int,
        read_low_water: int,
        frame_timeout: float | None,
        close_connection: Callable[[], None],
    ) -> None:
        super().__init__()
        self._decoder = decoder
        self._read_high = read_high_water
        self._read_low = read_low_water
        self._frame_timeout = frame_timeout
        self._close_connection = close_connection  # the protocol's: later sends are refused
        self._transport: asyncio.Transport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._reading_paused = False
        self.clean_end = False  # the stream ended at a frame boundary
        self._timer: asyncio.TimerHandle | None = None
        self._scratch: bytearray | None = None
        self.reader: FramedReader[Any] = FramedReader(decoder, self)

    def wants_frame_taken(self) -> bool:
        # While paused, to resume; with a frame timeout, to time the next frame.
        return self._reading_paused or self._frame_timeout is not None

    # --- told by the protocol ---

    def connection_made(
        self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop
    ) -> None:
        self._transport = transport
        self._loop = loop

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._ended:  # only if the transport reads on after close(): discard
            if self._scratch is None:
                self._scratch = bytearray(4096)
            return memoryview(self._scratch)
        return self._decoder.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        if self._ended:
            return
        self.received += nbytes
        decoder = self._decoder
        try:
            decoder.buffer_updated(nbytes)
        except DecodeError:  # poisoned: next_frame() raises it after the frames before
            self.abort_reading()
            return
        if decoder.frame_in_progress:
            if self._frame_timeout is not None and self._timer is None:
                self._start_timer()
            return
        # The next frame is complete.
        self._cancel_timer()
        self._wake_reader()
        if decoder.buffered >= self._read_high and not self._reading_paused:
            self._pause_reading()

    def end(self, exc: BaseException | None) -> None:
        """No more bytes will come (``exc``: the connection's error): check the decoder's end."""
        if not self._ended:
            if exc is not None:
                self._end_with(exc)
            else:
                self._ended = True
                try:
                    self._decoder.feed_eof()
                except DecodeError:  # truncated: next_frame() raises it after the frames
                    pass
                else:
                    self.clean_end = True
        self._cancel_timer()
        self._wake_reader()

    # --- asked by the reader ---

    async def wait_readable(self) -> None:
        if (error := self._end_error()) is not None:
            raise error
        if self._waiter is not None:
            raise RuntimeError("recv() called while another task is already waiting in recv()")
        if self._reading_paused:  # not reached in practice: pausing needs a complete frame
            self._resume_reading()
        assert self._loop is not None
        self._waiter = waiter = self._loop.create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def frame_taken(self) -> None:
        if self._reading_paused:
            decoder = self._decoder
            if decoder.buffered <= self._read_low or decoder.frame_in_progress:
                self._resume_reading()
        if (
            self._frame_timeout is not None
            and self._timer is None
            and not self._ended
            and self._decoder.frame_in_progress
        ):
            self._start_timer()

    def abort_reading(self) -> None:
        self._ended = True
        self._close_connection()
        self.end(None)

    # --- reading paused, frames timed ---

    def _wake_reader(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _pause_reading(self) -> None:
        assert self._transport is not None
        self._reading_paused = True
        self.reader._notify = self.wants_frame_taken()
        self._transport.pause_reading()

    def _resume_reading(self) -> None:
        self._reading_paused = False
        self.reader._notify = self.wants_frame_taken()
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.resume_reading()

    def _start_timer(self) -> None:
        assert self._loop is not None and self._frame_timeout is not None
        self._timer = self._loop.call_later(self._frame_timeout, self._frame_timed_out)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _frame_timed_out(self) -> None:
        self._timer = None
        if self._ended or not self._decoder.frame_in_progress:
            return
        assert self._frame_timeout is not None
        self.end(FrameTimeoutError(self._frame_timeout))
        self._close_connection()


# --- writer -------------------------------------------------------------------


class FramedWriter:
    """Sends messages as frames, coalescing the sends of one loop iteration into one write.

    :meth:`send` encodes at once (errors are raised there, nothing partial is
    written) and never blocks; :meth:`asend` also waits while the transport
    is above its write high-water mark; :meth:`drain` hands over what is
    pending now and waits likewise. Frames of concurrent senders never
    interleave: each is written whole into the pending buffer by one
    synchronous call.

    Made by :func:`open_connection`, :func:`start_server`,
    :class:`FramedProtocol` or :meth:`from_stream`, not directly.
    """

    def __init__(
        self,
        transport: asyncio.WriteTransport,
        flow: _Flow,
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    ) -> None:
        self._transport = transport
        self._flow = flow
        self._max_frame_size = max_frame_size
        self._loop = asyncio.get_running_loop()
        self._encoder = FrameEncoder(max_frame_size)
        self._held: list[FrameEncoder] = []  # written, still referenced by the transport
        self._spares: list[FrameEncoder] = []
        self._flush_scheduled = False
        self._closing = False  # close(), write_eof() or abort() called
        self._refusing = False  # send() raises: that, or the connection is closing
        # Whether asend() must ask the flow (the flow keeps it up to date).
        self._may_wait = flow.may_be_paused()
        # A transport that may close unbeknown to the flow is checked on send().
        self._poll_transport = not flow.tells_closing
        self._flush_size = _FLUSH_SIZE
        self._update_flush_size()

    @classmethod
    def from_stream(
        cls, stream: asyncio.StreamWriter, *, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    ) -> FramedWriter:
        """Write frames to an existing ``asyncio.StreamWriter``.

        Frames go straight to its transport; :meth:`drain`, :meth:`close` and
        :meth:`wait_closed` use the ``StreamWriter``'s.
        """
        return cls(stream.transport, _StreamFlow(stream), max_frame_size=max_frame_size)

    @property
    def transport(self) -> asyncio.WriteTransport:
        return self._transport

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """The transport's ``get_extra_info`` (``"peername"``, ``"socket"``, ...)."""
        return self._transport.get_extra_info(name, default)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        """Set the transport's write high- and low-water marks (see asyncio)."""
        self._transport.set_write_buffer_limits(high, low)
        self._update_flush_size()

    def _update_flush_size(self) -> None:
        try:
            high = self._transport.get_write_buffer_limits()[1]
        except NotImplementedError:  # a transport without write buffer limits
            high = _FLUSH_SIZE
        self._flush_size = max(1, min(_FLUSH_SIZE, high))

    # --- sending ---

    def send(self, message: Any) -> None:
        """Encode one message: a struct, a google.protobuf message, or a raw payload.

        A raw payload is any object with the buffer protocol (``bytes``,
        ``bytearray``, ``memoryview``, a numpy array), as for
        :meth:`FrameEncoder.encode <codec.FrameEncoder.encode>`.

        It reaches the transport at the end of this loop iteration, with
        everything else sent meanwhile, or at once when 64 KiB are pending.
        Raises :class:`~codec.errors.EncodeError` /
        :class:`~codec.errors.FrameTooLargeError` without writing anything,
        ``RuntimeError`` after :meth:`close`/:meth:`write_eof`, and
        ``ConnectionResetError`` once the connection is lost.
        """
        if self._refusing or (self._poll_transport and self._transport.is_closing()):
            self._refuse()
        encoder = self._encoder
        encoder.encode(message)
        if len(encoder) >= self._flush_size:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def send_many(self, messages: Any) -> None:
        """:meth:`send` each message of an iterable."""
        send = self.send
        for message in messages:
            send(message)

    async def asend(self, message: Any) -> None:
        """:meth:`send`, then wait while the transport is above its high-water mark."""
        self.send(message)
        if self._may_wait:
            await self._flow.wait_if_paused()

    async def drain(self) -> None:
        """Hand pending frames to the transport now; wait while it is above its high-water mark.

        Raises ``ConnectionResetError`` if the connection is lost.
        """
        self._flush()
        await self._flow.wait_writable()

    def flush(self) -> None:
        """Hand pending frames to the transport now, without waiting.

        Needed only before writing to the transport (or a wrapped
        ``StreamWriter``) directly, so those bytes follow the frames.
        """
        self._flush()

    def _refuse(self) -> None:
        if self._closing:
            raise RuntimeError("cannot send after close(), write_eof() or abort()")
        raise ConnectionResetError("the connection is closed or closing")

    def _connection_closing(self) -> None:
        """The flow's word that the connection is closing or lost."""
        self._refusing = True

    def _flush(self) -> None:
        """Give the pending frames to the transport; never touch a buffer it still holds."""
        self._flush_scheduled = False
        if self._held:
            self._reclaim()
        encoder = self._encoder
        if not len(encoder):
            return
        transport = self._transport
        if transport.is_closing():
            encoder.clear()  # undeliverable; send() reports it
            return
        if len(encoder) < _SMALL_WRITE and transport.get_write_buffer_size():
            transport.write(bytes(encoder.getbuffer()))
        else:
            transport.write(encoder.getbuffer())  # the temporary view dies here unless kept
        try:
            encoder.clear()  # refused while the transport keeps a view of the buffer
        except BufferError:
            # A large buffer is not worth reusing: its memory goes with the
            # transport's view, a smaller one is taken back by _reclaim.
            if encoder.capacity <= _KEPT_CAPACITY:
                self._held.append(encoder)
            self._encoder = (
                self._spares.pop() if self._spares else FrameEncoder(self._max_frame_size)
            )
        else:  # reused at once: not with the memory of a large message
            if encoder.capacity > _KEPT_CAPACITY:
                encoder.shrink()

    def _reclaim(self) -> None:
        """Take back the set-aside encoders that the transport has let go of."""
        still_held = []
        for encoder in self._held:
            try:
                encoder.clear()
            except BufferError:
                still_held.append(encoder)
                continue
            if len(self._spares) < _SPARES:
                encoder.shrink()
                self._spares.append(encoder)
        self._held = still_held

    # --- closing ---

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def write_eof(self) -> None:
        """Flush, then close the write side (half-close); the reader keeps reading.

        Does nothing once the connection is closing: no write side is left.
        """
        self._stop_sending()
        if not self._transport.is_closing():  # uvloop's closed transport would raise
            self._transport.write_eof()

    def is_closing(self) -> bool:
        return self._closing or self._transport.is_closing()

    def close(self) -> None:
        """Flush pending frames and close the transport (it sends what it holds first)."""
        self._stop_sending()
        self._flow.close_transport()

    def _stop_sending(self) -> None:
        """Flush what is pending (once), then refuse further sends."""
        if not self._closing:
            self._flush()
            self._closing = self._refusing = True

    def abort(self) -> None:
        """Close at once, dropping whatever was not sent."""
        self._closing = self._refusing = True
        self._transport.abort()

    async def wait_closed(self) -> None:
        """Wait until the connection is closed (never raises the connection's error)."""
        await self._flow.wait_closed()

    async def __aenter__(self) -> FramedWriter:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()
        await self.wait_closed()


class _StreamFlow:
    """A :class:`FramedWriter` flow over an ``asyncio.StreamWriter``."""

    tells_closing = False  # the stream's protocol is told, not this flow

    def __init__(self, stream: asyncio.StreamWriter) -> None:
        self._stream = stream
        self._transport = stream.transport

    def may_be_paused(self) -> bool:
        return True  # only the stream's protocol knows

    async def wait_if_paused(self) -> None:
        # A StreamWriter pauses above the high-water mark until back at the
        # low-water mark: only then can drain() have to wait.
        transport = self._transport
        if transport.get_write_buffer_size() > transport.get_write_buffer_limits()[0]:
            await self._stream.drain()

    async def wait_writable(self) -> None:
        await self._stream.drain()

    def close_transport(self) -> None:
        self._stream.close()

    async def wait_closed(self) -> None:
        with contextlib.suppress(OSError):  # reported by recv()/drain()
            await self._stream.wait_closed()


class _TransportFlow:
    """A :class:`FramedWriter` flow on :class:`FramedProtocol`, told what the protocol is told.

    The protocol passes on ``pause_writing()``/``resume_writing()`` (to
    :meth:`pause`/:meth:`resume`) and the connection's end; the flow keeps
    the writer's ``_may_wait`` equal to "writing is paused", so that
    ``asend()`` asks it only then.
    """

    tells_closing = True

    def __init__(self, transport: asyncio.Transport, max_frame_size: int) -> None:
        self._transport = transport
        self._loop = asyncio.get_running_loop()
        self._paused = False
        self._drain_waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._lost = False
        self._closed = self._loop.create_future()
        self.writer = FramedWriter(transport, self, max_frame_size=max_frame_size)

    # --- told by the protocol ---

    def pause(self) -> None:
        self._paused = self.writer._may_wait = True

    def resume(self) -> None:
        self._paused = self.writer._may_wait = False
        self._wake_drain_waiters(failed=False)

    def connection_closing(self) -> None:
        """The connection is closing (or lost): the writer refuses sends from now on."""
        self.writer._connection_closing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self.writer._connection_closing()
        self._wake_drain_waiters(failed=exc is not None)
        if not self._closed.done():
            self._closed.set_result(None)

    def _wake_drain_waiters(self, failed: bool) -> None:
        """Let the waiting drains return, or with ``failed`` raise ``ConnectionResetError``."""
        for waiter in self._drain_waiters:
            if not waiter.done():
                if failed:
                    waiter.set_exception(ConnectionResetError("connection lost"))
                else:
                    waiter.set_result(None)

    # --- asked by the writer ---

    def may_be_paused(self) -> bool:
        return self._paused

    async def wait_writable(self) -> None:
        if self._lost:
            raise ConnectionResetError("connection lost")
        if not self._paused:
            return
        waiter = self._loop.create_future()
        self._drain_waiters.append(waiter)
        try:
            await waiter
        finally:
            self._drain_waiters.remove(waiter)

    wait_if_paused = wait_writable  # asked only while paused (the writer's _may_wait)

    def close_transport(self) -> None:
        self._transport.close()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)


# --- the protocol ---------------------------------------------------------------


class FramedProtocol(asyncio.BufferedProtocol):
    """An ``asyncio.BufferedProtocol`` that receives straight into a ``FrameDecoder``.

    ``protocol.reader`` (a :class:`FramedReader`) exists from the start,
    ``protocol.writer`` (a :class:`FramedWriter`) from ``connection_made``.
    ``client_connected_cb(reader, writer)`` (a function or coroutine
    function) is started on connection, as by ``asyncio.start_server``. A
    coroutine owns its connection: when it returns or is cancelled, the
    connection is closed after the frames it sent; if it raises, the error
    goes to the loop's exception handler and the connection is closed. A
    plain function's return closes nothing: whatever it handed the reader
    and writer to closes them; if it raises, it is handled as a coroutine
    that raised.

    Options (also accepted by :func:`open_connection` and friends):

    * ``message_type``: google.protobuf message class, struct class, or a
      :class:`codec.Decoder` (a struct class with its decode options), or
      ``None`` for raw frames (``bytes``; ``memoryview`` with ``zero_copy``);
    * ``max_frame_size`` (4 MiB) and ``strict`` (varint profile), as for
      :class:`~codec.framing.FrameDecoder`; also the encoder's limit;
    * ``read_high_water`` (256 KiB) / ``read_low_water`` (a quarter of it):
      unread bytes at which reading pauses / resumes;
    * ``write_high_water`` / ``write_low_water``: the transport's write
      buffer limits (asyncio's default: 64 KiB / 16 KiB);
    * ``frame_timeout``: seconds within which a frame that has started
      arriving must be complete, else :class:`FrameTimeoutError` and the
      connection is closed (``None``: no limit).
    """

    def __init__(
        self,
        *,
        message_type: Any = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        strict: bool = False,
        zero_copy: bool = False,
        read_high_water: int = DEFAULT_READ_HIGH_WATER,
        read_low_water: int | None = None,
        write_high_water: int | None = None,
        write_low_water: int | None = None,
        frame_timeout: float | None = None,
        client_connected_cb: Callable[[FramedReader[Any], FramedWriter], Any] | None = None,
    ) -> None:
        if read_low_water is None:
            read_low_water = read_high_water // 4
        if not 0 <= read_low_water <= read_high_water:
            raise ValueError(
                f"need 0 <= read_low_water ({read_low_water}) <= "
                f"read_high_water ({read_high_water})"
            )
        if frame_timeout is not None and not frame_timeout > 0:
            raise ValueError(f"frame_timeout must be positive, got {frame_timeout}")
        _check_write_limits(write_high_water, write_low_water)
        decoder = _frame_decoder(max_frame_size, strict, message_type, zero_copy)
        self._source = _TransportSource(
            decoder, read_high_water, read_low_water, frame_timeout, self._close_connection
        )
        self.reader: FramedReader[Any] = self._source.reader
        self._flow: _TransportFlow | None = None  # and the writer, from connection_made
        self._max_frame_size = max_frame_size
        self._write_limits = (write_high_water, write_low_water)
        self._client_connected_cb = client_connected_cb
        self._transport: asyncio.Transport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Future[Any] | None = None

    @property
    def writer(self) -> FramedWriter:
        if self._flow is None:
            raise RuntimeError("not connected yet")
        return self._flow.writer

    # --- asyncio callbacks: reading goes to the reader's source, writing to the writer's flow ---

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport = cast(asyncio.Transport, transport)
        self._loop = loop = asyncio.get_running_loop()
        self._source.connection_made(transport, loop)
        high, low = self._write_limits
        if high is not None or low is not None:
            transport.set_write_buffer_limits(high, low)
        self._flow = flow = _TransportFlow(transport, self._max_frame_size)
        callback = self._client_connected_cb
        if callback is None:
            return
        try:
            result = callback(self.reader, flow.writer)
        except Exception as exc:
            # Raised inside connection_made, the error would reach the loop's
            # handler with the connection left open for good: nothing else
            # owns it. It is reported as a coroutine's error is, and closed.
            self._handler_failed(exc)
            return
        except BaseException:
            self._close_connection()
            raise
        if asyncio.iscoroutine(result):
            self._task = loop.create_task(result)
            self._task.add_done_callback(self._callback_done)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._source.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        self._source.buffer_updated(nbytes)

    def eof_received(self) -> bool:
        self._source.end(None)
        # Keep the transport open for writing (half-close), as StreamReaderProtocol
        # does, unless the stream was cut inside a frame or runs over TLS.
        assert self._transport is not None
        if self._source.clean_end and self._transport.get_extra_info("sslcontext") is None:
            return True
        if self._flow is not None:
            self._flow.connection_closing()  # the transport closes itself
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._source.end(exc)
        if self._flow is not None:
            self._flow.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._flow is not None:
            self._flow.pause()

    def resume_writing(self) -> None:
        if self._flow is not None:
            self._flow.resume()

    # --- the handler ---

    def _callback_done(self, task: asyncio.Future[Any]) -> None:
        # The connection belongs to the coroutine: once the coroutine has
        # finished, the connection is closed, whatever the outcome.
        # Left open, it would stay open for good (after a clean end of stream
        # the transport is kept half-open for this writer), and so would
        # Server.wait_closed(), which waits for every connection (CPython 3.12.1+).
        self._task = None
        exc = None if task.cancelled() else task.exception()
        if exc is None:
            if self._flow is not None:
                self._flow.writer.close()  # after the frames it sent
            return
        self._handler_failed(exc)

    def _handler_failed(self, exc: BaseException) -> None:
        """The handler raised: report it to the loop's exception handler, close the connection."""
        if self._loop is not None:
            self._loop.call_exception_handler(
                {
                    "message": "Unhandled exception in client_connected_cb",
                    "exception": exc,
                    "transport": self._transport,
                    "protocol": self,
                }
            )
        self._close_connection()

    def _close_connection(self) -> None:
        """Close the transport (it still sends what it holds); later sends are refused."""
        if self._flow is not None:
            self._flow.connection_closing()
        if self._transport is not None:
            self._transport.close()


# --- helpers ------------------------------------------------------------------


def _check_write_limits(high: int | None, low: int | None) -> None:
    """Refuse write water marks as a transport's ``set_write_buffer_limits`` would.

    Checked when a protocol is made: a transport refuses them only in
    ``connection_made``, where the error would leave the connection open.
    """
    if high is None and low is None:
        return
    if high is None:
        high = 4 * cast(int, low)
    if low is None:
        low = high // 4
    if not high >= low >= 0:
        raise ValueError(f"need 0 <= write_low_water ({low}) <= write_high_water ({high})")


# The keyword arguments of the helpers that go to FramedProtocol: its
# parameters but the two that the helpers name; the rest go to
# loop.create_connection / create_server.
_PROTOCOL_OPTIONS = frozenset(inspect.signature(FramedProtocol).parameters) - {
    "message_type",
    "client_connected_cb",
}


def _protocol_factory(
    message_type: Any, kwds: dict[str, Any], handler: Handler[Any] | None = None
) -> tuple[Callable[[], FramedProtocol], dict[str, Any]]:
    """A helper's protocol factory, with FramedProtocol's options of ``kwds``, and the rest."""
    options = {name: kwds.pop(name) for name in list(kwds) if name in _PROTOCOL_OPTIONS}
    factory = functools.partial(
        FramedProtocol, message_type=message_type, client_connected_cb=handler, **options
    )
    return factory, kwds


@overload
async def open_connection(
    host: str | None = None,
    port: int | str | None = None,
    *,
    message_type: type[M] | Decoder[M],
    **kwds: Any,
) -> tuple[FramedReader[M], FramedWriter]: ...
@overload
async def open_connection(
    host: str | None = None,
    port: int | str | None = None,
    *,
    message_type: None = None,
    **kwds: Any,
) -> tuple[FramedReader[Any], FramedWriter]: ...
async def open_connection(
    host: str | None = None,
    port: int | str | None = None,
    *,
    message_type: Any = None,
    **kwds: Any,
) -> tuple[FramedReader[Any], FramedWriter]:
    """Connect over TCP; return ``(reader, writer)``.

    Keyword arguments are :class:`FramedProtocol`'s options; the rest
    (``ssl``, ``local_addr``, ...) go to ``loop.create_connection``.
    """
    factory, loop_kwds = _protocol_factory(message_type, kwds)
    loop = asyncio.get_running_loop()
    # host and port may be None with sock=...; typeshed's overloads say otherwise.
    _, protocol = await loop.create_connection(
        factory,
        host,  # type: ignore[arg-type]
        port,  # type: ignore[arg-type]
        **loop_kwds,
    )
    return protocol.reader, protocol.writer


@overload
async def open_unix_connection(
    path: str | None = None, *, message_type: type[M] | Decoder[M], **kwds: Any
) -> tuple[FramedReader[M], FramedWriter]: ...
@overload
async def open_unix_connection(
    path: str | None = None, *, message_type: None = None, **kwds: Any
) -> tuple[FramedReader[Any], FramedWriter]: ...
async def open_unix_connection(
    path: str | None = None, *, message_type: Any = None, **kwds: Any
) -> tuple[FramedReader[Any], FramedWriter]:
    """Connect to a Unix socket; like :func:`open_connection`."""
    factory, loop_kwds = _protocol_factory(message_type, kwds)
    loop = asyncio.get_running_loop()
    _, protocol = await loop.create_unix_connection(factory, path, **loop_kwds)
    return protocol.reader, protocol.writer


Handler = Callable[[FramedReader[M], FramedWriter], Awaitable[None] | None]


@overload
async def start_server(
    handler: Handler[M],
    host: str | None = None,
    port: int | str | None = None,
    *,
    message_type: type[M] | Decoder[M],
    **kwds: Any,
) -> asyncio.Server: ...
@overload
async def start_server(
    handler: Handler[Any],
    host: str | None = None,
    port: int | str | None = None,
    *,
    message_type: None = None,
    **kwds: Any,
) -> asyncio.Server: ...
async def start_server(
    handler: Handler[Any],
    host: str | None = None,
    port: int | str | None = None,
    *,
    message_type: Any = None,
    **kwds: Any,
) -> asyncio.Server:
    """Serve TCP: ``handler(reader, writer)`` runs for each connection, as with asyncio.

    When a coroutine handler returns, its connection is closed after the
    frames it sent (see :class:`FramedProtocol`). Keyword arguments are
    :class:`FramedProtocol`'s options; the rest (``ssl``, ``backlog``,
    ``reuse_port``, ...) go to ``loop.create_server``.
    """
    factory, loop_kwds = _protocol_factory(message_type, kwds, handler)
    loop = asyncio.get_running_loop()
    return await loop.create_server(
        factory,
        host,
        port,  # type: ignore[arg-type]  # a service name is accepted too
        **loop_kwds,
    )


@overload
async def start_unix_server(
    handler: Handler[M], path: str | None = None, *, message_type: type[M] | Decoder[M], **kwds: Any
) -> asyncio.Server: ...
@overload
async def start_unix_server(
    handler: Handler[Any],
    path: str | None = None,
    *,
    message_type: None = None,
    **kwds: Any,
) -> asyncio.Server: ...
async def start_unix_server(
    handler: Handler[Any], path: str | None = None, *, message_type: Any = None, **kwds: Any
) -> asyncio.Server:
    """Serve a Unix socket; like :func:`start_server`."""
    factory, loop_kwds = _protocol_factory(message_type, kwds, handler)
    loop = asyncio.get_running_loop()
    return await loop.create_unix_server(factory, path, **loop_kwds)
