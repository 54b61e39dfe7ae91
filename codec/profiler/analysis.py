"""Analysis of decoded profiler frames: recent frames, scope trees, exports, summaries.

Strategy: everything works from the model's :class:`~codec.profiler.model.Frame`
objects and a filled :class:`~codec.profiler.model.Registry`, never from the
wire. A track's scopes arrive as parallel numpy columns in pre-order, so the
tree is rebuilt from the ``depth`` column alone, with whole-column numpy
operations and no Python loop per scope:

* the parent of a scope is the nearest earlier scope one level shallower. In
  valid pre-order (first depth 0, depth steps up by at most 1) that parent is
  the scope just before the first child among its siblings, so the parents come
  from a stable sort by depth (a radix sort for ``uint8``) and one running
  maximum (see :func:`scope_parents`);
* the self time of a scope is its duration minus its direct children's,
  summed per parent with ``np.add.at``.

On top of that sit the exports and tables a profile is read with: Chrome
Trace Event JSON (one ``"X"`` complete event per scope, opened by Perfetto UI
and chrome://tracing), a per-scope summary (calls, total, self, mean and max
time) as data and as a terminal table, and two size baselines for the same
scopes: compact Chrome JSON and puffin's fixed-width stream after its PR
#169, built byte by byte.

:class:`FrameStore` keeps the most recent frames for all of these.
"""

from __future__ import annotations

import json
import os
import struct
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any, Literal

import numpy as np
import numpy.typing as npt

from codec.errors import StreamError
from codec.profiler.model import Frame, Registry, ScopeDef, TrackScopes

__all__ = [
    "FrameStore",
    "ScopeStats",
    "chrome_json_size",
    "chrome_trace",
    "format_ns",
    "format_summary",
    "puffin_stream_size",
    "scope_parents",
    "self_times",
    "summary",
    "write_chrome_trace",
]

IndexArray = npt.NDArray[np.intp]
NsArray = npt.NDArray[np.int64]

# puffin's per-scope records after PR #169, little-endian and unpadded:
# '(' u8 | scope_id u32 | start_ns i64 | data_len u8 | scope_size u64, then the
# children, then ')' u8 | stop_ns i64. scope_size counts the children's bytes.
_PUFFIN_BEGIN = struct.Struct("<BIqBQ")
_PUFFIN_END = struct.Struct("<Bq")
_PUFFIN_SIZE = struct.Struct("<Q")
_PUFFIN_UNFINISHED = 2**64 - 1  # puffin's placeholder until the scope ends
_PUFFIN_SCOPE_BYTES = _PUFFIN_BEGIN.size + _PUFFIN_END.size  # 31: a scope without data


class FrameStore:
    """The most recent frames of a session, oldest first, and how many were ever added.

    ``max_recent`` bounds the frames kept (puffin's ``FrameView`` keeps 1000);
    the oldest frame goes when a new one arrives. The counters cover the
    store's whole life: :meth:`clear` starts a new session's frames but keeps
    counting, so rates measured over a producer restart stay right.
    """

    def __init__(self, max_recent: int = 1000) -> None:
        if max_recent < 1:
            raise ValueError(f"max_recent must be at least 1, got {max_recent}")
        self._recent: deque[Frame] = deque(maxlen=max_recent)
        self.frames_added = 0
        self.scopes_added = 0

    @property
    def max_recent(self) -> int:
        """How many frames the store keeps."""
        return self._recent.maxlen or 0

    @property
    def frames(self) -> tuple[Frame, ...]:
        """The frames kept, oldest first."""
        return tuple(self._recent)

    def __len__(self) -> int:
        return len(self._recent)

    def add(self, frame: Frame) -> None:
        """Keep ``frame`` as the newest, dropping the oldest when full."""
        self._recent.append(frame)
        self.frames_added += 1
        self.scopes_added += frame.num_scopes

    def clear(self) -> None:
        """Forget the frames kept (a new session's ids name other scopes)."""
        self._recent.clear()


# --- scope tree --------------------------------------------------------------------------


def _checked_depth(track: TrackScopes) -> NsArray:
    """``track.depth`` as ``int64``; :class:`StreamError` unless it is a valid pre-order."""
    depth = np.asarray(track.depth).astype(np.int64)
    if len(depth) and depth[0] != 0:
        raise StreamError(f"track {track.track_ref}: first scope has depth {depth[0]}, not 0")
    jumps = np.flatnonzero(np.diff(depth) > 1)
    if len(jumps):
        i = int(jumps[0]) + 1
        raise StreamError(
            f"track {track.track_ref}: scope {i} has depth {depth[i]} after depth "
            f"{depth[i - 1]} (depth steps up by at most 1)"
        )
    return depth


def scope_parents(track: TrackScopes) -> IndexArray:
    """The index of each scope's parent in ``track`` (-1 for a top-level scope), in O(n).

    The parent of scope ``i`` is the nearest earlier scope ``j`` with
    ``depth[j] == depth[i] - 1``. Raises :class:`StreamError` if the first
    scope is not at depth 0 or the depth steps up by more than 1.

    How: a scope directly after its parent is a *first child*, and the parent
    of any scope is the scope just before the latest first child at the same
    depth, at or before it (a later first child at that depth would have a
    nearer parent). A stable sort by depth groups each depth's scopes in
    pre-order; a running maximum over the sorted positions of first children
    then finds that latest first child for every scope at once. Depth 0 holds
    no first child and sorts first, so top-level scopes find none.
    """
    depth = _checked_depth(track)
    first_child = np.zeros(len(depth), dtype=bool)
    first_child[1:] = depth[1:] == depth[:-1] + 1
    by_depth = np.argsort(np.asarray(track.depth), kind="stable")
    sorted_positions = np.arange(len(depth))
    latest = np.maximum.accumulate(np.where(first_child[by_depth], sorted_positions, -1))
    nested = latest >= 0
    parents = np.full(len(depth), -1, dtype=np.intp)
    parents[by_depth[nested]] = by_depth[latest[nested]] - 1
    return parents


def self_times(track: TrackScopes, parents: IndexArray | None = None) -> NsArray:
    """Each scope's duration minus its direct children's, in ns.

    ``parents`` is :func:`scope_parents` of ``track``, computed if not given.
    """
    if parents is None:
        parents = scope_parents(track)
    duration = np.asarray(track.duration_ns, dtype=np.int64)
    children = np.zeros(len(duration), dtype=np.int64)
    nested = parents >= 0
    np.add.at(children, parents[nested], duration[nested])
    return duration - children


# --- Chrome Trace Event JSON ---------------------------------------------------------------


def _complete_events(frames: Sequence[Frame], registry: Registry) -> list[dict[str, Any]]:
    """One ``"X"`` event per scope, times in µs from the first frame's start."""
    events: list[dict[str, Any]] = []
    if not frames:
        return events
    origin_ns = frames[0].start_ns
    labels: dict[int, tuple[str, str, str]] = {}  # scope id -> name, category, location
    for frame in frames:
        for track in frame.tracks:
            ts_us = ((np.asarray(track.start_ns, dtype=np.int64) - origin_ns) / 1e3).tolist()
            dur_us = (np.asarray(track.duration_ns, dtype=np.int64) / 1e3).tolist()
            for scope_id, ts, dur in zip(track.scope_id.tolist(), ts_us, dur_us, strict=True):
                if scope_id not in labels:
                    scope = registry.scope(scope_id)
                    labels[scope_id] = (scope.name, scope.kind.name.lower(), scope.location)
                name, category, location = labels[scope_id]
                args: dict[str, Any] = {"frame": frame.index}
                if location:
                    args["location"] = location
                events.append(
                    {
                        "name": name,
                        "cat": category,
                        "ph": "X",
                        "ts": ts,
                        "dur": dur,
                        "pid": 1,
                        "tid": track.track_ref,
                        "args": args,
                    }
                )
    return events


def chrome_trace(frames: Sequence[Frame], registry: Registry) -> dict[str, Any]:
    """``frames`` as a Chrome Trace Event JSON object (Perfetto UI, chrome://tracing).

    One ``"X"`` event per scope (``ts`` and ``dur`` in µs from the start of
    ``frames[0]``, ``tid`` the track reference, the frame index and
    ``file:line`` in ``args``), and one ``thread_name`` metadata event per
    track that has scopes. Raises :class:`StreamError` for a scope or track
    the registry does not define.
    """
    track_refs = sorted(
        {track.track_ref for frame in frames for track in frame.tracks if len(track)}
    )
    thread_names = [
        {
            "name": "thread_name",
            "ph": "M",
            "pid": 1,
            "tid": track_ref,
            "args": {"name": registry.track(track_ref).name},
        }
        for track_ref in track_refs
    ]
    return {
        "traceEvents": thread_names + _complete_events(frames, registry),
        "displayTimeUnit": "ns",
    }


def write_chrome_trace(
    frames: Sequence[Frame], registry: Registry, path_or_file: str | os.PathLike[str] | IO[str]
) -> None:
    """Write :func:`chrome_trace` as compact UTF-8 JSON to a path or an open text file."""
    trace = chrome_trace(frames, registry)
    if isinstance(path_or_file, str | os.PathLike):
        with open(path_or_file, "w", encoding="utf-8") as file:
            json.dump(trace, file, separators=(",", ":"), ensure_ascii=False)
    else:
        json.dump(trace, path_or_file, separators=(",", ":"), ensure_ascii=False)


# --- summary ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScopeStats:
    """Timings of one scope over a set of frames, in ns.

    A scope that recurses into itself counts its nested calls' time again in
    ``total_ns``; ``self_ns`` never counts any time twice.
    """

    scope: ScopeDef
    calls: int
    total_ns: int
    self_ns: int
    max_ns: int

    @property
    def mean_ns(self) -> float:
        """``total_ns / calls``."""
        return self.total_ns / self.calls


def _scope_stats(frames: Sequence[Frame], registry: Registry) -> list[ScopeStats]:
    """Stats of every scope id that occurs in ``frames``, in id order."""
    tracks = [track for frame in frames for track in frame.tracks if len(track)]
    if not tracks:
        return []
    ids = np.concatenate([np.asarray(track.scope_id, dtype=np.intp) for track in tracks])
    durations = np.concatenate([np.asarray(track.duration_ns, dtype=np.int64) for track in tracks])
    selfs = np.concatenate([self_times(track) for track in tracks])
    slots = int(ids.max()) + 1
    calls = np.bincount(ids, minlength=slots)
    total = np.zeros(slots, dtype=np.int64)
    self_total = np.zeros(slots, dtype=np.int64)
    longest = np.zeros(slots, dtype=np.int64)
    np.add.at(total, ids, durations)
    np.add.at(self_total, ids, selfs)
    np.maximum.at(longest, ids, durations)
    return [
        ScopeStats(
            registry.scope(scope_id),
            int(calls[scope_id]),
            int(total[scope_id]),
            int(self_total[scope_id]),
            int(longest[scope_id]),
        )
        for scope_id in np.flatnonzero(calls).tolist()
    ]


def _ranked(stats: list[ScopeStats], by: Literal["total", "self"], top: int) -> list[ScopeStats]:
    if by == "total":
        return sorted(stats, key=lambda s: (-s.total_ns, s.scope.scope_id))[:top]
    return sorted(stats, key=lambda s: (-s.self_ns, s.scope.scope_id))[:top]


def summary(
    frames: Sequence[Frame],
    registry: Registry,
    top: int = 20,
    by: Literal["total", "self"] = "total",
) -> list[ScopeStats]:
    """The ``top`` scopes of ``frames`` by total (or self) time, longest first.

    Ties go to the lower scope id. Raises :class:`StreamError` for a scope id
    the registry does not define, or a track whose depths are not pre-order.
    """
    return _ranked(_scope_stats(frames, registry), by, top)


def format_ns(ns: float) -> str:
    """``ns`` with a unit that keeps 3 to 4 significant digits (the tables' and flame graphs')."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.2f} {unit}"
    return f"{ns:.0f} ns"


def _table(title: str, stats: list[ScopeStats]) -> str:
    rows = [
        (
            s.scope.name,
            f"{s.calls:,}",
            format_ns(s.total_ns),
            format_ns(s.self_ns),
            format_ns(s.mean_ns),
            format_ns(s.max_ns),
            s.scope.location,
        )
        for s in stats
    ]
    header = ("scope", "calls", "total", "self", "mean", "max", "location")
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(6)]
    lines = [title]
    for row in [header, *rows]:
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(row[1:6], widths[1:], strict=True)]
        lines.append("  ".join([*cells, row[6]]).rstrip())
    return "\n".join(lines)


def format_summary(frames: Sequence[Frame], registry: Registry, top: int = 20) -> str:
    """Two terminal tables of :func:`summary`: the ``top`` scopes by total, then by self time."""
    stats = _scope_stats(frames, registry)
    span = f"{sum(s.calls for s in stats):,} scopes in {len(frames):,} frames"
    tables = []
    for by in ("total", "self"):
        ranked = _ranked(stats, by, top)
        tables.append(_table(f"Top {len(ranked)} scopes by {by} time ({span})", ranked))
    return "\n\n".join(tables)


# --- size baselines -----------------------------------------------------------------------


def chrome_json_size(frames: Sequence[Frame], registry: Registry) -> int:
    """Bytes of the ``"X"`` events of :func:`chrome_trace` as compact UTF-8 JSON."""
    events = _complete_events(frames, registry)
    return len(json.dumps(events, separators=(",", ":"), ensure_ascii=False).encode())


def _write_puffin_track(buffer: bytearray, offset: int, track: TrackScopes) -> int:
    """Write ``track`` as puffin's stream at ``offset``; returns the offset after it."""
    depth = _checked_depth(track).tolist()
    ids = track.scope_id.tolist()
    start_ns = np.asarray(track.start_ns, dtype=np.int64)
    starts = start_ns.tolist()
    stops = (start_ns + np.asarray(track.duration_ns, dtype=np.int64)).tolist()
    open_scopes: list[tuple[int, int]] = []  # (offset of scope_size, stop_ns) per open scope

    def close_scope() -> None:
        nonlocal offset
        size_at, stop_ns = open_scopes.pop()
        _PUFFIN_SIZE.pack_into(buffer, size_at, offset - (size_at + _PUFFIN_SIZE.size))
        _PUFFIN_END.pack_into(buffer, offset, ord(")"), stop_ns)
        offset += _PUFFIN_END.size

    for i, level in enumerate(depth):
        while len(open_scopes) > level:
            close_scope()
        _PUFFIN_BEGIN.pack_into(buffer, offset, ord("("), ids[i], starts[i], 0, _PUFFIN_UNFINISHED)
        offset += _PUFFIN_BEGIN.size
        open_scopes.append((offset - _PUFFIN_SIZE.size, stops[i]))
    while open_scopes:
        close_scope()
    return offset


def puffin_stream_size(frames: Sequence[Frame]) -> int:
    """Bytes of puffin's per-thread streams (after its PR #169) holding the scopes of ``frames``.

    Each frame's tracks are written one after another into one reused buffer,
    with struct records exactly as puffin lays them out (no ``data`` strings,
    so 31 bytes a scope); the result is how far the writes went.
    """
    buffer = bytearray(_PUFFIN_SCOPE_BYTES * max((f.num_scopes for f in frames), default=0))
    written = 0
    for frame in frames:
        offset = 0
        for track in frame.tracks:
            offset = _write_puffin_track(buffer, offset, track)
        written += offset
    return written
