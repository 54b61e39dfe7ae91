"""The documented divergences between codec and upb, recognised from an input and its outcome.

Shared by the differential tests (``tests/test_structs_differential.py``) and
the differential fuzz target (``fuzz/fuzz_differential.py``), so that both
excuse exactly the same cases: (1) a 10th varint byte above 1 (codec refuses,
upb masks), (2) invalid UTF-8 in a proto2 string (upb returns ``bytes``),
(3) field number 0 in a message type without fields, and (4) a map entry
kept among the unknown fields (it held an unknown field of its own) whose
value holds a map: both re-encode the entry, upb with that inner map in its
hash table's order, codec in the deterministic order. A proto2 map key that
is not UTF-8 cannot even be iterated by upb (its map raises
``UnicodeDecodeError``); the walks below treat that as divergence 2.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from google.protobuf.descriptor import FieldDescriptor as FD

import codec

MESSAGE_TYPES = (FD.TYPE_MESSAGE, FD.TYPE_GROUP)


def is_map(field: Any) -> bool:
    return bool(
        field.type == FD.TYPE_MESSAGE
        and field.is_repeated
        and field.message_type.GetOptions().map_entry
    )


def walk_values(message: Any) -> Iterator[tuple[Any, Any]]:
    """Every (field, value) set in a google.protobuf message, recursively."""
    for field, value in message.ListFields():
        if is_map(field):
            key_field = field.message_type.fields_by_name["key"]
            value_field = field.message_type.fields_by_name["value"]
            for key, item in value.items():
                yield key_field, key
                if value_field.type in MESSAGE_TYPES:
                    yield from walk_values(item)
                else:
                    yield value_field, item
        elif field.type in MESSAGE_TYPES:
            for item in value if field.is_repeated else [value]:
                yield from walk_values(item)
        else:
            for item in value if field.is_repeated else [value]:
                yield field, item


def is_varint_overflow(data: bytes, error: codec.DecodeError) -> bool:
    """Divergence 1: a VarintError at a 10-byte varint whose last byte is > 1."""
    if not isinstance(error, codec.errors.VarintError) or error.offset is None:
        return False
    varint = data[error.offset : error.offset + 10]
    return len(varint) == 10 and all(b & 0x80 for b in varint[:9]) and varint[9] > 1


def has_proto2_invalid_utf8(expected: Any) -> bool:
    """Divergence 2: upb returned ``bytes`` for a string field.

    A proto2 map key that is not UTF-8 cannot even be iterated (upb's map raises
    UnicodeDecodeError): that counts too.
    """
    try:
        return any(
            field.type == FD.TYPE_STRING and isinstance(v, bytes)
            for field, v in walk_values(expected)
        )
    except UnicodeDecodeError:
        return True


def is_field_zero(data: bytes, error: codec.DecodeError) -> bool:
    """Divergence 3: a WireFormatError at a tag of field number 0."""
    if not isinstance(error, codec.errors.WireFormatError) or error.offset is None:
        return False
    value = shift = 0
    for byte in data[error.offset : error.offset + 5]:
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value >> 3 == 0
    return False


def has_nan(message: Any) -> bool:
    """A NaN anywhere in a google.protobuf message: structs holding it compare unequal."""
    try:
        return any(isinstance(v, float) and math.isnan(v) for _, v in walk_values(message))
    except UnicodeDecodeError:  # a proto2 map key that is not UTF-8 (see divergence 2)
        return False


def deterministic(message: Any) -> bytes:
    return message.SerializePartialToString(deterministic=True)  # type: ignore[no-any-return]


def has_unknown_map_entry(message: Any) -> bool:
    """Divergence 4: a struct (or a sub-message) keeps a map entry among its unknown fields."""
    pending = [message]
    while pending:
        current = pending.pop()
        plan = type(current).__plan__
        maps = {field.number for field in plan.fields if field.map_key is not None}
        try:
            numbers = {
                number for number, _, _ in codec.wire.WireReader(codec.unknown_fields(current))
            }
        except codec.DecodeError:
            numbers = set()
        if maps & numbers:
            return True
        for field in plan.fields:
            if field.message is None or not (field.repeated or current.HasField(field.name)):
                continue  # an unset sub-message is not read: that would make its default
            value = getattr(current, field.name)
            items = value.values() if isinstance(value, dict) else value
            for item in items if field.repeated else [value]:
                if hasattr(type(item), "__plan__"):
                    pending.append(item)
    return False
