"""Sending: :class:`FramedWriter`, and the flows that pace and close it.

Strategy: :meth:`FramedWriter.send` encodes into a
:class:`~codec.framing.FrameEncoder` and schedules one flush with
``loop.call_soon``, so every message sent in the same loop iteration goes to
the transport in one ``write()`` (earlier once 64 KiB are pending, or the
transport's high-water mark if lower). Then:

1. The flush hands the transport a zero-copy view of the encoder's buffer.
   A transport may keep that view instead of copying it (CPython 3.12+
   queues ``memoryview``\\ s on a partial send, uvloop pins the buffer until
   libuv has written it), so after the write the writer tries
   ``FrameEncoder.clear()``, which refuses while any view is alive: if it
   succeeds, nothing holds the buffer and it is reused at once (the common
   case: the kernel took everything); if it raises ``BufferError`` the
   encoder is set aside, untouched, and a spare one takes its place until
   the transport lets go. The export count is the proof, not a guess from
   ``get_write_buffer_size()``.
2. When the transport is already backed up and less than 4 KiB is pending,
   the writer hands it a ``bytes`` copy instead, so a trickle of small sends
   cannot pin one 4 KiB+ buffer per write.
3. An encoder that grew past 128 KiB (a large message) is shrunk once
   flushed, or left to the transport's view if that holds it, so an idle
   connection keeps no buffer sized for its largest message.
4. When to wait and how to close are the writer's flow's (:class:`_Flow`):
   :meth:`FramedWriter.drain` and :meth:`FramedWriter.asend` honour the
   transport's write high-water mark as ``StreamWriter.drain()`` does. On
   :class:`~codec.aio.FramedProtocol` (:class:`_TransportFlow`) the
   protocol's ``pause_writing()``/``resume_writing()`` say when; over an
   ``asyncio.StreamWriter`` (:class:`_StreamFlow`), the stream's own
   ``drain()``, ``close()`` and ``wait_closed()`` do.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from typing import Any, Protocol

from codec.framing import DEFAULT_MAX_FRAME_SIZE, FrameEncoder

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


# --- the writer ------------------------------------------------------------------


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


# --- its flows -------------------------------------------------------------------


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
