"""The jobs every benchmark times, each one small function over a whole batch.

Strategy: each job is done two ways, protobuf's own (the peers codec is
measured against: the naive framing loops, upb framed at its best with a
prefix table and an inline prefix read, ``SerializeToString`` or
``ParseFromString`` alone) and codec's, each as one function over a whole
batch (:class:`Corpus`), so call overhead is amortised and a time divides by
the batch size. Nothing here is timed on its own: the bench files call these
functions inside ``benchmark(...)`` and ``ratios.py`` (``python -m codec
bench``) times :func:`ratios.bench_cases` of them with ``timeit``. Only
protobuf and codec are needed; the peers that need more (delimited-protobuf,
msgspec) are in ``peers.py``, which re-exports these.

The records are ``peerbench``'s (``peerbench.py`` at the repository root, on
``sys.path`` through ``_root.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import _root  # noqa: F401  (the repository root on sys.path, for peerbench)
from google.protobuf.internal.decoder import _DecodeVarint32  # type: ignore[attr-defined]
from google.protobuf.internal.encoder import _VarintBytes  # type: ignore[attr-defined]

import codec
from peerbench import Sample, samples

# --- the peers: protobuf's own way of doing each job ------------------------------------


def naive_encode(messages: Sequence[Any]) -> bytearray:
    """Naive framed encode: SerializeToString + _VarintBytes(len) + bytearray += of both."""
    out = bytearray()
    for message in messages:
        payload = message.SerializeToString()
        out += _VarintBytes(len(payload))
        out += payload
    return out


# A one-byte prefix for each size below 128, made once: most frames need no _VarintBytes call.
_ONE_BYTE_PREFIXES = [bytes([size]) for size in range(128)]


def best_encode(messages: Sequence[Any], deterministic: bool = False) -> bytearray:
    """upb's framed encode at its best: a one-byte prefix from a table, ``_VarintBytes`` past it.

    What a careful user writes; ``deterministic`` is passed to ``SerializeToString``.
    """
    out = bytearray()
    prefixes = _ONE_BYTE_PREFIXES
    for message in messages:  # a keyword costs upb a slower call: passed only when asked
        if deterministic:
            payload = message.SerializeToString(deterministic=True)
        else:
            payload = message.SerializeToString()
        size = len(payload)
        out += prefixes[size] if size < 128 else _VarintBytes(size)
        out += payload
    return out


def best_decode(stream: bytes, message_class: Any = Sample) -> list[Any]:
    """upb's framed decode at its best: a one- or two-byte prefix read inline, a slice, FromString.

    Longer prefixes go through ``_DecodeVarint32``; what a careful user writes.
    """
    messages: list[Any] = []
    append = messages.append
    parse = message_class.FromString
    pos = 0
    end = len(stream)
    while pos < end:
        first = stream[pos]
        if first < 0x80:
            size = first
            pos += 1
        elif stream[pos + 1] < 0x80:
            size = (first & 0x7F) | stream[pos + 1] << 7
            pos += 2
        else:
            size, pos = _DecodeVarint32(stream, pos)
        append(parse(stream[pos : pos + size]))
        pos += size
    return messages


def naive_prefix_concat(payloads: Sequence[bytes]) -> bytearray:
    """Naive framing of ready payloads: _VarintBytes(len) + bytearray += of both."""
    out = bytearray()
    for payload in payloads:
        out += _VarintBytes(len(payload))
        out += payload
    return out


def serialize_only(messages: Sequence[Any]) -> None:
    """upb SerializeToString() alone, result discarded: the floor for framing pb2 messages."""
    for message in messages:
        message.SerializeToString()


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
    return parse_only(naive_split(stream), message_class)


def parse_only(payloads: Sequence[bytes], message_class: Any = Sample) -> list[Any]:
    """upb message_class() + ParseFromString() alone on ready payloads: the decode floor."""
    messages = []
    for payload in payloads:
        message = message_class()
        message.ParseFromString(payload)
        messages.append(message)
    return messages


# --- codec doing the same jobs ------------------------------------------------------------


def codec_encode(encoder: codec.FrameEncoder, batch: Sequence[Any]) -> codec.FrameEncoder:
    """FrameEncoder.encode of each message (pb2 or struct) into one warm, cleared encoder."""
    return _each_into(encoder, encoder.encode, batch)


def codec_write(encoder: codec.FrameEncoder, payloads: Sequence[bytes]) -> codec.FrameEncoder:
    """FrameEncoder.write of each ready payload into one warm, cleared encoder."""
    return _each_into(encoder, encoder.write, payloads)


def _each_into(
    encoder: codec.FrameEncoder, put: Callable[[Any], object], items: Sequence[Any]
) -> codec.FrameEncoder:
    """Clear ``encoder``, then ``put`` (one of its bound methods) each item into it."""
    encoder.clear()
    for item in items:
        put(item)
    return encoder


def codec_split(stream: bytes) -> list[memoryview]:
    """A FrameDecoder fed the whole stream, frames collected as memoryviews."""
    decoder = codec.FrameDecoder()
    decoder.feed(stream)
    return list(decoder)


def codec_split_copy(stream: bytes) -> list[bytes]:
    """A FrameDecoder(copy=True) fed the whole stream, frames collected as bytes (as naive)."""
    decoder = codec.FrameDecoder(copy=True)
    decoder.feed(stream)
    return list(decoder)


def codec_decode(stream: bytes, message_type: Any) -> list[Any]:
    """A FrameDecoder(message_type=...) fed the whole stream, messages collected."""
    decoder = codec.FrameDecoder(message_type=message_type)
    decoder.feed(stream)
    return list(decoder)


# --- the corpus -----------------------------------------------------------------------------

# (ts_ns, scope_id, value, name): the tuple msgspec encodes in place of a Sample.
SampleTuple = tuple[int, int, int, str]


@dataclass(frozen=True)
class Corpus:
    """A batch of Sample messages in every form the peers take."""

    messages: list[Any]  # Sample instances
    payloads: list[bytes]  # their SerializeToString()
    records: list[SampleTuple]  # the equivalent tuples, for msgspec
    stream: bytes  # the naive-framed concatenation: varint(len) + payload, per message


def sample_corpus(n: int = 1000, seed: int = 2024) -> Corpus:
    """``n`` Sample messages with varied, deterministic values, and their framed stream."""
    messages = samples(n, seed)
    payloads = [message.SerializeToString() for message in messages]
    records = [(m.ts_ns, m.scope_id, m.value, m.name) for m in messages]
    return Corpus(messages, payloads, records, bytes(naive_prefix_concat(payloads)))
