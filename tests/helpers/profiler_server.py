"""Test bodies against a profile server on 127.0.0.1, and frames checked by their names.

``run`` runs a coroutine in a fresh event loop with a time limit; ``play``
records one frame of named top-level scopes; ``resolved`` reads a frame's
scope names back through a receiver's registry; ``ORDERS`` are the
registration orders of two producers, one after the other (a restart).

Hostile viewers are plain sockets: ``narrow_listener`` makes a server's
connections keep little in the kernel, so that what a viewer does not read
stays in the server's transport; ``raw_viewer`` connects one that reads
nothing until ``read_to_end``; ``eventually`` waits for a condition.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable, Coroutine, Sequence
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


# Kernel buffers of hostile viewers' connections: a keyframe of REGISTERED scopes is
# several times what they hold, so most of it waits in the server's transport.
SMALL_BUFFER = 4096
REGISTERED = 2000


def register(profiler: Profiler, count: int = REGISTERED) -> int:
    """Register ``count`` scopes; returns the size of the profiler's keyframe then."""
    for i in range(count):
        profiler.registry.add_scope(f"registered scope {i}")
    return len(profiler.keyframe())


def narrow_listener() -> socket.socket:
    """A listening socket on 127.0.0.1 whose connections inherit a small send buffer."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SMALL_BUFFER)
    sock.bind((HOST, 0))
    sock.listen()
    sock.setblocking(False)
    return sock


async def raw_viewer(port: int) -> socket.socket:
    """A plain socket connected to ``port`` with a small receive buffer, not reading."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_BUFFER)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (HOST, port))
    return sock


async def read_to_end(sock: socket.socket, timeout: float = 2.0) -> int:
    """The bytes ``sock`` receives until the end or a reset; TimeoutError after ``timeout``."""
    loop = asyncio.get_running_loop()
    received = 0
    async with asyncio.timeout(timeout):
        while True:
            try:
                chunk = await loop.sock_recv(sock, 65536)
            except ConnectionResetError:
                return received
            if not chunk:
                return received
            received += len(chunk)


async def eventually(condition: Callable[[], bool], timeout: float = 2.0) -> None:
    """Return once ``condition()`` holds; ``AssertionError`` if it does not within ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true in time"
        await asyncio.sleep(0.005)
