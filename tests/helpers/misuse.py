"""Helpers of the misuse tests: values that call back into the codec, threads that race."""

from __future__ import annotations

import sys
import threading
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
