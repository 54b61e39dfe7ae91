"""Benchmark collection and the end-of-run ratio table.

Run from the repository root::

    pytest benches/ --benchmark-only

A plain ``pytest`` never collects this directory (pyproject's ``testpaths`` is
``["tests"]``). Benchmark files are named ``bench_*.py``: pytest's default
``python_files`` would skip them, so :func:`pytest_collect_file` below collects
them as test modules (only when pytest walks ``benches/``; a file named on the
command line is collected by pytest itself). Benchmark functions are still
named ``test_*`` and use pytest-benchmark's ``benchmark`` fixture.

Conventions for benchmark functions (read by the ratio table):

* group: ``@pytest.mark.benchmark(group="...")``; a group compares ways of
  doing one job, so ratios within it are meaningful;
* baseline: exactly one benchmark per group sets
  ``benchmark.extra_info["baseline"] = True`` (the peer the targets are
  stated against, e.g. protobuf's own helper or the naive loop);
* ops: a benchmark that handles a batch per call sets
  ``benchmark.extra_info["ops"] = len(batch)``; times and ratios are per op
  (default 1), so a group may mix batch and single-item calls.

At the end of the session the table prints, for each group, each benchmark's
mean ns per op and how many times faster it is than the group's baseline
(``baseline mean / mean``, > 1 is faster). Every figure comes from this run's
measurements (``benchmark.stats.stats.mean``); nothing is read from saved runs.
It also prints whether the compiled build of codec is loaded (``codec.COMPILED``).
"""

from __future__ import annotations

import fnmatch
import platform
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.internal import api_implementation

import codec


@dataclass(frozen=True)
class _Result:
    group: str
    name: str
    ns_per_op: float
    baseline: bool


_RESULTS = pytest.StashKey[list[_Result]]()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """Collect ``bench_*.py`` files that pytest's own ``python_files`` patterns would skip."""
    if file_path.suffix != ".py" or not file_path.name.startswith("bench_"):
        return None
    if parent.session.isinitpath(file_path):
        return None  # named on the command line: pytest's python plugin collects it
    patterns = parent.config.getini("python_files")
    if any(fnmatch.fnmatch(file_path.name, pattern) for pattern in patterns):
        return None  # also matches python_files: already collected
    return pytest.Module.from_parent(parent, path=file_path)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """Record the stats of a passed test that used the ``benchmark`` fixture."""
    result = yield  # raises if the test failed: failed benchmarks are not tabled
    funcargs = getattr(item, "funcargs", {})
    fixture = funcargs.get("benchmark")
    stats = getattr(fixture, "stats", None)  # None when disabled or skipped
    if stats is not None and stats.stats.rounds:
        ops = stats.extra_info.get("ops", 1)
        item.config.stash.setdefault(_RESULTS, []).append(
            _Result(
                group=stats.group or "(no group)",
                name=stats.name,
                ns_per_op=stats.stats.mean * 1e9 / ops,
                baseline=bool(stats.extra_info.get("baseline", False)),
            )
        )
    return result


def _table(results: list[_Result]) -> list[str]:
    groups: dict[str, list[_Result]] = {}
    for result in results:
        groups.setdefault(result.group, []).append(result)
    rows = [("group", "name", "mean ns/op", "x faster than baseline")]
    for group in sorted(groups):
        members = sorted(groups[group], key=lambda r: r.ns_per_op)
        baselines = [r for r in members if r.baseline]
        base = baselines[0].ns_per_op if len(baselines) == 1 else None
        for r in members:
            if base is None:
                ratio = "no baseline" if not baselines else "several baselines"
            else:
                ratio = f"{base / r.ns_per_op:.2f}x" + ("  (baseline)" if r.baseline else "")
            rows.append((group, r.name, f"{r.ns_per_op:,.1f}", ratio))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for index, row in enumerate(rows):
        cells = [
            row[0].ljust(widths[0]),
            row[1].ljust(widths[1]),
            row[2].rjust(widths[2]),
            row[3].ljust(widths[3]),
        ]
        lines.append(" | ".join(cells).rstrip())
        if index == 0:
            lines.append("-+-".join("-" * w for w in widths))
    return lines


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print the ratio table after pytest-benchmark's own tables."""
    if config.option.collectonly:
        return
    results = config.stash.get(_RESULTS, [])
    build = "compiled" if codec.COMPILED else "pure Python (NOT the build the targets refer to)"
    terminalreporter.write_sep("=", "codec ratio table (same run)")
    terminalreporter.write_line(
        f"codec.COMPILED = {codec.COMPILED} ({build}); protobuf backend: "
        f"{api_implementation.Type()}; Python {platform.python_version()}"
    )
    if not results:
        terminalreporter.write_line("no benchmark results (run with --benchmark-only)")
        return
    for line in _table(results):
        terminalreporter.write_line(line)
