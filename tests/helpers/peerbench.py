"""The benchmark records (``Sample``, ``Blob``, ``Trace``, ...) for the test modules.

They are defined once, in ``peerbench.py`` at the repository root, which the
benchmarks and the fuzz targets import too; this module makes them reachable
from a test module (``from helpers.peerbench import Sample``). pytest puts
``tests/`` on ``sys.path``, not the repository root (plain ``pytest``, and
``fuzz/sanitizers.sh test``, which runs from its build directory), so the root
is appended here: appended, so that the codec under test is still the one found
first.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from peerbench import (  # noqa: E402
    Blob,
    Event,
    Frame,
    Interval,
    Record,
    Sample,
    Span,
    Trace,
    file_descriptor,
    records,
    sample,
    samples,
    trace,
)

__all__ = [
    "ROOT",
    "Blob",
    "Event",
    "Frame",
    "Interval",
    "Record",
    "Sample",
    "Span",
    "Trace",
    "file_descriptor",
    "records",
    "sample",
    "samples",
    "trace",
]
