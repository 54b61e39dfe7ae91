"""D7, depth: time to reject 100,000 levels of nesting, and the stack it needs.

Usage: ``python fuzz/figures/depth.py`` (and ``CODEC_PURE_PYTHON=1 python
fuzz/figures/depth.py`` for the uncompiled build)

For 100,000 nested messages (``everything.Chain``), 100,000 group starts and
100,000 unknown groups closed (``everything.CatInt32``), each through
``WireReader`` (every LEN value opened as a nested reader, by a walker of its
own that uses no stack), ``codec.decode`` and
``FrameDecoder(message_type=<struct>)``: the time to reject it with
``DepthLimitError`` (median of 5), and the smallest Python recursion limit,
counted from the caller's frames, with which it is still rejected that way.
"""

from __future__ import annotations

import inspect
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import _common

import codec
from tests.schemas import everything_pb2 as E

DEEP = 100_000


def nested(levels: int, header: bytes) -> bytes:
    """``levels`` messages, each the only field (``header``) of its parent."""
    payload = b""
    for _ in range(levels):
        payload = header + codec.varint.encode(len(payload)) + payload
    return payload


def walk(reader: codec.wire.WireReader) -> None:
    """Open every LEN value as a nested message, iteratively (the walker uses no stack)."""
    pending = [reader]
    while pending:
        current = pending.pop()
        for _, wire_type, value in current:
            if wire_type == codec.wire.LEN:
                pending.append(current.nested(value))


def apis(cls: Any) -> dict[str, Callable[[bytes], object]]:
    """The message APIs a deep input of ``cls`` goes through, by name."""
    struct = codec.struct(cls)

    def framed(data: bytes) -> object:
        decoder = codec.FrameDecoder(message_type=struct)
        decoder.feed(codec.varint.encode(len(data)) + data)
        return decoder.next_frame()

    return {
        "WireReader": lambda data: walk(codec.wire.WireReader(data)),
        "codec.decode": lambda data: codec.decode(struct, data),
        "FrameDecoder(message_type)": framed,
    }


def stack_depth() -> int:
    """The frames on the stack, this function's own included."""
    return len(inspect.stack(0))


def smallest_recursion_limit(run: Callable[[bytes], object], data: bytes) -> int:
    """The smallest recursion limit that still rejects ``data``, less the frames already on
    the stack (as :func:`stack_depth`, called from here, counts them)."""
    here = stack_depth()
    saved = sys.getrecursionlimit()
    low, high = here + 5, 2000
    try:
        while low < high:
            mid = (low + high) // 2
            sys.setrecursionlimit(mid)
            try:
                run(data)
            except codec.errors.DepthLimitError:
                high = mid
            except (RecursionError, codec.DecodeError):  # FrameDecoder wraps RecursionError
                low = mid + 1
    finally:
        sys.setrecursionlimit(saved)
    return low - here


def main() -> None:
    _common.arguments(__doc__)
    cases = {
        "100,000 nested messages": (E.Chain, nested(DEEP, b"\x0a")),
        "100,000 group starts": (E.CatInt32, b"\x0b" * DEEP),
        "100,000 unknown groups, closed": (E.CatInt32, b"\x13" * DEEP + b"\x14" * DEEP),
    }
    build = "compiled" if codec.COMPILED else "pure Python"
    for name, (cls, data) in cases.items():
        for api, run in apis(cls).items():
            times = []
            for _ in range(5):
                start = time.perf_counter()
                try:
                    run(data)
                except codec.errors.DepthLimitError:
                    pass
                else:
                    raise AssertionError(f"{api} accepted {name}")
                times.append(time.perf_counter() - start)
            limit = smallest_recursion_limit(run, data)
            print(
                f"D7 {build} {name} via {api}: rejected in "
                f"{statistics.median(times) * 1000:.2f} ms (median of 5); works down to "
                f"sys.setrecursionlimit({limit})"
            )


if __name__ == "__main__":
    main()
