"""Framed streams for the Arrow tests: the schemas' roots they draw from, and OTLP.

Shared by ``test_arrow.py`` (streams into columns) and ``test_arrow_encode.py``
(columns back into streams).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import codec

# Every kind of field, maps of each key type, oneofs, a type inside itself (AllTypes in
# its own map, Tree in Tree), proto2 presence, closed enums and groups.
ROOTS = ["everything.AllTypes", "everything.Tree", "legacy.Record", "legacy.WithGroups"]


def framed(payloads: list[bytes]) -> bytes:
    """The payloads as one stream of frames."""
    encoder = codec.FrameEncoder()
    for payload in payloads:
        encoder.encode(payload)
    return bytes(encoder.getbuffer())


def otlp_requests(count: int = 3) -> list[Any]:
    """``count`` of the benchmarks' OTLP ExportTraceServiceRequests (pb2)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benches"))
    try:
        import otlp
    finally:
        sys.path.pop(0)
    return otlp.requests(count)  # type: ignore[no-any-return]
