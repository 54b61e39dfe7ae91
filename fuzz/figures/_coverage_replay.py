"""The child process of ``line_coverage.py``: one fuzz target's corpus replayed under coverage.py.

Usage: ``python fuzz/figures/_coverage_replay.py DATA_FILE INCLUDE TARGET LISTING``

Starts coverage (data saved to ``DATA_FILE``, measuring the files matching
the comma-separated patterns of ``INCLUDE``) before codec is imported, so
that only the target's own imports count; then imports ``fuzz.<TARGET>`` and
runs its ``check`` on each file named in ``LISTING`` (one path a line).
Prints how many inputs raised. Run by ``line_coverage.py`` in a fresh
interpreter with ``CODEC_PURE_PYTHON=1``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import coverage


def main(data_file: str, include: str, target: str, listing: str) -> None:
    cov = coverage.Coverage(data_file=data_file, include=include.split(","), config_file=False)
    cov.start()
    import _common  # noqa: F401  (the repository root on sys.path; imports codec, measured)

    import codec

    assert not codec.COMPILED, "the pure build was not loaded"
    check = importlib.import_module("fuzz." + target).check
    failures = 0
    for name in Path(listing).read_text().splitlines():
        try:
            check(Path(name).read_bytes())
        except Exception:
            failures += 1
    cov.stop()
    cov.save()
    print(failures)


if __name__ == "__main__":
    main(*sys.argv[1:])
