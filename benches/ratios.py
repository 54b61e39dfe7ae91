"""Same-run ratios of codec against the naive loops it replaces (``python -m codec bench``).

Usage::

    python benches/ratios.py [--quick] [--messages N]
    python -m codec bench [--quick] [--messages N]      # the same, from a checkout

Times framed encode (pb2 messages and structs), frame splitting and typed
decode of ``N`` (default 1000) ~35-byte ``peerbench.Sample`` records against
the naive ``SerializeToString`` + ``_VarintBytes`` and ``_DecodeVarint32`` +
slice loops, in this process, and prints the ratio table (``table.py``, the
one the pytest-benchmark suite prints too).

Strategy: each case is one job of ``jobs.py`` over the whole batch, checked
against its expected result before anything is timed; :func:`measure` times
every case with ``timeit`` (garbage collector off) in rounds, interleaved
round by round with its group's baseline, so a busy machine slows every row
of a round alike. Nothing but protobuf and codec is needed.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import timeit
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import _root  # noqa: F401  (the repository root on sys.path, for peerbench)
from jobs import (
    Corpus,
    codec_decode,
    codec_encode,
    codec_split,
    codec_split_copy,
    naive_decode,
    naive_encode,
    naive_split,
    parse_only,
    sample_corpus,
    serialize_only,
)
from table import Timing, describe_build, ratio_table

import codec
from peerbench import Sample

# The columns of the ratio table, after group and name.
COLUMNS = ("ns/msg", "x baseline", "(median)", "target")


@dataclass
class Case:
    """A timed call over a whole batch, compared with the baseline of its group."""

    group: str
    name: str
    run: Callable[[], object]
    expected: object = None  # what a call returns (of an encoder: what it holds); None: unchecked
    baseline: bool = False
    target: str = ""
    seconds: list[float] = field(default_factory=list)  # per call, one per round

    def is_right(self) -> bool:
        """Whether a call returns what is expected (true when nothing is)."""
        if self.expected is None:
            return True
        result = self.run()
        if isinstance(result, codec.FrameEncoder):
            with result.getbuffer() as pending:
                result = bytes(pending)
        return result == self.expected

    def timing(self, ops: int) -> Timing:
        """The best round and the median round, per op."""
        best, median = min(self.seconds), statistics.median(self.seconds)
        return Timing(
            self.group, self.name, best * 1e9 / ops, median * 1e9 / ops, self.baseline, self.target
        )


def bench_cases(corpus: Corpus) -> list[Case]:
    """The calls of ``python -m codec bench``: framed encode, frame split and typed decode."""
    messages, payloads, stream = corpus.messages, corpus.payloads, corpus.stream
    sample_struct = codec.struct(Sample)
    structs = [codec.from_pb2(message) for message in messages]
    encoder = codec.FrameEncoder()
    naive = "SerializeToString+_VarintBytes+bytearray loop"
    return [
        Case("encode", naive, partial(naive_encode, messages), stream, baseline=True),
        Case(
            "encode", "upb SerializeToString alone (no framing)", partial(serialize_only, messages)
        ),
        Case(
            "encode",
            "FrameEncoder.encode(pb2 message)",
            partial(codec_encode, encoder, messages),
            stream,
            target=">=2.5x",
        ),
        Case(
            "encode",
            "FrameEncoder.encode(struct)",
            partial(codec_encode, encoder, structs),
            stream,
            target=">=8x",
        ),
        Case(
            "split",
            "_DecodeVarint32+slice loop",
            partial(naive_split, stream),
            payloads,
            baseline=True,
        ),
        Case(
            "split",
            "FrameDecoder frames (memoryview)",
            partial(codec_split, stream),
            payloads,
        ),
        Case(
            "split",
            "FrameDecoder(copy=True) frames (bytes, as the baseline)",
            partial(codec_split_copy, stream),
            payloads,
            target=">=10x",
        ),
        Case(
            "decode",
            "naive split + ParseFromString",
            partial(naive_decode, stream),
            messages,
            baseline=True,
        ),
        Case(
            "decode",
            "upb ParseFromString alone (no framing)",
            partial(parse_only, payloads),
            messages,
        ),
        Case(
            "decode",
            "FrameDecoder(message_type=pb2)",
            partial(codec_decode, stream, Sample),
            messages,
        ),
        Case(
            "decode",
            "FrameDecoder(message_type=struct)",
            partial(codec_decode, stream, sample_struct),
            structs,
            target=">= parse alone",
        ),
    ]


def measure(cases: Sequence[Case], rounds: int, min_round: float) -> None:
    """Time every case ``rounds`` times, interleaved, each round at least ``min_round`` s."""
    loops = []
    for case in cases:  # warm up and calibrate
        timer = timeit.Timer(case.run)
        once = max(timer.timeit(1), timer.timeit(1), 1e-9)
        loops.append(max(1, math.ceil(min_round / once)))
    for _ in range(rounds):
        for case, number in zip(cases, loops, strict=True):
            case.seconds.append(timeit.Timer(case.run).timeit(number) / number)


def main(argv: Sequence[str] | None = None) -> int:
    """Check every case, time them, print the table; 1 if a case gives a wrong result."""
    parser = argparse.ArgumentParser(
        prog="benches/ratios.py", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument(
        "--quick", action="store_true", help="a short run (well under a second when compiled)"
    )
    parser.add_argument(
        "--messages", type=int, default=1000, metavar="N", help="records per batch (default: 1000)"
    )
    args = parser.parse_args(argv)
    if args.messages < 1:
        parser.error("--messages must be at least 1")
    rounds, min_round = (3, 0.002) if args.quick else (7, 0.05)
    corpus = sample_corpus(args.messages)
    ops = len(corpus.messages)
    size = sum(map(len, corpus.payloads)) / ops
    cases = bench_cases(corpus)
    wrong = [case.name for case in cases if not case.is_right()]
    if wrong:
        print(f"wrong output, nothing timed: {', '.join(wrong)}", file=sys.stderr)
        return 1
    print(
        f"codec bench: {ops} peerbench.Sample records (~{size:.0f} bytes each), "
        f"{rounds} rounds{' (--quick)' if args.quick else ''}, timeit (garbage collector off)"
    )
    print(describe_build())
    print(flush=True)
    measure(cases, rounds, min_round)
    for line in ratio_table([case.timing(ops) for case in cases], COLUMNS):
        print(line)
    print()
    print(
        "These are same-run ratios on this machine: every row was timed in this process, "
        "interleaved\nround by round with its group's baseline; 'x baseline' divides the "
        "baseline's best round by\nthe row's (median rounds in parentheses; when the two "
        "disagree, the machine was busy).\nAbsolute ns/msg describe this run only. "
        "docs/performance.md gives the targets, for the compiled build."
    )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
