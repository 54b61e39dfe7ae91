"""Tests of the flame graphs in :mod:`codec.profiler.flame`.

What is checked:

* :func:`flame_tracks` merges call paths over frames exactly as a naive
  reference that walks every scope's path with a dict (calls, total, self),
  on random pre-orders;
* the SVG is well-formed XML (``xml.etree``); in every track section each
  rectangle's width is its total on one scale, the top-level rectangles fill
  the width, a parent's width is its children's plus its self time, children
  sit inside their parent one row further from the base (up for a flame
  graph, down for an icicle graph), and the groups nest as the tree;
* hover titles hold name, location, total, self and calls; names are escaped,
  and a character XML 1.0 cannot hold (ESC, BEL, NUL, U+FFFE, a lone
  surrogate, ...) is shown by a visible stand-in, so the SVG stays well-formed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

import pytest
from helpers.nesting import nested_track, pre_order
from hypothesis import given, settings
from hypothesis import strategies as st

from codec.profiler import (
    FlameNode,
    Frame,
    Registry,
    ScopeKind,
    StreamError,
    TrackKind,
    flame_graph_svg,
    flame_tracks,
    write_flame_graph,
)
from codec.profiler.flame import WIDTH

SVG = "{http://www.w3.org/2000/svg}"
MARGIN = 10
T0 = 1_700_000_000_000_000_000


def sample_registry() -> Registry:
    registry = Registry()
    registry.add_scope("frame", ScopeKind.NAMED, "", "game/loop.py", 12)
    registry.add_scope("update", ScopeKind.FUNCTION, "Game.update", "game/loop.py", 20)
    registry.add_scope('<draw> & "mesh" é', ScopeKind.FUNCTION, "draw", "game/render.py", 60)
    registry.add_scope("wait")
    registry.add_track("main", TrackKind.CPU_THREAD, 1)
    registry.add_track("worker <1>", TrackKind.CPU_THREAD, 2)
    return registry


@st.composite
def frames_of(draw: Any, registry: Registry) -> list[Frame]:
    frames = []
    for index in range(1, draw(st.integers(1, 4)) + 1):
        tracks = []
        for ref in draw(st.lists(st.integers(1, len(registry.tracks)), unique=True)):
            depths = pre_order(draw(st.lists(st.integers(0, 4), max_size=30)))
            ids = draw(st.lists(st.integers(1, len(registry.scopes)), min_size=len(depths),
                                max_size=len(depths)))  # fmt: skip
            gaps = draw(st.lists(st.integers(1, 10**6), min_size=1, max_size=5))
            tracks.append(nested_track(ref, ids, depths, T0 + index * 10**9, gaps))
        frames.append(Frame(index, T0 + index * 10**9, 10**9, tuple(tracks)))
    return frames


def naive_paths(frames: Sequence[Frame], track_ref: int) -> dict[tuple[int, ...], list[int]]:
    """Call path (scope ids from the top) -> [calls, total, self], scope by scope."""
    paths: dict[tuple[int, ...], list[int]] = {}
    for frame in frames:
        for track in frame.tracks:
            if track.track_ref != track_ref:
                continue
            stack: list[tuple[int, ...]] = []
            for scope_id, duration, depth in zip(
                track.scope_id.tolist(), track.duration_ns.tolist(), track.depth.tolist(),
                strict=True,
            ):  # fmt: skip
                del stack[depth:]
                path = (*stack[-1], scope_id) if stack else (scope_id,)
                stack.append(path)
                entry = paths.setdefault(path, [0, 0, 0])
                entry[0] += 1
                entry[1] += duration
                entry[2] += duration
                if len(path) > 1:
                    paths[path[:-1]][2] -= duration
    return paths


def tree_paths(nodes: Sequence[FlameNode], prefix: tuple[int, ...] = ()) -> dict[Any, list[int]]:
    found: dict[tuple[int, ...], list[int]] = {}
    for node in nodes:
        path = (*prefix, node.scope.scope_id)
        assert path not in found, "a path merged into one node"
        found[path] = [node.calls, node.total_ns, node.self_ns]
        found.update(tree_paths(node.children, path))
    return found


@settings(max_examples=40)
@given(st.data())
def test_call_paths_merge_over_frames_as_the_naive_walk_says(data: Any) -> None:
    registry = sample_registry()
    frames = data.draw(frames_of(registry))
    trees = {tree.track.track_ref: tree for tree in flame_tracks(frames, registry)}
    for ref in (1, 2):
        want = naive_paths(frames, ref)
        if not want:
            assert ref not in trees
            continue
        tree = trees[ref]
        assert tree_paths(tree.roots) == want
        assert tree.total_ns == sum(v[1] for path, v in want.items() if len(path) == 1)
        assert tree.depth == max(len(path) for path in want)
        assert tree.frames == sum(
            any(t.track_ref == ref and len(t) for t in frame.tracks) for frame in frames
        )
        for node in _nodes(tree.roots):
            names = [(c.scope.name, c.scope.scope_id) for c in node.children]
            assert names == sorted(names)


def _nodes(roots: Sequence[FlameNode]) -> list[FlameNode]:
    return [n for root in roots for n in [root, *_nodes(root.children)]]


# --- the SVG --------------------------------------------------------------------------------


def groups(element: ET.Element, cls: str) -> list[ET.Element]:
    return [child for child in element if child.get("class") == cls]


def check_scope(group: ET.Element, scale: float, level: int, base_y: float, step: float,
                total_ns: int) -> None:  # fmt: skip
    """A scope group and its subtree: geometry, data and title."""
    rect = group.find(f"{SVG}rect")
    assert rect is not None
    x, width, y = (float(rect.get(key, "nan")) for key in ("x", "width", "y"))
    total, self_ns = int(group.get("data-total-ns", "")), int(group.get("data-self-ns", ""))
    assert width == pytest.approx(total * scale, abs=2e-3)
    assert y == pytest.approx(base_y + level * step)
    title = group.findtext(f"{SVG}title") or ""
    calls = int(group.get("data-calls", ""))
    assert re.search(r"\ntotal .+ \(\d+\.\d% of the track\)\nself .+\ncalls [\d,]+$", title)
    assert f"calls {calls:,}" in title
    share = 100 * total / total_ns if total_ns else 0
    assert f"({share:.1f}% of the track)" in title
    child_x = x
    child_total = 0
    for child in groups(group, "scope"):
        child_rect = child.find(f"{SVG}rect")
        assert child_rect is not None
        assert float(child_rect.get("x", "nan")) == pytest.approx(child_x, abs=2e-3)
        child_x += float(child_rect.get("width", "nan"))
        child_total += int(child.get("data-total-ns", ""))
        check_scope(child, scale, level + 1, base_y, step, total_ns)
    assert child_total + self_ns == total
    assert child_x <= x + width + 5e-3  # children inside the parent; the rest is self time


@pytest.mark.parametrize("icicle", [False, True])
@settings(max_examples=15)
@given(data=st.data())
def test_rectangles_add_up_to_the_totals_and_nest_as_the_tree(icicle: bool, data: Any) -> None:
    registry = sample_registry()
    frames = data.draw(frames_of(registry))
    svg = flame_graph_svg(frames, registry, icicle=icicle)
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg" and root.get("width") == str(WIDTH)
    trees = flame_tracks(frames, registry)
    sections = groups(root, "track")
    assert [int(s.get("data-track-ref", "")) for s in sections] == [
        t.track.track_ref for t in trees
    ]
    for section, tree in zip(sections, trees, strict=True):
        total = int(section.get("data-total-ns", ""))
        assert total == tree.total_ns
        scale = (WIDTH - 2 * MARGIN) / total if total else 0.0
        tops = groups(section, "scope")
        assert [int(g.get("data-scope-id", "")) for g in tops] == [
            r.scope.scope_id for r in tree.roots
        ]
        if total:
            widths = sum(float(g.find(f"{SVG}rect").get("width", "")) for g in tops)  # type: ignore[union-attr]
            assert widths == pytest.approx(WIDTH - 2 * MARGIN, abs=1e-2)
        first = tops[0].find(f"{SVG}rect")
        assert first is not None
        base_y = float(first.get("y", ""))
        step = 17.0 if icicle else -17.0
        for group in tops:
            check_scope(group, scale, 0, base_y, step, total)
        # the tree of groups is the tree of nodes
        assert _group_paths(tops) == set(tree_paths(tree.roots))


def _group_paths(tops: list[ET.Element], prefix: tuple[int, ...] = ()) -> set[tuple[int, ...]]:
    found: set[tuple[int, ...]] = set()
    for group in tops:
        path = (*prefix, int(group.get("data-scope-id", "")))
        found.add(path)
        found |= _group_paths(groups(group, "scope"), path)
    return found


def test_titles_and_labels_are_escaped_and_read_back() -> None:
    registry = sample_registry()
    frame = Frame(1, T0, 1000, (nested_track(2, [3, 4], [0, 1], T0, [100]),))
    svg = flame_graph_svg([frame], registry)
    assert "<draw>" not in svg and "&lt;draw&gt; &amp;" in svg
    root = ET.fromstring(svg)
    (section,) = groups(root, "track")
    assert section.findtext(f"{SVG}text", "").startswith("worker <1>: ")
    (top,) = groups(section, "scope")
    title = top.findtext(f"{SVG}title") or ""
    lines = title.split("\n")
    assert lines[:2] == ['<draw> & "mesh" é', "game/render.py:60"]
    assert lines[2] == "total 300 ns (100.0% of the track)"
    assert lines[3:] == ["self 200 ns", "calls 1"]
    assert top.findtext(f"{SVG}text") == '<draw> & "mesh" é'  # wide enough for its label


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("\x1b[31mred\x1b[0m", "\u241b[31mred\u241b[0m"),  # ANSI colours: ESC
        ("bell\x07", "bell\u2407"),
        ("nul\x00", "nul\u2400"),
        ("a\x01b\x1fc", "a\u2401b\u241fc"),
        ("not a character \ufffe \uffff", "not a character \ufffd \ufffd"),
        ("lone \ud800 surrogate", "lone \ufffd surrogate"),
        ("tab\tkept, \x7f and \x85 too", "tab\tkept, \x7f and \x85 too"),
        ("</text><script>alert(1)</script>\x1b", "</text><script>alert(1)</script>\u241b"),
    ],
    ids=["esc", "bel", "nul", "c0", "non-characters", "surrogate", "allowed", "markup"],
)
def test_names_xml_cannot_hold_are_shown_by_stand_ins(tmp_path: Any, name: str, shown: str) -> None:
    registry = Registry()
    registry.add_scope(name, ScopeKind.FUNCTION, name, name, 1)
    registry.add_track(f"track {name}", TrackKind.CPU_THREAD, 1)
    frame = Frame(1, T0, 1000, (nested_track(1, [1], [0], T0, [1000]),))
    path = tmp_path / "flame.svg"
    write_flame_graph([frame], registry, path)  # UTF-8: a lone surrogate would not encode
    root = ET.parse(path).getroot()  # well-formed
    assert "<script" not in path.read_text(encoding="utf-8")
    (section,) = groups(root, "track")
    assert section.findtext(f"{SVG}text", "").startswith(f"track {shown}: ")
    (top,) = groups(section, "scope")
    assert (top.findtext(f"{SVG}title") or "").split("\n")[:2] == [shown, f"{shown}:1"]
    assert top.findtext(f"{SVG}text") == shown  # wide enough for its label


def test_narrow_rectangles_get_shortened_labels_or_none() -> None:
    registry = sample_registry()
    registry.add_scope("a_rather_long_scope_name_that_cannot_fit")
    frame = Frame(1, T0, 10, (nested_track(1, [1, 5, 4], [0, 1, 1], T0, [1, 1, 150, 1000, 1, 1]),))
    root = ET.fromstring(flame_graph_svg([frame], registry))
    labels = [text.text for text in root.iter(f"{SVG}text")]
    assert any(
        label and label.startswith("a_rather") and label.endswith("\u2026") for label in labels
    )
    (wait,) = [g for g in root.iter(f"{SVG}g") if g.get("data-scope-id") == "4"]
    assert wait.find(f"{SVG}text") is None  # too narrow for even three characters


def test_no_scopes_draw_an_empty_but_valid_picture(tmp_path: Any) -> None:
    path = tmp_path / "empty.svg"
    write_flame_graph([], sample_registry(), path)
    root = ET.parse(path).getroot()
    assert groups(root, "track") == []
    assert "No scopes" in "".join(root.itertext())


def test_undefined_scopes_raise_stream_errors() -> None:
    frame = Frame(1, T0, 10, (nested_track(1, [9], [0], T0, [1]),))
    with pytest.raises(StreamError, match="scope id 9"):
        flame_graph_svg([frame], sample_registry())


def test_thousands_of_siblings_tile_their_parent_without_drift() -> None:
    """Each rectangle's edges come from the time before it, so 3,000 siblings of odd widths
    abut exactly, where adding up widths rounded to the SVG's 3 decimals would drift."""
    registry = Registry()
    registry.add_track("main", TrackKind.CPU_THREAD, 1)
    children = 3_000
    for index in range(children + 1):
        registry.add_scope(f"s{index}")
    depths = [0] + [1] * children
    gaps = [7, 1_013, 997, 3]  # odd durations, so that every width is rounded
    track = nested_track(1, list(range(1, children + 2)), depths, T0, gaps)
    svg = flame_graph_svg([Frame(1, T0, 10**9, (track,))], registry)
    (parent,) = groups(groups(ET.fromstring(svg), "track")[0], "scope")
    parent_rect = parent.find(f"{SVG}rect")
    assert parent_rect is not None
    x = float(parent_rect.get("x", "nan"))
    right = x + float(parent_rect.get("width", "nan"))
    rects = [child.find(f"{SVG}rect") for child in groups(parent, "scope")]
    assert len(rects) == children
    for rect in rects:
        assert rect is not None
        assert float(rect.get("x", "nan")) == pytest.approx(x, abs=1e-9)
        x += float(rect.get("width", "nan"))
    assert x <= right + 1e-9
