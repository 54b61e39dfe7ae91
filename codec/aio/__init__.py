"""asyncio: framed message streams over TCP and Unix sockets, received without copying.

:func:`open_connection` and :func:`start_server` (and
:func:`open_unix_connection`, :func:`start_unix_server`) connect a
:class:`FramedReader` and a :class:`FramedWriter` through a
:class:`FramedProtocol`, which receives straight into the reader's decoder;
:meth:`FramedReader.from_stream` and :meth:`FramedWriter.from_stream` run the
same reader and writer over an existing ``asyncio.StreamReader`` /
``StreamWriter``.

Strategy: one module per role, each with its own strategy at its top.

1. Receiving (``_reader``): a :class:`FramedReader` takes complete frames out
   of a :class:`~codec.framing.FrameDecoder`'s window. What fills the
   window is the reader's source, which also pauses reading, times
   incomplete frames and keeps how the stream ended: the protocol's
   transport (zero-copy), or a ``StreamReader`` (bytes copied in).
2. Sending (``_writer``): a :class:`FramedWriter` encodes into a
   :class:`~codec.framing.FrameEncoder` and hands the transport one view of
   it per loop iteration. When to wait and how to close are its flow's: the
   protocol's write pauses and the connection's loss, or a
   ``StreamWriter``'s.
3. The protocol (``_protocol``): a :class:`FramedProtocol` passes asyncio's
   callbacks on (received bytes and the end of the stream to the reader's
   source, write pauses and the connection's loss to the writer's flow) and
   runs the handler that owns the connection.
4. The helpers (``_connect``) make a protocol for each connection.
"""

from codec.aio._connect import Handler as Handler
from codec.aio._connect import (
    open_connection,
    open_unix_connection,
    start_server,
    start_unix_server,
)
from codec.aio._protocol import DEFAULT_READ_HIGH_WATER, FramedProtocol
from codec.aio._reader import TURN_SECONDS, FramedReader
from codec.aio._writer import FramedWriter
from codec.errors import FrameTimeoutError

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
