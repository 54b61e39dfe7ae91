"""The profiler's exports: bytes per scope, export time per scope, peak memory of a long export.

Run from the repository root with ``python benches/profiler_exports.py``
(``--quick`` for fewer rounds and a 100,000-scope memory run).

* **Bytes per scope** on the workloads of ``bench_profiler.py`` (puffin_http's
  example frame, a game loop on 2 and on 8 threads, a frame recorded by
  ``Profiler``): codec's own stream (frame packets, varint columns), the
  native Perfetto trace of :func:`~codec.profiler.write_perfetto_trace`
  (the whole file: track descriptors, interned names and locations, the
  ``frames`` track, two packets per scope) and Chrome Trace Event JSON
  (``chrome_json_size``: the ``"X"`` events, compact).
* **Export time per scope**, best of several rounds, on the 8-thread game
  loop: the Perfetto trace into a ``BytesIO``, the Chrome trace
  (``write_chrome_trace``) into a ``StringIO``, and the SVG flame graph.
* **Peak memory** (``tracemalloc``) while 10^6 scopes (1,004 frames of 996
  scopes, each made just before it is exported) are exported to
  ``os.devnull`` as a Perfetto trace; the Chrome export, which builds its
  whole event list first, is measured on 10^5 scopes for comparison.
"""

from __future__ import annotations

import gc
import io
import os
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import bench_profiler as bp
import numpy as np

import codec
from codec import FrameEncoder
from codec.profiler import Frame, Registry, TrackScopes, flame_graph_svg, write_perfetto_trace
from codec.profiler.analysis import chrome_json_size, write_chrome_trace


def workloads() -> dict[str, bp.Workload]:
    return {
        "puffin_http's example frame": bp.puffin_example(),
        "game loop, 2 threads": bp.game_loop(2),
        "game loop, 8 threads": bp.game_loop(8),
        "recorded by Profiler": bp.record_game_frame(bp.TICKS["1k"]).workload,
    }


def perfetto_bytes(workload: bp.Workload) -> int:
    return write_perfetto_trace(workload.frames, workload.registry, io.BytesIO()).bytes_written


def codec_bytes(workload: bp.Workload) -> int:
    return len(bp.encode_frames(bp.WRITERS["varint"], workload.frames, FrameEncoder()))


def size_table(loads: dict[str, bp.Workload]) -> list[str]:
    lines = [
        "| workload | scopes | codec stream | Perfetto native | Chrome JSON |",
        "|---|---|---|---|---|",
    ]
    for name, workload in loads.items():
        scopes = workload.scopes
        mine = codec_bytes(workload) / scopes
        perfetto = perfetto_bytes(workload) / scopes
        chrome = chrome_json_size(workload.frames, workload.registry) / scopes
        lines.append(
            f"| {name} | {scopes:,} | {mine:.1f} | {perfetto:.1f} ({perfetto / mine:.1f}x) "
            f"| {chrome:.1f} ({chrome / mine:.1f}x) |"
        )
    return lines


def best_ns_per_scope(action: Callable[[], object], scopes: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter_ns()
        action()
        best = min(best, time.perf_counter_ns() - start)
    return best / scopes


def time_table(workload: bp.Workload, rounds: int) -> list[str]:
    frames, registry = workload.frames, workload.registry
    cases = {
        "Perfetto trace (`write_perfetto_trace`)": lambda: write_perfetto_trace(
            frames, registry, io.BytesIO()
        ),
        "Chrome JSON (`write_chrome_trace`)": lambda: write_chrome_trace(
            frames, registry, io.StringIO()
        ),
        "SVG flame graph (`flame_graph_svg`)": lambda: flame_graph_svg(frames, registry),
    }
    lines = ["| export | ns per scope |", "|---|---|"]
    for name, action in cases.items():
        lines.append(f"| {name} | {best_ns_per_scope(action, workload.scopes, rounds):,.0f} |")
    return lines


def repeated(frame: Frame, count: int) -> Iterator[Frame]:
    """``count`` copies of ``frame``, one after another in time, each made when asked for."""
    period = frame.duration_ns + 1000
    for index in range(count):
        shift = index * period
        yield Frame(
            index + 1,
            frame.start_ns + shift,
            frame.duration_ns,
            tuple(
                TrackScopes(
                    track.track_ref,
                    track.scope_id,
                    np.asarray(track.start_ns) + shift,
                    track.duration_ns,
                    track.depth,
                )
                for track in frame.tracks
            ),
        )


def traced_peak(action: Callable[[], object]) -> tuple[int, float]:
    """Peak bytes ``tracemalloc`` saw during ``action``, and its seconds (slowed by tracing)."""
    gc.collect()
    tracemalloc.start()
    try:
        start = time.perf_counter()
        action()
        seconds = time.perf_counter() - start
        return tracemalloc.get_traced_memory()[1], seconds
    finally:
        tracemalloc.stop()


def memory_lines(frame: Frame, registry: Registry, perfetto_frames: int) -> list[str]:
    scopes = frame.num_scopes
    with open(os.devnull, "wb") as sink:
        write_perfetto_trace([frame], registry, sink)  # warm-up: imports and caches
        peak, seconds = traced_peak(
            lambda: write_perfetto_trace(repeated(frame, perfetto_frames), registry, sink)
        )
    chrome_frames = 100
    chrome_peak, _ = traced_peak(
        lambda: write_chrome_trace(list(repeated(frame, chrome_frames)), registry, io.StringIO())
    )
    return [
        f"Perfetto export of {perfetto_frames * scopes:,} scopes ({perfetto_frames:,} frames) "
        f"to os.devnull: peak {peak / 2**20:.2f} MiB traced ({seconds:.1f} s under tracemalloc)",
        f"Chrome JSON export of {chrome_frames * scopes:,} scopes: peak "
        f"{chrome_peak / 2**20:.1f} MiB traced",
    ]


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    build = "compiled" if codec.COMPILED else "pure Python"
    print(f"codec {codec.__version__}, {build} build, Python {sys.version.split()[0]}\n")
    loads = workloads()
    print("Bytes per scope (x codec's stream):\n")
    print("\n".join(size_table(loads)))
    print(
        f"\nExport time per scope, {loads['game loop, 8 threads'].scopes:,} scopes, best round:\n"
    )
    print("\n".join(time_table(loads["game loop, 8 threads"], 3 if quick else 10)))
    recorded = loads["recorded by Profiler"]
    print("\nPeak memory:\n")
    for line in memory_lines(recorded.frames[0], recorded.registry, 100 if quick else 1004):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
