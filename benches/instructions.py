"""One struct workload in a loop, for counting its instructions under callgrind.

Run from the repository root::

    PYTHONHASHSEED=0 valgrind --tool=callgrind python benches/instructions.py W2-encode 50
    PYTHONHASHSEED=0 valgrind --tool=callgrind python benches/instructions.py W2-encode 0

and divide the difference of the two totals by the count and by the workload's
items (W1 and W3: 1,000 records a batch; W2: 1,000 spans a message; W4: 100
OTLP requests of 40 spans, ``W4-read`` reading every field of them decoded;
wire-writer: 3,000 fields; packed-columns: 20 numpy columns of 1,000 sint64
written and read back; arrow-read-*: 1,000 framed messages into an Arrow table,
for which ``--toggle-collect=__pyx_f_5codec_5arrow_9_builders__rows``
counts the column walk alone; arrow-write-*: that table written back, framed, into a
warm ``FrameEncoder``; construct: one struct). ``W2-encode-upb`` is upb's
``SerializeToString`` of the same trace; the W1 rows frame the same records as
structs, as pb2 messages, and as payloads (``encode`` and ``write``), and
``W1-decode`` reads them back through a ``FrameDecoder`` of their struct class. Compare
trees that were each compiled afresh: objects left from an earlier build of
moved modules made every row 5-27% slower here. For packed-columns set
``OPENBLAS_NUM_THREADS=1``: numpy's spinning BLAS threads otherwise add up to
17% of noise to the count.
Instruction counts do not move with the load of a shared machine, where
timings can move by a factor of two; a change of a few percent shows. A fixed
hash seed matters: with a random one, the interpreter's start-up differs from
run to run by enough to move a W2 figure at 20 runs by about 3%.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _root  # noqa: F401  (the repository root on sys.path, for peerbench)
import peers

import codec
import peerbench


def _w2_encode() -> Callable[[], object]:
    trace = codec.from_pb2(peerbench.trace(1000))
    return lambda: codec.encode(trace)


def _w2_encode_upb() -> Callable[[], object]:
    trace = peerbench.trace(1000)
    return trace.SerializeToString  # type: ignore[no-any-return]


def _w3_encode(deterministic: bool = False) -> Callable[[], object]:
    records = [codec.from_pb2(m) for m in peerbench.records(1000)]
    encoder = codec.FrameEncoder(deterministic=deterministic)

    def batch() -> None:
        encoder.clear()
        for record in records:
            encoder.encode(record)

    return batch


def _w3_decode() -> Callable[[], object]:
    records = [codec.from_pb2(m) for m in peerbench.records(1000)]
    data = [codec.encode(m) for m in records]
    decoder = codec.Decoder(type(records[0]))

    def batch() -> None:
        for message in data:
            decoder.decode(message)  # dropped at once, as a reader of a stream would

    return batch


def _w2_decode() -> Callable[[], object]:
    data = codec.encode(codec.from_pb2(peerbench.trace(1000)))
    cls = codec.struct(type(peerbench.trace(1)))
    return lambda: codec.decode(cls, data)


def _w2_read() -> Callable[[], object]:
    """Read a sub-message, a repeated field and a scalar of each of 1,000 spans."""
    spans = list(codec.from_pb2(peerbench.trace(1000)).spans)

    def batch() -> None:
        for span in spans:
            span.window  # noqa: B018
            span.tags  # noqa: B018
            span.name  # noqa: B018

    return batch


def _framed(payloads: list[object], write: bool = False) -> Callable[[], object]:
    """A warm FrameEncoder taking every payload (encode, or write for raw buffers)."""
    encoder = codec.FrameEncoder()
    put = encoder.write if write else encoder.encode

    def batch() -> None:
        encoder.clear()
        for payload in payloads:
            put(payload)

    return batch


def _w4_encode() -> Callable[[], object]:
    import otlp

    requests = [codec.from_pb2(request) for request in otlp.requests(100)]
    encoder = codec.FrameEncoder()

    def batch() -> None:
        encoder.clear()
        for request in requests:
            encoder.encode(request)

    return batch


def _w4_encode_upb() -> Callable[[], object]:
    """upb's side of W4's encode: the same 100 requests, framed at its best."""
    import otlp
    from jobs import best_encode

    requests = otlp.requests(100)
    return lambda: best_encode(requests)


def _w4_decode() -> Callable[[], object]:
    import otlp

    data = [request.SerializeToString() for request in otlp.requests(100)]
    decoder = codec.Decoder(codec.struct(type(otlp.requests(1)[0])))

    def batch() -> None:
        for message in data:
            decoder.decode(message)

    return batch


def _w4_read() -> Callable[[], object]:
    """Every field of 100 decoded OTLP requests read, as W4's decode + read row reads them."""
    import otlp

    decoder = codec.Decoder(codec.struct(type(otlp.requests(1)[0])))
    decoded = [decoder.decode(request.SerializeToString()) for request in otlp.requests(100)]
    return lambda: otlp.read_requests(decoded)


def _w1_frame_struct() -> Callable[[], object]:
    return _framed([codec.from_pb2(m) for m in peerbench.samples(1000)])


def _w1_decode() -> Callable[[], object]:
    """The framed W1 stream through a FrameDecoder of its struct class, into a list."""
    from jobs import codec_decode, sample_corpus

    corpus = sample_corpus(1000)
    struct = codec.struct(type(corpus.messages[0]))
    return lambda: codec_decode(corpus.stream, struct)


def _w1_frame_pb2() -> Callable[[], object]:
    return _framed(list(peerbench.samples(1000)))


def _w1_frame_bytes() -> Callable[[], object]:
    return _framed([m.SerializeToString() for m in peerbench.samples(1000)])


def _w1_write() -> Callable[[], object]:
    return _framed([m.SerializeToString() for m in peerbench.samples(1000)], write=True)


def _wire_writer() -> Callable[[], object]:
    encoder = codec.FrameEncoder()

    def batch() -> None:
        encoder.clear()
        writer = codec.wire.WireWriter(encoder)
        for i in range(1000):
            writer.int64(1, i)
            writer.string(2, "name")
            writer.sint32(3, -i)

    return batch


def _packed_columns() -> Callable[[], object]:
    import numpy

    column = numpy.arange(-500, 500, dtype=numpy.int64) * 1000
    encoder = codec.FrameEncoder()

    def batch() -> None:
        encoder.clear()
        writer = codec.wire.WireWriter(encoder)
        for _ in range(20):
            writer.packed(1, "sint64", column)
        reader = codec.wire.WireReader(bytes(encoder.getbuffer()))
        for _, _, value in reader:
            reader.packed(value, "sint64")

    return batch


def _arrow_stream(workload: str) -> tuple[type, bytes]:
    """The struct class and framed stream of 1,000 messages (arrow_columns.py's workloads)."""
    import otlp
    from jobs import best_encode, sample_corpus

    if workload == "W1":
        messages = sample_corpus(1000).messages
    elif workload == "W3":
        messages = peerbench.records(1000)
    else:  # the spans of 25 OTLP requests
        messages = [
            span
            for request in otlp.requests(25)
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]
    return codec.struct(type(messages[0])), bytes(best_encode(messages))


def _arrow_read(workload: str) -> Callable[[], object]:
    """codec.arrow.read_table of the workload's 1,000 framed messages."""
    import codec.arrow

    struct, stream = _arrow_stream(workload)
    return lambda: codec.arrow.read_table(stream, struct)


def _arrow_write(workload: str) -> Callable[[], object]:
    """codec.arrow.write_frames of the workload's 1,000 messages read as a table."""
    import codec.arrow

    struct, stream = _arrow_stream(workload)
    table = codec.arrow.read_table(stream, struct)
    encoder = codec.FrameEncoder()

    def batch() -> None:
        encoder.clear()
        codec.arrow.write_frames(encoder, table, struct)

    return batch


def _construct() -> Callable[[], object]:
    sample = codec.struct(peers.Sample)
    return lambda: sample(ts_ns=1, scope_id=2, value=3, name="x")


WORKLOADS = {
    "W1-frame-struct": _w1_frame_struct,
    "W1-frame-pb2": _w1_frame_pb2,
    "W1-frame-bytes": _w1_frame_bytes,
    "W1-decode": _w1_decode,
    "W1-write": _w1_write,
    "wire-writer": _wire_writer,
    "packed-columns": _packed_columns,
    "W2-encode": _w2_encode,
    "W2-encode-upb": _w2_encode_upb,
    "W2-decode": _w2_decode,
    "W2-read": _w2_read,
    "W3-encode": _w3_encode,
    "W3-encode-deterministic": lambda: _w3_encode(True),
    "W3-decode": _w3_decode,
    "W4-encode": _w4_encode,
    "W4-encode-upb": _w4_encode_upb,
    "W4-decode": _w4_decode,
    "W4-read": _w4_read,
    "arrow-read-W1": lambda: _arrow_read("W1"),
    "arrow-read-W3": lambda: _arrow_read("W3"),
    "arrow-read-OTLP-spans": lambda: _arrow_read("OTLP"),
    "arrow-write-W1": lambda: _arrow_write("W1"),
    "arrow-write-W3": lambda: _arrow_write("W3"),
    "arrow-write-OTLP-spans": lambda: _arrow_write("OTLP"),
    "construct": _construct,
}


def main(name: str, count: int) -> None:
    job = WORKLOADS[name]()
    for _ in range(count):
        job()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
