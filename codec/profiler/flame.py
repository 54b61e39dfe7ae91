"""Flame graphs: the call stacks of many frames merged per track, drawn as one SVG.

Strategy: a flame graph node is a call path (the scope ids from a top-level
scope down to one scope), with the calls, total and self time of every scope
on that path. The tree is rebuilt from the columns with whole-column numpy
operations, one depth level at a time: each scope's parent comes from
:func:`~codec.profiler.analysis.scope_parents`, and the scopes of a level get
their node from ``numpy.unique`` of (parent's node, scope id), so equal
paths of every frame merge into one node; totals, self times and calls are
then summed per node with ``numpy.bincount``. Python code runs per node, not
per scope.

The picture is plain SVG written here, with no dependency: one section per
track, a rectangle per node whose width is its total time on the scale of
its track (so children sit within their parent and the gap beside them is
the parent's self time), top-level scopes at the bottom (a flame graph) or at
the top (an icicle graph). Each node is an SVG group holding its rectangle,
a label when it fits, a ``<title>`` that browsers show on hover (name,
location, total, self, calls) and its children's groups, so the document's
nesting is the call tree. Every text goes through one function, :func:`_text`:
markup characters are escaped, and a character that XML 1.0 cannot hold at
all (a C0 control but tab, newline and carriage return; a lone surrogate;
U+FFFE, U+FFFF) is shown by a visible stand-in (the control's picture, such
as U+241B for ESC, else U+FFFD), so a name from any program, ANSI colours
included, still makes a well-formed document.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO
from xml.sax.saxutils import escape

import numpy as np
import numpy.typing as npt

from codec.profiler.analysis import format_ns, scope_parents, self_times
from codec.profiler.model import Frame, Registry, ScopeDef, TrackDef, TrackScopes

__all__ = [
    "FlameNode",
    "FlameTrack",
    "flame_graph_svg",
    "flame_tracks",
    "write_flame_graph",
]

# Layout, in SVG user units (pixels).
WIDTH = 1200
_MARGIN = 10
_ROW = 17  # height of one level
_BOX = 15  # height of a rectangle (the rest of the row is the gap between levels)
_HEADING = 26  # a section's title line
_TITLE = 34  # the document's title line
_CHAR = 6.6  # average width of a label character at 11 px
_MIN_LABEL = 3  # characters a label needs before it is drawn


@dataclass(frozen=True, slots=True)
class FlameNode:
    """One call path merged over frames: its last scope and what was measured on it, in ns."""

    scope: ScopeDef
    calls: int
    total_ns: int
    self_ns: int
    children: tuple[FlameNode, ...]


@dataclass(frozen=True, slots=True)
class FlameTrack:
    """A track's merged call tree: its top-level nodes and how many frames it spans."""

    track: TrackDef
    frames: int  # frames in which the track has scopes
    roots: tuple[FlameNode, ...]

    @property
    def total_ns(self) -> int:
        """The time of every top-level scope of the track."""
        return sum(root.total_ns for root in self.roots)

    @property
    def depth(self) -> int:
        """Levels of the tree (1 for top-level scopes only)."""

        def levels(node: FlameNode) -> int:
            return 1 + max((levels(child) for child in node.children), default=0)

        return max((levels(root) for root in self.roots), default=0)


def flame_tracks(frames: Sequence[Frame], registry: Registry) -> list[FlameTrack]:
    """The call trees of ``frames`` merged per track, in track order.

    Children are in name order (then scope id), as flame graphs draw them.
    Raises :class:`~codec.profiler.StreamError` for an undefined scope or
    track, or depths that are not in pre-order.
    """
    by_track: dict[int, list[TrackScopes]] = {}
    for frame in frames:
        for track in frame.tracks:
            if len(track):
                by_track.setdefault(track.track_ref, []).append(track)
    return [
        FlameTrack(registry.track(ref), len(parts), _merge(parts, registry))
        for ref, parts in sorted(by_track.items())
    ]


def _merge(parts: list[TrackScopes], registry: Registry) -> tuple[FlameNode, ...]:
    """One track's scopes of many frames as a tree of call paths."""
    local_parents = [scope_parents(part) for part in parts]
    offsets = np.cumsum([0] + [len(part) for part in parts[:-1]])
    parents = np.concatenate(
        [np.where(p >= 0, p + offset, -1) for p, offset in zip(local_parents, offsets, strict=True)]
    )
    ids = np.concatenate([np.asarray(part.scope_id, dtype=np.int64) for part in parts])
    depth = np.concatenate([np.asarray(part.depth, dtype=np.int64) for part in parts])
    durations = np.concatenate([np.asarray(part.duration_ns, dtype=np.int64) for part in parts])
    selfs = np.concatenate(
        [self_times(part, p) for part, p in zip(parts, local_parents, strict=True)]
    )
    node = np.empty(len(ids), dtype=np.int64)
    node_scope: list[int] = []
    node_parent: list[int] = []
    stride = int(ids.max()) + 1
    for level in range(int(depth.max()) + 1):
        rows = np.flatnonzero(depth == level)
        parent_node = node[parents[rows]] if level else np.full(len(rows), -1)
        keys, inverse = np.unique((parent_node + 1) * stride + ids[rows], return_inverse=True)
        node[rows] = len(node_scope) + inverse
        node_scope += (keys % stride).tolist()
        node_parent += (keys // stride - 1).tolist()
    count = len(node_scope)
    calls = np.bincount(node, minlength=count).tolist()
    totals, self_sums = (_sums(node, values, count) for values in (durations, selfs))
    children: list[list[FlameNode]] = [[] for _ in range(count)]
    roots: list[FlameNode] = []
    for index in range(count - 1, -1, -1):  # a node's children were made after it
        made = FlameNode(
            registry.scope(node_scope[index]),
            calls[index],
            totals[index],
            self_sums[index],
            tuple(sorted(children[index], key=_drawing_order)),
        )
        (children[node_parent[index]] if node_parent[index] >= 0 else roots).append(made)
    return tuple(sorted(roots, key=_drawing_order))


def _drawing_order(node: FlameNode) -> tuple[str, int]:
    """Siblings left to right: by name, as flame graphs draw them, then by scope id."""
    return node.scope.name, node.scope.scope_id


def _sums(node: npt.NDArray[np.int64], values: npt.NDArray[np.int64], count: int) -> list[int]:
    """``values`` summed per node, exactly (``bincount`` would sum in floating point)."""
    sums = np.zeros(count, dtype=np.int64)
    np.add.at(sums, node, values)
    return sums.tolist()


# --- SVG -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Section:
    """Where one track's tree is drawn: its top, its levels and its time scale."""

    top: float
    levels: int
    scale: float  # px per ns
    total_ns: int
    icicle: bool

    def row_y(self, level: int) -> float:
        row = level if self.icicle else self.levels - 1 - level
        return self.top + _HEADING + row * _ROW


def flame_graph_svg(
    frames: Sequence[Frame], registry: Registry, *, icicle: bool = False, width: int = WIDTH
) -> str:
    """A self-contained SVG flame graph of ``frames`` (an icicle graph with ``icicle``).

    One section per track, in track order; see the module docstring for the
    layout. Errors as :func:`flame_tracks`.
    """
    if width < 4 * _MARGIN:
        raise ValueError(f"width must be at least {4 * _MARGIN}, got {width}")
    tracks = flame_tracks(frames, registry)
    kind = "Icicle graph" if icicle else "Flame graph"
    scopes = sum(root.calls for track in tracks for root in _walk(track.roots))
    body: list[str] = [
        f'<text class="title" x="{width / 2}" y="22" text-anchor="middle">'
        f"{kind}: {scopes:,} scopes in {len(frames):,} frames</text>"
    ]
    top = float(_TITLE)
    for track in tracks:
        section = _Section(
            top,
            track.depth,
            (width - 2 * _MARGIN) / track.total_ns if track.total_ns else 0.0,
            track.total_ns,
            icicle,
        )
        heading = (
            f"{track.track.name or f'track {track.track.track_ref}'}: "
            f"{format_ns(track.total_ns)} of top-level scopes in {track.frames:,} frames"
        )
        body.append(
            f'<g class="track" data-track-ref="{track.track.track_ref}" '
            f'data-total-ns="{track.total_ns}">'
            f'<text class="heading" x="{_MARGIN}" y="{top + 17}">{_text(heading)}</text>'
        )
        start_ns = 0
        for root in track.roots:
            _draw(body, root, start_ns, 0, section)
            start_ns += root.total_ns
        body.append("</g>")
        top += _HEADING + track.depth * _ROW + _MARGIN
    if not tracks:
        body.append(f'<text x="{_MARGIN}" y="{top + 17}">No scopes in these frames.</text>')
        top += _HEADING
    height = int(top + _MARGIN)
    return "\n".join(
        [
            '<?xml version="1.0" encoding="UTF-8"?>',
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}">',
            f"<title>{kind}</title>",
            "<style>"
            "text{font-family:Verdana,sans-serif;font-size:11px;fill:#000}"
            ".title{font-size:16px}.heading{font-size:12px;font-weight:bold}"
            ".scope text{pointer-events:none}"
            ".scope rect{stroke:#fff;stroke-width:0.5}"
            ".scope rect:hover{stroke:#000;stroke-width:1}"
            "</style>",
            f'<rect width="{width}" height="{height}" fill="#f8f8f4"/>',
            *body,
            "</svg>",
            "",
        ]
    )


def _walk(nodes: tuple[FlameNode, ...]) -> list[FlameNode]:
    """Every node of the trees rooted at ``nodes``."""
    found: list[FlameNode] = []
    pending = list(nodes)
    while pending:
        node = pending.pop()
        found.append(node)
        pending.extend(node.children)
    return found


def _edge(start_ns: int, section: _Section) -> float:
    """Where ``start_ns`` into a track falls, in px, to the 3 decimals the SVG holds.

    Both edges of every rectangle are placed so, from the time before it:
    siblings tile exactly, however many there are, where adding rounded
    widths would drift.
    """
    return round(_MARGIN + start_ns * section.scale, 3)


def _draw(out: list[str], node: FlameNode, start_ns: int, level: int, section: _Section) -> None:
    """``node`` as a group: its rectangle, label and title, then its children's groups.

    ``start_ns`` is where it starts, in ns from the left of its track.
    """
    scope = node.scope
    x = _edge(start_ns, section)
    width = _edge(start_ns + node.total_ns, section) - x
    y = section.row_y(level)
    share = 100 * node.total_ns / section.total_ns if section.total_ns else 0.0
    title = "\n".join(
        line
        for line in (
            scope.name,
            scope.location,
            f"total {format_ns(node.total_ns)} ({share:.1f}% of the track)",
            f"self {format_ns(node.self_ns)}",
            f"calls {node.calls:,}",
        )
        if line
    )
    out.append(
        f'<g class="scope" data-scope-id="{scope.scope_id}" data-calls="{node.calls}" '
        f'data-total-ns="{node.total_ns}" data-self-ns="{node.self_ns}">'
        f"<title>{_text(title)}</title>"
        f'<rect x="{x:.3f}" y="{y}" width="{width:.3f}" height="{_BOX}" '
        f'fill="{_color(scope.name)}"/>'
    )
    fits = int((width - 6) / _CHAR)
    if fits >= _MIN_LABEL:
        label = scope.name if len(scope.name) <= fits else scope.name[: fits - 1] + "\u2026"
        out.append(f'<text x="{x + 3:.3f}" y="{y + 11.5}">{_text(label)}</text>')
    child_ns = start_ns
    for child in node.children:
        _draw(out, child, child_ns, level + 1, section)
        child_ns += child.total_ns
    out.append("</g>")


# What XML 1.0 cannot hold (its Char production): C0 controls but tab, LF and CR; lone
# surrogates; U+FFFE and U+FFFF.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _stand_in(match: re.Match[str]) -> str:
    """The control's picture (U+2400 + code: NUL, ESC, ...), else the replacement character."""
    code = ord(match.group())
    return chr(0x2400 + code) if code < 0x20 else "\ufffd"


def _text(value: str) -> str:
    """``value`` as XML character data: escaped, with a stand-in for what XML cannot hold."""
    return escape(_NOT_XML.sub(_stand_in, value))


def _color(name: str) -> str:
    """A warm colour that depends on the name only, so a scope looks the same everywhere."""
    bits = zlib.crc32(name.encode("utf-8", "surrogatepass"))
    red = 205 + (bits & 0xFF) * 50 // 255
    green = 60 + (bits >> 8 & 0xFF) * 170 // 255
    blue = (bits >> 16 & 0xFF) * 55 // 255
    return f"rgb({red},{green},{blue})"


def write_flame_graph(
    frames: Sequence[Frame],
    registry: Registry,
    path_or_file: str | os.PathLike[str] | IO[str],
    *,
    icicle: bool = False,
) -> None:
    """Write :func:`flame_graph_svg` as UTF-8 to a path or an open text file."""
    svg = flame_graph_svg(frames, registry, icicle=icicle)
    if isinstance(path_or_file, str | os.PathLike):
        with open(path_or_file, "w", encoding="utf-8") as file:
            file.write(svg)
    else:
        path_or_file.write(svg)
