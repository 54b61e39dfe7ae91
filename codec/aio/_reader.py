"""Receiving: :class:`FramedReader`, and the sources that fill its decoder.

Strategy: a reader owns a :class:`~codec.framing.FrameDecoder` and takes
complete frames out of its receive window; nothing is split or queued in
this layer. A frame stays in the window until :meth:`FramedReader.recv`
takes it with ``next_frame()`` (parsed, or as ``bytes``, or as a zero-copy
``memoryview``). What puts bytes in the window is the reader's source
(:class:`_Source`), which also pauses reading, times incomplete frames and
keeps how the stream ended. Then:

1. A frame is only taken out synchronously, after the last ``await``, so
   cancelling a pending ``recv()`` can never lose one.
2. A frame already buffered needs no wait, so ``recv()`` and ``async for``
   yield to the loop after each millisecond of frames (``TURN_SECONDS``),
   before taking one: a burst of frames from one peer cannot keep the
   other connections of the loop waiting.
3. On :class:`~codec.aio.FramedProtocol` (:class:`_TransportSource`), the
   transport's ``get_buffer``/``buffer_updated`` are the decoder's, so the
   kernel writes straight into the window. The window is also the
   backpressure queue: once ``read_high_water`` bytes are buffered and the
   next frame is complete, the transport stops reading; it resumes when the
   application has consumed down to ``read_low_water``, or as soon as the
   next frame is incomplete (so a frame larger than the high-water mark can
   always finish). A connection therefore holds at most about
   ``max(read_high_water, max_frame_size)`` plus one 64 KiB read of unread
   bytes, whatever the peer sends.
4. Over an ``asyncio.StreamReader`` (:class:`_StreamSource`), bytes are
   copied once from the stream into the decoder (no zero-copy receive
   there), and flow control is the stream's own (its ``limit``).
5. The window holding those bytes may be up to twice their size (it grows
   geometrically); whenever the reader waits for bytes,
   ``FrameDecoder.shrink()`` cuts it back to room for the unread bytes and
   one 64 KiB read if it is more than four times that, so an idle
   connection keeps no window sized for its largest frame.
6. A bad prefix (oversized or malformed) is refused by the decoder as soon
   as it arrives: the connection is closed and ``recv()`` hands out the
   frames before the fault, then raises the decoder's error. A payload that
   ``message_type`` cannot parse does the same.
7. The end of the stream goes to ``FrameDecoder.feed_eof()``: at a frame
   boundary ``recv()`` raises :class:`EOFError` (``async for`` stops);
   inside a frame it raises :class:`~codec.errors.TruncatedError`. An
   optional ``frame_timeout`` closes a connection whose frame stays
   incomplete for too long (slow loris), using the decoder's
   ``frame_in_progress``.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from codec._wire import checked_flag
from codec.errors import DecodeError, FrameTimeoutError
from codec.framing import DEFAULT_MAX_FRAME_SIZE, FrameDecoder

if TYPE_CHECKING:
    from codec._generic import Decoder

M = TypeVar("M")

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

        Returned for the caller to raise: raised here, a kept error would
        carry one traceback entry more on later calls than on the first.
        """
        if self._error is not None:  # raised again as it was kept, not with every call's traceback
            return self._error.with_traceback(self._error_tb)
        if self._ended:
            return EOFError("end of stream")
        return None


# --- the reader ------------------------------------------------------------------


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
    the decoder's: one more Python call would cost a small message 2 to 7 %
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


# --- its sources -----------------------------------------------------------------


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
            self._time_frame()
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
        if self._frame_timeout is not None:  # else no call: this runs per frame while paused
            self._time_frame()

    def abort_reading(self) -> None:
        self._ended = True
        self._close_connection()
        self.end(None)

    # --- the reader woken, reading paused, frames timed ---

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

    def _time_frame(self) -> None:
        """Start the frame timer if a frame has started arriving and none runs."""
        if (
            self._frame_timeout is not None
            and self._timer is None
            and not self._ended
            and self._decoder.frame_in_progress
        ):
            assert self._loop is not None
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
