"""The producer: a :class:`Profiler` records scopes and encodes a frame per ``end_frame()``.

Strategy: scopes are registered once (by name, by decorated function, or as
user scopes timed elsewhere) and get dense ids; recording a scope then
writes only its id, start, duration and depth into the preallocated columns
of the calling thread, or of the running asyncio task's lane (``_recorder``).
``end_frame()`` takes every recorder's finished rows under one lock (and
retires the recorders of threads that have ended, once their last rows are
taken, so its cost follows the live threads) and encodes, into one reusable
:class:`~codec.FrameEncoder`, first the registry entries no reader has been
sent yet, then the frame, straight from the columns. The two parts go to
every sink as zero-copy views of that buffer, valid during the call only;
a sink copies what it keeps. Registry entries are sent before the first
frame that can refer to them, and a sink that attaches later asks for a
keyframe (:meth:`Profiler.keyframe`): the header and every definition so
far.

A disabled profiler hands out one shared do-nothing context from
``scope()``, calls decorated functions directly, and encodes nothing.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import numpy

from codec.framing import DEFAULT_MAX_FRAME_SIZE, FrameEncoder
from codec.profiler._recorder import (
    DEFAULT_MAX_ROWS,
    INITIAL_LANE_ROWS,
    INITIAL_ROWS,
    Recording,
    Scope,
    ThreadRecorder,
)
from codec.profiler.model import Marks, Registry, ScopeKind, TrackDef, TrackKind, TrackScopes
from codec.profiler.packets import PacketWriter, Session

F = TypeVar("F", bound=Callable[..., Any])

# Frames of these files are skipped to find where a named scope is first used.
_OWN_FILES = {__file__, os.path.join(os.path.dirname(__file__), "_recorder.py")}


class Sink(Protocol):
    """Where a profiler's packets go: a server, a file, a test."""

    def send(self, registry: memoryview, frame: memoryview) -> None:
        """New registry entries (maybe empty) and one frame, valid during the call only."""


class Profiler:
    """Records timing scopes per thread and streams them, frame by frame, to its sinks.

    ``with profiler.scope("name"):`` times a block, ``@profiler.function``
    times every call of a function, and :meth:`report_user_scopes` adds
    scopes timed elsewhere (a GPU queue). :meth:`end_frame` ends a frame.
    """

    def __init__(
        self,
        name: str = "",
        *,
        enabled: bool = True,
        fixed_columns: bool = False,
        max_rows_per_thread: int = DEFAULT_MAX_ROWS,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    ) -> None:
        self.session = Session.new(name, fixed_columns=fixed_columns)
        self.registry = Registry()
        self._lock = threading.Lock()
        self._recorders: list[ThreadRecorder] = []  # of live threads, and ended ones not sent
        self._retired_dropped = 0  # the dropped scopes of retired recorders
        self._max_rows = max_rows_per_thread
        self._recording = Recording(self._new_recorder, self._register_named)
        self._recording.enabled = enabled
        self.scope: Callable[[str], Any] = self._recording.scope
        self._writer = PacketWriter(self.session)
        self._out = FrameEncoder(max_frame_size)
        self._sent = Marks()  # registry entries every sink has been sent
        self._sinks: list[Sink] = []
        self._user_tracks: list[tuple[TrackScopes, int]] = []  # with their latest end
        self.frame_index = 0  # of the last frame encoded
        self.scopes_encoded = 0  # in all the frames so far

    # --- switch -------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        """Whether scopes are recorded; a scope entered while enabled is always closed."""
        return bool(self._recording.enabled)

    @enabled.setter
    def enabled(self, value: bool) -> None:
        self._recording.enabled = bool(value)

    @property
    def dropped_scopes(self) -> int:
        """Scopes not recorded: nested over 255 deep, met with a thread's rows all in use,
        or still open when their thread ended."""
        return self._retired_dropped + sum(recorder.dropped for recorder in self._recorders)

    # --- registration -------------------------------------------------------------------

    def register_scope(
        self,
        name: str,
        *,
        kind: ScopeKind = ScopeKind.NAMED,
        function: str = "",
        file: str = "",
        line: int = 0,
    ) -> Scope:
        """Register a scope (once per name for named scopes); enter it with ``with scope():``."""
        with self._lock:
            known = self._recording.scopes.get(name)
            if known is not None and kind == ScopeKind.NAMED:
                return known
            definition = self.registry.add_scope(name, kind, function, file, line)
            scope = Scope(self._recording, definition.scope_id)
            if kind == ScopeKind.NAMED:
                self._recording.scopes[name] = scope
            return scope

    def function(self, fn: F) -> F:
        """Decorator: time every call of ``fn`` as a scope named after it."""
        code = fn.__code__
        scope_id = self.register_scope(
            _display_name(fn.__qualname__),
            kind=ScopeKind.FUNCTION,
            function=fn.__qualname__,
            file=_short_path(code.co_filename),
            line=code.co_firstlineno,
        ).scope_id
        recording = self._recording

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if not recording.enabled:
                return fn(*args, **kwargs)
            recorder = recording.recorder()
            recorder.begin(scope_id)
            try:
                return fn(*args, **kwargs)
            finally:
                recorder.end()

        return timed  # type: ignore[return-value]

    def register_track(self, name: str, kind: TrackKind = TrackKind.GPU_QUEUE) -> TrackDef:
        """A track for scopes timed elsewhere (see :meth:`report_user_scopes`)."""
        return self.registry.add_track(name, kind)

    def register_user_scopes(
        self, names: Sequence[str], kind: ScopeKind = ScopeKind.USER
    ) -> list[int]:
        """Register scopes timed outside the profiler; returns their ids, in order."""
        return [self.register_scope(name, kind=kind).scope_id for name in names]

    def report_user_scopes(
        self, track: TrackDef, scope_ids: Any, starts_ns: Any, durations_ns: Any, depths: Any
    ) -> None:
        """Add scopes timed elsewhere to the next frame, as columns in pre-order.

        ``starts_ns`` are on the clock of ``time.perf_counter_ns()`` (convert
        GPU timestamps first); the columns are copied.
        """
        ids = numpy.array(scope_ids, dtype=numpy.uint32)
        starts = numpy.array(starts_ns, dtype=numpy.int64)
        durations = numpy.array(durations_ns, dtype=numpy.int64)
        depth = numpy.array(depths, dtype=numpy.uint8)
        count = len(ids)
        if not len(starts) == len(durations) == len(depth) == count:
            raise ValueError("scope_ids, starts_ns, durations_ns and depths differ in length")
        if count == 0:
            return
        if (
            depth[0] != 0
            or numpy.any(numpy.diff(depth.astype(numpy.int16)) > 1)
            or numpy.any(numpy.diff(starts) < 0)
            or numpy.any(durations < 0)
        ):
            raise ValueError("user scopes must be in pre-order: starts ascending, depth from 0")
        if ids.min() < 1 or ids.max() > len(self.registry.scopes):
            raise ValueError("a scope id was not registered")
        if not 0 < track.track_ref <= len(self.registry.tracks):
            raise ValueError(f"track {track.track_ref} was not registered")
        end = int((starts + durations).max())
        with self._lock:
            self._user_tracks.append(
                (TrackScopes(track.track_ref, ids, starts, durations, depth), end)
            )

    # --- frames -------------------------------------------------------------------------

    def add_sink(self, sink: Sink) -> None:
        """Send every later frame to ``sink``; give it :meth:`keyframe` first."""
        with self._lock:
            self._sinks.append(sink)

    def remove_sink(self, sink: Sink) -> None:
        with self._lock:
            self._sinks.remove(sink)

    def keyframe(self) -> bytes:
        """A header packet and every definition so far: what a new reader needs first."""
        out = FrameEncoder(self._out.max_frame_size)
        self._writer.keyframe(out, self.registry)
        return bytes(out.getbuffer())

    def end_frame(self) -> int:
        """End the frame: encode every finished scope and send it; returns its index (0: none).

        A thread's scopes join a frame once its top-level scope has closed.
        """
        if not self._recording.enabled:
            return 0
        with self._lock:
            tracks, start, end = self._take_rows()
            if not tracks:
                return 0
            self.frame_index += 1
            out = self._out
            out.clear()
            marks = self.registry.marks()
            self._writer.registry(out, self.registry, self._sent, marks)
            self._sent = marks
            split = len(out)
            count = sum(len(track) for track in tracks)
            self.scopes_encoded += count
            self._writer.frame(out, self.frame_index, start, end - start, tracks, count)
            with out.getbuffer() as packets:
                registry, frame = packets[:split], packets[split:]
                for sink in self._sinks:
                    sink.send(registry, frame)
                registry.release()
                frame.release()
            return self.frame_index

    def _take_rows(self) -> tuple[list[TrackScopes], int, int]:
        """Every track's finished rows (lock held), with their earliest start and latest end.

        A recorder whose owner has ended is retired once its rows are taken
        (``ended`` is read first: rows can no longer arrive after it).
        """
        tracks: list[TrackScopes] = []
        start = end = 0
        live: list[ThreadRecorder] = []
        retired_dropped = 0
        for recorder in self._recorders:
            if recorder.ended:
                retired_dropped += recorder.dropped + recorder.unfinished
            else:
                live.append(recorder)
            first, stop, last_end = recorder.take()
            if stop == first:
                continue
            ids, starts, durations, depths = recorder.columns()
            rows = slice(first, stop)
            track = TrackScopes(
                recorder.track_ref, ids[rows], starts[rows], durations[rows], depths[rows]
            )
            tracks.append(track)
            first_start = int(starts[first])
            start = first_start if len(tracks) == 1 else min(start, first_start)
            end = max(end, last_end)
        # in this order, dropped_scopes (read without the lock) never counts one twice
        self._recorders = live
        self._retired_dropped += retired_dropped
        for track, last_end in self._user_tracks:
            first_start = int(track.start_ns[0])
            start = first_start if not tracks else min(start, first_start)
            end = max(end, last_end)
            tracks.append(track)
        self._user_tracks.clear()
        return tracks, start, end

    # --- internals ----------------------------------------------------------------------

    def _new_recorder(self, lane: int, owner: Any) -> ThreadRecorder:
        """A recorder on a new track: the thread's own (lane 0), or a lane for its tasks."""
        thread = threading.current_thread()
        if lane:
            name, kind, rows = f"{thread.name} tasks {lane}", TrackKind.ASYNC, INITIAL_LANE_ROWS
        else:
            name, kind, rows = thread.name, TrackKind.CPU_THREAD, INITIAL_ROWS
        track = self.registry.add_track(name, kind, threading.get_native_id())
        recorder = ThreadRecorder(track.track_ref, self._lock, self._max_rows, owner, rows)
        with self._lock:
            self._recorders.append(recorder)
        return recorder

    def _register_named(self, name: str) -> Scope:
        """Register a scope first met in ``scope(name)``, at the caller's file and line."""
        frame = sys._getframe(0)
        while frame.f_back is not None and frame.f_code.co_filename in _OWN_FILES:
            frame = frame.f_back
        return self.register_scope(
            name, file=_short_path(frame.f_code.co_filename), line=frame.f_lineno
        )


def _display_name(qualname: str) -> str:
    """``Class.method`` or ``function`` from a qualified name: enclosing functions are left out."""
    parts = qualname.split(".")
    kept = [
        p for i, p in enumerate(parts) if p != "<locals>" and parts[i + 1 : i + 2] != ["<locals>"]
    ]
    return ".".join(kept[-2:])


def _short_path(path: str) -> str:
    """A source path relative to the working directory when inside it, else as given."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if relative.startswith("..") else relative
