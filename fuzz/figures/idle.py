"""C1, idle connections: what a ``codec.aio`` server keeps per connection once its peer is silent.

Usage: ``python fuzz/figures/idle.py``

Eight plain-socket peers (threads) connect to a ``codec.aio`` server whose
handler discards, or echoes, each frame; each peer sends nothing, one 4 MiB
frame, a 62 KB burst of 100-byte frames, or a slowloris prefix (4 MiB
declared, 100 bytes sent), reads the echo of its complete frames, then stays
connected and silent. Prints the tracemalloc bytes kept per connection
(server included) once all are idle.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import threading
import tracemalloc
from typing import Any

import _common
from _common import KiB, MiB

import codec
import codec.aio

IDLE_CONNECTIONS = 8


def scenarios() -> dict[str, bytes]:
    """What each peer sends before it falls silent, by name."""
    varint = codec.varint.encode
    return {
        "nothing": b"",
        "one 4 MiB frame": varint(4 * MiB) + bytes(4 * MiB),
        "a 62 KB burst of 100 B frames": (varint(100) + bytes(100)) * 615,
        "a slowloris prefix (4 MiB declared, 100 B sent)": varint(4 * MiB) + bytes(100),
    }


def frame_sizes(stream: bytes) -> list[int]:
    """The payload sizes of the complete frames of ``stream``."""
    decoder = codec.FrameDecoder()
    decoder.feed(stream)
    return [len(frame) for frame in decoder]


async def kept_per_connection(stream: bytes, echo: bool) -> int:
    """Traced bytes kept by ``IDLE_CONNECTIONS`` server connections once their peers are idle.

    Each peer is a blocking socket in a thread: it sends ``stream``, reads the
    echo of its complete frames if ``echo``, then stays connected and silent
    while the server's memory is measured.
    """
    sizes = frame_sizes(stream)
    echoed = sum(codec.varint.size(size) + size for size in sizes) if echo else 0
    taken = 0

    async def handler(reader: codec.aio.FramedReader[Any], writer: codec.aio.FramedWriter) -> None:
        nonlocal taken
        async for message in reader:
            if echo:
                writer.send(message)
            del message  # what the library keeps, not what the handler does
            taken += 1

    quiet = threading.Event()
    done: list[threading.Event] = []
    room = bytearray(64 * KiB)  # shared by the peers: its content is not looked at

    def peer(port: int, finished: threading.Event) -> None:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(stream)
            left = echoed
            while left:
                left -= sock.recv_into(room, min(left, len(room)))
            finished.set()
            quiet.wait()

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        server = await codec.aio.start_server(handler, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        threads = []
        for _ in range(IDLE_CONNECTIONS):
            finished = threading.Event()
            done.append(finished)
            thread = threading.Thread(target=peer, args=(port, finished), daemon=True)
            thread.start()
            threads.append(thread)
        while not all(event.is_set() for event in done) or taken < len(sizes) * len(threads):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)  # the last reads and flushes, then silence
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        quiet.set()
    server.close()
    await server.wait_closed()
    for thread in threads:
        thread.join()
    return kept // IDLE_CONNECTIONS


def main() -> None:
    _common.arguments(__doc__)
    print(
        f"\n## traced memory per idle codec.aio server connection ({IDLE_CONNECTIONS} peers,"
        " server included), once the peer has sent, then fallen silent"
    )
    for name, stream in scenarios().items():
        for echo in (False, True):
            if echo and not frame_sizes(stream):
                continue
            kept = asyncio.run(kept_per_connection(stream, echo))
            handler = "echo" if echo else "discard"
            print(f"  {name:48} {handler:8} {kept:>12,} B")


if __name__ == "__main__":
    main()
