"""Profiler captures as Arrow tables (:mod:`codec.profiler.tables`).

The reference is the capture reader itself: every table must say what
:func:`~codec.profiler.read_capture` gives, frame by frame and scope by
scope, with self times as :func:`~codec.profiler.analysis.self_times` computes
them, for captures of several sessions, cut ones and hypothesis-made ones.
The query of the profiler guide (top scopes by self time, in DuckDB) must
equal the same sum made in Python.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from helpers.nesting import nested_track
from helpers.profiler_streams import build_frames, registry_for_tests, write_stream
from hypothesis import given
from hypothesis import strategies as st

from codec import FrameEncoder
from codec.profiler import Frame, PacketWriter, Session, read_capture
from codec.profiler.analysis import self_times
from codec.profiler.tables import capture_tables, scope_batches

T0 = 1_700_000_000_000_000_000


def two_sessions() -> bytes:
    """Two producers' streams, one after the other: 3 frames each on 2 tracks."""
    out = FrameEncoder()
    for producer in ("first run", "second run"):
        registry = registry_for_tests()
        writer = PacketWriter(Session.new(producer))
        writer.keyframe(out, registry)
        for index in range(1, 4):
            start = T0 + index * 10**6
            tracks = (
                nested_track(1, [1, 2, 3, 2], [0, 1, 2, 1], start, [100, 7]),
                nested_track(2, [4, 5], [0, 0], start + 50, [30]),
            )
            frame = Frame(index, start, 10**5, tracks)
            writer.frame(out, index, start, frame.duration_ns, tracks, frame.num_scopes)
    return bytes(out.getbuffer())


def expected_scopes(data: bytes) -> list[tuple[Any, ...]]:
    """The scopes table's rows as read_capture gives them, names and self times included."""
    rows = []
    sessions: dict[int | None, int] = {}
    for receiver, item in read_capture(data):
        if not isinstance(item, Frame):
            continue
        key = None if receiver.session is None else receiver.session.session_id
        session = sessions.setdefault(key, len(sessions) + 1)
        for track in item.tracks:
            for row, self_ns in zip(range(len(track)), self_times(track).tolist(), strict=True):
                scope_id = int(track.scope_id[row])
                rows.append((
                    session, item.index, track.track_ref, scope_id,
                    receiver.registry.scope(scope_id).name, int(track.start_ns[row]),
                    int(track.duration_ns[row]), self_ns, int(track.depth[row]),
                ))  # fmt: skip
    return rows


def rows_of(table: Any) -> list[tuple[Any, ...]]:
    return list(zip(*(table.column(name).to_pylist() for name in table.column_names), strict=True))


def test_every_scope_is_a_row_with_its_session_frame_name_and_self_time() -> None:
    data = two_sessions()
    tables = capture_tables(data)
    assert rows_of(tables.scopes) == expected_scopes(data)
    assert tables.scopes.num_rows == 2 * 3 * 6
    assert tables.scopes.schema.field("name").type == pa.dictionary(pa.int32(), pa.string())


def test_frames_threads_and_scope_definitions() -> None:
    tables = capture_tables(two_sessions())
    assert rows_of(tables.frames) == [
        (session, index, T0 + index * 10**6, 10**5, 6)
        for session in (1, 2)
        for index in range(1, 4)
    ]
    registry = registry_for_tests()
    assert rows_of(tables.threads) == [
        (session, t.track_ref, t.name, t.kind.name, t.os_thread_id)
        for session in (1, 2)
        for t in registry.tracks
    ]
    assert rows_of(tables.scope_defs) == [
        (session, s.scope_id, s.name, s.kind.name, s.function, s.file, s.line)
        for session in (1, 2)
        for s in registry.scopes
    ]


def test_batches_hold_whole_frames_of_one_session_and_add_up_to_the_table() -> None:
    data = two_sessions()
    batches = list(scope_batches(data, batch_rows=10))
    assert all(len(set(b.column("session").to_pylist())) == 1 for b in batches)
    assert [b.num_rows for b in batches] == [12, 6, 12, 6]  # 2 frames of 6, then the rest
    streamed = pa.Table.from_batches(batches)
    assert rows_of(streamed) == rows_of(capture_tables(data).scopes)


def test_a_cut_capture_gives_the_frames_read_capture_gives() -> None:
    data = two_sessions()
    cut = data[len(data) // 3 : -7]
    tables = capture_tables(cut)
    assert rows_of(tables.scopes) == expected_scopes(cut)
    assert 0 < tables.frames.num_rows < 6


def test_an_empty_capture_gives_empty_tables() -> None:
    tables = capture_tables(b"")
    assert [t.num_rows for t in (tables.scopes, tables.frames, tables.threads)] == [0, 0, 0]
    assert tables.scopes.schema.names[:4] == ["session", "frame", "track", "scope_id"]


columns = st.tuples(
    st.lists(st.integers(1, 5), min_size=1, max_size=12),  # scope ids
    st.lists(st.integers(0, 10**6), min_size=1, max_size=12),  # gaps
    st.lists(st.integers(0, 10**5), min_size=1, max_size=12),  # durations
    st.lists(st.booleans(), min_size=1, max_size=12),  # steps down a level
).map(lambda c: tuple(column[: min(map(len, c))] for column in c))


@given(st.lists(st.lists(columns, min_size=1, max_size=3), min_size=1, max_size=4))
def test_any_stream_gives_the_rows_read_capture_gives(raw: list[list[Any]]) -> None:
    data = write_stream(build_frames(raw, T0), fixed=False)
    assert rows_of(capture_tables(data, batch_rows=7).scopes) == expected_scopes(data)


def test_the_guides_query_finds_the_top_scopes_by_self_time() -> None:
    tables = capture_tables(two_sessions())
    scopes = tables.scopes  # read by name by DuckDB, as in docs/profiler.md
    top = duckdb.sql(
        "SELECT name, count(*) AS calls, sum(self_ns) AS self_ns FROM scopes"
        " GROUP BY name ORDER BY self_ns DESC, name LIMIT 3"
    ).fetchall()
    assert scopes.num_rows
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in expected_scopes(two_sessions()):
        totals[row[4]][0] += 1
        totals[row[4]][1] += row[7]
    expected = sorted(((n, c, s) for n, (c, s) in totals.items()), key=lambda r: (-r[2], r[0]))
    assert top == expected[:3]


def test_a_frame_the_receiver_refuses_is_left_out_as_read_capture_leaves_it() -> None:
    registry = registry_for_tests()
    out = FrameEncoder()
    writer = PacketWriter(Session.new("damaged"))
    writer.keyframe(out, registry)
    good = nested_track(1, [1], [0], T0, [5])
    undefined = type(good)(1, np.array([9], dtype=np.uint32), good.start_ns, good.duration_ns,
                           good.depth)  # fmt: skip
    for index, track in enumerate((good, undefined, good), 1):
        writer.frame(out, index, T0 + index, 10, (track,), 1)
    tables = capture_tables(bytes(out.getbuffer()))
    assert tables.frames.column("frame").to_pylist() == [1]  # resumed at no later keyframe
    assert rows_of(tables.scopes) == expected_scopes(bytes(out.getbuffer()))


@pytest.mark.parametrize("call", [capture_tables, scope_batches])
def test_batch_rows_must_be_positive(call: Any) -> None:
    with pytest.raises(ValueError, match="batch_rows"):
        call(b"", batch_rows=0)
