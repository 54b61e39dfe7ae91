"""The profile server: one encoded stream fanned out over TCP to every connected viewer.

A viewer is a program that connects to a :class:`ProfileServer` to receive
its stream (:mod:`codec.profiler.client` is one). Strategy:
:class:`ProfileServer` is a profiler sink. ``send()`` runs on the thread
that ends a frame; it copies the frame's packets into two ``bytes`` (the new
registry entries, if any, and the frame) and hands them to the event loop
with ``call_soon_threadsafe`` (``call_soon`` on the loop's own thread, which
keeps the two in order). On the loop, the same two objects are queued for
every viewer: the work and the objects per frame do not depend on the number
of viewers, because the profiler encoded the frame once.

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
``STATE_CLEARED`` and the full registry, queued for it alone; the viewers
already connected receive nothing extra. A definition may then arrive twice
(in the keyframe and in the next registry packet), which a
:class:`~codec.profiler.receiver.Receiver` accepts as an identical repeat.
Viewers send nothing (a frame a viewer sends is read and dropped; one
larger than ``VIEWER_MAX_FRAME_SIZE`` ends its connection at the prefix);
the end of what a viewer sends is taken as its disconnection: it is removed
and its connection aborted, what it was not sent dropped (a viewer that
half-closes and stops reading would otherwise keep it open for good).
:meth:`ProfileServer.close` resets the connections of viewers that have not
taken what they were sent within ``close_timeout``. A restarted producer has
a new session id, which makes a receiver start a new registry, so ids reused
for other scopes are never mislabelled.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any

from codec import aio
from codec.framing import FrameEncoder
from codec.profiler.model import Marks
from codec.profiler.packets import PacketWriter
from codec.profiler.recording import Profiler

__all__ = [
    "DEFAULT_CLOSE_TIMEOUT",
    "DEFAULT_MAX_QUEUED_FRAMES",
    "VIEWER_MAX_FRAME_SIZE",
    "ProfileServer",
    "ViewerQueue",
    "ViewerStats",
]

# Frames a viewer may have waiting before new ones are dropped (puffin_http's MAX_FRAMES_IN_QUEUE).
DEFAULT_MAX_QUEUED_FRAMES = 30
# Seconds close() gives the viewers to take what they were sent before it resets their
# connections: one that does not read would keep its connection open for good.
DEFAULT_CLOSE_TIMEOUT = 1.0
# The largest frame a viewer may send (viewers send nothing, in this version): one
# past it ends the viewer's connection at its prefix. With the default limit of
# codec.aio (4 MiB) each viewer could make the server keep a 4 MiB frame it never ends.
VIEWER_MAX_FRAME_SIZE = 4096


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
        self,
        profiler: Profiler,
        *,
        max_queued_frames: int = DEFAULT_MAX_QUEUED_FRAMES,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        _check_positive("max_queued_frames", max_queued_frames)
        if not close_timeout >= 0:
            raise ValueError(f"close_timeout must be at least 0, got {close_timeout}")
        self.profiler = profiler
        self.max_queued_frames = max_queued_frames
        self.close_timeout = close_timeout
        self._writer = PacketWriter(profiler.session)  # for stats packets
        self._viewers: list[_Viewer] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._server: asyncio.Server | None = None
        self._attached = False  # a sink of the profiler
        self._closed = False
        # The last keyframe, and the registry and marks it was encoded at.
        self._keyframe: tuple[Any, Marks, bytes] | None = None

    @classmethod
    async def start(
        cls,
        profiler: Profiler,
        host: str | None = "127.0.0.1",
        port: int | None = 0,
        *,
        max_queued_frames: int = DEFAULT_MAX_QUEUED_FRAMES,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
        **server_options: Any,
    ) -> ProfileServer:
        """A server listening on ``host:port`` (0: any free port), attached to ``profiler``.

        ``server_options`` go to :func:`codec.aio.start_server` (``host`` and
        ``port`` are ``None`` with ``sock=``); its ``max_frame_size`` bounds
        what a viewer sends, :data:`VIEWER_MAX_FRAME_SIZE` by default.
        """
        server = cls(profiler, max_queued_frames=max_queued_frames, close_timeout=close_timeout)
        await server.listen(host, port, **server_options)
        return server

    async def listen(self, host: str | None, port: int | None, **server_options: Any) -> None:
        """Attach to the profiler and accept viewers on ``host:port``.

        If it fails, the server is left as it was: it can listen again.
        """
        if self._closed:
            raise RuntimeError("the server is closed")
        if self._loop is not None:
            raise RuntimeError("the server is already listening")
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._attach()  # before any viewer: the first keyframe then covers all
        server_options.setdefault("max_frame_size", VIEWER_MAX_FRAME_SIZE)
        try:
            server = await aio.start_server(self._serve, host, port, **server_options)
        except BaseException:
            self._detach()
            self._loop = None
            raise
        if self._closed:  # by close() while the socket was being opened
            server.close()
            raise RuntimeError("the server was closed while it started listening")
        self._server = server

    def _attach(self) -> None:
        self.profiler.add_sink(self)
        self._attached = True

    def _detach(self) -> None:
        if self._attached:
            self._attached = False
            self.profiler.remove_sink(self)

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
        queue.put_registry(self._current_keyframe())
        self._viewers.append(viewer)
        watcher = asyncio.create_task(_watch(reader, viewer))
        try:
            await _pump(viewer)
        except ConnectionError:
            viewer.gone = True
        finally:
            self._viewers.remove(viewer)
            watcher.cancel()
            if viewer.gone:
                writer.abort()  # nobody reads what is left
            else:
                if not writer.is_closing():
                    writer.transport.writelines(queue.take())  # sent before the transport closes
                writer.close()

    def _current_keyframe(self) -> bytes:
        """The profiler's keyframe, encoded again only once its registry has grown.

        Definitions are never changed or removed, so a keyframe made when the
        registry had the same marks holds the same definitions (perhaps a few
        more, added while it was encoded: a receiver accepts their repeat).
        Viewers joining meanwhile share it: a connection costs no encoding of
        the whole registry on the loop, nor a copy of it of its own.
        """
        registry = self.profiler.registry
        marks = registry.marks()
        cached = self._keyframe
        if cached is None or cached[0] is not registry or cached[1] != marks:
            cached = self._keyframe = (registry, marks, self.profiler.keyframe())
        return cached[2]

    async def close(self) -> None:
        """Detach from the profiler, stop listening, and close every viewer's connection.

        Every frame ended before the call is handed to the viewers' transports,
        which close once they have sent it; the connections still open after
        :attr:`close_timeout` seconds (their viewers do not read) are reset,
        what they were not sent dropped.
        """
        if self._closed:
            return
        self._closed = True
        self._detach()
        await asyncio.sleep(0)  # run the dispatches already scheduled
        if self._server is not None:
            self._server.close()
        viewers = list(self._viewers)
        tasks = [viewer.task for viewer in viewers]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await _close_within([viewer.writer for viewer in viewers], self.close_timeout)

    async def __aenter__(self) -> ProfileServer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def _close_within(writers: list[aio.FramedWriter], timeout: float) -> None:
    """Wait until the closing connections of ``writers`` are closed; abort those left after
    ``timeout`` seconds."""
    if not writers:
        return
    closed = [asyncio.ensure_future(writer.wait_closed()) for writer in writers]
    _, pending = await asyncio.wait(closed, timeout=timeout)
    if not pending:
        return
    for writer, done in zip(writers, closed, strict=True):
        if done in pending:
            writer.abort()
    # An abort loses its connection at the loop's next turn; the bound is only a safeguard.
    _, pending = await asyncio.wait(pending, timeout=1.0)
    for done in pending:
        done.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


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
    """Wait for the end of what a viewer sends (nothing, in this version): it is gone.

    Its connection is aborted, dropping whatever it was not sent: closed
    gracefully, it would wait for a viewer that may never read again (one
    that only half-closed) to take every byte, and ``_pump`` would wait with
    it in ``drain()``, the viewer never removed.
    """
    with contextlib.suppress(Exception):
        async for _ in reader:
            pass
    viewer.gone = True
    viewer.ready.set()
    viewer.writer.abort()  # wakes _pump's drain(): the connection is lost
