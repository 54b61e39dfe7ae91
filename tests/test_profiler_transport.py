"""Tests of the profiler transport, :mod:`codec.profiler.transport`, over real sockets.

Frames are recorded by real :class:`Profiler` objects, served on 127.0.0.1 or
written to in-memory files, and read back with :class:`Receiver`. Every frame
a viewer gets is checked against the scope names the test recorded in it, so
a scope resolved to the wrong definition fails as surely as an unresolved one.

* late joiner (C5): a viewer joining at frame k gets one keyframe and the
  shared packets after it; the viewer already connected gets, byte for byte,
  the shared packets and nothing more;
* slow viewers (C6): a burst past ``max_queued_frames`` drops frames, counts
  them and reports them, and the next frame resolves scopes defined in the
  dropped ones; random drop masks through :class:`ViewerQueue`;
* fan-out from another thread, and a viewer that disconnects;
* restart (C7): two producers with different registration orders, one after
  the other, into one file and into one receiver over two connections;
* cut files (C10): :class:`FileSink` files cut at random offsets read from the
  first keyframe after the cut; :func:`record` writes such files from a server.
"""

from __future__ import annotations

import asyncio
import functools
import io
import threading
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codec import FrameDecoder, varint
from codec.profiler import (
    Frame,
    PacketWriter,
    Profiler,
    Receiver,
    Session,
    read_capture,
)
from codec.profiler.transport import (
    FileSink,
    ProfileServer,
    ViewerClient,
    ViewerQueue,
    connect_viewer,
    record,
)

HOST = "127.0.0.1"
TIMEOUT = 10.0  # per test body


def run(body: Coroutine[Any, Any, Any]) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(TIMEOUT):
            return await body

    return asyncio.run(bounded())


def play(profiler: Profiler, names: Sequence[str]) -> int:
    """One frame of top-level scopes named ``names``, in order; returns its index."""
    for name in names:
        with profiler.scope(name):
            pass
    index = profiler.end_frame()
    assert index
    return index


def resolved(receiver: Receiver, frame: Frame) -> list[str]:
    """The scope names of a frame, in pre-order; raises for an undefined id."""
    return [
        receiver.registry.scope(int(scope_id)).name
        for track in frame.tracks
        for scope_id in track.scope_id
    ]


class Shared:
    """A sink that keeps the bytes every sink is sent for each frame."""

    def __init__(self) -> None:
        self.sizes: list[int] = []  # per frame, from frame 1

    def send(self, registry: memoryview, frame: memoryview) -> None:
        self.sizes.append(len(registry) + len(frame))


async def next_item(client: ViewerClient) -> Session | Frame:
    return await client.__anext__()


async def next_frame(client: ViewerClient, expected: dict[int, list[str]]) -> Frame:
    """The client's next item, which must be a frame with the expected names."""
    item = await next_item(client)
    assert isinstance(item, Frame)
    assert resolved(client.receiver, item) == expected[item.index]
    return item


# --- late joiner (C5) ----------------------------------------------------------------------


async def late_joiner(joins_at: int, frames: int) -> dict[str, int]:
    """A at the start, B before frame ``joins_at``; returns the byte counts."""
    profiler = Profiler("late joiner")
    shared = Shared()
    profiler.add_sink(shared)
    expected: dict[int, list[str]] = {}
    async with await ProfileServer.start(profiler) as server:
        a = await connect_viewer(HOST, server.port)
        assert isinstance(await next_item(a), Session)
        keyframe_a = len(profiler.keyframe())  # a header: nothing is registered yet
        for i in range(1, frames + 1):
            if i == joins_at:
                a_before = a.bytes_received
                b = await connect_viewer(HOST, server.port)
                assert isinstance(await next_item(b), Session)
                keyframe_b = len(profiler.keyframe())  # a header and the registry
            names = [f"scope {i}", f"scope {i // 2}", "common"]  # new ones before and after
            expected[play(profiler, names)] = names
            assert (await next_frame(a, expected)).index == i
            if i >= joins_at:
                assert (await next_frame(b, expected)).index == i
        live = sum(shared.sizes[joins_at - 1 :])
        assert a.bytes_received - a_before == live  # nothing extra for A
        assert a.bytes_received == keyframe_a + sum(shared.sizes)
        assert b.bytes_received == keyframe_b + live  # one keyframe, then the live packets
        assert [viewer.bytes_sent for viewer in server.viewers] == [
            a.bytes_received,
            b.bytes_received,
        ]
        # Every frame defines a scope: a registry packet and a frame packet each.
        assert a.receiver.packets == 1 + 2 * frames
        assert b.receiver.packets == 2 + 2 * (frames - joins_at + 1)
        await a.close()
        await b.close()
    return {
        "keyframe_a": keyframe_a,
        "keyframe_b": keyframe_b,
        "a_around_join": a.bytes_received - a_before,
        "b_total": b.bytes_received,
        "a_total": a.bytes_received,
    }


def test_a_late_joiner_gets_one_keyframe_and_the_others_nothing_extra() -> None:
    counts = run(late_joiner(joins_at=6, frames=10))
    assert counts["keyframe_b"] > counts["keyframe_a"]  # B's holds the scopes of frames 1-5


# --- slow viewers (C6) ---------------------------------------------------------------------


def test_a_slow_viewer_drops_frames_but_never_definitions() -> None:
    async def body() -> None:
        profiler = Profiler("slow viewer")
        expected: dict[int, list[str]] = {}
        async with (
            await ProfileServer.start(profiler, max_queued_frames=3) as server,
            await connect_viewer(HOST, server.port) as viewer,
        ):
            assert isinstance(await next_item(viewer), Session)
            # Ten frames in one go: queued before the viewer's writer runs.
            for i in range(1, 11):
                names = [f"burst {i}", f"burst {i - 1}"]
                expected[play(profiler, names)] = names
            for i in (1, 2, 3):
                assert (await next_frame(viewer, expected)).index == i
            # The next frame uses every scope, most defined with dropped frames.
            names = [f"burst {i}" for i in range(11)]
            expected[play(profiler, names)] = names
            assert (await next_frame(viewer, expected)).index == 11
            assert viewer.receiver.frames_dropped == 7
            (stats,) = server.viewers
            assert (stats.frames_sent, stats.frames_dropped) == (4, 7)
            assert stats.bytes_sent == viewer.bytes_received

    run(body())


class QueueSink:
    """A profiler sink feeding one :class:`ViewerQueue`, as the server does."""

    def __init__(self, profiler: Profiler, capacity: int) -> None:
        self.queue = ViewerQueue(PacketWriter(profiler.session), capacity)
        self.queue.put_registry(profiler.keyframe())
        self.registry_packets: list[bytes] = []
        profiler.add_sink(self)

    def send(self, registry: memoryview, frame: memoryview) -> None:
        if len(registry):
            self.registry_packets.append(bytes(registry))
            self.queue.put_registry(self.registry_packets[-1])
        self.queue.put_frame(bytes(frame))


@given(
    capacity=st.integers(1, 3),
    plan=st.lists(st.tuples(st.booleans(), st.integers(0, 2)), min_size=1, max_size=30),
)
@settings(max_examples=40)
def test_random_drop_masks_never_leave_a_scope_unresolved(
    capacity: int, plan: list[tuple[bool, int]]
) -> None:
    """Per frame: whether the viewer reads before it, and how many new scopes it defines."""
    profiler = Profiler("drops")
    sink = QueueSink(profiler, capacity)
    receiver = Receiver()
    received = bytearray()
    expected: dict[int, list[str]] = {}
    queued = dropped = 0
    kept: list[int] = []
    dropped_before: dict[int, int] = {}  # frame -> drops reported with it

    def read() -> None:
        for packet in sink.queue.take():
            received.extend(packet)
            receiver.feed(packet)
        for item in receiver:
            if isinstance(item, Frame):
                assert resolved(receiver, item) == expected[item.index]
                assert receiver.frames_dropped == dropped_before[item.index]
                kept.append(item.index)

    previous: list[str] = []
    for i, (reads, new) in enumerate(plan, 1):
        if reads:
            read()
            queued = 0
        fresh = [f"frame {i} scope {j}" for j in range(new)]
        names = [*fresh, *previous, "common"]  # the last frame's new scopes again
        previous = fresh
        expected[play(profiler, names)] = names
        if queued == capacity:  # the reference model of the queue
            dropped += 1
        else:
            queued += 1
            dropped_before[i] = dropped
    read()
    assert kept == sorted(dropped_before)
    assert sink.queue.stats.frames_dropped == dropped
    assert sink.queue.stats.frames_sent == len(kept)
    assert receiver.registry.scopes == profiler.registry.scopes  # every definition arrived
    position = 0
    for registry_packets in sink.registry_packets:  # never dropped: all there, in order
        position = received.index(registry_packets, position) + len(registry_packets)


def test_frames_ended_on_another_thread_reach_every_viewer() -> None:
    async def body() -> None:
        profiler = Profiler("threads")
        expected = {i: [f"work {i % 3}", "common"] for i in range(1, 21)}

        def produce() -> None:
            for i in range(1, 21):
                assert play(profiler, expected[i]) == i

        async with await ProfileServer.start(profiler, max_queued_frames=100) as server:
            viewers = [await connect_viewer(HOST, server.port) for _ in range(3)]
            for viewer in viewers:
                assert isinstance(await next_item(viewer), Session)
            await asyncio.to_thread(produce)
            for viewer in viewers:
                for i in range(1, 21):
                    assert (await next_frame(viewer, expected)).index == i
                await viewer.close()
            assert len({viewer.bytes_received for viewer in viewers}) == 1

    run(body())


def test_a_viewer_that_disconnects_is_removed() -> None:
    async def body() -> None:
        profiler = Profiler("disconnect")
        async with await ProfileServer.start(profiler) as server:
            viewer = await connect_viewer(HOST, server.port)
            assert isinstance(await next_item(viewer), Session)
            assert len(server.viewers) == 1
            await viewer.close()
            while server.viewers:
                await asyncio.sleep(0.01)
            play(profiler, ["after"])  # nobody to send to

    run(body())


# --- restart (C7) --------------------------------------------------------------------------

ORDERS = (["alpha", "beta", "gamma"], ["gamma", "delta", "alpha", "beta"])


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


def test_a_restarted_producer_is_never_mislabelled_over_a_connection() -> None:
    async def body() -> None:
        receiver = Receiver()  # kept by the viewer across both connections
        for order in ORDERS:
            profiler = Profiler("restart")
            async with (
                await ProfileServer.start(profiler) as server,
                await connect_viewer(HOST, server.port, receiver=receiver) as viewer,
            ):
                session = await next_item(viewer)
                assert session == profiler.session
                expected: dict[int, list[str]] = {}
                for i in range(1, len(order) + 1):
                    names = order[:i]
                    expected[play(profiler, names)] = names
                    assert (await next_frame(viewer, expected)).index == i
        assert [scope.name for scope in receiver.registry.scopes] == ORDERS[1]

    run(body())


# --- files (C10) ---------------------------------------------------------------------------


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


@pytest.mark.parametrize("bad", [0, -1])
def test_limits_must_be_positive(bad: int) -> None:
    profiler = Profiler("limits")
    with pytest.raises(ValueError):
        FileSink(io.BytesIO(), profiler, keyframe_every=bad)
    with pytest.raises(ValueError):
        ViewerQueue(PacketWriter(profiler.session), bad)
    with pytest.raises(ValueError):
        ProfileServer(profiler, max_queued_frames=bad)
    with pytest.raises(ValueError):
        run(record(HOST, 1, io.BytesIO(), keyframe_every=bad))


def test_frames_are_sent_to_a_server_only_after_start() -> None:
    async def body() -> None:
        profiler = Profiler("start")
        server = ProfileServer(profiler)
        server.send(memoryview(b""), memoryview(b"ignored"))
        with pytest.raises(RuntimeError):
            _ = server.port
        await server.listen(HOST, 0)
        with pytest.raises(RuntimeError):
            await server.listen(HOST, 0)
        await server.close()
        await server.close()

    run(body())


def test_a_server_whose_loop_has_closed_drops_frames() -> None:
    """send() from another thread once the loop is closed drops the frame instead of raising."""
    profiler = Profiler("closed loop")

    async def body() -> ProfileServer:
        return await ProfileServer.start(profiler)

    server = run(body())  # the loop is closed; the server was not
    ended: list[int] = []
    thread = threading.Thread(target=lambda: ended.append(play(profiler, ["late"])))
    thread.start()
    thread.join()
    assert ended == [1]
    assert server.viewers == ()
    asyncio.run(server.close())  # closes the listening socket
