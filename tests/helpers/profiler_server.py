"""Test bodies against a profile server on 127.0.0.1, and frames checked by their names.

``run`` runs a coroutine in a fresh event loop with a time limit; ``play``
records one frame of named top-level scopes; ``resolved`` reads a frame's
scope names back through a receiver's registry; ``ORDERS`` are the
registration orders of two producers, one after the other (a restart).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any

from codec.profiler import Frame, Profiler, Receiver

HOST = "127.0.0.1"
TIMEOUT = 10.0  # per test body


def run(body: Coroutine[Any, Any, Any]) -> Any:
    """``asyncio.run(body)``, failing with ``TimeoutError`` after ``TIMEOUT`` seconds."""

    async def bounded() -> Any:
        async with asyncio.timeout(TIMEOUT):
            return await body

    return asyncio.run(bounded())


def play(profiler: Profiler, names: Sequence[str]) -> int:
    """One frame of top-level scopes named ``names``, in order; returns its index."""
    for name in names:
        with profiler.scope(name):
            pass
    index = profiler.end_frame()
    assert index
    return index


def resolved(receiver: Receiver, frame: Frame) -> list[str]:
    """The scope names of a frame, in pre-order; raises for an undefined id."""
    return [
        receiver.registry.scope(int(scope_id)).name
        for track in frame.tracks
        for scope_id in track.scope_id
    ]


# Two producers' registration orders: the second shares names with the first, in
# another order, and adds one, so a scope id resolved against the wrong session's
# registry names the wrong scope.
ORDERS = (["alpha", "beta", "gamma"], ["gamma", "delta", "alpha", "beta"])
