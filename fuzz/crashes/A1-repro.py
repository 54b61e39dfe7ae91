"""A1: one 1 MiB frame of map<string, AllTypes> entries with distinct keys and no value.

Run from the repository root: python fuzz/crashes/A1-repro.py
Each 9-byte entry makes a whole AllTypes struct (~50 fresh lists and dicts) and
spends one element of the max_elements budget, so the default limits let a 4 MiB
frame cost ~1.7 GB.
"""
import sys, time
sys.path[:0] = [".", "tests"]
import codec
from schemas import everything_pb2

entries = bytearray()
i = 0
while len(entries) < 1024 * 1024:
    key = str(i).encode()
    entry = b"\x0a" + bytes([len(key)]) + key
    entries += b"\xc2\x06" + bytes([len(entry)]) + entry  # field 104, LEN
    i += 1
decoder = codec.FrameDecoder(message_type=codec.struct(everything_pb2.AllTypes))
start = time.perf_counter()
decoder.feed(codec.varint.encode(len(entries)) + bytes(entries))
message = decoder.next_frame()
rss = int(open("/proc/self/statm").read().split()[1]) * 4096
print(f"{len(message.m_string_self)} AllTypes from {len(entries)} bytes in "
      f"{time.perf_counter() - start:.1f} s; RSS {rss / 2**20:.0f} MiB")
