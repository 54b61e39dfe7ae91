"""A2: re-encoding a decoded struct costs O(depth^2): 357 bytes nested 100 deep.

Run from the repository root: python fuzz/crashes/A2-repro.py
"""
import sys, time
sys.path[:0] = [".", "tests"]
import codec
from schemas import everything_pb2

cls = codec.struct(everything_pb2.AllTypes)
for depth in (25, 50, 100):
    payload = b""
    for _ in range(depth):
        payload = b"\x92\x08" + codec.varint.encode(len(payload)) + payload  # field 130
    message = codec.decode(cls, payload)
    start = time.perf_counter()
    codec.encode(message)
    print(f"depth {depth}: {len(payload)} B, encode {1e3 * (time.perf_counter() - start):.1f} ms")
