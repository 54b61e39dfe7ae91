"""The same-run ratio table, and the build it describes.

One table for the pytest-benchmark suite (``conftest.py``, at the end of a
session) and for ``ratios.py`` (``python -m codec bench``): each group of
timings is a job done several ways, one of them the group's baseline, and
each row shows how many times faster than the baseline it is, by two
statistics of the same run.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf import __version__ as protobuf_version
from google.protobuf.internal import api_implementation

import codec


@dataclass(frozen=True)
class Timing:
    """One row of a ratio table: a way of doing its group's job, timed by two statistics."""

    group: str
    name: str
    ns: float  # per op: shown, and divided into the baseline's
    other_ns: float  # per op, by the second statistic: the ratio in parentheses
    baseline: bool = False
    note: str = ""  # the target, say


def ratio_table(timings: Sequence[Timing], columns: Sequence[str]) -> list[str]:
    """The rows of a ratio table: one block per group, in the order the timings come.

    ``columns`` names the time, the ratio, the second ratio and the note. A
    ratio is the baseline's time over the row's (> 1: faster than the
    baseline); a group without exactly one baseline shows none.
    """
    header = ("group", "name", *columns)
    rows = [header]
    groups: dict[str, list[Timing]] = {}
    for timing in timings:
        groups.setdefault(timing.group, []).append(timing)
    for group, members in groups.items():
        baselines = [timing for timing in members if timing.baseline]
        base = baselines[0] if len(baselines) == 1 else None
        missing = ""
        if base is None:
            missing = "several baselines in group" if baselines else "no baseline in group"
        for timing in members:
            if base is None:
                ratios = ("-", "")
            elif timing is base:
                ratios = ("baseline", "")
            else:
                ratios = (
                    f"{base.ns / timing.ns:.2f}x",
                    f"({base.other_ns / timing.other_ns:.2f}x)",
                )
            rows.append((group, timing.name, f"{timing.ns:,.1f}", *ratios, timing.note or missing))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for index, row in enumerate(rows):
        cells = [
            cell.rjust(width) if column in (2, 3, 4) else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append(" | ".join(cells).rstrip())
        if index == 0:
            lines.append("-+-".join("-" * width for width in widths))
    return lines


def describe_build() -> str:
    """The build of codec, protobuf's version and backend, Python's, and the machine."""
    build = "compiled build" if codec.COMPILED else "pure-Python build; targets are for compiled"
    return (
        f"codec.COMPILED = {codec.COMPILED} ({build}); protobuf {protobuf_version} "
        f"({api_implementation.Type()} backend); Python {platform.python_version()} "
        f"on {platform.machine() or 'unknown machine'}"
    )
