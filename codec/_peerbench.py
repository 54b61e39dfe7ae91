"""The benchmark workloads, the peers codec is timed against, and the same-run ratio table.

One module for ``python -m codec bench`` and the pytest-benchmark suite of
``benches/``, so both time the same jobs the same way and print one table.

The records of ``peerbench.proto``, as google.protobuf classes built without
protoc: ``Sample`` is the ~35-byte telemetry record of the performance
targets (``uint64 ts_ns, uint32 scope_id, sint64 value, string name``);
``Event`` and ``Frame`` add nesting and a packed repeated field; ``Blob``
holds one large ``bytes`` field. ``Trace`` (of ``Span`` and ``Interval``)
and ``Record`` are the nested and the map-heavy workloads of the struct
benchmarks (W2, W3). The file descriptor is written out field by field here,
so neither the package nor its tests need ``protoc`` or generated ``_pb2``
files.

Strategy of the timed jobs: each peer (protobuf's own way of doing a job:
the naive framing loops, ``SerializeToString`` or ``ParseFromString``
alone) and each codec run is one small function over a whole batch
(:class:`Corpus`), so call overhead is amortised and a time divides by the
batch size. :func:`bench_cases` are the calls ``python -m codec bench``
times, each checked against its expected result first; :func:`measure`
times them with ``timeit``, in rounds interleaved with their group's
baseline; :func:`ratio_table` prints any same-run timings, ``benches/``'s
included (``benches/conftest.py``). Peers that need more than protobuf
(delimited-protobuf, msgspec) are in ``benches/peers.py``.
"""

from __future__ import annotations

import math
import platform
import random
import statistics
import timeit
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from google.protobuf import __version__ as protobuf_version
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.internal import api_implementation
from google.protobuf.internal.decoder import _DecodeVarint32  # type: ignore[attr-defined]
from google.protobuf.internal.encoder import _VarintBytes  # type: ignore[attr-defined]

import codec

_FIELD = descriptor_pb2.FieldDescriptorProto

# (message, [(field name, number, type, label, message type name or "")])
_MESSAGES = [
    (
        "Sample",
        [
            ("ts_ns", 1, _FIELD.TYPE_UINT64, _FIELD.LABEL_OPTIONAL, ""),
            ("scope_id", 2, _FIELD.TYPE_UINT32, _FIELD.LABEL_OPTIONAL, ""),
            ("value", 3, _FIELD.TYPE_SINT64, _FIELD.LABEL_OPTIONAL, ""),
            ("name", 4, _FIELD.TYPE_STRING, _FIELD.LABEL_OPTIONAL, ""),
        ],
    ),
    (
        "Event",
        [
            ("scope_id", 1, _FIELD.TYPE_UINT32, _FIELD.LABEL_OPTIONAL, ""),
            ("start_ns", 2, _FIELD.TYPE_UINT64, _FIELD.LABEL_OPTIONAL, ""),
            ("end_ns", 3, _FIELD.TYPE_UINT64, _FIELD.LABEL_OPTIONAL, ""),
            ("depth", 4, _FIELD.TYPE_UINT32, _FIELD.LABEL_OPTIONAL, ""),
        ],
    ),
    (
        "Frame",
        [
            ("index", 1, _FIELD.TYPE_UINT64, _FIELD.LABEL_OPTIONAL, ""),
            ("events", 2, _FIELD.TYPE_MESSAGE, _FIELD.LABEL_REPEATED, ".peerbench.Event"),
            ("starts", 3, _FIELD.TYPE_UINT64, _FIELD.LABEL_REPEATED, ""),
        ],
    ),
    ("Blob", [("data", 1, _FIELD.TYPE_BYTES, _FIELD.LABEL_OPTIONAL, "")]),
    # W2: one Trace of many Spans, each with 3 ints, a string, a packed list and a sub-message.
    (
        "Interval",
        [
            ("start", 1, _FIELD.TYPE_DOUBLE, _FIELD.LABEL_OPTIONAL, ""),
            ("end", 2, _FIELD.TYPE_DOUBLE, _FIELD.LABEL_OPTIONAL, ""),
        ],
    ),
    (
        "Span",
        [
            ("scope_id", 1, _FIELD.TYPE_UINT32, _FIELD.LABEL_OPTIONAL, ""),
            ("start_ns", 2, _FIELD.TYPE_UINT64, _FIELD.LABEL_OPTIONAL, ""),
            ("end_ns", 3, _FIELD.TYPE_UINT64, _FIELD.LABEL_OPTIONAL, ""),
            ("name", 4, _FIELD.TYPE_STRING, _FIELD.LABEL_OPTIONAL, ""),
            ("tags", 5, _FIELD.TYPE_UINT32, _FIELD.LABEL_REPEATED, ""),
            ("window", 6, _FIELD.TYPE_MESSAGE, _FIELD.LABEL_OPTIONAL, ".peerbench.Interval"),
        ],
    ),
    (
        "Trace",
        [
            ("index", 1, _FIELD.TYPE_UINT64, _FIELD.LABEL_OPTIONAL, ""),
            ("spans", 2, _FIELD.TYPE_MESSAGE, _FIELD.LABEL_REPEATED, ".peerbench.Span"),
        ],
    ),
    # W3: a ~300-byte record of every kind of field, a map, a oneof (text or number).
    (
        "Record",
        [
            ("id", 1, _FIELD.TYPE_UINT64, _FIELD.LABEL_OPTIONAL, ""),
            ("kind", 2, _FIELD.TYPE_INT32, _FIELD.LABEL_OPTIONAL, ""),
            ("level", 3, _FIELD.TYPE_UINT32, _FIELD.LABEL_OPTIONAL, ""),
            ("delta", 4, _FIELD.TYPE_SINT32, _FIELD.LABEL_OPTIONAL, ""),
            ("offset", 5, _FIELD.TYPE_SINT64, _FIELD.LABEL_OPTIONAL, ""),
            ("mask", 6, _FIELD.TYPE_FIXED32, _FIELD.LABEL_OPTIONAL, ""),
            ("token", 7, _FIELD.TYPE_FIXED64, _FIELD.LABEL_OPTIONAL, ""),
            ("skew", 8, _FIELD.TYPE_SFIXED32, _FIELD.LABEL_OPTIONAL, ""),
            ("drift", 9, _FIELD.TYPE_SFIXED64, _FIELD.LABEL_OPTIONAL, ""),
            ("ratio", 10, _FIELD.TYPE_FLOAT, _FIELD.LABEL_OPTIONAL, ""),
            ("score", 11, _FIELD.TYPE_DOUBLE, _FIELD.LABEL_OPTIONAL, ""),
            ("ok", 12, _FIELD.TYPE_BOOL, _FIELD.LABEL_OPTIONAL, ""),
            ("title", 13, _FIELD.TYPE_STRING, _FIELD.LABEL_OPTIONAL, ""),
            ("payload", 14, _FIELD.TYPE_BYTES, _FIELD.LABEL_OPTIONAL, ""),
            (
                "labels",
                15,
                _FIELD.TYPE_MESSAGE,
                _FIELD.LABEL_REPEATED,
                ".peerbench.Record.LabelsEntry",
            ),
            ("names", 16, _FIELD.TYPE_STRING, _FIELD.LABEL_REPEATED, ""),
            ("counts", 17, _FIELD.TYPE_INT64, _FIELD.LABEL_REPEATED, ""),
            ("origin", 18, _FIELD.TYPE_MESSAGE, _FIELD.LABEL_OPTIONAL, ".peerbench.Interval"),
            ("text", 19, _FIELD.TYPE_STRING, _FIELD.LABEL_OPTIONAL, ""),
            ("number", 20, _FIELD.TYPE_INT64, _FIELD.LABEL_OPTIONAL, ""),
            ("created", 21, _FIELD.TYPE_UINT64, _FIELD.LABEL_OPTIONAL, ""),
            ("updated", 22, _FIELD.TYPE_UINT64, _FIELD.LABEL_OPTIONAL, ""),
        ],
    ),
]
_ONEOFS = {"Record": ("body", ("text", "number"))}  # message: (oneof, its members)
_MAPS = {"Record": ("LabelsEntry", _FIELD.TYPE_STRING, _FIELD.TYPE_INT64)}  # string -> int64


def file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The ``FileDescriptorProto`` of ``peerbench.proto``."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="peerbench.proto", package="peerbench", syntax="proto3"
    )
    for message_name, fields in _MESSAGES:
        message = proto.message_type.add(name=message_name)
        oneof, members = _ONEOFS.get(message_name, ("", ()))
        if oneof:
            message.oneof_decl.add(name=oneof)
        for name, number, type_, label, type_name in fields:
            field = message.field.add(name=name, number=number, type=type_, label=label)
            if type_name:
                field.type_name = type_name
            if name in members:
                field.oneof_index = 0
        if message_name in _MAPS:
            entry_name, key_type, value_type = _MAPS[message_name]
            entry = message.nested_type.add(name=entry_name)
            entry.options.map_entry = True
            entry.field.add(name="key", number=1, type=key_type, label=_FIELD.LABEL_OPTIONAL)
            entry.field.add(name="value", number=2, type=value_type, label=_FIELD.LABEL_OPTIONAL)
    return proto


def _build() -> dict[str, Any]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_descriptor())
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"peerbench.{name}"))
        for name, _ in _MESSAGES
    }


_CLASSES = _build()
Sample: Any = _CLASSES["Sample"]
Event: Any = _CLASSES["Event"]
Frame: Any = _CLASSES["Frame"]
Blob: Any = _CLASSES["Blob"]
Interval: Any = _CLASSES["Interval"]
Span: Any = _CLASSES["Span"]
Trace: Any = _CLASSES["Trace"]
Record: Any = _CLASSES["Record"]


def sample() -> Any:
    """A representative ~35-byte telemetry record."""
    return Sample(
        ts_ns=1_700_000_000_123_456_789, scope_id=42, value=-12345, name="render.draw_mesh"
    )


# Scope names of 12 to 20 ASCII characters, so a Sample stays near 35 bytes.
_SCOPE_NAMES = (
    "render.draw_mesh",
    "render.present",
    "physics.step",
    "physics.broadphase",
    "audio.mix_block",
    "net.poll_sockets",
    "ui.layout_pass",
    "gc.young_collect",
)
_TS_BASE = 1_700_000_000_000_000_000  # a 2023 wall clock in ns: a 9-byte varint


def samples(n: int = 1000, seed: int = 2024) -> list[Any]:
    """``n`` Sample messages with varied, deterministic values."""
    rng = random.Random(seed)
    messages = []
    ts = _TS_BASE
    for _ in range(n):
        ts += rng.randrange(1_000, 5_000_000)
        messages.append(
            Sample(
                ts_ns=ts,
                scope_id=rng.randrange(1, 2_000),
                value=rng.randrange(-1_000_000, 1_000_000),
                name=rng.choice(_SCOPE_NAMES),
            )
        )
    return messages


def trace(spans: int = 1000, seed: int = 2025) -> Any:
    """W2: one Trace of ``spans`` Spans (3 ints, a name, 4 packed tags, an Interval each)."""
    rng = random.Random(seed)
    start = _TS_BASE
    items = []
    for i in range(spans):
        start += rng.randrange(1_000, 50_000)
        items.append(
            Span(
                scope_id=rng.randrange(1, 2_000),
                start_ns=start,
                end_ns=start + rng.randrange(100, 10_000),
                name=rng.choice(_SCOPE_NAMES),
                tags=[rng.randrange(0, 300) for _ in range(4)],
                window=Interval(start=i * 0.5, end=i * 0.5 + 0.25),
            )
        )
    return Trace(index=7, spans=items)


def records(n: int = 1000, seed: int = 2026) -> list[Any]:
    """W3: ``n`` Records of about 300 bytes: every scalar kind, 10 labels, a oneof member."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        body = {"text": rng.choice(_SCOPE_NAMES)} if i % 2 else {"number": -rng.randrange(10**9)}
        out.append(
            Record(
                id=_TS_BASE + i,
                kind=rng.randrange(-50, 50),
                level=rng.randrange(1, 10),
                delta=rng.randrange(-1000, 1000),
                offset=rng.randrange(-(10**12), 10**12),
                mask=rng.randrange(2**32),
                token=rng.randrange(2**64),
                skew=rng.randrange(-(2**31), 2**31),
                drift=rng.randrange(-(2**63), 2**63),
                ratio=0.25 * rng.randrange(100),
                score=rng.random(),
                ok=bool(i % 3),
                title=f"record {i}",
                payload=bytes(rng.randrange(256) for _ in range(8)),
                labels={f"l{k}": rng.randrange(-(10**6), 10**6) for k in range(10)},
                names=[rng.choice(_SCOPE_NAMES) for _ in range(2)],
                counts=[rng.randrange(0, 5000) for _ in range(10)],
                origin=Interval(start=float(i), end=float(i) + 1.5),
                created=_TS_BASE + 1_000 * i,
                updated=_TS_BASE + 2_000 * i,
                **body,
            )
        )
    return out


# --- the peers: protobuf's own way of doing each job ------------------------------------


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
    encoder.clear()
    encode = encoder.encode
    for message in batch:
        encode(message)
    return encoder


def codec_write(encoder: codec.FrameEncoder, payloads: Sequence[bytes]) -> codec.FrameEncoder:
    """FrameEncoder.write of each ready payload into one warm, cleared encoder."""
    encoder.clear()
    write = encoder.write
    for payload in payloads:
        write(payload)
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


# --- same-run ratios ----------------------------------------------------------------------


@dataclass
class Case:
    """A timed call over a whole batch, compared with the baseline of its group."""

    group: str
    name: str
    run: Callable[[], object]
    expected: object = None  # what a call returns (of an encoder: what it holds); None: unchecked
    baseline: bool = False
    target: str = ""
    seconds: list[float] = field(default_factory=list)  # per call, one per round

    def is_right(self) -> bool:
        """Whether a call returns what is expected (true when nothing is)."""
        if self.expected is None:
            return True
        result = self.run()
        if isinstance(result, codec.FrameEncoder):
            with result.getbuffer() as pending:
                result = bytes(pending)
        return result == self.expected

    def timing(self, ops: int) -> Timing:
        """The best round and the median round, per op."""
        best, median = min(self.seconds), statistics.median(self.seconds)
        return Timing(
            self.group, self.name, best * 1e9 / ops, median * 1e9 / ops, self.baseline, self.target
        )


def bench_cases(corpus: Corpus) -> list[Case]:
    """The calls of ``python -m codec bench``: framed encode, frame split and typed decode."""
    messages, payloads, stream = corpus.messages, corpus.payloads, corpus.stream
    sample_struct = codec.struct(Sample)
    structs = [codec.from_pb2(message) for message in messages]
    encoder = codec.FrameEncoder()
    naive = "SerializeToString+_VarintBytes+bytearray loop"
    return [
        Case("encode", naive, partial(naive_encode, messages), stream, baseline=True),
        Case(
            "encode", "upb SerializeToString alone (no framing)", partial(serialize_only, messages)
        ),
        Case(
            "encode",
            "FrameEncoder.encode(pb2 message)",
            partial(codec_encode, encoder, messages),
            stream,
            target=">=2.5x",
        ),
        Case(
            "encode",
            "FrameEncoder.encode(struct)",
            partial(codec_encode, encoder, structs),
            stream,
            target=">=8x",
        ),
        Case(
            "split",
            "_DecodeVarint32+slice loop",
            partial(naive_split, stream),
            payloads,
            baseline=True,
        ),
        Case(
            "split",
            "FrameDecoder frames (memoryview)",
            partial(codec_split, stream),
            payloads,
        ),
        Case(
            "split",
            "FrameDecoder(copy=True) frames (bytes, as the baseline)",
            partial(codec_split_copy, stream),
            payloads,
            target=">=10x",
        ),
        Case(
            "decode",
            "naive split + ParseFromString",
            partial(naive_decode, stream),
            messages,
            baseline=True,
        ),
        Case(
            "decode",
            "upb ParseFromString alone (no framing)",
            partial(parse_only, payloads),
            messages,
        ),
        Case(
            "decode",
            "FrameDecoder(message_type=pb2)",
            partial(codec_decode, stream, Sample),
            messages,
        ),
        Case(
            "decode",
            "FrameDecoder(message_type=struct)",
            partial(codec_decode, stream, sample_struct),
            structs,
            target=">= parse alone",
        ),
    ]


def measure(cases: Sequence[Case], rounds: int, min_round: float) -> None:
    """Time every case ``rounds`` times, interleaved, each round at least ``min_round`` s."""
    loops = []
    for case in cases:  # warm up and calibrate
        timer = timeit.Timer(case.run)
        once = max(timer.timeit(1), timer.timeit(1), 1e-9)
        loops.append(max(1, math.ceil(min_round / once)))
    for _ in range(rounds):
        for case, number in zip(cases, loops, strict=True):
            case.seconds.append(timeit.Timer(case.run).timeit(number) / number)


@dataclass(frozen=True)
class Timing:
    """One row of a ratio table: a way of doing its group's job, timed by two statistics."""

    group: str
    name: str
    ns: float  # per op: shown, and divided into the baseline's
    other_ns: float  # per op, by the second statistic: the ratio in parentheses
    baseline: bool = False
    note: str = ""  # the target, say


def ratio_table(timings: Sequence[Timing], columns: Sequence[str]) -> list[str]:
    """The rows of a ratio table: one block per group, in the order the timings come.

    ``columns`` names the time, the ratio, the second ratio and the note. A
    ratio is the baseline's time over the row's (> 1: faster than the
    baseline); a group without exactly one baseline shows none.
    """
    header = ("group", "name", *columns)
    rows = [header]
    groups: dict[str, list[Timing]] = {}
    for timing in timings:
        groups.setdefault(timing.group, []).append(timing)
    for group, members in groups.items():
        baselines = [timing for timing in members if timing.baseline]
        base = baselines[0] if len(baselines) == 1 else None
        missing = ""
        if base is None:
            missing = "several baselines in group" if baselines else "no baseline in group"
        for timing in members:
            if base is None:
                ratios = ("-", "")
            elif timing is base:
                ratios = ("baseline", "")
            else:
                ratios = (
                    f"{base.ns / timing.ns:.2f}x",
                    f"({base.other_ns / timing.other_ns:.2f}x)",
                )
            rows.append((group, timing.name, f"{timing.ns:,.1f}", *ratios, timing.note or missing))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for index, row in enumerate(rows):
        cells = [
            cell.rjust(width) if column in (2, 3, 4) else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append(" | ".join(cells).rstrip())
        if index == 0:
            lines.append("-+-".join("-" * width for width in widths))
    return lines


def describe_build() -> str:
    """The build of codec, protobuf's version and backend, Python's, and the machine."""
    build = "compiled build" if codec.COMPILED else "pure-Python build; targets are for compiled"
    return (
        f"codec.COMPILED = {codec.COMPILED} ({build}); protobuf {protobuf_version} "
        f"({api_implementation.Type()} backend); Python {platform.python_version()} "
        f"on {platform.machine() or 'unknown machine'}"
    )
