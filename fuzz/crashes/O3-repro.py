"""O3: a complete frame not yet taken defers the check of the next prefix.

Run from the repository root: python fuzz/crashes/O3-repro.py
"""
import sys
sys.path[:0] = ["."]
import codec

decoder = codec.FrameDecoder()  # max_frame_size 4 MiB
decoder.feed(b"\x01a" + codec.varint.encode(2**40))  # a frame, then a 1 TiB prefix
for _ in range(100):
    decoder.feed(b"x" * 100_000)  # accepted: the prefix is not looked at yet
print("buffered", decoder.buffered, "bytes behind a prefix declaring 2**40")
