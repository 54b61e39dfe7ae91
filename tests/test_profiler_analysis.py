"""Tests of the analysis of decoded frames, :mod:`codec.profiler.analysis`.

What is checked, on frames built by hand from numpy columns:

* :class:`FrameStore` keeps the newest ``max_recent`` frames and counts all;
* :func:`scope_parents` and :func:`self_times` agree with a naive reference on
  random valid pre-orders, and bad depth columns raise :class:`StreamError`;
* the Chrome trace is valid JSON with the keys Perfetto needs, one ``"X"`` event
  per scope, thread names, and children inside their parents;
* the summary's arithmetic on a frame whose answers are known, and its table;
* the size baselines: compact Chrome JSON, and puffin's 31 bytes a scope.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from codec.profiler.analysis import (
    FrameStore,
    chrome_json_size,
    chrome_trace,
    format_summary,
    puffin_stream_size,
    scope_parents,
    self_times,
    summary,
    write_chrome_trace,
)
from codec.profiler.analysis import _write_puffin_track as write_puffin_track
from codec.profiler.model import (
    Frame,
    Registry,
    ScopeKind,
    StreamError,
    TrackKind,
    TrackScopes,
)

T0 = 1_700_000_000_000_000_000  # an absolute monotonic-clock start, far from 0


def nested_track(track_ref: int, scope_ids: Sequence[int], depths: Sequence[int]) -> TrackScopes:
    """A track whose times nest as ``depths`` says: each scope opens and closes 10 ns apart."""
    starts = [0] * len(depths)
    durations = [0] * len(depths)
    open_scopes: list[int] = []
    now = T0

    def close() -> None:
        nonlocal now
        now += 10
        i = open_scopes.pop()
        durations[i] = now - starts[i]

    for i, depth in enumerate(depths):
        while len(open_scopes) > depth:
            close()
        now += 10
        starts[i] = now
        open_scopes.append(i)
    while open_scopes:
        close()
    return TrackScopes.from_sequences(track_ref, scope_ids, starts, durations, depths)


def naive_parents(depths: Sequence[int]) -> list[int]:
    parents = []
    for i, depth in enumerate(depths):
        earlier = [j for j in range(i) if depths[j] == depth - 1]
        parents.append(earlier[-1] if earlier else -1)
    return parents


def naive_self_times(durations: Sequence[int], parents: Sequence[int]) -> list[int]:
    return [
        duration - sum(durations[c] for c, p in enumerate(parents) if p == i)
        for i, duration in enumerate(durations)
    ]


def pre_order_depths(raw: list[int]) -> list[int]:
    """Clamp any list into a valid pre-order: first 0, each step up by at most 1."""
    depths: list[int] = []
    for value in raw:
        depths.append(min(value, depths[-1] + 1 if depths else 0))
    return depths


# small raw values make bushy trees (many siblings, many returns to a shallower level)
depth_columns = st.lists(st.integers(0, 10), max_size=300).map(pre_order_depths)


@pytest.fixture
def registry() -> Registry:
    registry = Registry()
    registry.add_scope("main_loop", ScopeKind.FUNCTION, "main_loop", "app/main.py", 16)
    registry.add_scope("update")
    registry.add_scope("render", ScopeKind.NAMED, file="app/render.py")
    registry.add_track("main")
    registry.add_track("GPU queue", TrackKind.GPU_QUEUE)
    return registry


@pytest.fixture
def frames() -> list[Frame]:
    """Two frames over two tracks, times known by hand (µs-friendly ns)."""
    #  main_loop [0, 1000)         self 1000 - 300 - 400 = 300
    #    update  [100, 400)        self 300 - 50 = 250
    #      render [200, 250)       self 50
    #    render  [500, 900)        self 400
    first = Frame(
        0,
        T0,
        2000,
        (
            TrackScopes.from_sequences(
                1,
                [1, 2, 3, 3],
                [T0, T0 + 100, T0 + 200, T0 + 500],
                [1000, 300, 50, 400],
                [0, 1, 2, 1],
            ),
            TrackScopes.from_sequences(2, [3], [T0 + 1200], [700], [0]),
        ),
    )
    #  update [T0+2000, +600) self 600; main_loop [T0+2700, +200) self 200
    second = Frame(
        1,
        T0 + 2000,
        1000,
        (TrackScopes.from_sequences(1, [2, 1], [T0 + 2000, T0 + 2700], [600, 200], [0, 0]),),
    )
    return [first, second]


# --- FrameStore ---------------------------------------------------------------------------


def frame(index: int, scopes: int) -> Frame:
    return Frame(index, T0 + index, 1, (nested_track(1, [1] * scopes, [0] * scopes),))


def test_store_keeps_the_newest_frames_and_counts_all() -> None:
    store = FrameStore(max_recent=3)
    for index in range(5):
        store.add(frame(index, scopes=index))
    assert [f.index for f in store.frames] == [2, 3, 4]
    assert len(store) == 3
    assert store.max_recent == 3
    assert (store.frames_added, store.scopes_added) == (5, 0 + 1 + 2 + 3 + 4)


def test_store_clear_forgets_frames_and_keeps_counting() -> None:
    store = FrameStore()
    store.add(frame(7, scopes=2))
    store.clear()
    assert store.frames == ()
    store.add(frame(0, scopes=1))
    assert [f.index for f in store.frames] == [0]
    assert (store.frames_added, store.scopes_added) == (2, 3)


def test_store_needs_room_for_one_frame() -> None:
    with pytest.raises(ValueError, match="max_recent"):
        FrameStore(max_recent=0)


# --- scope tree ---------------------------------------------------------------------------


@given(depth_columns)
def test_parents_and_self_times_match_the_naive_reference(depths: list[int]) -> None:
    track = nested_track(1, [1] * len(depths), depths)
    parents = scope_parents(track)
    assert parents.tolist() == naive_parents(depths)
    expected_self = naive_self_times(track.duration_ns.tolist(), naive_parents(depths))
    assert self_times(track).tolist() == expected_self
    assert self_times(track, parents).tolist() == expected_self


def test_parents_of_a_large_bushy_tree() -> None:
    # hypothesis favours short columns; this one is long enough for numpy's sorts to differ
    raw = np.random.default_rng(6).integers(0, 10, size=1500).tolist()
    depths = pre_order_depths(raw)
    track = nested_track(1, [1] * len(depths), depths)
    parents = naive_parents(depths)
    assert scope_parents(track).tolist() == parents
    assert self_times(track).tolist() == naive_self_times(track.duration_ns.tolist(), parents)


def test_parents_of_a_known_tree() -> None:
    depths = [0, 1, 2, 2, 1, 2, 3, 0, 1]
    track = TrackScopes.from_sequences(1, [1] * 9, range(9), [1] * 9, depths)
    assert scope_parents(track).tolist() == [-1, 0, 1, 1, 0, 4, 5, -1, 7]


def test_a_chain_to_the_deepest_uint8_level() -> None:
    depths = [*range(256), 0, 1]
    track = nested_track(1, [1] * len(depths), depths)
    assert scope_parents(track).tolist() == [-1, *range(255), -1, 256]
    assert self_times(track).tolist() == [20] * 255 + [10, 20, 10]


def test_an_empty_track_has_no_parents() -> None:
    track = TrackScopes.from_sequences(1, [], [], [], [])
    assert scope_parents(track).tolist() == []
    assert self_times(track).tolist() == []


@pytest.mark.parametrize(
    ("depths", "message"),
    [
        ([1], "first scope has depth 1"),
        ([0, 2], "scope 1 has depth 2 after depth 0"),
        ([0, 1, 0, 1, 3], "scope 4 has depth 3 after depth 1"),
        ([0, 255], "scope 1 has depth 255 after depth 0"),
    ],
)
def test_bad_depth_columns_are_stream_errors(depths: list[int], message: str) -> None:
    track = TrackScopes.from_sequences(
        5, [1] * len(depths), range(len(depths)), [1] * len(depths), depths
    )
    with pytest.raises(StreamError, match=f"track 5: {message}"):
        scope_parents(track)


# --- Chrome trace -------------------------------------------------------------------------


def check_nesting(events: list[dict[str, Any]]) -> None:
    """Per thread, every scope lies inside the enclosing one or after it (how Perfetto nests)."""
    by_thread: dict[int, list[tuple[int, int]]] = {}
    for event in events:
        # back to integer ns: the trace is relative, so µs floats hold whole ns exactly
        span = (round(event["ts"] * 1000), round((event["ts"] + event["dur"]) * 1000))
        by_thread.setdefault(event["tid"], []).append(span)
    for spans in by_thread.values():
        enclosing: list[tuple[int, int]] = []
        for start, end in sorted(spans, key=lambda span: (span[0], -span[1])):
            while enclosing and enclosing[-1][1] <= start:
                enclosing.pop()
            assert not enclosing or end <= enclosing[-1][1], (start, end, enclosing[-1])
            enclosing.append((start, end))


def test_chrome_trace_of_known_frames(registry: Registry, frames: list[Frame]) -> None:
    trace = json.loads(json.dumps(chrome_trace(frames, registry)))
    assert trace["displayTimeUnit"] == "ns"
    events = trace["traceEvents"]
    metadata = [e for e in events if e["ph"] == "M"]
    assert metadata == [
        {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "main"}},
        {"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "GPU queue"}},
    ]
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == sum(f.num_scopes for f in frames) == 7
    assert complete[0] == {
        "name": "main_loop",
        "cat": "function",
        "ph": "X",
        "ts": 0.0,
        "dur": 1.0,
        "pid": 1,
        "tid": 1,
        "args": {"frame": 0, "location": "app/main.py:16"},
    }
    assert complete[1]["args"] == {"frame": 0}  # "update" has no source location
    assert complete[2]["args"] == {"frame": 0, "location": "app/render.py"}
    assert (complete[2]["cat"], complete[2]["ts"], complete[2]["dur"]) == ("named", 0.2, 0.05)
    assert (complete[-1]["ts"], complete[-1]["args"]["frame"]) == (2.7, 1)
    check_nesting(complete)


@given(st.lists(depth_columns, min_size=1, max_size=4))
def test_chrome_trace_has_one_nested_event_per_scope(tracks: list[list[int]]) -> None:
    registry = Registry()
    registry.add_scope("work")
    for track_ref in range(1, len(tracks) + 1):
        registry.add_track(f"thread {track_ref}")
    columns = tuple(
        nested_track(track_ref, [1] * len(depths), depths)
        for track_ref, depths in enumerate(tracks, start=1)
    )
    frames = [Frame(0, T0, 1, columns)]
    events = json.loads(json.dumps(chrome_trace(frames, registry)))["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == frames[0].num_scopes
    for event in complete:
        assert {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"} <= event.keys()
        assert isinstance(event["ts"], float) and isinstance(event["dur"], float)
        assert event["ts"] >= 0 and event["dur"] >= 0
    named = {e["tid"] for e in events if e["ph"] == "M"}
    assert named == {track.track_ref for track in columns if len(track)}
    check_nesting(complete)


def test_chrome_trace_of_no_frames(registry: Registry) -> None:
    assert chrome_trace([], registry) == {"traceEvents": [], "displayTimeUnit": "ns"}


def test_chrome_trace_refuses_undefined_ids(registry: Registry) -> None:
    unknown_scope = Frame(0, T0, 1, (TrackScopes.from_sequences(1, [9], [T0], [1], [0]),))
    with pytest.raises(StreamError, match="scope id 9"):
        chrome_trace([unknown_scope], registry)
    unknown_track = Frame(0, T0, 1, (TrackScopes.from_sequences(7, [1], [T0], [1], [0]),))
    with pytest.raises(StreamError, match="track 7"):
        chrome_trace([unknown_track], registry)


def test_write_chrome_trace_to_a_path_and_a_file(
    registry: Registry, frames: list[Frame], tmp_path: Path
) -> None:
    registry.add_scope("naïve µs")
    frames = [
        *frames,
        Frame(2, T0 + 3000, 1, (TrackScopes.from_sequences(1, [4], [T0 + 3000], [5], [0]),)),
    ]
    path = tmp_path / "trace.json"
    write_chrome_trace(frames, registry, path)
    text = io.StringIO()
    write_chrome_trace(frames, registry, text)
    assert path.read_text(encoding="utf-8") == text.getvalue()
    assert json.loads(text.getvalue()) == chrome_trace(frames, registry)
    assert "naïve µs" in text.getvalue()


# --- summary ------------------------------------------------------------------------------


def test_summary_arithmetic(registry: Registry, frames: list[Frame]) -> None:
    by_total = summary(frames, registry)
    assert [
        (s.scope.name, s.calls, s.total_ns, s.self_ns, s.mean_ns, s.max_ns) for s in by_total
    ] == [
        ("main_loop", 2, 1000 + 200, 300 + 200, 600.0, 1000),
        ("render", 3, 50 + 400 + 700, 50 + 400 + 700, 1150 / 3, 700),
        ("update", 2, 300 + 600, 250 + 600, 450.0, 600),
    ]
    by_self = summary(frames, registry, by="self")
    assert [s.scope.name for s in by_self] == ["render", "update", "main_loop"]
    assert [s.scope.name for s in summary(frames, registry, top=1)] == ["main_loop"]
    assert summary([], registry) == []


def test_summary_ties_go_to_the_lower_id() -> None:
    registry = Registry()
    for name in "abc":
        registry.add_scope(name)
    track = TrackScopes.from_sequences(1, [3, 1, 2], [T0, T0 + 1, T0 + 2], [5, 5, 5], [0, 0, 0])
    assert [s.scope.name for s in summary([Frame(0, T0, 1, (track,))], registry)] == list("abc")


def test_format_summary_tables(registry: Registry, frames: list[Frame]) -> None:
    by_total, by_self = format_summary(frames, registry, top=2).split("\n\n")
    assert by_total.splitlines() == [
        "Top 2 scopes by total time (7 scopes in 2 frames)",
        "scope      calls    total     self    mean      max  location",
        "main_loop      2  1.20 µs   500 ns  600 ns  1.00 µs  app/main.py:16",
        "render         3  1.15 µs  1.15 µs  383 ns   700 ns  app/render.py",
    ]
    assert by_self.splitlines() == [
        "Top 2 scopes by self time (7 scopes in 2 frames)",
        "scope   calls    total     self    mean     max  location",
        "render      3  1.15 µs  1.15 µs  383 ns  700 ns  app/render.py",
        "update      2   900 ns   850 ns  450 ns  600 ns",
    ]


# --- size baselines -----------------------------------------------------------------------


def test_chrome_json_size_is_the_compact_x_events(registry: Registry, frames: list[Frame]) -> None:
    complete = [e for e in chrome_trace(frames, registry)["traceEvents"] if e["ph"] == "X"]
    compact = json.dumps(complete, separators=(",", ":"), ensure_ascii=False).encode()
    assert chrome_json_size(frames, registry) == len(compact)
    assert chrome_json_size([], registry) == len(b"[]")


def test_puffin_stream_bytes_of_two_nested_scopes() -> None:
    # puffin's own profile_macros_test: two nested scopes without data are 62 bytes
    track = TrackScopes.from_sequences(3, [7, 8], [T0, T0 + 5], [100, 20], [0, 1])
    buffer = bytearray(80)
    assert write_puffin_track(buffer, 4, track) == 4 + 62
    assert bytes(buffer[:4]) == bytes(4)
    assert buffer[4:66] == (
        struct.pack("<BIqBQ", ord("("), 7, T0, 0, 31)  # outer: the inner scope's 31 bytes
        + struct.pack("<BIqBQ", ord("("), 8, T0 + 5, 0, 0)
        + struct.pack("<Bq", ord(")"), T0 + 25)
        + struct.pack("<Bq", ord(")"), T0 + 100)
    )


def test_puffin_stream_of_known_frames(registry: Registry, frames: list[Frame]) -> None:
    # 7 scopes; the small second frame reuses the first frame's buffer
    assert puffin_stream_size(frames) == 31 * 7
    assert puffin_stream_size(frames[::-1]) == 31 * 7
    assert puffin_stream_size([]) == 0


@given(st.lists(st.lists(depth_columns, max_size=3), max_size=4))
def test_puffin_stream_is_31_bytes_a_scope(frame_tracks: list[list[list[int]]]) -> None:
    frames = [
        Frame(
            index,
            T0,
            1,
            tuple(
                nested_track(ref, [ref] * len(depths), depths) for ref, depths in enumerate(tracks)
            ),
        )
        for index, tracks in enumerate(frame_tracks)
    ]
    assert puffin_stream_size(frames) == 31 * sum(f.num_scopes for f in frames)


def test_puffin_stream_refuses_bad_depths() -> None:
    track = TrackScopes.from_sequences(1, [1, 1], [T0, T0 + 1], [5, 1], [0, 2])
    with pytest.raises(StreamError, match="depth 2 after depth 0"):
        puffin_stream_size([Frame(0, T0, 1, (track,))])
