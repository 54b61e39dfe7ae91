"""Baselines and peers that every benchmark file times next to codec, in the same run.

Strategy: each peer is one small function over a whole batch of messages (or
payloads, or a stream of frames), so its call overhead is amortised and a
benchmark divides by ``len(batch)`` for a per-message time (record it as
``benchmark.extra_info["ops"]``, see ``conftest.py``). Nothing here is timed
on its own: benchmark files call these functions inside ``benchmark(...)``.

The peers that need nothing but protobuf live in ``jobs.py``, with codec's
way of doing each job, which ``ratios.py`` (``python -m codec bench``) times
too; they are re-exported here:

* the naive framed encode loop (``SerializeToString`` + ``_VarintBytes`` +
  ``bytearray +=``) and its prefix+concat half for ready payloads;
* upb framed at its best: one-byte prefixes from a table and an inline one-
  or two-byte prefix read (``best_encode``, ``best_decode``);
* the naive frame split loop (``_DecodeVarint32`` + slicing) and the naive
  typed decode (split + ``ParseFromString``);
* upb ``SerializeToString()`` alone and ``ParseFromString()`` alone.

Defined here, as they need more than the package does:

* ``delimited-protobuf`` 1.0 (its API is ``delimited_protobuf.write(stream,
  msg)`` and ``read(stream, cls)`` over a ``BytesIO``; ``write`` calls
  ``ByteSize()`` then ``SerializeToString()``, so upb serializes twice);
* msgspec's msgpack ``Encoder.encode_into`` of the equivalent tuple, the
  speed reference.

Test data comes from :func:`sample_corpus` (``jobs.py``): ``n``
``peerbench.Sample`` records (~35 bytes each, like ``peerbench.sample()``)
with varied, seeded values, their payloads, their tuples and their
naive-framed stream.

Run the benchmarks with ``pytest benches/ --benchmark-only`` from the repo root.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import _root  # noqa: F401  (the repository root on sys.path, for peerbench)
import delimited_protobuf  # type: ignore[import-untyped]
import msgspec
from jobs import (
    Corpus,
    SampleTuple,
    best_decode,
    best_encode,
    naive_decode,
    naive_encode,
    naive_prefix_concat,
    naive_split,
    parse_only,
    sample_corpus,
    serialize_only,
)

from peerbench import Sample, sample

__all__ = [
    "Corpus",
    "Sample",
    "best_decode",
    "best_encode",
    "delimited_decode",
    "delimited_encode",
    "msgspec_encode_into",
    "naive_decode",
    "naive_encode",
    "naive_prefix_concat",
    "naive_split",
    "parse_only",
    "sample",
    "sample_corpus",
    "serialize_only",
]


def delimited_encode(messages: Sequence[Any]) -> bytes:
    """delimited-protobuf framed encode (ByteSize + SerializeToString) into a BytesIO."""
    stream = io.BytesIO()
    for message in messages:
        delimited_protobuf.write(stream, message)
    return stream.getvalue()


def msgspec_encode_into(
    records: Sequence[SampleTuple], encoder: msgspec.msgpack.Encoder
) -> bytearray:
    """msgspec msgpack Encoder.encode_into of each tuple, appended to one bytearray."""
    out = bytearray()
    encode_into = encoder.encode_into
    for record in records:
        encode_into(record, out, -1)
    return out


def delimited_decode(stream: bytes, message_class: Any = Sample) -> list[Any]:
    """delimited-protobuf typed decode: read() from a BytesIO until it returns None."""
    # read() also returns None for an empty (0-byte) message; Samples are never empty.
    source = io.BytesIO(stream)
    messages = []
    read = delimited_protobuf.read
    while (message := read(source, message_class)) is not None:
        messages.append(message)
    return messages
