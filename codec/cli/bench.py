"""``bench``: same-run ratios of the library against the naive loops it replaces.

Strategy: the benchmarks are the checkout's, not the package's. The package
ships no workloads, peers or timing code; this command runs a source
checkout's ``benches/`` with this interpreter (so with the build this
command loaded, and ``CODEC_PURE_PYTHON`` as set): ``benches/ratios.py``,
which checks every case, times them with ``timeit`` and prints the ratio
table, or with ``--suite`` the pytest-benchmark suite. The checkout is the
directory holding the imported ``codec`` package; an installed copy has none,
and says so.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import codec
from codec.cli import CliError


def bench(args: argparse.Namespace) -> int:
    """Run the checkout's ``benches/ratios.py`` (or its pytest-benchmark suite)."""
    root = _checkout()
    if args.suite:
        command = [sys.executable, "-m", "pytest", "benches/", "--benchmark-only", "-q"]
        print(f"running {' '.join(command[1:])} in {root}", flush=True)
    else:
        command = [sys.executable, str(root / "benches" / "ratios.py")]
        command += ["--messages", str(args.messages)] + (["--quick"] if args.quick else [])
    return subprocess.call(command, cwd=root)


def _checkout() -> Path:
    """The source checkout the imported package belongs to, with its ``benches/``."""
    root = Path(codec.__file__).resolve().parent.parent
    if not (root / "benches" / "ratios.py").is_file():
        raise CliError(f"no benches/ in {root}: the benchmarks run from a source checkout of codec")
    return root


# --- the parser ----------------------------------------------------------------


def add_commands(commands: Any) -> None:
    """Add ``bench`` to the subcommands of the parser."""
    bench_parser = commands.add_parser(
        "bench",
        help="print same-run ratios against the naive loops (from a source checkout)",
        description=(
            "Run benches/ratios.py of the source checkout this package was imported from: "
            "time framed encode (pb2 messages and structs), frame splitting and typed decode of "
            "1000 ~35-byte peerbench.Sample records against the naive SerializeToString + "
            "_VarintBytes and _DecodeVarint32 + slice loops, in one process, and print the "
            "ratios."
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
