"""Tests of capture files, :mod:`codec.profiler.capture`: written by a sink or from a server.

Frames are recorded by real :class:`Profiler` objects, written to in-memory
files by :class:`FileSink` or by :func:`record` from a server on 127.0.0.1,
and read back with :func:`read_capture`; every frame read is checked against
the scope names the test recorded in it.

* a keyframe every N frames, and files cut at random offsets: read from the
  first keyframe after the cut;
* restart: two producers with different registration orders, one after the
  other, into one file;
* :func:`record` writes such files from a server, for a number of frames or
  a duration;
* the limits must be positive.
"""

from __future__ import annotations

import asyncio
import functools
import io
from pathlib import Path
from typing import Any

import pytest
from helpers.profiler_server import HOST, ORDERS, play, resolved, run
from hypothesis import given
from hypothesis import strategies as st

from codec import FrameDecoder, varint
from codec.profiler import Frame, Profiler, Receiver, Session, read_capture
from codec.profiler.capture import FileSink, record
from codec.profiler.server import ProfileServer

# --- files ---------------------------------------------------------------------------------


def packets(data: bytes) -> list[tuple[int, int, Session | Frame | None]]:
    """Every packet of an uncut stream: its start and end offsets, and what it holds."""
    decoder = FrameDecoder()
    decoder.feed(data)
    receiver = Receiver()
    found = []
    start = 0
    for payload in decoder:
        end = start + varint.size(len(payload)) + len(payload)
        found.append((start, end, receiver.read_packet(payload)))
        start = end
    decoder.feed_eof()
    assert start == len(data)
    return found


def frames_after_cut(data: bytes, start: int, end: int) -> list[int]:
    """The frames wholly in ``data[start:end]`` after its first keyframe."""
    stream = packets(data)
    keyframes = [begin for begin, _, item in stream if isinstance(item, Session)]
    first = next((begin for begin in keyframes if begin >= start), None)
    if first is None:
        return []
    return [
        item.index
        for begin, stop, item in stream
        if isinstance(item, Frame) and begin > first and stop <= end
    ]


def read_frames(data: bytes, expected: dict[int, list[str]]) -> list[int]:
    """The frame indices :func:`read_capture` finds, each checked against its names."""
    found = []
    for receiver, item in read_capture(data):
        if isinstance(item, Frame):
            assert resolved(receiver, item) == expected[item.index]
            found.append(item.index)
    return found


@functools.cache
def recorded_file() -> tuple[bytes, dict[int, list[str]]]:
    """40 frames, with new scopes now and then, and a keyframe every 5 frames."""
    profiler = Profiler("file")
    file = io.BytesIO()
    expected = {}
    with FileSink(file, profiler, keyframe_every=5) as sink:
        for i in range(1, 41):
            names = [f"scope {i // 3}", f"scope {i // 7}", "common"]
            expected[play(profiler, names)] = names
    assert (sink.frames, sink.keyframes) == (40, 9)
    return file.getvalue(), expected


def test_a_file_holds_every_frame_after_a_keyframe_every_n() -> None:
    data, expected = recorded_file()
    assert read_frames(data, expected) == list(range(1, 41))
    stream = packets(data)
    keyframes = [n for n, (_, _, item) in enumerate(stream) if isinstance(item, Session)]
    frames_before = [sum(isinstance(item, Frame) for _, _, item in stream[:n]) for n in keyframes]
    assert frames_before == list(range(0, 41, 5))


@given(st.data())
def test_a_cut_file_reads_from_the_first_keyframe_after_the_cut(data: st.DataObject) -> None:
    recorded, expected = recorded_file()
    start = data.draw(st.integers(0, len(recorded)), label="start")
    end = data.draw(st.integers(start, len(recorded)), label="end")
    cut = recorded[start:end]
    assert read_frames(cut, expected) == frames_after_cut(recorded, start, end)


def test_a_file_sink_on_a_path_closes_its_file(tmp_path: Path) -> None:
    profiler = Profiler("path")
    path = tmp_path / "capture.cpf"
    sink = FileSink(path, profiler, keyframe_every=1)
    expected = {play(profiler, ["one"]): ["one"]}
    sink.close()
    sink.close()
    play(profiler, ["not recorded"])
    data = path.read_bytes()
    assert len(data) == sink.bytes_written
    assert read_frames(data, expected) == [1]


# --- record() ------------------------------------------------------------------------------


def test_record_writes_a_file_readable_from_each_of_its_keyframes() -> None:
    async def body() -> tuple[bytes, dict[int, list[str]], Any]:
        profiler = Profiler("recorded")
        file = io.BytesIO()
        expected: dict[int, list[str]] = {}
        async with await ProfileServer.start(profiler) as server:
            task = asyncio.create_task(record(HOST, server.port, file, keyframe_every=3, frames=10))
            while not server.viewers:
                await asyncio.sleep(0.01)
            i = 0
            while not task.done():
                i += 1
                names = [f"step {i // 4}", "common"]
                expected[play(profiler, names)] = names
                await asyncio.sleep(0.001)
            stats = await task
        return file.getvalue(), expected, stats

    data, expected, stats = run(body())
    assert (stats.frames, stats.keyframes, stats.bytes_written) == (10, 4, len(data))
    got = read_frames(data, expected)
    assert len(got) == 10
    assert stats.frames_dropped == got[-1] - got[0] + 1 - 10  # the gaps, reported by the server
    for begin, _, item in packets(data):
        if isinstance(item, Session):
            assert read_frames(data[begin + 1 :], expected) == frames_after_cut(
                data, begin + 1, len(data)
            )


def test_record_stops_after_its_duration() -> None:
    async def body() -> bytes:
        profiler = Profiler("idle")
        file = io.BytesIO()
        async with await ProfileServer.start(profiler) as server:
            stats = await record(HOST, server.port, file, duration=0.05)
        assert (stats.frames, stats.keyframes) == (0, 1)
        return file.getvalue()

    items = [item for _, item in read_capture(run(body()))]
    assert [type(item) for item in items] == [Session]


# --- restart -------------------------------------------------------------------------------


def test_a_restarted_producer_is_never_mislabelled_in_a_file() -> None:
    file = io.BytesIO()
    expected: dict[tuple[int, int], list[str]] = {}
    for order in ORDERS:
        profiler = Profiler("restart")
        with FileSink(file, profiler, keyframe_every=2):
            for i in range(1, len(order) + 1):
                names = order[:i]  # registered in this producer's order
                expected[profiler.session.session_id, play(profiler, names)] = names
    assert not file.closed
    sessions = []
    frames = 0
    for receiver, item in read_capture(file.getvalue()):
        if isinstance(item, Session):
            sessions.append(item.session_id)
            continue
        assert receiver.session is not None
        assert resolved(receiver, item) == expected[receiver.session.session_id, item.index]
        frames += 1
    assert frames == len(expected)
    assert len(set(sessions)) == 2


@pytest.mark.parametrize("bad", [0, -1])
def test_limits_must_be_positive(bad: int) -> None:
    profiler = Profiler("limits")
    with pytest.raises(ValueError):
        FileSink(io.BytesIO(), profiler, keyframe_every=bad)
    with pytest.raises(ValueError):
        run(record(HOST, 1, io.BytesIO(), keyframe_every=bad))
