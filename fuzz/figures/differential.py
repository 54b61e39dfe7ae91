"""D9, agreement with upb: ``fuzz_differential.verdict`` over its corpora and mutations.

Usage: ``python fuzz/figures/differential.py [--inputs N] [--corpus DIR ...]``

The differential corpora (``fuzz/corpus/fuzz_differential`` and the
``--corpus`` directories meant for it), N mutations of their valid encodings
(``--inputs``, default 20,000: bit flips, byte changes, inserted bytes,
deletions, truncations; seeded) and N/4 random inputs, each judged by
``fuzz/fuzz_differential.py``'s ``verdict``: same accept/reject, same content
where both accept, the documented divergences by kind, and any unexplained
difference (a new finding, printed).
"""

from __future__ import annotations

import random
import time
from collections import Counter

import _common
from google.protobuf.internal import api_implementation

from fuzz import fuzz_differential


def mutate(rng: random.Random, data: bytes) -> bytes:
    """One to three random edits of ``data``."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(5)
        if op == 0 and buf:
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        elif op == 1 and buf:
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif op == 2:
            at = rng.randint(0, len(buf))
            buf[at:at] = rng.choice([b"\x00", b"\x80", b"\xff", b"\x0b", b"\x0c", b"\x0a\x00"])
        elif op == 3 and buf:
            at = rng.randrange(len(buf))
            del buf[at : at + rng.randint(1, 4)]
        else:
            del buf[rng.randint(0, len(buf)) :]
    return bytes(buf)


def main() -> None:
    args = _common.arguments(__doc__, corpus=True, inputs=20_000)
    inputs = args.inputs
    rng = random.Random(1)
    corpus = _common.inputs("fuzz_differential", args.corpus)
    valid = [d for d in corpus if d and d[0] < 128]
    sample = corpus + [
        bytes([rng.randrange(256)]) + mutate(rng, rng.choice(valid)[1:]) for _ in range(inputs)
    ]
    sample += [
        bytes([rng.randrange(256)]) + rng.randbytes(rng.randint(0, 48)) for _ in range(inputs // 4)
    ]
    verdicts: Counter[str] = Counter()
    findings = []
    start = time.perf_counter()
    for data in sample:
        try:
            verdicts[fuzz_differential.verdict(data)] += 1
        except Exception as exc:  # an unexplained difference: a new finding
            verdicts["DISAGREE"] += 1
            findings.append((data.hex(), f"{type(exc).__name__}: {str(exc)[:200]}"))
    elapsed = time.perf_counter() - start
    total = sum(verdicts.values())
    same = verdicts["both accept, same content"]
    both_accept = same + verdicts["divergence 4: a map entry kept as unknown, with a map inside"]
    decided_alike = both_accept + verdicts["both reject"]
    documented = sum(n for k, n in verdicts.items() if k.startswith("divergence"))
    known = sum(n for k, n in verdicts.items() if k.startswith("known finding"))
    backend = f"google.protobuf ({api_implementation.Type()} backend)"
    print(
        f"D9 differential vs {backend}: {total:,} inputs ({len(corpus)} corpus, "
        f"{inputs:,} mutations of valid encodings, {inputs // 4:,} random) in {elapsed:.1f} s"
    )
    print(
        f"    same accept/reject: {decided_alike:,}/{total:,} "
        f"({100 * decided_alike / total:.3f} %); same content where both accept: "
        f"{same:,}/{both_accept:,}; documented divergences: {documented:,}; known findings: "
        f"{known:,}; unexplained: {verdicts['DISAGREE']:,}"
    )
    for verdict, count in sorted(verdicts.items()):
        print(f"    {verdict}: {count:,}")
    for data, message in findings[:5]:
        print(f"    finding: {data[:120]} {message}")


if __name__ == "__main__":
    main()
