"""D6, amplification: bytes ``codec.decode`` allocates per wire byte, and what the budget allows.

Usage: ``python fuzz/figures/amplification.py``

For each adversarial generator of the catalogue's P8 (packed bools, empty
sub-messages, distinct map keys, unknown fields and groups, ...), 64 KiB of
input in the message type it targets (``tests/schemas``): the tracemalloc
peak of one decode per wire byte, and the ``max_elements`` units it costs
(the smallest budget that decodes it). Then the worst generator, by both
measures, filling one frame of the default maximum size (4 MiB) through
``FrameDecoder(message_type=...)`` under the default limits: refused or not,
how long it took, and its peak.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import _common
from _common import KiB, MiB, tag

import codec
from tests.schemas import everything_pb2 as E
from tests.schemas import legacy_pb2 as L


def generators() -> dict[str, tuple[Any, Callable[[int], bytes]]]:
    """By name: the message type, and a function of the size that makes the input."""
    v = codec.varint.encode

    def packed(n: int) -> bytes:
        return b"\x0a" + v(n) + b"\x01" * n

    def keyed(field: int, extra: bytes = b"") -> Callable[[int], bytes]:
        def make(n: int) -> bytes:
            out = bytearray()
            i = 0
            while len(out) < n:
                if field == 104:  # a string key
                    key = str(i).encode()
                    entry = b"\x0a" + v(len(key)) + key
                else:
                    entry = b"\x08" + v(i) + extra
                out += tag(field, 2) + v(len(entry)) + entry
                i += 1
            return bytes(out)

        return make

    def repeat(unit: bytes) -> Callable[[int], bytes]:
        return lambda n: unit * (n // len(unit))

    return {
        "packed bools (CatPackedBool)": (E.CatPackedBool, packed),
        "empty sub-messages (CatRepeated 0a 00)": (E.CatRepeated, repeat(b"\x0a\x00")),
        "repeated singular sub-message (CatNested 0a 02 08 01)": (
            E.CatNested,
            repeat(b"\x0a\x02\x08\x01"),
        ),
        "unknown varint fields (CatInt32 10 00)": (E.CatInt32, repeat(b"\x10\x00")),
        "empty Tree children (Tree 22 00)": (E.Tree, repeat(b"\x22\x00")),
        "empty Inner in AllTypes.r_inner": (E.AllTypes, repeat(tag(83, 2) + b"\x00")),
        "empty Leaf in AllTypes.r_leaf": (E.AllTypes, repeat(tag(84, 2) + b"\x00")),
        "map<int64, Empty> entries, distinct keys": (E.AllTypes, keyed(106)),
        "map<string, AllTypes> entries, distinct keys, no value": (E.AllTypes, keyed(104)),
        "map<uint64, Leaf> entries, distinct keys, no value": (E.AllTypes, keyed(94)),
        "unknown groups (CatInt32 13 14)": (E.CatInt32, repeat(b"\x13\x14")),
        "repeated Record children (Record fa 01 00)": (L.Record, repeat(tag(31, 2) + b"\x00")),
    }


def main() -> None:
    _common.arguments(__doc__)
    size = 64 * KiB
    budget = codec.structs._schema.DEFAULT_MAX_ELEMENTS
    worst = (0.0, "")
    worst_unit = (0.0, "")
    for name, (cls, make) in generators().items():
        data = make(size)
        struct = codec.struct(cls)
        try:
            codec.decode(struct, data)
        except codec.DecodeError as exc:
            print(f"D6 {name}: {len(data)} B refused under the default limits: {exc}")
            continue
        peak = _common.traced(lambda s=struct, d=data: codec.decode(s, d))[1]
        low, high = 0, budget
        while low < high:  # the smallest max_elements that decodes it: the units it costs
            mid = (low + high) // 2
            try:
                codec.decode(struct, data, max_elements=mid)
                high = mid
            except codec.DecodeError:
                low = mid + 1
        units = low
        ratio = peak / len(data)
        per_unit = peak / units if units else float("nan")
        worst = max(worst, (ratio, name))
        if units >= 1000:  # a cost that scales with the input (not a merged singleton)
            worst_unit = max(worst_unit, (per_unit, name))
        print(
            f"D6 {name}: {len(data)} B -> peak {peak / MiB:.1f} MiB ({ratio:.0f} B per wire "
            f"byte); {units} units of max_elements ({per_unit:.0f} B per unit)"
        )
    print(f"D6 worst: {worst[0]:.0f} B allocated per wire byte ({worst[1]})")
    bound = worst_unit[0] * budget / MiB
    print(
        f"D6 worst per max_elements unit: {worst_unit[0]:.0f} B ({worst_unit[1]}): the "
        f"default budget of {budget:,} units admits about {bound:,.0f} MiB per decode"
    )
    # The two worst generators filling one frame of the default size, through FrameDecoder.
    for name in dict.fromkeys([worst[1], worst_unit[1]]):
        cls, make = generators()[name]
        data = make(4 * MiB - 16)
        frame = codec.varint.encode(len(data)) + data

        def run(frame: bytes = frame, cls: Any = cls) -> str:
            decoder = codec.FrameDecoder(message_type=codec.struct(cls))
            try:
                decoder.feed(frame)
                decoder.next_frame()
            except codec.DecodeError as exc:
                return f"refused ({type(exc).__name__} at offset {exc.offset:,})"
            return "accepted"

        gc.collect()
        start = time.perf_counter()
        outcome = run()  # timed without tracemalloc, which slows allocation down
        elapsed = time.perf_counter() - start
        tracemalloc.start()
        run()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(
            f"D6 one {len(data):,}-byte frame of {name}, default limits: {outcome} in "
            f"{elapsed:.2f} s, tracemalloc peak {peak / MiB:,.0f} MiB"
        )


if __name__ == "__main__":
    main()
