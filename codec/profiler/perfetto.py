"""Perfetto export: profiler frames as a native Perfetto trace, written as a stream.

Strategy: a Perfetto trace file is a serialized ``Trace``, whose only field is
``repeated TracePacket packet = 1``, so the file is a run of
``0x0A ‖ varint(len) ‖ TracePacket``: field 1 of ``Trace`` written once per
packet. :class:`PerfettoWriter` writes every packet with a
:class:`~codec.wire.WireWriter` into one reusable buffer (descriptors and interned
data as nested messages whose lengths are back-patched, slice events from
prepared heads, below) and hands the buffer to the file whenever it holds
``chunk_size`` bytes, then clears it: a capture of any length is exported in
the memory of one frame's columns and one chunk. The messages and field
numbers are those of Perfetto's public protos; ``perfetto_trace.proto`` in
this package is the subset written here, and the tests parse the output with
classes built from it.

Each track's events are a packet sequence of their own (a
``trusted_packet_sequence_id``, as a thread's events are in Perfetto's SDK),
so that what every event of the track shares is said once, in the
sequence's first packet: ``SEQ_INCREMENTAL_STATE_CLEARED``, the track
(``TrackEventDefaults.track_uuid``) and an incremental clock
(``TracePacketDefaults.timestamp_clock_id`` 64, declared by a
``ClockSnapshot`` beside ``BOOTTIME`` at the same time). A packet's
timestamp is then the nanoseconds since the sequence's last packet: two or
three bytes, where an absolute one takes nine. An event that would go back
in time is preceded by a new snapshot. Later packets do not repeat
``SEQ_NEEDS_INCREMENTAL_STATE``: the flag tells a reader to drop what
follows a lost packet, a file written whole by one writer loses none, and
Perfetto's trace processor reads the state the same without it, so it
would cost 2 bytes a packet for nothing. Event names, source locations
(file, function, line) and debug annotation names are interned per
sequence by content, under iids from 1 that are never redefined, in an
``interned_data`` packet written before the first event that refers to
them. Track descriptors need no state, and go on a sequence of their own,
the first.

Each producer session becomes a process track (``ProcessDescriptor``, named
after the producer), each profiler track a track of that process: a thread
track (``ThreadDescriptor``) for a CPU thread with an OS thread id, a named
child track otherwise (asyncio lanes, GPU queues, a thread id seen twice),
and a ``frames`` track holds a slice per frame, with its scope count as a
debug annotation. A track's scopes arrive in pre-order with start and
duration; walking them with a stack of open end times yields the
``TYPE_SLICE_BEGIN``/``TYPE_SLICE_END`` events in time order, so every
slice nests as in the profile. Times are the profiler's nanoseconds on
``BOOTTIME``, the trace's default clock.

A slice event differs from every other event of its track and scope only in
its timestamp, so its packet is written as a head, encoded once per track,
scope and size of the timestamp's varint (the packet's tag and length, its
sequence id and track event) and copied in with
:meth:`~codec.wire.WireWriter.raw`, then the timestamp, last: two writes and no
object per packet, where a nested message would cost a back-patched region.
A slice costs about 26 bytes: a BEGIN of 12 to 17, an END of 10 to 12.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

import numpy

from codec import varint
from codec.errors import EncodeError
from codec.profiler.capture import read_capture
from codec.profiler.model import Frame, Registry, ScopeDef, TrackDef, TrackKind, TrackScopes
from codec.profiler.packets import Session
from codec.wire import LEN, WireWriter

__all__ = [
    "SEQ_INCREMENTAL_STATE_CLEARED",
    "TYPE_SLICE_BEGIN",
    "TYPE_SLICE_END",
    "PerfettoStats",
    "PerfettoWriter",
    "write_perfetto_capture",
    "write_perfetto_trace",
]

# Trace (protos/perfetto/trace/trace.proto)
_TRACE_PACKET = 1

# TracePacket (protos/perfetto/trace/trace_packet.proto)
_PACKET_CLOCK_SNAPSHOT = 6
_PACKET_TIMESTAMP = 8
_PACKET_SEQUENCE_ID = 10  # trusted_packet_sequence_id
_PACKET_TRACK_EVENT = 11
_PACKET_INTERNED_DATA = 12
_PACKET_SEQUENCE_FLAGS = 13
_PACKET_DEFAULTS = 59  # trace_packet_defaults
_PACKET_TRACK_DESCRIPTOR = 60
_PACKET_FIRST_ON_SEQUENCE = 87  # first_packet_on_sequence

# TracePacket.SequenceFlags
SEQ_INCREMENTAL_STATE_CLEARED = 1

# TracePacketDefaults (protos/perfetto/trace/trace_packet_defaults.proto)
_DEFAULTS_CLOCK_ID = 58  # timestamp_clock_id
_DEFAULTS_TRACK_EVENT = 11  # track_event_defaults
# TrackEventDefaults (protos/perfetto/trace/track_event/track_event.proto)
_EVENT_DEFAULTS_TRACK_UUID = 11

# ClockSnapshot and ClockSnapshot.Clock (protos/perfetto/trace/clock_snapshot.proto)
_SNAPSHOT_CLOCKS = 1
_CLOCK_ID = 1
_CLOCK_TIMESTAMP = 2
_CLOCK_INCREMENTAL = 3
_BOOTTIME = 6  # the trace's default clock
_INCREMENTAL_CLOCK = 64  # the first of the ids a sequence defines for itself

# TrackEvent (protos/perfetto/trace/track_event/track_event.proto)
_EVENT_DEBUG_ANNOTATIONS = 4
_EVENT_TYPE = 9
_EVENT_NAME_IID = 10
_EVENT_TRACK_UUID = 11
_EVENT_NAME = 23
_EVENT_SOURCE_LOCATION_IID = 34

# TrackEvent.Type
TYPE_SLICE_BEGIN = 1
TYPE_SLICE_END = 2

# InternedData (protos/perfetto/trace/interned_data/interned_data.proto)
_INTERNED_EVENT_NAMES = 2
_INTERNED_DEBUG_ANNOTATION_NAMES = 3
_INTERNED_SOURCE_LOCATIONS = 4

# EventName (track_event.proto) and DebugAnnotationName (debug_annotation.proto)
_NAME_IID = 1
_NAME_NAME = 2

# SourceLocation (protos/perfetto/trace/track_event/source_location.proto)
_LOCATION_IID = 1
_LOCATION_FILE = 2
_LOCATION_FUNCTION = 3
_LOCATION_LINE = 4

# DebugAnnotation (protos/perfetto/trace/track_event/debug_annotation.proto)
_ANNOTATION_NAME_IID = 1
_ANNOTATION_UINT_VALUE = 3

# TrackDescriptor, ProcessDescriptor, ThreadDescriptor (protos/perfetto/trace/track_event/)
_TRACK_UUID = 1
_TRACK_NAME = 2
_TRACK_PROCESS = 3
_TRACK_THREAD = 4
_TRACK_PARENT_UUID = 5
_PROCESS_PID = 1
_PROCESS_NAME = 6
_THREAD_PID = 1
_THREAD_TID = 2
_THREAD_NAME = 5

# Field 1 of Trace, length-delimited: the first byte of every packet.
_PACKET_TAG = bytes([_TRACE_PACKET << 3 | LEN])
# A timestamp is an int64 that is not negative: at most 9 bytes as a varint, which takes
# one byte more for every one of these it reaches.
_MAX_TIMESTAMP_BYTES = 9
_MAX_TIME = 2**63 - 1
_VARINT_STEPS = numpy.array([1 << 7 * n for n in range(1, _MAX_TIMESTAMP_BYTES)], dtype=numpy.int64)

# ThreadDescriptor.tid is an int32: a larger OS thread id names a child track instead.
_MAX_TID = 2**31 - 1
# Bytes gathered before a write to the file: large enough to amortise the system call.
DEFAULT_CHUNK_SIZE = 1 << 20

_Key = TypeVar("_Key")

_FRAMES_TRACK_NAME = "frames"
_SCOPES_ANNOTATION = "scopes"


class BinaryOutput(Protocol):
    """What :class:`PerfettoWriter` writes to: a binary file, or anything with ``write``."""

    def write(self, data: memoryview, /) -> object: ...


@dataclass(frozen=True, slots=True)
class PerfettoStats:
    """What an export wrote: packets, slices (scopes and frames) and bytes."""

    packets: int
    slices: int
    bytes_written: int


@dataclass(slots=True)
class _Track:
    """A Perfetto track and the packet sequence of its events: its interned entries, its
    incremental clock's last value (None before its first packet) and its packet heads."""

    uuid: int
    sequence_id: int
    now: int | None = None
    names: _Interned[str] = field(default_factory=lambda: _Interned[str]())
    annotation_names: _Interned[str] = field(default_factory=lambda: _Interned[str]())
    locations: _Interned[tuple[str, str, int]] = field(
        default_factory=lambda: _Interned[tuple[str, str, int]]()
    )  # (file, function, line)
    end_heads: tuple[bytes, ...] = ()  # an END packet up to its timestamp (see _heads)
    begin_heads: dict[int, tuple[bytes, ...]] = field(default_factory=dict)  # by scope id


@dataclass(slots=True)
class _Process:
    """A producer session as a Perfetto process, and the tracks it has so far."""

    uuid: int
    pid: int
    frames: _Track
    tracks: dict[int, _Track] = field(default_factory=dict)  # track ref -> track
    tids: set[int] = field(default_factory=set)


class PerfettoWriter:
    """Writes profiler frames to a binary file as a Perfetto trace, a chunk at a time.

    ``with PerfettoWriter(file) as trace: trace.add_frame(frame, registry)``;
    leaving the block (or :meth:`close`) writes what is still buffered. The
    writer never closes ``file``. ``sequence_id`` is the first
    ``trusted_packet_sequence_id`` of the trace, its track descriptors'; each
    track's events take the next; ``chunk_size`` how many bytes gather
    before a write to the file. :meth:`add_frame` raises
    :class:`~codec.profiler.StreamError` for a scope or track the registry
    does not define, and :class:`~codec.EncodeError` for a time that is
    not an ``int64`` at least 0 (a negative start or duration, an end past
    ``2**63 - 1``) or for columns of different lengths; either is raised
    before anything of the frame is written, so the trace stays whole.
    """

    def __init__(
        self,
        file: BinaryOutput,
        *,
        sequence_id: int = 1,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> None:
        if not 0 < sequence_id < 2**32:
            raise ValueError(f"sequence_id must be in [1, 2**32), got {sequence_id}")
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        self._file = file
        self._sequence_id = sequence_id
        self._chunk_size = chunk_size
        self._writer = WireWriter()
        self._scratch = WireWriter()  # packet heads are encoded here, then kept as bytes
        self._processes: dict[int | None, _Process] = {}  # by session id (None: no session)
        self._next_uuid = 1
        self._next_sequence_id = sequence_id + 1
        self.packets = 0
        self.slices = 0  # one per scope and one per frame
        self.bytes_written = 0  # what has reached the file

    def stats(self) -> PerfettoStats:
        """Packets and slices written so far, and the bytes that reached the file."""
        return PerfettoStats(self.packets, self.slices, self.bytes_written)

    def __enter__(self) -> PerfettoWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Write what is buffered to the file (the file stays open)."""
        buffer = self._writer.buffer
        if len(buffer):
            with buffer.getbuffer() as view:
                self._file.write(view)
                self.bytes_written += len(view)
            buffer.clear()

    def add_frame(self, frame: Frame, registry: Registry, session: Session | None = None) -> None:
        """Write ``frame``'s scopes as slices, and the frame itself on the ``frames`` track.

        ``registry`` defines the frame's scope and track ids. ``session`` is
        the producer session the frame belongs to: each one becomes a process
        of its own, so the runs of a restarted producer stay apart (frames
        without a session share one process, "codec profiler").
        """
        _check_times(frame)  # before anything is written: the frame goes out whole or not at all
        process = self._process(session)
        tracks = [
            (self._track(process, registry.track(scopes.track_ref)), scopes)
            for scopes in frame.tracks
            if len(scopes)
        ]
        for track, scopes in tracks:
            for scope_id in sorted(set(scopes.scope_id.tolist()) - track.begin_heads.keys()):
                track.begin_heads[scope_id] = self._begin_heads(track, registry.scope(scope_id))
        self._frame_slice(process.frames, frame)
        for track, scopes in tracks:
            self._start(track, int(scopes.start_ns[0]))
            self._write_interned(track)
            self._scope_slices(track, scopes)
        if len(self._writer.buffer) >= self._chunk_size:
            self.close()

    # --- tracks ---------------------------------------------------------------------------

    def _new_track(self) -> _Track:
        """A new track uuid, with the next packet sequence for its events."""
        uuid, sequence_id = self._next_uuid, self._next_sequence_id
        if sequence_id >= 2**32:
            raise EncodeError("more tracks than trusted_packet_sequence_id can number")
        self._next_uuid += 1
        self._next_sequence_id += 1
        track = _Track(uuid, sequence_id)
        track.end_heads = self._heads(track, TYPE_SLICE_END)
        return track

    def _process(self, session: Session | None) -> _Process:
        key = None if session is None else session.session_id
        process = self._processes.get(key)
        if process is not None:
            return process
        uuid = self._next_uuid
        self._next_uuid += 1
        process = _Process(uuid, len(self._processes) + 1, self._new_track())
        self._processes[key] = process
        name = (session.producer_name if session is not None else "") or "codec profiler"
        with self._descriptor(process.uuid, name) as packet, packet.message(_TRACK_PROCESS):
            packet.int32(_PROCESS_PID, process.pid)
            packet.string(_PROCESS_NAME, name)
        self._child_track(process.frames.uuid, _FRAMES_TRACK_NAME, process)
        return process

    def _track(self, process: _Process, definition: TrackDef) -> _Track:
        track = process.tracks.get(definition.track_ref)
        if track is not None:
            return track
        track = process.tracks[definition.track_ref] = self._new_track()
        name = definition.name or f"track {definition.track_ref}"
        tid = definition.os_thread_id
        if (
            definition.kind != TrackKind.CPU_THREAD
            or not 0 < tid <= _MAX_TID
            or tid in process.tids
        ):
            self._child_track(track.uuid, name, process)
            return track
        process.tids.add(tid)
        with self._descriptor(track.uuid, name) as packet, packet.message(_TRACK_THREAD):
            packet.int32(_THREAD_PID, process.pid)
            packet.int32(_THREAD_TID, tid)
            packet.string(_THREAD_NAME, name)
        return track

    def _child_track(self, uuid: int, name: str, process: _Process) -> None:
        """A named track of ``process`` that is not one of its threads."""
        with self._descriptor(uuid, name) as packet:
            packet.uint64(_TRACK_PARENT_UUID, process.uuid)

    @contextmanager
    def _descriptor(self, uuid: int, name: str) -> Iterator[WireWriter]:
        """A packet of one ``TrackDescriptor`` (on the first sequence, which has no state):
        its uuid and name, then the block's fields."""
        writer = self._writer
        with writer.message(_TRACE_PACKET):
            with writer.message(_PACKET_TRACK_DESCRIPTOR):
                writer.uint64(_TRACK_UUID, uuid)
                writer.string(_TRACK_NAME, name)
                yield writer
            writer.uint32(_PACKET_SEQUENCE_ID, self._sequence_id)
        self.packets += 1

    # --- sequences ------------------------------------------------------------------------

    def _start(self, track: _Track, time: int) -> None:
        """The first packet of ``track``'s sequence, unless written: the state every later
        packet needs (cleared interning, the track, the incremental clock at ``time``)."""
        if track.now is not None:
            return
        with self._packet(track) as packet:
            packet.uint32(_PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED)
            packet.bool(_PACKET_FIRST_ON_SEQUENCE, True)
            with packet.message(_PACKET_DEFAULTS):
                packet.uint32(_DEFAULTS_CLOCK_ID, _INCREMENTAL_CLOCK)
                with packet.message(_DEFAULTS_TRACK_EVENT):
                    packet.uint64(_EVENT_DEFAULTS_TRACK_UUID, track.uuid)
            self._clocks(packet, time)
        track.now = time

    def _rewind(self, track: _Track, time: int) -> None:
        """A new snapshot of ``track``'s incremental clock at ``time``, earlier than its last."""
        with self._packet(track) as packet:
            self._clocks(packet, time)
        track.now = time

    @staticmethod
    def _clocks(packet: WireWriter, time: int) -> None:
        """A ``ClockSnapshot``: the incremental clock and ``BOOTTIME`` both read ``time``."""
        with packet.message(_PACKET_CLOCK_SNAPSHOT):
            with packet.message(_SNAPSHOT_CLOCKS):
                packet.uint32(_CLOCK_ID, _INCREMENTAL_CLOCK)
                packet.uint64(_CLOCK_TIMESTAMP, time)
                packet.bool(_CLOCK_INCREMENTAL, True)
            with packet.message(_SNAPSHOT_CLOCKS):
                packet.uint32(_CLOCK_ID, _BOOTTIME)
                packet.uint64(_CLOCK_TIMESTAMP, time)

    def _delta(self, track: _Track, time: int) -> int:
        """The timestamp of a packet of ``track``'s sequence at ``time``: the nanoseconds
        since its last packet, after a new snapshot if ``time`` is earlier."""
        self._start(track, time)
        if time < track.now:  # type: ignore[operator]  # started
            self._rewind(track, time)
        delta = time - track.now  # type: ignore[operator]
        track.now = time
        return delta

    # --- interning ------------------------------------------------------------------------

    def _location_iid(self, track: _Track, scope: ScopeDef) -> int:
        """The iid of the scope's source location; 0 (none) for a scope without a file."""
        if not scope.file:
            return 0
        return track.locations.iid((scope.file, scope.function, scope.line))

    def _write_interned(self, track: _Track) -> None:
        """One packet of the entries ``track``'s sequence interned since its last one, if any."""
        names = track.names.take_new()
        annotation_names = track.annotation_names.take_new()
        locations = track.locations.take_new()
        if not (names or annotation_names or locations):
            return
        with self._packet(track) as packet, packet.message(_PACKET_INTERNED_DATA):
            for table, entries in (
                (_INTERNED_EVENT_NAMES, names),
                (_INTERNED_DEBUG_ANNOTATION_NAMES, annotation_names),
            ):
                for iid, name in entries:
                    with packet.message(table):  # EventName, DebugAnnotationName
                        packet.uint64(_NAME_IID, iid)
                        packet.string(_NAME_NAME, name)
            for iid, (file, function, line) in locations:
                with packet.message(_INTERNED_SOURCE_LOCATIONS):
                    packet.uint64(_LOCATION_IID, iid)
                    packet.string(_LOCATION_FILE, file)
                    if function:
                        packet.string(_LOCATION_FUNCTION, function)
                    if line:
                        packet.uint32(_LOCATION_LINE, line)

    # --- packets --------------------------------------------------------------------------

    @contextmanager
    def _packet(self, track: _Track) -> Iterator[WireWriter]:
        """A packet of ``track``'s sequence, its sequence id after the body."""
        writer = self._writer
        with writer.message(_TRACE_PACKET):
            yield writer
            writer.uint32(_PACKET_SEQUENCE_ID, track.sequence_id)
        self.packets += 1

    def _heads(
        self, track: _Track, event_type: int, name_iid: int = 0, location: int = 0
    ) -> tuple[bytes, ...]:
        """A slice event's packet up to its timestamp, for each size of the timestamp's varint.

        The head is field 1 of ``Trace`` and the packet's length, then its
        sequence id and track event; the timestamp (field 8) follows
        it, last in the packet. Item ``n`` is for a varint of ``n + 1``
        bytes.
        """
        scratch = self._scratch
        scratch.uint32(_PACKET_SEQUENCE_ID, track.sequence_id)
        with scratch.message(_PACKET_TRACK_EVENT):
            scratch.enum(_EVENT_TYPE, event_type)
            if name_iid:
                scratch.uint64(_EVENT_NAME_IID, name_iid)
            if location:
                scratch.uint64(_EVENT_SOURCE_LOCATION_IID, location)
        with scratch.buffer.getbuffer() as view:
            body = bytes(view)
        scratch.buffer.clear()
        return tuple(
            _PACKET_TAG + varint.encode(len(body) + 1 + size) + body  # 1: the timestamp's tag
            for size in range(1, _MAX_TIMESTAMP_BYTES + 1)
        )

    def _begin_heads(self, track: _Track, scope: ScopeDef) -> tuple[bytes, ...]:
        name_iid = track.names.iid(scope.name)
        return self._heads(track, TYPE_SLICE_BEGIN, name_iid, self._location_iid(track, scope))

    def _frame_slice(self, frames: _Track, frame: Frame) -> None:
        """The frame as a slice of its process's ``frames`` track, with its scope count."""
        self._start(frames, frame.start_ns)
        scopes_iid = frames.annotation_names.iid(_SCOPES_ANNOTATION)
        self._write_interned(frames)
        for event_type, time in (
            (TYPE_SLICE_BEGIN, frame.start_ns),
            (TYPE_SLICE_END, frame.start_ns + frame.duration_ns),
        ):
            delta = self._delta(frames, time)
            with self._packet(frames) as packet:
                packet.uint64(_PACKET_TIMESTAMP, delta)
                with packet.message(_PACKET_TRACK_EVENT):
                    packet.enum(_EVENT_TYPE, event_type)
                    if event_type == TYPE_SLICE_BEGIN:
                        with packet.message(_EVENT_DEBUG_ANNOTATIONS):
                            packet.uint64(_ANNOTATION_NAME_IID, scopes_iid)
                            packet.uint64(_ANNOTATION_UINT_VALUE, frame.num_scopes)
                        packet.string(_EVENT_NAME, f"frame {frame.index}")
        self.slices += 1

    def _scope_slices(self, track: _Track, scopes: TrackScopes) -> None:
        """One track's scopes of a frame as BEGIN and END events, in time order.

        In pre-order a scope begins after every scope still open at its depth
        or deeper has ended, so a stack of open end times gives the order.
        Each event is its head, chosen by the size of its timestamp's varint,
        then the timestamp: the nanoseconds since the sequence's last event.
        """
        starts = numpy.asarray(scopes.start_ns, dtype=numpy.int64)  # checked: _check_times
        ends = starts + numpy.asarray(scopes.duration_ns, dtype=numpy.int64)
        begin_heads, end_heads = track.begin_heads, track.end_heads
        times: list[int] = []
        heads: list[tuple[bytes, ...]] = []
        open_ends: list[int] = []
        for scope_id, start, end, depth in zip(
            scopes.scope_id.tolist(), starts.tolist(), ends.tolist(), scopes.depth.tolist(),
            strict=True,
        ):  # fmt: skip
            while len(open_ends) > depth:
                times.append(open_ends.pop())
                heads.append(end_heads)
            times.append(start)
            heads.append(begin_heads[scope_id])
            open_ends.append(end)
        while open_ends:
            times.append(open_ends.pop())
            heads.append(end_heads)
        stamps = numpy.array([track.now, *times], dtype=numpy.int64)  # started: now is set
        deltas = stamps[1:] - stamps[:-1]
        if deltas.min() < 0:  # scopes that overlap without nesting: one event at a time
            for time, event_heads in zip(times, heads, strict=True):
                self._events(track, [event_heads], [self._delta(track, time)])
        else:
            track.now = times[-1]
            self._events(track, heads, deltas.tolist())
        count = len(scopes)
        self.slices += count

    def _events(self, track: _Track, heads: list[tuple[bytes, ...]], deltas: list[int]) -> None:
        """Slice events of ``track``'s sequence: each its head for the size of its
        timestamp (``deltas``, not negative), then the timestamp."""
        raw, timestamp = self._writer.raw, self._writer.uint64
        for event_heads, delta, size in zip(heads, deltas, _varint_sizes(deltas), strict=True):
            raw(event_heads[size])
            timestamp(_PACKET_TIMESTAMP, delta)
        self.packets += len(deltas)


def _check_times(frame: Frame) -> None:
    """:class:`EncodeError` unless every time of ``frame`` can be written.

    A timestamp is an ``int64`` that is not negative: every start and
    duration at least 0, every end (start + duration) at most ``2**63 - 1``,
    and each track's columns of one length. Checked before the frame's first
    byte, since its slice events are written a head, then a timestamp.
    """
    for scopes in frame.tracks:
        ref = scopes.track_ref
        lengths = {len(column) for column in _columns(scopes)}
        if len(lengths) != 1:
            raise EncodeError(f"track {ref}: columns of {sorted(lengths)} scopes")
        if not len(scopes):
            continue
        starts = numpy.asarray(scopes.start_ns, dtype=numpy.int64)
        durations = numpy.asarray(scopes.duration_ns, dtype=numpy.int64)
        earliest, shortest = int(starts.min()), int(durations.min())
        if earliest < 0:
            raise EncodeError(f"track {ref}: a scope starts at {earliest} ns")
        if shortest < 0:
            raise EncodeError(f"track {ref}: a scope lasts {shortest} ns")
        late = numpy.flatnonzero(durations > _MAX_TIME - starts)  # no overflow: starts >= 0
        if len(late):
            row = late[0]
            raise EncodeError(
                f"track {ref}: a scope starts at {starts[row]} ns and lasts {durations[row]} ns,"
                f" ending after 2**63 - 1 ns"
            )
    start, duration = int(frame.start_ns), int(frame.duration_ns)
    if start < 0 or duration < 0 or start + duration > _MAX_TIME:
        raise EncodeError(
            f"frame {frame.index}: starts at {start} ns and lasts {duration} ns"
            f" (times must be in 0..2**63 - 1 ns)"
        )


def _columns(scopes: TrackScopes) -> tuple[Any, ...]:
    return (scopes.scope_id, scopes.start_ns, scopes.duration_ns, scopes.depth)


def _varint_sizes(values: list[int]) -> list[int]:
    """The bytes of each value's varint, minus one (values are not negative)."""
    return numpy.searchsorted(_VARINT_STEPS, values, side="right").tolist()  # type: ignore[no-any-return]


class _Interned(Generic[_Key]):
    """One interning index: values under iids from 1, and the entries not yet written."""

    __slots__ = ("_iids", "_new")

    def __init__(self) -> None:
        self._iids: dict[_Key, int] = {}
        self._new: list[tuple[int, _Key]] = []

    def iid(self, value: _Key) -> int:
        """The iid of ``value``, interned now if it is new."""
        iid = self._iids.get(value)
        if iid is None:
            iid = self._iids[value] = len(self._iids) + 1
            self._new.append((iid, value))
        return iid

    def take_new(self) -> list[tuple[int, _Key]]:
        """The entries interned since the last call, in iid order."""
        new, self._new = self._new, []
        return new


def write_perfetto_trace(
    frames: Iterable[Frame],
    registry: Registry,
    path_or_file: str | os.PathLike[str] | BinaryOutput,
    *,
    session: Session | None = None,
) -> PerfettoStats:
    """Write ``frames`` as a Perfetto trace to a path or an open binary file.

    ``frames`` may be any iterable, a generator included: frames are written
    as they come, a chunk at a time, so the export holds one frame at once.
    Returns what was written. Errors as :meth:`PerfettoWriter.add_frame`.
    """
    if isinstance(path_or_file, str | os.PathLike):
        with open(path_or_file, "wb") as file:
            return write_perfetto_trace(frames, registry, file, session=session)
    with PerfettoWriter(path_or_file) as trace:
        for frame in frames:
            trace.add_frame(frame, registry, session)
    return trace.stats()


def write_perfetto_capture(
    data: bytes, path_or_file: str | os.PathLike[str] | BinaryOutput
) -> PerfettoStats:
    """Every frame of a recorded capture as a Perfetto trace, each session a process.

    The capture is read with :func:`~codec.profiler.read_capture`: from its
    first whole keyframe, resuming at the next keyframe after a damaged
    packet, so a cut file exports the frames it holds. Frames are written as
    they are read.
    """
    if isinstance(path_or_file, str | os.PathLike):
        with open(path_or_file, "wb") as file:
            return write_perfetto_capture(data, file)
    with PerfettoWriter(path_or_file) as trace:
        for receiver, item in read_capture(data):
            if isinstance(item, Frame):
                trace.add_frame(item, receiver.registry, receiver.session)
    return trace.stats()
