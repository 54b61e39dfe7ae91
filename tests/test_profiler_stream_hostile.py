"""Profiler streams from a hostile peer: regressions found by ``fuzz/fuzz_profiler_stream.py``.

A test that pins down a finding of ``SECURITY.md`` names it (R1, R2, ...).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import re
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from helpers.profiler_streams import (
    BAD_STREAMS,
    build_frames,
    frame_of,
    keyframe_bytes,
    packet,
    registry_for_tests,
    registry_packet_entry,
    write_stream,
)

from codec import FrameEncoder, aio, varint
from codec.profiler import (
    Frame,
    PacketWriter,
    Receiver,
    Registry,
    Session,
    StreamError,
    TrackColumns,
    capture,
    find_keyframe,
    packets,
    read_capture,
)
from codec.profiler.client import connect_viewer
from codec.profiler.packets import (
    MAGIC,
    PROTOCOL_MAJOR,
    STATE_CLEARED,
    PacketField,
    RegistryDeltaField,
    StreamHeaderField,
)


def count_wire_readers(monkeypatch: pytest.MonkeyPatch, weight: Callable[[Any], int]) -> list[int]:
    """Count the ``WireReader`` objects that reading a capture builds, in the capture reader
    and in the packet reader, each by ``weight(buffer)``: the total is the list's item."""
    total = [0]
    for module in (capture, packets):
        real_reader = module.WireReader

        def counting_reader(buffer: Any, real_reader: Any = real_reader) -> Any:
            total[0] += weight(buffer)
            return real_reader(buffer)

        monkeypatch.setattr(module, "WireReader", counting_reader)
    return total


def padded(data: bytes, extra: int) -> bytes:
    """``data`` with the length prefix of every packet padded by ``extra`` bytes."""
    out = bytearray()
    pos = 0
    while pos < len(data):
        size, body = varint.decode(data, pos)
        prefix = bytearray(varint.encode(size))
        prefix[-1] |= 0x80
        prefix += b"\x80" * (extra - 1) + b"\x00"
        out += prefix + data[body : body + size]
        pos = body + size
    return bytes(out)


@pytest.mark.parametrize("extra", [1, 3])
@pytest.mark.parametrize("name", ["undefined scope id", "malformed packet", "first depth not 0"])
def test_stream_error_offsets_count_padded_prefixes(name: str, extra: int) -> None:
    """R1: the offset of a StreamError is where its packet starts, whatever its prefix."""
    data = padded(BAD_STREAMS[name][0], extra)
    bad_packet = len(padded(keyframe_bytes(), extra))
    for chunk in (len(data), 1, 7):
        receiver = Receiver()
        with pytest.raises(StreamError) as raised:
            for i in range(0, len(data), chunk):
                receiver.feed(data[i : i + chunk])
                list(receiver)
        assert raised.value.offset == bad_packet


@pytest.mark.parametrize("extra", [1, 3])
@pytest.mark.parametrize("name", ["undefined scope id", "malformed packet"])
def test_a_viewer_counts_padded_prefixes_in_its_offsets(name: str, extra: int) -> None:
    """R1 over a connection: a viewer's offsets and byte count include padded prefixes.

    ``ViewerClient`` counted each packet's prefix as a minimal varint, so a
    server that padded its prefixes made the StreamError's offset fall short
    of the bad packet, and ``bytes_received`` short of the bytes received.
    """
    data = padded(BAD_STREAMS[name][0], extra)
    bad_packet = len(padded(keyframe_bytes(), extra))

    async def body() -> None:
        async def serve(reader: aio.FramedReader[Any], writer: aio.FramedWriter) -> None:
            writer.transport.write(data)
            with contextlib.suppress(EOFError, ConnectionError):
                await reader.recv()  # until the viewer goes

        server = await aio.start_server(serve, "127.0.0.1", 0)
        async with server:
            port = server.sockets[0].getsockname()[1]
            async with await connect_viewer("127.0.0.1", port) as viewer:
                with pytest.raises(StreamError) as raised:
                    async for _ in viewer:
                        pass
                assert raised.value.offset == bad_packet
                assert viewer.bytes_received == len(data)

    asyncio.run(asyncio.wait_for(body(), 10))


def test_read_capture_reads_a_keyframe_once_after_padded_prefixes() -> None:
    """R1: read_capture resumes after the bad packet itself, not at an offset short of it.

    With the padding left out of the offsets, the resync began 504 bytes too
    early, before the second keyframe, which was read (and yielded) twice.
    """
    stats = FrameEncoder()
    for _ in range(61):
        PacketWriter(Session(7, "bad")).stats(stats, 1, 2)
    first = padded(keyframe_bytes() + bytes(stats.getbuffer()), 8)
    data = first + BAD_STREAMS["undefined scope id"][0]
    items = [item for _, item in read_capture(data)]
    assert [type(item) for item in items] == [Session, Session]


@pytest.mark.parametrize("damage", [b"\xff\xff\x3f", b"\x90\x01", b"\x80\x80\x80\x01"])
def test_read_capture_resumes_after_a_length_prefix_that_runs_past_the_end(damage: bytes) -> None:
    """R2: a damaged prefix declaring more bytes than are left does not hide later keyframes."""
    frames = build_frames([[((1,), (0,), (9,), (0,))]], 10**9)
    second = write_stream(frames, fixed=True)
    data = keyframe_bytes() + damage + second
    assert find_keyframe(data, 1) > len(keyframe_bytes())
    items = [item for _, item in read_capture(data)]
    assert [type(item) for item in items] == [Session, Session, Frame]
    assert items[1].fixed_columns and items[2].index == 1


def test_a_capture_cut_inside_its_last_packet_still_ends_quietly() -> None:
    """R2: resuming after a cut packet finds no keyframe in its remains and ends."""
    out = FrameEncoder()
    writer = PacketWriter(Session(9, "cut"))
    writer.header(out)
    data = keyframe_bytes() + bytes(out.getbuffer())
    for cut in range(len(keyframe_bytes()) + 1, len(data)):
        items = [item for _, item in read_capture(data[:cut])]
        assert [item.producer_name for item in items] == ["bad"]


def test_a_file_full_of_magic_numbers_is_searched_with_few_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """R3: each occurrence of the magic costs byte checks, not a parse of every candidate."""
    size = 64 * 1024
    unit = varint.encode(size // 2) + bytes.fromhex("000d43504631")
    data = (unit * (size // len(unit) + 1))[:size]
    reads = count_wire_readers(monkeypatch, lambda buffer: 1)
    assert list(read_capture(data)) == []
    occurrences = data.count(bytes.fromhex("0d43504631"))
    assert occurrences > 5000
    assert reads[0] <= occurrences, (reads[0], occurrences)


def test_resyncing_after_damage_after_damage_reads_each_byte_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Keyframes each followed by a damaged packet: the work is linear in the file's size.

    Each resync used to feed the whole rest of the file into a new receiver's
    decoder (1 MiB took 1.2 s, 4 MiB 29 s): here that would have been 1.8 MB
    copied for this 23 KB file. Counted: bytes fed to a decoder and bytes of
    the packets read.
    """
    work = 0

    class Counting(Receiver):
        def feed(self, data: Any) -> None:
            nonlocal work
            work += len(data)
            super().feed(data)

        def read_packet(self, payload: Any, size: int | None = None) -> Any:
            nonlocal work
            work += len(payload) if size is None else size
            return super().read_packet(payload, size)

    monkeypatch.setattr(capture, "Receiver", Counting)
    unit = keyframe_bytes() + b"\x02\x08\xff"
    data = unit * 80
    items = [item for _, item in read_capture(data)]
    assert [type(item) for item in items] == [Session] * 80
    assert work <= len(data), (work, len(data))


def test_a_keyframe_repeated_after_each_damaged_packet_is_parsed_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """R5: the receivers of a resync share what the last keyframe decoded to.

    Each resync's new receiver used to parse the keyframe again, its header
    and each of its 14 definitions: WireReader read 3 bytes per byte of
    this file. Counted: the bytes given to readers, which read each packet
    once and the candidate packets the resync tries.
    """
    parsed = count_wire_readers(monkeypatch, lambda buffer: len(memoryview(buffer)))
    unit = keyframe_bytes() + b"\x02\x08\xff"
    data = unit * 80
    receivers = [receiver for receiver, _ in read_capture(data)]
    assert len(set(map(id, receivers))) == 80
    expected = registry_for_tests()
    for receiver in receivers:
        registry = receiver.registry
        assert (registry.strings, registry.scopes, registry.tracks) == (
            expected.strings,
            expected.scopes,
            expected.tracks,
        )
    assert parsed[0] <= 2 * len(data), parsed[0] / len(data)


def test_a_repeated_keyframe_decodes_as_it_did_the_first_time() -> None:
    """A repeat is a copy of what its bytes decoded to, whatever came in between: more
    definitions, another keyframe, a lower ``max_elements``."""
    receiver = Receiver()

    def scopes_after(data: bytes) -> list[str]:
        receiver.feed(data)
        list(receiver)
        return [scope.name for scope in receiver.registry.scopes]

    def string_ids() -> list[int]:
        return [receiver.registry.string_id(text) for text in receiver.registry.strings]

    names = [f"scope {i}" for i in range(5)]
    # string 7 "fn9", and scope 6 "new" in file 7
    added = packet(
        lambda w: w.bytes(
            PacketField.REGISTRY, bytes.fromhex("0a07 0807 1203666e39 1209 0806 12036e6577 2807")
        )
    )
    assert scopes_after(keyframe_bytes() + added) == [*names, "new"]
    assert receiver.registry.scope(6).file == "fn9" and string_ids() == [1, 2, 3, 4, 5, 6, 7]
    assert scopes_after(keyframe_bytes()) == names
    assert string_ids() == [1, 2, 3, 4, 5, 6]
    with pytest.raises(KeyError):
        receiver.registry.string_id("fn9")
    other = Registry()
    other.add_scope("other")
    out = FrameEncoder()
    PacketWriter(Session(7, "bad")).keyframe(out, other)
    assert scopes_after(bytes(out.getbuffer())) == ["other"]
    assert scopes_after(keyframe_bytes()) == names
    assert scopes_after(keyframe_bytes()) == names
    assert string_ids() == [1, 2, 3, 4, 5, 6]
    receiver.max_elements = 13
    with pytest.raises(StreamError, match="more than max_elements"):
        scopes_after(keyframe_bytes())


ONE_SCOPE_TRACK = bytes.fromhex("0801 120101 1a0100 220105 2a0100")


def unknown_fields(count: int) -> bytes:
    """``count`` varint fields of distinct numbers from 100, each 0."""
    return b"".join(varint.encode((100 + i) << 3) + b"\x00" for i in range(count))


def header_with_features(count: int) -> bytes:
    def build(writer: Any) -> None:
        writer.uint32(PacketField.SEQUENCE_FLAGS, STATE_CLEARED)
        with writer.message(PacketField.HEADER) as header:
            header.fixed32(StreamHeaderField.MAGIC, MAGIC)
            header.uint32(StreamHeaderField.PROTOCOL_MAJOR, PROTOCOL_MAJOR)
            for _ in range(count):
                header.string(StreamHeaderField.FEATURES, "")

    return packet(build)


HOSTILE_PACKETS: dict[str, Callable[[], bytes]] = {
    "empty tracks": lambda: frame_of([b"\x08\x01"] * 10_000),
    "one-scope tracks": lambda: frame_of([ONE_SCOPE_TRACK] * 3_000, 3_000),
    "distinct unknown fields in a registry packet": lambda: packet(
        lambda w: w.bytes(PacketField.REGISTRY, unknown_fields(15_000))
    ),
    "distinct unknown fields in a definition": lambda: packet(
        lambda w: registry_packet_entry(
            w, RegistryDeltaField.SCOPES, lambda e: e.raw(b"\x08\x06" + unknown_fields(15_000))
        )
    ),
    "a header of empty features": lambda: header_with_features(20_000),
}


@pytest.mark.parametrize("name", HOSTILE_PACKETS)
def test_a_packet_makes_at_most_16_bytes_per_wire_byte(name: str) -> None:
    """The reader's amplification: traced peak while reading one packet and keeping the result.

    A frame of empty tracks (4 bytes each) used to keep 77 bytes per wire
    byte (peak 126): a 4 MB packet took 1 GB.

    The least peak of three reads counts. Uncompiled, ``WireReader.packed``
    finds a column's offset through numpy's ``__array_interface__``, whose
    keys are interned and freed on every call, and now and then the
    interpreter rebuilds its table of interned strings (1.9 MB in a test
    run, whatever the packet) inside whichever read is running.
    """
    data = keyframe_bytes() + HOSTILE_PACKETS[name]()
    size = len(data) - len(keyframe_bytes())

    def read() -> Any:
        receiver = Receiver()
        receiver.feed(data)
        return receiver, list(receiver)

    def traced() -> tuple[int, Any]:
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            kept = read()
            return tracemalloc.get_traced_memory()[1] - before, kept
        finally:
            tracemalloc.stop()

    read()
    peak, kept = min((traced() for _ in range(3)), key=lambda traced_read: traced_read[0])
    assert kept[1], name
    assert peak <= 16 * size, (peak / size, name)


def budget_stream(tracks: int) -> bytes:
    return keyframe_bytes() + frame_of([ONE_SCOPE_TRACK] * tracks, tracks)


def first_packet_end(data: bytes) -> int:
    size, body = varint.decode(data)
    return body + size


@pytest.mark.parametrize(
    ("data", "budget", "what", "offset"),
    [
        (
            budget_stream(10),
            20,
            "a frame of more than max_elements (19) tracks and scopes",
            len(keyframe_bytes()),
        ),
        (
            keyframe_bytes(),
            14,
            "a session of more than max_elements (13) definitions",
            first_packet_end(keyframe_bytes()),
        ),
        (header_with_features(3), 3, "a header of more than max_elements (2) features", 0),
    ],
    ids=["frame", "registry", "header"],
)
def test_max_elements_bounds_what_a_packet_or_a_session_keeps(
    data: bytes, budget: int, what: str, offset: int
) -> None:
    """Exactly the budget is accepted; one element fewer refuses the packet, at its offset."""
    receiver = Receiver(max_elements=budget)
    receiver.feed(data)
    assert list(receiver)
    receiver = Receiver(max_elements=budget - 1)
    receiver.feed(data)
    with pytest.raises(StreamError, match=re.escape(what)) as raised:
        list(receiver)
    assert raised.value.offset == offset


def test_definitions_repeated_at_the_budget_are_not_counted_twice() -> None:
    """A registry at exactly max_elements accepts a repeat of its definitions (a keyframe's)."""
    keyframe = keyframe_bytes()
    registry_packet = keyframe[first_packet_end(keyframe) :]
    receiver = Receiver(max_elements=14)
    receiver.feed(keyframe + registry_packet)
    assert [type(item) for item in receiver] == [Session]
    assert receiver.packets == 3


def test_read_capture_takes_a_packet_over_its_budget_for_damage() -> None:
    data = budget_stream(10) + keyframe_bytes()
    items = [item for _, item in read_capture(data, max_elements=19)]
    assert [type(item) for item in items] == [Session, Session]
    items = [item for _, item in read_capture(data, max_elements=20)]
    assert [type(item) for item in items] == [Session, Frame, Session]


def test_a_frame_read_from_a_stream_is_a_sequence_of_tracks() -> None:
    tracks = [bytes.fromhex(f"08{ref:02x} 120101 1a01{ref:02x} 220105 2a0100") for ref in (1, 2, 3)]
    receiver = Receiver()
    receiver.feed(keyframe_bytes() + frame_of(tracks, 3, start_ns=100))
    (_, frame) = list(receiver)
    assert isinstance(frame.tracks, TrackColumns) and len(frame.tracks) == 3
    assert [t.track_ref for t in frame.tracks] == [1, 2, 3]
    assert [int(t.start_ns[0]) for t in frame.tracks] == [101, 102, 103]
    assert frame.tracks[-1].track_ref == 3
    assert [t.track_ref for t in frame.tracks[1:]] == [2, 3]
    with pytest.raises(IndexError):
        frame.tracks[3]
    with pytest.raises(IndexError):
        frame.tracks[-4]


@pytest.mark.parametrize(
    ("third", "message"),
    [
        ("0803 120101 1a0100 220105 2a0101", "track 3: depths are not in pre-order"),
        ("0803 12020101 1a020000 22020505 2a020002", "track 3: depths are not in pre-order"),
        ("0803 120109 1a0100 220105 2a0100", "track 3: scope id outside 1..5"),
    ],
    ids=["first depth 1", "depth rises by 2", "undefined scope id"],
)
def test_a_bad_track_is_named_after_good_and_empty_ones(third: str, message: str) -> None:
    """Depths and ids are checked for the whole frame at once, and the error names the track."""
    tracks = [bytes.fromhex("0801 12020101 1a020000 22020505 2a020001"), b"\x08\x02"]
    tracks.append(bytes.fromhex(third))
    receiver = Receiver()
    receiver.feed(keyframe_bytes() + frame_of(tracks))
    with pytest.raises(StreamError, match=re.escape(message)) as raised:
        list(receiver)
    assert raised.value.offset == len(keyframe_bytes())
