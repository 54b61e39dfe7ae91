"""Profiler streams built by hand: frames, whole streams, packets, and the bad streams.

* ``build_frames`` turns hypothesis columns into valid frames, ``write_stream``
  writes them after a keyframe of ``registry_for_tests()``;
* ``packet``, ``keyframe_bytes``, ``frame_of``, ``frame_packet``, ``header`` and
  ``registry_packet_entry`` write single packets, field by field, so a test can
  put into one what no :class:`PacketWriter` would;
* ``BAD_STREAMS``: streams a :class:`Receiver` must refuse, each with (a pattern
  of) the message of its :class:`StreamError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy

from codec import FrameEncoder
from codec.profiler import (
    Frame,
    PacketWriter,
    Registry,
    ScopeKind,
    Session,
    TrackKind,
    TrackScopes,
)
from codec.profiler.packets import (
    MAGIC,
    NEEDS_STATE,
    STATE_CLEARED,
    FrameField,
    FrameMetaField,
    InternedStringField,
    PacketField,
    RegistryDeltaField,
    ScopeDefField,
    StreamHeaderField,
    TrackScopesField,
)
from codec.wire import WireWriter

# --- frames and streams --------------------------------------------------------------------


def build_frames(raw: list[list[Any]], base: int) -> list[Frame]:
    """Frames from hypothesis columns: depths made valid, starts made ascending."""
    frames = []
    for index, tracks in enumerate(raw, 1):
        built = []
        for track_ref, (ids, gaps, durations, steps) in enumerate(tracks, 1):
            depth = [0]
            for step in steps[1:]:
                depth.append(depth[-1] + 1 if step else 0)
            starts = base + numpy.cumsum(numpy.array(gaps, dtype=numpy.int64))
            built.append(TrackScopes.from_sequences(track_ref, ids, starts, durations, depth))
        start = min(int(t.start_ns[0]) for t in built)
        frames.append(Frame(index, start, 12345, tuple(built)))
    return frames


def registry_for_tests() -> Registry:
    """Five function scopes (ids 1 to 5) and three CPU-thread tracks (refs 1 to 3)."""
    registry = Registry()
    for i in range(5):
        registry.add_scope(f"scope {i}", ScopeKind.FUNCTION, f"fn{i}", "game/loop.py", 10 * i)
    for i in range(3):
        registry.add_track(f"thread {i}", TrackKind.CPU_THREAD, 1000 + i)
    return registry


def write_stream(frames: list[Frame], *, fixed: bool) -> bytes:
    """A keyframe of ``registry_for_tests()``, then ``frames``, in varint or fixed columns."""
    registry = registry_for_tests()
    writer = PacketWriter(Session.new("test", fixed_columns=fixed))
    out = FrameEncoder()
    writer.keyframe(out, registry)
    for frame in frames:
        writer.frame(
            out, frame.index, frame.start_ns, frame.duration_ns, frame.tracks, frame.num_scopes
        )
    return bytes(out.getbuffer())


# --- packets and bad streams ---------------------------------------------------------------


def packet(build: Any) -> bytes:
    """One packet, its fields written by ``build`` (given the frame's ``WireWriter``)."""
    out = FrameEncoder()
    with out.frame() as writer:
        build(writer)
    return bytes(out.getbuffer())


def keyframe_bytes() -> bytes:
    """A keyframe (header and registry) of ``registry_for_tests()``, session 7."""
    out = FrameEncoder()
    PacketWriter(Session(7, "bad")).keyframe(out, registry_for_tests())
    return bytes(out.getbuffer())


def frame_of(tracks: Sequence[bytes], num_scopes: int = 0, start_ns: int = 0) -> bytes:
    """Frame 1 as a packet of the TrackScopes messages ``tracks``, as given."""

    def build(writer: Any) -> None:
        writer.uint32(PacketField.SEQUENCE_FLAGS, NEEDS_STATE)
        with writer.message(PacketField.FRAME) as frame:
            with frame.message(FrameField.META) as meta:
                meta.uint64(FrameMetaField.FRAME_INDEX, 1)
                meta.sint64(FrameMetaField.START_NS, start_ns)
                meta.uint32(FrameMetaField.NUM_SCOPES, num_scopes)
            for track in tracks:
                frame.bytes(FrameField.TRACKS, track)

    return packet(build)


def frame_packet(
    packed: dict[int, tuple[str, list[int]]],
    depth: bytes = b"\x00",
    track: int = 1,
    num_scopes: int = 1,
) -> bytes:
    """Frame 1 of one track: its packed columns (field number: kind and values) and depths."""
    writer = WireWriter()
    writer.uint32(TrackScopesField.TRACK_REF, track)
    for field, (kind, values) in packed.items():
        writer.packed(field, kind, values)
    writer.bytes(TrackScopesField.DEPTH, depth)
    with writer.buffer.getbuffer() as columns:
        return frame_of([bytes(columns)], num_scopes)


def header(magic: int = MAGIC, major: int = 1) -> bytes:
    """A stream header packet with this magic number and protocol major version."""

    def build(writer: Any) -> None:
        writer.uint32(PacketField.SEQUENCE_FLAGS, STATE_CLEARED)
        with writer.message(PacketField.HEADER) as h:
            h.fixed32(StreamHeaderField.MAGIC, magic)
            h.uint32(StreamHeaderField.PROTOCOL_MAJOR, major)

    return packet(build)


def registry_packet_entry(writer: Any, table: int, fill: Any) -> None:
    """One entry of registry table ``table`` in the packet being written, filled by ``fill``."""
    with writer.message(PacketField.REGISTRY) as delta, delta.message(table) as entry:
        fill(entry)


def string_entry(writer: Any, fill: Any) -> None:
    """One interned-string entry in the packet being written, filled by ``fill``."""
    registry_packet_entry(writer, RegistryDeltaField.STRINGS, fill)


SCOPE_ID, START_DELTA, DURATION = (
    TrackScopesField.SCOPE_ID,
    TrackScopesField.START_DELTA,
    TrackScopesField.DURATION,
)
ONE = {SCOPE_ID: ("uint32", [1]), START_DELTA: ("uint64", [0]), DURATION: ("uint64", [5])}
IID, VALUE = InternedStringField.IID, InternedStringField.VALUE

BAD_STREAMS = {
    "bad magic": (header(magic=0x12345678), "not a profiler stream"),
    "newer major version": (header(major=2), "version 2.0 is not supported"),
    "undefined scope id": (
        keyframe_bytes() + frame_packet(packed={**ONE, SCOPE_ID: ("uint32", [6])}),
        "scope id outside 1..5",
    ),
    "scope id 0": (
        keyframe_bytes() + frame_packet(packed={**ONE, SCOPE_ID: ("uint32", [0])}),
        "scope id outside",
    ),
    "undefined track": (keyframe_bytes() + frame_packet(packed=ONE, track=9), "track 9"),
    "columns of different lengths": (
        keyframe_bytes() + frame_packet(packed={**ONE, DURATION: ("uint64", [5, 6])}),
        "columns of 1, 1, 2 and 1",
    ),
    "num_scopes disagrees": (
        keyframe_bytes() + frame_packet(packed=ONE, num_scopes=3),
        "declares 3 scopes and holds 1",
    ),
    "first depth not 0": (keyframe_bytes() + frame_packet(packed=ONE, depth=b"\x01"), "pre-order"),
    "depth jumps by 2": (
        keyframe_bytes()
        + frame_packet(
            packed={
                SCOPE_ID: ("uint32", [1, 1]),
                START_DELTA: ("uint64", [0, 0]),
                DURATION: ("uint64", [1, 1]),
            },
            depth=b"\x00\x02",
            num_scopes=2,
        ),
        "pre-order",
    ),
    "mixed column families": (
        keyframe_bytes()
        + frame_packet(packed={**ONE, TrackScopesField.SCOPE_ID_FIXED: ("fixed32", [1])}),
        "mixes the varint and fixed",
    ),
    "registry ids not dense": (
        keyframe_bytes()
        + packet(lambda w: string_entry(w, lambda e: (e.uint32(IID, 9), e.string(VALUE, "x")))),
        "string id 9 out of order",
    ),
    "scope redefined": (
        keyframe_bytes()
        + packet(
            lambda w: registry_packet_entry(
                w,
                RegistryDeltaField.SCOPES,
                lambda e: (e.uint32(ScopeDefField.SCOPE_ID, 1), e.string(ScopeDefField.NAME, "z")),
            )
        ),
        "scope id 1 redefined",
    ),
    "invalid UTF-8": (
        keyframe_bytes()
        + packet(lambda w: string_entry(w, lambda e: (e.uint32(IID, 3), e.bytes(VALUE, b"\xff")))),
        "invalid UTF-8",
    ),
    "a string where a number belongs": (
        keyframe_bytes() + packet(lambda w: string_entry(w, lambda e: e.string(IID, "three"))),
        "holds bytes where a number belongs",
    ),
    "malformed packet": (keyframe_bytes() + b"\x02\x08\xff", "malformed packet"),
}
