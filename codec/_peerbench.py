"""The benchmark records of ``peerbench.proto`` as google.protobuf classes, built without protoc.

``Sample`` is the ~35-byte telemetry record of the performance targets
(``uint64 ts_ns, uint32 scope_id, sint64 value, string name``); ``Event`` and
``Frame`` add nesting and a packed repeated field; ``Blob`` holds one large
``bytes`` field. The file descriptor is written out field by field here, so
neither the package nor its tests need ``protoc`` or generated ``_pb2`` files.
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
]


def file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The ``FileDescriptorProto`` of ``peerbench.proto``."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="peerbench.proto", package="peerbench", syntax="proto3"
    )
    for message_name, fields in _MESSAGES:
        message = proto.message_type.add(name=message_name)
        for name, number, type_, label, type_name in fields:
            field = message.field.add(name=name, number=number, type=type_, label=label)
            if type_name:
                field.type_name = type_name
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
