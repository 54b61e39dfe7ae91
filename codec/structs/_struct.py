"""Structs: message objects with their fields in slots at fixed offsets.

Strategy: each message type gets a heap type deriving from :class:`Struct`
whose ``__slots__`` are its fields, so a value sits in the object at a fixed
offset, read once into its plan (:mod:`codec.structs._plan`; msgspec's
``StructMeta`` layout): Python reads fields through member descriptors, the
compiled encoder (:mod:`codec.structs._encode`) and decoder
(:mod:`codec.structs._decode`) by offset, and a vectorcall constructor takes
keywords without a kwargs dict. Assignment is checked as pb2 checks it (see
"the object model"); repeated and map fields read as checked containers.
What both engines do per field (read or store a slot, test a presence bit)
is inline in ``_struct.pxd``, so each compiles it into its own loop.

This file is Cython pure-Python mode (types in ``_struct.pxd``).
"""

from __future__ import annotations

import contextlib
import copy
import math
import weakref
from typing import Any

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython  # type: ignore[no-redef]

from google.protobuf.message import Message as ProtobufMessage

from codec._wire import LONE_SURROGATE
from codec.errors import EncodeError

if not cython.compiled:  # compiled, _struct.pxd cimports these C functions and constants
    from operator import getitem as PyTuple_GET_ITEM

    PyDict_SetItem = dict.__setitem__

    from codec._varint import bits_float32, float32_bits
    from codec._wire import (
        BOOL,
        BYTES,
        DOUBLE,
        ENUM,
        FLOAT,
        GROUP,
        MESSAGE,
        STRING,
        integer_of,
        real_of,
        scalar_bits,
        truth_of,
    )
    from codec.structs._plan import SHAPE_NUMBER, SHAPE_TEXT, FieldPlan, MessagePlan

COMPILED: bool = cython.compiled

_PLAN_NAME = "__plan__"  # the class attribute holding a struct class's MessagePlan
# Nesting costs C stack (a few hundred bytes a level, compiled), and a thread's
# stack can be small (32 KiB is legal): the encoder and the decoder stop, with
# an error, while CODEC_STACK_RESERVE of it is left (16 KiB; more under
# AddressSanitizer, see _struct.pxd), whatever max_depth allows.
STACK_EXHAUSTED = "nested deeper than this thread's stack allows"
_RECENT_PLAN: MessagePlan | None = None  # of the struct class constructed last (see _construct)


# --- the object model ------------------------------------------------------
#
# A struct class is a heap type deriving from Struct whose ``__slots__`` are
# its fields, so each value lives in the object at a fixed offset: Python
# reads a field through the slot's member descriptor (as fast as an
# attribute read gets), and the compiled encoder and decoder read and write
# it by offset. A slot holds what the field reads as: the value, or the
# field's default while unset. Presence (proto2 and proto3 ``optional``
# scalars, oneof members, sub-messages) is a bit in ``_has``. Repeated and
# map fields start empty (a NULL slot), so an empty one costs nothing; the
# FieldAccess descriptor makes the container on first use: a Repeated (a
# list whose additions are checked) or Entries (a dict whose writes are).
# A sub-message's slot is empty until it is set, or read (see "default
# sub-messages"). A slot may also be
# NULL because the object was made with ``cls.__new__(cls)`` or emptied
# through the slot's member descriptor (``__delete__``): every reader treats
# NULL as unset.
#
# Writes go through Struct.__setattr__ and the containers' methods, which
# check the value as pb2 does (TypeError for a wrong type, ValueError out of
# range) and clear the other members of a oneof. The encoder checks every
# value again: a slot's member descriptor (``__set__``) stores any value
# around those checks, and so does ``list.append(items, value)``, so a bad
# value can never reach the wire.


if not cython.compiled:  # compiled, _struct.pxd holds these, inlined where they are used

    def _slot(message: Any, field: FieldPlan) -> Any:
        """The value in ``field``'s slot of ``message`` (None for an empty slot)."""
        try:
            return field.member.__get__(message, None)
        except AttributeError:
            return None

    _lent = _slot  # uncompiled, every reference is held

    def _has(message: Struct, bit: int) -> bool:
        """Whether presence bit ``bit`` of ``message`` is set."""
        return bool((vars(message).get("_has", 0) >> bit) & 1)

    def _is_present(message: Struct, field: FieldPlan, value: Any) -> bool:
        """Whether a singular field with presence is set (its slot holds ``value``)."""
        if field.has_bit >= 0:
            return _has(message, field.has_bit)
        return value is not None


if not cython.compiled:  # compiled, _struct.pxd holds these, inlined where they are used

    def _store(message: Any, field: FieldPlan, value: Any) -> None:
        """Put ``value`` in ``field``'s slot of ``message``, unchecked."""
        field.member.__set__(message, value)

    _put = _store  # uncompiled, every object is tracked

    def _set_field(plan: MessagePlan, message: Struct, field: FieldPlan, value: Any) -> None:
        """Store a checked (or decoded) value: presence set, other oneof members cleared."""
        if field.oneof_others:
            _clear_others(plan, message, field)
        _store(message, field, value)
        if field.has_bit >= 0:
            _mark(message, plan, field.has_bit, True)

    _set_value = _set_field  # uncompiled, every object is tracked


def _mark(message: Struct, plan: MessagePlan, bit: int, present: bool) -> None:
    """Set or clear presence bit ``bit`` of ``message``."""
    if not cython.compiled:
        state = vars(message)
        state["_has"] = _with_bit(state.get("_has", 0), bit, present)
    elif bit < 64:
        message._has = _with_bit(message._has, bit, present)
    elif present or message._has_more is not None:
        words = _more_words(message, plan)
        words[(bit >> 6) - 1] = _with_bit(words[(bit >> 6) - 1], bit & 63, present)


def _with_bit(word: int, bit: int, present: bool) -> int:
    """``word`` with bit ``bit`` set or cleared."""
    if cython.compiled:  # a 64-bit mask: ``one`` is a uint64_t (a C int shifted by 63 is undefined)
        one = 1
        mask = one << bit
    else:
        mask = 1 << bit
    return word | mask if present else word & ~mask


def _more_words(message: Struct, plan: MessagePlan) -> Any:
    """Compiled: the presence words past the first, made (zeroed) on first use.

    They are a bytearray the struct holds, so freeing the struct frees them
    with no deallocator of its own. Words made for a class with fewer bits
    (the struct's ``__class__`` since assigned another struct class of the
    same slots) are grown to ``plan``'s, keeping the bits they hold.
    """
    size = (plan.presence_words - 1) * 8
    held = message._has_more  # type: ignore[attr-defined]
    if held is None or len(held) < size:
        if plan.presence_words < 2:  # the bits of a bound plan fit its words
            raise ValueError(f"{plan.full_name} has no presence bit past 63")
        grown = bytearray(size)
        if held is not None:
            grown[: len(held)] = held
        message._has_more = grown
    return cython.cast(word_ptr, PyByteArray_AS_STRING(message._has_more))  # type: ignore[name-defined, attr-defined]


def _container(plan: MessagePlan, message: Any, field: FieldPlan) -> Any:
    """The container of a repeated or map field of ``plan``'s ``message``, made and stored
    on first use: the :class:`Repeated` or :class:`Entries` Python code reads, which the
    decoder fills through the list's or the dict's own C API, unchecked."""
    items = _slot(message, field)
    if items is None:
        if field.map_key is not None:
            items = _new_entries(field, None)
        else:
            items = _new_items(plan, field, None)
        if cython.compiled and not _is_tracked(message):  # one being decoded (2)
            PyObject_GC_UnTrack(items)
        _put(message, field, items)
    return items


def _items(plan: MessagePlan, message: Struct, field: FieldPlan) -> Any:
    """The container of a repeated or map field as Python code reads it.

    A :class:`Repeated` or :class:`Entries`, made on first use from the
    list or dict the decoder filled, if any. It tells ``message`` when it is
    added to, if ``message`` is a default sub-message (see :func:`written`).
    A sequence of another kind that was assigned (a numpy array) reads as it
    is.
    """
    found = _field_value(message, field)
    if found is not None and type(found) is not list and type(found) is not dict:
        return found
    owner = None if _parent_of(message) is None else _weak(message)
    if field.map_key is not None:
        entries = _new_entries(field, owner)
        if found is not None:
            dict.update(entries, found)
        _store_read_container(message, field, entries)
        return entries
    items = _new_items(plan, field, owner)
    if found is not None:
        list.extend(items, found)
    _store_read_container(message, field, items)
    return items


def _store_read_container(message: Struct, field: FieldPlan, container: Any) -> None:
    """Store the container :func:`_items` made: untracked if ``message`` is (2)."""
    if cython.compiled and not PyObject_GC_IsTracked(message):
        PyObject_GC_UnTrack(container)
        _put_below(message, field, container)
    else:
        _store(message, field, container)


def _clear_field(plan: MessagePlan, message: Struct, field: FieldPlan) -> None:
    """Return a field to unset: its default, no presence, an empty container."""
    if field.has_bit >= 0:
        _mark(message, plan, field.has_bit, False)
    if field.repeated:
        if cython.compiled:
            place = cython.cast(slot_ptr, _address(message, field))
            old = place[0]
            place[0] = cython.NULL
            Py_XDECREF(old)
        else:
            with contextlib.suppress(AttributeError):  # already empty
                field.member.__delete__(message)
    else:
        _store(message, field, field.default)


def _clear_others(plan: MessagePlan, message: Struct, field: FieldPlan) -> None:
    """Unset the members of ``field``'s oneof other than ``field``.

    A member already unset is left as it is. A message member may hold its
    default sub-message: as in upb, it stays, and a write to it sets the
    member again (see "default sub-messages"). Any other member holds its
    default already, unless a slot was filled around the checks. A decoded
    message meets one member of each oneof, so its siblings are all unset.
    """
    others = field.oneof_others
    for i in range(len(others)):
        member = PyTuple_GET_ITEM(others, i)  # not held: the plan holds it
        if _set_or_filled(message, cython.cast(FieldPlan, member)):
            _clear_field(plan, message, cython.cast(FieldPlan, member))


def _set_or_filled(message: Struct, member: FieldPlan) -> bool:
    """Whether a oneof member is set, or holds anything but its default (a message
    member's default sub-message stays: see above)."""
    return (
        member.has_bit < 0
        or _has(message, member.has_bit)
        or (
            member.message is None
            and cython.cast(object, _lent(message, member)) is not member.default
        )
    )


@cython.cfunc
@cython.inline
@cython.locals(plan=MessagePlan, field=FieldPlan, kind=cython.int)
def _checked(plan: MessagePlan, field: FieldPlan, value: Any) -> Any:
    """``value`` as field ``field`` stores it, checked as pb2 checks an assignment.

    An exact int for an integer field and an exact str for a string field
    are checked here, inline; every other value by :func:`_checked_by_kind`.
    """
    kind = field.kind
    if field.shape <= SHAPE_NUMBER:
        if type(value) is int and kind < FLOAT and kind != BOOL and kind != ENUM:
            scalar_bits(field, kind, value)  # the range check
            return value
    elif field.shape == SHAPE_TEXT and type(value) is str:
        _check_text(field, plan, value)
        return value
    return _checked_by_kind(plan, field, value)


def _checked_by_kind(plan: MessagePlan, field: FieldPlan, value: Any) -> Any:
    """``value`` as field ``field`` stores it, checked as pb2 checks an assignment.

    A wrong type is a TypeError and a value out of range an EncodeError (a
    ValueError), as pb2 raises them; numbers are stored as pb2 reads them
    back (an ``int`` for an integer field, a ``float`` for a floating-point
    one, a ``bool``). The integer, bool and float rules are the encoder's.
    A bytes field also takes a bytearray or memoryview (the decoder's
    zero-copy values). Message fields take a struct of their type, a dict of
    its fields' values (made into one, as pb2's constructors take it), or
    None to clear them. A repeated field takes a list or tuple of what its
    elements take, made into a :class:`Repeated`; one of numbers or strings
    also takes another sequence (a numpy array), kept as it is and checked
    when it is encoded. A map field takes a dict (or what ``dict()`` takes)
    whose keys and values are checked as its entry's fields, made into
    :class:`Entries`.
    """
    if not field.repeated:
        return _checked_value(plan, field, value)
    if field.map_key is not None:
        if isinstance(value, (str, bytes)):
            raise _type_error(plan, field, "a dict", value)
        try:
            pairs = dict(value)
        except (TypeError, ValueError):
            raise _type_error(plan, field, "a dict", value) from None
        entries = _new_entries(field, None)
        _put_entries(entries, pairs)
        return entries
    if isinstance(value, (str, bytes, dict)) or not _sized(value):
        raise _type_error(plan, field, "a sequence", value)
    holds_structs = _holds_structs(field)
    if not holds_structs and not isinstance(value, (list, tuple)):
        return value  # a numpy array, or another sequence: kept as it is, checked when encoded
    items = _new_items(plan, field, None)  # tracked: so must be what it holds (4)
    checked = [_checked_value(plan, field, item) for item in value]
    if holds_structs:
        for item in checked:
            _track_value(item)
    list.extend(items, checked)
    return items


def _checked_value(plan: MessagePlan, field: FieldPlan, value: Any) -> Any:
    """``value`` as a singular field, or an element of a repeated one, stores it (see above)."""
    kind = field.kind
    if kind in (MESSAGE, GROUP):
        sub: MessagePlan = field.message  # type: ignore[assignment]  # linked
        if sub.convert is not None and value is not None and type(value) is not sub.cls:
            converted = sub.convert(value)  # a well-known type's Python value
            if converted is not None:
                return converted
        if type(value) is dict:
            try:
                return sub.cls(**value)
            except (TypeError, ValueError) as error:  # its type kept, the field named
                error.args = (f"{field.label}: {error}",)
                raise
        if type(value) is not sub.cls and (value is not None or field.repeated):
            expected = f"a {sub.full_name} struct or a dict"
            if not field.repeated:
                expected = f"a {sub.full_name} struct, a dict or None"
            raise _type_error(plan, field, expected, value)
        return value
    if kind == STRING:
        if type(value) is str:
            _check_text(field, plan, value)
            return value
        if isinstance(value, bytes):
            try:
                return value.decode()
            except UnicodeDecodeError as error:  # as pb2 raises it, with the field named
                error.reason = f"{plan.full_name}.{field.name}: {error.reason}"
                raise
        raise _type_error(plan, field, "str", value)
    if kind == BYTES:
        if isinstance(value, (bytes, bytearray, memoryview)):  # the decoder's zero-copy views
            return value
        raise _type_error(plan, field, "bytes", value)
    if kind == DOUBLE and type(value) is float:
        return value
    if kind in (FLOAT, DOUBLE):
        real = value if type(value) is float else float(real_of(field, kind, value, True))
        if kind == FLOAT:  # read back as pb2 reads it: rounded to single precision
            return bits_float32(float32_bits(real))
        return real
    if kind == BOOL:
        if type(value) is bool:
            return value
        return bool(truth_of(field, value, True))
    if kind == ENUM and isinstance(value, str):  # as pb2: a value's name
        return _enum_named(plan, field, value)
    number = value if type(value) is int else integer_of(field, kind, value, True)
    bits = scalar_bits(field, kind, number)  # the range check
    if field.closed_enum is not None:
        _check_member(field, bits)
    if field.enum_members is not None:
        return field.enum_members.get(number, int(number))
    return number


def _enum_named(plan: MessagePlan, field: FieldPlan, name: str) -> Any:
    """The value of an enum field's type named ``name``: its member, or its number if it has
    none (ValueError if the enum has no such name)."""
    values = field.enum_type
    number = None if values is None else values.NUMBERS.get(name)
    if number is None:
        raise _encode_error(field, plan, f"{name!r} is not a name of the enum")
    return values._value2member_map_.get(number, number)


def _type_error(plan: MessagePlan, field: FieldPlan, expected: str, value: Any) -> TypeError:
    problem = f"expected {expected}, not {_type_of(field, value)}"
    return TypeError(f"{plan.full_name}.{field.name}: {problem}")


def _type_of(field: FieldPlan, value: Any) -> str:
    """How an error names the type of ``value`` given to ``field``.

    A struct is named by its message, and one of the field's own message
    type made from another descriptor pool says so: the two classes have
    the same name but do not mix.
    """
    held = getattr(type(value), "__plan__", None)
    if not isinstance(value, Struct) or not isinstance(held, MessagePlan):
        return type(value).__name__
    sub = field.message
    if sub is not None and held.full_name == sub.full_name:
        return (
            f"a struct of {held.full_name} from another descriptor pool (a _pb2 module's "
            "classes and load_structs' of a descriptor set are distinct: take both from one)"
        )
    return f"a struct of {held.full_name}"


def _encode_error(field: FieldPlan, plan: MessagePlan, problem: str) -> EncodeError:
    return EncodeError(f"{plan.full_name}.{field.name}: {problem}")


def _check_member(field: FieldPlan, bits: int) -> None:
    """Refuse an enum number (its bits) that the field's closed enum does not declare."""
    if cython.compiled:
        number = cython.cast(cython.longlong, bits)
    else:
        number = bits - (1 << 64) if bits >> 63 else bits
    if number not in field.closed_enum:  # type: ignore[operator]  # the callers checked it is set
        raise EncodeError(f"{field.label}: {number} is not a value of its closed enum")


def _lone_surrogate(field: FieldPlan, plan: MessagePlan) -> EncodeError:
    """The error for a ``str`` with no UTF-8 form (compiled: the one CPython raised is cleared)."""
    if cython.compiled:
        PyErr_Clear()
    return _encode_error(field, plan, LONE_SURROGATE)


def _check_text(field: FieldPlan, plan: MessagePlan, text: str) -> None:
    """Refuse a ``str`` with no UTF-8 form (compiled: CPython makes and keeps it)."""
    if cython.compiled:
        if utf8_or_null(text, cython.address(size)) == cython.NULL:
            raise _lone_surrogate(field, plan)
    else:
        try:
            text.encode()
        except UnicodeEncodeError:
            raise _lone_surrogate(field, plan) from None


def _sized(value: Any) -> bool:
    try:
        len(value)
    except TypeError:  # no length, or a 0-d numpy array
        return False
    return True


def _plan_of_class(cls: Any) -> MessagePlan:
    """The plan of a struct class (or of a subclass of one), checked to match its layout.

    Compiled, ``__plan__`` is found through CPython's type attribute cache.
    """
    plan = None
    if not cython.compiled:
        plan = getattr(cls, _PLAN_NAME, None)
    elif isinstance(cls, type):
        found = _PyType_Lookup(
            cython.cast(type_object_ptr, cython.cast(object_ptr, cls)),
            cython.cast(object_ptr, _PLAN_NAME),
        )
        plan = None if found == cython.NULL else cython.cast(object, found)
        if type(plan) is MessagePlan and cython.cast(MessagePlan, plan).cls is cls:
            return plan
    if not isinstance(plan, MessagePlan):
        raise TypeError(_not_a_struct_class(cls))
    bound: MessagePlan = plan
    if bound.cls is not cls and not (isinstance(cls, type) and issubclass(cls, bound.cls)):
        raise TypeError(f"{cls.__name__}.__plan__ is not the plan of its class")
    return bound


def plan_of(message: Any) -> MessagePlan:
    """The plan of a struct instance."""
    if not isinstance(message, Struct):
        raise EncodeError(_not_a_struct(message))
    return _plan_of_class(type(message))


def _not_a_struct_class(cls: Any) -> str:
    """What is wrong with ``cls``, given where a struct class is needed (a pb2 class, named)."""
    name = getattr(cls, "__name__", repr(cls))
    if isinstance(cls, type) and issubclass(cls, ProtobufMessage):
        return f"{name!r} is a google.protobuf message class; its struct is codec.struct({name})"
    return f"{name!r} is not a struct class"


def _not_a_struct(message: Any) -> str:
    """What is wrong with ``message``, given where a struct is needed (a pb2 message, named)."""
    if isinstance(message, ProtobufMessage):
        return (
            f"expected a struct, not the google.protobuf message {type(message).__name__}: "
            "convert it with codec.from_pb2(message), or call its SerializeToString()"
        )
    return f"expected a struct, not {type(message).__name__}"


def new_struct(plan: MessagePlan) -> Struct:
    """A new struct of ``plan``'s class with every field unset.

    Compiled, it is not tracked by the cycle collector while it holds only
    numbers, strings and bytes, which cannot make a cycle (as msgspec does
    with its structs); see "the cycle collector" below.
    """
    message = _allocated(plan)
    _fill_defaults(plan, message)
    return message


def _allocated(plan: MessagePlan) -> Struct:
    """A new struct of ``plan``'s class, its slots all empty."""
    cls = plan.cls
    if cython.compiled:  # the class's tp_new, without a method call (the base's, inherited)
        message = cython.cast(type_object_ptr, cls).tp_new(cls, cython.NULL, cython.NULL)
        PyObject_GC_UnTrack(message)
        return cython.cast(Struct, message)  # (no type test: tp_new of a struct class's)
    return Struct.__new__(cls)  # type: ignore[no-any-return]


# --- the cycle collector ---------------------------------------------------
#
# Compiled, structs and their containers are tracked by Python's cycle
# collector only where a cycle could pass through them, so that a program
# keeping millions of decoded messages pays no collection for them:
#
# 1. A new struct is untracked (new_struct): holding only numbers, strings
#    and bytes, it cannot be part of a cycle. _store tracks it from the first
#    container, struct or memoryview stored in it.
# 2. What a decoder makes is never tracked: a decoded message holds no
#    cycle. Its structs are new ones; its containers are made untracked
#    when their message is (_container, add_decoded_entry), and its
#    sub-messages stored without tracking (_set_value). A message it merges
#    into that was tracked is untracked, with what it holds, when it ends
#    (untrack_decoded). A container made when a field of such a struct is
#    read, and a default sub-message read from it, are stored untracked too
#    (_put_below): reading never tracks.
# 3. A cycle is closed by a store made through the checks: an assignment, a
#    constructor's argument, an element or entry added to a container, a
#    default sub-message's first write. Before it (or, for a container, just
#    after it) track_store tracks the holder and the value, each with every
#    struct and container below it that holds one (track_reachable). Every
#    object of a cycle is below the value that closed it, so all are tracked.
# 4. So a tracked struct or container holds only tracked ones, or leaves
#    (which hold no struct and no container), and _put_below keeps it so
#    when a leaf is given a child: track_reachable does not walk below a
#    tracked one, and tracks each object at most once in its life. Fields
#    that cannot hold structs (numbers, strings, maps of them) are never
#    walked, so adding to them costs nothing.
#
# A store made around the checks (a slot's descriptor, list.append on a
# container) is not seen: a cycle made that way is not collected.


def untrack_decoded(plan: MessagePlan, message: Struct) -> None:
    """Leave ``message``, and the lists, dicts and structs it holds, out of the collector (2).

    Called as each message a decoder makes or merges into ends, after its sub-messages.
    """
    # untracked (as every message a decoder makes is), nothing it holds was tracked by it
    if cython.compiled and PyObject_GC_IsTracked(message):
        fields = plan.containers
        for i in range(len(fields)):
            value = _slot(message, cython.cast(FieldPlan, fields[i]))
            if not PyType_IS_GC(Py_TYPE(value)) or not PyObject_GC_IsTracked(value):
                continue
            if _is_node(value):  # the plain lists of _append too
                PyObject_GC_UnTrack(value)
        extensions = plan.extensions
        if extensions is not None:  # their struct's fields were decoded into it directly
            value = _slot(message, extensions)
            if type(value) is extensions.message.cls:  # type: ignore[union-attr]  # linked
                untrack_decoded(extensions.message, value)  # type: ignore[arg-type]
        PyObject_GC_UnTrack(message)


def add_decoded_entry(mapping: dict[Any, Any], key: Any, value: Any) -> None:
    """Put a decoded entry in ``mapping``, a map's dict, unchecked. A dict tracks itself
    when given a struct: it is left untracked if it was, as the message holding it is
    until that message ends (2)."""
    untracked = not _is_tracked(mapping)
    PyDict_SetItem(mapping, key, value)  # the dict's own store, not an Entries' checked one
    if cython.compiled and untracked:
        PyObject_GC_UnTrack(mapping)


def _is_tracked(value: Any) -> bool:
    """Whether the cycle collector tracks ``value`` (uncompiled: every object counts as so)."""
    if cython.compiled:
        return PyObject_GC_IsTracked(value)  # type: ignore[no-any-return]
    return True


def _is_node(value: Any) -> bool:
    """Whether ``value`` is a struct or a container, which may hold structs."""
    return isinstance(value, (Struct, list, dict))


def track_reachable(root: Any) -> None:
    """Track ``root`` and every struct and container below it that holds one (3, 4)."""
    if cython.compiled and not _is_leaf(root):  # uncompiled, every object is tracked
        pending: list[Any] = []
        _push_held(root, pending)
        if not PyObject_GC_IsTracked(root):
            PyObject_GC_Track(root)
        while pending:
            item = pending.pop()
            if PyObject_GC_IsTracked(item):
                continue  # and so is what it holds (4)
            if _push_held(item, pending):
                PyObject_GC_Track(item)


def _holds_structs(field: FieldPlan | None) -> bool:
    """Whether ``field``'s values may be structs: a message field, or a map of messages."""
    return (
        field is not None
        and field.message is not None
        and (field.map_key is None or field.map_value.message is not None)  # type: ignore[union-attr]  # a map
    )


def _is_leaf(item: Any) -> bool:
    """Whether ``item``, a struct or a container, holds no struct and no container of them."""
    return not _held(item, None)


def _push_held(item: Any, pending: list[Any]) -> bool:
    """Append the structs and containers of structs that ``item``, a struct or a
    container, holds; whether it holds any (or a pending field of them)."""
    return _held(item, pending)


def _held(item: Any, pending: list[Any] | None) -> bool:
    """Whether ``item``, a struct or a container, holds a struct or a container of them;
    each is appended to ``pending``, or the first one found answers, if it is None."""
    found = False
    if isinstance(item, Struct):
        plan = _plan_of_class(type(item))
        fields = plan.containers
        for i in range(len(fields) + 1):  # the fields, then the extensions' slot
            field = plan.extensions if i == len(fields) else cython.cast(FieldPlan, fields[i])
            if field is None or not _holds_structs(field):
                continue
            value = _slot(item, field)
            if value is PENDING:  # structs to come, parsed untracked (see "pending fields")
                if pending is None:
                    return True
                found = True
            elif _is_node(value):
                if pending is None:
                    return True
                pending.append(value)
                found = True
        return found
    for value in dict.values(item) if isinstance(item, dict) else item:
        if _is_node(value):
            if pending is None:
                return True
            pending.append(value)
            found = True
    return found


def _put_below(message: Struct, field: FieldPlan, value: Any) -> None:
    """Store ``value``, untracked and holding no struct (a default sub-message, or a
    container of a decoded field), in ``message``, keeping 4: a leaf given a struct or a
    container of structs is tracked first, as a tracked one may hold it; a message that
    held one already was made by a decoder, and stays untracked with all it holds (2)."""
    needs_tracking = _holds_structs(field) and not _is_tracked(message) and _is_leaf(message)
    if cython.compiled and needs_tracking:
        PyObject_GC_Track(message)
    _put(message, field, value)


def track_store(holder: Any, value: Any) -> None:
    """Before ``holder`` is given ``value`` through the checks: both tracked as needed (3)."""
    if cython.compiled and PyType_IS_GC(Py_TYPE(value)):
        if not PyObject_GC_IsTracked(holder):
            track_reachable(holder)
        _track_value(value)


def _track_value(value: Any) -> None:
    """Track ``value``, about to be held through the checks, as needed (3)."""
    if _is_node(value) and not _is_tracked(value):
        track_reachable(value)


def _fill_defaults(plan: MessagePlan, message: Struct) -> None:
    """Store each singular field's default in its slot, where the slot is still empty.

    A default (a number, string, bytes, enum member or None) holds no struct and no
    container: the message's tracking stays as it is (see "the cycle collector").
    """
    fields = plan.singular
    for i in range(len(fields)):
        field = PyTuple_GET_ITEM(fields, i)  # not held: the plan holds it
        if _is_empty(message, cython.cast(FieldPlan, field)):
            _put(message, cython.cast(FieldPlan, field), cython.cast(FieldPlan, field).default)


def _is_empty(message: Any, field: FieldPlan) -> bool:
    """Whether ``field``'s slot of ``message`` holds nothing (not even None)."""
    if cython.compiled:
        return cython.cast(slot_ptr, _address(message, field))[0] == cython.NULL
    try:
        field.member.__get__(message, None)
    except AttributeError:
        return True
    return False


def _reset(plan: MessagePlan, message: Struct) -> None:
    """Unset every field and extension of ``message`` and drop its unknown fields."""
    for field in plan.fields_by_slot:
        _clear_field(plan, message, field)
    _set_frame(message, None)  # nothing is pending
    if plan.extensions is not None:
        _store(message, plan.extensions, None)
    set_unknown(message, b"")


# --- default sub-messages ---------------------------------------------------
#
# A singular message field reads, while unset, as an empty message of its
# type, as in pb2: made on the first read and kept in the slot with the
# field's presence bit clear, so that later reads make nothing. It keeps a
# weak reference to the message it was read from (``_parent``). The first
# write to it (an assignment, a method that changes it, an element added to
# one of its repeated fields) sets the field in that message, and so on up
# a chain of such messages (written), unless the field was cleared or set
# to another value meanwhile. Setting another member of its oneof leaves
# it in place (_clear_others), as upb does. The reference is weak so that a
# message and its default sub-messages make no cycle for the collector to
# find.


@cython.cfunc
@cython.inline
def _part(message: Struct, field: FieldPlan) -> Any:
    """The struct in singular message field ``field`` of ``message``: its value, or its default.

    (Or what was stored in the slot around the checks, read as it is.)
    """
    part = _field_value(message, field)
    if part is None:
        part = new_struct(field.message)  # type: ignore[arg-type]  # a message field's, linked
        _set_parent(part, _weak(message))
        _put_below(message, field, part)
    return part


def _weak(message: Any) -> Any:
    """A weak reference to ``message``."""
    if cython.compiled:
        return PyWeakref_NewRef(message, None)
    return weakref.ref(message)


def _parent_of(message: Struct) -> Any:
    """The weak reference of a default sub-message to its message, or None."""
    return message._parent if cython.compiled else vars(message).get("_parent")  # type: ignore[attr-defined]


def _set_parent(message: Struct, parent: Any) -> None:
    if cython.compiled:
        message._parent = parent
    else:
        vars(message)["_parent"] = parent


def written(message: Struct) -> None:
    """Note a write to ``message``: if it is a default sub-message, it is set where it was read."""
    link = _parent_of(message)
    while link is not None:
        _set_parent(message, None)
        parent = link()
        if parent is None:  # gone: nothing holds the field
            return
        plan = _plan_of_class(type(parent))
        field = _field_holding(plan, parent, message)
        if field is None:  # cleared or replaced since it was read
            return
        track_store(parent, message)
        if field is not plan.extensions:
            _set_field(plan, parent, field, message)
        message = parent
        link = _parent_of(message)


def _field_holding(plan: MessagePlan, message: Struct, part: Struct) -> FieldPlan | None:
    """The singular message field of ``message`` (or its extensions' slot) holding ``part``."""
    fields = plan.fields_by_slot
    for i in range(len(fields)):
        field: FieldPlan = cython.cast(FieldPlan, fields[i])
        if field.has_bit >= 0 and field.message is not None and _slot(message, field) is part:
            return field
    if plan.extensions is not None and _slot(message, plan.extensions) is part:
        return plan.extensions
    return None


# --- pending fields ---------------------------------------------------------
#
# A lazy decode (``Decoder(lazy=True)``, see _decode.py) reads a message's
# own numbers and strings at once and leaves its sub-messages, repeated and
# map fields pending, to be parsed when they are first read:
#
# 1. A pending field's slot holds PENDING. The struct keeps its frame (the
#    Decoding that holds the frame's bytes and the decode's options) and
#    where its own fields lie in the frame (_start, _end).
# 2. Python code reads a field through _field_value. At the first read of
#    a pending field, every pending field of the struct is parsed from its
#    bytes, in one walk (ready): the fields of a message are mostly read
#    together, and a walk per field costs a walk of the message each. The
#    frame was checked before any of it was left pending, so this parse
#    cannot fail on the bytes.
# 3. Presence needs no parse: a pending sub-message's presence bit is set,
#    as it would be once parsed. So HasField and WhichOneof read slots as
#    they are.
# 4. The encoder readies a struct before it writes it, as do copies and
#    pickles, which encode.
# 5. For the cycle collector a pending field of structs holds structs: the
#    struct is not a leaf (_held). What ready makes is untracked, as a
#    decoder's output is, unless the struct is tracked (then it is tracked
#    with it, keeping rule 4).


class Frame:
    """What a struct with pending fields keeps: it parses them (a lazy decode's frame)."""

    def parse(self, message: Struct, first: int, pending: int) -> None:
        """Parse the fields of ``message`` whose bit is set in ``pending`` (bit i: the field
        of slot ``first + i``) into their empty slots."""
        raise NotImplementedError


class _Pending:
    """The value of a pending field's slot."""

    def __repr__(self) -> str:
        return "<pending>"

    def __reduce__(self) -> Any:
        raise TypeError("a pending field is parsed before it is copied")


PENDING = _Pending()


def _field_value(message: Struct, field: FieldPlan) -> Any:
    """What ``field``'s slot of ``message`` holds, pending fields parsed first (2)."""
    value = _slot(message, field)
    if value is PENDING:
        ready(message)
        value = _slot(message, field)
        if value is PENDING:  # stored around the checks (a slot's descriptor): unset
            return None
    return value


def field_value(message: Struct, field: FieldPlan) -> Any:
    """What ``field``'s slot of ``message`` holds (None when empty), as Python code reads it."""
    return _field_value(message, field)


def defer(plan: MessagePlan, message: Struct, field: FieldPlan, frame: Any) -> None:
    """Leave ``field`` of ``message`` pending, to be parsed from ``frame`` when read (1)."""
    if field.repeated:
        _put(message, field, PENDING)
    else:
        _set_field(plan, message, field, PENDING)
    _set_frame(message, frame)


def ready(message: Struct) -> None:
    """Parse the pending fields of ``message`` into their slots, in one walk of its bytes
    for each 64 fields (2, 4, 5)."""
    frame = _frame_of(message)
    if frame is not None:
        _set_frame(message, None)
        tracked = _is_tracked(message)
        plan = _plan_of_class(type(message))
        fields = plan.fields_by_slot
        for first in range(0, len(fields), 64):
            pending = 0  # a bit per field of slots first to first + 63 to parse
            for i in range(first, min(first + 64, len(fields))):
                field = cython.cast(FieldPlan, fields[i])
                if _slot(message, field) is PENDING:
                    pending |= cython.cast(cython.ulonglong, 1) << (i - first)
                    _put(message, field, None)  # its occurrences are read into an empty field
            if pending:
                cython.cast(Frame, frame).parse(message, first, pending)
        if cython.compiled:
            untrack_decoded(plan, message)  # as a decoder leaves what it made (2)
            if tracked:
                track_reachable(message)  # unless a store tracked the message before (4)


def _frame_of(message: Struct) -> Any:
    """The frame ``message`` has pending fields in, or None."""
    return message._frame if cython.compiled else vars(message).get("_frame")  # type: ignore[attr-defined]


def _set_frame(message: Struct, frame: Any) -> None:
    if cython.compiled:
        message._frame = frame
    else:
        vars(message)["_frame"] = frame


def set_range(message: Struct, start: int, end: int) -> None:
    """Note that ``message``'s own fields are ``start:end`` of the frame it is read from."""
    if cython.compiled:
        message._start = start
        message._end = end
    else:
        vars(message).update(_start=start, _end=end)


# --- extensions ------------------------------------------------------------
#
# A message's extensions live in a struct of their own (MessagePlan.extend),
# in a hidden slot: None until one is set, read or decoded. The struct is
# a default sub-message of the message (see above): setting an extension
# in it is a write to the message.


def extensions_of(message: Struct, make: bool) -> Struct | None:
    """The struct of ``message``'s extensions, made first if ``make``; else maybe None.

    A value of another type stored in its slot around the checks reads as
    none (the encoder refuses it); ``make`` refuses it with a TypeError.
    """
    plan = _plan_of_class(type(message))
    holder = plan.extensions
    if holder is None:
        raise TypeError(f"{plan.full_name} has no extensions")
    held: MessagePlan = holder.message  # type: ignore[assignment]  # linked
    found = _slot(message, holder)
    if not make and type(found) is not held.cls:
        return None
    if found is None:
        found = new_struct(held)
        _set_parent(found, _weak(message))
        _put_below(message, holder, found)
    if type(found) is not held.cls:
        raise TypeError(f"{plan.full_name}: its extensions' slot holds {type(found).__name__}")
    return found  # type: ignore[no-any-return]


def take_extensions(message: Struct, source: Struct) -> None:
    """Give ``message`` the extensions of ``source``, a struct of the same class."""
    plan = _plan_of_class(type(message))
    if type(source) is not type(message):  # its slots are elsewhere, if it has them
        raise TypeError(f"expected a struct of {plan.full_name}, not {type(source).__name__}")
    if plan.extensions is not None:
        taken = _slot(source, plan.extensions)
        track_store(message, taken)
        _store(message, plan.extensions, taken)


def unset_part(holder: Struct, field: FieldPlan) -> Any:
    """The struct in singular message field ``field`` of ``holder``: its value, or its default."""
    plan = _plan_of_class(type(holder))
    if field.message is None or field.repeated or plan.by_name.get(field.name) is not field:
        raise TypeError(f"{field.label} is not a singular message field of {plan.full_name}")
    return _part(holder, field)


def _blank(plan: MessagePlan, message: Struct) -> bool:
    """Whether ``message`` holds nothing: no field or extension set, no unknown field."""
    if _kept_unknown(message):
        return False
    for field in plan.fields_by_slot:
        value = _field_value(message, field)
        if field.repeated:
            if value is not None and _sized(value) and len(value):
                return False
        elif field.has_bit >= 0:
            if _has(message, field.has_bit):
                return False
        elif value is not None and (value != field.default or negative_zero(value)):
            return False
    if plan.extensions is None:
        return True
    held: MessagePlan = plan.extensions.message  # type: ignore[assignment]  # linked
    holder = _slot(message, plan.extensions)
    if type(holder) is not held.cls:  # empty, or a value stored around the checks
        return holder is None
    return _blank(held, holder)


def negative_zero(value: Any) -> bool:
    """Whether ``value`` is -0.0, which equals a default 0.0 but is written, as upb writes it."""
    return isinstance(value, float) and value == 0.0 and math.copysign(1.0, value) < 0


def _extensions_equal(plan: MessagePlan, left: Struct, right: Struct) -> bool:
    """Whether two structs of ``plan``'s class have the same extensions set, with equal values."""
    if plan.extensions is None:
        return True
    held: MessagePlan = plan.extensions.message  # type: ignore[assignment]  # linked
    a = _slot(left, plan.extensions)
    b = _slot(right, plan.extensions)
    if a is None or b is None:
        other = b if a is None else a
        return other is None or (type(other) is held.cls and _blank(held, other))
    if type(a) is not held.cls or type(b) is not held.cls:  # stored around the checks
        return a is b
    return _fields_equal(held, a, b)


class UnknownFieldError(TypeError, ValueError):
    """A constructor's keyword that names no field.

    A ``TypeError``, as Python's functions raise for an unexpected keyword,
    and a ``ValueError``, as pb2's constructors raise.
    """


def _named(plan: MessagePlan, name: Any) -> FieldPlan:
    """The field named ``name`` (a keyword argument of a constructor); UnknownFieldError if none."""
    field = plan.by_name.get(name)
    if field is None:
        raise UnknownFieldError(f"{plan.full_name} has no field {name!r}")
    return field


@cython.cfunc
@cython.inline
@cython.locals(plan=MessagePlan, message="Struct", field=FieldPlan)
@cython.returns(cython.int)
@cython.exceptval(-1, check=False)
def _assign(plan: MessagePlan, message: Struct, field: FieldPlan, value: Any) -> None:
    """Assign one keyword argument of a constructor, as pb2's does: None leaves it unset."""
    if value is not None:
        value = _checked(plan, field, value)
        _track_value(value)  # the struct being made: untracked, it holds no struct yet (1)
        _set_field(plan, message, field, value)


def _construct(cls: Any, args: Any, nargsf: int, kwnames: Any) -> Any:
    """The vectorcall constructor of struct classes (compiled): keywords only, no kwargs dict.

    Keywords usually come in declaration order, and their names, like the
    fields', are interned: each is first compared by identity with the
    field after the last one found, and looked up by name only otherwise; a
    call that gives every field in order, none None, leaves no slot for the
    defaults to fill. The plan of the class constructed last is kept with the class's version
    tag (which CPython changes when an attribute of the class is set), so a
    loop making structs of one class finds it without a type attribute lookup.
    """
    global _RECENT_PLAN
    plan = _RECENT_PLAN  # one read and one write of it: a finaliser may construct meanwhile
    version = cython.cast(versioned_type_ptr, cls).tp_version_tag  # type: ignore[name-defined]
    if plan is None or plan.cls is not cython.cast(object, cls) or plan.class_version != version:  # type: ignore[attr-defined]
        plan = _plan_of_class(cython.cast(object, cls))
        # The lookup gave the class a version tag; a change to it (__plan__ set) clears it.
        plan.class_version = cython.cast(versioned_type_ptr, cls).tp_version_tag  # type: ignore[attr-defined, name-defined]
        _RECENT_PLAN = plan
    if PyVectorcall_NARGS(nargsf) != 0:  # type: ignore[name-defined]
        raise TypeError(f"{plan.full_name}() takes keyword arguments only")
    message = _allocated(plan)  # the defaults last, in the slots no keyword filled
    if kwnames != cython.NULL:
        names = cython.cast(tuple, kwnames)
        fields = plan.fields_by_slot
        count = len(fields)
        after = 0
        every_slot = len(names) == count  # each field given once, in order, none None
        for i in range(len(names)):
            value = cython.cast(object, args[i])
            if after < count and cython.cast(FieldPlan, fields[after]).name is names[i]:
                field = cython.cast(FieldPlan, fields[after])
            else:
                field = _named(plan, names[i])
                every_slot = False
            every_slot = every_slot and value is not None
            _assign(plan, message, field, value)
            after = field.slot + 1
        if every_slot:
            return message
    _fill_defaults(plan, message)
    return message


def enable_fast_paths(cls: Any) -> None:
    """Compiled: make calling struct class ``cls`` go straight to the vectorcall
    constructor, and freeing its objects to a deallocator that knows their layout
    (``codec_struct_dealloc`` in ``_struct.pxd``), if they are Struct's fields and then
    the class's slots alone. A class of no fields keeps CPython's: its objects are
    Struct's, and ``__class__`` may be assigned between it and any class of that layout,
    which CPython allows only between classes of the same deallocator."""
    _plan_of_class(cls)
    if cython.compiled:
        type_object = cython.cast(type_ptr, cython.cast(object_ptr, cls))
        type_object.tp_vectorcall = cython.cast(vectorcallfunc, _construct)
        if _slots_only(cls):
            cython.cast(type_object_ptr, type_object).tp_dealloc = codec_struct_dealloc


def _slots_only(cls: Any) -> bool:
    """Whether an object of ``cls``, a struct class, is Struct's fields followed by the
    class's own slots, at least one, and nothing else (no ``__dict__``, no slots of
    other classes)."""
    slots = cls.__dict__.get("__slots__", ())
    return (
        isinstance(slots, tuple)
        and len(slots) > 0
        and cls.__dictoffset__ == 0
        and cls.__itemsize__ == 0
        and cls.__weakrefoffset__ == Struct.__weakrefoffset__
        and cls.__basicsize__ == Struct.__basicsize__ + len(slots) * cython.sizeof(cython.p_void)
    )


class Struct:
    """Base class of generated message classes: field values live in slots of the object."""

    def __init__(self, *args: Any, **fields: Any) -> None:
        plan = _plan_of_class(type(self))
        if args:
            raise TypeError(f"{plan.full_name}() takes keyword arguments only")
        _reset(plan, self)
        for name, value in fields.items():
            _assign(plan, self, _named(plan, name), value)

    def __setattr__(self, name: str, value: Any) -> None:
        plan = _plan_of_class(type(self))
        field = plan.by_name.get(name)
        if field is None:
            if name == "_unknown":
                set_unknown(self, value)
                return
            raise AttributeError(f"{plan.full_name} has no field {name!r}")
        if value is None and field.message is None:
            raise TypeError(
                f"{plan.full_name}.{name}: None is not a value; ClearField unsets a field"
            )
        if value is None:
            _clear_field(plan, self, field)
        else:
            value = _checked(plan, field, value)
            track_store(self, value)
            _set_field(plan, self, field, value)
        if _parent_of(self) is not None:
            written(self)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}; ClearField unsets a field")

    def HasField(self, name: str) -> bool:  # pb2's name
        """Whether a field with presence (or a sub-message), or a member of a oneof, is set."""
        plan = _plan_of_class(type(self))
        field = plan.by_name.get(name)
        if field is None:
            if name in plan.oneof_members:
                return Struct.WhichOneof(self, name) is not None
            raise ValueError(f"{plan.full_name} has no field {name!r}")
        if field.repeated or not (field.presence or field.message is not None):
            raise ValueError(f"{plan.full_name}.{name} has no presence")
        return _is_present(self, field, _slot(self, field))

    def ClearField(self, name: str) -> None:  # pb2's name
        """Unset a field, or the member of a oneof: it reads as its default, and is not written."""
        plan = _plan_of_class(type(self))
        field = plan.by_name.get(name)
        members = (field,) if field is not None else plan.oneof_members.get(name)
        if members is None:
            raise ValueError(f"{plan.full_name} has no field {name!r}")
        for member in members:
            _clear_field(plan, self, member)
        written(self)

    def WhichOneof(self, name: str) -> str | None:  # pb2's name
        """Name of the member of oneof ``name`` that is set, or None."""
        plan = _plan_of_class(type(self))
        members = plan.oneof_members.get(name)
        if members is None:
            raise ValueError(f"{plan.full_name} has no oneof {name!r}")
        for i in range(len(members)):
            field: FieldPlan = cython.cast(FieldPlan, PyTuple_GET_ITEM(members, i))
            if _is_present(self, field, _slot(self, field)):
                return field.name
        return None

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        plan = _plan_of_class(type(self))
        return (
            _fields_equal(plan, self, other)
            and unknown_of(self) == unknown_of(other)
            and _extensions_equal(plan, self, other)
        )

    def __repr__(self) -> str:
        fields = ", ".join(_shown(_plan_of_class(type(self)), self))
        return f"{type(self).__name__}({fields})"


def _shown(plan: MessagePlan, message: Struct) -> list[str]:
    """The ``name=value`` of each field (and extension) set in ``message``, for its repr."""
    shown = []
    for field in plan.fields_by_slot:
        value = _field_value(message, field)
        if field.repeated:
            if value:
                shown.append(f"{field.name}={value!r}")
        elif field.presence or field.message is not None:
            if _is_present(message, field, value):
                shown.append(f"{field.name}={value!r}")
        elif value is not None and value != field.default:
            shown.append(f"{field.name}={value!r}")
    if plan.extensions is not None:
        held: MessagePlan = plan.extensions.message  # type: ignore[assignment]  # linked
        holder = _slot(message, plan.extensions)
        if type(holder) is held.cls:  # not a value stored around the checks
            shown += _shown(held, holder)
    return shown


def unknown_of(message: Struct) -> bytes:
    """The unknown fields a struct keeps, as wire bytes."""
    if message is None:  # compiled, a typed argument lets None through
        raise TypeError("expected a struct, not None")
    unknown = _kept_unknown(message)
    return b"" if unknown is None else unknown


def set_unknown(message: Struct, unknown: bytes | None) -> None:
    """Have ``message`` keep ``unknown`` as its unknown fields (None: none)."""
    if message is None:  # compiled, a typed argument lets None through
        raise TypeError("expected a struct, not None")
    if cython.compiled:
        message._unknown = unknown
    else:
        vars(message)["_unknown"] = unknown


# Uncompiled, a struct keeps its presence bits and unknown fields in its
# __dict__, read and written there (vars), never as attributes: a field
# may have the same name (``_unknown``), and its slot would be found first.


@cython.cfunc
@cython.inline
@cython.locals(message=Struct)
def _kept_unknown(message: Struct) -> bytes | None:
    """The unknown fields ``message`` keeps, or None (most structs keep none)."""
    # Uncompiled, a struct made by Struct.__new__ has no _unknown yet.
    return message._unknown if cython.compiled else vars(message).get("_unknown")  # type: ignore[attr-defined]


def _fields_equal(plan: MessagePlan, left: Struct, right: Struct) -> bool:
    for field in plan.fields_by_slot:
        a, b = _field_value(left, field), _field_value(right, field)
        if field.repeated:
            empty: Any = {} if field.map_key is not None else ()  # for a slot never used
            if not _items_equal(empty if a is None else a, empty if b is None else b):
                return False
            continue
        if field.has_bit >= 0:
            if _has(left, field.has_bit) != _has(right, field.has_bit):
                return False
            if not _has(left, field.has_bit):
                continue  # unset on both sides
        if a is not b and a != b and not (a != a and b != b):  # two NaNs are equal, as in pb2
            return False
    return True


def _items_equal(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, dict) or isinstance(b, dict):
        return bool(a == b)
    # Sequences of any kind (lists, tuples, numpy arrays) compare element by element.
    return len(a) == len(b) and all(x == y for x, y in zip(a, b, strict=True))


class FieldAccess:
    """Attribute access to a field that is not read through a slot of its own name.

    A repeated or map field reads as its container, and a singular message
    field as its struct or its default one, made on first use. A field
    whose name its slot cannot have (see ``MessagePlan.slot_names``) reads
    as its slot's value. On an instance the field wins over the
    class's attribute of the same name, and on the class the class's own
    attribute (``on_class``, or the base classes') wins over the field, as
    upb has it: ``msg.DESCRIPTOR`` is a field's value, ``Msg.DESCRIPTOR``
    the message's descriptor.
    """

    def __init__(self, plan: MessagePlan, field: FieldPlan, on_class: Any = None) -> None:
        self.plan = plan
        self.field = field
        self.on_class = on_class

    def __get__(self, instance: Any, owner: Any) -> Any:
        if instance is None:
            return _on_class(self, owner)
        plan = self.plan
        if type(instance) is not plan.cls and _plan_of_class(type(instance)) is not plan:
            raise TypeError(f"{self.field.name} is not a field of {type(instance).__name__}")
        field = self.field  # (instance is a struct of plan's class: checked above)
        if field.repeated:  # maps too
            return _items(plan, cython.cast(Struct, instance), field)
        if field.message is not None:
            return _part(cython.cast(Struct, instance), field)
        return _slot(instance, field)

    def __set__(self, instance: Any, value: Any) -> None:
        Struct.__setattr__(instance, self.field.name, value)

    def __delete__(self, instance: Any) -> None:
        raise AttributeError(f"cannot delete field {self.field.name!r}")


def _on_class(access: FieldAccess, owner: Any) -> Any:
    """What a field's name reads as on its class (see :class:`FieldAccess`)."""
    if access.on_class is not None:
        return access.on_class
    if access.plan.cls is None or owner is None:  # the class is being made
        return access
    with contextlib.suppress(AttributeError):  # an attribute of the base classes
        return getattr(super(access.plan.cls, owner), access.field.name)
    meta = type.__dict__.get(access.field.name)  # or of every class (mro)
    return access if meta is None else meta.__get__(owner, type)


# --- repeated fields ---------------------------------------------------------


class Repeated(list):  # type: ignore[type-arg]
    """The elements of a repeated field: a list whose additions are checked as pb2 checks them.

    ``append``, ``insert``, ``extend`` (and ``+=``) and item assignment
    take what the field's elements take (as :meth:`Struct.__setattr__`
    checks a singular field) and raise pb2's TypeError or ValueError at
    once for anything else. Every other method is the list's own; the
    decoder fills it through the list's C API.
    """

    plan: MessagePlan  # of the message holding the field, which errors name
    field: FieldPlan
    owner: Any  # a weak reference to the default sub-message holding it, or None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise _unowned(self)

    def append(self, value: Any) -> None:
        list.append(self, _element_of(self, value))
        _added(self)

    def insert(self, index: Any, value: Any) -> None:
        list.insert(self, index, _element_of(self, value))
        _added(self)

    def extend(self, values: Any) -> None:
        list.extend(self, [_element_of(self, value) for value in values])
        _added(self)

    def __iadd__(self, values: Any) -> Any:  # type: ignore[misc]  # takes what extend takes
        Repeated.extend(self, values)
        return self

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            list.__setitem__(self, index, [_element_of(self, item) for item in value])
        else:
            list.__setitem__(self, index, _element_of(self, value))
        _added(self)

    def MergeFrom(self, other: Any) -> None:  # pb2's name
        """Append the elements of ``other``, as pb2's containers do."""
        Repeated.extend(self, other)

    def __reduce__(self) -> Any:
        return (list, (list(self),))  # a copy or a pickle is a plain list


class RepeatedMessages(Repeated):
    """The elements of a repeated message field, with pb2's ``add``."""

    def add(self, **fields: Any) -> Any:
        """Append a new message of the field's type, made from ``fields``, and return it."""
        element = _message_plan_of(self.field).cls(**fields)
        list.append(self, element)
        _added(self)
        return element


if not cython.compiled:  # compiled, an object made by __new__ holds None in each
    Repeated.plan = Repeated.field = Repeated.owner = None  # type: ignore[assignment]


def _new_items(plan: MessagePlan, field: FieldPlan, owner: Any) -> Repeated:
    """An empty container of repeated field ``field`` of ``plan``'s messages.

    ``owner``: a weak reference to the default sub-message holding it (see
    :func:`written`), or None.
    """
    if field.message is not None:
        items: Repeated = RepeatedMessages.__new__(RepeatedMessages)
    else:
        items = Repeated.__new__(Repeated)
    items.plan = plan
    items.field = field
    items.owner = owner
    return items


def _element_of(items: Repeated, value: Any) -> Any:
    """``value`` as an element of ``items``' field, checked."""
    if items.field is None:
        raise _unowned(items)
    checked = _checked_value(items.plan, items.field, value)
    _track_value(checked)
    return checked


def _added(items: Repeated) -> None:
    """Note an addition to ``items``: tracked as needed (3), a write to the default
    sub-message holding it, if any."""
    if not _is_tracked(items) and _holds_structs(items.field):
        track_reachable(items)
    owner = items.owner
    if owner is not None:
        items.owner = None
        _write_through(owner)


def _write_through(owner: Any) -> None:
    """Note a write to the message ``owner`` (a weak reference) refers to, if it is alive."""
    message = owner()
    if message is not None:
        written(message)


def _unowned(container: Any) -> TypeError:
    """The error of a container made by its class rather than read from a message."""
    kind = type(container).__name__
    return TypeError(f"a {kind} is made by reading a field of a message, not by calling {kind}")


def _message_plan_of(field: FieldPlan | None) -> MessagePlan:
    """The plan of the messages a container of ``field`` holds (TypeError if none)."""
    if field is None or field.message is None:
        raise TypeError("the container holds no messages")
    return field.message


# --- map fields --------------------------------------------------------------


class Entries(dict):  # type: ignore[type-arg]
    """The entries of a map field: a dict whose writes are checked as pb2 checks them.

    Item assignment, ``update``, ``setdefault``, ``|=`` and ``MergeFrom``
    take the keys and values the map's entry message takes in its ``key``
    and ``value`` fields (checked as :meth:`Struct.__setattr__` checks a
    field) and raise pb2's TypeError or ValueError at once for anything else.
    Reading a missing key makes its entry, with the value's default (an
    empty struct in a map of messages), as pb2 does; ``get`` and ``in`` make
    none. Every other method is the dict's own; the decoder fills it through
    the dict's C API.
    """

    plan: MessagePlan  # of the map's entry message, which errors name
    field: FieldPlan  # the map field
    owner: Any  # a weak reference to the default sub-message holding it, or None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise _unowned(self)

    def __missing__(self, key: Any) -> Any:
        key = _entry_key(self, key)
        value_field: FieldPlan = self.field.map_value  # type: ignore[assignment]  # a map
        if value_field.message is not None:
            value = value_field.message.cls()
        else:
            value = _checked_value(self.plan, value_field, value_field.default)
        tracked = _is_tracked(self)
        dict.__setitem__(self, key, value)
        _entries_added(self, tracked)
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        _put_entries(self, {key: value})

    def update(self, *pairs: Any, **named: Any) -> None:
        _put_entries(self, dict(*pairs, **named))

    def __ior__(self, pairs: Any) -> Any:  # type: ignore[misc]  # takes what update takes
        _put_entries(self, dict(pairs))
        return self

    def setdefault(self, key: Any, default: Any = None) -> Any:
        key = _entry_key(self, key)
        if key not in self:
            _put_entries(self, {key: default})
        return dict.__getitem__(self, key)

    def MergeFrom(self, other: Any) -> None:  # pb2's name
        """Copy in the entries of ``other``, replacing those of the same keys, as pb2 does."""
        pairs = dict(other)
        if self.field is not None and self.field.map_value.message is not None:  # type: ignore[union-attr]
            pairs = {key: copy.copy(value) for key, value in pairs.items()}
        _put_entries(self, pairs)

    def __reduce__(self) -> Any:
        return (dict, (dict(self),))  # a copy or a pickle is a plain dict


class MessageEntries(Entries):
    """The entries of a map of messages, with pb2's ``get_or_create``."""

    def get_or_create(self, key: Any) -> Any:
        """The value of ``key``, made (an empty message) if the map has none."""
        return self[key]


if not cython.compiled:  # as Repeated's
    Entries.plan = Entries.field = Entries.owner = None  # type: ignore[assignment]


def _new_entries(field: FieldPlan, owner: Any) -> Entries:
    """Empty entries of map field ``field``; ``owner`` as :func:`_new_items` takes it."""
    if field.map_value.message is not None:  # type: ignore[union-attr]  # a map
        entries: Entries = MessageEntries.__new__(MessageEntries)
    else:
        entries = Entries.__new__(Entries)
    entries.plan = field.message  # type: ignore[assignment]  # a map's entry
    entries.field = field
    entries.owner = owner
    return entries


def _entry_key(entries: Entries, key: Any) -> Any:
    """``key`` as a key of ``entries``' map, checked."""
    if entries.field is None:
        raise _unowned(entries)
    return _checked_value(entries.plan, entries.field.map_key, key)  # type: ignore[arg-type]  # a map


def _put_entries(entries: Entries, pairs: dict[Any, Any]) -> None:
    """Check every key and value of ``pairs``, then put them all in ``entries``."""
    if entries.field is None:
        raise _unowned(entries)
    plan = entries.plan
    key_field: FieldPlan = entries.field.map_key  # type: ignore[assignment]  # a map
    value_field: FieldPlan = entries.field.map_value  # type: ignore[assignment]
    checked = []
    for key, value in pairs.items():
        if value is None and value_field.message is not None:  # "unset": not a value
            expected = f"a {value_field.message.full_name} struct or a dict"
            raise _type_error(plan, value_field, expected, value)
        key = _checked_value(plan, key_field, key)
        value = _checked_value(plan, value_field, value)
        _track_value(value)
        checked.append((key, value))
    tracked = _is_tracked(entries)  # before a struct value makes the dict track itself
    for key, value in checked:
        dict.__setitem__(entries, key, value)
    if checked:
        _entries_added(entries, tracked)


def _entries_added(entries: Entries, tracked_before: bool) -> None:
    """Note an addition to ``entries``: tracked as needed (3; ``tracked_before``: whether it
    was before the addition), a write to the default sub-message holding it, if any."""
    if not tracked_before and _holds_structs(entries.field):
        track_reachable(entries)
    owner = entries.owner
    if owner is not None:
        entries.owner = None
        _write_through(owner)
