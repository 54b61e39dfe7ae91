"""Profiler data model: scopes, tracks and frames, as both ends of a stream see them.

Strategy: scope and track details are registered once under dense integer
ids that start at 1 and are never reused or redefined within a session (the
"send scope information only once" rule of puffin, and Perfetto's interning
rule). A frame then carries, per track, four parallel columns in pre-order
(entry order, parent before child): scope id, absolute start, duration and
depth. The parent of scope ``i`` is the nearest earlier scope one level
shallower, so the tree needs no pointers. A frame read from a stream keeps
the columns of all its tracks together (:class:`TrackColumns`), so a track
costs a few bytes rather than five objects.

:class:`Registry` holds the definitions. The producer appends to it (under a
lock: any thread may register) and remembers, per reader, how far it has
sent (one high-water mark per table, because ids only grow); a receiver
applies what it reads and checks that ids arrive dense. Strings (function
names, file paths) are interned in their own table, so a file path shared by
many scopes travels once.
"""

from __future__ import annotations

import enum
import operator
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, overload

import numpy

from codec.errors import StreamError


class ScopeKind(enum.IntEnum):
    """How a scope was registered (``ScopeDef.kind`` in ``profiler.proto``)."""

    UNSPECIFIED = 0
    FUNCTION = 1  # @profiler.function: name, file and line of the function
    NAMED = 2  # profiler.scope("name")
    USER = 3  # timed elsewhere, reported with Profiler.report_user_scopes
    GPU = 4


class TrackKind(enum.IntEnum):
    """What a track's scopes ran on (``TrackDef.kind`` in ``profiler.proto``)."""

    UNSPECIFIED = 0
    CPU_THREAD = 1
    GPU_QUEUE = 2
    ASYNC = 3


@dataclass(frozen=True, slots=True)
class ScopeDef:
    """A registered scope: its id, display name and where it comes from."""

    scope_id: int
    name: str
    kind: ScopeKind = ScopeKind.NAMED
    function: str = ""
    file: str = ""
    line: int = 0

    @property
    def location(self) -> str:
        """``file:line``, or ``""`` when the scope has no source location."""
        if not self.file:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True, slots=True)
class TrackDef:
    """A registered track: an OS thread, a GPU queue, or asynchronous work."""

    track_ref: int
    name: str
    kind: TrackKind = TrackKind.CPU_THREAD
    os_thread_id: int = 0


@dataclass(frozen=True, slots=True)
class TrackScopes:
    """One track's completed scopes in one frame: parallel numpy columns in pre-order.

    ``scope_id`` is ``uint32``, ``start_ns`` ``int64`` (absolute, on the
    producer's monotonic clock), ``duration_ns`` ``int64`` and ``depth``
    ``uint8`` (0 for a top-level scope).
    """

    track_ref: int
    scope_id: Any
    start_ns: Any
    duration_ns: Any
    depth: Any

    @classmethod
    def from_sequences(
        cls,
        track_ref: int,
        scope_id: Sequence[int],
        start_ns: Sequence[int],
        duration_ns: Sequence[int],
        depth: Sequence[int],
    ) -> TrackScopes:
        """A track from any sequences of integers, each made a column of the dtype above."""
        return cls(
            track_ref,
            numpy.asarray(scope_id, dtype=numpy.uint32),
            numpy.asarray(start_ns, dtype=numpy.int64),
            numpy.asarray(duration_ns, dtype=numpy.int64),
            numpy.asarray(depth, dtype=numpy.uint8),
        )

    def __len__(self) -> int:
        return len(self.scope_id)


class TrackColumns(Sequence[TrackScopes]):
    """The tracks of a frame read from a stream, kept as columns shared by the whole frame.

    Four columns hold every track's scopes one track after another, and two
    more each track's reference and end row, so a frame costs the same six
    arrays however many tracks it has: a track is a few bytes, not the
    objects of a :class:`TrackScopes`. Indexing makes a track's
    :class:`TrackScopes`, whose columns are views of the frame's.
    """

    __slots__ = ("depth", "duration_ns", "ends", "scope_id", "start_ns", "track_refs")

    def __init__(
        self, track_refs: Any, ends: Any, scope_id: Any, start_ns: Any, duration_ns: Any, depth: Any
    ) -> None:
        self.track_refs = track_refs  # uint32, one per track
        self.ends = ends  # int64: the row after each track's last scope
        self.scope_id = scope_id
        self.start_ns = start_ns
        self.duration_ns = duration_ns
        self.depth = depth

    def __len__(self) -> int:
        return len(self.track_refs)

    @overload
    def __getitem__(self, index: int) -> TrackScopes: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[TrackScopes]: ...

    def __getitem__(self, index: int | slice) -> TrackScopes | Sequence[TrackScopes]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        i = operator.index(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("track index out of range")
        rows = slice(int(self.ends[i - 1]) if i else 0, int(self.ends[i]))
        return TrackScopes(
            int(self.track_refs[i]),
            self.scope_id[rows],
            self.start_ns[rows],
            self.duration_ns[rows],
            self.depth[rows],
        )


@dataclass(frozen=True, slots=True)
class Frame:
    """The scopes every track completed between two ``end_frame()`` calls.

    ``tracks`` is a sequence of :class:`TrackScopes`: a tuple on the
    producer's side, :class:`TrackColumns` in a frame read from a stream.
    """

    index: int
    start_ns: int
    duration_ns: int
    tracks: Sequence[TrackScopes]

    @property
    def num_scopes(self) -> int:
        if isinstance(self.tracks, TrackColumns):
            return len(self.tracks.scope_id)
        return sum(len(track) for track in self.tracks)


class Marks(NamedTuple):
    """How many entries of each registry table a reader has been sent."""

    strings: int = 0
    scopes: int = 0
    tracks: int = 0


class Registry:
    """Strings, scopes and tracks under dense ids from 1, never reused within a session."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.strings: list[str] = []
        self.scopes: list[ScopeDef] = []
        self.tracks: list[TrackDef] = []
        self._string_ids: dict[str, int] = {}

    def marks(self) -> Marks:
        """The current size of every table: what a reader has once it is sent everything."""
        with self._lock:  # a scope's strings are interned before it: never half a definition
            return Marks(len(self.strings), len(self.scopes), len(self.tracks))

    # --- producer side --------------------------------------------------------------------

    def add_scope(
        self,
        name: str,
        kind: ScopeKind = ScopeKind.NAMED,
        function: str = "",
        file: str = "",
        line: int = 0,
    ) -> ScopeDef:
        """Register a scope and its strings; returns its definition with a new id."""
        with self._lock:
            self._intern(function)
            self._intern(file)
            scope = ScopeDef(len(self.scopes) + 1, name, ScopeKind(kind), function, file, line)
            self.scopes.append(scope)
            return scope

    def add_track(
        self, name: str, kind: TrackKind = TrackKind.CPU_THREAD, os_thread_id: int = 0
    ) -> TrackDef:
        """Register a track; returns its definition with a new reference."""
        with self._lock:
            track = TrackDef(len(self.tracks) + 1, name, TrackKind(kind), os_thread_id)
            self.tracks.append(track)
            return track

    def string_id(self, text: str) -> int:
        """The interned id of ``text`` (registered by ``add_scope``), 0 for ``""``."""
        return self._string_ids[text] if text else 0

    def _intern(self, text: str) -> None:
        if text and text not in self._string_ids:
            self.strings.append(text)
            self._string_ids[text] = len(self.strings)

    # --- receiving side -------------------------------------------------------------------

    def scope(self, scope_id: int) -> ScopeDef:
        """The definition of ``scope_id``; :class:`StreamError` if it was never sent."""
        if 0 < scope_id <= len(self.scopes):
            return self.scopes[scope_id - 1]
        raise StreamError(f"scope id {scope_id} is not defined")

    def track(self, track_ref: int) -> TrackDef:
        """The definition of ``track_ref``; :class:`StreamError` if it was never sent."""
        if 0 < track_ref <= len(self.tracks):
            return self.tracks[track_ref - 1]
        raise StreamError(f"track {track_ref} is not defined")

    def define_string(self, iid: int, text: str) -> None:
        """Apply a received string definition (the next id, or a repeat of a known one)."""
        _define(self.strings, iid, text, "string")
        self._string_ids.setdefault(text, iid)

    def define_scope(self, scope: ScopeDef) -> None:
        """Apply a received scope definition (the next id, or a repeat of a known one)."""
        _define(self.scopes, scope.scope_id, scope, "scope")

    def define_track(self, track: TrackDef) -> None:
        """Apply a received track definition (the next id, or a repeat of a known one)."""
        _define(self.tracks, track.track_ref, track, "track")

    @property
    def empty(self) -> bool:
        return not (self.strings or self.scopes or self.tracks)

    def copy_from(self, other: Registry, marks: Marks) -> None:
        """Hold the first ``marks`` definitions of ``other`` in place of this registry's own.

        Ids only grow, so those are what ``other`` held when it was at ``marks``.
        """
        strings = self.strings = other.strings[: marks.strings]
        self.scopes = other.scopes[: marks.scopes]
        self.tracks = other.tracks[: marks.tracks]
        if len(other.strings) == len(strings):
            self._string_ids = other._string_ids.copy()
        else:  # the first id of each text, as define_string keeps it: later ids are set first
            ids = range(len(strings), 0, -1)
            self._string_ids = dict(zip(reversed(strings), ids, strict=True))

    def resolve(self, iid: int) -> str:
        """The string interned as ``iid`` (0 is ``""``); :class:`StreamError` if unknown."""
        if iid == 0:
            return ""
        if iid <= len(self.strings):
            return self.strings[iid - 1]
        raise StreamError(f"string id {iid} is not defined")


def _define(table: list[Any], ident: int, value: Any, what: str) -> None:
    """Append ``value`` as id ``ident`` = len + 1; an identical repeat is accepted."""
    if ident == len(table) + 1:
        table.append(value)
    elif 0 < ident <= len(table) and table[ident - 1] == value:
        return
    elif 0 < ident <= len(table):
        raise StreamError(f"{what} id {ident} redefined within a session")
    else:
        raise StreamError(f"{what} id {ident} out of order: expected {len(table) + 1}")
