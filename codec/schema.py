"""Schema: struct classes generated at run time from protobuf descriptors.

Strategy: a descriptor (from a ``_pb2`` class, a ``_pb2`` module or a
serialized ``FileDescriptorSet``) is compiled once into a
:class:`~codec._struct.MessagePlan`, the table the compiled encoder and
decoder walk, and into a class deriving from :class:`Struct` whose
attributes are the message's field names. Plans and classes are cached per
descriptor, and recursive messages share one plan.

Each struct class is a heap type whose ``__slots__`` are the message's
fields (see :mod:`codec._struct` for the object model). Struct semantics
follow pb2's: an unset scalar reads as its default (proto2 ``[default =
...]``, else the zero value); fields with explicit presence (proto2, proto3
``optional``, oneof members) are written when set, as ``HasField`` tells,
and scalars with implicit presence (proto3) when not zero; sub-messages are
``None`` when unset; repeated fields are lists, maps are dicts, enums are
ints, unknown fields are kept as bytes and written last. Assignments are
checked as pb2 checks them. Encoding is byte-identical to upb's
``SerializeToString(deterministic=True)``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from google.protobuf import descriptor_pb2, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from codec import _struct, _wire
from codec._decode import DEFAULT_MAX_ELEMENTS, Decoder, decode
from codec._descriptor_set import build_schema, message_types
from codec._encode import encode
from codec._encode import message_size as encoded_size
from codec._struct import (
    DEFAULT_MAX_DEPTH,
    Container,
    FieldPlan,
    MessagePlan,
    Struct,
)

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_ELEMENTS",
    "Decoder",
    "Struct",
    "decode",
    "encode",
    "encoded_size",
    "from_pb2",
    "load_structs",
    "struct",
    "to_pb2",
    "unknown_fields",
    "which_oneof",
]

_KINDS = {
    getattr(FieldDescriptor, f"TYPE_{name.upper()}"): kind for name, kind in _wire.KINDS.items()
}
_STRING, _ENUM, _MESSAGE, _GROUP = (
    _wire.KINDS[name] for name in ("string", "enum", "message", "group")
)

_plans: dict[str, MessagePlan] = {}  # by full name; descriptors of one pool share names
_descriptors: dict[str, Descriptor] = {}


def struct(message_type: Any) -> type:
    """The struct class of a google.protobuf message class or ``Descriptor``."""
    descriptor = getattr(message_type, "DESCRIPTOR", message_type)
    if not isinstance(descriptor, Descriptor):
        raise TypeError(f"expected a protobuf message class or Descriptor, not {message_type!r}")
    return _plan(descriptor).cls  # type: ignore[no-any-return]


def load_structs(source: Any) -> dict[str, type]:
    """Struct classes of every message of a ``_pb2`` module or a ``FileDescriptorSet``.

    ``source`` is a module, a ``FileDescriptorSet`` message or its serialized
    bytes. Keys are full names (``"pkg.Msg"``, ``"pkg.Msg.Nested"``). A set is
    built by :mod:`codec._descriptor_set`, as the command line builds one: its
    files in dependency order, protobuf's well-known files found when the set
    leaves them out; a set that cannot be built raises a ``ValueError`` naming
    the file at fault.
    """
    descriptors: Iterable[Descriptor]
    if isinstance(source, ModuleType):
        descriptors = message_types(source.DESCRIPTOR.message_types_by_name.values())
    else:
        if not isinstance(source, descriptor_pb2.FileDescriptorSet):
            source = descriptor_pb2.FileDescriptorSet.FromString(bytes(source))
        descriptors = build_schema(source, "the FileDescriptorSet").messages.values()
    return {descriptor.full_name: struct(descriptor) for descriptor in descriptors}


def _plan(descriptor: Descriptor) -> MessagePlan:
    plan = _plans.get(descriptor.full_name)
    if plan is not None and _descriptors[descriptor.full_name] is descriptor:
        return plan
    proto = descriptor_pb2.DescriptorProto()
    descriptor.CopyToProto(proto)
    synthetic = {field.name for field in proto.field if field.proto3_optional}
    fields = [_field_plan(field, slot) for slot, field in enumerate(descriptor.fields)]
    plan = MessagePlan(descriptor.full_name, fields)
    _plans[descriptor.full_name] = plan  # before sub-plans, for recursive messages
    _descriptors[descriptor.full_name] = descriptor
    for field, field_plan in zip(descriptor.fields, fields, strict=True):
        if field.message_type is not None:
            sub = _plan(field.message_type)
            is_map = field.message_type.GetOptions().map_entry
            field_plan.link(sub, is_map)
            if is_map:
                sub.rename(f"{plan.full_name}.{field.name}")  # names the map in errors
    for oneof in descriptor.oneofs:
        members = tuple(field.index for field in oneof.fields)
        if not (len(members) == 1 and oneof.fields[0].name in synthetic):
            plan.add_oneof(oneof.name, members)
    namespace: dict[str, Any] = {
        "__slots__": plan.slot_names(),
        "__plan__": plan,
        "__module__": "codec.structs",
        "__qualname__": descriptor.full_name,
        "__hash__": None,  # mutable, as pb2 messages are
        "DESCRIPTOR": descriptor,
    }
    for field_plan in fields:
        if field_plan.repeated:
            namespace[field_plan.name] = Container(plan, field_plan)
    cls = type(descriptor.name, (Struct,), namespace)
    plan.bind(cls)
    _struct.enable_fast_construction(cls)
    return plan


def _field_plan(field: FieldDescriptor, slot: int) -> FieldPlan:
    features = field._GetFeatures()  # type: ignore[attr-defined]  # editions features
    kind = _KINDS[field.type]
    # Maps are always length-prefixed, whatever the features say: their entries,
    # and a message value inside an entry.
    in_map = field.containing_type is not None and field.containing_type.GetOptions().map_entry
    is_map = field.message_type is not None and field.message_type.GetOptions().map_entry
    delimited = features.message_encoding == features.DELIMITED
    if kind == _MESSAGE and delimited and not (is_map or in_map):
        kind = _GROUP
    closed = None
    enum = field.enum_type
    if kind == _ENUM and enum is not None and enum.is_closed:
        closed = frozenset(value.number for value in enum.values)
    utf8 = ""
    if kind == _STRING:
        utf8 = "strict" if features.utf8_validation == features.VERIFY else "bytes"
    repeated = field.is_repeated
    return FieldPlan(
        sys.intern(field.name),  # keyword names are interned: found by identity first
        field.number,
        kind,
        slot,
        repeated=repeated,
        packed=field.is_packed,
        presence=field.has_presence,
        utf8=utf8,
        closed_enum=closed,
        # What an unset scalar reads as: its declared default, else the zero value (or a
        # closed enum's first value), as pb2 reads it.
        default=None if repeated or field.message_type is not None else field.default_value,
    )


def which_oneof(message: Struct, name: str) -> str | None:
    """Name of the member of oneof ``name`` that is set, or None."""
    return message.WhichOneof(name)


def unknown_fields(message: Struct) -> bytes:
    """Fields a decoded message held that its schema does not know, as wire bytes."""
    return _struct.unknown_of(message)


def to_pb2(message: Struct, cls: Any = None) -> Any:
    """The google.protobuf message with the same content as a struct."""
    if cls is None:
        cls = message_factory.GetMessageClass(type(message).DESCRIPTOR)  # type: ignore[attr-defined]
    converted = cls()
    converted.MergeFromString(encode(message))  # proto2 required fields may be missing
    return converted


def from_pb2(message: Any, cls: type | None = None) -> Any:
    """The struct with the same content as a google.protobuf message."""
    if cls is None:
        cls = struct(type(message))
    return decode(cls, message.SerializePartialToString())
