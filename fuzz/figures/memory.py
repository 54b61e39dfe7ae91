"""D5, hostile length prefixes: memory and time of a refusal, and of stalled decoders.

Usage: ``python fuzz/figures/memory.py``

For each hostile prefix (2**63-1, 0xffffffff, the largest frame + 1, 2**32):
the tracemalloc peak of a fresh decoder fed it, and the time from its last
byte to the ``FrameTooLargeError`` (median over 9,900 decoders). For the
largest accepted prefix: the peak of feeding it with no body, and 1,000
stalled decoders each holding a 4 MiB prefix and 100 body bytes (traced bytes
per decoder, RSS growth in all).
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from pathlib import Path

import _common
from _common import MiB

import codec

PREFIXES = {
    "2**63-1": bytes.fromhex("ff" * 8 + "7f"),
    "0xffffffff": bytes.fromhex("ff ff ff ff 0f"),
    "max_frame+1": codec.varint.encode(4 * MiB + 1),
    "2**32": bytes.fromhex("80 80 80 80 10"),
}


def rss_kib() -> int:
    """The resident set size of this process (Linux)."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4


def main() -> None:
    _common.arguments(__doc__)
    for name, prefix in PREFIXES.items():

        def refuse(prefix: bytes = prefix) -> None:
            decoder = codec.FrameDecoder()
            try:
                decoder.feed(prefix)
            except codec.FrameTooLargeError:
                return
            raise AssertionError("accepted")

        peak = _common.traced(refuse)[1]
        decoders = [codec.FrameDecoder() for _ in range(10_000)]
        for decoder in decoders[:100]:  # warm up
            decoder.feed(prefix[:-1])
        times = []
        for decoder in decoders[100:]:
            decoder.feed(prefix[:-1])
            start = time.perf_counter_ns()
            try:
                decoder.feed(prefix[-1:])
            except codec.FrameTooLargeError:
                times.append(time.perf_counter_ns() - start)
        print(
            f"D5 prefix {name}: tracemalloc peak {peak} B; refused "
            f"{statistics.median(times) / 1000:.1f} us (median) after its last byte"
        )
    # Accepted prefixes: max_frame with no body, and 1,000 stalled decoders.
    peak = _common.traced(lambda: codec.FrameDecoder().feed(codec.varint.encode(4 * MiB)))[1]
    gc.collect()
    rss_before = rss_kib()
    tracemalloc.start()
    stalled = []
    for _ in range(1000):
        decoder = codec.FrameDecoder()
        decoder.feed(codec.varint.encode(4 * MiB) + b"x" * 100)
        stalled.append(decoder)
    traced = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    rss = rss_kib() - rss_before
    assert all(d.frame_in_progress for d in stalled)
    print(
        f"D5 max_frame prefix, no body: peak {peak} B; 1,000 stalled decoders (4 MiB "
        f"declared, 100 B received each): {traced / 1000:.0f} B traced per decoder, "
        f"RSS +{rss} KiB in all"
    )


if __name__ == "__main__":
    main()
