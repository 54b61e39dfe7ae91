"""Z1, stale memory: whether ``get_buffer(n)`` of a fresh decoder shows freed objects' bytes.

Usage: ``python fuzz/figures/stale.py``

For n = 5,000, 8,192, 65,536 and 1 MiB: 100 times, freed heap blocks of many
sizes are left holding 0xA5, then a fresh ``FrameDecoder`` hands out a view of
``get_buffer(n)``; prints how many views held non-zero bytes, and how many
such bytes in all.
"""

from __future__ import annotations

import _common
from _common import MiB

import codec
from tests.helpers.heap import fill_freed_memory


def main() -> None:
    _common.arguments(__doc__)
    print("\n## get_buffer(n) of fresh decoders, freed memory filled with 0xA5 first")
    for size in (5000, 8192, 65536, MiB):
        dirty = 0
        nonzero = 0
        for _ in range(100):
            fill_freed_memory(0xA5)
            decoder = codec.FrameDecoder()
            with decoder.get_buffer(size) as view:
                count = size - view.tobytes().count(0)
            dirty += count > 0
            nonzero += count
        print(f"  n = {size:>8}: {dirty:>3} / 100 views held non-zero bytes ({nonzero} bytes)")


if __name__ == "__main__":
    main()
