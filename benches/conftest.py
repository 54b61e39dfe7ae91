"""Benchmark collection, harness defaults and the end-of-run ratio table.

Run from the repository root::

    pytest benches/ --benchmark-only            # or: python -m pytest benches/ --benchmark-only

(``python -m`` puts the repo root on ``sys.path``; plain ``pytest`` needs codec
installed, e.g. ``pip install -e .``.) A plain ``pytest`` never collects this
directory: pyproject's ``testpaths`` is ``["tests"]``. Benchmark files are
named ``bench_*.py``, which pytest's default ``python_files`` would skip, so
:func:`pytest_collect_file` below collects them as test modules whenever
pytest walks ``benches/`` (a file named on the command line is collected by
pytest itself). Benchmark functions are named ``test_*`` and use
pytest-benchmark's ``benchmark`` fixture. ``benches/`` has no ``__init__.py``,
so pytest's default import mode puts it on ``sys.path`` and bench files
``import peers`` (the shared baselines).

Conventions for benchmark functions (read by the ratio table):

* group: ``@pytest.mark.benchmark(group="...")`` or ``benchmark.group = ...``
  before calling ``benchmark``; a group compares ways of doing one job;
* baseline: exactly one benchmark per group sets
  ``benchmark.extra_info["baseline"] = True`` (the peer the targets are
  stated against: protobuf's own helper, the naive loop, ...);
* ops: a benchmark that handles a batch per call sets
  ``benchmark.extra_info["ops"] = len(batch)``; times and ratios are per op
  (default 1), so a group may mix batch and single-item calls.

At the end of the session the table prints, for each group, each benchmark's
mean ns per op and how many times faster it is than the group's baseline
(``baseline mean / mean``, > 1 is faster), plus the same ratio by minimum
times, which a busy machine disturbs less (when the two disagree, the run was
noisy). Every figure comes from this run's measurements
(``benchmark.stats.stats``); nothing is read from saved runs. The header tells
whether the compiled build of codec is loaded (``codec.COMPILED``).

Harness default: rounds of at least 100 us (``--benchmark-min-time``, see
``_MIN_TIME``) unless the command line sets it.
"""

from __future__ import annotations

import fnmatch
import os
import platform
import shlex
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
    mean_ns: float  # per op
    min_ns: float  # per op
    baseline: bool


_RESULTS = pytest.StashKey[list[_Result]]()

# pytest-benchmark's default round of 5 us lets calibration settle on one call
# per round when the first (cold) call is slow; each round of a ~100 ns call
# then also times the timer and the loop around it, which flattens ratios.
# Rounds of at least 100 us amortise that. --benchmark-min-time overrides it.
_MIN_TIME_FLAG = "--benchmark-min-time"
_MIN_TIME = "0.0001"


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


def _flag_given(config: pytest.Config, flag: str) -> bool:
    args = [
        *config.invocation_params.args,
        *config.getini("addopts"),
        *shlex.split(os.environ.get("PYTEST_ADDOPTS", "")),
    ]
    return any(arg == flag or arg.startswith(flag + "=") for arg in args)


def pytest_configure(config: pytest.Config) -> None:
    """Raise pytest-benchmark's default round time (runs before its trylast configure)."""
    if hasattr(config.option, "benchmark_min_time") and not _flag_given(config, _MIN_TIME_FLAG):
        config.option.benchmark_min_time = _MIN_TIME  # parse_seconds keeps a string


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
                mean_ns=stats.stats.mean * 1e9 / ops,
                min_ns=stats.stats.min * 1e9 / ops,
                baseline=bool(stats.extra_info.get("baseline", False)),
            )
        )
    return result


def _ratio(base: float | None, value: float) -> str:
    return "-" if base is None else f"{base / value:.2f}x"


def _table(results: list[_Result]) -> list[str]:
    """The ratio table, one block of rows per group, fastest first."""
    groups: dict[str, list[_Result]] = {}
    for result in results:
        groups.setdefault(result.group, []).append(result)
    header = ("group", "name", "mean ns/op", "x faster than baseline", "(by min)", "")
    rows = [header]
    for group in sorted(groups):
        members = sorted(groups[group], key=lambda r: r.mean_ns)
        baselines = [r for r in members if r.baseline]
        base_mean: float | None = None
        base_min: float | None = None
        if len(baselines) == 1:
            base_mean, base_min, note = baselines[0].mean_ns, baselines[0].min_ns, ""
        else:
            note = "no baseline in group" if not baselines else "several baselines in group"
        for r in members:
            rows.append(
                (
                    group,
                    r.name,
                    f"{r.mean_ns:,.1f}",
                    _ratio(base_mean, r.mean_ns),
                    _ratio(base_min, r.min_ns),
                    "baseline" if r.baseline else note,
                )
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    right = {2, 3, 4}  # numbers
    lines = []
    for index, row in enumerate(rows):
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
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
    build = "compiled build" if codec.COMPILED else "pure-Python build: not what targets mean"
    terminalreporter.write_sep("=", "codec ratio table (same run)")
    terminalreporter.write_line(
        f"codec.COMPILED = {codec.COMPILED} ({build}); protobuf backend: "
        f"{api_implementation.Type()}; Python {platform.python_version()}; "
        f"min round {config.getoption('benchmark_min_time', '?')} s"
    )
    if not results:
        terminalreporter.write_line("no benchmark results (disabled, skipped or none selected)")
        return
    for line in _table(results):
        terminalreporter.write_line(line)
