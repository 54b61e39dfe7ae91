"""Tests of the Perfetto export in :mod:`codec.profiler.perfetto`.

The exported bytes are parsed with Perfetto's own classes (the ``perfetto``
package's ``perfetto_trace_pb2``), which must find no field they do not
know, then read back the way Perfetto's trace processor reads them: packets
in file order, per sequence its interned entries, the defaults of its first
packet and its clocks (an incremental clock's timestamps summed from its
snapshot, then moved onto ``BOOTTIME``), ``TYPE_SLICE_BEGIN``/
``TYPE_SLICE_END`` paired per track with a stack. What is checked:

* every scope of the frames is one slice on its track, with its name, source
  location, absolute begin and end times and parent; every frame is a slice
  of the ``frames`` track; events of a track are in time order;
* the sequence rules: a sequence's first packet clears its state and sets
  its defaults and clock, no later one clears it again, every iid is
  defined before its first use and never defined twice; descriptors need no
  state;
* the ``perfetto_trace.proto`` the package ships names each field as
  Perfetto's own protos do, under the same number;
* tracks: a process per session, a thread track per CPU thread with an OS
  thread id, named child tracks for the rest;
* a capture cut at both ends exports the frames it holds; a long export
  writes in chunks and its peak memory does not grow with its length;
* bad input raises the library's errors.
"""

from __future__ import annotations

import gc
import importlib.resources
import io
import os
import tracemalloc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.nesting import nested_track, pre_order
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("grpc_tools", reason="the shipped .proto is compiled with grpcio-tools")

from google.protobuf.unknown_fields import UnknownFieldSet
from perfetto.protos.perfetto.trace import perfetto_trace_pb2
from schemas import pb2_module

from codec import EncodeError, FrameEncoder
from codec.profiler import (
    Frame,
    PacketWriter,
    PerfettoStats,
    PerfettoWriter,
    Receiver,
    Registry,
    ScopeKind,
    Session,
    StreamError,
    TrackKind,
    TrackScopes,
    read_capture,
    write_perfetto_capture,
    write_perfetto_trace,
)
from codec.profiler.perfetto import (
    SEQ_INCREMENTAL_STATE_CLEARED,
    TYPE_SLICE_BEGIN,
    TYPE_SLICE_END,
)

PROTO = Path(str(importlib.resources.files("codec.profiler") / "perfetto_trace.proto"))
perfetto_pb2 = pb2_module(PROTO)
BOOTTIME = 6

T0 = 1_700_000_000_000_000_000


# --- frames ------------------------------------------------------------------------------


def make_frame(index: int, tracks: Sequence[TrackScopes], empty_start: int = T0) -> Frame:
    """A frame from its earliest start to its latest end (at ``empty_start`` if empty)."""
    kept = [t for t in tracks if len(t)]
    start = min((int(t.start_ns[0]) for t in kept), default=empty_start)
    end = max((int((t.start_ns + t.duration_ns).max()) for t in kept), default=start)
    return Frame(index, start, end - start, tuple(tracks))


def sample_registry() -> Registry:
    registry = Registry()
    registry.add_scope("frame", ScopeKind.NAMED, "", "game/loop.py", 12)
    registry.add_scope("update", ScopeKind.FUNCTION, "Game.update", "game/loop.py", 20)
    registry.add_scope('draw <mesh> & "quote" é', ScopeKind.FUNCTION, "draw", "game/render.py", 0)
    registry.add_scope("no location")
    registry.add_scope("frame", ScopeKind.NAMED, "", "game/other.py", 7)  # a name used twice
    registry.add_track("main", TrackKind.CPU_THREAD, 4242)
    registry.add_track("worker", TrackKind.CPU_THREAD, 4243)
    registry.add_track("main tasks 1", TrackKind.ASYNC, 4242)
    registry.add_track("gpu", TrackKind.GPU_QUEUE)
    registry.add_track("main again", TrackKind.CPU_THREAD, 4242)  # a thread id reused
    return registry


pre_orders = st.lists(st.integers(0, 4), max_size=40).map(pre_order)


@st.composite
def frames_of(draw: Any, registry: Registry) -> list[Frame]:
    """Up to 4 frames of nested scopes on random tracks of ``registry``, times ascending."""
    frames = []
    now = T0
    for index in range(1, draw(st.integers(1, 4)) + 1):
        tracks = []
        refs = draw(st.lists(st.integers(1, len(registry.tracks)), unique=True, max_size=4))
        for ref in refs:
            depths = draw(pre_orders)
            ids = draw(st.lists(st.integers(1, len(registry.scopes)), min_size=len(depths),
                                max_size=len(depths)))  # fmt: skip
            gaps = draw(st.lists(st.integers(0, 10**6), min_size=1, max_size=8))
            tracks.append(nested_track(ref, ids, depths, now, gaps))
        frame = make_frame(index, tracks, now)
        frames.append(frame)
        now = frame.start_ns + frame.duration_ns + 1
    return frames


# --- reading a trace back as Perfetto does ---------------------------------------------------


@dataclass
class Slice:
    name: str
    begin: int
    end: int
    depth: int
    location: tuple[str, str, int] | None
    annotations: dict[str, int]


@dataclass
class Trace:
    packets: list[Any]
    tracks: dict[int, Any]  # uuid -> TrackDescriptor
    slices: dict[int, list[Slice]]  # track uuid -> slices in BEGIN order (pre-order)

    def track_named(self, name: str) -> int:
        (uuid,) = [u for u, t in self.tracks.items() if t.name == name]
        return uuid


@dataclass
class Sequence_:
    """What one ``trusted_packet_sequence_id`` has said so far, as the trace processor keeps it."""

    names: dict[int, str] = field(default_factory=dict)
    annotation_names: dict[int, str] = field(default_factory=dict)
    locations: dict[int, tuple[str, str, int]] = field(default_factory=dict)
    track_uuid: int | None = None  # TrackEventDefaults
    clock_id: int | None = None  # TracePacketDefaults.timestamp_clock_id
    incremental: dict[int, int] = field(default_factory=dict)  # clock id -> its last value
    to_boottime: dict[int, int] = field(default_factory=dict)  # clock id -> offset


def _unknown(message: Any) -> bool:
    """Whether ``message``, or a message it holds, has fields its class does not know."""
    if len(UnknownFieldSet(message)):
        return True
    for field_descriptor, value in message.ListFields():
        if field_descriptor.message_type is not None:
            held = value if field_descriptor.is_repeated else [value]
            if any(_unknown(item) for item in held):
                return True
    return False


def read_trace(data: bytes, *, ordered: bool = True) -> Trace:
    """Parse ``data`` with Perfetto's own classes and replay it as its trace processor does.

    Per sequence: interned entries, the defaults of its first packet, and its
    clocks, an incremental clock's timestamps summed from its snapshot. Checks
    the sequence rules on the way (see the module's docstring).
    """
    packets = list(perfetto_trace_pb2.Trace.FromString(data).packet)
    assert not any(_unknown(packet) for packet in packets), "a field Perfetto does not know"
    sequences: dict[int, Sequence_] = {}
    tracks: dict[int, Any] = {}
    open_slices: dict[int, list[Slice]] = {}
    slices: dict[int, list[Slice]] = {}
    last_time: dict[int, int] = {}
    for packet in packets:
        assert packet.HasField("trusted_packet_sequence_id")
        if packet.HasField("track_descriptor"):
            assert not packet.sequence_flags, "a descriptor needs no state"
            descriptor = packet.track_descriptor
            assert descriptor.uuid not in tracks
            if descriptor.HasField("parent_uuid"):
                assert descriptor.parent_uuid in tracks, "a parent is described first"
            tracks[descriptor.uuid] = descriptor
            continue
        number = packet.trusted_packet_sequence_id
        if packet.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED:
            assert number not in sequences, "each sequence is cleared once, first"
            assert packet.first_packet_on_sequence
            defaults = packet.trace_packet_defaults
            sequences[number] = Sequence_(
                track_uuid=defaults.track_event_defaults.track_uuid,
                clock_id=defaults.timestamp_clock_id,
            )
        else:
            assert number in sequences, "a sequence starts with its state"
            assert not packet.sequence_flags, "and keeps it: no loss to recover from"
        sequence = sequences[number]
        if packet.HasField("clock_snapshot"):
            clocks = {c.clock_id: c for c in packet.clock_snapshot.clocks}
            boottime = clocks[BOOTTIME].timestamp
            for clock_id, clock in clocks.items():
                if clock.is_incremental:
                    assert clock_id >= 64, "an incremental clock is the sequence's own"
                    sequence.incremental[clock_id] = clock.timestamp
                    sequence.to_boottime[clock_id] = boottime - clock.timestamp
        interned = packet.interned_data
        for table, entries, value in (
            (sequence.names, interned.event_names, lambda e: e.name),
            (sequence.annotation_names, interned.debug_annotation_names, lambda e: e.name),
            (sequence.locations, interned.source_locations,
             lambda e: (e.file_name, e.function_name, e.line_number)),
        ):  # fmt: skip
            for entry in entries:
                assert entry.iid > 0, "iid 0 is invalid"
                assert entry.iid not in table, f"iid {entry.iid} defined twice"
                table[entry.iid] = value(entry)
        if not packet.HasField("track_event"):
            continue
        clock_id = packet.timestamp_clock_id or sequence.clock_id
        assert clock_id in sequence.incremental, "timestamps on the sequence's clock"
        sequence.incremental[clock_id] += packet.timestamp
        time = sequence.incremental[clock_id] + sequence.to_boottime[clock_id]
        event = packet.track_event
        uuid = event.track_uuid if event.HasField("track_uuid") else sequence.track_uuid
        assert uuid in tracks, "a track is described before its events"
        assert time >= last_time.get(uuid, 0) or not ordered, "events in time order"
        last_time[uuid] = time
        stack = open_slices.setdefault(uuid, [])
        if event.type == TYPE_SLICE_BEGIN:
            if event.HasField("name_iid"):
                assert event.name_iid in sequence.names, "a name is interned before its use"
                name = sequence.names[event.name_iid]
            else:
                name = event.name
            location = None
            if event.HasField("source_location_iid"):
                assert event.source_location_iid in sequence.locations
                location = sequence.locations[event.source_location_iid]
            annotations = {}
            for annotation in event.debug_annotations:
                assert annotation.name_iid in sequence.annotation_names
                annotations[sequence.annotation_names[annotation.name_iid]] = annotation.uint_value
            opened = Slice(name, time, -1, len(stack), location, annotations)
            slices.setdefault(uuid, []).append(opened)
            stack.append(opened)
        else:
            assert event.type == TYPE_SLICE_END
            assert stack, "an END without a BEGIN"
            stack.pop().end = time
    assert not any(open_slices.values()), "every slice is closed"
    return Trace(packets, tracks, slices)


def expected_slices(
    frames: Sequence[Frame], registry: Registry, track_ref: int
) -> list[tuple[str, int, int, int, tuple[str, str, int] | None]]:
    rows = []
    for frame in frames:
        for track in frame.tracks:
            if track.track_ref != track_ref:
                continue
            for scope_id, start, duration, depth in zip(
                track.scope_id.tolist(), track.start_ns.tolist(), track.duration_ns.tolist(),
                track.depth.tolist(), strict=True,
            ):  # fmt: skip
                scope = registry.scope(scope_id)
                location = (scope.file, scope.function, scope.line) if scope.file else None
                rows.append((scope.name, start, start + duration, depth, location))
    return rows


def exported(frames: Sequence[Frame], registry: Registry, **options: Any) -> bytes:
    out = io.BytesIO()
    with PerfettoWriter(out, **options) as trace:
        for frame in frames:
            trace.add_frame(frame, registry)
    return out.getvalue()


# --- the format --------------------------------------------------------------------------


def _messages(descriptor: Any) -> Iterator[Any]:
    yield descriptor
    for nested in descriptor.nested_types:
        yield from _messages(nested)


def test_the_shipped_proto_numbers_each_field_as_perfetto_does() -> None:
    ours = perfetto_pb2.Trace.DESCRIPTOR.file
    theirs = perfetto_trace_pb2.Trace.DESCRIPTOR.file.pool
    checked = 0
    for top in ours.message_types_by_name.values():
        for message in _messages(top):
            official = theirs.FindMessageTypeByName(message.full_name)
            for ours_field in message.fields:
                number = official.fields_by_name[ours_field.name].number
                assert number == ours_field.number, ours_field.full_name
                checked += 1
    assert checked > 50


def test_a_slice_costs_under_28_bytes() -> None:
    """Incremental timestamps, per-sequence defaults and interning: about 26 bytes a slice,
    where absolute timestamps and a track uuid in every event took 45 to 49."""
    registry = sample_registry()
    ids, depths, gaps = [2, 3, 1] * 50, [0, 1, 2] * 50, [300, 5_000, 90]
    frames = [
        make_frame(index, [nested_track(1, ids, depths, T0 + index * 10**7, gaps)])
        for index in range(20)
    ]
    size = len(exported(frames, registry))
    slices = sum(len(track) for frame in frames for track in frame.tracks) + len(frames)
    assert size / slices < 28, size / slices


# --- slices, frames and tracks ----------------------------------------------------------------


@settings(max_examples=40)
@given(st.data())
def test_every_scope_is_a_slice_with_its_name_location_times_and_nesting(data: Any) -> None:
    registry = sample_registry()
    frames = data.draw(frames_of(registry))
    trace = read_trace(exported(frames, registry))
    uuids = {}
    for ref, definition in enumerate(registry.tracks, 1):
        matching = [u for u, t in trace.tracks.items() if t.name == definition.name]
        uuids[ref] = matching[0] if matching else None
    for ref in range(1, len(registry.tracks) + 1):
        want = expected_slices(frames, registry, ref)
        got = [
            (s.name, s.begin, s.end, s.depth, s.location) for s in trace.slices.get(uuids[ref], [])
        ]
        assert got == want, registry.track(ref).name
    frame_slices = trace.slices.get(trace.track_named("frames"), [])
    assert [(s.name, s.begin, s.end, s.annotations) for s in frame_slices] == [
        (f"frame {f.index}", f.start_ns, f.start_ns + f.duration_ns, {"scopes": f.num_scopes})
        for f in frames
    ]


def test_tracks_are_a_process_with_its_threads_and_named_child_tracks() -> None:
    registry = sample_registry()
    frames = [make_frame(1, [nested_track(ref, [1, 2], [0, 1], T0, [5]) for ref in range(1, 6)])]
    trace = read_trace(exported(frames, registry))
    by_name = {t.name: t for t in trace.tracks.values()}
    process = by_name["codec profiler"]
    assert process.process.pid == 1 and process.process.process_name == "codec profiler"
    for name, tid in (("main", 4242), ("worker", 4243)):
        thread = by_name[name].thread
        assert (thread.pid, thread.tid, thread.thread_name) == (1, tid, name)
        assert not by_name[name].HasField("parent_uuid")
    # An asyncio lane, a GPU queue and a second track of thread 4242: tracks of the process.
    for name in ("main tasks 1", "gpu", "main again", "frames"):
        assert not by_name[name].HasField("thread")
        assert by_name[name].parent_uuid == process.uuid
    assert len(trace.tracks) == 7


def test_names_and_locations_are_interned_once_and_used_by_iid() -> None:
    registry = sample_registry()
    frames = [  # the same scopes, three times
        make_frame(i, [nested_track(1, [1, 2, 5, 3, 4, 1], [0, 1, 2, 0, 1, 0], T0 + i * 100, [3])])
        for i in range(1, 4)
    ]
    trace = read_trace(exported(frames, registry))
    interned = {}  # sequence id -> its interned entries: one packet each, the later frames
    for packet in trace.packets:  # need nothing new
        if packet.HasField("interned_data"):
            assert packet.trusted_packet_sequence_id not in interned
            interned[packet.trusted_packet_sequence_id] = packet.interned_data
    frames_data, scopes_data = interned.values()  # the frames track's, then the scopes' track's
    assert [e.name for e in frames_data.debug_annotation_names] == ["scopes"]
    interned = [scopes_data]
    assert sorted(e.name for e in interned[0].event_names) == sorted(
        ["frame", "update", 'draw <mesh> & "quote" é', "no location"]
    )  # "frame" once, though two scopes carry it
    assert [
        (e.file_name, e.function_name, e.line_number) for e in interned[0].source_locations
    ] == [
        ("game/loop.py", "", 12),
        ("game/loop.py", "Game.update", 20),
        ("game/render.py", "draw", 0),
        ("game/other.py", "", 7),
    ]  # in scope id order
    events = [p.track_event for p in trace.packets if p.HasField("track_event")]
    scopes = [e for e in events if e.type == TYPE_SLICE_BEGIN and not e.debug_annotations]
    assert len(scopes) == 3 * 6 and not any(e.HasField("name") for e in scopes)  # by iid only
    assert not any(e.HasField("track_uuid") for e in events)  # their sequence's default


def test_sessions_of_a_capture_are_processes_of_their_own() -> None:
    registry = sample_registry()
    out = FrameEncoder()
    for producer in ("first run", "second run"):
        writer = PacketWriter(Session.new(producer))
        writer.keyframe(out, registry)
        frame = make_frame(1, [nested_track(1, [1, 2], [0, 1], T0, [10])])
        writer.frame(out, 1, frame.start_ns, frame.duration_ns, frame.tracks, frame.num_scopes)
    file = io.BytesIO()
    stats = write_perfetto_capture(bytes(out.getbuffer()), file)
    trace = read_trace(file.getvalue())
    processes = [t for t in trace.tracks.values() if t.HasField("process")]
    assert [(p.name, p.process.pid) for p in processes] == [("first run", 1), ("second run", 2)]
    mains = [u for u, t in trace.tracks.items() if t.name == "main"]
    assert len(mains) == 2 and all(len(trace.slices[u]) == 2 for u in mains)
    assert stats.slices == 2 * (2 + 1) and stats.bytes_written == len(file.getvalue())


def test_a_cut_capture_exports_the_frames_it_holds(tmp_path: Path) -> None:
    registry = sample_registry()
    writer = PacketWriter(Session.new("cut"))
    out = FrameEncoder()
    frames = []
    for index in range(1, 31):
        if index % 10 == 1:
            writer.keyframe(out, registry)
        frame = make_frame(index, [nested_track(1, [1, 2, 3], [0, 1, 1], T0 + index * 10**6, [7])])
        frames.append(frame)
        writer.frame(out, index, frame.start_ns, frame.duration_ns, frame.tracks, frame.num_scopes)
    data = bytes(out.getbuffer())
    cut = data[5 : len(data) - 3]  # inside the first keyframe, inside the last frame
    held = [item for _, item in read_capture(cut) if isinstance(item, Frame)]
    assert 0 < len(held) < len(frames)
    path = tmp_path / "cut.pftrace"
    stats = write_perfetto_capture(cut, path)
    trace = read_trace(path.read_bytes())
    main = trace.track_named("main")
    assert [(s.name, s.begin, s.end) for s in trace.slices[main]] == [
        (name, begin, end) for name, begin, end, _, _ in expected_slices(held, registry, 1)
    ]
    frame_names = [s.name for s in trace.slices[trace.track_named("frames")]]
    assert frame_names == [f"frame {f.index}" for f in held]
    assert stats.slices == 4 * len(held)


def test_timestamps_of_every_varint_size_frame_their_packets_right() -> None:
    registry = sample_registry()
    edges = sorted({0, 2**63 - 2, *(2 ** (7 * n) + d for n in range(1, 9) for d in (-1, 0))})
    n = len(edges)
    track = TrackScopes.from_sequences(1, [1] * n, edges, [1] * (n - 1) + [0], [0] * n)
    trace = read_trace(exported([Frame(1, 0, 2**63 - 2, (track,))], registry))
    got = [(s.begin, s.end) for s in trace.slices[trace.track_named("main")]]
    assert got == [(t, t + 1) for t in edges[:-1]] + [(edges[-1], edges[-1])]


def test_times_that_go_back_take_a_new_clock_snapshot() -> None:
    """Frames out of order, and siblings that overlap: each slice at its absolute times."""
    registry = sample_registry()
    later = make_frame(2, [nested_track(1, [1, 2], [0, 1], T0 + 10**9, [7])])
    earlier = make_frame(1, [nested_track(1, [3], [0], T0, [5])])
    overlapping = TrackScopes.from_sequences(1, [1, 2], [T0 + 50, T0 + 20], [100, 100], [0, 0])
    frames = [later, earlier, make_frame(3, [overlapping])]
    trace = read_trace(exported(frames, registry), ordered=False)
    snapshots = [p for p in trace.packets if p.HasField("clock_snapshot")]
    assert len(snapshots) == 2 + 2 + 1  # two sequences start; each goes back; the overlap
    got = [(s.name, s.begin, s.end) for s in trace.slices[trace.track_named("main")]]
    expected = [
        (registry.scope(scope_id).name, start, start + duration)
        for frame in frames
        for track in frame.tracks
        for scope_id, start, duration in zip(
            track.scope_id.tolist(),
            track.start_ns.tolist(),
            track.duration_ns.tolist(),
            strict=True,
        )
    ]
    assert got == expected
    frame_times = [(s.begin, s.end) for s in trace.slices[trace.track_named("frames")]]
    assert frame_times == [(f.start_ns, f.start_ns + f.duration_ns) for f in frames]


def test_sequence_ids_end_at_2_to_the_32() -> None:
    registry = sample_registry()
    frame = make_frame(1, [nested_track(1, [1], [0], T0, [5])])
    ids = {
        p.trusted_packet_sequence_id
        for p in read_trace(exported([frame], registry, sequence_id=2**32 - 3)).packets
    }
    assert ids == {2**32 - 3, 2**32 - 2, 2**32 - 1}  # descriptors, frames, the track
    with pytest.raises(EncodeError, match="trusted_packet_sequence_id"):
        exported([frame], registry, sequence_id=2**32 - 2)


def test_empty_tracks_and_frames_are_written_without_slices() -> None:
    registry = sample_registry()
    empty = TrackScopes.from_sequences(1, [], [], [], [])
    trace = read_trace(exported([Frame(1, T0, 0, (empty,)), Frame(2, T0, 5, ())], registry))
    assert [s.name for s in trace.slices[trace.track_named("frames")]] == ["frame 1", "frame 2"]
    assert "main" not in {t.name for t in trace.tracks.values()}  # no scopes: no track


def test_write_perfetto_trace_writes_the_same_bytes_to_a_path(tmp_path: Path) -> None:
    registry = sample_registry()
    frames = list(game_frames(3, registry))
    stats = write_perfetto_trace(frames, registry, tmp_path / "out.pftrace")
    written = (tmp_path / "out.pftrace").read_bytes()
    assert written == exported(frames, registry)
    assert stats == PerfettoStats(len(read_trace(written).packets), 3 * 201, len(written))


# --- streaming ------------------------------------------------------------------------------


class Chunks:
    """A binary file that keeps the size of each write and what was written."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.data = bytearray()

    def write(self, view: memoryview) -> int:
        self.sizes.append(len(view))
        self.data += view
        return len(view)


def game_frames(count: int, registry: Registry) -> Iterator[Frame]:
    """``count`` frames of 200 scopes each, made one at a time."""
    depths = [0] + [1, 2, 2, 1, 2] * 39 + [1, 1, 1, 1]
    ids = [1] + [2, 3, 4, 2, 3] * 39 + [2, 2, 2, 2]
    for index in range(1, count + 1):
        yield make_frame(index, [nested_track(1, ids, depths, T0 + index * 10**7, [11, 3, 7])])


def test_a_long_export_is_written_in_chunks() -> None:
    registry = sample_registry()
    file = Chunks()
    with PerfettoWriter(file, chunk_size=4096) as trace:
        for frame in game_frames(100, registry):
            trace.add_frame(frame, registry)
    assert len(file.sizes) > 10
    assert max(file.sizes) < 4096 + 20_000  # a chunk, plus at most one frame's packets
    assert trace.stats().bytes_written == len(file.data)
    read = read_trace(bytes(file.data))
    assert len(read.slices[read.track_named("main")]) == 100 * 200


def peak_while_exporting(frames: int) -> int:
    """Peak traced memory while ``frames`` frames of 200 scopes go to a file in 64 KiB chunks."""
    registry = sample_registry()
    source = game_frames(frames + 1, registry)
    with open(os.devnull, "wb") as out, PerfettoWriter(out, chunk_size=64 * 1024) as trace:
        trace.add_frame(next(source), registry)  # warm-up: imports, caches, packet tails
        gc.collect()
        tracemalloc.start()
        try:
            for frame in source:
                trace.add_frame(frame, registry)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


def test_peak_memory_does_not_grow_with_the_length_of_the_export() -> None:
    short = peak_while_exporting(40)  # 8,000 scopes, about 400 KB of trace
    long = peak_while_exporting(400)  # 80,000 scopes, about 4 MB
    assert long < short * 1.25 + 16 * 1024, (short, long)
    assert long < 512 * 1024  # a chunk, a frame's columns and packets: not the trace


# --- errors ---------------------------------------------------------------------------------


def test_undefined_scopes_and_tracks_raise_stream_errors() -> None:
    registry = sample_registry()
    with pytest.raises(StreamError, match="scope id 99"):
        exported([make_frame(1, [nested_track(1, [99], [0], T0, [1])])], registry)
    with pytest.raises(StreamError, match="track 42"):
        exported([make_frame(1, [nested_track(42, [1], [0], T0, [1])])], registry)


def test_a_negative_time_raises_an_encode_error_and_writes_none_of_the_frame() -> None:
    registry = sample_registry()
    good = make_frame(1, [nested_track(1, [1], [0], T0, [1])])
    bad = make_frame(2, [nested_track(1, [1], [0], T0, [1]), nested_track(2, [1], [0], -100, [1])])
    out = io.BytesIO()
    with PerfettoWriter(out) as trace:
        trace.add_frame(good, registry)
        with pytest.raises(EncodeError, match="track 2: a scope starts at -99 ns"):
            trace.add_frame(bad, registry)
    read = read_trace(out.getvalue())
    assert [s.name for s in read.slices[read.track_named("frames")]] == ["frame 1"]
    assert len(read.slices[read.track_named("main")]) == 1


def track_of(track_ref: int, starts: list[int], durations: list[int]) -> TrackScopes:
    """Top-level scopes of scope id 1 at ``starts``, lasting ``durations``."""
    count = len(starts)
    return TrackScopes.from_sequences(track_ref, [1] * count, starts, durations, [0] * count)


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (Frame(2, T0, 10, (track_of(1, [T0], [-5]),)), "track 1: a scope lasts -5 ns"),
        (
            Frame(2, T0, 10, (track_of(1, [T0, T0 + 1], [1, -1]),)),
            "track 1: a scope lasts -1 ns",
        ),
        (
            Frame(2, 2**63 - 10, 5, (track_of(1, [2**63 - 10], [10]),)),
            "track 1: a scope starts at 9223372036854775798 ns and lasts 10 ns",
        ),
        (Frame(2, T0, -1, ()), "frame 2: starts at 1700000000000000000 ns and lasts -1 ns"),
        (Frame(2, -1, 1, ()), "frame 2: starts at -1 ns"),
        (Frame(2, 2**63 - 1, 1, ()), "frame 2: starts at 9223372036854775807 ns and lasts 1 ns"),
        (
            Frame(
                2,
                T0,
                0,
                (
                    TrackScopes(
                        1,
                        *(
                            np.zeros(n, d)
                            for n, d in zip([1, 1, 0, 1], ["u4", "i8", "i8", "u1"], strict=True)
                        ),
                    ),
                ),
            ),
            r"track 1: columns of \[0, 1\] scopes",
        ),
    ],
    ids=[
        "negative-duration",
        "negative-duration-after-a-good-scope",
        "end-past-int64",
        "negative-frame-duration",
        "negative-frame-start",
        "frame-end-past-int64",
        "columns-of-different-lengths",
    ],
)
def test_a_frame_that_cannot_be_written_writes_nothing(bad: Frame, error: str) -> None:
    registry = sample_registry()
    good = make_frame(1, [nested_track(1, [1], [0], T0, [1])])
    later = make_frame(3, [nested_track(1, [1, 2], [0, 1], T0 + 100, [1])])
    out = io.BytesIO()
    with PerfettoWriter(out) as trace:
        trace.add_frame(good, registry)
        before = trace.stats()
        with pytest.raises(EncodeError, match=error):
            trace.add_frame(bad, registry, Session.new("a session of its own"))
        assert trace.stats() == before
        trace.add_frame(later, registry)
    read = read_trace(out.getvalue())  # the whole trace parses
    assert [s.name for s in read.slices[read.track_named("frames")]] == ["frame 1", "frame 3"]
    assert len(read.slices[read.track_named("main")]) == 3
    assert {t.name for t in read.tracks.values() if t.HasField("process")} == {"codec profiler"}


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (
            Frame(2, T0 + 100, 10, (track_of(1, [T0 + 100, T0 + 105], [10, -1]),)),
            "track 1: a scope lasts a negative time",
        ),
        (
            Frame(2, T0 + 100, 10, (track_of(1, [T0 + 100, 2**63 - 5], [10, 5]),)),
            r"track 1: a scope ends after 2\*\*63 - 1 ns",
        ),
        (
            Frame(2, T0 + 100, 2**63, (track_of(1, [T0 + 100, T0 + 105], [10, 1]),)),
            r"a frame starts at 1700000000000000100 ns and lasts 9223372036854775808 ns",
        ),
        (
            Frame(2, T0 + 100, 2**63 - T0 - 100, (track_of(1, [T0 + 100], [10]),)),
            r"a frame starts at .* ns and lasts .* ns: past 2\*\*63 - 1",
        ),
    ],
    ids=["negative-duration", "end-past-int64", "frame-duration-2**63", "frame-end-past-int64"],
)
def test_a_capture_frame_with_times_out_of_range_is_damaged(
    tmp_path: Path, bad: Frame, error: str
) -> None:
    registry = sample_registry()
    writer = PacketWriter(Session.new("capture"))
    out = FrameEncoder()
    writer.keyframe(out, registry)
    good = make_frame(1, [nested_track(1, [1, 2], [0, 1], T0, [3])])
    for frame in (good, bad):
        writer.frame(out, frame.index, frame.start_ns, frame.duration_ns, frame.tracks, 2)
    receiver = Receiver()  # as a viewer reads the stream
    receiver.feed(bytes(out.getbuffer()))
    with pytest.raises(StreamError, match=error):
        list(receiver)
    writer.keyframe(out, registry)
    later = make_frame(3, [nested_track(1, [1], [0], T0 + 200, [3])])
    writer.frame(out, 3, later.start_ns, later.duration_ns, later.tracks, 1)
    data = bytes(out.getbuffer())
    read = [item.index for _, item in read_capture(data) if isinstance(item, Frame)]
    assert read == [1, 3]  # refused as damaged, read again from the next keyframe
    path = tmp_path / "capture.pftrace"
    write_perfetto_capture(data, path)
    trace = read_trace(path.read_bytes())
    frame_names = [s.name for s in trace.slices[trace.track_named("frames")]]
    assert frame_names == ["frame 1", "frame 3"]


@pytest.mark.parametrize(
    ("option", "value"), [("sequence_id", 0), ("sequence_id", 2**32), ("chunk_size", 0)]
)
def test_bad_options_raise_value_errors(option: str, value: int) -> None:
    with pytest.raises(ValueError, match=option):
        PerfettoWriter(io.BytesIO(), **{option: value})
