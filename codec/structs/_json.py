"""Structs to and from protobuf's canonical JSON mapping, as ``json_format`` writes and reads it.

Strategy: the JSON mapping (field names in lowerCamelCase, 64-bit integers
as strings, enums by name, bytes in base64, the well-known types' own
forms, ``Any`` through the descriptor pool) is protobuf's, and
``google.protobuf.json_format`` is its reference implementation. So a
struct goes through the equivalent google.protobuf message, by its wire
encoding, which both sides read identically: the output is exactly what
``json_format`` gives for that message, with the same options, and
parsing refuses what it refuses (``json_format.ParseError``, a
``ValueError``). This is a convenience path, not a fast one: each call
encodes or decodes the struct once more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from google.protobuf import json_format, message_factory
from google.protobuf import message as pb2_message

from codec.structs._decode import MAX_COUNT, decode
from codec.structs._message import to_pb2
from codec.structs._struct import Struct

if TYPE_CHECKING:
    from codec._generic import S  # a struct class's instances

__all__ = ["from_dict", "from_json", "to_dict", "to_json"]


def _pb2_of(cls: type) -> Any:
    """The google.protobuf message class of struct class ``cls``."""
    descriptor = getattr(cls, "DESCRIPTOR", None)
    if descriptor is None:
        raise TypeError(f"expected a struct class, not {cls!r}")
    return message_factory.GetMessageClass(descriptor)


def _as_pb2(message: Any) -> Any:
    """``message`` as a google.protobuf message: a struct converted, a pb2 message as it is."""
    if isinstance(message, pb2_message.Message):
        return message
    if not isinstance(message, Struct):
        raise TypeError(f"expected a struct or a pb2 message, not {type(message).__name__}")
    return to_pb2(message)


def to_dict(message: Any, **options: Any) -> dict[str, Any]:
    """A struct's (or pb2 message's) JSON mapping as a dict: ``MessageToDict``'s, same options."""
    return json_format.MessageToDict(_as_pb2(message), **options)


def to_json(message: Any, **options: Any) -> str:
    """A struct's (or pb2 message's) JSON mapping as text: ``MessageToJson``'s, same options."""
    return json_format.MessageToJson(_as_pb2(message), **options)


def from_dict(cls: type[S], value: dict[str, Any], **options: Any) -> S:
    """A struct of class ``cls`` from a JSON-mapping dict (``json_format.ParseDict``'s options)."""
    return _struct_of(cls, json_format.ParseDict(value, _pb2_of(cls)(), **options))


def from_json(cls: type[S], text: str | bytes, **options: Any) -> S:
    """A struct of class ``cls`` from JSON text (``json_format.Parse``'s options)."""
    return _struct_of(cls, json_format.Parse(text, _pb2_of(cls)(), **options))


def _struct_of(cls: type[S], parsed: Any) -> S:
    """The struct of a message ``json_format`` parsed, whose limits (``max_recursion_depth``,
    ``ParseError``) are the ones that hold: the wire between the two has no others of its
    own (a JSON level can be three of the wire's: ``Struct``, ``Value``, ``ListValue``), and
    the decoder still stops before the C stack would run out."""
    data = parsed.SerializePartialToString()
    return decode(cls, data, max_depth=MAX_COUNT, max_elements=MAX_COUNT)
