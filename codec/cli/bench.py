"""``bench``: same-run ratios of the library against the naive loops it replaces.

Strategy: nothing but the package is needed. The cases, their checks, the
``timeit`` rounds and the ratio table are :mod:`codec._peerbench`'s, which
``benches/`` uses too; this command picks the corpus size and the number of
rounds and prints the report. Every case's output is checked before any is
timed. ``--suite`` runs the pytest-benchmark suite of a checkout instead.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import codec
from codec.cli import CliError

# The columns of the ratio table, after group and name.
_BENCH_COLUMNS = ("ns/msg", "x baseline", "(median)", "target")


def bench(args: argparse.Namespace) -> int:
    """Print same-run ratios of codec against the naive loops, or run benches/."""
    if args.suite:
        return _run_suite()
    from codec import _peerbench

    rounds, min_round = (3, 0.002) if args.quick else (7, 0.05)
    corpus = _peerbench.sample_corpus(args.messages)
    ops = len(corpus.messages)
    size = sum(map(len, corpus.payloads)) / ops
    cases = _peerbench.bench_cases(corpus)
    wrong = [case.name for case in cases if not case.is_right()]
    if wrong:
        raise CliError(f"wrong output, nothing timed: {', '.join(wrong)}")
    print(
        f"codec bench: {ops} codec._peerbench.Sample records (~{size:.0f} bytes each), "
        f"{rounds} rounds{' (--quick)' if args.quick else ''}, timeit (garbage collector off)"
    )
    print(_peerbench.describe_build())
    print(flush=True)
    _peerbench.measure(cases, rounds, min_round)
    for line in _peerbench.ratio_table([case.timing(ops) for case in cases], _BENCH_COLUMNS):
        print(line)
    print()
    print(
        "These are same-run ratios on this machine: every row was timed in this process, "
        "interleaved\nround by round with its group's baseline; 'x baseline' divides the "
        "baseline's best round by\nthe row's (median rounds in parentheses; when the two "
        "disagree, the machine was busy).\nAbsolute ns/msg describe this run only. The "
        "README's Performance section gives the targets, for the compiled build."
    )
    return 0


def _run_suite() -> int:
    root = Path(codec.__file__).resolve().parent.parent
    if not (root / "benches" / "conftest.py").is_file():
        raise CliError(
            f"no benches/ in {root}: the pytest-benchmark suite runs from a source checkout"
        )
    command = [sys.executable, "-m", "pytest", "benches/", "--benchmark-only", "-q"]
    print(f"running {' '.join(command[1:])} in {root}", flush=True)
    return subprocess.call(command, cwd=root)


# --- the parser ----------------------------------------------------------------


def add_commands(commands: Any) -> None:
    """Add ``bench`` to the subcommands of the parser."""
    bench_parser = commands.add_parser(
        "bench",
        help="print same-run ratios against the naive loops",
        description=(
            "Time framed encode (pb2 messages and structs), frame splitting and typed decode of "
            "1000 ~35-byte Sample records against the naive SerializeToString + _VarintBytes "
            "and _DecodeVarint32 + slice loops, in this process, and print the ratios."
        ),
    )
    bench_parser.add_argument(
        "--quick", action="store_true", help="a short run (well under a second when compiled)"
    )
    bench_parser.add_argument(
        "--messages", type=int, default=1000, metavar="N", help="records per batch (default: 1000)"
    )
    bench_parser.add_argument(
        "--suite",
        action="store_true",
        help="run the pytest-benchmark suite of a checkout (benches/) instead",
    )
    bench_parser.set_defaults(handler=bench)
