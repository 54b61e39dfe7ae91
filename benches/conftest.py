"""Benchmark collection, harness defaults and the end-of-run ratio table.

Run from the repository root::

    pytest benches/ --benchmark-only            # or: python -m pytest benches/ --benchmark-only

(``python -m`` puts the repo root on ``sys.path``; plain ``pytest`` needs codec
installed, e.g. ``pip install -e .``; ``peerbench``, the records at the
repository root, is found through ``_root.py``.) A plain ``pytest`` never
collects this directory: pyproject's ``testpaths`` is ``["tests"]``. Benchmark files are
named ``bench_*.py``, which pytest's default ``python_files`` would skip, so
:func:`pytest_collect_file` below collects them as test modules whenever
pytest walks ``benches/`` (a file named on the command line is collected by
pytest itself). Benchmark functions are named ``test_*`` and use
pytest-benchmark's ``benchmark`` fixture. ``benches/`` has no ``__init__.py``,
so pytest's default import mode puts it on ``sys.path`` and bench files
``import peers`` (the shared baselines) and ``jobs`` (the jobs they time).

Conventions for benchmark functions (read by the ratio table):

* group: ``@pytest.mark.benchmark(group="...")`` or ``benchmark.group = ...``
  before calling ``benchmark``; a group compares ways of doing one job;
* baseline: exactly one benchmark per group sets
  ``benchmark.extra_info["baseline"] = True`` (the peer the targets are
  stated against: protobuf's own helper, the naive loop, ...);
* ops: a benchmark that handles a batch per call sets
  ``benchmark.extra_info["ops"] = len(batch)``; times and ratios are per op
  (default 1), so a group may mix batch and single-item calls.

At the end of the session the table (``table.ratio_table``, the one
``ratios.py`` and ``python -m codec bench`` print) shows, for each group, each
benchmark's mean ns per op and how many times faster it is than the group's baseline
(``baseline mean / mean``, > 1 is faster), plus in parentheses the same ratio
by minimum times, which a busy machine disturbs less (when the two disagree,
the run was noisy). Every figure comes from this run's measurements
(``benchmark.stats.stats``); nothing is read from saved runs. The header tells
whether the compiled build of codec is loaded (``codec.COMPILED``).

Harness default: rounds of at least 100 us (``--benchmark-min-time``, see
``_MIN_TIME``) unless the command line sets it.
"""

from __future__ import annotations

import fnmatch
import os
import shlex
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from table import Timing, describe_build, ratio_table

_RESULTS = pytest.StashKey[list[Timing]]()
# The columns of the ratio table, after group and name.
_COLUMNS = ("mean ns/op", "x faster than baseline", "(by min)", "note")

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
            Timing(
                group=stats.group or "(no group)",
                name=stats.name,
                ns=stats.stats.mean * 1e9 / ops,
                other_ns=stats.stats.min * 1e9 / ops,
                baseline=bool(stats.extra_info.get("baseline", False)),
            )
        )
    return result


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print the ratio table after pytest-benchmark's own tables."""
    if config.option.collectonly:
        return
    results = config.stash.get(_RESULTS, [])
    terminalreporter.write_sep("=", "codec ratio table (same run)")
    terminalreporter.write_line(
        f"{describe_build()}; min round {config.getoption('benchmark_min_time', '?')} s"
    )
    if not results:
        terminalreporter.write_line("no benchmark results (disabled, skipped or none selected)")
        return
    by_group_fastest_first = sorted(results, key=lambda timing: (timing.group, timing.ns))
    for line in ratio_table(by_group_fastest_first, _COLUMNS):
        terminalreporter.write_line(line)
