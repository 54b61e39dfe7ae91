"""Tests of the profile server and its viewers (:mod:`codec.profiler.server`,
:mod:`codec.profiler.client`), over real sockets.

Frames are recorded by real :class:`Profiler` objects, served on 127.0.0.1
and read back with :class:`Receiver`. Every frame a viewer gets is checked
against the scope names the test recorded in it, so a scope resolved to the
wrong definition fails as surely as an unresolved one.

* late joiner: a viewer joining at frame k gets one keyframe and the shared
  packets after it; the viewer already connected gets, byte for byte, the
  shared packets and nothing more;
* slow viewers: a burst past ``max_queued_frames`` drops frames, counts them
  and reports them, and the next frame resolves scopes defined in the
  dropped ones; random drop masks through :class:`ViewerQueue`;
* fan-out from another thread, and a viewer that disconnects;
* restart: two producers with different registration orders, one after the
  other, into one receiver over two connections;
* the server's limits and life cycle.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest
from helpers.profiler_server import (
    HOST,
    ORDERS,
    eventually,
    narrow_listener,
    play,
    raw_viewer,
    read_to_end,
    register,
    resolved,
    run,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from codec import varint
from codec.profiler import (
    Frame,
    PacketWriter,
    Profiler,
    Receiver,
    Session,
)
from codec.profiler.client import ViewerClient, connect_viewer
from codec.profiler.server import ProfileServer, ViewerQueue


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


# --- late joiner ---------------------------------------------------------------------------


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


# --- slow viewers --------------------------------------------------------------------------


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


# --- hostile viewers ------------------------------------------------------------------------


def test_a_viewer_that_stops_sending_without_reading_is_dropped_at_once() -> None:
    """A viewer half-closes and never reads: it is gone, and so is what was queued for it.

    The server waited for its transport to drain (forever: nobody reads), so
    it stayed among the viewers with its socket, frames kept being queued for
    it, and the connection outlived even the server's close().
    """

    async def body() -> None:
        profiler = Profiler("half-close")
        keyframe = register(profiler)
        async with await ProfileServer.start(
            profiler, None, None, sock=narrow_listener(), write_high_water=4096
        ) as server:
            viewer = await raw_viewer(server.port)
            with viewer:
                await eventually(lambda: len(server.viewers) == 1)
                await eventually(lambda: server.viewers[0].bytes_sent == keyframe)
                viewer.shutdown(socket.SHUT_WR)
                await eventually(lambda: not server.viewers)
                play(profiler, ["after"])  # nobody to send to
                assert await read_to_end(viewer) < keyframe  # the rest was dropped, not kept

    run(body())


def test_a_viewer_that_announces_a_large_frame_is_disconnected_at_its_prefix() -> None:
    """What a viewer sends is bounded by a small frame limit, not the default 4 MiB.

    Viewers send nothing, yet each could make the server buffer a 4 MiB frame
    it never finished: 4 MiB of the server's memory per connection.
    """

    async def body() -> None:
        profiler = Profiler("viewer frames")
        async with await ProfileServer.start(profiler) as server:
            viewer = await raw_viewer(server.port)
            with viewer:
                await eventually(lambda: len(server.viewers) == 1)
                loop = asyncio.get_running_loop()
                await loop.sock_sendall(viewer, varint.encode(1 << 20) + bytes(64 * 1024))
                await read_to_end(viewer)  # the keyframe, then the end
                await eventually(lambda: not server.viewers)

    run(body())


def test_viewers_that_join_share_one_keyframe_until_the_registry_grows() -> None:
    """A keyframe is encoded once per state of the registry, not once per connection.

    Each connection encoded the whole registry on the event loop (87 ms and
    3.4 MB for 100,000 scopes), so connecting again and again kept the loop
    busy and held a private copy per viewer.
    """

    async def body() -> None:
        profiler = Profiler("shared keyframe")
        register(profiler, 100)
        encoded: list[int] = []
        keyframe = profiler.keyframe

        def counted() -> bytes:
            packets = keyframe()
            encoded.append(len(packets))
            return packets

        profiler.keyframe = counted  # type: ignore[method-assign]
        expected: dict[int, list[str]] = {}
        async with await ProfileServer.start(profiler) as server:
            viewers = []
            for round_ in range(3):
                for _ in range(4):
                    viewers.append(await connect_viewer(HOST, server.port))
                    assert isinstance(await next_item(viewers[-1]), Session)
                assert len(encoded) == round_ + 1
                names = [f"new in round {round_}", "registered scope 7"]
                expected[play(profiler, names)] = names
                for viewer in viewers:
                    assert (await next_frame(viewer, expected)).index == round_ + 1
            assert encoded[0] < encoded[1] < encoded[2]  # each covers the scopes before it
            for viewer in viewers:
                await viewer.close()

    run(body())


def test_close_resets_viewers_that_do_not_read_within_its_timeout() -> None:
    """close() hands a reading viewer its last frame, and resets one that reads nothing.

    Closed gracefully, the connection of a viewer that reads nothing stayed
    open after close() for as long as the viewer liked, with its socket and
    every byte queued for it.
    """

    async def body() -> None:
        profiler = Profiler("close")
        keyframe = register(profiler)
        server = await ProfileServer.start(
            profiler, None, None, sock=narrow_listener(), close_timeout=0.2
        )
        stalled = await raw_viewer(server.port)
        with stalled:
            async with await connect_viewer(HOST, server.port) as reader:
                assert isinstance(await next_item(reader), Session)
                await eventually(lambda: len(server.viewers) == 2)
                expected = {play(profiler, ["last"]): ["last"]}
                started = time.monotonic()
                await server.close()
                assert time.monotonic() - started < 1.5
                assert (await next_frame(reader, expected)).index == 1
                with pytest.raises(StopAsyncIteration):
                    await next_item(reader)
            assert await read_to_end(stalled) < keyframe

    run(body())


# --- restart -------------------------------------------------------------------------------


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


@pytest.mark.parametrize("bad", [0, -1])
def test_limits_must_be_positive(bad: int) -> None:
    profiler = Profiler("limits")
    with pytest.raises(ValueError):
        ViewerQueue(PacketWriter(profiler.session), bad)
    with pytest.raises(ValueError):
        ProfileServer(profiler, max_queued_frames=bad)
    with pytest.raises(ValueError):
        ProfileServer(profiler, close_timeout=bad - 0.5)


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


def test_a_server_that_failed_to_listen_can_listen_again_and_close() -> None:
    """A listen() that fails leaves the server as it was; close() of one never listening works.

    close() removed a sink the profiler did not have (ValueError, which also
    hid the error of a failed listen() in ``async with``), and a failed
    listen() left the server "already listening".
    """

    async def body() -> None:
        profiler = Profiler("listen")
        await ProfileServer(profiler).close()
        with socket.socket() as busy:
            busy.bind((HOST, 0))
            busy.listen()
            port = busy.getsockname()[1]
            server = ProfileServer(profiler)
            with pytest.raises(OSError):
                async with server:
                    await server.listen(HOST, port)
            with pytest.raises(RuntimeError, match="closed"):
                await server.listen(HOST, 0)
            server = ProfileServer(profiler)
            with pytest.raises(OSError):
                await server.listen(HOST, port)
            await server.listen(HOST, 0)
            async with server, await connect_viewer(HOST, server.port) as viewer:
                assert isinstance(await next_item(viewer), Session)

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
