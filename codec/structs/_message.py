"""pb2's method surface on struct classes, so code written for ``_pb2`` messages keeps working.

Strategy: every struct class derives from :class:`Message`, which adds the
methods of a google.protobuf message over the compiled :class:`Struct`
(``HasField``, ``ClearField`` and ``WhichOneof`` are Struct's own). Each
method is a thin layer over the module functions and keeps pb2's
semantics by going through the wire format where pb2 is defined by it:
merging is decoding a message's encoding followed by more bytes (singular
fields overwritten, sub-messages merged, repeated fields appended, map
entries replaced), and a copy is a decode of an encoding. A method that
fails changes nothing: the result is made aside and adopted whole.

Copies go through the same encoding (pickling too; see :mod:`codec.structs._schema`,
which knows where a class can be found again).

Extensions (``Extensions``, ``HasExtension``, ``ClearExtension``, and in
``ListFields`` and the required-field walk) are :mod:`codec.structs._extensions`'.

The methods are typed for a type checker as pb2's stubs type them, with the
message's own class where pb2 takes or gives one (``FromString`` returns
``Self``). A generated module (``python -m codec generate``) declares each
class's fields; a type checker sees no ``__setattr__`` here, so assigning
an attribute a class does not declare is an error, as it is at run time.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, ClassVar, Self, overload

from google.protobuf import message as pb2_message
from google.protobuf import message_factory, text_format
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

from codec.errors import EncodeError
from codec.structs._decode import decode
from codec.structs._encode import encode, message_size
from codec.structs._extensions import ExtensionDict, extension_items
from codec.structs._plan import MessagePlan
from codec.structs._struct import (
    Struct,
    field_value,
    negative_zero,
    set_unknown,
    take_extensions,
    unknown_of,
    written,
)

if TYPE_CHECKING:
    from typing_extensions import Buffer  # any contiguous buffer: bytes, memoryview, ...

    from codec._generic import P  # a google.protobuf message class's instances

__all__ = [
    "Enum",
    "Message",
    "check_required",
    "registered_extensions",
    "requires",
    "to_pb2",
]


class Message(Struct):
    """The base of generated struct classes: a Struct with pb2's methods."""

    __slots__ = ()
    __plan__: ClassVar[MessagePlan]  # set on each generated class
    DESCRIPTOR: ClassVar[Descriptor]  # its message's

    if TYPE_CHECKING:  # attributes are the fields a class declares (see the module docstring)
        __setattr__ = object.__setattr__  # type: ignore[assignment]

    # --- encoding and decoding ---------------------------------------------------

    def SerializeToString(self, *, deterministic: bool = False) -> bytes:
        """The wire bytes; ``EncodeError`` naming every required field that is not set.

        Map entries are in each map's own order, unless ``deterministic``
        asks for upb's deterministic order.
        """
        return encode(self, False, deterministic)

    def SerializePartialToString(self, *, deterministic: bool = False) -> bytes:
        """The wire bytes, required fields set or not; ``deterministic`` as above."""
        return encode(self, True, deterministic)

    @classmethod
    def FromString(cls, data: Buffer) -> Self:
        """A new message decoded from ``data`` (any contiguous buffer)."""
        message: Self = decode(cls, data)
        return message

    def ParseFromString(self, data: Buffer) -> int:
        """Replace the content with the message in ``data``; return its size."""
        _adopt(self, decode(type(self), data))
        return memoryview(data).nbytes

    def MergeFromString(self, data: Buffer) -> int:
        """Merge the message in ``data`` into this one, as pb2 does; return its size."""
        data = bytes(data)
        _adopt(self, decode(type(self), encode(self, True) + data))
        return len(data)

    def ByteSize(self) -> int:
        """The encoded size, in bytes."""
        return message_size(self)

    # --- content -----------------------------------------------------------------

    def Clear(self) -> None:
        """Unset every field and drop the unknown fields."""
        _adopt(self, type(self)())

    def CopyFrom(self, other: Self) -> None:
        """Make this message a copy of ``other``: a struct of its class, or a pb2 message."""
        if other is self:
            return
        _adopt(self, decode(type(self), _encoding_of(self, other)))

    def MergeFrom(self, other: Self) -> None:
        """Merge ``other`` (as ``CopyFrom`` takes it) into this message as pb2 does.

        Singular fields are overwritten, sub-messages merged, repeated fields
        appended and map entries replaced.
        """
        merged = encode(self, True) + _encoding_of(self, other)
        _adopt(self, decode(type(self), merged))

    def DiscardUnknownFields(self) -> None:
        """Drop the unknown fields of this message and of every message it holds."""
        set_unknown(self, None)
        for _, item in _held(self, ""):
            Message.DiscardUnknownFields(item)

    def UnknownFields(self) -> Any:
        """pb2's deprecated accessor, which raises as pb2's does; see ``codec.unknown_fields``."""
        raise NotImplementedError(
            "UnknownFields() is not supported (nor by upb): codec.unknown_fields(message) "
            "gives the unknown fields' wire bytes"
        )

    def SetInParent(self) -> None:
        """Set this message, an unset sub-message read from another, in that message."""
        written(self)

    # --- extensions ---------------------------------------------------------------

    @property
    def Extensions(self) -> ExtensionDict:
        """pb2's mapping of the extensions, keyed by ``FieldDescriptor`` (see README)."""
        return _extensions(self)

    def HasExtension(self, extension: FieldDescriptor) -> bool:
        """Whether a singular extension is set."""
        return _extensions(self).has(extension)

    def ClearExtension(self, extension: FieldDescriptor) -> None:
        """Unset an extension: it reads as its default again, and is not written."""
        del _extensions(self)[extension]

    def ListFields(self) -> list[tuple[FieldDescriptor, Any]]:
        """The fields and extensions that are set, as (descriptor, value) pairs, by number."""
        listed = _set_fields(self)
        if type(self).__plan__.extensions is None:
            return listed
        return sorted(listed + extension_items(self), key=lambda item: item[0].number)

    def IsInitialized(self) -> bool:
        """Whether every required field is set, here and in every message this one holds."""
        return not _missing(self)

    def FindInitializationErrors(self) -> list[str]:
        """The paths of the required fields that are not set (pb2's names: ``a.b[2].c``)."""
        return _missing(self)

    # --- copies and pickles ------------------------------------------------------

    def __copy__(self) -> Self:
        copied: Self = decode(type(self), encode(self, True))
        return copied

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self.__copy__()

    # --- comparison and text -----------------------------------------------------

    def __eq__(self, other: object) -> bool:
        """Equal content: a struct of the same class, or a pb2 message of the same type."""
        if isinstance(other, pb2_message.Message):
            return _same_message(self, other) and to_pb2(self, type(other)) == other
        return Struct.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        equal = Message.__eq__(self, other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]  # mutable, as pb2's messages are

    def __str__(self) -> str:
        """The text format, as ``str()`` of a pb2 message gives it."""
        return text_format.MessageToString(to_pb2(self))


class Enum(enum.IntEnum):
    """The base of generated enum classes: an ``IntEnum`` with pb2's enum-type methods.

    ``Name``, ``Value``, ``keys``, ``values`` and ``items`` answer from the
    descriptor, as pb2's ``EnumTypeWrapper`` does, so they know every value,
    the ones with no member too (see ``codec.structs._schema.is_enum_member``).
    """

    DESCRIPTOR: ClassVar[EnumDescriptor]  # set on each generated class
    NUMBERS: ClassVar[dict[str, int]]  # each value's number by its name, set with DESCRIPTOR

    @classmethod
    def Name(cls, number: int) -> str:
        """The name of value ``number``; ValueError if the enum has none."""
        value = cls.DESCRIPTOR.values_by_number.get(number)
        if value is None:
            raise ValueError(f"enum {cls.DESCRIPTOR.full_name} has no name for value {number!r}")
        return value.name

    @classmethod
    def Value(cls, name: str) -> int:
        """The number of the value named ``name``; ValueError if the enum has none."""
        number = cls.NUMBERS.get(name)
        if number is None:
            raise ValueError(f"enum {cls.DESCRIPTOR.full_name} has no value named {name!r}")
        return number

    @classmethod
    def keys(cls) -> list[str]:
        """The names of the values, in declaration order."""
        return [value.name for value in cls.DESCRIPTOR.values]

    @classmethod
    def values(cls) -> list[int]:
        """The numbers of the values, in declaration order."""
        return [value.number for value in cls.DESCRIPTOR.values]

    @classmethod
    def items(cls) -> list[tuple[str, int]]:
        """The (name, number) of each value, in declaration order."""
        return [(value.name, value.number) for value in cls.DESCRIPTOR.values]


# The methods' helpers are functions, not methods: a field may have a method's
# name (``Clear``, ``HasField``), and on a message the field wins, as in pb2.


def _encoding_of(message: Any, other: Any) -> bytes:
    """The encoding of ``other``, a struct of ``message``'s class or a pb2 message of its type."""
    if type(other) is type(message):
        return encode(other, True)
    if isinstance(other, pb2_message.Message) and _same_message(message, other):
        return other.SerializePartialToString()
    name = type(message).__plan__.full_name
    raise TypeError(f"expected a struct or a pb2 message of {name}, not {type(other).__name__}")


def _same_message(message: Any, other: pb2_message.Message) -> bool:
    """Whether the pb2 message ``other`` is of ``message``'s message type."""
    return bool(other.DESCRIPTOR.full_name == type(message).__plan__.full_name)


@overload
def to_pb2(message: Any, cls: None = None) -> pb2_message.Message: ...
@overload
def to_pb2(message: Any, cls: type[P]) -> P: ...
def to_pb2(message: Any, cls: Any = None) -> Any:
    """The google.protobuf message with the same content as struct ``message``.

    ``cls``: the pb2 class to make (by default, the one of the struct's
    descriptor).
    """
    if not isinstance(message, Struct):
        raise TypeError(f"expected a struct, not {type(message).__name__}")
    if cls is None:
        cls = message_factory.GetMessageClass(type(message).DESCRIPTOR)  # type: ignore[attr-defined]
    converted = cls()
    converted.MergeFromString(encode(message, True))  # required fields may be missing
    return converted


def _adopt(message: Any, source: Any) -> None:
    """Give ``message`` every field and the unknown fields of ``source``, of the same class."""
    for field in type(message).__plan__.fields_by_slot:
        always_set = field.repeated or not (field.presence or field.message is not None)
        if always_set or Struct.HasField(source, field.name):
            setattr(message, field.name, getattr(source, field.name))
        else:
            Struct.ClearField(message, field.name)
    take_extensions(message, source)
    set_unknown(message, unknown_of(source) or None)
    written(message)


def _extensions(message: Any) -> ExtensionDict:
    if not type(message).DESCRIPTOR.extension_ranges:
        raise AttributeError(f"{type(message).__plan__.full_name} has no extension ranges")
    return ExtensionDict(message)


def _set_fields(message: Any) -> list[tuple[FieldDescriptor, Any]]:
    by_number = type(message).DESCRIPTOR.fields_by_number
    listed = []
    for field in type(message).__plan__.fields:
        if field.has_bit >= 0 and not Struct.HasField(message, field.name):
            continue  # unset (and a sub-message is not read: that would make its default)
        if field.repeated:
            if _held_elements(message, field):  # an empty one is not made by reading it
                listed.append((by_number[field.number], getattr(message, field.name)))
            continue
        value = getattr(message, field.name)
        if field.has_bit >= 0 or value != field.default or negative_zero(value):
            listed.append((by_number[field.number], value))
    return listed


def _held_elements(message: Any, field: Any) -> int:
    """How many elements a repeated or map field holds, read from its slot (a container
    never made holds none)."""
    held = field_value(message, field)
    return 0 if held is None else len(held)


def _missing(message: Any) -> list[str]:
    """The paths of the required fields not set in ``message`` and the messages it holds.

    Walked depth first, in field order, with a stack rather than recursion:
    a cycle (``m.next = m``) is walked once and any depth is walked
    (encoding then refuses what is nested deeper than its limit).
    """
    missing: list[str] = []
    walked: set[int] = set()  # ids of the structs walked, alive while the walk holds them
    stack = [("", message)]
    while stack:
        prefix, current = stack.pop()
        if id(current) in walked:
            continue
        walked.add(id(current))
        for field in type(current).DESCRIPTOR.fields:
            if field.is_required and not Struct.HasField(current, field.name):
                missing.append(prefix + field.name)
        stack += reversed(_held(current, prefix))
    return missing


def _held(message: Any, prefix: str) -> list[tuple[str, Any]]:
    """Each struct ``message`` holds (set sub-messages, elements, map values, message
    extensions), with its path under ``prefix`` in pb2's form (``a.b[2].c``).

    Only what can be walked without running Python code is looked into:
    structs, and lists, tuples and dicts of them. A value of the wrong type
    (stored around the checks) is passed over: the encoder refuses it.
    Message extensions are named by their names, as upb names them.
    """
    fields: list[tuple[FieldDescriptor, Any]] = []
    for field in type(message).DESCRIPTOR.fields:
        if field.message_type is None:
            continue
        if field.is_repeated or Struct.HasField(message, field.name):  # an unset one is not read
            fields.append((field, getattr(message, field.name)))
    if type(message).__plan__.extensions is not None:
        fields += [item for item in extension_items(message) if item[0].message_type is not None]
    return [
        (path, item)
        for field, value in fields
        for path, item in _parts(field, value, prefix)
        if isinstance(item, Message)
    ]


def _parts(field: FieldDescriptor, value: Any, prefix: str) -> list[tuple[str, Any]]:
    """The path of each message a message field's ``value`` holds, and the message."""
    name = field.name
    if field.message_type.GetOptions().map_entry:  # type: ignore[union-attr]  # a message
        entries = value.items() if isinstance(value, dict) else ()
        return [(f"{prefix}{name}[{key!r}].", item) for key, item in entries]
    if field.is_repeated:
        items = value if isinstance(value, (list, tuple)) else ()
        return [(f"{prefix}{name}[{index}].", item) for index, item in enumerate(items)]
    return [(f"{prefix}{name}.", value)]


def check_required(message: Any) -> None:
    """EncodeError naming each required field of ``message`` (and those it holds) not set."""
    missing = _missing(message)
    if missing:
        name = type(message).__plan__.full_name
        raise EncodeError(f"{name} is missing required fields: {', '.join(missing)}")


def registered_extensions(descriptor: Descriptor) -> list[FieldDescriptor]:
    """The extensions of ``descriptor`` its descriptor pool holds now, by number.

    A struct class takes them once, when it is made: an extension added to
    the pool later is not one of the class's (its fields stay unknown bytes).
    """
    if not descriptor.extension_ranges:
        return []
    found = descriptor.file.pool.FindAllExtensions(descriptor)
    return sorted(found, key=lambda extension: extension.number)


_REQUIRES: dict[Any, bool] = {}  # by descriptor: whether a required field may be missing


def requires(descriptor: Any) -> bool:
    """Whether a message of ``descriptor``, or one it may hold, has a required field.

    What a message may hold includes its extensions' messages. A type found
    to need none tells the same of every type it may hold, and a type known
    already is not walked again, so that the types of a schema, asked
    leaves first, are walked once in all.
    """
    known = _REQUIRES.get(descriptor)
    if known is None:
        seen = {descriptor}
        pending = [descriptor]
        known = False
        while pending and not known:
            held_type = pending.pop()
            for field in [*held_type.fields, *registered_extensions(held_type)]:
                known = known or field.is_required
                held = field.message_type
                if held is not None and held not in seen:
                    seen.add(held)
                    if held in _REQUIRES:
                        known = known or _REQUIRES[held]
                    else:
                        pending.append(held)
        _REQUIRES.update(dict.fromkeys([descriptor] if known else seen, known))
    return known
