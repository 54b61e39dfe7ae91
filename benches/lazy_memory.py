"""Memory per decoded message: W4's OTLP requests kept decoded, codec eager and lazy beside upb.

Run from the repository root with ``python benches/lazy_memory.py [requests]``.

Each peer runs in a fresh process, which decodes the requests (framed bytes made once, in
the parent) and keeps every message; the figure is the growth of the process's resident
memory over the decode, per request. upb allocates from its own arenas, which tracemalloc
does not see, so resident memory is the measure that sees every peer. A lazy message keeps
its frame's bytes (here the ``bytes`` of each frame, not a copy) until its pending fields are
read; the "read" rows read every field first.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

CHILD = """
import gc, sys
sys.path.insert(0, {benches!r})
import otlp
import codec
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

def resident():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096

payloads = [request.SerializeToString() for request in otlp.requests({count})]
peer, read = {peer!r}, {read!r}
if peer == "upb":
    decode = ExportTraceServiceRequest.FromString
else:
    struct = codec.struct(ExportTraceServiceRequest)
    decode = codec.Decoder(struct, lazy=peer == "codec lazy").decode
gc.collect()
before = resident()
kept = [decode(payload) for payload in payloads]
if read:
    for message in kept:
        otlp.read_request(message)
gc.collect()
print((resident() - before) / len(kept))
"""


def per_request(peer: str, read: bool, count: int) -> float:
    script = CHILD.format(benches=str(Path(__file__).parent), count=count, peer=peer, read=read)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return float(done.stdout)


def main(count: int) -> None:
    size = len(__import__("otlp").requests(1)[0].SerializeToString())
    print(f"{count} requests of about {size} bytes, kept decoded; resident bytes per request")
    for peer in ("upb", "codec", "codec lazy"):
        for read in (False, True):
            figure = per_request(peer, read, count)
            print(f"{peer:11} {'read' if read else 'unread':7} {figure / 1024:8.1f} KiB")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
