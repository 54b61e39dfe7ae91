"""Framed streams into Arrow and back: codec.arrow beside ptars and protarrow, interleaved.

Run from the repository root with ``python benches/arrow_columns.py [rounds] [messages]``
(1,000 messages a workload unless given; each is read as one batch), or
``python benches/arrow_columns.py --memory [megabytes]`` for the peak memory of reading a
file of W3 records that large a batch at a time (tracemalloc sees the column buffers).

Each round times every peer of every row three times running, as
``interleaved_structs.py`` does, the peers in an order drawn afresh each round (seeded,
so a run repeats). What ran just before weighs on the first of the three: protarrow
leaves the caches cold (about 50 µs more for every peer's next call) and the collector
busy, and a fixed order, even rotated, would put the same peer after it every round.
A row's figures are each peer's minimum (and median) over the rounds, and their ratios
to codec's (> 1: codec is faster). The workloads are W1's samples, W3's records and the
spans of W4's OTLP requests, framed. The peers are used as well as a careful user can:

* ptars (Rust): ``list_to_record_batch`` of the payloads already split (its best
  case: no framing to read), and ``read_size_delimited_file`` of the framed file;
* protarrow: ``messages_to_record_batch`` of the messages, which it needs parsed
  (upb's ``FromString``, timed with it); recursive types are skipped, as it asks;
* codec: ``codec.arrow.read_table`` of the framed bytes, and of the framed file.

The way back (the rows named "..., encode") starts from each peer's own batch:

* ptars: ``record_batch_to_array``, the payloads as one binary array (its best
  case: no framing to write);
* protarrow: ``record_batch_to_messages``, then each message's
  ``SerializeToString``, the bytes a user of it would write;
* codec: ``codec.arrow.write_frames`` into a warm ``FrameEncoder``, framed.

Every peer's table has the workload's rows, and each encode gives a payload a
row; codec's rows and bytes are checked against struct decoding and encoding
by the tests (tests/test_arrow.py, tests/test_arrow_encode.py), not here.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _root  # noqa: F401  (the repository root on sys.path, for peerbench)
import otlp
import peers
import protarrow
import ptars
from jobs import best_encode

import codec
import codec.arrow
import peerbench


def _spans(requests: int) -> list[Any]:
    return [
        span
        for request in otlp.requests(requests)
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]


def _workloads(messages: int) -> dict[str, list[Any]]:
    """The workloads, of about ``messages`` messages each (OTLP: 40 spans a request)."""
    return {
        "W1 samples": peers.sample_corpus(messages).messages,
        "W3 records": peerbench.records(messages),
        "OTLP spans": _spans(max(1, messages // 40)),
    }


SKIP_RECURSIVE = protarrow.ProtarrowConfig(skip_recursive_messages=True)


def _jobs(messages: list[Any], directory: Path) -> dict[str, Callable[[], Any]]:
    cls = type(messages[0])
    struct = codec.struct(cls)
    payloads = [message.SerializeToString() for message in messages]
    stream = bytes(best_encode(messages))
    path = directory / f"{cls.DESCRIPTOR.name}.bin"
    path.write_bytes(stream)
    handler = ptars.HandlerPool([cls.DESCRIPTOR.file]).get_for_message(cls.DESCRIPTOR)

    def codec_file() -> Any:
        with path.open("rb") as source:
            return codec.arrow.read_table(source, struct)

    def protarrow_parsed() -> Any:
        parsed = [cls.FromString(payload) for payload in payloads]
        return protarrow.messages_to_record_batch(parsed, cls, config=SKIP_RECURSIVE)

    jobs = {
        "codec": lambda: codec.arrow.read_table(stream, struct),
        "codec file": codec_file,
        "ptars": lambda: handler.list_to_record_batch(payloads),
        "ptars file": lambda: handler.read_size_delimited_file(str(path)),
        "protarrow": protarrow_parsed,
    }
    for peer, job in jobs.items():
        assert job().num_rows == len(messages), peer
    return jobs


def _encode_jobs(messages: list[Any]) -> dict[str, Callable[[], Any]]:
    cls = type(messages[0])
    struct = codec.struct(cls)
    stream = bytes(best_encode(messages))
    table = codec.arrow.read_table(stream, struct)
    handler = ptars.HandlerPool([cls.DESCRIPTOR.file]).get_for_message(cls.DESCRIPTOR)
    ptars_batch = handler.list_to_record_batch(
        [message.SerializeToString() for message in messages]
    )
    protarrow_batch = protarrow.messages_to_record_batch(messages, cls, config=SKIP_RECURSIVE)
    encoder = codec.FrameEncoder()

    def codec_write() -> Any:
        encoder.clear()
        codec.arrow.write_frames(encoder, table, struct)
        return encoder

    def protarrow_write() -> Any:
        return [
            m.SerializeToString() for m in protarrow.record_batch_to_messages(protarrow_batch, cls)
        ]

    jobs = {
        "codec": codec_write,
        "ptars": lambda: handler.record_batch_to_array(ptars_batch),
        "protarrow": protarrow_write,
    }
    assert bytes(codec_write().getbuffer()) == stream
    assert len(jobs["ptars"]()) == len(jobs["protarrow"]()) == len(messages)
    return jobs


def main(rounds: int, messages: int) -> None:
    if not codec.COMPILED:
        sys.exit("arrow_columns.py times the compiled core: build it first")
    workloads = _workloads(messages)
    with tempfile.TemporaryDirectory() as directory:
        rows = {name: _jobs(batch, Path(directory)) for name, batch in workloads.items()}
        for name, batch in workloads.items():
            rows[f"{name}, encode"] = _encode_jobs(batch)
        times: dict[tuple[str, str], list[float]] = {}
        draw = random.Random(rounds)
        for _ in range(rounds):
            for row, jobs in rows.items():
                order = list(jobs)
                draw.shuffle(order)  # none always follows the same peer (see the docstring)
                for peer in order:
                    for _ in range(3):
                        start = time.perf_counter()
                        jobs[peer]()
                        times.setdefault((row, peer), []).append(time.perf_counter() - start)
    print(f"{rounds} rounds; each peer's min (median) in µs, then its time ÷ codec's")
    for row, jobs in rows.items():
        low = {peer: min(times[row, peer]) * 1e6 for peer in jobs}
        mid = {peer: statistics.median(times[row, peer]) * 1e6 for peer in jobs}
        count = len(workloads[row.removesuffix(", encode")])
        print(f"{row} ({count} messages)")
        for peer in jobs:
            print(
                f"  {peer:11} {low[peer]:8.0f} ({mid[peer]:.0f})"
                f"  {low[peer] / low['codec']:5.2f} ({mid[peer] / mid['codec']:.2f})"
            )


def memory(megabytes: int) -> None:
    """Peak traced memory while a file of ``megabytes`` of framed W3 records is read in
    batches, each dropped once counted, as a query engine consumes them."""
    records = peerbench.records(1000)
    chunk = bytes(best_encode(records))
    struct = codec.struct(type(records[0]))
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "records.bin"
        with path.open("wb") as sink:
            for _ in range(max(1, megabytes * 2**20 // len(chunk))):
                sink.write(chunk)
        size = path.stat().st_size
        tracemalloc.start()
        rows = 0
        start = time.perf_counter()
        with path.open("rb") as source:
            for batch in codec.arrow.read_batches(source, struct):
                rows += batch.num_rows
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    print(
        f"{size / 2**20:.0f} MiB, {rows} rows in {seconds:.2f} s:"
        f" peak traced memory {peak / 2**20:.1f} MiB ({peak / size:.3f} of the file)"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--memory"]:
        memory(int(sys.argv[2]) if len(sys.argv) > 2 else 1024)
    else:
        main(
            int(sys.argv[1]) if len(sys.argv) > 1 else 15,
            int(sys.argv[2]) if len(sys.argv) > 2 else 1000,
        )
