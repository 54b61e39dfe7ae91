"""Helpers of the misuse tests: values that call back into the codec, threads that race."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable


class Reentrant:
    """A number whose ``__index__`` first runs ``action``, noting what it raised each time."""

    def __init__(self, value: int, action: Callable[[], object]) -> None:
        self.value = value
        self.action = action
        self.outcomes: list[str] = []

    def __index__(self) -> int:
        try:
            self.action()
        except RuntimeError as exc:
            self.outcomes.append(str(exc))
        else:
            self.outcomes.append("done")
        return self.value


def race(*targets: Callable[[], object]) -> None:
    """Run each target in a thread of its own, switching threads as often as possible."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=target) for target in targets]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)


class Overlap:
    """Two threads on one object whose calls are made to overlap at least once.

    The slow side calls :meth:`pause` from inside its call (a value's
    ``__index__``): the first time, it waits until the other side has tried a
    call; every time, it yields the GIL. The other side runs :meth:`tries`
    once the slow side is inside, until it has finished. Calls refused with
    ``RuntimeError`` are noted in ``refused``.
    """

    def __init__(self) -> None:
        self.inside = threading.Event()
        self.tried = threading.Event()
        self.finished = threading.Event()
        self.refused: list[str] = []

    def pause(self) -> None:
        if not self.inside.is_set():
            self.inside.set()
            self.tried.wait(10)
        time.sleep(0)

    def tries(self, call: Callable[[int], object], done: list[object]) -> None:
        """``call(i)`` for i = 0, 1, ...; what each call that returned gives goes to ``done``."""
        self.inside.wait(10)
        for i in range(20_000):
            try:
                result = call(i)
            except RuntimeError as exc:
                self.refused.append(str(exc))
            else:
                done.append(result)
            self.tried.set()
            if self.finished.is_set():
                return
