"""Tests of the asyncio layer, :mod:`codec.aio`, over real sockets (no mock transports).

Every test runs in a fresh event loop: the default asyncio loop, and uvloop
when it is installed (skipped with a reason otherwise). Connections are on
127.0.0.1 or on Unix sockets in a temporary directory; the "plain socket"
peers are blocking sockets driven by a thread, writing and reading the naive
``_VarintBytes(len(p)) + p`` stream. Each test is bounded by a timeout.

What is checked, in both builds (compiled core and ``CODEC_PURE_PYTHON=1``):

* echo of 100,000 messages client -> server -> client, pb2 and structs,
  byte-exact at the server, equal at the client; TCP and Unix sockets;
* ends of stream: a clean end stops iteration / raises ``EOFError``; a peer
  closing inside a prefix or a body gives ``TruncatedError`` after the
  frames before it; a 1 GiB declared length gives ``FrameTooLargeError``,
  the connection is closed and memory stays bounded; a malformed prefix and
  an unparseable payload likewise close the connection;
* backpressure: a fast plain-socket sender and a reader that sleeps; the
  receiver's buffered bytes stay under its bound, every message arrives in
  order, none lost or duplicated;
* many tasks calling ``asend()``/``send()`` concurrently: frames never
  interleave;
* cancelling ``recv()`` at random points (``wait_for`` timeouts and
  ``task.cancel()``): no message lost;
* interop with plain-socket peers in both directions, random chunk sizes;
* the zero-copy write path: a slow reader forces partial sends while the
  writer keeps sending; every byte arrives as sent (where the transport
  keeps views, CPython 3.12+ or uvloop, the test checks that buffers were
  actually held and not reused);
* coalescing: sends of one loop iteration reach the socket together;
* ``frame_timeout`` against a slow-loris peer; the stream wrappers; writer
  life cycle (context manager, half-close, send after close); a handler that
  raises or returns closes its connection.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import itertools
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import tracemalloc
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.internal.decoder import _DecodeVarint32  # type: ignore[attr-defined]
from google.protobuf.internal.encoder import _VarintBytes  # type: ignore[attr-defined]
from helpers.peerbench import Blob, Sample, samples

import codec
import codec.aio
from codec import DecodeError, FrameTooLargeError
from codec.aio import FramedReader, FramedWriter, FrameTimeoutError
from codec.errors import TruncatedError, VarintError

TIMEOUT = 30.0  # per test body; the whole file takes a few seconds
SampleStruct = codec.struct(Sample)
KiB = 1024
MiB = 1024 * KiB
RECEIVE_CHUNK = 64 * KiB  # what one read may add after the high-water check


def naive_stream(payloads: list[bytes]) -> bytes:
    return b"".join(_VarintBytes(len(p)) + p for p in payloads)


def naive_split(data: bytes) -> list[bytes]:
    frames, pos = [], 0
    while pos < len(data):
        size, pos = _DecodeVarint32(data, pos)
        frames.append(data[pos : pos + size])
        pos += size
    assert pos == len(data)
    return frames


# --- event loops and endpoints --------------------------------------------------


class Run:
    """Runs a coroutine function to completion in a new loop of one kind, with a timeout."""

    def __init__(self, kind: str, factory: Callable[[], asyncio.AbstractEventLoop]) -> None:
        self.kind = kind
        self.factory = factory

    def __call__(self, body: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        with asyncio.Runner(loop_factory=self.factory) as runner:
            return runner.run(asyncio.wait_for(body(*args), TIMEOUT))

    @property
    def transport_keeps_views(self) -> bool:
        """Whether a partial send leaves the transport holding the buffer it was given."""
        return self.kind == "uvloop" or sys.version_info >= (3, 12)


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: pytest.FixtureRequest) -> Run:
    if request.param == "uvloop":
        uvloop = pytest.importorskip(
            "uvloop", reason="uvloop is an optional dependency and is not installed"
        )
        return Run("uvloop", uvloop.new_event_loop)
    return Run("asyncio", asyncio.new_event_loop)


@pytest.fixture(scope="module")
def socket_dir() -> Iterator[Path]:
    # A short path: Unix socket paths are limited to ~108 bytes.
    with tempfile.TemporaryDirectory(prefix="caio", dir="/tmp") as path:
        yield Path(path)


class Net:
    """Servers and connections of one kind (``tcp`` on 127.0.0.1, or ``unix``)."""

    def __init__(self, kind: str, directory: Path) -> None:
        self.kind = kind
        self.path = str(directory / f"s{random.randrange(1 << 30)}")
        self.port = 0

    def _where(self, server: asyncio.Server) -> None:
        if self.kind == "tcp":
            self.port = server.sockets[0].getsockname()[1]

    async def serve(self, handler: Callable[..., Any], **options: Any) -> asyncio.Server:
        """A codec.aio server."""
        if self.kind == "tcp":
            server = await codec.aio.start_server(handler, "127.0.0.1", 0, **options)
        else:
            server = await codec.aio.start_unix_server(handler, self.path, **options)
        self._where(server)
        return server

    async def connect(self, **options: Any) -> tuple[FramedReader[Any], FramedWriter]:
        """A codec.aio connection to the last server."""
        if self.kind == "tcp":
            return await codec.aio.open_connection("127.0.0.1", self.port, **options)
        return await codec.aio.open_unix_connection(self.path, **options)

    async def serve_streams(self, handler: Callable[..., Any]) -> asyncio.Server:
        """An asyncio streams server."""
        if self.kind == "tcp":
            server = await asyncio.start_server(handler, "127.0.0.1", 0)
        else:
            server = await asyncio.start_unix_server(handler, self.path)
        self._where(server)
        return server

    async def connect_streams(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.kind == "tcp":
            return await asyncio.open_connection("127.0.0.1", self.port)
        return await asyncio.open_unix_connection(self.path)

    def listen(self) -> socket.socket:
        """A plain listening socket (for a plain peer that our client connects to)."""
        if self.kind == "tcp":
            sock = socket.create_server(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        else:
            sock = socket.socket(socket.AF_UNIX)
            sock.bind(self.path)
            sock.listen()
        sock.settimeout(TIMEOUT)
        return sock

    def dial(self) -> socket.socket:
        """A plain socket connected to the last server."""
        if self.kind == "tcp":
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT)
        else:
            sock = socket.socket(socket.AF_UNIX)
            sock.settimeout(TIMEOUT)
            sock.connect(self.path)
        return sock


@pytest.fixture(params=["tcp", "unix"])
def net(request: pytest.FixtureRequest, socket_dir: Path) -> Net:
    return Net(request.param, socket_dir)


@pytest.fixture
def tcp(socket_dir: Path) -> Net:
    return Net("tcp", socket_dir)


class Peer(threading.Thread):
    """A plain blocking-socket peer: runs ``body(sock)`` in a thread, keeps its result."""

    def __init__(self, body: Callable[[socket.socket], Any], sock: socket.socket | None = None):
        super().__init__(daemon=True)
        self.body = body
        self.sock = sock
        self.listener: socket.socket | None = None
        self.result: Any = None
        self.error: BaseException | None = None

    @classmethod
    def accepting(cls, listener: socket.socket, body: Callable[[socket.socket], Any]) -> Peer:
        peer = cls(body)
        peer.listener = listener
        peer.start()
        return peer

    def run(self) -> None:
        try:
            if self.listener is not None:
                self.sock, _ = self.listener.accept()
                self.sock.settimeout(TIMEOUT)
                self.listener.close()
            assert self.sock is not None
            with self.sock:
                self.result = self.body(self.sock)
        except BaseException as exc:
            self.error = exc

    async def outcome(self) -> Any:
        """Wait for the thread without blocking the loop; re-raise its error."""
        deadline = time.monotonic() + TIMEOUT
        while self.is_alive():
            if time.monotonic() > deadline:
                raise TimeoutError("peer thread did not finish")
            await asyncio.sleep(0.005)
        if self.error is not None:
            raise self.error
        return self.result


def receive_all(sock: socket.socket, rng: random.Random | None = None) -> bytes:
    """Read until EOF, in random sizes if ``rng`` is given."""
    chunks: list[bytes] = []
    while True:
        chunk = sock.recv(rng.randrange(1, 8192) if rng else 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def send_in_chunks(sock: socket.socket, data: bytes, rng: random.Random) -> None:
    """sendall ``data`` in random chunk sizes, with a few short pauses."""
    pos = 0
    while pos < len(data):
        size = rng.choice((1, 2, 3, rng.randrange(1, 64), rng.randrange(1, 4096)))
        sock.sendall(data[pos : pos + size])
        pos += size
        if rng.random() < 0.002:
            time.sleep(0.001)


# --- echo ---------------------------------------------------------------------------

ECHO_COUNT = 100_000
PB2_MESSAGES = samples(ECHO_COUNT)
PB2_PAYLOADS = [m.SerializeToString() for m in PB2_MESSAGES]


@pytest.fixture(scope="module")
def struct_messages() -> list[Any]:
    return [codec.from_pb2(m) for m in PB2_MESSAGES]


def test_a_decoder_brings_its_options_to_a_connection(run: Run, net: Net) -> None:
    """codec.Decoder as message_type: zero-copy bytes fields, numpy columns, limits."""
    BlobStruct = codec.struct(Blob)
    decoder = codec.Decoder(BlobStruct, zero_copy=True)
    payloads = [bytes([i]) * (1000 + i) for i in range(20)]

    async def body() -> list[Any]:
        async def send(reader: FramedReader[Any], writer: FramedWriter) -> None:
            async with writer:
                for payload in payloads:
                    writer.send(Blob(data=payload))

        server = await net.serve(send)
        async with server:
            reader, writer = await net.connect(message_type=decoder)
            received = [message async for message in reader]
            writer.close()
            await writer.wait_closed()
        return received

    received = run(body)
    assert all(isinstance(message.data, memoryview) for message in received)
    assert [bytes(message.data) for message in received] == payloads


async def read_while_sending(
    reader: FramedReader[Any], writer: FramedWriter, sending: Coroutine[Any, Any, None]
) -> list[Any]:
    """Every message up to the end of the stream, read while ``sending`` runs as a task.

    Sending and reading at once, neither side waits on the other's full buffer.
    ``sending`` ends the stream; ``writer`` is closed once both are done.
    """
    producer = asyncio.create_task(sending)
    received = [message async for message in reader]
    await producer
    writer.close()
    await writer.wait_closed()
    return received


@pytest.mark.parametrize("kind", ["pb2", "struct"])
def test_echo_100k(run: Run, net: Net, kind: str, struct_messages: list[Any]) -> None:
    count = ECHO_COUNT if net.kind == "tcp" else ECHO_COUNT // 5
    messages = (PB2_MESSAGES if kind == "pb2" else struct_messages)[:count]
    message_type = Sample if kind == "pb2" else SampleStruct
    expected = PB2_PAYLOADS[:count]

    async def body() -> None:
        mismatches = []

        async def echo(reader: FramedReader[Any], writer: FramedWriter) -> None:
            index = 0
            async for frame in reader:  # raw frames as bytes
                if frame != expected[index]:
                    mismatches.append(index)
                index += 1
                writer.send(frame)
            async with writer:
                pass

        server = await net.serve(echo)
        async with server:
            reader, writer = await net.connect(message_type=message_type)

            async def produce() -> None:
                for message in messages:
                    await writer.asend(message)
                writer.write_eof()

            received = await read_while_sending(reader, writer, produce())
        assert mismatches == []
        assert len(received) == count
        assert received == messages

    run(body)


# --- ends of stream and bad input -----------------------------------------------------

FRAMES = [b"first", b"", b"third" * 100]


async def read_all(reader: FramedReader[Any]) -> tuple[list[Any], BaseException | None]:
    """Frames until the reader raises; ``(frames, error)``; the error is None at a clean end."""
    frames = []
    try:
        async for frame in reader:
            frames.append(frame)
    except Exception as exc:
        return frames, exc
    with pytest.raises(EOFError):  # and recv() keeps saying so
        await reader.recv()
    return frames, None


@pytest.mark.parametrize(
    ("tail", "error", "missing"),
    [
        (b"", None, None),  # clean end at a frame boundary
        (b"\x80", TruncatedError, None),  # inside a prefix
        (b"\xac\x02", TruncatedError, None),  # 300, its prefix complete, no body
        (_VarintBytes(10) + b"12345", TruncatedError, 5),  # inside a body
    ],
    ids=["clean", "mid-prefix", "after-prefix", "mid-body"],
)
def test_end_of_stream(
    run: Run, net: Net, tail: bytes, error: type[Exception] | None, missing: int | None
) -> None:
    data = naive_stream(FRAMES) + tail

    async def body() -> None:
        # The plain peer writes, then closes; our client reads.
        peer = Peer.accepting(net.listen(), lambda sock: sock.sendall(data))
        reader, writer = await net.connect()
        frames, exc = await read_all(reader)
        await peer.outcome()
        assert frames == FRAMES
        if error is None:
            assert exc is None
        else:
            assert type(exc) is error
            assert isinstance(exc, TruncatedError)
            if missing is not None:
                assert exc.missing == missing
            with pytest.raises(error):  # the error repeats
                await reader.recv()
        writer.close()
        await writer.wait_closed()

    run(body)


def test_end_of_stream_server_side(run: Run, net: Net) -> None:
    """The same from a server handler: a plain client closes inside a body."""
    data = naive_stream(FRAMES) + _VarintBytes(100) + b"x"

    async def body() -> None:
        outcome: asyncio.Future[tuple[list[Any], BaseException | None]] = (
            asyncio.get_running_loop().create_future()
        )

        async def handler(reader: FramedReader[Any], writer: FramedWriter) -> None:
            outcome.set_result(await read_all(reader))
            writer.close()

        async with await net.serve(handler):
            peer = Peer(lambda sock: sock.sendall(data), net.dial())
            peer.start()
            frames, exc = await outcome
            await peer.outcome()
        assert frames == FRAMES
        assert isinstance(exc, TruncatedError)
        assert exc.missing == 99

    run(body)


def closed_by_peer(sock: socket.socket) -> bool:
    """Whether the other end closed: reads hit EOF or a reset within the timeout."""
    try:
        while sock.recv(65536):
            pass
    except (ConnectionResetError, BrokenPipeError):
        pass
    return True


def test_declared_1gib_frame(run: Run, net: Net) -> None:
    """A 1 GiB declared length: FrameTooLargeError at once, connection closed, memory bounded."""
    junk = bytes(64 * KiB)

    def flood(sock: socket.socket) -> tuple[int, bool]:
        sent = 0
        sock.sendall(_VarintBytes(1 << 30))
        try:
            while sent < 256 * MiB:  # stops as soon as our side closes the connection
                sock.sendall(junk)
                sent += len(junk)
        except OSError:
            pass
        return sent, closed_by_peer(sock)

    async def body() -> tuple[int, int]:
        peer = Peer.accepting(net.listen(), flood)
        reader, writer = await net.connect(message_type=Sample)
        with pytest.raises(FrameTooLargeError) as caught:
            await reader.recv()
        assert caught.value.size == 1 << 30
        assert caught.value.limit == codec.DEFAULT_MAX_FRAME_SIZE
        assert caught.value.offset == 0
        assert writer.is_closing()
        assert reader.buffered <= RECEIVE_CHUNK
        with pytest.raises(FrameTooLargeError):  # repeats
            await reader.recv()
        await writer.wait_closed()
        sent, closed = await peer.outcome()
        assert closed
        return sent, reader.buffered

    gc.collect()
    tracemalloc.start()
    try:
        _, _buffered = run(body)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MiB  # the loop, the sockets, one receive window; never the declared size


@pytest.mark.parametrize(
    ("data", "message_type", "error"),
    [
        (b"\xff" * 11, None, VarintError),  # an 11-byte prefix
        (_VarintBytes(5 * MiB) + b"x" * 100, None, FrameTooLargeError),
        (_VarintBytes(3) + b"\xff\xff\xff", Sample, DecodeError),  # not a Sample
    ],
    ids=["bad-varint", "too-large", "unparseable"],
)
def test_bad_frame_closes_connection(
    run: Run, net: Net, data: bytes, message_type: Any, error: type[Exception]
) -> None:
    good = Sample(ts_ns=1, name="ok")
    stream = naive_stream([good.SerializeToString()]) + data

    async def body() -> None:
        outcome: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()

        async def handler(reader: FramedReader[Any], writer: FramedWriter) -> None:
            first = await reader.recv()
            assert first == (good if message_type else good.SerializeToString())
            try:
                await reader.recv()
            except Exception as exc:
                outcome.set_result(exc)
                assert writer.is_closing()
                with pytest.raises(ConnectionResetError):
                    writer.send(good)

        def client(sock: socket.socket) -> bool:
            sock.sendall(stream)
            return closed_by_peer(sock)

        async with await net.serve(handler, message_type=message_type):
            peer = Peer(client, net.dial())
            peer.start()
            exc = await outcome
            assert await peer.outcome()  # the server closed the connection
        assert type(exc) is error
        assert isinstance(exc, DecodeError)

    run(body)


# --- backpressure ---------------------------------------------------------------------


def test_slow_consumer_bounded(run: Run, net: Net) -> None:
    """A plain sender writes as fast as it can; the reader sleeps; buffering stays bounded."""
    high, low = 32 * KiB, 8 * KiB
    messages = samples(30_000, seed=7)
    payloads = [m.SerializeToString() for m in messages]
    # Some larger frames too, up to twice the high-water mark.
    rng = random.Random(3)
    for index in range(0, len(payloads), 1000):
        payloads[index] = rng.randbytes(rng.randrange(1, 2 * high))
    data = naive_stream(payloads)

    async def body() -> None:
        outcome: asyncio.Future[tuple[list[bytes], int, bool]] = (
            asyncio.get_running_loop().create_future()
        )

        async def handler(reader: FramedReader[Any], writer: FramedWriter) -> None:
            got, most, paused = [], 0, False
            transport = writer.transport
            async for frame in reader:
                got.append(frame)
                most = max(most, reader.buffered)
                paused = paused or not transport.is_reading()  # type: ignore[attr-defined]
                if len(got) % 500 == 0:
                    await asyncio.sleep(0.002)
            writer.close()
            outcome.set_result((got, most, paused))

        async with await net.serve(handler, read_high_water=high, read_low_water=low):
            peer = Peer(lambda sock: sock.sendall(data), net.dial())
            peer.start()
            got, most, paused = await outcome
            await peer.outcome()
        assert got == payloads  # in order, none lost or duplicated
        assert paused
        # A large frame may exceed the mark (it must be able to complete), plus one read.
        assert most <= 2 * high + RECEIVE_CHUNK

    run(body)


IDLE_LIMIT = 300 * KiB  # what an idle connection may keep, whatever it received before


@pytest.mark.parametrize("echo", [False, True], ids=["discard", "echo"])
def test_an_idle_connection_gives_back_the_memory_of_a_large_frame(
    run: Run, tcp: Net, echo: bool
) -> None:
    """After one 4 MiB frame, taken (and echoed), the silent connection keeps < 300 KiB.

    The receive window used to shrink only at the next read, which an idle
    connection never makes (it kept 9 MiB), and the writer's encoder kept
    its 4 MiB (13 MiB in all, echoing). Traced memory of the whole process:
    the peer is a thread whose buffers are made before the measurement.
    """
    stream = naive_stream([bytes(4 * MiB - 8)])
    room = bytearray(64 * KiB)
    received = threading.Event()
    quiet = threading.Event()

    def peer(sock: socket.socket) -> None:
        sock.sendall(stream)
        left = len(stream) if echo else 0
        while left:
            left -= sock.recv_into(room, min(left, len(room)))
        received.set()
        quiet.wait(TIMEOUT)

    async def body() -> int:
        taken = asyncio.Event()

        async def handler(reader: FramedReader[Any], writer: FramedWriter) -> None:
            message = await reader.recv()
            if echo:
                writer.send(message)
            del message
            taken.set()
            with contextlib.suppress(EOFError):
                await reader.recv()

        async with await tcp.serve(handler):
            client = Peer(peer, tcp.dial())
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            client.start()
            await taken.wait()
            while not received.is_set():
                await asyncio.sleep(0.005)
            for _ in range(3):
                await asyncio.sleep(0)  # the writer's flush, if not done yet
            gc.collect()
            kept = tracemalloc.get_traced_memory()[0] - before
            quiet.set()
            await client.outcome()
        return kept

    tracemalloc.start()
    try:
        kept = run(body)
    finally:
        tracemalloc.stop()
    assert kept < IDLE_LIMIT


# --- fairness ---------------------------------------------------------------------------


@pytest.mark.parametrize("via", ["recv", "async for"])
def test_a_burst_of_buffered_frames_lets_other_tasks_run(
    run: Run, tcp: Net, via: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """20,000 empty frames, all buffered: the loop's other tasks run while they are read.

    recv() and async for used to return buffered frames without ever
    yielding, so one peer's burst held up every other connection of the loop
    until its handler had seen the whole of it. A ticker task, always ready,
    counts the loop's turns; the handler notes the count at each frame.
    Counted, not timed: with turns of no time at all, the reader yields at
    each look at the clock, every ``_TURN_CHECK`` frames.
    """
    monkeypatch.setattr(codec.aio._reader, "TURN_SECONDS", 0.0)  # where the reader reads it
    every = codec.aio._reader._TURN_CHECK
    count = 20_000
    burst = bytes(count)  # 20,000 empty frames

    async def body() -> list[int]:
        ticks = 0
        seen: list[int] = []
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def ticker() -> None:
            nonlocal ticks
            while not done.done():
                ticks += 1
                await asyncio.sleep(0)

        async def handler(reader: FramedReader[Any], writer: FramedWriter) -> None:
            while reader.buffered < count:  # the whole burst in the window first
                await asyncio.sleep(0.001)
            if via == "recv":
                for _ in range(count):
                    await reader.recv()
                    seen.append(ticks)
            else:
                async for _ in reader:
                    seen.append(ticks)
                    if len(seen) == count:
                        break
            done.set_result(None)

        async with await tcp.serve(handler):
            peer = Peer(lambda sock: sock.sendall(burst), tcp.dial())
            peer.start()
            task = asyncio.create_task(ticker())
            await done
            await task
            await peer.outcome()
        return seen

    seen = run(body)
    assert len(seen) == count
    runs = collections.Counter(seen)  # frames handed out in a row, between two ticks
    assert max(runs.values()) <= every
    assert len(runs) >= count // every


# --- concurrent senders ---------------------------------------------------------------


def tagged_payload(task: int, seq: int, size: int) -> bytes:
    head = task.to_bytes(2, "little") + seq.to_bytes(4, "little")
    return head + bytes([(task * 31 + seq) % 256]) * size


def test_concurrent_senders_never_interleave(run: Run, net: Net) -> None:
    tasks, per_task = 16, 150
    rng = random.Random(11)
    sizes = {
        (t, s): rng.choice((0, 10, 100, 3000, rng.randrange(1, 200 * KiB)))
        for t in range(tasks)
        for s in range(per_task)
    }

    async def body() -> None:
        outcome: asyncio.Future[list[bytes]] = asyncio.get_running_loop().create_future()

        async def handler(reader: FramedReader[Any], writer: FramedWriter) -> None:
            outcome.set_result([frame async for frame in reader])
            writer.close()

        async with await net.serve(handler):
            _, writer = await net.connect(write_high_water=16 * KiB)

            async def sender(task: int) -> None:
                local = random.Random(task)
                for seq in range(per_task):
                    payload = tagged_payload(task, seq, sizes[task, seq])
                    if local.random() < 0.5:
                        await writer.asend(payload)
                    else:
                        writer.send(payload)
                    if local.random() < 0.3:
                        await asyncio.sleep(0)
                    if local.random() < 0.1:
                        await writer.drain()

            await asyncio.gather(*(sender(t) for t in range(tasks)))
            async with writer:
                pass
            frames = await outcome
        assert len(frames) == tasks * per_task
        next_seq = [0] * tasks
        for frame in frames:
            task = int.from_bytes(frame[:2], "little")
            seq = int.from_bytes(frame[2:6], "little")
            assert seq == next_seq[task]
            assert frame == tagged_payload(task, seq, sizes[task, seq])
            next_seq[task] += 1

    run(body)


# --- cancellation ---------------------------------------------------------------------


def test_cancelled_recv_loses_nothing(run: Run, net: Net) -> None:
    count = 3000
    messages = samples(count, seed=5)

    async def body() -> None:
        async def handler(reader: FramedReader[Any], writer: FramedWriter) -> None:
            rng = random.Random(1)
            for message in messages:
                writer.send(message)
                if rng.random() < 0.05:
                    await writer.drain()
                    await asyncio.sleep(rng.choice((0, 0, 0.0005)))
            await writer.drain()
            writer.close()

        async with await net.serve(handler):
            reader, writer = await net.connect(message_type=Sample)
            rng = random.Random(2)
            received: list[Any] = []
            cancelled = 0
            while True:
                how = rng.randrange(3)
                try:
                    if how == 0:  # a timeout around recv()
                        received.append(await asyncio.wait_for(reader.recv(), rng.random() / 2000))
                    elif how == 1:  # a task cancelled from outside at a random point
                        task = asyncio.create_task(reader.recv())
                        for _ in range(rng.randrange(3)):
                            await asyncio.sleep(0)
                        task.cancel()
                        received.append(await task)
                    else:
                        received.append(await reader.recv())
                except (asyncio.CancelledError, TimeoutError):
                    cancelled += 1
                except EOFError:
                    break
            writer.close()
        assert received == messages
        assert cancelled > 100  # the test did cancel, often

    run(body)


# --- interop with plain sockets -------------------------------------------------------


def test_plain_socket_writer_to_codec_reader(run: Run, net: Net) -> None:
    messages = samples(5000, seed=9)
    data = naive_stream([m.SerializeToString() for m in messages])

    async def body() -> None:
        outcome: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()

        async def handler(reader: FramedReader[Any], writer: FramedWriter) -> None:
            outcome.set_result([message async for message in reader])
            writer.close()

        async with await net.serve(handler, message_type=Sample):
            peer = Peer(lambda sock: send_in_chunks(sock, data, random.Random(4)), net.dial())
            peer.start()
            got = await outcome
            await peer.outcome()
        assert got == messages

    run(body)


def test_codec_writer_to_plain_socket_reader(run: Run, net: Net) -> None:
    messages = samples(5000, seed=10)

    async def body() -> None:
        peer = Peer.accepting(net.listen(), lambda sock: receive_all(sock, random.Random(6)))
        _, writer = await net.connect()
        rng = random.Random(8)
        async with writer:
            for message in messages:
                if rng.random() < 0.5:
                    writer.send(message)
                else:
                    await writer.asend(message)
                if rng.random() < 0.01:
                    await asyncio.sleep(0)
        data = await peer.outcome()
        assert [Sample.FromString(p) for p in naive_split(data)] == messages
        assert data == naive_stream([m.SerializeToString() for m in messages])

    run(body)


# --- the zero-copy write path ----------------------------------------------------------


def test_slow_reader_partial_sends_are_byte_exact(run: Run, tcp: Net) -> None:
    """Partial sends while the writer keeps going: nothing the transport holds is reused.

    The plain reader has a tiny receive buffer and reads slowly, so writes
    stay queued in the transport. The writer keeps encoding frames of
    distinct random content (sync ``send()``, flushes at every loop
    iteration). Any reuse of a buffer that the transport still held would
    corrupt the byte stream the reader checks.
    """
    rng = random.Random(12)
    payloads = [
        rng.randbytes(rng.choice((1, 50, 500, 5000, rng.randrange(1, 300 * KiB))))
        for _ in range(400)
    ]

    def slow_reader(sock: socket.socket) -> bytes:
        local = random.Random(13)
        chunks: list[bytes] = []
        while True:
            chunk = sock.recv(local.randrange(1, 16 * KiB))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            if local.random() < 0.05:
                time.sleep(0.001)

    async def body() -> int:
        listener = tcp.listen()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        peer = Peer.accepting(listener, slow_reader)
        _, writer = await tcp.connect()
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        most_held = 0
        local = random.Random(14)
        async with writer:
            for payload in payloads:
                writer.send(payload)
                most_held = max(most_held, len(writer._held))
                if local.random() < 0.3:
                    await asyncio.sleep(0)
                    most_held = max(most_held, len(writer._held))
                if local.random() < 0.05:
                    await writer.drain()
        data = await peer.outcome()
        assert naive_split(data) == payloads
        return most_held

    most_held = run(body)
    if run.transport_keeps_views:
        assert most_held > 0, "the transport never kept a view: the test did not test"
    else:
        assert most_held == 0  # CPython 3.11's selector transport copies what it keeps


def test_sends_of_one_iteration_are_coalesced(run: Run) -> None:
    async def body() -> None:
        ours, theirs = socket.socketpair()
        theirs.setblocking(False)
        with theirs:
            _, writer = await codec.aio.open_unix_connection(sock=ours)
            for index in range(100):
                writer.send(Sample(ts_ns=index))
            with pytest.raises(BlockingIOError):
                theirs.recv(65536)  # nothing was written yet
            assert len(writer._encoder) > 0
            await asyncio.sleep(0)  # one loop iteration: one flush, one write
            assert len(writer._encoder) == 0
            expected = naive_stream([Sample(ts_ns=i).SerializeToString() for i in range(100)])
            received = b""
            while len(received) < len(expected):
                await asyncio.sleep(0.001)
                with contextlib.suppress(BlockingIOError):
                    received += theirs.recv(65536)
            assert received == expected
            writer.close()
            await writer.wait_closed()

    run(body)


# --- frame timeout ---------------------------------------------------------------------


def test_frame_timeout_closes_slow_loris(run: Run, net: Net) -> None:
    def loris(sock: socket.socket) -> bool:
        sock.sendall(naive_stream([b"whole"]) + b"\x05ab")  # then nothing more
        return closed_by_peer(sock)

    async def body() -> None:
        peer = Peer.accepting(net.listen(), loris)
        reader, writer = await net.connect(frame_timeout=0.2)
        assert await reader.recv() == b"whole"
        started = time.monotonic()
        with pytest.raises(FrameTimeoutError) as caught:
            await reader.recv()
        assert 0.1 < time.monotonic() - started < 5
        assert caught.value.timeout == 0.2
        assert isinstance(caught.value, TimeoutError)
        assert writer.is_closing()
        assert await peer.outcome()

    run(body)


@pytest.mark.parametrize("via", ["protocol", "from_stream"])
def test_frame_timeout_spares_idle_and_steady_peers(run: Run, net: Net, via: str) -> None:
    """The limit is per frame: an idle peer, and frames that each arrive in time, pass.

    Five 12-byte frames go out one byte, then 2 bytes every 10 ms (~60 ms a
    frame, ~0.3 s in all, over the 0.2 s limit), so every chunk that ends a
    frame also starts the next: the clock must restart for each frame, also
    when it began in the chunk that ended the one before.
    """
    frames = [bytes([i]) * 11 for i in range(5)]
    data = naive_stream(frames)

    def steady(sock: socket.socket) -> None:
        time.sleep(0.3)  # idle: no frame in progress
        sock.sendall(data[:1])
        for index in range(1, len(data), 2):
            time.sleep(0.01)
            sock.sendall(data[index : index + 2])

    async def body() -> None:
        peer = Peer.accepting(net.listen(), steady)
        if via == "protocol":
            reader, writer = await net.connect(frame_timeout=0.2)
        else:
            stream_reader, stream_writer = await net.connect_streams()
            reader = FramedReader.from_stream(stream_reader, frame_timeout=0.2)
            writer = FramedWriter.from_stream(stream_writer)
        assert [f async for f in reader] == frames
        await peer.outcome()
        writer.close()

    run(body)


# --- stream wrappers -------------------------------------------------------------------


def test_stream_wrappers_echo(run: Run, net: Net) -> None:
    messages = samples(5000, seed=15)

    async def body() -> None:
        async def handler(
            stream_reader: asyncio.StreamReader, stream_writer: asyncio.StreamWriter
        ) -> None:
            reader: FramedReader[Any] = FramedReader.from_stream(stream_reader, message_type=Sample)
            writer = FramedWriter.from_stream(stream_writer)
            async with writer:
                async for message in reader:
                    await writer.asend(message)

        async with await net.serve_streams(handler):
            stream_reader, stream_writer = await net.connect_streams()
            reader: FramedReader[Any] = FramedReader.from_stream(
                stream_reader, message_type=SampleStruct
            )
            writer = FramedWriter.from_stream(stream_writer)

            async def produce() -> None:
                for message in messages:
                    await writer.asend(message)
                await writer.drain()
                stream_writer.write_eof()

            got = await read_while_sending(reader, writer, produce())
        assert [codec.to_pb2(m, Sample) for m in got] == messages

    run(body)


@pytest.mark.parametrize(
    ("tail", "error"),
    [(b"", None), (b"\x05ab", TruncatedError), (_VarintBytes(1 << 30), FrameTooLargeError)],
    ids=["clean", "truncated", "too-large"],
)
def test_stream_wrapper_reader_ends(
    run: Run, net: Net, tail: bytes, error: type[Exception] | None
) -> None:
    data = naive_stream(FRAMES) + tail

    async def body() -> None:
        peer = Peer.accepting(net.listen(), lambda sock: sock.sendall(data))
        stream_reader, stream_writer = await net.connect_streams()
        reader = FramedReader.from_stream(stream_reader)
        frames, exc = await read_all(reader)
        await peer.outcome()
        assert frames == FRAMES
        assert (exc is None) if error is None else type(exc) is error
        if error is FrameTooLargeError:
            assert stream_writer.transport.is_closing()
        stream_writer.close()

    run(body)


def test_stream_wrapper_frame_timeout(run: Run, tcp: Net) -> None:
    async def body() -> None:
        def loris(sock: socket.socket) -> None:
            sock.sendall(b"\x05ab")
            time.sleep(0.5)

        peer = Peer.accepting(tcp.listen(), loris)
        stream_reader, stream_writer = await tcp.connect_streams()
        reader = FramedReader.from_stream(stream_reader, frame_timeout=0.2)
        with pytest.raises(FrameTimeoutError):
            await reader.recv()
        with pytest.raises(FrameTimeoutError):
            await reader.recv()
        assert stream_writer.transport.is_closing()
        await peer.outcome()

    run(body)


def reset_after(data: bytes) -> Callable[[socket.socket], None]:
    """A plain peer that sends ``data``, then resets the connection.

    It waits for a byte first: a reset before the client's connect has
    completed would fail the connect itself.
    """

    def peer(sock: socket.socket) -> None:
        sock.recv(1)
        sock.sendall(data)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    return peer


def wait_closed_after(data: bytes) -> Callable[[socket.socket], bool]:
    """A plain peer that sends ``data`` once it has a byte, then waits for our side to close."""

    def peer(sock: socket.socket) -> bool:
        sock.recv(1)
        sock.sendall(data)
        return closed_by_peer(sock)

    return peer


@pytest.mark.parametrize("via", ["protocol", "from_stream"])
@pytest.mark.parametrize(
    ("peer", "error", "options"),
    [
        (reset_after(b"\x05ab"), ConnectionResetError, {}),
        (wait_closed_after(b"\x05ab"), FrameTimeoutError, {"frame_timeout": 0.05}),
        (wait_closed_after(b"\xff" * 11), VarintError, {}),
    ],
    ids=["reset", "timeout", "bad-prefix"],
)
def test_a_repeated_error_keeps_one_traceback(
    run: Run,
    tcp: Net,
    via: str,
    peer: Callable[[socket.socket], Any],
    error: type[Exception],
    options: dict[str, Any],
) -> None:
    """An error that recv() and async for repeat does not grow with each call.

    The same exception object is raised again: re-raised as it was, it kept
    every earlier call's traceback entries, and their frames, so a reader
    that goes on calling after an error held more memory with each call.
    """

    async def body() -> None:
        client = Peer.accepting(tcp.listen(), peer)
        if via == "protocol":
            reader, writer = await tcp.connect(**options)
            writer.send(b"")  # one byte: the peer sends once the connection is up
        else:
            stream_reader, stream_writer = await tcp.connect_streams()
            reader = FramedReader.from_stream(stream_reader, **options)
            stream_writer.write(b"\x00")
        sizes: dict[str, list[int]] = {"recv": [], "async for": []}
        for _ in range(4):
            for path, call in (("recv", reader.recv), ("async for", reader.__anext__)):
                with pytest.raises(error) as caught:
                    await call()
                sizes[path].append(len(traceback.extract_tb(caught.value.__traceback__)))
        for path, lengths in sizes.items():  # the first call may have waited: a longer path
            assert len(set(lengths[1:])) == 1 and lengths[-1] <= lengths[0], (path, lengths)
        await client.outcome()
        if via == "protocol":
            writer.close()
        else:
            stream_writer.close()

    run(body)


# --- reader options and writer life cycle ------------------------------------------------


def test_raw_frames_bytes_or_zero_copy(run: Run, tcp: Net) -> None:
    payloads = [bytes([i]) * (i * 997 % 70_000) for i in range(200)]

    async def body() -> None:
        peer = Peer.accepting(tcp.listen(), lambda sock: sock.sendall(naive_stream(payloads)))
        reader, writer = await tcp.connect(zero_copy=True)
        views = [frame async for frame in reader]  # all kept alive across many reads
        assert all(type(v) is memoryview for v in views)
        assert [bytes(v) for v in views] == payloads
        await peer.outcome()
        writer.close()

        peer = Peer.accepting(tcp.listen(), lambda sock: sock.sendall(naive_stream(payloads)))
        reader, writer = await tcp.connect()
        frames = [frame async for frame in reader]
        assert all(type(f) is bytes for f in frames)
        assert frames == payloads
        await peer.outcome()
        writer.close()

    run(body)


def padded_prefix(size: int, extra: int) -> bytes:
    """The varint of ``size`` padded with ``extra`` continuation bytes (accepted unless strict)."""
    prefix = bytearray(_VarintBytes(size))
    for _ in range(extra):
        prefix[-1] |= 0x80
        prefix.append(0)
    return bytes(prefix)


@pytest.mark.parametrize("via", ["protocol", "from_stream"])
def test_consumed_counts_each_frame_as_it_was_sent(run: Run, tcp: Net, via: str) -> None:
    """``consumed`` is the stream offset after the frames taken, padded prefixes included.

    A reader that splits a stream into packets (a profiler viewer) needs what
    each took on the wire for its error offsets; the payload's length does not
    tell it when the peer pads its prefixes.
    """
    payloads = [b"a", b"", b"c" * 300, b"d" * 70_000]
    pieces = [padded_prefix(len(p), i % 3) + p for i, p in enumerate(payloads)]

    async def body() -> None:
        peer = Peer.accepting(tcp.listen(), lambda sock: sock.sendall(b"".join(pieces)))
        if via == "protocol":
            reader, writer = await tcp.connect()
        else:
            stream_reader, stream_writer = await tcp.connect_streams()
            reader = FramedReader.from_stream(stream_reader)
        assert reader.consumed == 0
        frames, ends = [], []
        async for frame in reader:
            frames.append(frame)
            ends.append(reader.consumed)
        assert frames == payloads
        assert ends == list(itertools.accumulate(map(len, pieces)))
        await peer.outcome()
        (writer if via == "protocol" else stream_writer).close()

    run(body)


def test_half_close_and_reply(run: Run, net: Net) -> None:
    """The client sends, half-closes; the server reads to the end, then still replies."""
    messages = samples(1000, seed=16)

    async def body() -> None:
        async def handler(reader: FramedReader[Any], writer: FramedWriter) -> None:
            got = [message async for message in reader]
            async with writer:
                await writer.asend(Sample(ts_ns=len(got), name=got[-1].name))

        async with await net.serve(handler, message_type=Sample):
            reader, writer = await net.connect(message_type=Sample)
            writer.send_many(messages)
            assert writer.can_write_eof()
            writer.write_eof()
            with pytest.raises(RuntimeError):
                writer.send(messages[0])
            reply = await reader.recv()
            with pytest.raises(EOFError):
                await reader.recv()
            writer.close()
            await writer.wait_closed()
        assert reply == Sample(ts_ns=1000, name=messages[-1].name)

    run(body)


def test_writer_life_cycle(run: Run, tcp: Net) -> None:
    async def body() -> None:
        peer = Peer.accepting(tcp.listen(), receive_all)
        _, writer = await tcp.connect(max_frame_size=100)
        with pytest.raises(FrameTooLargeError):
            writer.send(b"x" * 101)  # refused whole; nothing written
        with pytest.raises(TypeError, match="cannot encode object: expected a struct"):
            writer.send(object())
        async with writer:
            writer.send(b"ok")
            assert not writer.is_closing()
        assert writer.is_closing()
        with pytest.raises(RuntimeError):
            writer.send(b"late")
        await writer.wait_closed()  # again: returns at once
        assert writer.get_extra_info("peername") is not None
        assert await peer.outcome() == b"\x02ok"

    run(body)


def test_a_closed_writer_answers_alike_on_every_loop(run: Run, tcp: Net) -> None:
    """Once closed, the writer's calls do what they did on the default loop, on uvloop too.

    uvloop's transport raised its own RuntimeError ("unable to perform
    operation on <TCPTransport closed=True ...>") from write_eof(), where the
    default loop's does nothing: there is no write side left to half-close.
    """

    async def body() -> None:
        peer = Peer.accepting(tcp.listen(), receive_all)
        reader, writer = await tcp.connect()
        writer.send(b"last")
        writer.close()
        writer.write_eof()  # closing: nothing left to half-close
        await writer.wait_closed()
        writer.write_eof()  # closed
        writer.flush()
        writer.abort()
        with pytest.raises(RuntimeError, match="cannot send after close"):
            writer.send(b"late")
        with pytest.raises(ConnectionResetError):
            await writer.drain()
        with pytest.raises(EOFError):
            await reader.recv()
        assert await peer.outcome() == b"\x04last"

    run(body)


def test_send_after_peer_reset(run: Run, tcp: Net) -> None:
    def reset(sock: socket.socket) -> None:
        sock.recv(1)  # reset only once the client's connect has completed
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")

    async def body() -> None:
        peer = Peer.accepting(tcp.listen(), reset)
        reader, writer = await tcp.connect()
        writer.send(b"")  # one byte on the wire: the empty frame's prefix
        await peer.outcome()
        with pytest.raises((EOFError, ConnectionResetError)):
            await reader.recv()
        with pytest.raises(ConnectionResetError):
            for _ in range(1000):  # the loss is noticed by the first write after the reset
                await writer.asend(b"x" * 1000)
                await asyncio.sleep(0.001)
        await writer.wait_closed()  # does not raise

    run(body)


def test_handler_error_closes_connection(run: Run, net: Net) -> None:
    async def body() -> None:
        errors: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: errors.append(ctx))

        async def handler(reader: FramedReader[Any], writer: FramedWriter) -> None:
            await reader.recv()
            raise ValueError("handler bug")

        async with await net.serve(handler):
            reader, writer = await net.connect()
            writer.send(b"hello")
            with pytest.raises(EOFError):
                await reader.recv()
            writer.close()
        assert [type(ctx["exception"]) for ctx in errors] == [ValueError]

    run(body)


def test_a_plain_function_handler_that_raises_closes_its_connection(run: Run, net: Net) -> None:
    """A handler that is a plain function and raises: reported, and its connection closed.

    It raises inside ``connection_made``; a connection left open there would
    stay open for good (nothing else owns it), holding its socket.
    """

    def peer(sock: socket.socket) -> bool:
        sock.settimeout(2.0)  # the server must close at once, not after a timeout
        return closed_by_peer(sock)

    async def body() -> None:
        errors: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: errors.append(ctx))

        def handler(reader: FramedReader[Any], writer: FramedWriter) -> None:
            raise ValueError("handler bug")

        server = await net.serve(handler)
        try:
            clients = [Peer(peer, net.dial()) for _ in range(3)]
            for client in clients:
                client.start()
            for client in clients:
                assert await client.outcome()
        finally:
            server.close()
        assert [type(ctx["exception"]) for ctx in errors] == [ValueError] * 3
        assert all(ctx["message"] == "Unhandled exception in client_connected_cb" for ctx in errors)

    run(body)


def test_a_handler_that_returns_closes_its_connection(run: Run, net: Net) -> None:
    """A coroutine handler returns without closing: the peer gets its frame, then the end.

    The peer never closes its side until it has seen the end, so the server's
    side must close it: a connection left open would stay open for good.
    """

    def peer(sock: socket.socket) -> bytes:
        sock.sendall(b"\x02hi")
        return receive_all(sock)

    async def body() -> bytes:
        async def handler(reader: FramedReader[Any], writer: FramedWriter) -> None:
            writer.send(await reader.recv())  # still pending when the handler returns

        server = await net.serve(handler)
        try:  # not wait_closed(): it would wait for a connection left open for good
            client = Peer(peer, net.dial())
            client.start()
            return await client.outcome()  # type: ignore[no-any-return]
        finally:
            server.close()

    assert run(body) == b"\x02hi"


def test_one_recv_at_a_time(run: Run, tcp: Net) -> None:
    async def body() -> None:
        def late(sock: socket.socket) -> None:
            time.sleep(0.2)
            sock.sendall(b"\x00")

        peer = Peer.accepting(tcp.listen(), late)
        reader, writer = await tcp.connect()
        first = asyncio.create_task(reader.recv())
        await asyncio.sleep(0.01)
        with pytest.raises(RuntimeError, match="already waiting"):
            await reader.recv()
        assert await first == b""
        assert reader.recv_nowait() is None
        await peer.outcome()
        writer.close()

    run(body)


def test_options_are_checked() -> None:
    with pytest.raises(ValueError):
        codec.aio.FramedProtocol(read_high_water=10, read_low_water=20)
    with pytest.raises(ValueError):
        codec.aio.FramedProtocol(frame_timeout=0)
    with pytest.raises(ValueError):
        codec.aio.FramedProtocol(max_frame_size=-1)


@pytest.mark.parametrize(("high", "low"), [(10, 20), (None, -1), (-4, None), (1000, 2000)], ids=str)
def test_write_limits_are_checked_before_connecting(
    run: Run, tcp: Net, high: int | None, low: int | None
) -> None:
    """Write water marks the transport would refuse are refused by the constructor.

    Refused only in connection_made, they left the connection open for good
    and open_connection returned a protocol whose writer did not exist.
    """
    with pytest.raises(ValueError):
        codec.aio.FramedProtocol(write_high_water=high, write_low_water=low)

    async def body() -> None:
        listener = tcp.listen()
        try:
            with pytest.raises(ValueError):
                await tcp.connect(write_high_water=high, write_low_water=low)
        finally:
            listener.close()

    run(body)


def test_blob_messages_up_to_the_limit(run: Run, net: Net) -> None:
    """Frames near max_frame_size, larger than the read high-water mark, get through."""
    blobs = [Blob(data=bytes([i]) * size) for i, size in enumerate((0, 1, 300_000, 1 * MiB))]

    async def body() -> None:
        async def echo(reader: FramedReader[Any], writer: FramedWriter) -> None:
            async with writer:
                async for frame in reader:
                    await writer.asend(frame)

        async with await net.serve(echo, zero_copy=True, read_high_water=64 * KiB):
            reader, writer = await net.connect(message_type=Blob, max_frame_size=2 * MiB)
            for blob in blobs:
                writer.send(blob)
            writer.write_eof()
            got = [blob async for blob in reader]
            writer.close()
        assert got == blobs

    run(body)


# --- TLS ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_contexts(socket_dir: Path) -> tuple[Any, Any]:
    """A self-signed certificate for 127.0.0.1 (made with the openssl command)."""
    ssl = pytest.importorskip("ssl")
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is not installed (needed to make a test certificate)")
    cert, key = socket_dir / "cert.pem", socket_dir / "key.pem"
    subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    client = ssl.create_default_context(cafile=str(cert))
    return server, client


def test_tls_echo(run: Run, tcp: Net, tls_contexts: tuple[Any, Any]) -> None:
    """Options other than the framing ones (here ``ssl``) go to the loop; TLS works."""
    server_context, client_context = tls_contexts
    messages = samples(2000, seed=17)

    async def body() -> None:
        async def echo(reader: FramedReader[Any], writer: FramedWriter) -> None:
            async with writer:
                async for frame in reader:
                    await writer.asend(frame)

        async with await tcp.serve(echo, ssl=server_context):
            reader, writer = await tcp.connect(message_type=Sample, ssl=client_context)
            assert writer.get_extra_info("sslcontext") is client_context
            for message in messages:
                await writer.asend(message)
            got = [await reader.recv() for _ in messages]
            writer.close()
            await writer.wait_closed()
        assert got == messages

    run(body)
