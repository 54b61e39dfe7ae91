"""D4, line coverage: the share of the core modules' lines each fuzz target's corpora reach.

Usage: ``python fuzz/figures/line_coverage.py [--corpus DIR ...]`` (needs
coverage.py, in the test extras)

Each target's corpora (``fuzz/corpus/<target>`` and the ``--corpus``
directories meant for it) replayed through its ``check`` in the pure build,
one fresh process per target (``_coverage_replay.py``), under coverage.py:
the lines reached of the core modules a peer's bytes reach (``codec.aio`` and
the command line are not decoders), and apart from them of the profiler's
stream reader (``codec/profiler/packets.py``, ``receiver.py``,
``capture.py``, ``model.py``), which only its own target reaches. Blocks
under ``if cython.compiled:`` are C only and left out.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import _common

import codec

TARGETS = (
    "fuzz_varint",
    "fuzz_frame_decoder",
    "fuzz_wire_reader",
    "fuzz_struct_decode",
    "fuzz_differential",
    "fuzz_roundtrip",
    "fuzz_buffer_lifetime",
    "fuzz_profiler_stream",
)
CORE = ("_varint", "varint", "_buffer", "wire", "_struct", "schema", "framing", "errors")
PROFILER = ("profiler/packets", "profiler/receiver", "profiler/capture", "profiler/model")
C_ONLY = r"if cython\.compiled:"  # blocks the pure build never runs
REPLAY = Path(__file__).resolve().with_name("_coverage_replay.py")


def main() -> None:
    args = _common.arguments(__doc__, corpus=True)
    try:
        from coverage import Coverage
    except ImportError:
        print("D4 coverage: needs coverage.py (pip install coverage)")
        return
    package = Path(codec.__file__).resolve().parent
    env = dict(os.environ, CODEC_PURE_PYTHON="1")
    print(
        "D4 line coverage of the core modules, pure build, each target's corpora replayed "
        f"(C-only blocks left out): {', '.join(CORE)}"
    )
    print(
        f"    {'target':<22} {'inputs':>6} {'failed':>6} {'total':>6}  "
        + " ".join(CORE)
        + f"  {'profiler':>8}  "
        + " ".join(name.split("/")[1] for name in PROFILER)
    )
    with tempfile.TemporaryDirectory() as scratch:
        for target in TARGETS:
            files = _common.corpus_files(target, args.corpus)
            listing = Path(scratch) / f"{target}.txt"
            listing.write_text("".join(f"{path}\n" for path in files))
            data_file = Path(scratch) / f"{target}.coverage"
            include = f"{package}/*.py,{package}/profiler/*.py"
            command = [sys.executable, str(REPLAY), str(data_file), include, target, str(listing)]
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            report = Coverage(data_file=str(data_file), config_file=False)
            report.exclude(C_ONLY)
            report.load()
            totals = []
            shares = []
            for modules in (CORE, PROFILER):
                statements = executed = 0
                for module in modules:
                    _, lines, _, missing, _ = report.analysis2(str(package / f"{module}.py"))
                    statements += len(lines)
                    executed += len(lines) - len(missing)
                    shares.append(f"{100 * (len(lines) - len(missing)) / len(lines):.0f}%")
                totals.append(f"{100 * executed / statements:.1f}%")
            print(
                f"    {target:<22} {len(files):>6} {done.stdout.strip():>6} {totals[0]:>6}  "
                + " ".join(shares[: len(CORE)])
                + f"  {totals[1]:>8}  "
                + " ".join(shares[len(CORE) :])
            )


if __name__ == "__main__":
    main()
