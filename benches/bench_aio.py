"""asyncio loopback throughput: codec.aio against asyncio streams + readexactly, in one run.

Run from the repository root with
``python -m pytest benches/bench_aio.py --benchmark-only``.

Each round opens one TCP connection on 127.0.0.1, sends a batch of messages
one way and ends when the receiving handler has parsed the last one (both
ends run in the same event loop, so the figure is the cost of both sides).
Two batches: 100,000 ~35-byte ``Sample`` records, and 1,000 ``Blob``
messages of 64 KiB. Times and ratios in the table are per message
(``extra_info["ops"]``); the module also prints messages/s and MB/s (wire
bytes: prefix + payload). Each round checks the count and the last message.

* baseline: ``asyncio.open_connection``; the sender does the naive
  ``_VarintBytes(len(p)) + p`` for each ``SerializeToString()`` payload, then
  ``writer.write()`` + ``await writer.drain()``; the receiver reads the prefix
  with ``readexactly(1)`` a byte at a time, then ``readexactly(n)`` and
  ``FromString``;
* codec.aio: ``open_connection``/``start_server`` with ``message_type``;
  ``await writer.asend(m)``; ``async for m in reader``. With pb2 messages,
  with structs (``codec.struct(Sample)``), and through the stream wrappers
  (``FramedReader/FramedWriter.from_stream`` over asyncio's streams).

Target (DESIGN): >= 3x the baseline's messages/s for the small messages.
Under uvloop (when installed) the same groups run again, with their own
baseline.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any

import _root  # noqa: F401  (the repository root on sys.path, for peerbench)
import peers
import pytest
from google.protobuf.internal.encoder import _VarintBytes  # type: ignore[attr-defined]
from pytest_benchmark.fixture import BenchmarkFixture

import codec
import codec.aio
from peerbench import Blob

SMALL = peers.sample_corpus(100_000)
SMALL_STRUCTS = [codec.from_pb2(message) for message in SMALL.messages]
SampleStruct = codec.struct(peers.Sample)
BLOB_SIZE = 64 * 1024
LARGE = [Blob(data=bytes([i % 251]) * BLOB_SIZE) for i in range(1000)]
LARGE_STRUCTS = [codec.from_pb2(message) for message in LARGE]
BlobStruct = codec.struct(Blob)


def _wire_size(messages: list[Any]) -> int:
    return sum(len(_VarintBytes(m.ByteSize())) + m.ByteSize() for m in messages)


WIRE_BYTES = {"small": _wire_size(SMALL.messages), "64KiB": _wire_size(LARGE)}
BATCHES: dict[str, tuple[list[Any], list[Any], Any, Any]] = {
    "small": (SMALL.messages, SMALL_STRUCTS, peers.Sample, SampleStruct),
    "64KiB": (LARGE, LARGE_STRUCTS, Blob, BlobStruct),
}
ROUNDS = {"small": 8, "64KiB": 5}

LOOPS = ["asyncio", "uvloop"]
_THROUGHPUT: list[tuple[str, str, float, float]] = []  # group, name, messages/s, MB/s


def _loop_factory(kind: str) -> Callable[[], asyncio.AbstractEventLoop]:
    if kind == "uvloop":
        if importlib.util.find_spec("uvloop") is None:
            pytest.skip("uvloop is not installed (optional): pip install uvloop")
        import uvloop  # type: ignore[import-not-found, unused-ignore]

        return uvloop.new_event_loop  # type: ignore[no-any-return, unused-ignore]
    return asyncio.new_event_loop


# --- one-way transfers: each returns (count, last message) once all are parsed --------


Transfer = Callable[[list[Any], Any], Coroutine[Any, Any, tuple[int, Any]]]


async def _serve_and_send(
    start: Callable[[Callable[..., Any]], Awaitable[asyncio.Server]],
    receive: Callable[..., Awaitable[tuple[int, Any]]],
    send: Callable[[int], Awaitable[None]],
) -> tuple[int, Any]:
    """Start a server whose handler runs ``receive``, run ``send(port)``, return what it got."""
    done: asyncio.Future[tuple[int, Any]] = asyncio.get_running_loop().create_future()

    async def handler(*streams: Any) -> None:
        try:
            done.set_result(await receive(*streams))
        except BaseException as exc:  # pragma: no cover - reported by the round
            done.set_exception(exc)
            raise

    server = await start(handler)
    port = server.sockets[0].getsockname()[1]
    async with server:
        await send(port)
        return await asyncio.wait_for(done, 120)


async def _count_all(reader: codec.aio.FramedReader[Any], writer: Any) -> tuple[int, Any]:
    """Read every message of ``reader``, close ``writer``; the count and the last message."""
    count, last = 0, None
    async for last in reader:  # noqa: B007
        count += 1
    writer.close()
    return count, last


async def baseline(messages: list[Any], message_type: Any) -> tuple[int, Any]:
    """asyncio streams, naive framing, readexactly."""

    async def receive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Any:
        count, last = 0, None
        readexactly = reader.readexactly
        while True:
            try:
                byte = await readexactly(1)
            except asyncio.IncompleteReadError:
                break
            size = shift = 0
            while True:
                size |= (byte[0] & 0x7F) << shift
                if byte[0] < 0x80:
                    break
                shift += 7
                byte = await readexactly(1)
            last = message_type.FromString(await readexactly(size))
            count += 1
        writer.close()
        return count, last

    async def send(port: int) -> None:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        for message in messages:
            payload = message.SerializeToString()
            writer.write(_VarintBytes(len(payload)) + payload)
            await writer.drain()
        writer.close()
        await writer.wait_closed()

    return await _serve_and_send(
        lambda handler: asyncio.start_server(handler, "127.0.0.1", 0), receive, send
    )


async def codec_aio(messages: list[Any], message_type: Any) -> tuple[int, Any]:
    """codec.aio.open_connection / start_server, asend, async for."""

    async def receive(reader: codec.aio.FramedReader[Any], writer: codec.aio.FramedWriter) -> Any:
        return await _count_all(reader, writer)

    async def send(port: int) -> None:
        _, writer = await codec.aio.open_connection("127.0.0.1", port)
        async with writer:
            for message in messages:
                await writer.asend(message)

    return await _serve_and_send(
        lambda handler: codec.aio.start_server(handler, "127.0.0.1", 0, message_type=message_type),
        receive,
        send,
    )


async def codec_wrapped(messages: list[Any], message_type: Any) -> tuple[int, Any]:
    """codec.aio's from_stream wrappers over asyncio.open_connection / start_server streams."""

    async def receive(stream_reader: asyncio.StreamReader, stream_writer: Any) -> Any:
        reader = codec.aio.FramedReader.from_stream(stream_reader, message_type=message_type)
        return await _count_all(reader, stream_writer)

    async def send(port: int) -> None:
        _, stream_writer = await asyncio.open_connection("127.0.0.1", port)
        async with codec.aio.FramedWriter.from_stream(stream_writer) as writer:
            for message in messages:
                await writer.asend(message)

    return await _serve_and_send(
        lambda handler: asyncio.start_server(handler, "127.0.0.1", 0), receive, send
    )


# --- benchmarks ----------------------------------------------------------------------


@pytest.fixture(params=LOOPS)
def runner(request: pytest.FixtureRequest) -> Iterator[asyncio.Runner]:
    with asyncio.Runner(loop_factory=_loop_factory(request.param)) as runner:
        yield runner


CASES = [
    ("baseline", baseline, False),
    ("codec.aio-pb2", codec_aio, False),
    ("codec.aio-struct", codec_aio, True),
    ("codec.aio-from_stream-pb2", codec_wrapped, False),
]


@pytest.mark.parametrize("batch", list(BATCHES))
@pytest.mark.parametrize(("name", "transfer", "structs"), CASES, ids=[c[0] for c in CASES])
def test_loopback(
    benchmark: BenchmarkFixture,
    runner: asyncio.Runner,
    batch: str,
    name: str,
    transfer: Transfer,
    structs: bool,
) -> None:
    pb2_messages, struct_messages, pb2_type, struct_type = BATCHES[batch]
    messages, message_type = (struct_messages, struct_type) if structs else (pb2_messages, pb2_type)
    loop_name = "uvloop" if "uvloop" in type(runner.get_loop()).__module__ else "asyncio"
    benchmark.group = f"aio-loopback-{batch}-{loop_name}"
    benchmark.extra_info["ops"] = len(messages)
    benchmark.extra_info["baseline"] = transfer is baseline
    count, last = benchmark.pedantic(  # type: ignore[no-untyped-call]
        lambda: runner.run(transfer(messages, message_type)),
        rounds=ROUNDS[batch],
        iterations=1,
        warmup_rounds=1,
    )
    assert count == len(messages)
    assert last == messages[-1]
    assert benchmark.stats is not None
    mean = benchmark.stats.stats.mean
    rate = len(messages) / mean
    megabytes = WIRE_BYTES[batch] / mean / 1e6
    benchmark.extra_info["messages_per_s"] = round(rate)
    benchmark.extra_info["MB_per_s"] = round(megabytes, 1)
    _THROUGHPUT.append((benchmark.group, name, rate, megabytes))


@pytest.fixture(scope="module", autouse=True)
def _print_throughput(request: pytest.FixtureRequest) -> Iterator[None]:
    """After the module: messages/s and MB/s of every benchmark, next to its group's baseline."""
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or not _THROUGHPUT:
        return
    bases = {g: rate for g, n, rate, _ in _THROUGHPUT if n == "baseline"}
    lines = []
    for group, name, rate, megabytes in sorted(_THROUGHPUT):
        base = bases.get(group)
        ratio = f"{rate / base:5.2f}x baseline msg/s" if base else ""
        lines.append(f"{group:28} {name:26} {rate:>10,.0f} msg/s {megabytes:>8,.1f} MB/s  {ratio}")
    # Teardown output is captured like a test's: write past the capture.
    suspend = capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()
    with suspend:
        reporter.write_line("")
        reporter.write_sep(
            "-", f"codec.aio loopback throughput, mean of rounds (COMPILED={codec.COMPILED})"
        )
        for line in lines:
            reporter.write_line(line)
