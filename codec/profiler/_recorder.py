"""Recording: per-thread columns that a scope writes into without allocating.

Strategy: each thread that records gets a :class:`ThreadRecorder` (found
through a ``threading.local``), which owns four preallocated numpy columns
(scope id, start, duration, depth) and a stack of the rows of its open
scopes. Entering a scope takes the next row, in entry order, so the rows are
already in pre-order (parent before child); leaving it writes the duration
into that row. The clock is read last on entry and first on exit, so the
bookkeeping is not timed. Rows are handed to a frame only once the thread's
top-level scope has closed (puffin's rule), so a frame never holds a scope
whose parent is missing.

A frame takes the finished rows under the profiler's lock and encodes them
before releasing it; the recording thread takes the same lock only when its
columns are full, to move the rows not yet taken to the front or, when every
row is still wanted, to double the columns. Past ``max_rows`` (or 255 levels
deep, the limit of the one-byte depth column) a scope and everything inside
it are dropped and counted, never half-recorded.

Coroutines: the asyncio tasks of one thread take turns between two
``await``, so one stack of open scopes per thread would close one task's
scope when another task's ends. A scope entered inside a task is therefore
recorded into a *lane*: a recorder of its own, on a track of kind ``ASYNC``,
which the task keeps until it is done. A done task's lane goes back to its
thread's pool and serves the next task, so a server that runs a task per
request registers as many lanes as it ever had tasks recording at once, not
one per task. (A task that ends with a scope still open, entered by hand and
never left, gives its lane up for good.)

A recorder knows its owner through a weak reference to the thread's state,
which the ``threading.local`` drops when the thread ends. Once the owner is
gone and the last rows are taken, the profiler retires the recorder: its
memory and its cost in every frame are freed, and its track stays in the
registry, with what it recorded.

Compiled (``_recorder.pxd``), the columns are typed memoryviews written in C
and the clock is ``clock_gettime(CLOCK_MONOTONIC)``, the clock of
``time.perf_counter_ns()`` on Linux and macOS: entering and leaving a scope
makes no Python object. Uncompiled, the same code runs on numpy item
assignment and ``time.perf_counter_ns()``.
"""

from __future__ import annotations

import threading
import time
import weakref
from asyncio import current_task
from asyncio.events import _get_running_loop
from collections.abc import Callable
from typing import Any

import numpy

from codec._introspection import InitSignature

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython  # type: ignore[no-redef]

COMPILED: bool = cython.compiled

# The depth column holds one byte per scope; a scope deeper than this is dropped.
MAX_DEPTH = 255
_DEPTH_LIMIT = MAX_DEPTH  # the same, as a C constant when compiled
# Rows a thread's recorder and a task lane start with, and the default bound on
# the rows of either (21 bytes each).
INITIAL_ROWS = 1024
INITIAL_LANE_ROWS = 64
DEFAULT_MAX_ROWS = 1 << 20


def now_ns() -> int:
    """The recorders' clock: monotonic nanoseconds, the clock of ``time.perf_counter_ns``."""
    if cython.compiled:
        clock_gettime(CLOCK_MONOTONIC, cython.address(ts))
        return ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    return time.perf_counter_ns()


class ThreadRecorder:
    """The scopes of one thread: preallocated columns in pre-order and a stack of open rows."""

    def __init__(
        self,
        track_ref: int,
        lock: Any,
        max_rows: int = DEFAULT_MAX_ROWS,
        owner: Any = None,
        initial_rows: int = INITIAL_ROWS,
    ) -> None:
        self.track_ref = track_ref
        self.max_rows = max_rows
        self._lock = lock
        self._owner = owner  # a weak reference to what records here; None once given up
        self._open = numpy.zeros(_DEPTH_LIMIT, dtype=numpy.int64)
        self._depth = 0
        self._drop_depth = -1  # the depth of the dropped scope being skipped, -1 if none
        self.dropped = 0
        self._count = 0  # rows in use
        self._finished = 0  # rows [0, _finished) belong to closed top-level scopes
        self._taken = 0  # rows [0, _taken) were handed to a frame
        self._last_end = 0  # the latest end among the finished rows
        self._allocate(min(initial_rows, max_rows))

    def begin(self, scope_id: int) -> None:
        """Open a scope: take the next row, then read the clock."""
        depth = self._depth
        row = self._count
        if (
            self._drop_depth >= 0
            or depth >= _DEPTH_LIMIT
            or (row == self._capacity and not self._make_room())
        ):
            if self._drop_depth < 0:
                self._drop_depth = depth  # skip this scope and everything inside it
            self._depth = depth + 1
            self.dropped += 1
            return
        row = self._count  # _make_room may have moved the rows
        self._depth = depth + 1
        self._count = row + 1
        self._ids[row] = scope_id
        self._depths[row] = depth
        self._open[depth] = row
        self._starts[row] = now_ns()

    def end(self) -> None:
        """Close the innermost open scope: read the clock, then write its duration."""
        stop = now_ns()
        if self._depth == 0:
            raise RuntimeError("a profiler scope ended on a thread where none is open")
        self._depth -= 1
        depth = self._depth
        if self._drop_depth >= 0:
            if depth == self._drop_depth:
                self._drop_depth = -1
            return
        row = self._open[depth]
        self._durations[row] = stop - self._starts[row]
        if depth == 0:
            self._finished = self._count
            self._last_end = stop

    @property
    def depth(self) -> int:
        """How many scopes are open on this thread."""
        return self._depth

    @property
    def ended(self) -> bool:
        """Whether nothing records here any more: its thread has ended, or its lane was given up."""
        return self._owner is None or self._owner() is None

    @property
    def unfinished(self) -> int:
        """Rows not handed to a frame yet, because a top-level scope around them is open."""
        return self._count - self._finished

    def give_up(self) -> None:
        """Let this recorder end with the scopes still open in it (counted once it retires)."""
        self._owner = None

    def take(self) -> tuple[int, int, int]:
        """Hand the finished rows not yet taken to a frame: ``(first row, end row, last end)``.

        Call with the profiler's lock held, and read the rows (``columns``)
        before releasing it: the recording thread may then reuse them.
        """
        first = self._taken
        self._taken = self._finished
        return first, self._finished, self._last_end

    def columns(self) -> tuple[Any, Any, Any, Any]:
        """The numpy columns (scope id, start, duration, depth); rows move once unlocked."""
        return self._id_column, self._start_column, self._duration_column, self._depth_column

    # --- internals ----------------------------------------------------------

    def _allocate(self, rows: int) -> None:
        self._capacity = rows
        self._id_column = numpy.zeros(rows, dtype=numpy.uint32)
        self._start_column = numpy.zeros(rows, dtype=numpy.int64)
        self._duration_column = numpy.zeros(rows, dtype=numpy.int64)
        self._depth_column = numpy.zeros(rows, dtype=numpy.uint8)
        self._bind()

    def _bind(self) -> None:
        """Point the typed views (compiled) or names (uncompiled) at the columns."""
        self._ids = self._id_column
        self._starts = self._start_column
        self._durations = self._duration_column
        self._depths = self._depth_column

    def _make_room(self) -> bool:
        """Free or add rows for one more scope; False when ``max_rows`` are all still wanted."""
        with self._lock:
            taken = self._taken  # open scopes are never taken, so their rows stay >= taken
            if taken:  # move the rows not yet taken to the front
                kept = self._count - taken
                for column in self.columns():
                    column[:kept] = column[taken : self._count]
                for level in range(self._depth):
                    self._open[level] -= taken
                self._count = kept
                self._finished -= taken
                self._taken = 0
                return True
            if self._capacity >= self.max_rows:
                return False
            old = self.columns()
            self._allocate(min(2 * self._capacity, self.max_rows))
            for column, previous in zip(self.columns(), old, strict=True):
                column[: self._count] = previous[: self._count]
            return True


class Scope:
    """A registered scope, entered with ``with scope():`` (or ``profiler.scope(name)``).

    Calling it returns the scope itself while the profiler is enabled and a
    shared do-nothing context otherwise, so a scope entered while enabled is
    always closed, whatever happens to the switch meanwhile.
    """

    __signature__ = InitSignature()  # what inspect.signature(cls) reads

    @cython.embedsignature(True)  # the signature line InitSignature reads, compiled
    def __init__(self, recording: Recording, scope_id: int) -> None:
        """The scope ``scope_id`` of ``recording``."""
        self._recording = recording
        self.scope_id = scope_id

    def __call__(self) -> Any:
        if self._recording is None:
            raise _unregistered()
        if self._recording.enabled:
            return self
        return NULL_SCOPE

    def __enter__(self) -> None:
        if self._recording is None:
            raise _unregistered()
        self._recording.recorder().begin(self.scope_id)

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> None:
        if self._recording is None:
            raise _unregistered()
        self._recording.recorder().end()


def _unregistered() -> RuntimeError:
    """The error of a :class:`Scope` made with ``Scope.__new__``, outside a profiler."""
    return RuntimeError("Scope is not initialised: a Profiler makes its scopes")


class NullScope:
    """The context a disabled profiler hands out: it does nothing."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> None:
        return None


NULL_SCOPE = NullScope()


class ThreadState:
    """One thread's task lanes, and the owner its recorders refer to.

    Only the thread's ``threading.local`` holds it strongly (its recorders
    keep weak references to it), so it goes away when the thread ends.
    """

    def __init__(self) -> None:
        self.lanes: dict[Any, ThreadRecorder] = {}  # by task, until the task is done
        self.free: list[ThreadRecorder] = []  # lanes of done tasks, for the next ones
        self.lanes_made = 0

    def release(self, task: Any) -> None:
        """A task's done callback: its lane serves the next task, unless a scope is left open."""
        lane = self.lanes.pop(task)
        if lane.depth:
            lane.give_up()
        else:
            self.free.append(lane)


class Recording:
    """The switch, the scopes by name, and the recorder of each thread and task."""

    def __init__(
        self,
        new_recorder: Callable[[int, Any], ThreadRecorder],
        register: Callable[[str], Scope],
    ) -> None:
        self.enabled = True
        self._local = threading.local()
        self._new_recorder = new_recorder
        self._register = register
        self.scopes: dict[str, Scope] = {}

    def scope(self, name: str) -> Any:
        """The scope called ``name`` (registered on first use), or a no-op when disabled."""
        if not self.enabled:
            return NULL_SCOPE
        scope = self.scopes.get(name)
        if scope is None:
            scope = self._register(name)
        return scope

    def recorder(self) -> ThreadRecorder:
        """The recorder of the running asyncio task, or else of this thread, made on first use.

        ``new_recorder(lane, owner)`` makes one: ``lane`` is 0 for the
        thread's own recorder and counts the thread's lanes from 1;
        ``owner`` is the weak reference the recorder keeps.
        """
        loop = _get_running_loop()
        if loop is not None:
            task = current_task(loop)
            if task is not None:
                return self._lane(task)
        recorder = getattr(self._local, "recorder", None)
        if recorder is None:
            state = self._state()
            recorder = self._new_recorder(0, weakref.ref(state))
            self._local.recorder = recorder
        return recorder

    def _lane(self, task: Any) -> ThreadRecorder:
        """The lane of ``task``: its own while it runs, taken from the pool or made."""
        state = self._state()
        lane = state.lanes.get(task)
        if lane is None:
            if state.free:
                lane = state.free.pop()
            else:
                state.lanes_made += 1
                lane = self._new_recorder(state.lanes_made, weakref.ref(state))
            state.lanes[task] = lane
            task.add_done_callback(state.release)
        return lane

    def _state(self) -> ThreadState:
        state = getattr(self._local, "state", None)
        if state is None:
            state = ThreadState()
            self._local.state = state
        return state


if not cython.compiled:
    from codec._pure import fields_as_allocated

    fields_as_allocated(Scope, _recording=None, scope_id=0)
