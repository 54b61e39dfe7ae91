"""Baselines and peers that every benchmark file times next to codec, in the same run.

Strategy: each peer is one small function over a whole batch of messages (or
payloads, or a stream of frames), so its call overhead is amortised and a
benchmark divides by ``len(batch)`` for a per-message time (record it as
``benchmark.extra_info["ops"]``, see ``conftest.py``). Nothing here is timed
on its own: benchmark files call these functions inside ``benchmark(...)``.

* the naive framed encode loop (``SerializeToString`` + ``_VarintBytes`` +
  ``bytearray +=``) and its prefix+concat half for ready payloads;
* the naive frame split loop (``_DecodeVarint32`` + slicing) and the naive
  typed decode (split + ``ParseFromString``);
* ``delimited-protobuf`` 1.0 (its API is ``delimited_protobuf.write(stream,
  msg)`` and ``read(stream, cls)`` over a ``BytesIO``; ``write`` calls
  ``ByteSize()`` then ``SerializeToString()``, so upb serializes twice);
* upb ``SerializeToString()`` alone and ``ParseFromString()`` alone;
* msgspec's msgpack ``Encoder.encode_into`` of the equivalent tuple, the
  speed reference.

Test data comes from :func:`sample_corpus`: ``n`` ``codec._peerbench.Sample``
records (~35 bytes each, like ``codec._peerbench.sample()``) with varied,
seeded values, their payloads, their tuples and their naive-framed stream.

Run the benchmarks with ``pytest benches/ --benchmark-only`` from the repo root.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import delimited_protobuf  # type: ignore[import-untyped]
import msgspec
from google.protobuf.internal.decoder import _DecodeVarint32  # type: ignore[attr-defined]
from google.protobuf.internal.encoder import _VarintBytes  # type: ignore[attr-defined]

from codec._peerbench import Sample, sample, samples

__all__ = [
    "Corpus",
    "Record",
    "Sample",
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

# (ts_ns, scope_id, value, name): the tuple msgspec encodes in place of a Sample.
Record = tuple[int, int, int, str]


@dataclass(frozen=True)
class Corpus:
    """A batch of Sample messages in every form the peers take."""

    messages: list[Any]  # Sample instances
    payloads: list[bytes]  # their SerializeToString()
    records: list[Record]  # the equivalent tuples, for msgspec
    stream: bytes  # the naive-framed concatenation: varint(len) + payload, per message


def sample_corpus(n: int = 1000, seed: int = 2024) -> Corpus:
    """``n`` Sample messages with varied, deterministic values, and their framed stream."""
    messages = samples(n, seed)
    payloads = [message.SerializeToString() for message in messages]
    records = [(m.ts_ns, m.scope_id, m.value, m.name) for m in messages]
    return Corpus(messages, payloads, records, bytes(naive_prefix_concat(payloads)))


# --- encode ----------------------------------------------------------------


def naive_encode(messages: Sequence[Any]) -> bytearray:
    """Naive framed encode: SerializeToString + _VarintBytes(len) + bytearray += of both."""
    out = bytearray()
    for message in messages:
        payload = message.SerializeToString()
        out += _VarintBytes(len(payload))
        out += payload
    return out


def naive_prefix_concat(payloads: Sequence[bytes]) -> bytearray:
    """Naive framing of ready payloads: _VarintBytes(len) + bytearray += of both."""
    out = bytearray()
    for payload in payloads:
        out += _VarintBytes(len(payload))
        out += payload
    return out


def delimited_encode(messages: Sequence[Any]) -> bytes:
    """delimited-protobuf framed encode (ByteSize + SerializeToString) into a BytesIO."""
    stream = io.BytesIO()
    for message in messages:
        delimited_protobuf.write(stream, message)
    return stream.getvalue()


def serialize_only(messages: Sequence[Any]) -> None:
    """upb SerializeToString() alone, result discarded: the floor for framing pb2 messages."""
    for message in messages:
        message.SerializeToString()


def msgspec_encode_into(records: Sequence[Record], encoder: msgspec.msgpack.Encoder) -> bytearray:
    """msgspec msgpack Encoder.encode_into of each tuple, appended to one bytearray."""
    out = bytearray()
    encode_into = encoder.encode_into
    for record in records:
        encode_into(record, out, -1)
    return out


# --- decode ----------------------------------------------------------------


def naive_split(stream: bytes) -> list[bytes]:
    """Naive frame split: _DecodeVarint32 for each prefix, then a bytes slice of the body."""
    frames = []
    pos = 0
    end = len(stream)
    while pos < end:
        size, pos = _DecodeVarint32(stream, pos)
        frames.append(stream[pos : pos + size])
        pos += size
    return frames


def naive_decode(stream: bytes, message_class: Any = Sample) -> list[Any]:
    """Naive typed decode: naive_split, then message_class() + ParseFromString per frame."""
    messages = []
    for payload in naive_split(stream):
        message = message_class()
        message.ParseFromString(payload)
        messages.append(message)
    return messages


def delimited_decode(stream: bytes, message_class: Any = Sample) -> list[Any]:
    """delimited-protobuf typed decode: read() from a BytesIO until it returns None."""
    # read() also returns None for an empty (0-byte) message; Samples are never empty.
    source = io.BytesIO(stream)
    messages = []
    read = delimited_protobuf.read
    while (message := read(source, message_class)) is not None:
        messages.append(message)
    return messages


def parse_only(payloads: Sequence[bytes], message_class: Any = Sample) -> list[Any]:
    """upb message_class() + ParseFromString() alone on ready payloads: the decode floor."""
    messages = []
    for payload in payloads:
        message = message_class()
        message.ParseFromString(payload)
        messages.append(message)
    return messages
