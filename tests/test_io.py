"""Tests of the blocking I/O helpers, :func:`codec.read_frames` and :func:`codec.write_frames`.

What is checked, in both builds:

* ``read_frames`` over every kind of source: a real file (buffered and raw),
  an ``os.pipe()`` (buffered and raw), a ``socket.socketpair()`` socket and
  ``io.BytesIO``, whole and trickled (written one byte at a time by the other
  end, and read one byte at a time with ``chunk_size=1``): raw frames and
  pb2 and struct messages, equal to what was written;
* the decoder's errors through it: a stream cut inside a body or a prefix is
  a ``TruncatedError`` (with its offset and ``missing``) after every frame
  before the cut; an oversized frame is a ``FrameTooLargeError`` after the
  frames before it, raised while the writer is still holding the body back
  (so it was not read first); a malformed prefix is a ``VarintError``; an
  empty stream yields nothing; a non-blocking source with no data is a
  ``BlockingIOError``;
* ``write_frames`` to a file, a pipe, a socket and ``BytesIO``: the bytes
  are exactly the frames of the messages (structs, pb2 messages, raw
  payloads), the count is returned, batches are written as ``batch_size``
  says, partial writes of a raw sink are resumed, and whatever stops it
  (an encode error, an oversized frame, the iterator's own error) leaves the
  frames of the messages before it written; an error of the sink (a full
  disk, a reset peer under a Python ``sendall`` that sends slices, as
  ``ssl.SSLSocket``'s does) reaches the caller as the sink raised it, not
  hidden under a ``BufferError``, and the sink is not written to again;
* bad sources, sinks and options are ``TypeError``/``ValueError`` at the
  call, before anything is read;
* constant memory (tracemalloc): reading 100,000 frames (3.7 MB, from
  ``BytesIO`` and a raw file) and writing as many peaks no higher than for
  10x fewer, and below 512 KiB; reading 30,000 structs peaks below that too.
"""

from __future__ import annotations

import errno
import io
import os
import socket
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers.peerbench import Sample, samples

import codec
from codec import FrameTooLargeError, varint
from codec.errors import TruncatedError, VarintError

KiB = 1024
SampleStruct = codec.struct(Sample)
MESSAGES = samples(50)
STRUCTS = [codec.from_pb2(message) for message in MESSAGES]
PAYLOADS = [message.SerializeToString() for message in MESSAGES]


def frames_of(payloads: list[bytes]) -> bytes:
    return b"".join(varint.encode(len(payload)) + payload for payload in payloads)


STREAM = frames_of(PAYLOADS)
OFFSETS = [len(frames_of(PAYLOADS[:i])) for i in range(len(PAYLOADS))]


def plain(frame: Any) -> Any:
    return bytes(frame) if isinstance(frame, memoryview) else frame


# --- sources ------------------------------------------------------------------------


def _feeder(
    write: Callable[[bytes], Any], close: Callable[[], None], data: bytes, trickle: bool
) -> threading.Thread:
    """A thread writing ``data`` (one byte at a time when ``trickle``), then closing.

    A reader that stopped at an error may close its end before the last bytes.
    """

    def run() -> None:
        try:
            if trickle:
                for i in range(len(data)):
                    write(data[i : i + 1])
            else:
                write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@contextmanager
def opened(kind: str, data: bytes, trickle: bool, tmp_path: Path) -> Iterator[Any]:
    """A source of ``kind`` holding ``data``; for pipes and sockets, a thread writes it."""
    if kind in ("file", "raw-file"):
        path = tmp_path / "stream.bin"
        path.write_bytes(data)
        with open(path, "rb", buffering=0 if kind == "raw-file" else -1) as file:
            yield file
    elif kind == "bytesio":
        yield io.BytesIO(data)
    elif kind in ("pipe", "raw-pipe"):
        r, w = os.pipe()
        writer = open(w, "wb", buffering=0)  # noqa: SIM115
        with open(r, "rb", buffering=0 if kind == "raw-pipe" else -1) as reader:
            thread = _feeder(writer.write, writer.close, data, trickle)
            yield reader
        thread.join(30)
    elif kind == "socket":
        ours, theirs = socket.socketpair()
        ours.settimeout(30)  # a hang fails the test instead of the run
        with ours:
            thread = _feeder(theirs.sendall, theirs.close, data, trickle)
            yield ours
        thread.join(30)
    else:
        raise AssertionError(kind)


SOURCES = ["file", "raw-file", "bytesio", "pipe", "raw-pipe", "socket"]
# (trickled by the writer, chunk_size): whole, the writer trickling, the reader trickling.
FEEDS = {"whole": (False, 64 * KiB), "trickled": (True, 64 * KiB), "chunk-1": (False, 1)}


@pytest.fixture(params=SOURCES)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=list(FEEDS))
def feed(request: pytest.FixtureRequest) -> tuple[bool, int]:
    return FEEDS[request.param]


def read_all(
    kind: str, data: bytes, feed: tuple[bool, int], tmp_path: Path, **options: Any
) -> tuple[list[Any], Exception | None]:
    """Every frame ``read_frames`` yields from ``data``, and the error that ended it if any."""
    trickle, chunk_size = feed
    out: list[Any] = []
    with opened(kind, data, trickle, tmp_path) as source:
        try:
            for frame in codec.read_frames(source, chunk_size=chunk_size, **options):
                out.append(plain(frame))
        except Exception as exc:
            return out, exc
    return out, None


# --- read_frames ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message_type", "expected"),
    [(None, PAYLOADS), (Sample, MESSAGES), (SampleStruct, STRUCTS)],
    ids=["frames", "pb2", "struct"],
)
def test_read_frames(
    kind: str, feed: tuple[bool, int], tmp_path: Path, message_type: Any, expected: list[Any]
) -> None:
    assert read_all(kind, STREAM, feed, tmp_path, message_type=message_type) == (expected, None)


def test_frames_are_views_of_the_window(tmp_path: Path) -> None:
    frames = list(codec.read_frames(io.BytesIO(STREAM)))
    assert all(isinstance(frame, memoryview) for frame in frames)
    assert [bytes(frame) for frame in frames] == PAYLOADS  # held views stay valid


def test_an_empty_stream_yields_nothing(kind: str, tmp_path: Path) -> None:
    assert read_all(kind, b"", FEEDS["whole"], tmp_path) == ([], None)


@pytest.mark.parametrize(
    ("cut", "message", "missing"),
    [
        pytest.param(10, "stream ended inside a frame body", None, id="body"),
        pytest.param(0, "stream ended inside a frame prefix", None, id="prefix"),
    ],
)
def test_a_cut_stream_is_truncated_after_the_frames_before_it(
    kind: str, feed: tuple[bool, int], tmp_path: Path, cut: int, message: str, missing: Any
) -> None:
    last = OFFSETS[-1]
    data = STREAM[: last + cut] if cut else STREAM[:last] + b"\x80"  # a prefix wanting more
    frames, error = read_all(kind, data, feed, tmp_path, message_type=Sample)
    assert frames == MESSAGES[:-1]
    assert isinstance(error, TruncatedError)
    assert (error.message, error.offset) == (message, last)
    if cut:
        assert error.missing == len(PAYLOADS[-1]) + 1 - cut


def test_a_malformed_prefix_is_a_varint_error(kind: str, tmp_path: Path) -> None:
    frames, error = read_all(kind, STREAM + b"\xff" * 11, FEEDS["trickled"], tmp_path)
    assert frames == PAYLOADS
    assert isinstance(error, VarintError)
    assert error.offset == len(STREAM)


@pytest.mark.parametrize("kind", ["bytesio", "file", "pipe", "socket"])
def test_an_oversized_frame_is_refused_after_the_frames_before_it(
    kind: str, feed: tuple[bool, int], tmp_path: Path
) -> None:
    limit = max(map(len, PAYLOADS))
    data = STREAM + varint.encode(limit + 1) + bytes(limit + 1)
    frames, error = read_all(kind, data, feed, tmp_path, max_frame_size=limit)
    assert frames == PAYLOADS
    assert isinstance(error, FrameTooLargeError)
    assert (error.size, error.limit, error.offset) == (limit + 1, limit, len(STREAM))


@pytest.mark.parametrize("kind", ["pipe", "socket"])
def test_an_oversized_prefix_is_refused_before_its_body_is_sent(kind: str) -> None:
    """The writer holds the body back until the reader has refused the frame: no read waits."""
    refused = threading.Event()
    if kind == "pipe":
        r, w = os.pipe()
        source: Any = open(r, "rb", buffering=0)  # noqa: SIM115
        writer: Any = open(w, "wb", buffering=0)  # noqa: SIM115
        send = writer.write
    else:
        source, writer = socket.socketpair()
        source.settimeout(30)
        send = writer.sendall

    refused_in_time = []

    def write() -> None:
        send(b"\x01a" + varint.encode(1001))
        refused_in_time.append(refused.wait(30))  # False: the reader waited for the body
        send(b"x" * 1001)
        writer.close()

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    frames = codec.read_frames(source, max_frame_size=1000)
    try:
        assert bytes(next(frames)) == b"a"
        with pytest.raises(FrameTooLargeError) as info:
            next(frames)
        assert (info.value.size, info.value.offset) == (1001, 2)
    finally:
        refused.set()
        thread.join(30)
        source.close()
    assert refused_in_time == [True]


def test_a_non_blocking_source_without_data_is_a_blocking_error() -> None:
    r, w = os.pipe()
    os.set_blocking(r, False)
    with open(r, "rb", buffering=0) as source, open(w, "wb", buffering=0) as writer:
        writer.write(b"\x01a\x02")
        frames = codec.read_frames(source)
        assert bytes(next(frames)) == b"a"
        with pytest.raises(BlockingIOError, match="the source is non-blocking and has no data"):
            next(frames)


# --- write_frames -------------------------------------------------------------------------


MIXED = [STRUCTS[0], MESSAGES[1], PAYLOADS[2], bytearray(PAYLOADS[3]), memoryview(PAYLOADS[4])]
MIXED_STREAM = frames_of(PAYLOADS[:5])


@contextmanager
def sink_of(kind: str, tmp_path: Path) -> Iterator[tuple[Any, Callable[[], bytes]]]:
    """A sink of ``kind`` and a function returning what reached it (after the sink is closed)."""
    if kind == "bytesio":
        buffer = io.BytesIO()
        yield buffer, buffer.getvalue
    elif kind in ("file", "raw-file"):
        path = tmp_path / "out.bin"
        with open(path, "wb", buffering=0 if kind == "raw-file" else -1) as file:
            yield file, path.read_bytes
    elif kind in ("pipe", "socket"):
        received = bytearray()
        if kind == "pipe":
            r, w = os.pipe()
            reader: Any = open(r, "rb", buffering=0)  # noqa: SIM115
            sink: Any = open(w, "wb", buffering=0)  # noqa: SIM115
        else:
            reader, sink = socket.socketpair()
            reader.settimeout(30)
        read = reader.read if kind == "pipe" else reader.recv

        def drain() -> None:
            while chunk := read(64 * KiB):
                received.extend(chunk)

        thread = threading.Thread(target=drain, daemon=True)
        thread.start()

        def result() -> bytes:
            thread.join(30)
            reader.close()
            return bytes(received)

        with sink:
            yield sink, result
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["bytesio", "file", "raw-file", "pipe", "socket"])
@pytest.mark.parametrize("batch_size", [0, 100, 64 * KiB])
def test_write_frames(kind: str, batch_size: int, tmp_path: Path) -> None:
    with sink_of(kind, tmp_path) as (sink, written):
        assert codec.write_frames(sink, iter(MIXED * 20), batch_size=batch_size) == 100
    assert written() == MIXED_STREAM * 20


def test_write_frames_then_read_frames_over_a_pipe() -> None:
    r, w = os.pipe()
    with open(r, "rb") as source, open(w, "wb") as sink:
        thread = threading.Thread(
            target=lambda: (codec.write_frames(sink, STRUCTS * 40, batch_size=0), sink.close())
        )
        thread.start()
        assert list(codec.read_frames(source, SampleStruct)) == STRUCTS * 40
        thread.join(30)


class Recording(io.RawIOBase):
    """A raw sink that takes at most ``most`` bytes per write, and notes each write's size."""

    def __init__(self, most: int = 1 << 30) -> None:
        self.data = bytearray()
        self.writes: list[int] = []
        self.most = most

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        taken = bytes(b[: self.most])
        self.data += taken
        self.writes.append(len(taken))
        return len(taken)


def test_frames_go_out_in_batches() -> None:
    frame_size = len(MIXED_STREAM) // 5  # about: the records are alike
    sink = Recording()
    codec.write_frames(sink, MIXED * 400, batch_size=4 * KiB)
    assert sink.data == MIXED_STREAM * 400
    assert all(size >= 4 * KiB for size in sink.writes[:-1])
    assert all(size < 4 * KiB + 2 * frame_size for size in sink.writes)
    one_each = Recording()
    codec.write_frames(one_each, MIXED, batch_size=0)
    assert one_each.writes == [len(frames_of([payload])) for payload in PAYLOADS[:5]]


def test_partial_writes_are_resumed() -> None:
    sink = Recording(most=3)
    assert codec.write_frames(sink, MIXED) == 5
    assert sink.data == MIXED_STREAM
    assert len(sink.writes) == -(-len(MIXED_STREAM) // 3)


def test_a_full_non_blocking_sink_is_a_blocking_error() -> None:
    class Full(Recording):
        def write(self, b: Any) -> None:  # type: ignore[override]
            return None  # what a non-blocking raw stream returns when it takes nothing

    with pytest.raises(BlockingIOError, match="the sink is non-blocking and is full"):
        codec.write_frames(Full(), MIXED)


def _failing_messages() -> Iterator[Any]:
    yield from MIXED
    raise LookupError("the source of the messages failed")


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        pytest.param([*MIXED, 42, *MIXED], TypeError, id="not-a-message"),
        pytest.param([*MIXED, bytes(1001), *MIXED], FrameTooLargeError, id="too-large"),
        pytest.param(_failing_messages(), LookupError, id="iterator-error"),
    ],
)
def test_an_error_leaves_the_frames_before_it_written(messages: Any, error: type) -> None:
    sink = io.BytesIO()
    with pytest.raises(error):
        codec.write_frames(sink, messages, max_frame_size=1000, batch_size=64 * KiB)
    assert sink.getvalue() == MIXED_STREAM


class FailingSink(Recording):
    """A raw sink that takes ``room`` bytes, then fails as a full disk does.

    Like any Python sink, the frame of the failing ``write`` (and so the slice
    it was handed) stays alive in the traceback of the error.
    """

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = room

    def write(self, b: Any) -> int:
        if len(self.data) + len(b) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(b)


class ResetSocket:
    """A sink whose Python ``sendall`` sends slices (as ``ssl.SSLSocket``'s does), then is reset."""

    def __init__(self, room: int) -> None:
        self.data = bytearray()
        self.room = room

    def send(self, data: memoryview) -> int:
        if len(self.data) >= self.room:
            raise ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
        taken = bytes(data[: min(100, self.room - len(self.data))])
        self.data += taken
        return len(taken)

    def sendall(self, data: memoryview) -> None:
        with memoryview(data) as view, view.cast("B") as byte_view:
            count = 0
            while count < len(byte_view):
                count += self.send(byte_view[count:])


@pytest.mark.parametrize("batch_size", [0, 256, 64 * KiB], ids=["frame", "batch", "end"])
@pytest.mark.parametrize(
    ("make_sink", "error", "code"),
    [
        pytest.param(FailingSink, OSError, errno.ENOSPC, id="enospc"),
        pytest.param(ResetSocket, ConnectionResetError, errno.ECONNRESET, id="reset"),
    ],
)
def test_the_sinks_error_reaches_the_caller(
    make_sink: Callable[[int], Any], error: type, code: int, batch_size: int
) -> None:
    room = len(MIXED_STREAM) * 3 + 7
    sink = make_sink(room)
    with pytest.raises(error) as info:
        codec.write_frames(sink, MIXED * 10, batch_size=batch_size)
    assert type(info.value) is error
    assert isinstance(info.value, OSError)
    assert info.value.errno == code
    assert info.value.__context__ is None  # nothing raised over it, nothing under it
    assert len(sink.data) <= room
    # the sink was not written again after it failed
    failed_at = len(sink.data)
    assert bytes(sink.data) == (MIXED_STREAM * 10)[:failed_at]


def test_a_sink_error_after_an_encode_error_is_the_sinks() -> None:
    sink = FailingSink(room=0)
    with pytest.raises(OSError, match="No space left") as info:
        codec.write_frames(sink, [*MIXED, 42])
    assert isinstance(info.value.__context__, TypeError)  # what stopped the run, under it


# --- arguments ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "hint"),
    [
        pytest.param(STREAM, "(use an io.BytesIO for bytes in memory)", id="bytes"),
        pytest.param(io.StringIO(), "(a text stream: use its binary buffer", id="text"),
        pytest.param(42, "", id="int"),
    ],
)
def test_a_bad_source_is_a_type_error_at_the_call(source: Any, hint: str) -> None:
    with pytest.raises(TypeError) as info:
        codec.read_frames(source)
    text = str(info.value)
    assert text.startswith(
        "source must be a binary file, pipe or socket with readinto() or recv_into(), not "
    )
    assert hint in text


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"chunk_size": 0}, ValueError, "chunk_size must be between 1 and "),
        ({"chunk_size": "64KiB"}, TypeError, "chunk_size must be an int"),
        ({"max_frame_size": "4MiB"}, TypeError, "max_frame_size must be an int"),
        ({"message_type": int}, TypeError, "message_type must be a protobuf message class"),
        ({"strict": "yes"}, TypeError, "strict must be True or False"),
        ({"copy": 1}, TypeError, "copy must be True or False"),
    ],
)
def test_bad_read_options_are_refused_before_anything_is_read(
    options: dict[str, Any], error: type, message: str
) -> None:
    source = io.BytesIO(STREAM)
    with pytest.raises(error) as info:
        codec.read_frames(source, **options)
    assert str(info.value).startswith(message)
    assert source.tell() == 0


@pytest.mark.parametrize(
    ("sink", "options", "error", "message"),
    [
        (io.StringIO(), {}, TypeError, "sink must be a binary file, pipe or socket"),
        (bytearray(), {}, TypeError, "sink must be a binary file, pipe or socket"),
        (io.BytesIO(), {"batch_size": -1}, ValueError, "batch_size must be between 0 and "),
        (io.BytesIO(), {"max_frame_size": 1.5}, TypeError, "max_frame_size must be an int"),
    ],
)
def test_bad_write_arguments(sink: Any, options: dict[str, Any], error: type, message: str) -> None:
    taken = []

    def messages() -> Iterator[Any]:
        taken.append(True)
        yield from MIXED

    with pytest.raises(error) as info:
        codec.write_frames(sink, messages(), **options)
    assert str(info.value).startswith(message)
    assert not taken


# --- memory ---------------------------------------------------------------------------------


def _peak(action: Callable[[int], object], count: int) -> int:
    """The tracemalloc peak of ``action(count)``, after a smaller warm-up run."""
    action(100)  # code objects, caches, the window's first growth
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        action(count)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


FRAME = frames_of(PAYLOADS[:1])  # 37 bytes
STREAMS = {
    count: FRAME * count for count in (100, 10_000, 30_000, 100_000)
}  # made before measuring
BOUND = 512 * KiB  # a window of 64 KiB reads, grown twice, and one more held by a frame


@pytest.mark.parametrize("kind", ["bytesio", "raw-file"])
def test_reading_takes_constant_memory(kind: str, tmp_path: Path) -> None:
    """10x more frames (3.7 MB) cost no more memory than 10,000 (370 KB) do: one window."""
    for count, data in STREAMS.items():
        (tmp_path / f"{count}.bin").write_bytes(data)

    def read(count: int) -> None:
        if kind == "bytesio":
            source: Any = io.BytesIO(STREAMS[count])  # shares the bytes: read, not copied
        else:
            source = open(tmp_path / f"{count}.bin", "rb", buffering=0)  # noqa: SIM115
        with source:
            for _ in codec.read_frames(source):
                pass

    few, many = _peak(read, 10_000), _peak(read, 100_000)
    assert many <= few + 16 * KiB
    assert many < BOUND


def test_reading_structs_takes_constant_memory() -> None:
    def read(count: int) -> None:
        for _ in codec.read_frames(io.BytesIO(STREAMS[count]), SampleStruct):
            pass

    assert len(STREAMS[30_000]) > 2 * BOUND
    assert _peak(read, 30_000) < BOUND


def test_writing_takes_constant_memory() -> None:
    with open(os.devnull, "wb", buffering=0) as sink:

        def write(count: int) -> None:
            codec.write_frames(sink, (PAYLOADS[0] for _ in range(count)))

        few, many = _peak(write, 10_000), _peak(write, 100_000)
    assert many <= few + 16 * KiB
    assert many < BOUND
