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

And what the measurements run, shared with the figure scripts
``fuzz/figures/heap.py`` and ``stale.py``: the 10,000 ``Sample`` structs and
the loops that encode them (or only walk them), and freed memory left holding
a marker byte.
"""

from __future__ import annotations

import gc
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codec import FrameEncoder, struct

from .peerbench import Sample


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


# --- workloads ------------------------------------------------------------------------


def sample_structs() -> list[Any]:
    """10,000 ``Sample`` structs of four names (one of them not ASCII)."""
    sample_struct = struct(Sample)
    names = ["render", "physics.step", "audio.mix", "naïve-ütf8"] * 2500
    return [
        sample_struct(ts_ns=1_700_000_000_000_000_000 + i, scope_id=i % 300, value=-i, name=name)
        for i, name in enumerate(names)
    ]


def encode_all(encoder: FrameEncoder, messages: list[Any]) -> Callable[[], None]:
    """Clear the encoder, then encode every message into it."""

    def run() -> None:
        encoder.clear()
        for message in messages:
            encoder.encode(message)

    return run


def loop_only(encoder: FrameEncoder, messages: list[Any]) -> Callable[[], None]:
    """The same loop with a C builtin that allocates nothing (its result is a bool)."""

    def run() -> None:
        encoder.clear()
        for message in messages:
            callable(message)

    return run


def fill_freed_memory(marker: int) -> None:
    """Leave freed heap blocks of many sizes holding ``marker`` bytes."""
    blocks = [bytearray([marker]) * (size * 1024) for size in (4, 8, 12, 16, 32, 64, 128, 1024)]
    blocks *= 4
    del blocks
