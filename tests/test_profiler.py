"""The profiler's producer side and its stream: recording, frames, packets, limits, allocations.

Frames are recorded by a real :class:`Profiler` (or built by hand for the
round trips) and read back with :class:`Receiver`. ``profiler.proto`` is
compiled by protoc: the field numbers and enum values that
:mod:`codec.profiler.packets` names are checked against it, and the stream
is parsed by upb with its classes, so the hand-written encoder and the
published schema cannot drift apart.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.resources
import itertools
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy
import pytest
from helpers.heap import measure
from helpers.profiler_streams import (
    BAD_STREAMS,
    build_frames,
    keyframe_bytes,
    registry_for_tests,
    write_stream,
)
from hypothesis import given
from hypothesis import strategies as st

from codec import DecodeError, FrameEncoder, varint
from codec.profiler import (
    COMPILED,
    Frame,
    PacketWriter,
    Profiler,
    Receiver,
    ScopeKind,
    Session,
    StreamError,
    TrackKind,
    TrackScopes,
    find_keyframe,
    packets,
    read_capture,
)
from codec.profiler._recorder import MAX_DEPTH, now_ns


class Collect:
    """A sink that keeps a copy of everything it is sent."""

    def __init__(self) -> None:
        self.data = bytearray()

    def send(self, registry: memoryview, frame: memoryview) -> None:
        self.data += registry
        self.data += frame


def stream_of(profiler: Profiler) -> tuple[Collect, bytearray]:
    """Attach a collecting sink; returns it and the keyframe it starts with."""
    sink = Collect()
    sink.data += profiler.keyframe()
    profiler.add_sink(sink)
    return sink, sink.data


def decode(data: bytes | bytearray) -> tuple[Receiver, list[Frame]]:
    receiver = Receiver()
    receiver.feed(bytes(data))
    frames = [item for item in receiver if isinstance(item, Frame)]
    receiver.feed_eof()
    return receiver, frames


def names(receiver: Receiver, track: TrackScopes) -> list[str]:
    return [receiver.registry.scope(int(i)).name for i in track.scope_id]


# --- recording -----------------------------------------------------------------------------


def test_scopes_are_recorded_in_pre_order_with_depths_and_names() -> None:
    profiler = Profiler("test")
    sink, _ = stream_of(profiler)

    @profiler.function
    def leaf() -> None:
        with profiler.scope("inner"):
            pass

    with profiler.scope("outer"):
        leaf()
        leaf()
    assert profiler.end_frame() == 1
    receiver, frames = decode(sink.data)
    (frame,) = frames
    (track,) = frame.tracks
    leaf_name = "leaf"  # the enclosing test function is left out of the name
    assert names(receiver, track) == ["outer", leaf_name, "inner", leaf_name, "inner"]
    assert track.depth.tolist() == [0, 1, 2, 1, 2]
    starts, durations = track.start_ns, track.duration_ns
    assert (durations >= 0).all()
    assert (numpy.diff(starts) >= 0).all()
    # children lie within their parent
    assert starts[1] >= starts[0] and starts[4] + durations[4] <= starts[0] + durations[0]
    assert frame.start_ns == starts[0]
    assert frame.duration_ns >= durations[0]
    leaf_def = receiver.registry.scope(int(track.scope_id[1]))
    assert leaf_def.kind == ScopeKind.FUNCTION
    assert leaf_def.function.endswith("leaf")
    assert leaf_def.file.endswith("test_profiler.py") and leaf_def.line > 0
    outer = receiver.registry.scope(int(track.scope_id[0]))
    assert outer.kind == ScopeKind.NAMED and outer.file.endswith("test_profiler.py")


def test_the_clock_is_perf_counter_ns() -> None:
    before = time.perf_counter_ns()
    now = now_ns()
    after = time.perf_counter_ns()
    assert before <= now <= after


def test_an_open_top_level_scope_goes_to_a_later_frame() -> None:
    profiler = Profiler()
    sink, _ = stream_of(profiler)
    with profiler.scope("long"):
        with profiler.scope("child"):
            pass
        assert profiler.end_frame() == 0  # nothing finished yet: no frame
    with profiler.scope("short"):
        pass
    assert profiler.end_frame() == 1
    receiver, frames = decode(sink.data)
    assert [names(receiver, t) for t in frames[0].tracks] == [["long", "child", "short"]]


def test_a_track_from_sequences_stores_each_column_in_its_dtype() -> None:
    track = TrackScopes.from_sequences(3, [1, 2**32 - 1], range(2), (5, 1), [0, 255])
    columns = (track.scope_id, track.start_ns, track.duration_ns, track.depth)
    assert [c.dtype for c in columns] == [numpy.uint32, numpy.int64, numpy.int64, numpy.uint8]
    assert [c.tolist() for c in columns] == [[1, 2**32 - 1], [0, 1], [5, 1], [0, 255]]
    assert (track.track_ref, len(track)) == (3, 2)
    with pytest.raises(OverflowError):
        TrackScopes.from_sequences(3, [1], [0], [1], [256])


def test_each_thread_is_a_track_named_after_it() -> None:
    profiler = Profiler()
    sink, _ = stream_of(profiler)

    def work() -> None:
        for _ in range(3):
            with profiler.scope("work"):
                pass

    threads = [threading.Thread(target=work, name=f"worker-{i}") for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    profiler.end_frame()
    receiver, frames = decode(sink.data)
    tracks = {receiver.registry.track(t.track_ref).name: len(t) for t in frames[0].tracks}
    assert tracks == {"worker-0": 3, "worker-1": 3, "worker-2": 3}
    assert all(track.kind == TrackKind.CPU_THREAD for track in receiver.registry.tracks)


def tracks_by_name(receiver: Receiver, frame: Frame) -> dict[str, TrackScopes]:
    return {receiver.registry.track(t.track_ref).name: t for t in frame.tracks}


def test_interleaved_asyncio_tasks_record_their_scopes_on_lanes_of_their_own() -> None:
    """Two tasks hold scopes across awaits on one thread: a enters, b enters, a leaves.

    One stack per thread recorded ``a`` as lasting until ``b`` left, with ``b``
    as its child; each task now records into a lane of its own.
    """
    profiler = Profiler()
    sink, _ = stream_of(profiler)

    async def main() -> None:
        a_open, b_open, a_closed = asyncio.Event(), asyncio.Event(), asyncio.Event()

        async def first() -> None:
            with profiler.scope("a"):
                a_open.set()
                await b_open.wait()
            a_closed.set()

        async def second() -> None:
            await a_open.wait()
            with profiler.scope("b"):
                b_open.set()
                await a_closed.wait()
                with profiler.scope("b child"):
                    pass

        await asyncio.gather(first(), second())

    with profiler.scope("thread"):
        asyncio.run(main())
    profiler.end_frame()
    receiver, (frame,) = decode(sink.data)
    tracks = tracks_by_name(receiver, frame)
    lanes = {name: names(receiver, t) for name, t in tracks.items() if "tasks" in name}
    assert sorted(lanes.values()) == [["a"], ["b", "b child"]]
    assert names(receiver, tracks[threading.current_thread().name]) == ["thread"]
    a, b = (next(t for t in frame.tracks if names(receiver, t)[0] == n) for n in "ab")
    assert b.depth.tolist() == [0, 1]
    assert (
        a.start_ns[0] <= b.start_ns[0]
        and a.start_ns[0] + a.duration_ns[0] <= b.start_ns[0] + b.duration_ns[0]
    )
    kinds = {receiver.registry.track(t.track_ref).kind for t in (a, b)}
    assert kinds == {TrackKind.ASYNC}


def test_a_done_task_gives_its_lane_to_the_next_one() -> None:
    """Lanes are pooled per thread: three rounds of four tasks register four lanes, not twelve."""
    profiler = Profiler()
    sink, _ = stream_of(profiler)

    async def one(i: int) -> None:
        with profiler.scope(f"task {i}"):
            await asyncio.sleep(0)

    async def main() -> None:
        for _ in range(3):
            await asyncio.gather(*(one(i) for i in range(4)))
            await asyncio.sleep(0)  # the lanes' done callbacks

    asyncio.run(main())
    profiler.end_frame()
    receiver, (frame,) = decode(sink.data)
    lanes = [t for t in receiver.registry.tracks if t.kind == TrackKind.ASYNC]
    assert len(lanes) == 4
    assert frame.num_scopes == 12
    assert all(len(track) == 3 for track in frame.tracks)


def test_a_task_that_ends_inside_a_scope_gives_its_lane_up() -> None:
    """A scope entered by hand and never left: its lane is not reused, its rows are dropped."""
    profiler = Profiler()
    sink, _ = stream_of(profiler)
    scope = profiler.register_scope("left open")

    async def leaves_open() -> None:
        scope().__enter__()

    async def closes() -> None:
        with profiler.scope("closed"):
            pass

    async def main() -> None:
        await asyncio.create_task(leaves_open())
        await asyncio.sleep(0)
        await asyncio.create_task(closes())

    asyncio.run(main())
    assert profiler.end_frame() == 1
    receiver, (frame,) = decode(sink.data)
    assert [names(receiver, t) for t in frame.tracks] == [["closed"]]
    assert frame.tracks[0].track_ref == receiver.registry.tracks[-1].track_ref
    assert profiler.dropped_scopes == 1


def test_recorders_of_ended_threads_are_retired_once_their_rows_are_sent() -> None:
    """200 short threads of one scope each: every scope is sent, then their memory is freed.

    Each thread's recorder (26.8 KB of columns) used to stay for the life of
    the profiler, and every later end_frame() went through it.
    """
    profiler = Profiler()
    sink, _ = stream_of(profiler)
    scope = profiler.register_scope("short")

    def one() -> None:
        with scope():
            pass

    def open_forever() -> None:
        scope().__enter__()

    def threads(count: int, target: Any = one) -> None:
        for _ in range(count):
            thread = threading.Thread(target=target)
            thread.start()
            thread.join()

    threads(5)  # warm up
    profiler.end_frame()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        threads(200)
        assert profiler.end_frame()
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # what stays is each thread's track in the registry (its name), not its columns
    assert kept < 200 * 2048, kept
    threads(1, open_forever)
    profiler.end_frame()
    assert profiler.dropped_scopes == 1
    _, frames = decode(sink.data)
    assert [f.num_scopes for f in frames] == [5, 200]


def test_rows_are_reused_after_a_frame_and_grow_while_wanted() -> None:
    profiler = Profiler()
    sink, _ = stream_of(profiler)
    scope = profiler.register_scope("s")
    with profiler.scope("root"):  # kept open: its rows may never be taken meanwhile
        for _ in range(5000):
            with scope():
                pass
    for _ in range(3):  # 3 frames of 3000 top-level scopes: rows are moved to the front
        for _ in range(3000):
            with scope():
                pass
        profiler.end_frame()
    receiver, frames = decode(sink.data)
    assert [f.num_scopes for f in frames] == [5001 + 3000, 3000, 3000]
    assert names(receiver, frames[0].tracks[0])[:2] == ["root", "s"]
    assert frames[0].tracks[0].depth[:3].tolist() == [0, 1, 1]


def test_a_full_recorder_drops_whole_scopes_and_counts_them() -> None:
    profiler = Profiler(max_rows_per_thread=4)
    sink, _ = stream_of(profiler)
    with profiler.scope("root"):
        for _ in range(2):
            with profiler.scope("a"), profiler.scope("b"):
                pass
    profiler.end_frame()
    receiver, frames = decode(sink.data)
    track = frames[0].tracks[0]
    # root, a, b, a fit; the second b is dropped with nothing half-recorded
    assert names(receiver, track) == ["root", "a", "b", "a"]
    assert profiler.dropped_scopes == 1


def test_scopes_deeper_than_the_depth_column_are_dropped() -> None:
    profiler = Profiler()
    sink, _ = stream_of(profiler)
    scope = profiler.register_scope("deep")

    def nest(levels: int) -> None:
        if levels:
            with scope():
                nest(levels - 1)

    nest(MAX_DEPTH + 5)
    profiler.end_frame()
    _, frames = decode(sink.data)
    assert frames[0].num_scopes == MAX_DEPTH
    assert int(frames[0].tracks[0].depth.max()) == MAX_DEPTH - 1
    assert profiler.dropped_scopes == 5


def test_an_end_without_a_begin_is_an_error() -> None:
    profiler = Profiler()
    scope = profiler.register_scope("s")
    with pytest.raises(RuntimeError, match="none is open"):
        scope().__exit__(None, None, None)


def test_a_disabled_profiler_records_and_sends_nothing() -> None:
    profiler = Profiler(enabled=False)
    sink, keyframe = stream_of(profiler)
    size = len(keyframe)

    @profiler.function
    def call(x: int) -> int:
        return x + 1

    with profiler.scope("off"):
        assert call(1) == 2
    assert profiler.end_frame() == 0
    assert len(sink.data) == size


def test_switching_off_inside_a_scope_still_closes_it() -> None:
    profiler = Profiler()
    sink, _ = stream_of(profiler)
    with profiler.scope("outer"):
        profiler.enabled = False
        with profiler.scope("ignored"):
            pass
        profiler.enabled = True
        with profiler.scope("inner"):
            pass
    profiler.end_frame()
    receiver, frames = decode(sink.data)
    assert names(receiver, frames[0].tracks[0]) == ["outer", "inner"]


def test_user_scopes_are_reported_on_their_own_track() -> None:
    profiler = Profiler()
    sink, _ = stream_of(profiler)
    gpu = profiler.register_track("gpu queue")
    draw, blit = profiler.register_user_scopes(["draw", "blit"])
    base = now_ns()
    profiler.report_user_scopes(
        gpu, [draw, blit, blit], [base, base + 10, base + 50], [100, 20, 30], [0, 1, 1]
    )
    assert profiler.end_frame() == 1
    receiver, frames = decode(sink.data)
    (track,) = frames[0].tracks
    assert receiver.registry.track(track.track_ref).kind == TrackKind.GPU_QUEUE
    assert names(receiver, track) == ["draw", "blit", "blit"]
    assert track.start_ns.tolist() == [base, base + 10, base + 50]
    assert frames[0].duration_ns == 100
    with pytest.raises(ValueError, match="pre-order"):
        profiler.report_user_scopes(gpu, [draw, blit], [base, base - 1], [1, 1], [0, 1])
    with pytest.raises(ValueError, match="not registered"):
        profiler.report_user_scopes(gpu, [99], [base], [1], [0])


# --- the stream ----------------------------------------------------------------------------

track_columns = st.integers(1, 60).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 5), min_size=n, max_size=n),
        st.lists(st.integers(0, 10**7), min_size=n, max_size=n),
        st.lists(st.integers(0, 10**9), min_size=n, max_size=n),
        st.lists(st.integers(0, 1), min_size=n, max_size=n),
    )
)


def assert_same_frames(got: list[Frame], want: list[Frame]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert (a.index, a.start_ns, a.duration_ns) == (b.index, b.start_ns, b.duration_ns)
        assert len(a.tracks) == len(b.tracks)
        for x, y in zip(a.tracks, b.tracks, strict=True):
            assert x.track_ref == y.track_ref
            for column in ("scope_id", "start_ns", "duration_ns", "depth"):
                assert getattr(x, column).tolist() == getattr(y, column).tolist(), column


@given(
    raw=st.lists(st.lists(track_columns, min_size=1, max_size=3), min_size=1, max_size=4),
    fixed=st.booleans(),
    base=st.integers(0, 2**62),
    chunk=st.integers(1, 64),
)
def test_frames_round_trip_split_anywhere(
    raw: list[list[Any]], fixed: bool, base: int, chunk: int
) -> None:
    frames = build_frames(raw, base)
    data = write_stream(frames, fixed=fixed)
    receiver = Receiver()
    got: list[Frame] = []
    for i in range(0, len(data), chunk):
        receiver.feed(data[i : i + chunk])
        got.extend(item for item in receiver if isinstance(item, Frame))
    receiver.feed_eof()
    assert_same_frames(got, frames)
    assert receiver.registry.scopes == registry_for_tests().scopes
    assert receiver.registry.tracks == registry_for_tests().tracks
    assert receiver.session is not None and receiver.session.fixed_columns == fixed


def test_varint_columns_are_smaller_than_fixed_ones() -> None:
    profiler = Profiler()
    sink, _ = stream_of(profiler)
    fixed = Profiler(fixed_columns=True)
    fixed_sink, _ = stream_of(fixed)
    for p in (profiler, fixed):
        for _ in range(1000):
            with p.scope("a"), p.scope("b"):
                pass
        p.end_frame()
    assert len(sink.data) < len(fixed_sink.data) / 2
    (compact,) = decode(sink.data)[1]
    (wide,) = decode(fixed_sink.data)[1]
    assert compact.num_scopes == wide.num_scopes == 2000
    for a, b in zip(compact.tracks, wide.tracks, strict=True):
        assert a.depth.tolist() == b.depth.tolist() == [0, 1] * 1000


def test_frames_before_any_keyframe_are_skipped_and_counted() -> None:
    profiler = Profiler()
    sink = Collect()
    profiler.add_sink(sink)  # no keyframe first
    with profiler.scope("a"):
        pass
    profiler.end_frame()
    receiver, frames = decode(sink.data)
    assert frames == [] and receiver.frames_skipped == 1


def test_a_new_session_starts_a_new_registry() -> None:
    first, second = Profiler("one"), Profiler("two")
    data = bytearray()
    for profiler, order in ((first, ["a", "b"]), (second, ["b", "a"])):
        sink, _ = stream_of(profiler)
        for name in order:
            with profiler.scope(name):
                pass
        profiler.end_frame()
        data += sink.data
    receiver = Receiver()
    receiver.feed(bytes(data))
    seen = [
        (item.producer_name if isinstance(item, Session) else names(receiver, item.tracks[0]))
        for item in receiver
    ]
    assert seen == ["one", ["a", "b"], "two", ["b", "a"]]


def test_a_cut_file_is_read_from_its_next_keyframe() -> None:
    profiler = Profiler()
    sink, _ = stream_of(profiler)
    for frame in range(1, 7):
        if frame == 4:
            sink.data += profiler.keyframe()
        with profiler.scope(f"frame {frame}"):
            pass
        profiler.end_frame()
    data = bytes(sink.data)
    second = find_keyframe(data, 1)
    assert second > 0 and find_keyframe(data) == 0
    for cut in range(1, second + 1):
        items = [item for _, item in read_capture(data[cut:])]
        assert [item.index for item in items if isinstance(item, Frame)] == [4, 5, 6]
    for cut in range(second + 1, len(data)):
        assert all(isinstance(item, Frame) is False for _, item in read_capture(data[cut:]))
    # and cut at the end: the last packet is lost, the rest reads
    items = [item for _, item in read_capture(data[:-3])]
    assert [item.index for item in items if isinstance(item, Frame)] == [1, 2, 3, 4, 5]


# --- bad streams -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", BAD_STREAMS)
def test_bad_streams_raise_stream_errors_with_the_packet_offset(name: str) -> None:
    data, message = BAD_STREAMS[name]
    receiver = Receiver()
    receiver.feed(data)
    with pytest.raises(StreamError, match=message) as raised:
        list(receiver)
    headers_only = name in ("bad magic", "newer major version")
    assert raised.value.offset == (0 if headers_only else len(keyframe_bytes()))


@given(st.binary(max_size=200), st.integers(0, 10))
def test_any_bytes_after_a_keyframe_raise_only_decode_errors(tail: bytes, cut: int) -> None:
    data = keyframe_bytes()[cut:] + tail
    receiver = Receiver()
    try:
        receiver.feed(data)
        list(receiver)
        receiver.feed_eof()
    except DecodeError:
        pass
    for _, item in read_capture(data):
        assert isinstance(item, Frame | Session)


# --- the schema ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def profiler_pb2() -> Any:
    """``profiler.proto`` as compiled by protoc, as a ``_pb2``-style module."""
    pytest.importorskip("grpc_tools", reason="the shipped .proto is compiled with grpcio-tools")
    from schemas import pb2_module

    return pb2_module(Path(str(importlib.resources.files("codec.profiler") / "profiler.proto")))


def test_the_packet_layout_names_every_field_of_the_schema_by_its_number(
    profiler_pb2: Any,
) -> None:
    """Each message of ``profiler.proto`` has a class of field numbers in
    :mod:`codec.profiler.packets`, named after it, holding each of its fields
    under the field's name (upper case) and nothing else."""
    layout = {
        name.removesuffix("Field"): vars(cls)
        for name, cls in vars(packets).items()
        if name.endswith("Field") and isinstance(cls, type)
    }
    messages = profiler_pb2.DESCRIPTOR.message_types_by_name
    assert sorted(layout) == sorted(messages)
    for name, message in messages.items():
        named = {key.lower(): number for key, number in layout[name].items() if key.isupper()}
        assert named == {field.name: field.number for field in message.fields}, name


def test_the_enum_values_are_the_schemas(profiler_pb2: Any) -> None:
    """The flags and the clock under the schema's names; the kinds under theirs, less the
    prefix that proto enum values share."""

    def values(enum: str) -> dict[str, int]:
        return {
            value.name: value.number
            for value in profiler_pb2.DESCRIPTOR.enum_types_by_name[enum].values
        }

    assert values("SequenceFlags") == {
        "SEQUENCE_FLAGS_UNSPECIFIED": 0,
        "STATE_CLEARED": packets.STATE_CLEARED,
        "NEEDS_STATE": packets.NEEDS_STATE,
    }
    assert values("Clock")["CLOCK_MONOTONIC"] == packets.CLOCK_MONOTONIC
    for kinds, prefix in ((ScopeKind, "SCOPE_"), (TrackKind, "TRACK_")):
        unprefixed = {
            name.removeprefix(prefix).removeprefix("KIND_"): number
            for name, number in values(kinds.__name__).items()
        }
        assert unprefixed == {kind.name: kind.value for kind in kinds}


def test_the_stream_parses_with_classes_generated_from_the_schema(profiler_pb2: Any) -> None:
    for fixed in (False, True):
        frames = build_frames([[((1, 2, 3), (5, 0, 7), (100, 3, 2), (0, 1, 0))] * 2], 10**12)
        data = write_stream(frames, fixed=fixed)
        parsed = []
        offset = 0
        while offset < len(data):
            size, offset = varint.decode(data, offset)
            parsed.append(profiler_pb2.Packet.FromString(data[offset : offset + size]))
            offset += size
        head, registry, frame = parsed
        assert head.sequence_flags == 1 and head.header.magic == 0x31465043
        assert head.header.features == ["fixed_columns" if fixed else "varint_columns"]
        assert [s.name for s in registry.registry.scopes] == [f"scope {i}" for i in range(5)]
        assert registry.registry.strings[registry.registry.scopes[1].file_iid - 1].value == (
            "game/loop.py"
        )
        assert registry.registry.next_scope_id == 6
        assert frame.sequence_flags == 2 and frame.frame.meta.num_scopes == 6
        track = frame.frame.tracks[1]
        assert track.depth == b"\x00\x01\x00"
        if fixed:
            assert list(track.scope_id_fixed) == [1, 2, 3]
            assert list(track.start_fixed) == [10**12 + 5, 10**12 + 5, 10**12 + 12]
            assert list(track.duration_fixed) == [100, 3, 2]
        else:
            assert list(track.scope_id) == [1, 2, 3]
            assert list(track.start_delta) == [0, 0, 7]  # from the frame start
            assert list(track.duration) == [100, 3, 2]
    out = FrameEncoder()
    PacketWriter(Session(1)).stats(out, 3, 30)
    stats = profiler_pb2.Packet.FromString(bytes(out.getbuffer())[1:]).stats
    assert (stats.frames_dropped_total, stats.queue_capacity) == (3, 30)


# --- allocations -----------------------------------------------------------------------------


def recording_loop(profiler: Profiler, scopes: int) -> Any:
    scope = profiler.register_scope("hot")

    def run() -> None:
        for _ in itertools.repeat(None, scopes):  # no int objects per turn
            with scope():
                pass

    return run


def allocations(body: Any, turns: int) -> int:
    """Allocation calls made by ``body(turns)`` (memray counts every one, even if freed at once)."""
    memray = pytest.importorskip("memray")
    body(turns)  # warm up
    gc.collect()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "trace.bin"
        with memray.Tracker(path, trace_python_allocators=True):
            body(turns)
        reader = memray.FileReader(path)
        try:
            count = sum(1 for _ in reader.get_allocation_records())
        finally:
            reader.close()
    return count


@pytest.mark.skipif(not COMPILED, reason="the no-allocation claim is for the compiled recorder")
def test_recording_a_scope_adds_no_allocation_to_the_with_statement() -> None:
    profiler = Profiler()
    scope = profiler.register_scope("hot")
    null = Profiler(enabled=False).scope("off")

    def recorded(turns: int) -> None:
        for _ in itertools.repeat(None, turns):
            with scope():
                pass
        profiler.end_frame()

    def empty(turns: int) -> None:
        for _ in itertools.repeat(None, turns):
            with null:
                pass

    def entered_directly(turns: int) -> None:
        for _ in itertools.repeat(None, turns):
            scope.__enter__()
            scope.__exit__(None, None, None)
        profiler.end_frame()

    # The with statement allocates its bound __enter__/__exit__ on CPython, for any
    # context manager; recording allocates nothing on top of that. (end_frame() adds a
    # constant, the same for 10,000 and 40,000 scopes.)
    added = {
        turns: allocations(recorded, turns) - allocations(empty, turns)
        for turns in (10_000, 40_000)
    }
    assert added[40_000] - added[10_000] < 60, added
    direct = {turns: allocations(entered_directly, turns) for turns in (10_000, 40_000)}
    assert direct[40_000] - direct[10_000] < 60, direct


@pytest.mark.skipif(not COMPILED, reason="the no-allocation claim is for the compiled recorder")
@pytest.mark.parametrize("style", ["registered", "by name", "decorated"])
def test_recording_keeps_no_memory_per_scope(style: str) -> None:
    profiler = Profiler()

    @profiler.function
    def call() -> None:
        return None

    def loop(count: int) -> Any:
        if style == "registered":
            return recording_loop(profiler, count)

        def run() -> None:
            scope = profiler.scope
            for _ in itertools.repeat(None, count):
                if style == "by name":
                    with scope("hot"):
                        pass
                else:
                    call()

        return run

    def warm() -> None:
        loop(200_000)()  # the columns grow to their working size
        profiler.end_frame()

    few = measure(loop(100), warmup=warm)
    profiler.end_frame()
    many = measure(loop(20_000), warmup=warm)
    # 19,900 more scopes leave nothing behind and raise the peak by nothing
    assert many[0] <= few[0] + 64 and many[1] <= few[1] + 64, (few, many)
    assert many[1] < 1024, many


@pytest.mark.skipif(not COMPILED, reason="the O(1) encode claim is for the compiled core")
@pytest.mark.parametrize("fixed", [False, True])
def test_encoding_a_frame_allocates_the_same_for_1k_and_100k_scopes(fixed: bool) -> None:
    figures = {}
    for count in (1_000, 100_000):
        profiler = Profiler(fixed_columns=fixed)
        record = recording_loop(profiler, count)
        record()
        figures[count] = measure(
            profiler.end_frame, warmup=lambda p=profiler, r=record: (p.end_frame(), r())
        )
    assert figures[100_000][1] <= figures[1_000][1] + 512, figures
    assert figures[100_000][1] < 8192, figures
