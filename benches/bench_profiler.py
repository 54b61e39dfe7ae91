"""codec.profiler: recording, encoding and decoding cost per scope, and wire bytes per scope.

Run from the repository root with
``python -m pytest benches/bench_profiler.py --benchmark-only``.

Times and ratios in the ratio table are per scope (``extra_info["ops"]``).
In the record, encode and decode groups every round is one timed call
(``benchmark.pedantic``, one iteration) whose untimed ``setup`` ends the
previous frame, records the next one, or reads the keyframe.

* ``profiler-record``: 1000 flat scopes per round on a warm profiler (two
  warm-up rounds): ``with prof.scope("x"):``, a pre-registered
  ``with scope():`` and a call of an empty ``@prof.function``. Baseline: a
  naive recorder whose ``scope(name)`` returns a small ``__slots__`` context
  that appends ``(name, start, end)`` from ``time.perf_counter_ns()`` to a
  list. Also timed: a bare ``perf_counter_ns()`` pair, a disabled profiler
  (``enabled=False``) for ``scope(name)`` and ``@function``, and a plain
  call of the undecorated function. ``end_frame()`` (or clearing the naive
  list) runs in the round's setup, outside the timed region. Freeing rows is
  not: when the columns fill, the recorder moves the rows no frame has taken
  yet to the front, inside the round, as it does in use. After the module,
  a summary gives each case's ns per scope next to the naive recorder and
  the bare clock pair.
* ``profiler-encode-{1k,100k}``: ``end_frame()`` of a game-loop frame of 996
  or 100,004 nested scopes recorded in the round's setup, with varint and
  with fixed-width columns (the only sink notes packet sizes). Baseline:
  the naive recorder's tuples of the same scopes as Chrome trace ``"X"``
  events (name, ph, ts, dur, pid, tid: fewer fields than
  ``chrome_trace``'s) through ``json.dumps`` to UTF-8. Peer: one pb2 ``Event`` (id,
  start, end, depth) per scope, built beforehand as a pb2 recorder would
  hold them, framed by ``peers.naive_encode``.
* ``profiler-decode-{1k,100k}``: a :class:`~codec.profiler.Receiver` that
  has read the keyframe (header and registry) in setup, fed the frame packet
  and iterated to a ``Frame`` of numpy columns. Baseline: ``json.loads`` of
  the baseline's JSON. Peer: ``peers.naive_decode`` of the pb2 stream.
* ``profiler-wire-{workload}``: codec's ``PacketWriter`` writing a
  workload's frames with varint and with fixed columns, against the Chrome
  JSON export of the same frames (``chrome_json_size``, the baseline; the
  aim is at most a tenth of its bytes, and a third of puffin's); pytest-benchmark calibrates these
  rounds. After the module, a table gives bytes per scope of those
  encodings and of puffin's stream after its PR #169 (``puffin_stream_size``,
  not timed: a Python model of a Rust layout), and codec's bytes sent once
  per reader (header and registry). Workloads: a replica of the puffin_http
  example frame (1,037 scopes, 2 threads), a game loop on 2 and on 8 threads
  (3 frames each), all on a seeded simulated clock, and the 996-scope frame
  recorded for the encode group (1 thread, real clock).

Allocation figures are tested in ``tests/``, not here.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from time import perf_counter_ns
from typing import Any, NamedTuple

import _root  # noqa: F401  (the repository root on sys.path, for peerbench)
import numpy as np
import peers
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from codec import FrameEncoder
from codec.profiler import (
    Frame,
    PacketWriter,
    Profiler,
    Receiver,
    Registry,
    Session,
    TrackKind,
    TrackScopes,
)
from codec.profiler.analysis import chrome_json_size, puffin_stream_size
from peerbench import Event

ROUND_SCOPES = 1000
T0 = 1_700_000_000_000_000_000  # the simulated clock's start
FRAME_NS = 16_666_667


def _terminal(config: pytest.Config) -> Any:
    """The terminal reporter and a context that lets a fixture's teardown write past capture."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    suspend = capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()
    return reporter, suspend


# --- the instrumented programs --------------------------------------------------------------

ScopeFn = Callable[[str], Any]  # prof.scope, or a simulated clock's scope


def game_frame(scope: ScopeFn, ticks: int) -> None:
    """One frame of a game loop: 8 + 13 * ticks scopes, up to 5 deep, many micro-scopes."""
    with scope("frame"):
        with scope("input"):
            for _ in range(2):
                with scope("poll_device"):
                    pass
        with scope("update"):
            for _ in range(ticks):
                with scope("physics"):
                    with scope("broadphase"):
                        pass
                    for _ in range(3):
                        with scope("contact"):
                            pass
                with scope("ai"):
                    for _ in range(2):
                        with scope("agent"), scope("pathfind"):
                            pass
        with scope("render"):
            with scope("cull"):
                pass
            for _ in range(ticks):
                with scope("draw"):
                    with scope("bind"):
                        pass
                    with scope("submit"):
                        pass
        with scope("present"):
            pass


def game_scopes(ticks: int) -> int:
    return 8 + 13 * ticks


def worker_jobs(scope: ScopeFn, jobs: int) -> None:
    """A worker thread's share of a frame: 1 + 7 * jobs scopes."""
    with scope("jobs"):
        for _ in range(jobs):
            with scope("job"):
                with scope("decode_asset"):
                    for _ in range(4):
                        with scope("read_chunk"):
                            pass
                with scope("upload"):
                    pass


class Timing(NamedTuple):
    """A scope's place in the source, and its simulated gap before and work before its end."""

    file: str
    line: int
    gap: tuple[int, int]
    work: tuple[int, int]


GAME_TIMING = {
    "frame": Timing("game/loop.py", 12, (0, 0), (2_000, 9_000)),
    "input": Timing("game/input.py", 30, (300, 900), (200, 700)),
    "poll_device": Timing("game/input.py", 44, (40, 200), (300, 2_500)),
    "update": Timing("game/loop.py", 20, (100, 400), (500, 2_000)),
    "physics": Timing("game/physics.py", 15, (60, 300), (200, 900)),
    "broadphase": Timing("game/physics.py", 40, (30, 120), (2_000, 9_000)),
    "contact": Timing("game/physics.py", 71, (20, 90), (60, 450)),
    "ai": Timing("game/ai.py", 9, (60, 300), (100, 600)),
    "agent": Timing("game/ai.py", 28, (30, 150), (150, 900)),
    "pathfind": Timing("game/ai.py", 55, (20, 80), (800, 6_000)),
    "render": Timing("game/render.py", 11, (100, 400), (1_000, 4_000)),
    "cull": Timing("game/render.py", 37, (50, 200), (5_000, 20_000)),
    "draw": Timing("game/render.py", 60, (20, 120), (100, 500)),
    "bind": Timing("game/render.py", 88, (15, 60), (40, 300)),
    "submit": Timing("game/render.py", 102, (15, 60), (200, 1_200)),
    "present": Timing("game/loop.py", 31, (100, 300), (20_000, 120_000)),
    "jobs": Timing("game/jobs.py", 14, (0, 0), (500, 2_000)),
    "job": Timing("game/jobs.py", 33, (200, 3_000), (300, 1_500)),
    "decode_asset": Timing("game/assets.py", 18, (50, 200), (1_000, 8_000)),
    "read_chunk": Timing("game/assets.py", 47, (20, 100), (2_000, 15_000)),
    "upload": Timing("game/assets.py", 90, (50, 200), (4_000, 30_000)),
}

# puffin_http/examples/server.rs, as the reference describes it
PUFFIN_EXAMPLE_TIMING = {
    "main_loop": Timing("examples/server.rs", 16, (0, 0), (2_000, 2_000)),
    "sleep_ms": Timing("examples/server.rs", 51, (200, 900), (100, 400)),
    "very thin": Timing("examples/server.rs", 38, (20, 60), (25, 90)),
}


class SimulatedTrack:
    """One thread's scopes on a simulated clock: a gap before each scope, work before its end."""

    def __init__(self, ids: dict[str, int], timing: dict[str, Timing], rng: random.Random) -> None:
        self._ids = ids
        self._timing = timing
        self._rng = rng
        self.now = 0
        self._depth = 0
        self._rows: list[tuple[int, int, int, int]] = []  # scope id, start, duration, depth

    @contextlib.contextmanager
    def scope(self, name: str) -> Iterator[None]:
        timing = self._timing[name]
        self.now += self._rng.randint(*timing.gap)
        start, depth, row = self.now, self._depth, len(self._rows)
        self._rows.append((0, 0, 0, 0))  # filled in on exit, keeping pre-order
        self._depth += 1
        yield
        self._depth -= 1
        self.now += self._rng.randint(*timing.work)
        self._rows[row] = (self._ids[name], start, self.now - start, depth)

    def work(self, low: int, high: int) -> None:
        self.now += self._rng.randint(low, high)

    def take(self, track_ref: int) -> TrackScopes:
        """The scopes recorded since the last call, as a track's columns."""
        ids, starts, durations, depths = zip(*self._rows, strict=True)
        self._rows = []
        return TrackScopes.from_sequences(track_ref, ids, starts, durations, depths)


def sleep_ms(track: SimulatedTrack, ms: int) -> None:
    """puffin's example: a scope that sleeps 1 ms, or splits the sleep in two nested halves."""
    with track.scope("sleep_ms"):
        if ms == 1:
            track.work(1_050_000, 1_150_000)
        else:
            sleep_ms(track, ms // 2)
            sleep_ms(track, ms - ms // 2)


# --- workloads -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """Frames and the registry that names their scopes and tracks."""

    registry: Registry
    frames: list[Frame]

    @property
    def scopes(self) -> int:
        return sum(frame.num_scopes for frame in self.frames)

    @property
    def threads(self) -> int:
        return len({track.track_ref for frame in self.frames for track in frame.tracks})


def make_frame(index: int, tracks: Sequence[TrackScopes]) -> Frame:
    start = min(int(track.start_ns[0]) for track in tracks)
    end = max(int((track.start_ns + track.duration_ns).max()) for track in tracks)
    return Frame(index, start, end - start, tuple(tracks))


def simulated(
    timing: dict[str, Timing], thread_names: Sequence[str], seed: int
) -> tuple[Registry, list[SimulatedTrack]]:
    """A registry of ``timing``'s scopes and one track per thread, and the threads' clocks."""
    registry = Registry()
    ids = {
        name: registry.add_scope(name, file=t.file, line=t.line).scope_id
        for name, t in timing.items()
    }
    for name in thread_names:
        registry.add_track(name, TrackKind.CPU_THREAD)
    rng = random.Random(seed)
    return registry, [SimulatedTrack(ids, timing, rng) for _ in thread_names]


def puffin_example() -> Workload:
    """puffin_http's example frame: a 14 ms sleep tree, 1000 thin scopes, 5 ms on another thread."""
    registry, (main, other) = simulated(PUFFIN_EXAMPLE_TIMING, ["main", "Other thread"], seed=1)
    main.now, other.now = T0, T0 + 40_000
    with main.scope("main_loop"):
        main.work(1_500, 1_500)
        sleep_ms(main, 14)
        for _ in range(1000):
            with main.scope("very thin"):
                pass
    sleep_ms(other, 5)
    return Workload(registry, [make_frame(1, [main.take(1), other.take(2)])])


def game_loop(threads: int, frames: int = 3, ticks: int = 100, jobs: int = 120) -> Workload:
    """A game loop on the main thread and asset jobs on ``threads - 1`` workers."""
    names = ["main", *(f"worker-{i}" for i in range(1, threads))]
    registry, clocks = simulated(GAME_TIMING, names, seed=threads)
    result = []
    for index in range(1, frames + 1):
        for i, clock in enumerate(clocks):
            clock.now = max(clock.now, T0 + (index - 1) * FRAME_NS + 3_000 * i)
            if i == 0:
                game_frame(clock.scope, ticks)
            else:
                worker_jobs(clock.scope, jobs)
        result.append(make_frame(index, [clock.take(i + 1) for i, clock in enumerate(clocks)]))
    return Workload(registry, result)


# --- codec's encoding, the naive recorder and its encodings ---------------------------------

WRITERS = {
    "varint": PacketWriter(Session.new("bench")),
    "fixed": PacketWriter(Session.new("bench", fixed_columns=True)),
}


def encode_frames(writer: PacketWriter, frames: Sequence[Frame], out: FrameEncoder) -> FrameEncoder:
    """The frame packets of ``frames``, written into ``out`` after clearing it."""
    out.clear()
    for frame in frames:
        writer.frame(
            out, frame.index, frame.start_ns, frame.duration_ns, frame.tracks, frame.num_scopes
        )
    return out


def keyframe(writer: PacketWriter, registry: Registry) -> bytes:
    """The packets a reader needs once: the header and every definition."""
    out = FrameEncoder()
    writer.keyframe(out, registry)
    return bytes(out.getbuffer())


class LastFrame:
    """A profiler sink that keeps a copy of the last frame packet."""

    packet = b""

    def send(self, registry: memoryview, frame: memoryview) -> None:
        self.packet = bytes(frame)


class PacketSizes:
    """A profiler sink that notes the sizes of the last packets, copying nothing."""

    registry = frame = 0

    def send(self, registry: memoryview, frame: memoryview) -> None:
        self.registry, self.frame = len(registry), len(frame)


class NaiveRecorder:
    """``with recorder.scope(name):`` appends ``(name, start, end)`` from ``perf_counter_ns()``."""

    def __init__(self) -> None:
        self.records: list[tuple[str, int, int]] = []

    def scope(self, name: str) -> NaiveScope:
        return NaiveScope(self.records, name)


class NaiveScope:
    __slots__ = ("_name", "_records", "_start")

    def __init__(self, records: list[tuple[str, int, int]], name: str) -> None:
        self._records = records
        self._name = name

    def __enter__(self) -> None:
        self._start = perf_counter_ns()

    def __exit__(self, *exc_info: object) -> None:
        self._records.append((self._name, self._start, perf_counter_ns()))


Record = tuple[str, int, int, int]  # name, start, end, thread: the naive recorder's tuples


def naive_trace(records: Sequence[Record], origin_ns: int) -> dict[str, Any]:
    """The naive recorder's tuples as Chrome trace ``"X"`` events, µs from ``origin_ns``."""
    events = [
        {
            "name": name,
            "ph": "X",
            "ts": (start - origin_ns) / 1e3,
            "dur": (end - start) / 1e3,
            "pid": 1,
            "tid": tid,
        }
        for name, start, end, tid in records
    ]
    return {"traceEvents": events}


def naive_chrome_json(records: Sequence[Record], origin_ns: int) -> bytes:
    """:func:`naive_trace` as compact JSON in UTF-8."""
    return json.dumps(naive_trace(records, origin_ns), separators=(",", ":")).encode()


@dataclass(frozen=True)
class Recorded:
    """One recorded game-loop frame in every form the encode and decode groups use."""

    workload: Workload
    streams: dict[str, tuple[bytes, bytes]]  # columns -> (keyframe, frame packet)
    records: list[Record]
    trace: dict[str, Any]  # naive_trace of the records
    chrome_json: bytes
    events: list[Any]  # one pb2 Event per scope
    event_stream: bytes  # the events, naive-framed

    @property
    def frame(self) -> Frame:
        return self.workload.frames[0]

    def peer(self, name: str) -> tuple[Callable[..., Any], tuple[Any, ...], Any]:
        """The timed call of peer ``name`` (see PEERS) on this frame, and what it must return."""
        calls = {
            "naive-chrome-json": (naive_chrome_json, (self.records, self.frame.start_ns)),
            "pb2-per-scope-encode": (peers.naive_encode, (self.events,)),
            "json-loads": (json.loads, (self.chrome_json,)),
            "pb2-per-scope-decode": (peers.naive_decode, (self.event_stream, Event)),
        }
        results = {
            "naive-chrome-json": self.chrome_json,
            "pb2-per-scope-encode": self.event_stream,
            "json-loads": self.trace,
            "pb2-per-scope-decode": self.events,
        }
        return *calls[name], results[name]


def record_game_frame(ticks: int) -> Recorded:
    """Record one game-loop frame with a Profiler, read it back, and build the baselines' input."""
    prof = Profiler("bench")
    sink = LastFrame()
    prof.add_sink(sink)
    game_frame(prof.scope, ticks)
    prof.end_frame()
    receiver = Receiver()
    receiver.feed(prof.keyframe() + sink.packet)
    (frame,) = [item for item in receiver if isinstance(item, Frame)]
    registry = receiver.registry
    workload = Workload(registry, [frame])
    streams = {
        columns: (
            keyframe(writer, registry),
            bytes(encode_frames(writer, [frame], FrameEncoder()).getbuffer()),
        )
        for columns, writer in WRITERS.items()
    }
    assert streams["varint"][1] == sink.packet  # the writer here is the one end_frame uses
    (track,) = frame.tracks
    ids, starts = track.scope_id.tolist(), track.start_ns.tolist()
    ends = (track.start_ns + track.duration_ns).tolist()
    names = [registry.scope(scope_id).name for scope_id in ids]
    records = [(n, s, e, track.track_ref) for n, s, e in zip(names, starts, ends, strict=True)]
    events = [
        Event(scope_id=i, start_ns=s, end_ns=e, depth=d)
        for i, s, e, d in zip(ids, starts, ends, track.depth.tolist(), strict=True)
    ]
    return Recorded(
        workload,
        streams,
        records,
        naive_trace(records, frame.start_ns),
        naive_chrome_json(records, frame.start_ns),
        events,
        bytes(peers.naive_encode(events)),
    )


# --- recording --------------------------------------------------------------------------------

RECORD_ROUNDS = 300


def enter_named(recorder: Any) -> None:
    for _ in range(ROUND_SCOPES):
        with recorder.scope("x"):
            pass


def enter_registered(scope: Any) -> None:
    for _ in range(ROUND_SCOPES):
        with scope():
            pass


def call(fn: Callable[[], None]) -> None:
    for _ in range(ROUND_SCOPES):
        fn()


def clock_pair(_: None) -> None:
    for _ in range(ROUND_SCOPES):
        perf_counter_ns()
        perf_counter_ns()


def empty() -> None:
    """The function the call benchmarks run, plain, decorated, and decorated but disabled."""


class FrameEnder:
    """A round's setup on an enabled profiler: end the frame the previous round recorded."""

    def __init__(self, prof: Profiler) -> None:
        self.prof = prof
        self.frames = 0  # frames that held scopes

    def __call__(self) -> None:
        if self.prof.end_frame():
            self.frames += 1


def _enabled(make: Callable[[Profiler], Any]) -> tuple[Any, FrameEnder]:
    prof = Profiler("bench")
    return make(prof), FrameEnder(prof)


def _naive() -> tuple[NaiveRecorder, Callable[[], None]]:
    recorder = NaiveRecorder()
    return recorder, recorder.records.clear


# name: (timed loop, its argument and the round's setup); "naive-recorder" is the baseline
RECORD_CASES: dict[str, tuple[Callable[[Any], None], Callable[[], tuple[Any, Any]]]] = {
    "codec-scope(name)": (enter_named, lambda: _enabled(lambda prof: prof)),
    "codec-registered-scope()": (
        enter_registered,
        lambda: _enabled(lambda prof: prof.register_scope("x")),
    ),
    "codec-@function": (call, lambda: _enabled(lambda prof: prof.function(empty))),
    "naive-recorder": (enter_named, _naive),
    "bare-perf_counter_ns-pair": (clock_pair, lambda: (None, None)),
    "disabled-scope(name)": (enter_named, lambda: (Profiler(enabled=False), None)),
    "disabled-@function": (call, lambda: (Profiler(enabled=False).function(empty), None)),
    "plain-call": (call, lambda: (empty, None)),
}

_RECORD_NS: dict[str, float] = {}  # case: mean ns per scope, for the module's summary


@pytest.mark.parametrize("case", RECORD_CASES)
def test_record(benchmark: BenchmarkFixture, case: str) -> None:
    loop, make = RECORD_CASES[case]
    arg, setup = make()
    benchmark.group = "profiler-record"
    benchmark.extra_info.update(ops=ROUND_SCOPES, baseline=case == "naive-recorder")
    benchmark.pedantic(  # type: ignore[no-untyped-call]
        loop, args=(arg,), setup=setup, rounds=RECORD_ROUNDS, warmup_rounds=2
    )
    if isinstance(setup, FrameEnder):  # every round's scopes made a frame
        assert setup.frames == RECORD_ROUNDS + 1
    if isinstance(arg, NaiveRecorder):
        assert len(arg.records) == ROUND_SCOPES
    assert benchmark.stats is not None
    _RECORD_NS[case] = benchmark.stats.stats.mean * 1e9 / ROUND_SCOPES


# --- encode and decode one recorded frame ----------------------------------------------------

TICKS = {"1k": 76, "100k": 7_692}  # game_scopes: 996 and 100,004 scopes
ROUNDS = {"1k": 100, "100k": 5}


@pytest.fixture(scope="module")
def recorded() -> dict[str, Recorded]:
    return {size: record_game_frame(ticks) for size, ticks in TICKS.items()}


def _group(benchmark: BenchmarkFixture, job: str, size: str, *, baseline: bool = False) -> None:
    benchmark.group = f"profiler-{job}-{size}"
    benchmark.extra_info.update(ops=game_scopes(TICKS[size]), baseline=baseline)


@pytest.mark.parametrize("size", TICKS)
@pytest.mark.parametrize("columns", WRITERS)
def test_encode_end_frame(benchmark: BenchmarkFixture, columns: str, size: str) -> None:
    prof = Profiler("bench", fixed_columns=columns == "fixed")
    sizes = PacketSizes()
    prof.add_sink(sizes)
    _group(benchmark, "encode", size)
    index = benchmark.pedantic(  # type: ignore[no-untyped-call]
        prof.end_frame,
        setup=lambda: game_frame(prof.scope, TICKS[size]),
        rounds=ROUNDS[size],
        warmup_rounds=1,  # the first frame also sends the registry
    )
    assert index == ROUNDS[size] + 1
    assert sizes.registry == 0
    benchmark.extra_info["frame_bytes_per_scope"] = round(sizes.frame / game_scopes(TICKS[size]), 2)


def receive(receiver: Receiver, packet: bytes) -> list[Any]:
    receiver.feed(packet)
    return list(receiver)


@pytest.mark.parametrize("size", TICKS)
@pytest.mark.parametrize("columns", WRITERS)
def test_decode_receiver(
    benchmark: BenchmarkFixture, recorded: dict[str, Recorded], columns: str, size: str
) -> None:
    frame = recorded[size]
    keyframe_packets, packet = frame.streams[columns]

    def setup() -> tuple[tuple[Receiver, bytes], dict[str, Any]]:
        receiver = Receiver()
        receiver.feed(keyframe_packets)
        assert len(list(receiver)) == 1  # the session
        return (receiver, packet), {}

    _group(benchmark, "decode", size)
    (decoded,) = benchmark.pedantic(  # type: ignore[no-untyped-call]
        receive, setup=setup, rounds=ROUNDS[size], warmup_rounds=1
    )
    (track,), (expected,) = decoded.tracks, frame.frame.tracks
    for column in ("scope_id", "start_ns", "duration_ns", "depth"):
        assert np.array_equal(getattr(track, column), getattr(expected, column))


# name: group job, and whether it is the group's baseline
PEERS = {
    "naive-chrome-json": ("encode", True),
    "pb2-per-scope-encode": ("encode", False),
    "json-loads": ("decode", True),
    "pb2-per-scope-decode": ("decode", False),
}


@pytest.mark.parametrize("size", TICKS)
@pytest.mark.parametrize("peer", PEERS)
def test_peer(
    benchmark: BenchmarkFixture, recorded: dict[str, Recorded], peer: str, size: str
) -> None:
    job, baseline = PEERS[peer]
    call, args, expected = recorded[size].peer(peer)
    _group(benchmark, job, size, baseline=baseline)
    result = benchmark.pedantic(call, args=args, rounds=ROUNDS[size])  # type: ignore[no-untyped-call]
    assert result == expected


# --- wire bytes per scope --------------------------------------------------------------------

ENCODINGS = ("codec-varint", "codec-fixed", "chrome-json")  # chrome-json: the baseline


@dataclass(frozen=True)
class WireSizes:
    """Bytes of one workload's frames in every encoding, and codec's bytes sent once."""

    workload: Workload
    frames: dict[str, int]  # encoding (ENCODINGS and "puffin-post-169"): bytes of all frames
    once: int  # codec's keyframe: header and registry packets (varint session)

    def per_scope(self, encoding: str) -> float:
        return self.frames[encoding] / self.workload.scopes


def wire_sizes(workload: Workload) -> WireSizes:
    frames = {
        f"codec-{columns}": len(encode_frames(writer, workload.frames, FrameEncoder()))
        for columns, writer in WRITERS.items()
    }
    frames["chrome-json"] = chrome_json_size(workload.frames, workload.registry)
    frames["puffin-post-169"] = puffin_stream_size(workload.frames)
    return WireSizes(workload, frames, len(keyframe(WRITERS["varint"], workload.registry)))


def _wire_table(sizes: dict[str, WireSizes]) -> list[str]:
    header = (
        "workload", "threads", "frames", "scopes", "varint", "fixed", "puffin#169", "chrome",
        "chrome/varint", "puffin/varint", "sent once",
    )  # fmt: skip
    rows = [header]
    for name, wire in sizes.items():
        varint = wire.per_scope("codec-varint")
        puffin, chrome = wire.per_scope("puffin-post-169"), wire.per_scope("chrome-json")
        rows.append(
            (
                name,
                str(wire.workload.threads),
                str(len(wire.workload.frames)),
                f"{wire.workload.scopes:,}",
                f"{varint:.2f}",
                f"{wire.per_scope('codec-fixed'):.2f}",
                f"{puffin:.2f}",
                f"{chrome:.2f}",
                f"{chrome / varint:.1f}x",
                f"{puffin / varint:.1f}x",
                f"{wire.once:,} B",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells))
    return lines


@pytest.fixture(scope="module")
def wire(
    recorded: dict[str, Recorded], request: pytest.FixtureRequest
) -> Iterator[dict[str, WireSizes]]:
    """Every workload's sizes; the bytes-per-scope table is printed after the module."""
    workloads = {
        "puffin-example": puffin_example(),
        "game-2-threads": game_loop(2),
        "game-8-threads": game_loop(8),
        "recorded-1k": recorded["1k"].workload,
    }
    sizes = {name: wire_sizes(workload) for name, workload in workloads.items()}
    yield sizes
    reporter, suspend = _terminal(request.config)
    with suspend:
        reporter.write_line("")
        reporter.write_sep("-", "codec.profiler wire bytes per scope (frames only, uncompressed)")
        for line in _wire_table(sizes):
            reporter.write_line(line)


@pytest.mark.parametrize(
    "workload", ["puffin-example", "game-2-threads", "game-8-threads", "recorded-1k"]
)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_wire(
    benchmark: BenchmarkFixture, wire: dict[str, WireSizes], encoding: str, workload: str
) -> None:
    sizes = wire[workload]
    frames, registry = sizes.workload.frames, sizes.workload.registry
    benchmark.group = f"profiler-wire-{workload}"
    benchmark.extra_info.update(
        ops=sizes.workload.scopes,
        baseline=encoding == "chrome-json",
        bytes_per_scope=round(sizes.per_scope(encoding), 2),
        registry_bytes_once=sizes.once,
    )
    if encoding == "chrome-json":
        size = benchmark(chrome_json_size, frames, registry)
    else:
        writer = WRITERS[encoding.removeprefix("codec-")]
        size = len(benchmark(encode_frames, writer, frames, FrameEncoder()))
    assert size == sizes.frames[encoding]


# --- the recording summary -------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def _print_recording(request: pytest.FixtureRequest) -> Iterator[None]:
    """After the module: ns per scope of each recording case against the naive and bare pair."""
    yield
    naive, bare = _RECORD_NS.get("naive-recorder"), _RECORD_NS.get("bare-perf_counter_ns-pair")
    if not _RECORD_NS or naive is None or bare is None:
        return
    reporter, suspend = _terminal(request.config)
    with suspend:
        reporter.write_line("")
        reporter.write_sep("-", "codec.profiler recording, mean ns per scope")
        for case, ns in sorted(_RECORD_NS.items(), key=lambda item: item[1]):
            reporter.write_line(
                f"{case:28} {ns:8.1f} ns  {naive / ns:5.2f}x faster than naive  "
                f"{ns - bare:+8.1f} ns vs a bare perf_counter_ns pair"
            )
