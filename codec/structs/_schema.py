"""Schema: struct classes generated at run time from protobuf descriptors.

Strategy: a descriptor (from a ``_pb2`` class, a ``_pb2`` module or a
serialized ``FileDescriptorSet``) is compiled once into a
:class:`~codec.structs._struct.MessagePlan`, the table the compiled encoder and
decoder walk, and into a class deriving from :class:`Struct` whose
attributes are the message's field names. Plans and classes are cached per
descriptor pool and full name, so one descriptor has one class, and classes
of one schema from two pools (a ``_pb2`` module's and ``load_structs``'
of a descriptor set) live side by side; recursive messages share one plan.
Classes are made under one lock, and a class is published only once it is
whole, so threads asking for one at once all get the same class. A class
of a generated module's file (``python -m codec generate``) is named as
that module holds it (``__module__`` the module, ``__qualname__`` its path
in it, ``ChatMessage.Reaction``); any other is ``codec.structs.<full name>``.

A struct class has pb2's methods (:mod:`codec.structs._message`), its nested
message types and enum types as attributes, and the values of its nested
enums as constants (``Config.FAST``), as a pb2 class has. Every enum type
is an ``IntEnum``; an enum field reads as its member, or as a plain ``int``
for a value an open enum does not declare.

Each struct class is a heap type whose ``__slots__`` are the message's
fields (see :mod:`codec.structs._struct` for the object model). Struct semantics
follow pb2's: an unset scalar reads as its default (proto2 ``[default =
...]``, else the zero value); fields with explicit presence (proto2, proto3
``optional``, oneof members, sub-messages) are written when set, as
``HasField`` tells, and scalars with implicit presence (proto3) when not
zero; an unset sub-message reads as an empty one, which becomes set once it
is written to; repeated fields are lists with checked additions
(:class:`~codec.structs._struct.Repeated`), maps dicts with checked writes
(:class:`~codec.structs._struct.Entries`), unknown fields are kept
as bytes and written last. Assignments are
checked as pb2 checks them. Encoding with ``deterministic=True`` is
byte-identical to upb's ``SerializeToString(deterministic=True)``; without
it, map entries are in each map's own order, as pb2 leaves them.

The extensions of a message type that its descriptor pool holds when its
class is made become the fields of a second, hidden struct class (each
named ``[full name]``, see ``MessagePlan.extend``), so they are planned by the
same code as fields; :mod:`codec.structs._extensions` gives them pb2's
``Extensions`` mapping. Extensions declared inside a message are class
attributes of its struct class, as of its pb2 class.
"""

from __future__ import annotations

import importlib
import os
import pickle
import sys
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any, overload

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

from codec import _wire
from codec._introspection import struct_signature
from codec.errors import SchemaError
from codec.structs import _struct
from codec.structs._decode import decode
from codec.structs._descriptor_set import (
    build_schema,
    message_types,
    parse_set,
    path_in_file,
    read_set,
    shared_module,
)
from codec.structs._encode import encode
from codec.structs._message import (
    Enum,
    Message,
    check_required,
    registered_extensions,
    requires,
)
from codec.structs._plan import FieldPlan, MessagePlan
from codec.structs._struct import FieldAccess, Struct
from codec.structs._wellknown import bases_of, converter_of

if TYPE_CHECKING:
    from codec._generic import S  # a struct class's instances

__all__ = [
    "enum_class",
    "from_pb2",
    "load_structs",
    "made_class",
    "struct",
    "unknown_fields",
    "which_oneof",
]

_KINDS = {
    getattr(FieldDescriptor, f"TYPE_{name.upper()}"): kind for name, kind in _wire.KINDS.items()
}
_STRING, _ENUM, _MESSAGE, _GROUP = (
    _wire.KINDS[name] for name in ("string", "enum", "message", "group")
)

# Plans and enum classes by (descriptor pool, full name); only whole ones are published.
_plans: dict[tuple[Any, str], MessagePlan] = {}
_enums: dict[tuple[Any, str], type[Enum]] = {}
_making = threading.RLock()  # held while classes are made
_pending: dict[tuple[Any, str], MessagePlan] = {}  # plans being made, not yet published


# A struct class is made from a descriptor at run time, so all a type checker knows of the
# class struct() returns is that it is a codec.Message: nothing maps a _pb2 class (protoc's
# or mypy-protobuf's stubs declare it alone) or a Descriptor to its struct class statically.
# A program that needs the class itself imports it from its generated module (python -m
# codec generate). An overload taking a struct class (struct(Span) is Span) would cost more
# than it gives: an argument of type Any (a _pb2 module without stubs) matches it and the
# general one alike, and mypy makes such a call Any instead of type[codec.Message].
def struct(message_type: Any) -> type[Message]:
    """The struct class of a google.protobuf message class or ``Descriptor``.

    The same class every time for one descriptor (one per descriptor pool
    and full name), from any thread.
    """
    descriptor = getattr(message_type, "DESCRIPTOR", message_type)
    if not isinstance(descriptor, Descriptor):
        raise TypeError(f"expected a protobuf message class or Descriptor, not {message_type!r}")
    plan = _plans.get(_key(descriptor))
    if plan is None:
        with _making:
            try:
                plan = _plan(descriptor)
                _plans.update(_pending)  # the classes made for it, each whole now
            finally:
                _pending.clear()  # all or nothing: after an error, none of them
    return plan.cls  # type: ignore[no-any-return]


def enum_class(enum_type: EnumDescriptor) -> type[Enum]:
    """The enum class of a protobuf enum type (one per descriptor pool and full name).

    An ``IntEnum`` with pb2's enum-type methods (:class:`codec.Enum`), whose
    members are the values whose names ``enum`` takes for members: a value
    of another name (see :func:`is_enum_member`) has none and reads as an
    ``int``, as every value does in pb2.
    """
    key = _key(enum_type)
    found = _enums.get(key)
    if found is None:
        with _making:
            found = _enums.get(key)
            if found is None:
                found = _new_enum(enum_type)
                _enums[key] = found
    return found


def _new_enum(enum_type: EnumDescriptor) -> type[Enum]:
    name = enum_type.name
    members = [(v.name, v.number) for v in enum_type.values if is_enum_member(v.name, name)]
    module, qualname = _origin(enum_type)
    functional: Any = Enum  # the functional API, which type checkers do not model
    made: Any = functional(name, members, module=module, qualname=qualname)
    made.DESCRIPTOR = enum_type
    made.NUMBERS = {value.name: value.number for value in enum_type.values}
    return made  # type: ignore[no-any-return]


#: Names an enum class keeps for pb2's methods and what they read.
_ENUM_ATTRIBUTES = frozenset(("DESCRIPTOR", "NUMBERS", "Name", "Value", "items", "keys", "values"))


def is_enum_member(name: str, enum_name: str) -> bool:
    """Whether an enum class named ``enum_name`` has a member named ``name``.

    ``enum`` refuses ``mro`` and keeps ``_x_``, ``__x__`` and its private
    ``_Name__x`` names for itself, and the class keeps pb2's method names.
    """
    private = f"_{enum_name.lstrip('_')}__"
    return not (
        name == "mro"
        or name in _ENUM_ATTRIBUTES
        or name.startswith(private)
        or name[0] == name[-1] == "_"
    )


def _key(descriptor: Any) -> tuple[Any, str]:
    return (descriptor.file.pool, descriptor.full_name)


RUNTIME_MODULE = "codec.structs"  # of the classes of files without a generated module


def _origin(descriptor: Any) -> tuple[str, str]:
    """``__module__`` and ``__qualname__`` of the class of a message or enum type."""
    module = shared_module(descriptor.file)
    if module is None:
        return RUNTIME_MODULE, descriptor.full_name
    return module, path_in_file(descriptor)


def made_class(full_name: str, *, prefix: bool = False) -> type | None:
    """The struct or enum class made for type ``full_name``, or None (see codec.structs).

    The default descriptor pool's, else the first made. ``prefix``: any
    class whose full name starts with ``full_name.``.
    """
    default = descriptor_pool.Default()
    found: list[tuple[bool, Any]] = []
    for (pool, name), made in [*_plans.items(), *_enums.items()]:
        if name == full_name if not prefix else name.startswith(f"{full_name}."):
            cls = made.cls if isinstance(made, MessagePlan) else made
            found.append((pool is not default, cls))
    return min(found, key=lambda item: item[0])[1] if found else None


# type[Any], not type: a value of type ``type`` passed as the class of codec.decode() or
# from_json() makes its result Never for mypy, and the rest of the program unchecked.
def load_structs(source: Any) -> dict[str, type[Any]]:
    """Struct classes of every message of a ``_pb2`` module or a ``FileDescriptorSet``.

    ``source`` is a module, a ``FileDescriptorSet`` message, its serialized
    bytes, the path of a file of them (``str`` or ``os.PathLike``) or a
    binary file open for reading; bytes that are not a set are a
    :class:`SchemaError`. Keys are full names (``"pkg.Msg"``, ``"pkg.Msg.Nested"``), sorted;
    enum types are there too, as ``IntEnum`` classes. A set is
    built by :mod:`codec.structs._descriptor_set`, as the command line builds one: its
    files in dependency order, protobuf's well-known files found when the set
    leaves them out; a set that cannot be built raises a ``ValueError`` naming
    the file at fault. When every file of the set is in a generated module
    already imported (``python -m codec generate``), with the same content,
    the classes are that module's: ``load_structs(s)["pkg.Msg"] is
    pkg.msg_structs.Msg``; otherwise they are new classes of a pool of the
    set's own.
    """
    if isinstance(source, ModuleType):
        files = [source.DESCRIPTOR]
        descriptors = list(message_types(source.DESCRIPTOR.message_types_by_name.values()))
    else:
        source = _descriptor_set(source)
        schema = build_schema(source, "the FileDescriptorSet")
        files = [schema.pool.FindFileByName(file.name) for file in source.file]
        descriptors = list(schema.messages.values())
    found: dict[str, type] = {}
    for descriptor in descriptors:
        found[descriptor.full_name] = struct(descriptor)
        for enum_type in descriptor.enum_types:
            found[enum_type.full_name] = enum_class(enum_type)
    for file in files:
        for enum_type in file.enum_types_by_name.values():
            found[enum_type.full_name] = enum_class(enum_type)
    return dict(sorted(found.items()))


def _descriptor_set(source: Any) -> descriptor_pb2.FileDescriptorSet:
    """The ``FileDescriptorSet`` that :func:`load_structs`' ``source`` (not a module) is."""
    if isinstance(source, descriptor_pb2.FileDescriptorSet):
        return source
    if isinstance(source, str | os.PathLike):
        return read_set(os.fspath(source))
    if hasattr(source, "read"):
        data = source.read()
        if not isinstance(data, bytes):
            raise TypeError("load_structs reads a file opened in binary mode ('rb')")
        return parse_set(data, getattr(source, "name", "the file"))
    if isinstance(source, bytes | bytearray | memoryview):
        return parse_set(bytes(source), "the bytes")
    raise TypeError(
        "load_structs takes a _pb2 module, a FileDescriptorSet, its serialized bytes, the path "
        f"of a file of them or a binary file, not {type(source).__name__}"
    )


def _plan(descriptor: Descriptor) -> MessagePlan:
    """The plan of ``descriptor``, made with its class if need be (``_making`` held).

    Every message type its class needs (those of its fields, extensions
    and nested types, and theirs) is found first, without recursion, so a
    chain of any length of types each holding the next is built. Each gets
    its plan, then all are linked and their classes made. Plans made here
    wait in ``_pending`` until the outermost call publishes them: a
    recursive message's plan is linked to before its class exists, and no
    other thread may see it then.
    """
    key = _key(descriptor)
    plan = _plans.get(key) or _pending.get(key)
    if plan is not None:
        return plan
    made: list[Descriptor] = []
    unseen = [descriptor]
    while unseen:
        found = unseen.pop()
        if _key(found) in _plans or _key(found) in _pending:
            continue
        _pending[_key(found)] = _unlinked_plan(found)
        made.append(found)
        unseen += [field.message_type for field in found.fields if field.message_type]
        unseen += [ext.message_type for ext in registered_extensions(found) if ext.message_type]
        unseen += found.nested_types
    for each in reversed(made):  # the types found last first: those held before holders
        _make_class(each, _pending[_key(each)])
    for each in made:  # nested types as class attributes, now that every class exists
        cls = _known_plan(each).cls
        for nested in each.nested_types:
            if not nested.GetOptions().map_entry and _class_may_take(nested.name):
                setattr(cls, nested.name, _known_plan(nested).cls)
    return _pending[key]


def _known_plan(descriptor: Descriptor) -> MessagePlan:
    """The plan of ``descriptor``, being made or published (``_making`` held)."""
    key = _key(descriptor)
    return _pending.get(key) or _plans[key]


# Names a field cannot have: Python gives ``__x__`` names their meaning (its
# language reference reserves them), and a struct class cannot give one up to a
# field without breaking the object (``__init__``, ``__class__``, ``__eq__``).
# Any other name is a field's attribute. On a message the field wins over the
# class's own attribute of that name; on the class, the class's own attributes
# (``DESCRIPTOR``, pb2's methods) win over fields, nested types and enum values,
# as upb has it.
def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


CLASS_ATTRIBUTES = frozenset(
    {"DESCRIPTOR", *(name for name in dir(Message) + dir(type) if not _is_dunder(name))}
)


def _class_may_take(name: str) -> bool:
    """Whether a struct class may have a nested type, enum or constant named ``name``."""
    return not _is_dunder(name) and name not in CLASS_ATTRIBUTES


def _add_constant(namespace: dict[str, Any], name: str, value: Any) -> None:
    if _class_may_take(name):
        namespace.setdefault(name, value)


def _add_fields(namespace: dict[str, Any], plan: MessagePlan, taken: frozenset[str]) -> None:
    """Give a struct class's namespace its slots, its plan and the fields' attributes.

    A field read through its own slot needs nothing more; a field whose
    slot has another name (``MessagePlan.slot_names``: a repeated, map or
    message field, or a name a slot cannot have) is read through a
    :class:`FieldAccess`, which shows the class's own attribute of that
    name on the class, if its name is an identifier or it is repeated (an
    extension's, ``[full name]``, read with ``getattr``).
    """
    slots = plan.slot_names(taken)
    namespace["__slots__"] = slots
    namespace["__plan__"] = plan
    for field, slot in zip(plan.fields_by_slot, slots, strict=False):
        if slot != field.name and (field.repeated or field.name.isidentifier()):
            namespace[field.name] = FieldAccess(plan, field, namespace.get(field.name))


def _unlinked_plan(descriptor: Descriptor) -> MessagePlan:
    """The plan of ``descriptor``'s own fields, not linked yet to the plans of their types."""
    for field in descriptor.fields:
        if _is_dunder(field.name):
            raise SchemaError(
                f"field {field.full_name}: a struct cannot have an attribute named {field.name} "
                "(Python reserves names of the form __x__ for itself)"
            )
    fields = [_field_plan(field, slot) for slot, field in enumerate(descriptor.fields)]
    return MessagePlan(descriptor.full_name, fields)


def _make_class(descriptor: Descriptor, plan: MessagePlan) -> None:
    """Link ``plan`` to the plans of its fields' types and make its struct class."""
    proto = descriptor_pb2.DescriptorProto()
    descriptor.CopyToProto(proto)
    synthetic = {index for index, field in enumerate(proto.field) if field.proto3_optional}
    for field, field_plan in zip(descriptor.fields, plan.fields_by_slot, strict=True):
        if field.message_type is not None:
            sub = _known_plan(field.message_type)
            is_map = field.message_type.GetOptions().map_entry
            field_plan.link(sub, is_map)
            if is_map:
                sub.rename(f"{plan.full_name}.{field.name}")  # names the map in errors
    for oneof in descriptor.oneofs:
        members = tuple(field.index for field in oneof.fields)
        plan.add_oneof(oneof.name, members, len(members) == 1 and members[0] in synthetic)
    extensions = registered_extensions(descriptor)
    if extensions:
        plan.extend(_extensions_plan(plan, extensions))
    module, qualname = _origin(descriptor)
    namespace: dict[str, Any] = {
        "__module__": module,
        "__qualname__": qualname,
        "__hash__": None,  # mutable, as pb2 messages are
        "__reduce__": _reduce,
        "__signature__": struct_signature(plan.fields_by_slot),
        "DESCRIPTOR": descriptor,
    }
    _add_fields(namespace, plan, CLASS_ATTRIBUTES)
    for enum_type in descriptor.enum_types:
        values = enum_class(enum_type)
        _add_constant(namespace, enum_type.name, values)
        for value in enum_type.values:  # pb2's class constants: Config.FAST
            member = values._value2member_map_.get(value.number, value.number)
            _add_constant(namespace, value.name, member)
    for extension in descriptor.extensions:  # pb2's class attributes: Scope.scoped
        _add_constant(namespace, extension.name, extension)
    cls = type(descriptor.name, (*bases_of(descriptor.full_name), Message), namespace)
    plan.bind(cls)
    if requires(descriptor):
        plan.require(check_required)
    convert = converter_of(descriptor.full_name, cls)
    if convert is not None:
        plan.accept(convert)
    _struct.enable_fast_paths(cls)


def _extensions_plan(plan: MessagePlan, extensions: list[FieldDescriptor]) -> MessagePlan:
    """The plan of the struct class holding a message's extensions (see MessagePlan.extend).

    Each extension is a field of its kind named ``[full name]``, as text
    format names it, so errors name ``package.Message.[package.extension]``.
    The class's ``EXTENSIONS`` maps each field's name to its descriptor.
    """
    fields = [
        _field_plan(extension, slot, f"[{extension.full_name}]")
        for slot, extension in enumerate(extensions)
    ]
    held = MessagePlan(plan.full_name, fields, descending=True)
    for extension, field_plan in zip(extensions, fields, strict=True):
        if extension.message_type is not None:
            field_plan.link(_known_plan(extension.message_type), False)
    namespace: dict[str, Any] = {
        "__module__": RUNTIME_MODULE,
        "__qualname__": f"{plan.full_name}.Extensions",
        "__hash__": None,
        "EXTENSIONS": {field.name: ext for field, ext in zip(fields, extensions, strict=True)},
    }
    _add_fields(namespace, held, frozenset())
    held.bind(type("Extensions", (Struct,), namespace))
    return held


def _reduce(message: Struct) -> tuple[Any, ...]:
    """Pickle a struct as its encoding and where another process finds its class.

    That is the ``_pb2`` class of its descriptor, when it can be imported by
    name, or the struct class itself when it comes from a generated module.
    """
    cls = type(message)
    origin = message_factory.GetMessageClass(cls.DESCRIPTOR)  # type: ignore[attr-defined]
    if _importable(origin):
        where = (origin.__module__, origin.__qualname__, True)
    elif _importable(cls):
        where = (cls.__module__, cls.__qualname__, False)
    else:
        raise pickle.PicklingError(
            f"cannot pickle a struct of {cls.__qualname__}: neither its class nor the _pb2 class "
            "of its descriptor can be imported by name, so another process cannot find it"
        )
    return (_unpickle, (where, encode(message, True)))  # required fields set or not, as pb2


def _importable(cls: Any) -> bool:
    """Whether ``cls`` is found again by importing its module and walking its qualified name.

    Not a class of :mod:`codec.structs`: another process has not made it.
    """
    if cls.__module__ == RUNTIME_MODULE:
        return False
    try:
        return _imported(cls.__module__, cls.__qualname__) is cls
    except Exception:  # no module, not importable, no such attribute
        return False


def _imported(module: str, qualname: str) -> Any:
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def _unpickle(where: tuple[str, str, bool], data: bytes) -> Any:
    module, qualname, from_pb2 = where
    found = _imported(module, qualname)
    return decode(struct(found) if from_pb2 else found, data)


def _field_plan(field: FieldDescriptor, slot: int, name: str | None = None) -> FieldPlan:
    """The plan of a field (or, named ``[full name]``, of an extension)."""
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
    members: type[Enum] | None = None
    default = None if field.is_repeated or field.message_type is not None else field.default_value
    enum_type = field.enum_type
    if kind == _ENUM and enum_type is not None:
        members = enum_class(enum_type)
        if default is not None:
            default = members._value2member_map_.get(default, default)  # a member, if it is one
        if enum_type.is_closed:
            closed = frozenset(value.number for value in enum_type.values)
    utf8 = ""
    if kind == _STRING:
        utf8 = "strict" if features.utf8_validation == features.VERIFY else "bytes"
    repeated = field.is_repeated
    return FieldPlan(
        sys.intern(name or field.name),  # keyword names are interned: found by identity first
        field.number,
        kind,
        slot,
        repeated=repeated,
        packed=field.is_packed,
        presence=field.has_presence,
        utf8=utf8,
        closed_enum=closed,
        enum_type=members,
        # What an unset scalar reads as: its declared default, else the zero value (or a
        # closed enum's first value), as pb2 reads it.
        default=default,
    )


def which_oneof(message: Struct, name: str) -> str | None:
    """Name of the member of oneof ``name`` that is set, or None."""
    return Struct.WhichOneof(message, name)


def unknown_fields(message: Struct) -> bytes:
    """Fields a decoded message held that its schema does not know, as wire bytes."""
    return _struct.unknown_of(message)


@overload
def from_pb2(message: Any, cls: None = None) -> Message: ...
@overload
def from_pb2(message: Any, cls: type[S]) -> S: ...
def from_pb2(message: Any, cls: type[Message] | None = None) -> Message:
    """The struct with the same content as a google.protobuf message."""
    if cls is None:
        cls = struct(type(message))
    return decode(cls, message.SerializePartialToString())
