"""D3, split invariance: every frame-decoder stream, decoded whole and cut every way.

Usage: ``python fuzz/figures/split.py [--corpus DIR ...]``

Every stream of the frame decoder's corpora (``fuzz/corpus/fuzz_frame_decoder``
and the ``--corpus`` directories meant for it) of at most 4,096 bytes is
decoded whole, one byte at a time, at every 2-way split and in 100 random
chunkings (seeded), via ``feed()`` and via ``get_buffer()``, with the strict
flag and the limit of its input header; prints the runs and how many
differed from the whole run (frames, error) in any way.
"""

from __future__ import annotations

import random

import _common

from fuzz import fuzz_frame_decoder


def main() -> None:
    args = _common.arguments(__doc__, corpus=True)
    rng = random.Random(0)
    files = _common.inputs("fuzz_frame_decoder", args.corpus)
    runs = divergences = streams = 0
    for data in files:
        flags = data[0] if data else 0
        count = data[1] % fuzz_frame_decoder.MAX_CHUNK_SIZES if len(data) > 1 else 0
        stream = data[2 + count :]
        if len(stream) > 4096:
            continue
        streams += 1
        strict = bool(flags & fuzz_frame_decoder.STRICT)
        limit = fuzz_frame_decoder.LIMITS[(flags >> 1) & 3]
        cuts: list[list[int]] = [[len(stream)], [1] * len(stream)]
        cuts += [[i, len(stream) - i] for i in range(len(stream) + 1)]
        for _ in range(100):
            sizes, left = [], len(stream)
            while left > 0:
                sizes.append(rng.randint(0, min(left, 64)))
                left -= sizes[-1]
            cuts.append(sizes)
        whole = None
        for sizes in cuts:
            chunks = []
            pos = 0
            for size in sizes:
                chunks.append(stream[pos : pos + size])
                pos += size
            for use_feed in (True, False):
                outcome = fuzz_frame_decoder._run(
                    iter(chunks), lambda _, f=use_feed: f, limit, strict, False, False
                )
                runs += 1
                if whole is None:
                    whole = outcome
                elif outcome != whole:
                    divergences += 1
    print(
        f"D3 split invariance: {streams} streams ({len(files)} corpus files), {runs:,} runs "
        "(whole, byte at a time, every 2-way split, 100 random chunkings; feed and "
        f"get_buffer), {divergences} divergences"
    )


if __name__ == "__main__":
    main()
