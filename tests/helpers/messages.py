"""Random google.protobuf messages of the test schemas, and damage done to their bytes.

Shared by the tests that compare codec with upb (``test_structs_differential.py``)
and with codec's own struct decoding (``test_arrow.py``): every field kind, oneofs,
maps, extensions and nesting, drawn by Hypothesis from the descriptors.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import strategies as st
from schemas import all_classes, strategies
from schemas.divergences import MESSAGE_TYPES, is_map

ALL = all_classes()
_FILES = frozenset(cls.DESCRIPTOR.file.name for cls in ALL.values())  # the schemas drawn from


@functools.cache
def synthetic_oneofs(descriptor: Descriptor) -> frozenset[str]:
    """Names of the oneofs that protoc made up for proto3 ``optional`` fields."""
    proto = descriptor_pb2.DescriptorProto()
    descriptor.CopyToProto(proto)
    return frozenset(
        proto.oneof_decl[f.oneof_index].name
        for f in proto.field
        if f.proto3_optional and f.HasField("oneof_index")
    )


def scalar_values(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    """Values of one scalar (non-message) field type."""
    return strategies.scalar_values(field, max_size=6)


def _fill(draw: Callable[..., Any], message: Any, depth: int) -> None:
    """Set random fields of ``message``; sub-messages only while ``depth`` > 0."""
    descriptor = message.DESCRIPTOR
    synthetic = synthetic_oneofs(descriptor)
    chosen: set[str] = set()
    for oneof in descriptor.oneofs:
        if oneof.name not in synthetic:
            members = [f.name for f in oneof.fields]
            pick = draw(st.sampled_from([None, *members]))
            if pick is not None:
                chosen.add(pick)
    for field in descriptor.fields:
        oneof = field.containing_oneof
        if oneof is not None and oneof.name not in synthetic:
            if field.name not in chosen:
                continue
        elif not field.is_required and draw(st.integers(0, 2)) != 2:
            continue  # each other field is set one time in three (shrinks to unset)
        nested = field.type in MESSAGE_TYPES
        if nested and depth <= 0 and not field.is_required:
            continue
        if is_map(field):
            key_field = field.message_type.fields_by_name["key"]
            value_field = field.message_type.fields_by_name["value"]
            keys = draw(st.lists(scalar_values(key_field), max_size=3, unique=True))
            target = getattr(message, field.name)
            for key in keys:
                if value_field.type in MESSAGE_TYPES:
                    target[key].CopyFrom(draw(_message(value_field.message_type, depth - 1)))
                else:
                    target[key] = draw(scalar_values(value_field))
        elif field.is_repeated:
            target = getattr(message, field.name)
            if nested:
                for item in draw(st.lists(_message(field.message_type, depth - 1), max_size=2)):
                    target.add().CopyFrom(item)
            else:
                target.extend(draw(st.lists(scalar_values(field), max_size=4)))
        elif nested:
            getattr(message, field.name).CopyFrom(draw(_message(field.message_type, depth - 1)))
        else:
            setattr(message, field.name, draw(scalar_values(field)))
    for extension in extensions_of(descriptor):
        if draw(st.integers(0, 2)) != 2:
            continue
        nested = extension.type in MESSAGE_TYPES
        if nested and depth <= 0:
            continue
        if extension.is_repeated:
            # Not touched when empty: upb counts an empty repeated extension in ==.
            if nested:
                items = st.lists(
                    _message(extension.message_type, depth - 1), min_size=1, max_size=2
                )
                for item in draw(items):
                    message.Extensions[extension].add().CopyFrom(item)
            else:
                values = draw(st.lists(scalar_values(extension), min_size=1, max_size=4))
                message.Extensions[extension].extend(values)
        elif nested:
            message.Extensions[extension].CopyFrom(
                draw(_message(extension.message_type, depth - 1))
            )
        else:
            message.Extensions[extension] = draw(scalar_values(extension))


@functools.cache
def extensions_of(descriptor: Descriptor) -> list[FieldDescriptor]:
    """The extensions of ``descriptor`` that the files of :data:`ALL` declare, by number.

    Not all those of its pool: which other files are loaded there (another
    test module's schemas extend ``descriptor.proto``'s options) must not
    change what this module draws.
    """
    if not descriptor.extension_ranges:
        return []
    found = descriptor.file.pool.FindAllExtensions(descriptor)
    ours = [extension for extension in found if extension.file.name in _FILES]
    return sorted(ours, key=lambda extension: extension.number)


def _message(descriptor: Descriptor, depth: int) -> st.SearchStrategy[Any]:
    cls = ALL.get(descriptor.full_name)
    assert cls is not None, descriptor.full_name

    @st.composite
    def build(draw: Callable[..., Any]) -> Any:
        message = cls()
        _fill(draw, message, depth)
        return message

    return build()


def pb2_messages(cls: Any, depth: int = 2) -> st.SearchStrategy[Any]:
    """Random instances of the google.protobuf class ``cls``, nested at most ``depth`` deep."""
    return _message(cls.DESCRIPTOR, depth)


INTERESTING_BYTES = st.sampled_from(
    [b"\x00", b"\x80", b"\xff", b"\x01", b"\x0b", b"\x0c", b"\x7f", b"\xff" * 9 + b"\x7f"]
)


@st.composite
def mutations(draw: Callable[..., Any], data: bytes) -> bytes:
    """``data`` after one to three random flips, changes, insertions, deletions or a truncation."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        if op in ("flip", "set") and buf:
            i = draw(st.integers(0, len(buf) - 1))
            if op == "flip":
                buf[i] ^= 1 << draw(st.integers(0, 7))
            else:
                buf[i] = draw(st.integers(0, 255))
        elif op == "insert":
            i = draw(st.integers(0, len(buf)))
            buf[i:i] = draw(st.one_of(st.binary(min_size=1, max_size=4), INTERESTING_BYTES))
        elif op == "delete" and buf:
            i = draw(st.integers(0, len(buf) - 1))
            del buf[i : i + draw(st.integers(1, 4))]
        elif op == "truncate":
            del buf[draw(st.integers(0, len(buf))) :]
    return bytes(buf)
