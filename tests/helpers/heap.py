"""Heap measurement of one run of a code path: ``(net, peak)`` after warm-up.

Each measurement warms the code path up first (so growth to a steady
capacity and one-time caches are not counted), collects garbage, then traces
one run and reports ``(net, peak)``: bytes still allocated at the end and the
highest point reached, both relative to the start of the trace.

Two tracers:

* ``tracemalloc`` sees every allocation made through Python's allocators,
  which is where the codec's buffers, ``bytes`` and ``memoryview`` objects live;
* ``memray`` (when importable; otherwise the test is skipped) also sees native
  ``malloc`` calls, such as upb's serialization arena.
"""

from __future__ import annotations

import gc
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest


def trace_tracemalloc(action: Callable[[], object]) -> tuple[int, int]:
    """``(net, peak)`` of one run of ``action`` under tracemalloc, without warm-up."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        action()
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return after - before, peak - before


def trace_memray(action: Callable[[], object]) -> tuple[int, int]:
    """``(net, peak)`` of one run of ``action`` under memray, without warm-up (skips without it)."""
    memray = pytest.importorskip("memray")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "trace.bin"
        with memray.Tracker(path, trace_python_allocators=True):
            action()
        reader = memray.FileReader(path)
        try:
            peak = reader.metadata.peak_memory
            net = sum(r.size for r in reader.get_leaked_allocation_records(merge_threads=True))
        finally:
            reader.close()
    return net, peak


def measure(
    action: Callable[[], object],
    *,
    warmup: Callable[[], object] | None = None,
    backend: str = "tracemalloc",
) -> tuple[int, int]:
    """Warm up, collect, trace one run of ``action``; return ``(net, peak)``.

    The warm-up (by default ``action`` itself) runs twice: in the uncompiled
    build the first run after a buffer grew still reallocates it once, when
    ``is_exported`` probes it with ``append``/``pop``.
    """
    for _ in range(2):
        (warmup or action)()
    gc.collect()
    if backend == "memray":
        return trace_memray(action)
    return trace_tracemalloc(action)


def peak_after_warm_up(action: Callable[[], object]) -> int:
    """The tracemalloc peak of one run of ``action``, after ``measure``'s warm-up, in bytes."""
    return measure(action)[1]
