"""The benchmark records of ``peerbench.proto``, shared by the tests, ``benches/`` and ``fuzz/``.

They live at the repository root, outside the ``codec`` package, so that no
wheel ships them and every part of the checkout imports them alike
(``import peerbench``): the test modules through ``tests/helpers/peerbench.py``,
the benchmarks through ``benches/_root.py``, the fuzz targets and figures
through ``fuzz/_schemas.py`` and ``fuzz/figures/_common.py``; each of those
appends the repository root to ``sys.path`` (appends: the codec under test,
an install or ``PYTHONPATH``, is still the one found first).

The records, as google.protobuf classes built without protoc: ``Sample`` is
the ~35-byte telemetry record of the performance targets (``uint64 ts_ns,
uint32 scope_id, sint64 value, string name``); ``Event`` and ``Frame`` add
nesting and a packed repeated field; ``Blob`` holds one large ``bytes``
field. ``Trace`` (of ``Span`` and ``Interval``) and ``Record`` are the nested
and the map-heavy workloads of the struct benchmarks (W2, W3). The file
descriptor is written out field by field here, so nothing needs ``protoc``
or generated ``_pb2`` files. :func:`sample`, :func:`samples`, :func:`trace`
and :func:`records` make seeded, deterministic instances.

The timed jobs, the peers and the ratio table are ``benches/``'s
(``jobs.py``, ``peers.py``, ``table.py``).
"""

from __future__ import annotations

import random
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

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
