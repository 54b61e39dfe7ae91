"""The profiler stream: packets written with ``WireWriter`` and read with ``WireReader``.

Strategy, writing: :class:`PacketWriter` appends each packet of
``profiler.proto`` as one frame of a :class:`~codec.FrameEncoder`, field by
field, straight from the recorder's numpy columns: a fixed-width column is
one ``memcpy``; a varint column goes through the compiled packed-varint
loop; the start deltas are computed into a reusable scratch column with
``numpy.subtract(..., out=)``. Encoding a frame therefore makes a handful of
small objects per track (views, writers), whatever the number of scopes.
Frame bytes depend only on the frame, never on the reader, so one encoding
fans out to every reader.

Strategy, reading: :class:`Receiver` is sans-IO. Bytes go into a
:class:`~codec.FrameDecoder` (limits, split invariance); each packet is read
with a :class:`~codec.WireReader`. Registry packets are applied to
:attr:`Receiver.registry` (ids must arrive dense and are never redefined);
a header starts a keyframe, and a new ``session_id`` starts a new registry
(a restarted producer reuses ids for other scopes). Frames come out as
:class:`~codec.profiler.model.Frame` objects after their columns have been
checked: equal lengths, ``num_scopes``, depths starting at 0 and rising by
at most one, and every scope and track id defined. A frame keeps its
tracks in columns shared by the whole frame
(:class:`~codec.profiler.model.TrackColumns`), allocated once for the
most scopes its bytes can hold and cut to size, so what a frame keeps
follows its bytes, whatever their shape; ``max_elements`` bounds what one
frame, one session's registry and one header may hold. Frames that need a
registry before any keyframe was read (a file cut mid-stream) are skipped
and counted. A keyframe repeats the header and every definition so far, so
a header, or a registry packet into an empty registry, that is byte for byte
the last one read takes what that one decoded to instead of being parsed
again: a comparison of bytes and a copy of the tables, with no definition
decoded twice. Every error is a :class:`~codec.DecodeError`; a bad packet
raises :class:`~codec.profiler.model.StreamError` with the stream offset of
the packet.

A file is the same stream. :func:`read_capture` starts at the first keyframe
(found by the header's magic number) and, after a damaged packet, resumes at
the next keyframe, so a file cut anywhere still yields every frame after its
first whole keyframe. It splits the packets itself, straight from the file's
bytes, so a resync never copies the rest of the file again: reading is
linear in the file's size, however often it is damaged. The receivers it
starts share what the last keyframe decoded to, so a keyframe that recurs
after each damaged packet is parsed once.
"""

from __future__ import annotations

import itertools
import secrets
import time
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy

from codec import varint
from codec.errors import DecodeError
from codec.framing import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, FrameEncoder
from codec.profiler.model import (
    Frame,
    Marks,
    Registry,
    ScopeDef,
    ScopeKind,
    StreamError,
    TrackColumns,
    TrackDef,
    TrackKind,
    TrackScopes,
)
from codec.wire import I32, LEN, VARINT, WireReader, WireWriter

MAGIC = 0x31465043  # the bytes "CPF1"
PROTOCOL_MAJOR = 1
PROTOCOL_MINOR = 0
CLOCK_MONOTONIC = 1

# Packet.sequence_flags
STATE_CLEARED = 1
NEEDS_STATE = 2

# Packet body fields.
_HEADER, _REGISTRY, _FRAME, _STATS = 2, 3, 4, 6

# The most tracks and scopes one frame, definitions one session, and features one
# header may hold: a frame keeps 21 bytes per scope and 12 per track (at most 21 MiB
# then), a definition about 100-150; the number is the struct decoder's element budget.
DEFAULT_MAX_ELEMENTS = 1_000_000

# The header's magic as it appears in a packet: tag of field 1, fixed32.
_MAGIC_FIELD = bytes([1 << 3 | I32]) + MAGIC.to_bytes(4, "little")
# A header packet starts with its flags (field 1, varint) or the header (field 2, LEN).
_FIRST_TAGS = (1 << 3 | VARINT, _HEADER << 3 | LEN)


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

        feature = "fixed_columns" if fixed_columns else "varint_columns"
        return cls(secrets.randbits(64), producer_name, __version__, time.time_ns(), (feature,))

    @property
    def fixed_columns(self) -> bool:
        return "fixed_columns" in self.features


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
            packet.uint32(1, STATE_CLEARED)
            with packet.message(_HEADER) as header:
                header.fixed32(1, MAGIC)
                header.uint32(2, PROTOCOL_MAJOR)
                header.uint32(3, PROTOCOL_MINOR)
                header.fixed64(4, session.session_id)
                _string(header, 5, session.producer_name)
                _string(header, 6, session.producer_version)
                header.uint32(7, 1)
                header.enum(8, CLOCK_MONOTONIC)
                header.sfixed64(9, session.start_unix_ns)
                for feature in session.features:
                    header.string(10, feature)

    def registry(self, out: FrameEncoder, registry: Registry, since: Marks, until: Marks) -> bool:
        """The definitions in ``[since, until)`` as one registry packet; False if none."""
        if since == until:
            return False
        complete = since == Marks()
        with out.frame() as packet, packet.message(_REGISTRY) as delta:
            for iid in range(since.strings + 1, until.strings + 1):
                with delta.message(1) as entry:
                    entry.uint32(1, iid)
                    entry.string(2, registry.strings[iid - 1])
            for scope in registry.scopes[since.scopes : until.scopes]:
                with delta.message(2) as entry:
                    entry.uint32(1, scope.scope_id)
                    _string(entry, 2, scope.name)
                    entry.enum(3, scope.kind)
                    _uint(entry, 4, registry.string_id(scope.function))
                    _uint(entry, 5, registry.string_id(scope.file))
                    _uint(entry, 6, scope.line)
            for track in registry.tracks[since.tracks : until.tracks]:
                with delta.message(3) as entry:
                    entry.uint32(1, track.track_ref)
                    _string(entry, 2, track.name)
                    entry.enum(3, track.kind)
                    _uint(entry, 4, track.os_thread_id)
            if complete:
                delta.uint32(5, until.scopes + 1)
                delta.uint32(6, until.strings + 1)
                delta.uint32(7, until.tracks + 1)
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
            packet.uint32(1, NEEDS_STATE)
            with packet.message(_FRAME) as frame:
                with frame.message(1) as meta:
                    meta.uint64(1, index)
                    meta.sint64(2, start_ns)
                    meta.uint64(3, duration_ns)
                    meta.uint32(4, num_scopes)
                for track in tracks:
                    with frame.message(2) as columns:
                        self._columns(columns, track, start_ns)

    def stats(self, out: FrameEncoder, frames_dropped: int, queue_capacity: int) -> None:
        """A stats packet for one reader: how many frames it has missed so far."""
        with out.frame() as packet, packet.message(_STATS) as stats:
            stats.uint64(1, frames_dropped)
            stats.uint32(4, queue_capacity)

    def _columns(self, writer: WireWriter, track: TrackScopes, start_ns: int) -> None:
        writer.uint32(1, track.track_ref)
        count = len(track.scope_id)
        durations = track.duration_ns.view(numpy.uint64)
        if self._fixed:
            writer.packed(12, "fixed32", track.scope_id)
            writer.packed(13, "sfixed64", track.start_ns)
            writer.packed(14, "fixed64", durations)
        else:
            if len(self._deltas) < count:
                self._deltas = numpy.zeros(max(count, 2 * len(self._deltas)), dtype=numpy.int64)
            deltas = self._deltas[:count]
            starts = track.start_ns
            deltas[0] = starts[0] - start_ns
            numpy.subtract(starts[1:], starts[:-1], out=deltas[1:])
            writer.packed(2, "uint32", track.scope_id)
            writer.packed(3, "uint64", deltas.view(numpy.uint64))
            writer.packed(4, "uint64", durations)
        writer.bytes(5, track.depth)


def _string(writer: WireWriter, field: int, text: str) -> None:
    if text:  # proto3: a default value is not written
        writer.string(field, text)


def _uint(writer: WireWriter, field: int, value: int) -> None:
    if value:
        writer.uint64(field, value)


class Receiver:
    """Reads a profiler stream: applies registry packets, yields sessions and frames.

    Feed bytes with :meth:`feed` (or ``get_buffer``/``buffer_updated`` of
    :attr:`decoder`), then iterate: each item is a :class:`Session` (every
    header: the start of the stream or of a keyframe; a new ``session_id``
    means a restarted producer) or a :class:`~codec.profiler.model.Frame`.
    A reader that splits the stream itself hands over one packet at a time
    with :meth:`read_packet` instead.

    ``max_elements`` bounds what a peer can make the receiver keep: the
    tracks and scopes of one frame together, and the definitions (strings,
    scopes, tracks) of one session; past it, :class:`StreamError`. A frame
    is kept as columns shared by its tracks (:class:`TrackColumns`), so what
    it costs follows its bytes on the wire.
    """

    def __init__(
        self,
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_elements: int = DEFAULT_MAX_ELEMENTS,
    ) -> None:
        self.decoder = FrameDecoder(max_frame_size)
        self.max_elements = max_elements
        self.registry = Registry()
        self.session: Session | None = None
        self.has_state = False  # a keyframe of the current session has been read
        self.packets = 0
        self.frames = 0
        self.frames_skipped = 0  # frames before the first keyframe
        self.frames_dropped = 0  # frames the sender dropped for this reader (its stats)
        self._offset = 0  # stream offset of the next packet
        self._repeats = _Repeats()

    def feed(self, data: Any) -> None:
        self.decoder.feed(data)

    def feed_eof(self) -> None:
        self.decoder.feed_eof()

    def __iter__(self) -> Iterator[Session | Frame]:
        decoder = self.decoder
        while True:
            before = decoder.buffered
            payload = decoder.next_frame()
            if payload is None:
                return
            # The bytes the packet took in the stream: its prefix may be padded.
            item = self._read(payload, before - decoder.buffered)
            if item is not None:
                yield item

    def read_packet(self, payload: memoryview | bytes) -> Session | Frame | None:
        """Apply one packet, given as its payload (the bytes after the length prefix).

        For readers that split the stream themselves (a socket's own frame
        decoder, a recorder that also keeps each packet's bytes). Returns the
        header's :class:`Session`, a frame, or ``None`` for a registry or
        stats packet, a skipped frame, or a packet this version does not know.
        Error offsets count each prefix as written minimally.
        """
        return self._read(payload, varint.size(len(payload)) + len(payload))

    def _read(self, payload: memoryview | bytes, size: int) -> Session | Frame | None:
        offset = self._offset
        self._offset += size
        self.packets += 1
        try:
            return self._packet(payload)
        except StreamError as exc:
            if exc.offset is None:
                raise StreamError(exc.message, offset) from exc
            raise
        except DecodeError as exc:
            raise StreamError(
                f"malformed packet: {exc.message} at byte {exc.offset} of the packet", offset
            ) from exc

    def _packet(self, payload: memoryview | bytes) -> Session | Frame | None:
        flags = 0
        body = None
        kind = 0
        for field, wire_type, value in WireReader(payload):
            if field == 1 and wire_type == VARINT:
                flags = value
            elif field in (_HEADER, _REGISTRY, _FRAME, _STATS) and wire_type == LEN:
                kind, body = field, value
        if body is None:
            return None  # a packet this version does not know: skipped
        if kind == _HEADER:
            return self._header(body, flags)
        if kind == _REGISTRY:
            self._registry(body)
        elif kind == _FRAME:
            if flags & NEEDS_STATE and not self.has_state:
                self.frames_skipped += 1
                return None
            self.frames += 1
            return self._frame(body)
        else:
            self._stats(body)
        return None

    def _header(self, body: memoryview, flags: int) -> Session:
        key = (self.max_elements, bytes(body))
        session: Session | None = self._repeats.get(_HEADER, key)
        if session is None:
            session = self._session(body)
            self._repeats.put(_HEADER, key, session)
        if flags & STATE_CLEARED or self.session is None or session != self.session:
            self.registry = Registry()
        self.session = session
        self.has_state = True
        return session

    def _session(self, body: memoryview) -> Session:
        fields = _scalars(body)
        magic = _number(fields, 1)
        if magic != MAGIC:
            raise StreamError(f"not a profiler stream: magic {magic:#x}, expected {MAGIC:#x}")
        major = _number(fields, 2)
        if major != PROTOCOL_MAJOR:
            raise StreamError(
                f"profiler stream version {major}.{_number(fields, 3)} is not supported "
                f"by this reader (version {PROTOCOL_MAJOR}.{PROTOCOL_MINOR})"
            )
        return Session(
            _number(fields, 4),
            _text(fields.get(5)),
            _text(fields.get(6)),
            _signed(_number(fields, 9)),
            self._features(body),
        )

    def _features(self, body: memoryview) -> tuple[str, ...]:
        """The header's feature strings (field 10), at most ``max_elements`` of them."""
        features: list[str] = []
        for field, _, value in WireReader(body):
            if field == 10:
                if len(features) == self.max_elements:
                    raise StreamError(
                        f"a header of more than max_elements ({self.max_elements}) features"
                    )
                features.append(_text(value))
        return tuple(features)

    def _registry(self, body: memoryview) -> None:
        """Apply a registry packet; into an empty registry, a repeat of the last one is copied."""
        registry = self.registry
        if not registry.empty:
            self._define(body, registry)
            return
        key = (self.max_elements, bytes(body))
        known = self._repeats.get(_REGISTRY, key)
        if known is None:
            self._define(body, registry)
            self._repeats.put(_REGISTRY, key, (registry, registry.marks()))
        else:
            registry.copy_from(*known)

    def _define(self, body: memoryview, registry: Registry) -> None:
        nexts = {}
        for field, wire_type, value in WireReader(body):
            if wire_type != LEN:
                if field in (5, 6, 7):
                    nexts[field] = value
                continue
            entry = _scalars(value)
            if field == 1:
                registry.define_string(_number(entry, 1), _text(entry.get(2)))
            elif field == 2:
                registry.define_scope(
                    ScopeDef(
                        _number(entry, 1),
                        _text(entry.get(2)),
                        _enum(ScopeKind, _number(entry, 3)),
                        registry.resolve(_number(entry, 4)),
                        registry.resolve(_number(entry, 5)),
                        _number(entry, 6),
                    )
                )
            elif field == 3:
                registry.define_track(
                    TrackDef(
                        _number(entry, 1),
                        _text(entry.get(2)),
                        _enum(TrackKind, _number(entry, 3)),
                        _number(entry, 4),
                    )
                )
            else:
                continue
            # checked once applied: a repeated definition (a keyframe's) adds nothing
            if (
                len(registry.strings) + len(registry.scopes) + len(registry.tracks)
                > self.max_elements
            ):
                raise StreamError(
                    f"a session of more than max_elements ({self.max_elements}) definitions"
                )
        for field, table in ((5, registry.scopes), (6, registry.strings), (7, registry.tracks)):
            if field in nexts and _number(nexts, field) != len(table) + 1:
                raise StreamError(
                    f"incomplete registry: {len(table)} entries where the sender has "
                    f"{_number(nexts, field) - 1}"
                )

    def _frame(self, body: memoryview) -> Frame:
        meta: dict[int, Any] = {}
        for field, wire_type, value in WireReader(body):
            if field == 1 and wire_type == LEN:
                meta = _scalars(value)
        start = varint.zigzag_decode(_number(meta, 2))
        columns = _FrameColumns(len(body), self.max_elements)
        for field, wire_type, value in WireReader(body):
            if field == 2 and wire_type == LEN:
                self._track(value, start, columns)
        tracks = columns.tracks()
        self._check_trees(tracks)
        frame = Frame(_number(meta, 1), start, _number(meta, 3), tracks)
        if frame.num_scopes != _number(meta, 4):
            raise StreamError(
                f"frame {frame.index} declares {_number(meta, 4)} scopes and holds "
                f"{frame.num_scopes}"
            )
        return frame

    def _track(self, body: memoryview, frame_start: int, out: _FrameColumns) -> None:
        """Check one track's reference and column lengths, and append its columns to the frame's.

        Depths and scope ids are checked for the whole frame at once
        (:meth:`_check_trees`): a track costs the same few calls whatever
        its size, and an empty one none at all.
        """
        reader = WireReader(body)
        track_ref = 0
        columns: dict[int, Any] = {}
        for field, wire_type, value in reader:
            if field == 1 and wire_type == VARINT:
                track_ref = value
            elif wire_type == LEN and field in _COLUMN_KINDS:
                columns[field] = reader.packed(value, _COLUMN_KINDS[field])
            elif wire_type == LEN and field == 5:
                columns[5] = numpy.frombuffer(value, dtype=numpy.uint8)
        self.registry.track(track_ref)  # raises if undefined
        fixed = bool(columns.keys() & {12, 13, 14})
        if fixed and columns.keys() & {2, 3, 4}:
            raise StreamError(f"track {track_ref} mixes the varint and fixed columns")
        ids, starts, durations = (
            columns.get(f, _EMPTY) for f in ((12, 13, 14) if fixed else (2, 3, 4))
        )
        depth = columns.get(5, _EMPTY)
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

    def _check_trees(self, tracks: TrackColumns) -> None:
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
        defined = len(self.registry.scopes)
        if ids.min() < 1 or ids.max() > defined:
            row = numpy.flatnonzero((ids < 1) | (ids > defined))[0]
            ref = tracks.track_refs[numpy.searchsorted(ends, row, side="right")]
            raise StreamError(f"track {ref}: scope id outside 1..{defined}")

    def _stats(self, body: memoryview) -> None:
        self.frames_dropped = _number(_scalars(body), 1)


class _Repeats:
    """The last header, and the last registry packet read into an empty registry, each
    with what it decoded to.

    A keyframe repeats the header and every definition so far, so the
    keyframes of a capture are mostly copies of the one before: a repeat
    costs a comparison of its bytes and a copy of the tables, not a parse of
    every definition. :func:`read_capture` shares one among the receivers it
    starts, so a resync after damage does not parse the same keyframe again.
    A key holds the receiver's ``max_elements`` with the bytes, since the
    limit decides what a packet decodes to. One entry per kind: a copy of
    the packet's bytes, and its session, or the registry it went into with
    the marks it reached (ids only grow, so the registry's first definitions
    stay what the packet defined, however many come after).
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[tuple[int, bytes], Any]] = {}

    def get(self, kind: int, key: tuple[int, bytes]) -> Any:
        """What the last packet of ``kind`` decoded to, if its key was ``key``; else None."""
        entry = self._entries.get(kind)
        return entry[1] if entry is not None and entry[0] == key else None

    def put(self, kind: int, key: tuple[int, bytes], value: Any) -> None:
        self._entries[kind] = (key, value)


_COLUMN_KINDS = {
    2: "uint32",
    3: "uint64",
    4: "uint64",
    12: "fixed32",
    13: "sfixed64",
    14: "fixed64",
}
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


def _scalars(body: memoryview) -> dict[int, Any]:
    """The fields 1-9 of a small message by number (the last value wins)."""
    fields: dict[int, Any] = {}
    for field, _, value in WireReader(body):
        if field < 10:
            fields[field] = value
    return fields


def _number(fields: dict[int, Any], field: int) -> int:
    """An integer field (0 when absent); :class:`StreamError` for a LEN value."""
    value = fields.get(field, 0)
    if not isinstance(value, int):
        raise StreamError(f"field {field} holds bytes where a number belongs")
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


def find_keyframe(data: bytes, start: int = 0) -> int:
    """The offset of the first header packet at or after ``start``, or -1 if there is none.

    It looks for the header's magic number, then for a packet that starts
    at most 14 bytes before it (a length prefix, the flags field, the
    header's tag and length) and decodes as a header, nearest first: a
    start further back whose length prefix is made of damaged bytes could
    decode as the same header inside a longer, bogus packet.
    """
    found = data.find(_MAGIC_FIELD, start)
    while found >= 0:
        for begin in range(found - 1, max(start, found - 14) - 1, -1):
            if _is_header_packet(data, begin):
                return begin
        found = data.find(_MAGIC_FIELD, found + 1)
    return -1


def _is_header_packet(data: bytes, begin: int) -> bool:
    """Whether a packet starting at ``begin`` is a header: its flags, then a header whose
    first field is the magic (the order ``PacketWriter`` writes). Only those first fields
    are read, so a hostile file full of magic numbers costs a few checks per candidate."""
    try:
        length, body = varint.decode(data, begin)
        if length > DEFAULT_MAX_FRAME_SIZE or body + length > len(data) or length < 7:
            return False
        if data[body] not in _FIRST_TAGS:
            return False
        packet = WireReader(memoryview(data)[body : body + length])
        for field, wire_type, value in itertools.islice(packet, 2):
            if field == _HEADER and wire_type == LEN:
                return next(WireReader(value), None) == (1, I32, MAGIC)
    except DecodeError:
        return False
    return False


def read_capture(
    data: bytes,
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
) -> Iterator[tuple[Receiver, Session | Frame]]:
    """Every session header and frame of a recorded stream, with the receiver that read it.

    Reading starts at the first keyframe. A damaged packet ends the current
    receiver, and reading resumes, with a new one, at the next keyframe
    after the start of that packet; a packet cut by the end of the data ends
    the capture, unless a keyframe follows its start (a damaged length
    prefix that runs past the end).

    The packets are split here, straight from ``data``, and handed to the
    receiver one by one: no byte is copied into a decoder, so each resync
    costs only what it reads, and a file of damage after damage is read in
    time linear in its size. The limits are each receiver's; a packet over
    ``max_elements`` counts as damaged.
    """
    view = memoryview(data)
    end = len(data)
    repeats = _Repeats()
    start = find_keyframe(data)
    while start >= 0:
        receiver = Receiver(max_frame_size=max_frame_size, max_elements=max_elements)
        receiver._repeats = repeats
        pos = start
        try:
            while pos < end:
                packet = pos
                size, body = varint.decode(data, pos)
                pos = body + size
                if size > max_frame_size or pos > end:
                    raise StreamError("a packet runs past the end or over max_frame_size", packet)
                item = receiver._read(view[body:pos], pos - packet)
                if item is not None:
                    yield receiver, item
            return
        except DecodeError:  # a damaged packet, or the last one cut short
            start = find_keyframe(data, packet + 1)
