"""L1, fairness: a good client's round trips while peers flood a ``codec.aio`` server.

Usage: ``python fuzz/figures/fairness.py`` (about 20 s)

A ``codec.aio`` echo server (requests are echoed, empty frames are
heartbeats) and, in another process (``_fairness_peers.py``), 0, 3 and 5
peers each sending 64 KiB of empty frames every 0.5 s for 6 s, while a good
client sends a 21-byte frame and waits for its echo every 5 ms: the good
client's round trips, p50, p99 and max.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import _common

import codec.aio

PEERS = Path(__file__).resolve().with_name("_fairness_peers.py")


async def run(floods: int, seconds: float) -> list[float]:
    """Round trips of a good client while ``floods`` peers send bursts of empty frames."""

    async def handler(reader: codec.aio.FramedReader[Any], writer: codec.aio.FramedWriter) -> None:
        async for message in reader:
            if message:  # requests are answered; empty frames are heartbeats
                writer.send(message)

    server = await codec.aio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    peers = await asyncio.create_subprocess_exec(
        sys.executable,
        str(PEERS),
        str(port),
        str(floods),
        str(seconds),
        stdout=asyncio.subprocess.PIPE,
    )
    output, _ = await peers.communicate()
    server.close()
    await server.wait_closed()
    return json.loads(output)  # type: ignore[no-any-return]


def main() -> None:
    _common.arguments(__doc__)
    print(
        "\n## a good client's round trips (a 21-byte frame echoed) while flooding peers each"
        " send 64 KiB of empty frames every 0.5 s (peers in another process)"
    )
    for floods in (0, 3, 5):
        rtts = sorted(asyncio.run(run(floods, 6.0)))
        p50 = rtts[len(rtts) // 2] * 1e3
        p99 = rtts[len(rtts) * 99 // 100] * 1e3
        print(
            f"  {floods} flooding peers: {len(rtts):>5} round trips, p50 {p50:7.2f} ms,"
            f" p99 {p99:7.2f} ms, max {rtts[-1] * 1e3:7.2f} ms"
        )


if __name__ == "__main__":
    main()
