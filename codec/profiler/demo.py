"""The demo: a profiled synthetic program streamed to a viewer in the same process.

Strategy: a game-loop-like workload (a main thread that updates, simulates
and draws, plus worker threads running jobs) is instrumented with named
scopes and decorated functions, and ends a frame per loop turn. It runs in
its own threads at full speed while the event loop of the calling thread
serves the stream (:class:`~codec.profiler.server.ProfileServer`) and
reads it back over a loopback TCP connection
(:func:`~codec.profiler.client.connect_viewer`) into a
:class:`~codec.profiler.analysis.FrameStore`. Every number in the final
table is measured in this run: throughput; wire bytes per scope of the
frames the viewer kept, against the Chrome trace JSON and puffin's stream
layout of the same frames; and the memory that recording and encoding
allocate, traced with ``tracemalloc`` on a separate profiler once the
stream has stopped.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codec import framing, varint, wire
from codec.profiler import _recorder
from codec.profiler.analysis import (
    FrameStore,
    chrome_json_size,
    format_summary,
    puffin_stream_size,
    write_chrome_trace,
)
from codec.profiler.client import connect_viewer
from codec.profiler.model import Frame, Registry
from codec.profiler.recording import Profiler
from codec.profiler.server import ProfileServer

DEFAULT_TRACE = Path(tempfile.gettempdir()) / "codec-demo-trace.json"
# Frames the viewer keeps: the sizes and the exported trace cover these.
KEPT_FRAMES = 300


class Workload:
    """A small program in the shape of a game loop, instrumented with ``profiler``."""

    def __init__(self, profiler: Profiler, workers: int, seed: int = 1) -> None:
        self.profiler = profiler
        self.workers = workers
        self._jobs: list[int] = []
        self._jobs_lock = threading.Lock()
        self._seed = seed
        scope = profiler.scope
        function = profiler.function

        @function
        def integrate(body: int) -> int:
            total = 0
            for step in range(20 + body % 7):
                total += step * body
            return total

        @function
        def collide(pairs: int) -> int:
            with scope("broad phase"):
                hits = sum(i % 3 == 0 for i in range(pairs))
            with scope("narrow phase"):
                for _ in range(hits % 5):
                    integrate(hits)
            return hits

        @function
        def draw(mesh: int) -> None:
            with scope("bind"):
                pass
            with scope("submit"):
                _ = mesh * mesh

        @function
        def run_job(job: int) -> int:
            with scope("decode asset"):
                value = sum(range(job % 50))
            with scope("upload"):
                return value

        def frame(turn: int) -> None:
            with scope("frame"):
                with scope("input"):
                    pass
                with scope("update"):
                    for body in range(8 + turn % 5):
                        integrate(body)
                    collide(30 + turn % 17)
                with scope("render"):
                    for mesh in range(12):
                        draw(mesh)
                    with scope("present"):
                        pass
                with self._jobs_lock:
                    self._jobs.extend(range(turn, turn + 4))

        def worker() -> None:
            while not self.stopping.is_set():
                with self._jobs_lock:
                    job = self._jobs.pop() if self._jobs else None
                if job is None:
                    time.sleep(0.0005)
                    continue
                with scope("job"):
                    run_job(job)

        self._frame = frame
        self._worker = worker
        self.stopping = threading.Event()
        self.turns = 0

    def run(self, seconds: float, fps: float = 0) -> None:
        """Loop for ``seconds``: a frame per turn, ``end_frame()`` after each.

        With ``fps`` > 0 a turn starts at most every ``1 / fps`` seconds (the
        rest of the time is slept); with 0 the loop runs flat out.
        """
        workers = [
            threading.Thread(target=self._worker, name=f"job worker {i + 1}", daemon=True)
            for i in range(self.workers)
        ]
        for thread in workers:
            thread.start()
        start = time.perf_counter()
        deadline = start + seconds
        period = 1 / fps if fps > 0 else 0
        try:
            while (now := time.perf_counter()) < deadline:
                if period:
                    time.sleep(max(0.0, start + self.turns * period - now))
                self.turns += 1
                self._frame(self.turns)
                self.profiler.end_frame()
        finally:
            self.stopping.set()
            for thread in workers:
                thread.join()
            self.profiler.end_frame()  # what the workers finished last


@dataclass
class Allocations:
    """``tracemalloc`` figures of recording and encoding, measured after a warm-up."""

    scopes: int  # recorded in the traced run
    recording_net: int  # bytes still allocated after recording them
    recording_peak: int  # highest point while recording them
    encode_peak: dict[int, int]  # scopes in a frame -> peak while encoding it


@dataclass
class DemoResult:
    seconds: float
    workers: int
    fps: float
    frames_sent: int
    frames_received: int
    frames_dropped: int
    scopes: int  # encoded and sent
    kept: list[Frame]
    registry: Registry
    kept_wire_bytes: int  # the frame packets of the kept frames, prefixes included
    other_bytes: int  # headers, registry and stats packets
    allocations: Allocations
    trace: Path

    def table(self, top: int = 8) -> str:
        kept_scopes = sum(frame.num_scopes for frame in self.kept) or 1
        codec_size = self.kept_wire_bytes / kept_scopes
        puffin = puffin_stream_size(self.kept) / kept_scopes
        chrome = chrome_json_size(self.kept, self.registry) / kept_scopes
        alloc = self.allocations
        pace = f"up to {self.fps:,.0f} frames/s" if self.fps > 0 else "frames flat out"
        build = (
            "compiled"
            if framing.COMPILED and wire.COMPILED and _recorder.COMPILED
            else "pure Python"
        )
        lines = [
            f"codec profiler demo: {self.seconds:.1f} s, main thread + {self.workers} "
            f"job workers, {pace}, {build} core",
            "",
            f"  frames sent             {self.frames_sent:>12,}   "
            f"({self.frames_sent / self.seconds:,.0f} frames/s)",
            f"  scopes recorded         {self.scopes:>12,}   "
            f"({self.scopes / self.seconds:,.0f} scopes/s)",
            f"  frames received         {self.frames_received:>12,}   "
            f"(dropped for the viewer: {self.frames_dropped:,})",
            "",
            f"wire bytes per scope, the last {len(self.kept)} frames ({kept_scopes:,} scopes)",
            f"  codec, varint columns   {codec_size:>12.1f} B",
            f"  puffin stream layout    {puffin:>12.1f} B   ({puffin / codec_size:.1f}x codec)",
            f"  Chrome trace JSON       {chrome:>12.1f} B   ({chrome / codec_size:.1f}x codec)",
            f"  header + registry       {self.other_bytes:>12,} B   in all, sent once "
            f"({len(self.registry.scopes)} scopes, {len(self.registry.tracks)} tracks)",
            "",
            "memory allocated (tracemalloc, after warm-up)",
            f"  recording {alloc.scopes:,} scopes      net {alloc.recording_net:,} B, "
            f"peak {alloc.recording_peak:,} B  "
            f"({alloc.recording_peak / alloc.scopes:.3f} B per scope)",
        ]
        for scopes, peak in alloc.encode_peak.items():
            lines.append(f"  encoding a frame of {scopes:>7,} scopes   peak {peak:,} B")
        lines += [
            "",
            format_summary(self.kept, self.registry, top=top),
            "",
            f"Chrome trace of the last {len(self.kept)} frames: {self.trace}",
            "(open it in https://ui.perfetto.dev or chrome://tracing)",
        ]
        return "\n".join(lines)


def _on_main_thread(run: Callable[[float, float], None], *args: float) -> asyncio.Future[None]:
    """Run the workload's frame loop on a thread of its own, named "main" (so is its track)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def main() -> None:
        try:
            run(*args)
        except BaseException as exc:  # handed to the awaiting task
            loop.call_soon_threadsafe(done.set_exception, exc)
        else:
            loop.call_soon_threadsafe(done.set_result, None)

    threading.Thread(target=main, name="main", daemon=True).start()
    return done


async def run_demo(
    seconds: float = 3.0,
    *,
    workers: int = 2,
    fps: float = 1000,
    trace: Path = DEFAULT_TRACE,
    host: str = "127.0.0.1",
    port: int = 0,
    fixed_columns: bool = False,
    progress: Callable[[str], None] | None = None,
) -> DemoResult:
    """Run the workload for ``seconds`` at ``fps`` frames per second (0: flat out) and view
    its stream; ``progress`` gets status lines."""
    profiler = Profiler("codec demo", fixed_columns=fixed_columns)
    store = FrameStore(KEPT_FRAMES)
    frame_bytes: dict[int, int] = {}
    workload = Workload(profiler, workers)
    async with await ProfileServer.start(profiler, host, port) as server:
        if progress is not None:
            progress(f"serving the stream on {host}:{server.port}")
        async with await connect_viewer(host, server.port) as viewer:
            producer = _on_main_thread(workload.run, seconds, fps)
            ticker = asyncio.create_task(_report(progress, workload, store, seconds))
            try:
                while True:
                    # The workload's last frames may have been dropped for this viewer (or
                    # have been empty): once it has stopped, a quiet second ends the run.
                    try:
                        payload, item = await asyncio.wait_for(viewer.next_packet(), 1.0)
                    except TimeoutError:
                        if producer.done():
                            break
                        continue
                    if isinstance(item, Frame):
                        store.add(item)
                        frame_bytes[item.index] = varint.size(len(payload)) + len(payload)
                        if producer.done() and item.index >= profiler.frame_index:
                            break
            finally:
                ticker.cancel()
            await producer
            registry = viewer.receiver.registry
            dropped = viewer.receiver.frames_dropped
            other_bytes = viewer.bytes_received - sum(frame_bytes.values())
    kept = list(store.frames)
    write_chrome_trace(kept, registry, trace)
    return DemoResult(
        seconds=seconds,
        workers=workers,
        fps=fps,
        frames_sent=profiler.frame_index,
        frames_received=store.frames_added,
        frames_dropped=dropped,
        scopes=profiler.scopes_encoded,
        kept=kept,
        registry=registry,
        kept_wire_bytes=sum(frame_bytes[frame.index] for frame in kept),
        other_bytes=other_bytes,
        allocations=measure_allocations(),
        trace=trace,
    )


async def _report(
    progress: Callable[[str], None] | None, workload: Workload, store: FrameStore, seconds: float
) -> None:
    if progress is None:
        return
    start = time.perf_counter()
    while True:
        await asyncio.sleep(0.5)
        elapsed = time.perf_counter() - start
        progress(
            f"{min(elapsed, seconds):4.1f}/{seconds:.1f} s  frames {workload.turns:,}  "
            f"viewer: {store.frames_added:,} frames, {store.scopes_added:,} scopes"
        )


def measure_allocations(scopes: int = 100_000) -> Allocations:
    """Trace recording ``scopes`` scopes, and encoding frames of 1,000 and 100,000 scopes."""
    profiler = Profiler("allocations")
    hot = profiler.register_scope("hot")

    def record(count: int) -> None:
        for _ in itertools.repeat(None, count):
            with hot():
                pass

    record(scopes)  # warm-up: the columns grow to their working size
    profiler.end_frame()
    net, peak = _traced(lambda: record(scopes))
    encode_peak = {}
    for count in (1_000, 100_000):
        for _ in range(2):  # warm-up: the encoder's buffer and scratch column grow
            record(count)
            profiler.end_frame()
        record(count)
        encode_peak[count] = _traced(profiler.end_frame)[1]
    return Allocations(scopes, net, peak, encode_peak)


def _traced(action: Callable[[], object]) -> tuple[int, int]:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        action()
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return after - before, max(0, peak - before)
