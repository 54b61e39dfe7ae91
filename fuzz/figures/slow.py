"""D8, CPU per input byte: the worst decode time per byte over the struct corpora.

Usage: ``python fuzz/figures/slow.py [--corpus DIR ...]``

Every input of at least 34 bytes of the struct-decode and differential
corpora (``fuzz/corpus/fuzz_struct_decode``, ``fuzz/corpus/fuzz_differential``
and the ``--corpus`` directories meant for them) decoded by ``codec.decode``
as the message type its first byte picks (best of 3); prints the worst time
per input byte, with its type and size.
"""

from __future__ import annotations

import contextlib
import time

import _common

import codec
from fuzz import fuzz_differential


def main() -> None:
    args = _common.arguments(__doc__, corpus=True)
    worst = (0.0, "", 0)
    count = 0
    for target in ("fuzz_struct_decode", "fuzz_differential"):
        for data in _common.inputs(target, args.corpus):
            if len(data) < 34:
                continue
            cls = fuzz_differential.pick(data)[0]
            message = data[1:]
            struct = codec.struct(cls)
            best = float("inf")
            for _ in range(3):
                start = time.perf_counter()
                with contextlib.suppress(codec.DecodeError):
                    codec.decode(struct, message)
                best = min(best, time.perf_counter() - start)
            count += 1
            per_byte = best * 1e6 / len(message)
            worst = max(worst, (per_byte, cls.DESCRIPTOR.full_name, len(message)))
    print(
        f"D8 worst decode time per input byte over {count} corpus inputs of >= 32 bytes: "
        f"{worst[0]:.3f} us/byte ({worst[1]}, {worst[2]} bytes)"
    )


if __name__ == "__main__":
    main()
