"""The profiler's packets: the layout of ``profiler.proto`` by name, written and read.

Strategy, layout: every field number of ``profiler.proto`` is named once,
here, in one class per message (``PacketField.HEADER``,
``TrackScopesField.START_DELTA``, ...), next to the constants of its enums
and the header's fixed values; the writer and the reader both use these
names, and ``tests/test_profiler.py`` checks them, field by field, against
the numbers protoc compiles from the ``.proto``.

Strategy, writing: :class:`PacketWriter` appends each packet as one frame of
a :class:`~codec.FrameEncoder`, field by field, straight from the recorder's
numpy columns: a fixed-width column is one ``memcpy``; a varint column goes
through the compiled packed-varint loop; the start deltas are computed into a
reusable scratch column with ``numpy.subtract(..., out=)``. Encoding a frame
therefore makes a handful of small objects per track (views, writers),
whatever the number of scopes. Frame bytes depend only on the frame, never
on the reader, so one encoding fans out to every reader.

Strategy, reading: one function per kind of packet body, each with no state
of its own and each reading with a :class:`~codec.wire.WireReader`:
:func:`read_envelope` (the flags and which body), :func:`read_header` (a
:class:`Session`), :func:`read_registry` (definitions applied to a
:class:`~codec.profiler.model.Registry`, which checks that ids arrive dense
and are never redefined), :func:`read_frame` and :func:`read_stats`. A frame
comes out as a :class:`~codec.profiler.model.Frame` only after its columns
have been checked: equal lengths, ``num_scopes``, depths starting at 0 and
rising by at most one, and every scope and track id defined. It keeps its
tracks in columns shared by the whole frame
(:class:`~codec.profiler.model.TrackColumns`), allocated once for the most
scopes its bytes can hold and cut to size, so what a frame keeps follows its
bytes, whatever their shape; ``max_elements`` bounds what one frame, one
session's registry and one header may hold. Only the fields a message
defines are kept while it is read, so unknown fields cost nothing. A packet
that breaks the protocol raises :class:`~codec.profiler.model.StreamError`;
the order of packets in a stream (keyframes, sessions, skipped frames) is
the :class:`~codec.profiler.receiver.Receiver`'s business.
"""

from __future__ import annotations

import secrets
import time
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy

from codec import varint
from codec.errors import StreamError
from codec.framing import FrameEncoder
from codec.profiler.model import (
    Frame,
    Marks,
    Registry,
    ScopeDef,
    ScopeKind,
    TrackColumns,
    TrackDef,
    TrackKind,
    TrackScopes,
)
from codec.wire import LEN, VARINT, WireReader, WireWriter

__all__ = [
    "CLOCK_MONOTONIC",
    "FEATURE_FIXED_COLUMNS",
    "FEATURE_VARINT_COLUMNS",
    "MAGIC",
    "NEEDS_STATE",
    "PROTOCOL_MAJOR",
    "PROTOCOL_MINOR",
    "STATE_CLEARED",
    "TIME_UNIT_NS",
    "FrameField",
    "FrameMetaField",
    "InternedStringField",
    "PacketField",
    "PacketWriter",
    "RegistryDeltaField",
    "ScopeDefField",
    "Session",
    "StreamHeaderField",
    "StreamStatsField",
    "TrackDefField",
    "TrackScopesField",
    "read_envelope",
    "read_frame",
    "read_header",
    "read_registry",
    "read_stats",
]

# --- field numbers, one class per message of profiler.proto ---------------------------------


class PacketField:
    """``Packet``: its flags, then one body."""

    SEQUENCE_FLAGS = 1
    HEADER = 2
    REGISTRY = 3
    FRAME = 4
    STATS = 6


class StreamHeaderField:
    """``StreamHeader``: the start of a stream, or of a keyframe."""

    MAGIC = 1
    PROTOCOL_MAJOR = 2
    PROTOCOL_MINOR = 3
    SESSION_ID = 4
    PRODUCER_NAME = 5
    PRODUCER_VERSION = 6
    TIME_UNIT_NS = 7
    CLOCK = 8
    SESSION_START_UNIX_NS = 9
    FEATURES = 10


class RegistryDeltaField:
    """``RegistryDelta``: new definitions, and on a complete registry the next free ids."""

    STRINGS = 1
    SCOPES = 2
    TRACKS = 3
    NEXT_SCOPE_ID = 5
    NEXT_STRING_IID = 6
    NEXT_TRACK_REF = 7


class InternedStringField:
    """``InternedString``."""

    IID = 1
    VALUE = 2


class ScopeDefField:
    """``ScopeDef``."""

    SCOPE_ID = 1
    NAME = 2
    KIND = 3
    FUNCTION_IID = 4
    FILE_IID = 5
    LINE = 6


class TrackDefField:
    """``TrackDef``."""

    TRACK_REF = 1
    NAME = 2
    KIND = 3
    OS_THREAD_ID = 4


class FrameField:
    """``Frame``."""

    META = 1
    TRACKS = 2


class FrameMetaField:
    """``FrameMeta``."""

    FRAME_INDEX = 1
    START_NS = 2
    DURATION_NS = 3
    NUM_SCOPES = 4


class TrackScopesField:
    """``TrackScopes``: one track's columns, of the varint family or of the fixed one."""

    TRACK_REF = 1
    SCOPE_ID = 2
    START_DELTA = 3
    DURATION = 4
    DEPTH = 5
    SCOPE_ID_FIXED = 12
    START_FIXED = 13
    DURATION_FIXED = 14


class StreamStatsField:
    """``StreamStats``."""

    FRAMES_DROPPED_TOTAL = 1
    QUEUE_CAPACITY = 4


# --- enum values and fixed values -------------------------------------------------------------

# SequenceFlags, the bits of Packet.sequence_flags.
STATE_CLEARED = 1  # on a header: drop the session's registry, a complete one follows
NEEDS_STATE = 2  # on a frame: it refers to registry ids

MAGIC = 0x31465043  # StreamHeader.magic: the bytes "CPF1"
PROTOCOL_MAJOR = 1
PROTOCOL_MINOR = 0
TIME_UNIT_NS = 1  # StreamHeader.time_unit_ns: every time is in nanoseconds
CLOCK_MONOTONIC = 1  # Clock: time.perf_counter_ns()
FEATURE_VARINT_COLUMNS = "varint_columns"
FEATURE_FIXED_COLUMNS = "fixed_columns"

# The columns of each family, as (scope id, start, duration), and their protobuf types.
_VARINT_COLUMNS = (
    TrackScopesField.SCOPE_ID,
    TrackScopesField.START_DELTA,
    TrackScopesField.DURATION,
)
_FIXED_COLUMNS = (
    TrackScopesField.SCOPE_ID_FIXED,
    TrackScopesField.START_FIXED,
    TrackScopesField.DURATION_FIXED,
)
_COLUMN_KINDS = dict(
    zip(
        _VARINT_COLUMNS + _FIXED_COLUMNS,
        ("uint32", "uint64", "uint64", "fixed32", "sfixed64", "fixed64"),
        strict=True,
    )
)
_BODIES = (PacketField.HEADER, PacketField.REGISTRY, PacketField.FRAME, PacketField.STATS)


@dataclass(frozen=True, slots=True)
class Session:
    """What a stream header says about its producer."""

    session_id: int
    producer_name: str = ""
    producer_version: str = ""
    start_unix_ns: int = 0
    features: tuple[str, ...] = ()

    @classmethod
    def new(cls, producer_name: str = "", *, fixed_columns: bool = False) -> Session:
        """A session with a fresh random id, starting now."""
        from codec import __version__

        feature = FEATURE_FIXED_COLUMNS if fixed_columns else FEATURE_VARINT_COLUMNS
        return cls(secrets.randbits(64), producer_name, __version__, time.time_ns(), (feature,))

    @property
    def fixed_columns(self) -> bool:
        return FEATURE_FIXED_COLUMNS in self.features


# --- writing ----------------------------------------------------------------------------------


class PacketWriter:
    """Writes the packets of one session into :class:`~codec.FrameEncoder` buffers."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._fixed = session.fixed_columns
        self._deltas = numpy.zeros(1024, dtype=numpy.int64)  # scratch for start deltas

    def header(self, out: FrameEncoder) -> None:
        """A header packet: the start of the stream, or of a keyframe."""
        session = self.session
        with out.frame() as packet:
            packet.uint32(PacketField.SEQUENCE_FLAGS, STATE_CLEARED)
            with packet.message(PacketField.HEADER) as header:
                header.fixed32(StreamHeaderField.MAGIC, MAGIC)  # first: find_keyframe looks for it
                header.uint32(StreamHeaderField.PROTOCOL_MAJOR, PROTOCOL_MAJOR)
                header.uint32(StreamHeaderField.PROTOCOL_MINOR, PROTOCOL_MINOR)
                header.fixed64(StreamHeaderField.SESSION_ID, session.session_id)
                _string(header, StreamHeaderField.PRODUCER_NAME, session.producer_name)
                _string(header, StreamHeaderField.PRODUCER_VERSION, session.producer_version)
                header.uint32(StreamHeaderField.TIME_UNIT_NS, TIME_UNIT_NS)
                header.enum(StreamHeaderField.CLOCK, CLOCK_MONOTONIC)
                header.sfixed64(StreamHeaderField.SESSION_START_UNIX_NS, session.start_unix_ns)
                for feature in session.features:
                    header.string(StreamHeaderField.FEATURES, feature)

    def registry(self, out: FrameEncoder, registry: Registry, since: Marks, until: Marks) -> bool:
        """The definitions in ``[since, until)`` as one registry packet; False if none."""
        if since == until:
            return False
        complete = since == Marks()
        with out.frame() as packet, packet.message(PacketField.REGISTRY) as delta:
            for iid in range(since.strings + 1, until.strings + 1):
                with delta.message(RegistryDeltaField.STRINGS) as entry:
                    entry.uint32(InternedStringField.IID, iid)
                    entry.string(InternedStringField.VALUE, registry.strings[iid - 1])
            for scope in registry.scopes[since.scopes : until.scopes]:
                with delta.message(RegistryDeltaField.SCOPES) as entry:
                    entry.uint32(ScopeDefField.SCOPE_ID, scope.scope_id)
                    _string(entry, ScopeDefField.NAME, scope.name)
                    entry.enum(ScopeDefField.KIND, scope.kind)
                    _uint(entry, ScopeDefField.FUNCTION_IID, registry.string_id(scope.function))
                    _uint(entry, ScopeDefField.FILE_IID, registry.string_id(scope.file))
                    _uint(entry, ScopeDefField.LINE, scope.line)
            for track in registry.tracks[since.tracks : until.tracks]:
                with delta.message(RegistryDeltaField.TRACKS) as entry:
                    entry.uint32(TrackDefField.TRACK_REF, track.track_ref)
                    _string(entry, TrackDefField.NAME, track.name)
                    entry.enum(TrackDefField.KIND, track.kind)
                    _uint(entry, TrackDefField.OS_THREAD_ID, track.os_thread_id)
            if complete:
                delta.uint32(RegistryDeltaField.NEXT_SCOPE_ID, until.scopes + 1)
                delta.uint32(RegistryDeltaField.NEXT_STRING_IID, until.strings + 1)
                delta.uint32(RegistryDeltaField.NEXT_TRACK_REF, until.tracks + 1)
        return True

    def keyframe(self, out: FrameEncoder, registry: Registry) -> Marks:
        """A header and every definition so far; returns the marks they cover."""
        marks = registry.marks()
        self.header(out)
        self.registry(out, registry, Marks(), marks)
        return marks

    def frame(
        self,
        out: FrameEncoder,
        index: int,
        start_ns: int,
        duration_ns: int,
        tracks: Iterable[TrackScopes],
        num_scopes: int,
    ) -> None:
        """A frame packet; ``start_ns`` is the earliest start among ``tracks``."""
        with out.frame() as packet:
            packet.uint32(PacketField.SEQUENCE_FLAGS, NEEDS_STATE)
            with packet.message(PacketField.FRAME) as frame:
                with frame.message(FrameField.META) as meta:
                    meta.uint64(FrameMetaField.FRAME_INDEX, index)
                    meta.sint64(FrameMetaField.START_NS, start_ns)
                    meta.uint64(FrameMetaField.DURATION_NS, duration_ns)
                    meta.uint32(FrameMetaField.NUM_SCOPES, num_scopes)
                for track in tracks:
                    with frame.message(FrameField.TRACKS) as columns:
                        self._columns(columns, track, start_ns)

    def stats(self, out: FrameEncoder, frames_dropped: int, queue_capacity: int) -> None:
        """A stats packet for one reader: how many frames it has missed so far."""
        with out.frame() as packet, packet.message(PacketField.STATS) as stats:
            stats.uint64(StreamStatsField.FRAMES_DROPPED_TOTAL, frames_dropped)
            stats.uint32(StreamStatsField.QUEUE_CAPACITY, queue_capacity)

    def _columns(self, writer: WireWriter, track: TrackScopes, start_ns: int) -> None:
        writer.uint32(TrackScopesField.TRACK_REF, track.track_ref)
        fields, starts = _FIXED_COLUMNS, track.start_ns
        if not self._fixed:  # each start from the one before, the first from the frame's
            fields, starts = _VARINT_COLUMNS, self._start_deltas(starts, start_ns)
        values = (track.scope_id, starts, track.duration_ns.view(numpy.uint64))
        for field, column in zip(fields, values, strict=True):
            writer.packed(field, _COLUMN_KINDS[field], column)
        writer.bytes(TrackScopesField.DEPTH, track.depth)

    def _start_deltas(self, starts: Any, start_ns: int) -> Any:
        """``starts`` as deltas, in the scratch column (valid until the next track)."""
        count = len(starts)
        if len(self._deltas) < count:
            self._deltas = numpy.zeros(max(count, 2 * len(self._deltas)), dtype=numpy.int64)
        deltas = self._deltas[:count]
        deltas[0] = starts[0] - start_ns
        numpy.subtract(starts[1:], starts[:-1], out=deltas[1:])
        return deltas.view(numpy.uint64)


def _string(writer: WireWriter, field: int, text: str) -> None:
    if text:  # proto3: a default value is not written
        writer.string(field, text)


def _uint(writer: WireWriter, field: int, value: int) -> None:
    if value:
        writer.uint64(field, value)


# --- reading ----------------------------------------------------------------------------------


def read_envelope(payload: memoryview | bytes) -> tuple[int, int, memoryview | None]:
    """A packet's flags, the field number of its body and the body.

    The body is ``None`` for a packet this version does not know (a body
    field it does not read, or none at all): a reader skips it.
    """
    flags = 0
    kind = 0
    body = None
    for field, wire_type, value in WireReader(payload):
        if field == PacketField.SEQUENCE_FLAGS and wire_type == VARINT:
            flags = value
        elif field in _BODIES and wire_type == LEN:
            kind, body = field, value
    return flags, kind, body


def read_header(body: memoryview, max_elements: int) -> Session:
    """The session a header announces; :class:`StreamError` for another format or major
    version, or more than ``max_elements`` features."""
    fields = _scalars(body)
    magic = _number(fields, StreamHeaderField.MAGIC)
    if magic != MAGIC:
        raise StreamError(f"not a profiler stream: magic {magic:#x}, expected {MAGIC:#x}")
    major = _number(fields, StreamHeaderField.PROTOCOL_MAJOR)
    if major != PROTOCOL_MAJOR:
        minor = _number(fields, StreamHeaderField.PROTOCOL_MINOR)
        raise StreamError(
            f"profiler stream version {major}.{minor} is not supported "
            f"by this reader (version {PROTOCOL_MAJOR}.{PROTOCOL_MINOR})"
        )
    features: list[str] = []
    for number, _, value in WireReader(body):
        if number == StreamHeaderField.FEATURES:
            if len(features) == max_elements:
                raise StreamError(f"a header of more than max_elements ({max_elements}) features")
            features.append(_text(value))
    return Session(
        _number(fields, StreamHeaderField.SESSION_ID),
        _text(fields.get(StreamHeaderField.PRODUCER_NAME)),
        _text(fields.get(StreamHeaderField.PRODUCER_VERSION)),
        _signed(_number(fields, StreamHeaderField.SESSION_START_UNIX_NS)),
        tuple(features),
    )


def read_registry(body: memoryview, registry: Registry, max_elements: int) -> None:
    """Apply a registry packet's definitions to ``registry``.

    :class:`StreamError` past ``max_elements`` definitions in the registry,
    or when a complete registry's next free ids say it misses some.
    """
    nexts = {}
    for number, wire_type, value in WireReader(body):
        if wire_type != LEN:
            if number in _NEXT_IDS:
                nexts[number] = value
            continue
        entry = _scalars(value)
        if number == RegistryDeltaField.STRINGS:
            registry.define_string(
                _number(entry, InternedStringField.IID),
                _text(entry.get(InternedStringField.VALUE)),
            )
        elif number == RegistryDeltaField.SCOPES:
            registry.define_scope(
                ScopeDef(
                    _number(entry, ScopeDefField.SCOPE_ID),
                    _text(entry.get(ScopeDefField.NAME)),
                    _enum(ScopeKind, _number(entry, ScopeDefField.KIND)),
                    registry.resolve(_number(entry, ScopeDefField.FUNCTION_IID)),
                    registry.resolve(_number(entry, ScopeDefField.FILE_IID)),
                    _number(entry, ScopeDefField.LINE),
                )
            )
        elif number == RegistryDeltaField.TRACKS:
            registry.define_track(
                TrackDef(
                    _number(entry, TrackDefField.TRACK_REF),
                    _text(entry.get(TrackDefField.NAME)),
                    _enum(TrackKind, _number(entry, TrackDefField.KIND)),
                    _number(entry, TrackDefField.OS_THREAD_ID),
                )
            )
        else:
            continue
        # checked once applied: a repeated definition (a keyframe's) adds nothing
        if len(registry.strings) + len(registry.scopes) + len(registry.tracks) > max_elements:
            raise StreamError(f"a session of more than max_elements ({max_elements}) definitions")
    for number, table in (
        (RegistryDeltaField.NEXT_SCOPE_ID, registry.scopes),
        (RegistryDeltaField.NEXT_STRING_IID, registry.strings),
        (RegistryDeltaField.NEXT_TRACK_REF, registry.tracks),
    ):
        if number in nexts and _number(nexts, number) != len(table) + 1:
            raise StreamError(
                f"incomplete registry: {len(table)} entries where the sender has "
                f"{_number(nexts, number) - 1}"
            )


_NEXT_IDS = (
    RegistryDeltaField.NEXT_SCOPE_ID,
    RegistryDeltaField.NEXT_STRING_IID,
    RegistryDeltaField.NEXT_TRACK_REF,
)


def read_frame(body: memoryview, registry: Registry, max_elements: int) -> Frame:
    """A frame packet's frame, checked against ``registry``; :class:`StreamError` for
    columns that disagree, undefined ids, or more than ``max_elements`` tracks and scopes."""
    meta: dict[int, Any] = {}
    for number, wire_type, value in WireReader(body):
        if number == FrameField.META and wire_type == LEN:
            meta = _scalars(value)
    start = varint.zigzag_decode(_number(meta, FrameMetaField.START_NS))
    columns = _FrameColumns(len(body), max_elements)
    for number, wire_type, value in WireReader(body):
        if number == FrameField.TRACKS and wire_type == LEN:
            _read_track(value, start, registry, columns)
    tracks = columns.tracks()
    _check_trees(tracks, registry)
    _check_times(tracks)
    duration = _number(meta, FrameMetaField.DURATION_NS)
    if duration > _MAX_TIME - start:
        raise StreamError(f"a frame starts at {start} ns and lasts {duration} ns: past 2**63 - 1")
    frame = Frame(_number(meta, FrameMetaField.FRAME_INDEX), start, duration, tracks)
    declared = _number(meta, FrameMetaField.NUM_SCOPES)
    if frame.num_scopes != declared:
        raise StreamError(
            f"frame {frame.index} declares {declared} scopes and holds {frame.num_scopes}"
        )
    return frame


def read_stats(body: memoryview) -> int:
    """A stats packet's total of frames dropped for its reader."""
    return _number(_scalars(body), StreamStatsField.FRAMES_DROPPED_TOTAL)


def _read_track(body: memoryview, frame_start: int, registry: Registry, out: _FrameColumns) -> None:
    """Check one track's reference and column lengths, and append its columns to the frame's.

    Depths and scope ids are checked for the whole frame at once
    (:func:`_check_trees`): a track costs the same few calls whatever its
    size, and an empty one none at all.
    """
    reader = WireReader(body)
    track_ref = 0
    columns: dict[int, Any] = {}
    for number, wire_type, value in reader:
        if number == TrackScopesField.TRACK_REF and wire_type == VARINT:
            track_ref = value
        elif wire_type == LEN and number in _COLUMN_KINDS:
            columns[number] = reader.packed(value, _COLUMN_KINDS[number])
        elif wire_type == LEN and number == TrackScopesField.DEPTH:
            columns[number] = numpy.frombuffer(value, dtype=numpy.uint8)
    registry.track(track_ref)  # raises if undefined
    fixed = bool(columns.keys() & _FIXED_COLUMNS)
    if fixed and columns.keys() & _VARINT_COLUMNS:
        raise StreamError(f"track {track_ref} mixes the varint and fixed columns")
    ids, starts, durations = (
        columns.get(number, _EMPTY) for number in (_FIXED_COLUMNS if fixed else _VARINT_COLUMNS)
    )
    depth = columns.get(TrackScopesField.DEPTH, _EMPTY)
    count = len(ids)
    if not len(starts) == len(durations) == len(depth) == count:
        raise StreamError(
            f"track {track_ref}: columns of {count}, {len(starts)}, {len(durations)} "
            f"and {len(depth)} scopes"
        )
    rows = out.add(track_ref, count)
    if not count:
        return
    out.scope_id[rows] = ids
    if fixed:
        out.start_ns[rows] = starts
    else:  # start deltas, from the frame's start
        numpy.cumsum(starts.view(numpy.int64), out=out.start_ns[rows])
        out.start_ns[rows] += frame_start
    out.duration_ns[rows] = durations.view(numpy.int64)
    out.depth[rows] = depth


def _check_trees(tracks: TrackColumns, registry: Registry) -> None:
    """Every track's depths start at 0 and rise by at most 1; every scope id is defined."""
    depth, ids, ends = tracks.depth, tracks.scope_id, tracks.ends
    rows = len(ids)
    if not rows:
        return
    # A scope is at most one level deeper than the scope before it, and a
    # track's first scope is at level 0.
    deepest = numpy.empty(rows, dtype=numpy.int16)
    deepest[0] = 0
    numpy.add(depth[:-1], 1, out=deepest[1:], dtype=numpy.int16)
    deepest[ends[:-1][ends[:-1] < rows]] = 0
    bad = numpy.flatnonzero(depth > deepest)
    if len(bad):
        ref = tracks.track_refs[numpy.searchsorted(ends, bad[0], side="right")]
        raise StreamError(f"track {ref}: depths are not in pre-order")
    defined = len(registry.scopes)
    if ids.min() < 1 or ids.max() > defined:
        row = numpy.flatnonzero((ids < 1) | (ids > defined))[0]
        ref = tracks.track_refs[numpy.searchsorted(ends, row, side="right")]
        raise StreamError(f"track {ref}: scope id outside 1..{defined}")


def _check_times(tracks: TrackColumns) -> None:
    """Every duration is at least 0, and every scope ends by ``2**63 - 1`` ns.

    A duration is a ``uint64`` on the wire, kept as an ``int64``: one of
    ``2**63`` or more would read as negative, and an end past the ``int64``
    range would wrap, so either is refused here rather than met by a
    consumer (an export, an analysis) halfway through its output.
    """
    starts, durations, ends = tracks.start_ns, tracks.duration_ns, tracks.ends
    if not len(durations):
        return
    bad = numpy.flatnonzero(durations < 0)
    what = "lasts a negative time"
    if not len(bad):
        bad = numpy.flatnonzero(starts + durations < starts)  # wrapped past 2**63 - 1
        what = "ends after 2**63 - 1 ns"
    if len(bad):
        ref = tracks.track_refs[numpy.searchsorted(ends, bad[0], side="right")]
        raise StreamError(f"track {ref}: a scope {what}")


_MAX_TIME = 2**63 - 1
_EMPTY = numpy.zeros(0, dtype=numpy.uint64)
# Every scope takes at least 4 bytes of its track on the wire (a byte in each column).
_MIN_SCOPE_BYTES = 4


class _FrameColumns:
    """A frame's columns while its tracks are read, sized once from the frame's bytes.

    A frame of ``size`` bytes holds at most ``size // 4`` scopes, so the
    columns are allocated once for that many (21 bytes per 4 wire bytes)
    and copied to their exact length at the end: nothing grows, and nothing
    is reserved from a declared count.
    """

    def __init__(self, size: int, max_elements: int) -> None:
        rows = min(size // _MIN_SCOPE_BYTES, max_elements)
        self.scope_id = numpy.empty(rows, dtype=numpy.uint32)
        self.start_ns = numpy.empty(rows, dtype=numpy.int64)
        self.duration_ns = numpy.empty(rows, dtype=numpy.int64)
        self.depth = numpy.empty(rows, dtype=numpy.uint8)
        self.track_refs = array("Q")
        self.ends = array("q")
        self.count = 0
        self.max_elements = max_elements

    def add(self, track_ref: int, count: int) -> slice:
        """The rows of a new track of ``count`` scopes; StreamError past ``max_elements``."""
        if len(self.ends) + 1 + self.count + count > self.max_elements:
            raise StreamError(
                f"a frame of more than max_elements ({self.max_elements}) tracks and scopes"
            )
        rows = slice(self.count, self.count + count)
        self.count += count
        self.track_refs.append(track_ref)
        self.ends.append(self.count)
        return rows

    def tracks(self) -> TrackColumns:
        rows = self.count
        return TrackColumns(
            numpy.array(self.track_refs, dtype=numpy.uint32),
            numpy.array(self.ends, dtype=numpy.int64),
            self.scope_id[:rows].copy(),
            self.start_ns[:rows].copy(),
            self.duration_ns[:rows].copy(),
            self.depth[:rows].copy(),
        )


# The highest-numbered field that :func:`_scalars` keeps: every scalar field of the small
# messages it reads (the header's repeated features come after it).
_LAST_SCALAR_FIELD = StreamHeaderField.SESSION_START_UNIX_NS


def _scalars(body: memoryview) -> dict[int, Any]:
    """The fields of a small message by number (the last value wins), up to the last scalar
    field any of them defines: unknown fields above it are not kept."""
    fields: dict[int, Any] = {}
    for number, _, value in WireReader(body):
        if number <= _LAST_SCALAR_FIELD:
            fields[number] = value
    return fields


def _number(fields: dict[int, Any], number: int) -> int:
    """An integer field (0 when absent); :class:`StreamError` for a LEN value."""
    value = fields.get(number, 0)
    if not isinstance(value, int):
        raise StreamError(f"field {number} holds bytes where a number belongs")
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, memoryview):
        raise StreamError("a number where a string belongs")
    try:
        return str(value, "utf-8")
    except UnicodeDecodeError as exc:
        raise StreamError(f"invalid UTF-8 in a string field: {exc.reason}") from None


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _enum(kind: Any, value: int) -> Any:
    try:
        return kind(value)
    except ValueError:
        return kind(0)  # a kind from a newer version: unspecified
