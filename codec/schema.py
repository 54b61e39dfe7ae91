"""Schema: struct classes generated at run time from protobuf descriptors.

Strategy: a descriptor (from a ``_pb2`` class, a ``_pb2`` module or a
serialized ``FileDescriptorSet``) is compiled once into a
:class:`~codec._struct.MessagePlan`, the table the compiled encoder and
decoder walk, and into a class deriving from :class:`Struct` whose
attributes are the message's field names. Plans and classes are cached per
descriptor, and recursive messages share one plan.

Struct semantics follow protobuf's: scalars with implicit presence (proto3)
default to zero values and are not written when they hold them; fields with
explicit presence (proto2, proto3 ``optional``, oneof members) and
sub-messages are ``None`` when unset; repeated fields are lists, maps are
dicts, enums are ints, unknown fields are kept as bytes and written last.
Encoding is byte-identical to upb's ``SerializeToString(deterministic=True)``.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from codec import _struct
from codec._struct import (
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_ELEMENTS,
    Field,
    FieldPlan,
    MessagePlan,
    Struct,
    decode,
    encode,
)
from codec._struct import message_size as encoded_size

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_ELEMENTS",
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
    getattr(FieldDescriptor, f"TYPE_{name.upper()}"): kind for name, kind in _struct.KINDS.items()
}
_STRING, _BYTES, _BOOL, _ENUM = (
    _struct.KINDS[name] for name in ("string", "bytes", "bool", "enum")
)
_MESSAGE, _GROUP, _FLOAT, _DOUBLE = (
    _struct.KINDS[name] for name in ("message", "group", "float", "double")
)
_ZERO = {_STRING: "", _BYTES: b"", _BOOL: False}
_FLOATS = (_FLOAT, _DOUBLE)

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
    bytes. Keys are full names (``"pkg.Msg"``, ``"pkg.Msg.Nested"``).
    """
    if isinstance(source, ModuleType):
        tops = list(source.DESCRIPTOR.message_types_by_name.values())
    else:
        if not isinstance(source, descriptor_pb2.FileDescriptorSet):
            source = descriptor_pb2.FileDescriptorSet.FromString(bytes(source))
        pool = descriptor_pool.DescriptorPool()
        for file in source.file:
            pool.Add(file)
        tops = [
            pool.FindMessageTypeByName(f"{file.package}.{message.name}".lstrip("."))
            for file in source.file
            for message in file.message_type
        ]
    found: dict[str, type] = {}
    pending = list(tops)
    while pending:
        descriptor = pending.pop()
        if descriptor.GetOptions().map_entry:
            continue
        found[descriptor.full_name] = struct(descriptor)
        pending.extend(descriptor.nested_types)
    return found


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
        plan.defaults[field_plan.slot] = _default(field, field_plan)
        if field.message_type is not None:
            sub = _plan(field.message_type)
            field_plan.message = sub
            if field.message_type.GetOptions().map_entry:
                field_plan.map_key, field_plan.map_value = sub.fields_by_slot
                sub.full_name = f"{plan.full_name}.{field.name}"  # names the map in errors
    plan.index_containers()
    for oneof in descriptor.oneofs:
        members = [field.index for field in oneof.fields]
        if not (len(members) == 1 and oneof.fields[0].name in synthetic):
            plan.oneofs[oneof.name] = tuple(members)
            for slot in members:
                fields[slot].oneof_slots = tuple(members)
    namespace: dict[str, Any] = {"__slots__": (), "__plan__": plan, "__module__": "codec.structs"}
    namespace["__qualname__"] = descriptor.full_name
    for field_plan in fields:
        namespace[field_plan.name] = Field(field_plan.slot, field_plan.name)
    namespace["DESCRIPTOR"] = descriptor
    plan.cls = type(descriptor.name, (Struct,), namespace)
    return plan


def _field_plan(field: FieldDescriptor, slot: int) -> FieldPlan:
    features = field._GetFeatures()  # type: ignore[attr-defined]  # editions features
    kind = _KINDS[field.type]
    if kind == _MESSAGE and features.message_encoding == features.DELIMITED:
        kind = _GROUP
    closed = None
    enum = field.enum_type
    if kind == _ENUM and enum is not None and enum.is_closed:
        closed = frozenset(value.number for value in enum.values)
    utf8 = ""
    if kind == _STRING:
        utf8 = "strict" if features.utf8_validation == features.VERIFY else "bytes"
    return FieldPlan(
        field.name,
        field.number,
        kind,
        slot,
        repeated=field.is_repeated,
        packed=field.is_packed,
        presence=field.has_presence,
        utf8=utf8,
        closed_enum=closed,
    )


def _default(field: FieldDescriptor, plan: FieldPlan) -> Any:
    if plan.repeated or plan.presence or field.message_type is not None:
        return None
    if plan.kind in _FLOATS:
        return 0.0
    return _ZERO.get(plan.kind, 0)


def which_oneof(message: Struct, name: str) -> str | None:
    """Name of the member of oneof ``name`` that is set, or None."""
    plan: MessagePlan = type(message).__plan__  # type: ignore[attr-defined]
    try:
        slots = plan.oneofs[name]
    except KeyError:
        raise ValueError(f"{plan.full_name} has no oneof {name!r}") from None
    for slot in slots:
        if message._values[slot] is not None:
            member: str = plan.fields_by_slot[slot].name
            return member
    return None


def unknown_fields(message: Struct) -> bytes:
    """Fields a decoded message held that its schema does not know, as wire bytes."""
    return message._unknown


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
