"""Profiler transport: one encoded stream fanned out to viewers over asyncio, and to files.

Strategy, serving: :class:`ProfileServer` is a profiler sink. ``send()`` runs
on the thread that ends a frame; it copies the frame's packets into two
``bytes`` (the new registry entries, if any, and the frame) and hands them to
the event loop with ``call_soon_threadsafe`` (``call_soon`` on the loop's own
thread, which keeps the two in order). On the loop, the same two objects are
queued for every viewer: the work and the objects per frame do not depend on
the number of viewers, because the profiler encoded the frame once.

Each viewer has a :class:`ViewerQueue` (sans-IO) and a task that writes
whatever is queued to its transport, then awaits ``drain()`` (the
transport's backpressure); meanwhile packets queue up. Registry packets are
always queued: a viewer can never miss a definition, so every frame it does
get resolves (puffin loses the definitions that ride on a dropped frame).
A frame is dropped, and counted, once ``max_queued_frames`` frames are
already waiting; the next frame that viewer does get is preceded by a stats
packet with its total of dropped frames. A frame packet is only ever sent
whole, so dropping one never breaks the stream.

A viewer that connects gets :meth:`Profiler.keyframe` first: a header flagged
``SEQ_STATE_CLEARED`` and the full registry, queued for it alone; the
viewers already connected receive nothing extra. A definition may then
arrive twice (in the keyframe and in the next registry packet), which a
:class:`~codec.profiler.stream.Receiver` accepts as an identical repeat.
Viewers send nothing; the end of what a viewer sends is taken as its
disconnection, and it is removed. A restarted producer has a new session
id, which makes a receiver start a new registry, so ids reused for other
scopes are never mislabelled.

Strategy, files: :class:`FileSink` writes the same stream to a file
straight from the profiler's buffer (no copy): a keyframe first, then every
packet, and a fresh keyframe after every ``keyframe_every`` frames, so
:func:`~codec.profiler.stream.read_capture` reads a file cut anywhere from
its next keyframe. :func:`record` does the same on the viewer side: it
reads a server's packets with a :class:`Receiver` (which keeps the registry
and the session), writes each packet's bytes as received, and inserts
keyframes built from the receiver's registry.

Strategy, viewing: :class:`ViewerClient` reads with :mod:`codec.aio`'s
zero-copy :class:`~codec.aio.FramedReader` and hands each packet to
:meth:`Receiver.read_packet`; it yields the sessions and frames.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, TypeAlias

from codec import aio, varint
from codec.errors import TruncatedError
from codec.framing import FrameEncoder
from codec.profiler.model import Frame
from codec.profiler.packets import PacketWriter, Session
from codec.profiler.receiver import Receiver
from codec.profiler.recording import Profiler

__all__ = [
    "DEFAULT_KEYFRAME_EVERY",
    "DEFAULT_MAX_QUEUED_FRAMES",
    "FileSink",
    "ProfileServer",
    "RecordStats",
    "ViewerClient",
    "ViewerQueue",
    "ViewerStats",
    "connect_viewer",
    "record",
]

# Frames a viewer may have waiting before new ones are dropped (puffin_http's MAX_FRAMES_IN_QUEUE).
DEFAULT_MAX_QUEUED_FRAMES = 30
# Frames between two keyframes of a recorded file (5 s at 60 frames a second).
DEFAULT_KEYFRAME_EVERY = 300

File: TypeAlias = str | os.PathLike[str] | BinaryIO


def _check_positive(name: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")


@dataclass
class ViewerStats:
    """What a server has done for one viewer."""

    peer: Any = None  # the socket's peer address
    bytes_sent: int = 0  # handed to the transport
    frames_sent: int = 0
    frames_dropped: int = 0


class ViewerQueue:
    """One viewer's packets waiting to be written: registry packets always, frames up to a bound.

    Sans-IO: :class:`ProfileServer` puts the shared packets in and a writer
    task takes them out. ``writer`` encodes the stats packets.
    """

    def __init__(self, writer: PacketWriter, max_queued_frames: int, peer: Any = None) -> None:
        _check_positive("max_queued_frames", max_queued_frames)
        self.max_queued_frames = max_queued_frames
        self.stats = ViewerStats(peer)
        self._writer = writer
        self._packets: collections.deque[bytes] = collections.deque()
        self._frames = 0  # frame packets among _packets
        self._reported = 0  # dropped frames the viewer has been told of

    def put_registry(self, packets: bytes) -> None:
        """Queue registry packets (or a keyframe): never dropped."""
        self._packets.append(packets)

    def put_frame(self, packet: bytes) -> bool:
        """Queue a frame packet, after a stats packet if frames were dropped; False if dropped."""
        stats = self.stats
        if self._frames >= self.max_queued_frames:
            stats.frames_dropped += 1
            return False
        if self._reported != stats.frames_dropped:
            self._reported = stats.frames_dropped
            out = FrameEncoder()
            self._writer.stats(out, stats.frames_dropped, self.max_queued_frames)
            self._packets.append(bytes(out.getbuffer()))
        self._packets.append(packet)
        self._frames += 1
        return True

    def take(self) -> list[bytes]:
        """Every queued packet, in order, counted as sent."""
        packets = list(self._packets)
        self._packets.clear()
        stats = self.stats
        stats.frames_sent += self._frames
        stats.bytes_sent += sum(map(len, packets))
        self._frames = 0
        return packets


@dataclass(eq=False)
class _Viewer:
    queue: ViewerQueue
    writer: aio.FramedWriter
    task: asyncio.Task[Any]
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # packets were queued
    gone: bool = False  # the viewer disconnected


class ProfileServer:
    """A profiler sink that serves its stream to any number of viewers over TCP.

    Start it on an event loop with :meth:`start`; :meth:`send` may then be
    called from any thread. :attr:`viewers` holds the statistics of the
    connected viewers.
    """

    def __init__(
        self, profiler: Profiler, *, max_queued_frames: int = DEFAULT_MAX_QUEUED_FRAMES
    ) -> None:
        _check_positive("max_queued_frames", max_queued_frames)
        self.profiler = profiler
        self.max_queued_frames = max_queued_frames
        self._writer = PacketWriter(profiler.session)  # for stats packets
        self._viewers: list[_Viewer] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._server: asyncio.Server | None = None
        self._closed = False

    @classmethod
    async def start(
        cls,
        profiler: Profiler,
        host: str | None = "127.0.0.1",
        port: int = 0,
        *,
        max_queued_frames: int = DEFAULT_MAX_QUEUED_FRAMES,
        **server_options: Any,
    ) -> ProfileServer:
        """A server listening on ``host:port`` (0: any free port), attached to ``profiler``.

        ``server_options`` go to :func:`codec.aio.start_server`.
        """
        server = cls(profiler, max_queued_frames=max_queued_frames)
        await server.listen(host, port, **server_options)
        return server

    async def listen(self, host: str | None, port: int, **server_options: Any) -> None:
        """Attach to the profiler and accept viewers on ``host:port``."""
        if self._loop is not None:
            raise RuntimeError("the server is already listening")
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.profiler.add_sink(self)  # before any viewer: the first keyframe then covers all
        try:
            self._server = await aio.start_server(self._serve, host, port, **server_options)
        except BaseException:
            self.profiler.remove_sink(self)
            raise

    @property
    def port(self) -> int:
        """The port the server listens on."""
        if self._server is None:
            raise RuntimeError("the server is not listening")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def viewers(self) -> tuple[ViewerStats, ...]:
        """The statistics of the connected viewers, live."""
        return tuple(viewer.queue.stats for viewer in self._viewers)

    def send(self, registry: memoryview, frame: memoryview) -> None:
        """The profiler's sink method: copy the packets once, queue them on the loop."""
        loop = self._loop
        if loop is None or self._closed:
            return
        registry_packets = bytes(registry) if len(registry) else None
        frame_packet = bytes(frame)
        if threading.get_ident() == self._loop_thread:
            loop.call_soon(self._dispatch, registry_packets, frame_packet)
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody to send to
            loop.call_soon_threadsafe(self._dispatch, registry_packets, frame_packet)

    def _dispatch(self, registry: bytes | None, frame: bytes) -> None:
        for viewer in self._viewers:
            queue = viewer.queue
            if registry is not None:
                queue.put_registry(registry)
            if queue.put_frame(frame) or registry is not None:
                viewer.ready.set()

    async def _serve(self, reader: aio.FramedReader[Any], writer: aio.FramedWriter) -> None:
        """One viewer: its keyframe, then whatever is queued for it, until it goes."""
        task = asyncio.current_task()
        if self._closed or task is None:
            writer.close()
            return
        queue = ViewerQueue(self._writer, self.max_queued_frames, writer.get_extra_info("peername"))
        viewer = _Viewer(queue, writer, task)
        queue.put_registry(self.profiler.keyframe())
        self._viewers.append(viewer)
        watcher = asyncio.create_task(_watch(reader, viewer))
        try:
            await _pump(viewer)
        except ConnectionError:
            viewer.gone = True
        finally:
            self._viewers.remove(viewer)
            watcher.cancel()
            if not viewer.gone and not writer.is_closing():
                writer.transport.writelines(queue.take())  # sent before the transport closes
            writer.close()

    async def close(self) -> None:
        """Detach from the profiler, stop listening, and close every viewer's connection.

        Every frame ended before the call is handed to the viewers' transports,
        which close once they have sent it (a viewer that stopped reading is
        not waited for).
        """
        if self._closed:
            return
        self._closed = True
        self.profiler.remove_sink(self)
        await asyncio.sleep(0)  # run the dispatches already scheduled
        if self._server is not None:
            self._server.close()
        tasks = [viewer.task for viewer in self._viewers]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def __aenter__(self) -> ProfileServer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def _pump(viewer: _Viewer) -> None:
    """Write a viewer's queue to its transport, waiting for the transport to drain."""
    writer = viewer.writer
    while not viewer.gone and not writer.is_closing():
        viewer.ready.clear()
        packets = viewer.queue.take()
        if packets:
            writer.transport.writelines(packets)
            await writer.drain()
        else:
            await viewer.ready.wait()


async def _watch(reader: aio.FramedReader[Any], viewer: _Viewer) -> None:
    """Wait for the end of what a viewer sends (nothing, in this version): it is gone."""
    with contextlib.suppress(Exception):
        async for _ in reader:
            pass
    viewer.gone = True
    viewer.ready.set()


# --- files -------------------------------------------------------------------------------


@contextlib.contextmanager
def _opened(file: File) -> Iterator[BinaryIO]:
    """A binary file to write: opened (and closed) here for a path, else as given."""
    if isinstance(file, str | os.PathLike):
        with open(file, "wb") as opened:
            yield opened
    else:
        yield file


class FileSink:
    """A profiler sink that records the stream to a file, with a keyframe every N frames.

    ``file`` is a path (opened here, closed by :meth:`close`) or a binary
    file (flushed by :meth:`close`, left open). The sink attaches itself to
    ``profiler``; :meth:`close` detaches it.
    """

    def __init__(
        self, file: File, profiler: Profiler, *, keyframe_every: int = DEFAULT_KEYFRAME_EVERY
    ) -> None:
        _check_positive("keyframe_every", keyframe_every)
        self.profiler = profiler
        self.keyframe_every = keyframe_every
        self.frames = 0
        self.keyframes = 0
        self.bytes_written = 0
        self._since_keyframe = 0
        self._lock = threading.Lock()
        self._files = contextlib.ExitStack()
        self._file = self._files.enter_context(_opened(file))
        self._started = False  # the first keyframe is written
        self._closed = False
        # Attached first, then the keyframe: definitions sent to the sinks
        # before it are all in it, and those sent after follow it.
        profiler.add_sink(self)
        with self._lock:
            self._keyframe()
            self._started = True

    def _write(self, data: Any) -> None:
        self.bytes_written += self._file.write(data) or 0

    def _keyframe(self) -> None:
        self._write(self.profiler.keyframe())
        self.keyframes += 1
        self._since_keyframe = 0

    def send(self, registry: memoryview, frame: memoryview) -> None:
        """The profiler's sink method: write the packets as they are."""
        with self._lock:
            if not self._started:
                return  # a frame ended while the first keyframe was being taken
            if len(registry):
                self._write(registry)
            self._write(frame)
            self.frames += 1
            self._since_keyframe += 1
            if self._since_keyframe == self.keyframe_every:
                self._keyframe()

    def close(self) -> None:
        """Detach from the profiler; close the file if it was opened here, else flush it."""
        # Not under our lock: send() takes it under the profiler's lock.
        with contextlib.suppress(ValueError):  # already detached
            self.profiler.remove_sink(self)
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._file.flush()
            self._files.close()

    def __enter__(self) -> FileSink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# --- viewers -----------------------------------------------------------------------------


class ViewerClient:
    """A connection to a :class:`ProfileServer`: ``async for`` yields its sessions and frames.

    :attr:`receiver` holds the registry and session; pass the same receiver
    to a later :func:`connect_viewer` to keep them across connections (a
    restarted producer's new session id resets them).
    """

    def __init__(
        self, reader: aio.FramedReader[Any], writer: aio.FramedWriter, receiver: Receiver
    ) -> None:
        self.receiver = receiver
        self.bytes_received = 0  # packets and their length prefixes
        self._reader = reader
        self._writer = writer

    async def next_packet(self) -> tuple[memoryview, Session | Frame | None]:
        """The next packet's payload and what :attr:`receiver` made of it.

        The payload is a view of the receive window, valid until the next
        call. Cancel-safe: a packet is taken and applied only once it has
        arrived. Raises :class:`EOFError` at the end of the stream and
        :class:`~codec.errors.DecodeError` for a bad stream.
        """
        payload: memoryview = await self._reader.recv()
        size = len(payload)
        self.bytes_received += varint.size(size) + size
        return payload, self.receiver.read_packet(payload)

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
    """Connect to a :class:`ProfileServer` as a viewer.

    ``receiver`` (a new one by default) reads the packets; ``options`` go to
    :func:`codec.aio.open_connection` (the frame size limit is the receiver's).
    """
    if receiver is None:
        receiver = Receiver()
    reader, writer = await aio.open_connection(
        host, port, zero_copy=True, max_frame_size=receiver.decoder.max_frame_size, **options
    )
    return ViewerClient(reader, writer, receiver)


@dataclass
class RecordStats:
    """What :func:`record` wrote."""

    frames: int = 0
    keyframes: int = 0  # the server's and the inserted ones
    bytes_written: int = 0
    frames_dropped: int = 0  # by the server, for this recorder


async def record(
    host: str,
    port: int,
    file: File,
    *,
    keyframe_every: int = DEFAULT_KEYFRAME_EVERY,
    duration: float | None = None,
    frames: int | None = None,
) -> RecordStats:
    """Record the stream of the :class:`ProfileServer` at ``host:port`` to ``file``.

    Connects as a viewer and writes every packet as received, plus a
    keyframe (header and full registry) after every ``keyframe_every``
    frames, so that :func:`~codec.profiler.stream.read_capture` can read the
    file from any keyframe. ``file`` is a path or a binary file (left open).
    Stops after ``duration`` seconds or ``frames`` frames, whichever comes
    first, or when the server closes the connection; cancelling it also
    leaves a file of whole packets. Raises :class:`OSError` if the server
    cannot be reached and :class:`~codec.errors.DecodeError` for a stream
    that is not a profiler stream.
    """
    _check_positive("keyframe_every", keyframe_every)
    stats = RecordStats()
    deadline = None if duration is None else asyncio.get_running_loop().time() + duration
    out = FrameEncoder()
    keyframes: PacketWriter | None = None
    since_keyframe = 0
    with _opened(file) as sink:
        async with await connect_viewer(host, port) as client:
            receiver = client.receiver
            with contextlib.suppress(TimeoutError, EOFError, TruncatedError, ConnectionError):
                async with asyncio.timeout_at(deadline):
                    while frames is None or stats.frames < frames:
                        payload, item = await client.next_packet()
                        out.write(payload)
                        if isinstance(item, Session):
                            keyframes = PacketWriter(item)
                            stats.keyframes += 1
                            since_keyframe = 0
                        elif isinstance(item, Frame):
                            stats.frames += 1
                            since_keyframe += 1
                            if since_keyframe == keyframe_every and keyframes is not None:
                                keyframes.keyframe(out, receiver.registry)
                                stats.keyframes += 1
                                since_keyframe = 0
                        with out.getbuffer() as packets:
                            stats.bytes_written += sink.write(packets) or 0
                        out.clear()
            stats.frames_dropped = receiver.frames_dropped
        sink.flush()
    return stats
