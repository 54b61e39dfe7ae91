"""The protocol: :class:`FramedProtocol`, asyncio's callbacks passed on to a reader and a writer.

Strategy: the protocol keeps no reading or writing state of its own. It
makes the reader's source (with the reader) when it is made, and the
writer's flow (with the writer) in ``connection_made``; then:

1. ``get_buffer``/``buffer_updated`` and the end of the stream
   (``eof_received``, ``connection_lost``) go to the source; write pauses
   (``pause_writing``/``resume_writing``) and the connection's loss go to
   the flow.
2. After a clean end of stream the transport is kept open for writing
   (half-close), as ``StreamReaderProtocol`` does, unless the stream was cut
   inside a frame or runs over TLS.
3. Whatever closes the connection (a poisoned decoder, a frame timeout, the
   handler's error) closes it one way, :meth:`FramedProtocol._close_connection`:
   the writer refuses sends at once, and the transport sends what it holds
   before it closes.
4. ``client_connected_cb`` runs on connection; a coroutine owns its
   connection, which is closed when it returns, is cancelled or raises (the
   error goes to the loop's exception handler).
5. Options are checked when the protocol is made, before any connection
   exists: refused in ``connection_made``, they would leave it open.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

from codec.aio._reader import FramedReader, _frame_decoder, _TransportSource
from codec.aio._writer import FramedWriter, _TransportFlow
from codec.framing import DEFAULT_MAX_FRAME_SIZE

# Unread bytes at which a connection stops reading: 2x asyncio's StreamReader
# (which pauses at 2 x its 64 KiB limit), so four 64 KiB reads fit.
DEFAULT_READ_HIGH_WATER = 256 * 1024


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
