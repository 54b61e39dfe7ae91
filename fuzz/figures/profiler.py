"""R4-R7, the profiler under hostile use: interleaved tasks, resync cost, amplification, threads.

Usage: ``python fuzz/figures/profiler.py`` (about 20 to 90 s)

* R4: two asyncio tasks whose scopes interleave on one thread (``a`` for
  50 ms, ``b`` for 200 ms): the tree recorded.
* R5: ``read_capture`` on 1, 4 and 16 MiB of keyframes each followed by a
  damaged packet, on 4 MiB of the same keyframes undamaged, and on 4 MiB of
  damaged keyframes each other than the one before (parsed, not repeats).
* R6: tracemalloc peak and kept bytes per wire byte of one packet of each
  hostile shape (64 KiB, and 1 MiB for two frame shapes, whose 4 MiB packets
  are timed), and of a stream of minimal frames all kept.
* R7: 10,000 short threads that record one scope each: memory still traced,
  an empty ``end_frame()`` before and after, and the keyframe's size.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import threading
import time
import tracemalloc
from collections.abc import Callable

import _common
from _common import KiB, MiB, tag

import codec
from codec.profiler import (
    Frame,
    PacketWriter,
    Profiler,
    Receiver,
    Registry,
    ScopeKind,
    Session,
    read_capture,
)


def keyframe_of(first_line: int = 0) -> bytes:
    """A keyframe of 5 scopes (with their functions and file), 3 threads: 275 bytes.

    The scopes are on lines ``first_line``, ``first_line + 10``, ...
    """
    registry = Registry()
    for i in range(5):
        line = first_line + 10 * i
        registry.add_scope(f"scope {i}", ScopeKind.FUNCTION, f"fn{i}", "game/loop.py", line)
    for i in range(3):
        registry.add_track(f"thread {i}", os_thread_id=1000 + i)
    out = codec.FrameEncoder()
    PacketWriter(Session(7, "measure")).keyframe(out, registry)
    return bytes(out.getbuffer())


def packet_of(field: int, flags: int, body: bytes) -> bytes:
    """One framed packet: its flags, and ``body`` as field ``field``."""
    out = codec.FrameEncoder(64 * MiB)
    with out.frame() as writer:
        writer.uint32(1, flags)
        writer.bytes(field, body)
    return bytes(out.getbuffer())


def frame_of(track: bytes, size: int, scopes_each: int) -> bytes:
    """A frame packet of about ``size`` bytes: ``track`` repeated, ``scopes_each`` a track."""
    entry = b"\x12" + codec.varint.encode(len(track)) + track
    count = size // len(entry)
    meta = b"\x08\x01\x20" + codec.varint.encode(count * scopes_each)
    return packet_of(4, 2, b"\x0a" + codec.varint.encode(len(meta)) + meta + entry * count)


def entries(table: int, size: int, entry: Callable[[int], bytes]) -> bytes:
    """A registry packet of about ``size`` bytes: ``entry(i)`` in field ``table``, i = 1, 2, ..."""
    body = bytearray()
    i = 0
    while len(body) < size:
        i += 1
        value = entry(i)
        body += tag(table, 2) + codec.varint.encode(len(value)) + value
    return packet_of(3, 0, bytes(body))


def hostile_packets(size: int) -> dict[str, bytes]:
    """One packet of about ``size`` bytes of each hostile shape, by name."""
    one_scope = bytes.fromhex("0801 120101 1a0100 220105 2a0100")
    unknown = bytearray()
    field = 100
    while len(unknown) < size:
        unknown += codec.varint.encode(field << 3) + b"\x00"
        field += 1
    definition = b"\x08\x06" + bytes(unknown)
    header = b"\x0d" + (0x31465043).to_bytes(4, "little") + b"\x10\x01" + b"\x52\x00" * (size // 2)
    return {
        "frame of empty tracks (12 02 08 01)": frame_of(b"\x08\x01", size, 0),
        "frame of one-scope tracks, varint": frame_of(one_scope, size, 1),
        "frame of one-scope tracks, fixed": frame_of(
            bytes.fromhex("0801 6204 01000000 6a08")
            + bytes(8)
            + b"\x72\x08"
            + bytes(8)
            + b"\x2a\x01\x00",
            size,
            1,
        ),
        "one frame of 100 scopes a track": frame_of(
            b"\x08\x01\x12\x64"
            + b"\x01" * 100
            + b"\x1a\x64"
            + b"\x00" * 100
            + b"\x22\x64"
            + b"\x05" * 100
            + b"\x2a\x64"
            + b"\x00" * 100,
            size,
            100,
        ),
        "registry: track definitions, no name": entries(
            3, size, lambda i: b"\x08" + codec.varint.encode(i + 3)
        ),
        "registry: scope definitions, no name": entries(
            2, size, lambda i: b"\x08" + codec.varint.encode(i + 5)
        ),
        "registry: strings str(i)": entries(
            1,
            size,
            lambda i: (
                b"\x08"
                + codec.varint.encode(i + 6)
                + b"\x12"
                + bytes([len(str(i))])
                + str(i).encode()
            ),
        ),
        "registry: distinct unknown fields": packet_of(3, 0, bytes(unknown)),
        "a definition of distinct unknown fields": packet_of(
            3, 0, b"\x12" + codec.varint.encode(len(definition)) + definition
        ),
        "header of empty features": packet_of(2, 1, header),
    }


def read_all(data: bytes) -> object:
    """Every item of ``data``, read by one receiver; or the error it raised."""
    receiver = Receiver(max_frame_size=64 * MiB)
    receiver.feed(data)
    try:
        return receiver, list(receiver)
    except codec.DecodeError as exc:
        return exc


def interleaved_tasks() -> None:
    """R4: the tree two interleaving asyncio tasks record."""
    print("\n## R4: two asyncio tasks, scopes across awaits (a: 50 ms, b: 200 ms)")
    prof = Profiler("measure")
    sink = bytearray(prof.keyframe())
    prof.add_sink(type("Sink", (), {"send": lambda self, r, f: sink.extend(bytes(r) + bytes(f))})())

    async def work(name: str, seconds: float) -> None:
        with prof.scope(name):
            await asyncio.sleep(seconds)

    async def both() -> None:
        await asyncio.gather(work("a", 0.05), work("b", 0.2))

    asyncio.run(both())
    prof.end_frame()
    receiver = Receiver()
    receiver.feed(bytes(sink))
    for item in receiver:
        if isinstance(item, Frame):
            for track in item.tracks:
                names = [receiver.registry.scope(int(i)).name for i in track.scope_id]
                ms = [round(d / 1e6, 1) for d in track.duration_ns.tolist()]
                print(
                    f"  track {receiver.registry.track(track.track_ref).name!r}: {names}, "
                    f"depths {track.depth.tolist()}, ms {ms}"
                )


def resync() -> None:
    """R5: the time ``read_capture`` takes over damaged captures."""
    print("\n## R5: read_capture on keyframes each followed by a damaged packet (02 08 ff)")

    def read_timed(what: str, unit: bytes, mib: int) -> None:
        data = unit * (mib * MiB // len(unit))
        started = time.perf_counter()
        items = sum(1 for _ in read_capture(data))
        print(
            f"  {what} ({len(data):,} B, {items:,} sessions): {time.perf_counter() - started:.2f} s"
        )

    damage = b"\x02\x08\xff"
    for mib in (1, 4, 16):
        read_timed(f"{mib:>2} MiB", keyframe_of() + damage, mib)
    read_timed("   4 MiB of the same keyframes, undamaged", keyframe_of(), 4)
    # each keyframe other than the one before: none is a repeat, every one is parsed
    distinct = b"".join(keyframe_of(line) + damage for line in range(256))
    read_timed("   4 MiB of 256 distinct keyframes in turn", distinct, 4)


def amplification() -> None:
    """R6: bytes per wire byte of one hostile packet, while read and kept."""
    print(
        "\n## R6: bytes per wire byte of one packet "
        "(tracemalloc peak while read, kept with the result)"
    )
    keyframe = keyframe_of()
    large = ("frame of empty tracks (12 02 08 01)", "frame of one-scope tracks, varint")
    for size in (64 * KiB, MiB):
        for name, data in hostile_packets(size).items():
            if size > 64 * KiB and name not in large:
                continue
            net, peak, result = _common.traced(lambda d=data: read_all(keyframe + d))
            kept = f"kept {net / len(data):6.1f}"
            if isinstance(result, Exception):
                kept = f"refused: {result}"
            print(f"  {len(data):>9,} B  {name:42} peak {peak / len(data):6.1f}  {kept}")
    for name in large:
        data = hostile_packets(4 * MiB)[name]
        started = time.perf_counter()
        result = read_all(keyframe + data)
        outcome = f"refused: {result}" if isinstance(result, Exception) else "read"
        print(f"  {len(data):>9,} B  {name:42} {time.perf_counter() - started:.1f} s, {outcome}")
    minimal = frame_of(bytes.fromhex("0801 120101 1a0100 220105 2a0100"), 16, 1)
    stream = minimal * (64 * KiB // len(minimal))
    net, peak, _ = _common.traced(lambda: read_all(keyframe + stream))
    print(
        f"  {len(stream):>9,} B  {'stream of minimal frames, every frame kept':42} "
        f"peak {peak / len(stream):6.1f}  kept {net / len(stream):6.1f}  "
        f"({net * len(minimal) // len(stream):,} B per {len(minimal)}-byte frame)"
    )


def short_threads() -> None:
    """R7: what 10,000 short threads that recorded a scope each leave behind."""
    print("\n## R7: 10,000 short threads, one scope each")
    prof = Profiler("threads")
    scope = prof.register_scope("short")

    def one() -> None:
        with scope():
            pass

    def empty_frame_us() -> float:
        times = []
        for _ in range(21):
            started = time.perf_counter_ns()
            prof.end_frame()
            times.append(time.perf_counter_ns() - started)
        return statistics.median(times) / 1e3

    one()
    prof.end_frame()
    print(f"  empty end_frame(), one thread: {empty_frame_us():.1f} us")
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(10_000):
        thread = threading.Thread(target=one)
        thread.start()
        thread.join()
    prof.end_frame()
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    print(
        f"  after them: {kept / MiB:.1f} MiB still traced ({kept / 10_000:,.0f} B a thread); "
        f"empty end_frame() {empty_frame_us():.1f} us; keyframe {len(prof.keyframe()):,} B"
    )


def main() -> None:
    _common.arguments(__doc__)
    interleaved_tasks()
    resync()
    amplification()
    short_threads()


if __name__ == "__main__":
    main()
