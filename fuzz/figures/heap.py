"""D11, zero allocation: what warm encoders and decoders allocate, measured as the tests measure.

Usage: ``python fuzz/figures/heap.py``

Each figure is ``(net, peak)`` of one run after warm-up (``measure`` of
``tests/helpers/heap.py``: two warm-up runs, ``gc.collect()``, tracemalloc),
the method ``tests/test_heap.py`` asserts its bounds with: 10,000
``peerbench.Sample`` structs encoded into a warm ``FrameEncoder`` (and the
bare loop over them, for comparison); 100 ``peerbench.Blob`` structs of
1 KiB and of 1 MiB payloads; frames of 16 B, 1 KiB and 64 KiB (1 MiB of them,
at least 10) written into a warm encoder and split by a warm decoder; one
1 MiB pb2 ``Blob`` into a warm encoder, against the naive
``SerializeToString`` + ``_VarintBytes`` prefix + concatenation.
"""

from __future__ import annotations

import _common
from _common import KiB, MiB
from google.protobuf.internal.encoder import _VarintBytes  # type: ignore[attr-defined]

import codec
from peerbench import Blob
from tests.helpers.heap import encode_all, loop_only, measure, sample_structs

PAYLOAD = bytes(range(256)) * (MiB // 256)
BlobStruct = codec.struct(Blob)
STRUCTS = sample_structs()


def fmt(pair: tuple[int, int]) -> str:
    return f"net {pair[0]} B, peak {pair[1]} B"


def main() -> None:
    _common.arguments(__doc__)
    idle = measure(loop_only(codec.FrameEncoder(), STRUCTS))
    busy = measure(encode_all(codec.FrameEncoder(), STRUCTS))
    print(f"D11 10,000 warm struct encodes: {fmt(busy)} (the bare loop: {fmt(idle)})")
    small = measure(encode_all(codec.FrameEncoder(), [BlobStruct(data=PAYLOAD[:KiB])] * 100))
    large = measure(encode_all(codec.FrameEncoder(), [BlobStruct(data=PAYLOAD)] * 100))
    print(
        f"D11 100 struct encodes of 1 KiB payloads: {fmt(small)}; of 1 MiB payloads: {fmt(large)}"
    )
    for size in (16, KiB, 64 * KiB):
        payload = b"p" * size
        count = max(10, MiB // size)
        encoder = codec.FrameEncoder()

        def write(
            encoder: codec.FrameEncoder = encoder, payload: bytes = payload, count: int = count
        ) -> None:
            encoder.clear()
            for _ in range(count):
                encoder.write(payload)

        stream = (codec.varint.encode(size) + payload) * count
        decoder = codec.FrameDecoder()

        def split(decoder: codec.FrameDecoder = decoder, stream: bytes = stream) -> None:
            decoder.feed(stream)
            while (view := decoder.next_frame()) is not None:
                del view

        w, s = measure(write), measure(split)
        print(
            f"D11 {size} B frames x {count}: warm encoder write {fmt(w)} "
            f"({w[1] / count:.2f} B peak per frame); warm decoder split {fmt(s)} "
            f"({s[1] / count:.2f} B peak per frame)"
        )
    blob = Blob(data=PAYLOAD)
    encoder = codec.FrameEncoder()

    def encode_pb2() -> None:
        encoder.clear()
        encoder.encode(blob)

    def naive() -> bytes:
        serialized = blob.SerializeToString()
        return _VarintBytes(len(serialized)) + serialized

    print(
        f"D11 a 1 MiB pb2 message into a warm encoder: {fmt(measure(encode_pb2))} "
        f"(naive SerializeToString + prefix + concatenation: {fmt(measure(naive))})"
    )


if __name__ == "__main__":
    main()
