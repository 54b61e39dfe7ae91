"""The viewing end of a profile server's connection: its sessions and frames, as they arrive.

Strategy: :func:`connect_viewer` opens a :mod:`codec.aio` connection with
zero-copy reads, its frame size limit the receiver's. :class:`ViewerClient`
takes each packet from the :class:`~codec.aio.FramedReader` as a view of the
receive window and hands it to :meth:`Receiver.read_packet
<codec.profiler.receiver.Receiver.read_packet>`, which keeps the registry and
the session; ``async for`` yields the sessions and frames, and
:meth:`ViewerClient.next_packet` gives the packet's bytes with them, for a
reader that keeps them (:func:`~codec.profiler.capture.record`). The
receiver may outlive a connection, so a viewer that reconnects keeps its
registry until the producer's session changes.
"""

from __future__ import annotations

from typing import Any

from codec import aio
from codec.profiler.model import Frame
from codec.profiler.packets import Session
from codec.profiler.receiver import Receiver

__all__ = ["ViewerClient", "connect_viewer"]


class ViewerClient:
    """A viewer's connection to a profile server: ``async for`` yields its sessions and frames.

    :attr:`receiver` holds the registry and session; pass the same receiver
    to a later :func:`connect_viewer` to keep them across connections (a
    restarted producer's new session id resets them).
    """

    def __init__(
        self, reader: aio.FramedReader[Any], writer: aio.FramedWriter, receiver: Receiver
    ) -> None:
        self.receiver = receiver
        self.bytes_received = 0  # packets and their length prefixes, as received
        self._reader = reader
        self._consumed = reader.consumed  # the stream offset of the next packet
        self._writer = writer

    async def next_packet(self) -> tuple[memoryview, Session | Frame | None]:
        """The next packet's payload and what :attr:`receiver` made of it.

        The payload is a view of the receive window, valid until the next
        call. Cancel-safe: a packet is taken and applied only once it has
        arrived. Raises :class:`EOFError` at the end of the stream and
        :class:`~codec.errors.DecodeError` for a bad stream.
        """
        reader = self._reader
        payload: memoryview = await reader.recv()
        # What the packet took on the wire, its prefix as sent (a server may pad it):
        # the offsets of the receiver's errors count it.
        consumed = reader.consumed
        size = consumed - self._consumed
        self._consumed = consumed
        self.bytes_received += size
        return payload, self.receiver.read_packet(payload, size)

    def __aiter__(self) -> ViewerClient:
        return self

    async def __anext__(self) -> Session | Frame:
        while True:
            try:
                _, item = await self.next_packet()
            except EOFError:
                raise StopAsyncIteration from None
            if item is not None:
                return item

    async def close(self) -> None:
        self._writer.close()
        await self._writer.wait_closed()

    async def __aenter__(self) -> ViewerClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def connect_viewer(
    host: str, port: int, *, receiver: Receiver | None = None, **options: Any
) -> ViewerClient:
    """Connect to the :class:`~codec.profiler.server.ProfileServer` at ``host:port`` as a viewer.

    ``receiver`` (a new one by default) reads the packets; ``options`` go to
    :func:`codec.aio.open_connection` (the frame size limit is the receiver's).
    """
    if receiver is None:
        receiver = Receiver()
    reader, writer = await aio.open_connection(
        host, port, zero_copy=True, max_frame_size=receiver.decoder.max_frame_size, **options
    )
    return ViewerClient(reader, writer, receiver)
