"""pb2's ``Extensions`` mapping over a struct's extensions.

Strategy: a message type's extensions are the fields of a struct class of
their own (see ``MessagePlan.extend`` in :mod:`codec.structs._struct`), so this
module only maps pb2's interface onto that struct: an extension's
``FieldDescriptor`` names one of its fields, and getting, setting and
clearing an extension is reading, assigning and clearing that field, with
the engine's own checks. As upb does: an unset scalar reads as its default;
an unset message extension reads as an empty struct that counts as set once
anything is set in it; repeated extensions are lists; assigning a message
or repeated extension is a TypeError; a singular-only method given a
repeated extension is a KeyError.

Extensions are those the descriptor pool held when the struct class was
made. A descriptor of the same full name from another pool is taken for
the one the class knows when it agrees on number, type and label.
"""

from __future__ import annotations

from collections.abc import Iterator, Sized
from typing import Any

from google.protobuf.descriptor import FieldDescriptor

from codec.structs._plan import FieldPlan, MessagePlan
from codec.structs._struct import Struct, extensions_of, unset_part

__all__ = ["ExtensionDict", "extension_items", "extension_plan"]


def extension_plan(cls: Any) -> MessagePlan | None:
    """The plan of struct class ``cls``'s extensions' struct, or None when it has none."""
    holder: FieldPlan | None = cls.__plan__.extensions
    return None if holder is None else holder.message


def extension_items(message: Any) -> list[tuple[FieldDescriptor, Any]]:
    """The extensions set in ``message``, as (descriptor, value) pairs by number."""
    plan = extension_plan(type(message))
    holder = None if plan is None else extensions_of(message, False)
    if plan is None or holder is None:
        return []
    descriptors = plan.cls.EXTENSIONS
    items = []
    for field in plan.fields_by_slot:
        value = getattr(holder, field.name) if field.repeated else field.member.__get__(holder)
        if field.repeated and not isinstance(value, Sized):  # stored around the checks
            continue  # (the encoder refuses it)
        if len(value) if field.repeated else holder.HasField(field.name):
            items.append((descriptors[field.name], value))
    return sorted(items, key=lambda item: item[0].number)


class ExtensionDict:
    """``message.Extensions``: the extensions of one struct, keyed by ``FieldDescriptor``."""

    __slots__ = ("_message",)
    __hash__ = None  # type: ignore[assignment]  # mutable, as pb2's

    def __init__(self, message: Struct) -> None:
        self._message: Any = message

    def _made(self) -> Any:
        """The struct of the message's extensions, made if need be."""
        return extensions_of(self._message, True)

    def _field(self, extension: Any) -> FieldPlan:
        """The field of the extensions' struct that ``extension`` names (KeyError if none)."""
        if not isinstance(extension, FieldDescriptor) or not extension.is_extension:
            raise KeyError(f"{extension!r} is not an extension's FieldDescriptor")
        cls = type(self._message)
        name = cls.__plan__.full_name
        extended = extension.containing_type.full_name  # type: ignore[union-attr]
        if extended != name:
            raise KeyError(f"extension {extension.full_name} extends {extended}, not {name}")
        plan = extension_plan(cls)
        field = None if plan is None else plan.by_name.get(f"[{extension.full_name}]")
        if plan is None or field is None:
            raise KeyError(
                f"{extension.full_name} is not an extension of {name} in its struct class's "
                "descriptor pool (extensions are taken when the class is made)"
            )
        known = plan.cls.EXTENSIONS[field.name]
        if known is not extension and _shape(known) != _shape(extension):
            raise KeyError(
                f"{extension.full_name} of another descriptor pool (number "
                f"{extension.number}, type {extension.type}) is not the extension "
                f"{known.full_name} of {name}'s struct class (number {known.number}, "
                f"type {known.type})"
            )
        return field

    def _singular(self, extension: Any) -> FieldPlan:
        field = self._field(extension)
        if field.repeated:
            raise KeyError(f"{extension.full_name} is repeated: a singular method is required")
        return field

    def __getitem__(self, extension: FieldDescriptor) -> Any:
        field = self._field(extension)
        if field.repeated:
            return getattr(self._made(), field.name)
        if field.message is not None:
            return unset_part(self._made(), field)
        holder = extensions_of(self._message, False)
        return field.default if holder is None else field.member.__get__(holder)

    def __setitem__(self, extension: FieldDescriptor, value: Any) -> None:
        field = self._field(extension)
        if field.repeated or field.message is not None:
            kind = "repeated" if field.repeated else "message"
            raise TypeError(
                f"{field.label}: a {kind} extension is not assigned; change it in place"
            )
        if value is None:
            raise TypeError(f"{field.label}: None is not a value; ClearExtension unsets it")
        setattr(self._made(), field.name, value)

    def __delitem__(self, extension: FieldDescriptor) -> None:
        field = self._field(extension)
        holder = extensions_of(self._message, False)
        if holder is not None:
            holder.ClearField(field.name)

    def __contains__(self, extension: object) -> bool:
        """Whether an extension is set (a repeated one: has elements), as pb2's ``in``."""
        field = self._field(extension)
        if field.repeated:
            holder = extensions_of(self._message, False)
            return holder is not None and len(getattr(holder, field.name)) > 0
        return self.has(extension)

    def has(self, extension: Any) -> bool:
        """Whether a singular extension is set (``HasExtension``)."""
        field = self._singular(extension)
        holder = extensions_of(self._message, False)
        return holder is not None and bool(holder.HasField(field.name))

    def __len__(self) -> int:
        return len(extension_items(self._message))

    def __iter__(self) -> Iterator[FieldDescriptor]:
        """The extensions set, by number."""
        return iter([extension for extension, _ in extension_items(self._message)])

    def __eq__(self, other: object) -> bool:
        """The mappings of one message are equal, as pb2's (messages compare with ``==``)."""
        if not isinstance(other, ExtensionDict):
            return NotImplemented
        return self._message is other._message

    def __repr__(self) -> str:
        items = ", ".join(f"{e.full_name}: {v!r}" for e, v in extension_items(self._message))
        return f"Extensions({{{items}}})"


def _shape(extension: FieldDescriptor) -> tuple[int, int, bool]:
    return (extension.number, extension.type, extension.is_repeated)
