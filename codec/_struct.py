"""Structs: message objects with slots at fixed offsets, and their compiled decoder.

Strategy: :mod:`codec.schema` turns each protobuf message descriptor into a
:class:`MessagePlan`: its fields in number order, each a :class:`FieldPlan`
that knows its kind, tag, presence bit and where its value lives. Each
message type gets a heap type deriving from :class:`Struct` whose
``__slots__`` are its fields, so a value sits in the object at a fixed
offset, read once into the plan (msgspec's ``StructMeta`` layout): Python
reads fields through member descriptors, the compiled encoder and decoder
by offset, and a vectorcall constructor takes keywords without a kwargs
dict. Assignment is checked as pb2 checks it (see "the object model").

Encoding is :mod:`codec._encode`, which reads the slots through the same
plan.

Decoding walks the tags once, looks fields up by number, and follows the
protobuf rules that the conformance suite requires: last value wins for
singular fields, repeated fields accept packed and unpacked input, a
singular message seen twice is merged, a known field with the wrong wire
type and unknown fields are kept, in order, as unknown bytes. Every length
is checked against the bytes left, counts are never taken from the input to
reserve memory, nesting is limited by ``max_depth`` and the number of
decoded elements by ``max_elements``.

This file is Cython pure-Python mode (types in ``_struct.pxd``).
"""

from __future__ import annotations

import contextlib
from typing import Any

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython  # type: ignore[no-redef]

from codec._varint import byte_view
from codec._varint import encode as varint_encode
from codec._wire import NUMPY_DTYPES, SCALAR_KINDS
from codec.errors import (
    DecodeError,
    DepthLimitError,
    EncodeError,
    TruncatedError,
    WireFormatError,
)

if not cython.compiled:  # compiled, _struct.pxd cimports these C functions and constants
    from codec._buffer import uninitialised
    from codec._varint import (
        position,
        read_le,
        varint_size,
        varint_value,
    )
    from codec._wire import (
        BOOL,
        BYTES,
        DOUBLE,
        EGROUP,
        ENUM,
        FLOAT,
        GROUP,
        I32,
        I64,
        LEN,
        MESSAGE,
        SGROUP,
        STRING,
        VARINT,
        fixed_end,
        fixed_value_of,
        integer_of,
        length_end,
        natural_wire_type,
        read_tag,
        real_of,
        scalar_bits,
        skip_group,
        skip_value,
        stray_end_group,
        truth_of,
        varint_length,
        varint_value_of,
    )

COMPILED: bool = cython.compiled

DEFAULT_MAX_DEPTH = 100  # protobuf C++, Java and upb
_MAX_DEPTH = DEFAULT_MAX_DEPTH  # C copy (cdef names cannot be imported)
# Elements (repeated values, messages, unknown fields) one decode may create:
# a few wire bytes can stand for a large object (an empty sub-message is two
# bytes), so a budget bounds what a hostile frame can make us allocate.
DEFAULT_MAX_ELEMENTS = 1_000_000
_MAX_COUNT = 2**62  # the largest max_depth or max_elements (a C Py_ssize_t holds it)

_PLAN_NAME = "__plan__"  # the class attribute holding a struct class's MessagePlan
# Nesting costs C stack (a few hundred bytes a level, compiled), and a thread's
# stack can be small (32 KiB is legal): the encoder and the decoder stop, with
# an error, while CODEC_STACK_RESERVE of it is left (16 KiB; more under
# AddressSanitizer, see _struct.pxd), whatever max_depth allows.
STACK_EXHAUSTED = "nested deeper than this thread's stack allows"
_DIRECT_NUMBERS = 256  # field numbers below this are looked up by list index
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


class FieldPlan:
    """How one field is stored, checked, encoded and decoded.

    Everything the compiled code trusts (where the value lives in the
    object, its presence bit, its sub-plan) is read-only from Python and set
    once, by :meth:`link` and :meth:`MessagePlan.bind`.
    """

    def __init__(
        self,
        name: str,
        number: int,
        kind: int,
        slot: int,
        *,
        repeated: bool = False,
        packed: bool = False,
        presence: bool = False,
        utf8: str = "",
        closed_enum: frozenset[int] | None = None,
        default: Any = None,
    ) -> None:
        self.name = name
        self.label = name  # "package.Message.name" once its MessagePlan is made
        self.number = number
        self.kind = kind
        self.slot = slot  # declaration order
        self.repeated = repeated
        self.packed = packed
        self.presence = presence
        # "strict": invalid UTF-8 is an error (proto3); "bytes": kept as bytes (proto2, as upb).
        self.utf8 = utf8
        self.closed_enum = closed_enum
        self.default = default  # what an unset field reads as (None: a message, or a container)
        # Implicit presence (a proto3 singular scalar): written unless zero, and a slot
        # holding the default object itself is known to be zero without a look.
        self.implicit = not presence and not repeated
        self.wire_type = natural_wire_type(kind)
        self.plain = not repeated and self.wire_type in (VARINT, I32, I64)  # a singular number
        self.tag = (number << 3) | (LEN if packed else self.wire_type)
        self.tag_size = varint_size(self.tag)
        self.end_tag = (number << 3) | EGROUP
        self.message: MessagePlan | None = None  # for MESSAGE and GROUP, and map entries
        self.map_key: FieldPlan | None = None  # for maps: the entry's key and value
        self.map_value: FieldPlan | None = None
        self.numpy_type = NUMPY_DTYPES[kind] if kind in SCALAR_KINDS else ""
        self.oneof_slots: tuple[int, ...] = ()  # all members of this field's oneof, if any
        self.has_bit = -1  # presence bit of a scalar, string or bytes field with presence
        self.member: Any = None  # the slot's member descriptor on the struct class
        self.offset = 0  # compiled: the slot's offset in the struct object

    def link(self, message: MessagePlan, is_map: bool) -> None:
        """Give a message, group or map field the plan of its values (or entries)."""
        if self.message is not None:
            raise ValueError(f"field {self.name} is already linked")
        self.message = message
        if is_map:
            self.map_key, self.map_value = message.fields_by_slot


class MessagePlan:
    """The fields of one message type, in number order, and its struct class."""

    def __init__(self, full_name: str, fields: list[FieldPlan]) -> None:
        self.fields_by_slot = tuple(fields)  # fields[i].slot == i
        self.rename(full_name)
        self.fields = tuple(sorted(fields, key=lambda field: field.number))  # encoding order
        self.by_number = {field.number: field for field in fields}
        self.by_name = {field.name: field for field in fields}
        # Fields by number for small numbers, the common case: a list index, not a dict lookup.
        numbered: list[FieldPlan | None] = [None] * min(
            max(self.by_number, default=0) + 1, _DIRECT_NUMBERS
        )
        for field in fields:
            if field.number < len(numbered):
                numbered[field.number] = field
        self.numbered = tuple(numbered)
        self.presence_words = 0  # 64-bit words of presence bits
        self.oneofs: dict[str, tuple[int, ...]] = {}
        self.cls: Any = None

    def rename(self, full_name: str) -> None:
        """Name the message (and so its fields, as errors name them)."""
        self.full_name = full_name
        for field in self.fields_by_slot:
            field.label = f"{full_name}.{field.name}"

    def add_oneof(self, name: str, slots: tuple[int, ...]) -> None:
        """Declare a oneof: setting one of its members clears the others."""
        if self.cls is not None:
            raise ValueError(f"{self.full_name} is already bound to its class")
        self.oneofs[name] = slots
        for slot in slots:
            member = self.fields_by_slot[slot]
            member.oneof_slots = slots

    def slot_names(self) -> tuple[str, ...]:
        """The ``__slots__`` of the struct class: a field's name, or a hidden one for containers.

        A repeated or map field is read through a :class:`Container`
        descriptor under its own name, which makes its list or dict on first
        use, so its slot has another name, one no field of the message has.
        """
        taken = set(self.by_name)
        names = []
        for field in self.fields_by_slot:
            name = field.name
            if field.repeated:
                name = f"{name}_items"
                while name in taken:
                    name += "_"
                taken.add(name)
            names.append(name)
        return tuple(names)

    def bind(self, cls: Any) -> None:
        """Bind the plan to its struct class: read each slot's offset and number presence bits."""
        if self.cls is not None:
            raise ValueError(f"{self.full_name} is already bound to its class")
        bits = 0
        for field, name in zip(self.fields_by_slot, self.slot_names(), strict=True):
            member = cls.__dict__[name]
            if type(member).__name__ != "member_descriptor":
                raise TypeError(f"{cls.__name__}.{name} is not a slot")
            field.member = member
            field.offset = _member_offset(member)
            if field.presence and field.message is None:
                field.has_bit = bits
                bits += 1
        self.presence_words = (bits + 63) // 64
        self.cls = cls

    def field_numbered(self, number: int) -> FieldPlan | None:
        """The field numbered ``number``, or None."""
        return _field_numbered(self, number)


@cython.cfunc
@cython.inline
@cython.locals(plan=MessagePlan, number=cython.Py_ssize_t, numbered=tuple)
def _field_numbered(plan: MessagePlan, number: int) -> FieldPlan | None:
    """The field numbered ``number`` in ``plan``, or None (small numbers by list index)."""
    numbered = plan.numbered
    if number < len(numbered):
        return numbered[number]
    return plan.by_number.get(number)


def _stack_room() -> bool:
    """Whether the C stack of this thread has room for another level of nesting.

    Compiled, the stack left is measured against the thread's stack bounds
    (``codec_stack_left``, from pthread's attributes, found once per thread);
    where they are unknown, nothing is checked. Uncompiled, Python's
    recursion limit guards the stack (RecursionError, turned into a
    DepthLimitError by the decoder).
    """
    if cython.compiled:
        return codec_stack_left() > CODEC_STACK_RESERVE  # type: ignore[name-defined]
    return True


def _member_offset(member: Any) -> int:
    """Offset of a ``__slots__`` member in its objects (compiled code reads slots by offset)."""
    if cython.compiled:
        descriptor = cython.cast(member_descr_ptr, cython.cast(object_ptr, member))
        return descriptor.d_member.offset
    return 0


# --- the object model ------------------------------------------------------
#
# A struct class is a heap type deriving from Struct whose ``__slots__`` are
# its fields, so each value lives in the object at a fixed offset: Python
# reads a field through the slot's member descriptor (as fast as an
# attribute read gets), and the compiled encoder and decoder read and write
# it by offset. A slot holds what the field reads as: the value, or the
# field's default while unset. Presence (proto2 and proto3 ``optional``
# scalars, oneof members) is a bit in ``_has``; a sub-message is present
# when its slot is not None. Repeated and map fields start empty (a NULL
# slot), so an empty one costs nothing; the Container descriptor makes the
# list or dict on first use. A slot may also be NULL because the object was
# made with ``cls.__new__(cls)`` or emptied through the slot's member
# descriptor (``__delete__``): every reader treats NULL as unset.
#
# Writes go through Struct.__setattr__, which checks the value as pb2 does
# (TypeError for a wrong type, ValueError out of range) and clears the other
# members of a oneof. The encoder checks every value again: a slot's member
# descriptor (``__set__``) stores any value around those checks, and a list
# holds whatever was appended, so a bad value can never reach the wire.


if not cython.compiled:  # compiled, _struct.pxd holds these, inlined where they are used

    def _slot(message: Any, field: FieldPlan) -> Any:
        """The value in ``field``'s slot of ``message`` (None for an empty slot)."""
        try:
            return field.member.__get__(message, None)
        except AttributeError:
            return None

    def _has(message: Struct, bit: int) -> bool:
        """Whether presence bit ``bit`` of ``message`` is set."""
        return bool((getattr(message, "_has", 0) >> bit) & 1)


@cython.cfunc
@cython.inline
@cython.locals(field=FieldPlan)
@cython.returns(cython.int)
@cython.exceptval(-1, check=False)
def _store(message: Any, field: FieldPlan, value: Any) -> None:
    """Put ``value`` in ``field``'s slot of ``message``, unchecked.

    Compiled, a struct starts untracked by the cycle collector (see
    :func:`new_struct`) and is tracked from the first value it holds that
    can refer to other objects (a container, a struct, a memoryview).
    """
    if cython.compiled:
        place = cython.cast(slot_ptr, _address(message, field))
        old = place[0]
        Py_INCREF(value)
        place[0] = cython.cast(object_ptr, value)
        if PyType_IS_GC(Py_TYPE(value)) and not PyObject_GC_IsTracked(message):
            PyObject_GC_Track(message)
        Py_XDECREF(old)  # last: a finaliser may run
    else:
        field.member.__set__(message, value)


def _mark(message: Struct, plan: MessagePlan, bit: int, present: bool) -> None:
    """Set or clear presence bit ``bit`` of ``message``."""
    if not cython.compiled:
        object.__setattr__(message, "_has", _with_bit(getattr(message, "_has", 0), bit, present))
    elif bit < 64:
        message._has = _with_bit(message._has, bit, present)
    elif present or message._has_more != cython.NULL:
        words = _more_words(message, plan)
        words[(bit >> 6) - 1] = _with_bit(words[(bit >> 6) - 1], bit & 63, present)


def _with_bit(word: int, bit: int, present: bool) -> int:
    """``word`` with bit ``bit`` set or cleared."""
    mask = 1 << bit  # compiled: a 64-bit mask (``one`` is a uint64_t)
    if cython.compiled:
        one = 1
        mask = one << bit
    return word | mask if present else word & ~mask


def _more_words(message: Struct, plan: MessagePlan) -> Any:
    """Compiled: the presence words past the first, made (zeroed) on first use."""
    if message._has_more == cython.NULL:  # type: ignore[attr-defined]
        if plan.presence_words < 2:  # the bits of a bound plan fit its words
            raise ValueError(f"{plan.full_name} has no presence bit past 63")
        words = calloc(plan.presence_words - 1, 8)  # type: ignore[name-defined]
        if words == cython.NULL:
            raise MemoryError()
        message._has_more = cython.cast(word_ptr, words)  # type: ignore[name-defined]
    return message._has_more  # type: ignore[attr-defined]


def _is_present(message: Struct, field: FieldPlan, value: Any) -> bool:
    """Whether a singular field with presence is set (its slot holds ``value``)."""
    if field.has_bit >= 0:
        return _has(message, field.has_bit)
    return value is not None


def _container(message: Any, field: FieldPlan) -> Any:
    """The list or dict of a repeated or map field, made and stored on first use."""
    items = _slot(message, field)
    if items is None:
        items = {} if field.map_key is not None else []
        _store(message, field, items)
    return items


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


@cython.cfunc
@cython.inline
@cython.locals(plan=MessagePlan, message="Struct", field=FieldPlan, other=cython.Py_ssize_t)
@cython.returns(cython.int)
@cython.exceptval(-1, check=False)
def _set_field(plan: MessagePlan, message: Struct, field: FieldPlan, value: Any) -> None:
    """Store a checked (or decoded) value: presence set, other oneof members cleared."""
    for other in field.oneof_slots:
        if other != field.slot:
            _clear_field(plan, message, plan.fields_by_slot[other])
    _store(message, field, value)
    if field.has_bit >= 0:
        _mark(message, plan, field.has_bit, True)


def _checked(plan: MessagePlan, field: FieldPlan, value: Any) -> Any:
    """``value`` as field ``field`` stores it, checked as pb2 checks an assignment.

    A wrong type is a TypeError and a value out of range an EncodeError (a
    ValueError), as pb2 raises them; numbers are stored as pb2 reads them
    back (an ``int`` for an integer field, a ``float`` for a floating-point
    one, a ``bool``). The integer, bool and float rules are the encoder's.
    A bytes field also takes a bytearray or memoryview (the decoder's
    zero-copy values). Repeated and map fields take a sequence or a dict,
    kept as given (their elements are checked when they are encoded);
    message fields take a struct of their type, or None to clear them.
    """
    kind = field.kind
    plain_integer = field.plain and kind < FLOAT and kind != BOOL and field.closed_enum is None
    if plain_integer and type(value) is int:  # the common case first
        scalar_bits(field, kind, value)  # the range check
        return value
    if field.repeated:
        if field.map_key is not None:
            if not isinstance(value, dict):
                raise _type_error(plan, field, "a dict", value)
        elif isinstance(value, (str, bytes, dict)) or not _sized(value):
            raise _type_error(plan, field, "a sequence", value)
        return value
    if kind in (MESSAGE, GROUP):
        sub: MessagePlan = field.message  # type: ignore[assignment]  # linked
        if value is not None and type(value) is not sub.cls:
            raise _type_error(plan, field, f"a {sub.full_name} struct or None", value)
        return value
    if kind == STRING:
        if type(value) is str:
            _check_text(field, plan, value)
            return value
        if isinstance(value, bytes):
            try:
                return value.decode()
            except UnicodeDecodeError:
                raise _encode_error(field, plan, "bytes are not valid UTF-8") from None
        raise _type_error(plan, field, "str", value)
    if kind == BYTES:
        if isinstance(value, (bytes, bytearray, memoryview)):  # the decoder's zero-copy views
            return value
        raise _type_error(plan, field, "bytes", value)
    if kind in (FLOAT, DOUBLE):
        if type(value) is float:
            return value
        return float(real_of(field, kind, value, True))
    if kind == BOOL:
        if type(value) is bool:
            return value
        return bool(truth_of(field, value, True))
    if kind == ENUM and isinstance(value, str):  # as pb2: a name, but names are not known here
        raise _encode_error(field, plan, f"{value!r} is not a value of the enum (give a number)")
    number = value if type(value) is int else integer_of(field, kind, value, True)
    scalar_bits(field, kind, number)  # the range check
    if field.closed_enum is not None and number not in field.closed_enum:
        raise _encode_error(field, plan, f"{value!r} is not a value of its closed enum")
    return number


def _type_error(plan: MessagePlan, field: FieldPlan, expected: str, value: Any) -> TypeError:
    return TypeError(
        f"{plan.full_name}.{field.name}: expected {expected}, not {type(value).__name__}"
    )


def _encode_error(field: FieldPlan, plan: MessagePlan, problem: str) -> EncodeError:
    return EncodeError(f"{plan.full_name}.{field.name}: {problem}")


def _lone_surrogate(field: FieldPlan, plan: MessagePlan) -> EncodeError:
    """The error for a ``str`` with no UTF-8 form (compiled: the one CPython raised is cleared)."""
    if cython.compiled:
        PyErr_Clear()
    return _encode_error(field, plan, "string has a lone surrogate")


def _check_text(field: FieldPlan, plan: MessagePlan, text: str) -> None:
    """Refuse a ``str`` with no UTF-8 form (compiled: CPython makes and keeps it)."""
    if cython.compiled:
        if _utf8_or_null(text, cython.address(size)) == cython.NULL:
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
        raise TypeError(f"{getattr(cls, '__name__', cls)!r} is not a struct class")
    bound: MessagePlan = plan
    if bound.cls is not cls and not (isinstance(cls, type) and issubclass(cls, bound.cls)):
        raise TypeError(f"{cls.__name__}.__plan__ is not the plan of its class")
    return bound


def plan_of(message: Any) -> MessagePlan:
    """The plan of a struct instance."""
    if not isinstance(message, Struct):
        raise EncodeError(f"expected a struct, not {type(message).__name__}")
    return _plan_of_class(type(message))


def new_struct(plan: MessagePlan) -> Struct:
    """A new struct of ``plan``'s class with every field unset.

    Compiled, it is not tracked by the cycle collector while it holds only
    numbers, strings and bytes, which cannot make a cycle (as msgspec does
    with its structs): a collection then never visits the records an
    application keeps by the thousand. :func:`_store` tracks it when needed.
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
        return message  # type: ignore[no-any-return]
    return Struct.__new__(cls)  # type: ignore[no-any-return]


def _fill_defaults(plan: MessagePlan, message: Struct) -> None:
    """Store each singular field's default in its slot, where the slot is still empty."""
    fields = plan.fields_by_slot
    for i in range(len(fields)):
        field = cython.cast(FieldPlan, fields[i])  # unchecked: a plan holds only FieldPlans
        if not field.repeated and _is_empty(message, field):
            _store(message, field, field.default)


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
    """Unset every field of ``message`` and drop its unknown fields."""
    for field in plan.fields_by_slot:
        _clear_field(plan, message, field)
    message._unknown = b""


@cython.cfunc
@cython.inline
@cython.locals(plan=MessagePlan, message="Struct")
@cython.returns(FieldPlan)
def _keyword(plan: MessagePlan, message: Struct, field: Any, name: Any, value: Any) -> FieldPlan:
    """Assign one keyword argument of a constructor, as pb2's does: None leaves it unset.

    ``field`` is the field named ``name`` if the caller found it, else None.
    Returns the field.
    """
    if field is None:
        field = plan.by_name.get(name)
        if field is None:
            raise TypeError(f"{plan.full_name} has no field {name!r}")
    if value is not None:
        _set_field(plan, message, field, _checked(plan, field, value))
    return field  # type: ignore[no-any-return]


def _construct(cls: Any, args: Any, nargsf: int, kwnames: Any) -> Any:
    """The vectorcall constructor of struct classes (compiled): keywords only, no kwargs dict.

    Keywords usually come in declaration order, and their names, like the
    fields', are interned: each is first compared by identity with the
    field after the last one found, and looked up by name only otherwise.
    """
    plan = _plan_of_class(cython.cast(object, cls))
    if PyVectorcall_NARGS(nargsf) != 0:  # type: ignore[name-defined]
        raise TypeError(f"{plan.full_name}() takes keyword arguments only")
    message = _allocated(plan)  # the defaults last, in the slots no keyword filled
    if kwnames != cython.NULL:
        names = cython.cast(tuple, kwnames)
        fields = plan.fields_by_slot
        after = 0
        for i in range(len(names)):
            name = names[i]
            found = None
            if after < len(fields):
                guess = cython.cast(FieldPlan, fields[after])
                if guess.name is name:
                    found = guess
            assigned = _keyword(plan, message, found, name, cython.cast(object, args[i]))
            after = assigned.slot + 1
    _fill_defaults(plan, message)
    return message


def enable_fast_construction(cls: Any) -> None:
    """Compiled: make calling struct class ``cls`` go straight to the vectorcall constructor."""
    _plan_of_class(cls)
    if cython.compiled:
        type_object = cython.cast(type_ptr, cython.cast(object_ptr, cls))
        type_object.tp_vectorcall = cython.cast(vectorcallfunc, _construct)


class Struct:
    """Base class of generated message classes: field values live in slots of the object."""

    def __init__(self, *args: Any, **fields: Any) -> None:
        plan = _plan_of_class(type(self))
        if args:
            raise TypeError(f"{plan.full_name}() takes keyword arguments only")
        _reset(plan, self)
        for name, value in fields.items():
            _keyword(plan, self, None, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        plan = _plan_of_class(type(self))
        field = plan.by_name.get(name)
        if field is None:
            if name == "_unknown":
                if cython.compiled:
                    self._unknown = value  # bytes or None, as declared
                else:
                    object.__setattr__(self, name, value)
                return
            raise AttributeError(f"{plan.full_name} has no field {name!r}")
        if value is None and field.message is None:
            raise TypeError(
                f"{plan.full_name}.{name}: None is not a value; ClearField unsets a field"
            )
        if value is None:
            _clear_field(plan, self, field)
        else:
            _set_field(plan, self, field, _checked(plan, field, value))

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}; ClearField unsets a field")

    def __dealloc__(self) -> None:
        if cython.compiled:
            free(self._has_more)

    def HasField(self, name: str) -> bool:  # pb2's name
        """Whether a field with presence (or a sub-message) is set."""
        plan = _plan_of_class(type(self))
        field = plan.by_name.get(name)
        if field is None:
            raise ValueError(f"{plan.full_name} has no field {name!r}")
        if field.repeated or not (field.presence or field.message is not None):
            raise ValueError(f"{plan.full_name}.{name} has no presence")
        return _is_present(self, field, _slot(self, field))

    def ClearField(self, name: str) -> None:  # pb2's name
        """Unset a field: it reads as its default again, and is not written."""
        plan = _plan_of_class(type(self))
        field = plan.by_name.get(name)
        if field is None:
            raise ValueError(f"{plan.full_name} has no field {name!r}")
        _clear_field(plan, self, field)

    def WhichOneof(self, name: str) -> str | None:  # pb2's name
        """Name of the member of oneof ``name`` that is set, or None."""
        plan = _plan_of_class(type(self))
        slots = plan.oneofs.get(name)
        if slots is None:
            raise ValueError(f"{plan.full_name} has no oneof {name!r}")
        for slot in slots:
            field: FieldPlan = plan.fields_by_slot[slot]
            if _is_present(self, field, _slot(self, field)):
                return field.name
        return None

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        plan = _plan_of_class(type(self))
        return _fields_equal(plan, self, other) and unknown_of(self) == unknown_of(other)

    def __repr__(self) -> str:
        plan = _plan_of_class(type(self))
        shown = []
        for field in plan.fields_by_slot:
            value = _slot(self, field)
            if field.repeated:
                if value:
                    shown.append(f"{field.name}={value!r}")
            elif field.presence or field.message is not None:
                if _is_present(self, field, value):
                    shown.append(f"{field.name}={value!r}")
            elif value is not None and value != field.default:
                shown.append(f"{field.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    def __reduce__(self) -> tuple[Any, ...]:
        from codec._encode import encode  # which imports this module

        return (decode, (type(self), encode(self)))


def unknown_of(message: Struct) -> bytes:
    """The unknown fields a struct keeps, as wire bytes."""
    if message is None:  # compiled, a typed argument lets None through
        raise TypeError("expected a struct, not None")
    unknown = _kept_unknown(message)
    return b"" if unknown is None else unknown


@cython.cfunc
@cython.inline
@cython.locals(message=Struct)
def _kept_unknown(message: Struct) -> bytes | None:
    """The unknown fields ``message`` keeps, or None (most structs keep none)."""
    # Uncompiled, a struct made by Struct.__new__ has no _unknown yet.
    return message._unknown if cython.compiled else getattr(message, "_unknown", None)  # type: ignore[attr-defined]


def _fields_equal(plan: MessagePlan, left: Struct, right: Struct) -> bool:
    for field in plan.fields_by_slot:
        a, b = _slot(left, field), _slot(right, field)
        if field.repeated:
            empty: Any = {} if field.map_key is not None else ()  # for a slot never used
            if not _items_equal(empty if a is None else a, empty if b is None else b):
                return False
            continue
        if field.has_bit >= 0 and _has(left, field.has_bit) != _has(right, field.has_bit):
            return False
        if a is not b and a != b:
            return False
    return True


def _items_equal(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, dict) or isinstance(b, dict):
        return bool(a == b)
    # Sequences of any kind (lists, tuples, numpy arrays) compare element by element.
    return len(a) == len(b) and all(x == y for x, y in zip(a, b, strict=True))


class Container:
    """Attribute access to a repeated or map field: its list or dict, made on first use."""

    def __init__(self, plan: MessagePlan, field: FieldPlan) -> None:
        self.plan = plan
        self.field = field

    def __get__(self, instance: Any, owner: Any) -> Any:
        if instance is None:
            return self
        if _plan_of_class(type(instance)) is not self.plan:
            raise TypeError(f"{self.field.name} is not a field of {type(instance).__name__}")
        return _container(instance, self.field)

    def __set__(self, instance: Any, value: Any) -> None:
        Struct.__setattr__(instance, self.field.name, value)

    def __delete__(self, instance: Any) -> None:
        raise AttributeError(f"cannot delete field {self.field.name!r}")


# --- decoding --------------------------------------------------------------


_NO_INPUT = memoryview(b"")


class Decoding:
    """Options of a decode, and the state of the one under way (reusable, one at a time)."""

    def __init__(self, zero_copy: bool, numpy: bool, max_depth: int, max_elements: int) -> None:
        self.zero_copy = zero_copy
        self.numpy = numpy
        self.max_depth = max_depth
        self.max_elements = max_elements
        self.source = _NO_INPUT  # the input, a flat byte view, while a decode runs
        self.busy = False
        self.base = 0  # stream offset of the input's first byte, for error offsets
        self.elements = 0  # budget left
        self.rejected_entry: bytes | None = None
        # Undeclared closed-enum values met inside a packed run, as unknown varint fields.
        self.stray_values: bytearray | None = None
        self.tag = 0  # set by _read_tag
        self.body = 0  # set by _length_end: where the value's bytes start
        self.after = 0  # set by _read_value: where the value ends

    def run(self, plan: MessagePlan, source: memoryview, base: int) -> Struct:
        """Decode all of ``source`` (a flat byte view) as a message of ``plan``.

        One decode at a time: one re-entered (by a finaliser the decode's
        allocations ran, or another thread) runs on a fresh state.
        """
        if self.busy:
            fresh = Decoding(self.zero_copy, self.numpy, self.max_depth, self.max_elements)
            return fresh.run(plan, source, base)
        self.busy = True
        self.source = source
        self.base = base
        self.elements = self.max_elements
        self.rejected_entry = None
        self.stray_values = None
        message = new_struct(plan)
        try:
            decode_message(plan, message, _bytes_of(source), 0, len(source), self, 0, 0)
        except RecursionError:  # uncompiled: Python's own guard of its stack
            raise DepthLimitError(STACK_EXHAUSTED, base) from None
        finally:
            self.source = _NO_INPUT  # the caller may release the input now
            self.busy = False
        return message

    def spend(self, count: int, offset: int) -> None:
        self.elements -= count
        if self.elements < 0:
            raise DecodeError("message has more elements than max_elements allows", offset)


@cython.cfunc
@cython.inline
@cython.locals(
    data="const unsigned char *",
    pos=cython.Py_ssize_t,
    end=cython.Py_ssize_t,
    state="Decoding",
    head=cython.longlong,
)
@cython.returns(cython.Py_ssize_t)
@cython.exceptval(-1, check=False)
def _read_tag(data: Any, pos: int, end: int, state: Decoding) -> int:
    """Read and check the tag at ``pos`` into ``state.tag``; return the position after it."""
    head = read_tag(data, pos, end, state.base)
    state.tag = head >> 3
    return pos + (head & 7)


@cython.cfunc
@cython.inline
@cython.locals(
    data="const unsigned char *",
    pos=cython.Py_ssize_t,
    end=cython.Py_ssize_t,
    state="Decoding",
    bounds=cython.longlong,
)
@cython.returns(cython.Py_ssize_t)
@cython.exceptval(-1, check=False)
def _length_end(data: Any, pos: int, end: int, state: Decoding) -> int:
    """End of the length-delimited value whose size is at ``pos`` (checked, see
    :func:`codec._wire.length_end`); its body starts at ``state.body``."""
    bounds = length_end(data, pos, end, state.base)
    state.body = pos + (bounds & 7)
    return bounds >> 3


def _skip(data: Any, start: int, pos: int, end: int, tag: int, state: Decoding, depth: int) -> int:
    """Position after the value at ``pos`` of the field whose tag, ``tag``, is at ``start``."""
    wire = tag & 7
    if wire == SGROUP:
        return (
            skip_group(data, pos, end, state.base, tag >> 3, start, depth + 1, state.max_depth) >> 3
        )
    if wire == EGROUP:
        return stray_end_group(tag >> 3, start, state.base)
    return skip_value(data, pos, end, state.base, wire)


def decode_message(
    plan: MessagePlan,
    message: Struct,
    data: Any,
    pos: int,
    end: int,
    state: Decoding,
    depth: int,
    group: int,
) -> int:
    """Merge the fields in ``data[pos:end]`` into ``message``; return where it stopped.

    ``group`` is the field number of the group being read (0 for a
    length-delimited message): its end-group tag ends the message.
    """
    _check_nesting(state, depth, pos)
    unknown: bytearray | None = None
    while pos < end:
        start = pos
        pos = _read_tag(data, pos, end, state)
        tag = state.tag
        if tag & 7 == EGROUP:
            if group and tag >> 3 == group:
                break
            stray_end_group(tag >> 3, start, state.base)
        field = _field_numbered(plan, tag >> 3)
        if field is not None:
            after = _decode_field(field, plan, message, data, pos, end, tag & 7, state, depth)
            if after >= 0:
                pos = after
                if state.stray_values is not None:
                    if unknown is None:
                        unknown = bytearray(unknown_of(message))
                    unknown += state.stray_values
                    state.stray_values = None
                continue
        value_start = pos
        pos = _skip(data, start, pos, end, tag, state, depth)
        state.spend(1, state.base + start)
        if unknown is None:
            unknown = bytearray(unknown_of(message))
        if state.rejected_entry is None:
            unknown += state.source[start:pos]
        else:  # upb keeps a map entry it could not read whole, as re-encoded
            unknown += state.source[start:value_start]
            unknown += varint_encode(len(state.rejected_entry))
            unknown += state.rejected_entry
            state.rejected_entry = None
    else:
        if group:
            raise TruncatedError("message ends inside a group", state.base + pos)
    if unknown is not None:
        message._unknown = bytes(unknown)
    return pos


def _check_nesting(state: Decoding, depth: int, pos: int) -> None:
    """Refuse a message at ``pos`` nested ``depth`` deep: past max_depth, or the C stack."""
    if depth > state.max_depth:
        raise DepthLimitError(f"messages nested deeper than {state.max_depth}", state.base + pos)
    if not _stack_room():
        raise DepthLimitError(STACK_EXHAUSTED, state.base + pos)


def _decode_field(
    field: FieldPlan,
    plan: MessagePlan,
    message: Struct,
    data: Any,
    pos: int,
    end: int,
    wire: int,
    state: Decoding,
    depth: int,
) -> int:
    """Decode one known field at ``pos`` into ``message``; -1 when it must be kept as unknown."""
    if field.map_key is not None:
        if wire != LEN:
            return -1
        after = _length_end(data, pos, end, state)
        state.spend(1, state.base + pos)
        if _decode_entry(field, _container(message, field), data, state.body, after, state, depth):
            return after
        return -1  # as upb does, an entry holding unknown fields stays in the unknown fields
    if field.repeated and wire == LEN and field.wire_type in (VARINT, I32, I64):
        after = _length_end(data, pos, end, state)
        _decode_packed(field, message, data, state.body, after, state)
        return after
    if wire != field.wire_type:
        return -1
    if field.kind == GROUP or field.kind == MESSAGE:
        sub = None if field.repeated else _slot(message, field)
        if sub is None:
            sub = _new_part(field.message, state, pos)  # type: ignore[arg-type]
        if field.kind == GROUP:
            after = decode_message(
                field.message,  # type: ignore[arg-type]
                sub,
                data,
                pos,
                end,
                state,
                depth + 1,
                field.number,
            )
        else:
            after = _length_end(data, pos, end, state)
            decode_message(field.message, sub, data, state.body, after, state, depth + 1, 0)  # type: ignore[arg-type]
        if field.repeated:
            _append(message, field, sub)
        else:
            _set_field(plan, message, field, sub)
        return after
    value = _read_value(field, data, pos, end, state)
    if field.closed_enum is not None and value not in field.closed_enum:
        return -1  # proto2: an unknown enum value is kept as an unknown field
    if field.repeated:
        state.spend(1, state.base + pos)
        _append(message, field, value)
    else:
        _set_field(plan, message, field, value)
    return state.after


@cython.cfunc
@cython.inline
@cython.locals(message=Struct, field=FieldPlan)
@cython.returns(cython.int)
@cython.exceptval(-1, check=False)
def _append(message: Struct, field: FieldPlan, value: Any) -> None:
    """Append a decoded element to a repeated field's list.

    The field may hold another sequence (assigned by the caller, or a numpy
    array from an earlier packed run): it becomes a list first.
    """
    current = _container(message, field)
    if type(current) is not list:
        current = current.tolist() if hasattr(current, "tolist") else list(current)
        _store(message, field, current)
    current.append(value)


def _read_value(field: FieldPlan, data: Any, pos: int, end: int, state: Decoding) -> Any:
    """One scalar, string or bytes value at ``pos``; it ends at ``state.after``."""
    kind = field.kind
    if kind <= ENUM:
        n = varint_length(data, pos, end, state.base)
        state.after = pos + n
        return varint_value_of(kind, varint_value(data, pos, n))
    if field.wire_type == I32 or field.wire_type == I64:
        width = 4 if field.wire_type == I32 else 8
        state.after = fixed_end(pos, end, state.base, width)
        return fixed_value_of(kind, read_le(data, pos, width))
    after = _length_end(data, pos, end, state)
    start = state.body
    state.after = after
    if kind == BYTES:
        if state.zero_copy:
            return state.source[start:after]
        return _bytes_at(data, start, after, state)
    try:
        return _text_at(data, start, after, state)
    except UnicodeDecodeError:
        if field.utf8 == "bytes":
            return _bytes_at(data, start, after, state)
        raise DecodeError(
            f"string field {field.name} is not valid UTF-8", state.base + start
        ) from None


def _bytes_at(data: Any, start: int, end: int, state: Decoding) -> bytes:
    if cython.compiled:
        return PyBytes_FromStringAndSize(cython.cast(cython.p_char, data + start), end - start)
    return bytes(state.source[start:end])


def _text_at(data: Any, start: int, end: int, state: Decoding) -> str:
    if cython.compiled:
        text = cython.cast(cython.p_char, data + start)
        return PyUnicode_DecodeUTF8(text, end - start, cython.NULL)
    return bytes(state.source[start:end]).decode()


def _decode_packed(
    field: FieldPlan, message: Struct, data: Any, pos: int, end: int, state: Decoding
) -> None:
    """Append the elements of a packed run ``data[pos:end]`` to the field's list."""
    width = 4 if field.wire_type == I32 else 8 if field.wire_type == I64 else 0
    if width and (end - pos) % width:
        raise WireFormatError(
            "packed fixed-width run is not a whole number of elements", state.base + pos
        )
    if state.numpy and field.numpy_type:
        column = _numpy_column(field, _slot(message, field), data, pos, end, state, width)
        _store(message, field, column)
    else:
        while pos < end:
            value = _read_value(field, data, pos, end, state)
            state.spend(1, state.base + pos)
            if field.closed_enum is None or value in field.closed_enum:
                _append(message, field, value)
            else:  # as upb does: an undeclared closed-enum value becomes an unknown field
                _keep_stray(field, varint_value(data, pos, state.after - pos), state)
            pos = state.after


def _keep_stray(field: FieldPlan, raw: int, state: Decoding) -> None:
    """Keep the varint ``raw`` (as read, before int32 truncation) as an unknown field."""
    if state.stray_values is None:
        state.stray_values = bytearray()
    state.stray_values += varint_encode((field.number << 3) | VARINT)
    state.stray_values += varint_encode(raw)


def _numpy_column(
    field: FieldPlan, current: Any, data: Any, pos: int, end: int, state: Decoding, width: int
) -> Any:
    """A packed run as a numpy array (fixed-width: a view of the input), after ``current``."""
    import numpy

    if width:
        count = (end - pos) // width
        state.spend(count, state.base + pos)
        # From a slice: the column's export is the slice's, so the input view stays releasable.
        column = numpy.frombuffer(state.source[pos:end], field.numpy_type, count)
    else:
        items: list[Any] = []
        while pos < end:
            value = _read_value(field, data, pos, end, state)
            state.spend(1, state.base + pos)
            if field.closed_enum is None or value in field.closed_enum:
                items.append(value)
            else:
                _keep_stray(field, varint_value(data, pos, state.after - pos), state)
            pos = state.after
        column = numpy.array(items, field.numpy_type)
    if current is not None and len(current):
        column = numpy.concatenate([numpy.asarray(current, field.numpy_type), column])
    return column


def _decode_entry(
    field: FieldPlan,
    mapping: dict[Any, Any],
    data: Any,
    pos: int,
    end: int,
    state: Decoding,
    depth: int,
) -> bool:
    """Decode one map entry ``data[pos:end]`` into ``mapping``, unless it holds unknown fields.

    An entry of a key and a value on their wire types (nearly every one) is
    read straight into ``mapping``; any other takes :func:`_decode_entry_struct`.
    """
    if _read_entry(field, mapping, data, pos, end, state, depth):
        return True
    return _decode_entry_struct(field, mapping, data, pos, end, state, depth)


def _read_entry(
    field: FieldPlan,
    mapping: dict[Any, Any],
    data: Any,
    pos: int,
    end: int,
    state: Decoding,
    depth: int,
) -> bool:
    """Read a map entry of only its key and value fields, as the entry message would be read.

    The same reads in the same order as decoding the entry struct, so the
    same errors at the same offsets. False, with nothing changed (the
    element budget given back), at the first field that is neither the key
    nor the value on its wire type, or a value outside its closed enum.
    """
    key_field: FieldPlan = field.map_key  # type: ignore[assignment]
    value_field: FieldPlan = field.map_value  # type: ignore[assignment]
    if value_field.kind == GROUP:
        return False
    _check_nesting(state, depth + 1, pos)
    elements = state.elements
    start = pos
    key = key_field.default
    value = value_field.default  # None for a message
    while pos < end:
        at = _read_tag(data, pos, end, state)
        if state.tag == key_field.tag:
            key = _read_value(key_field, data, at, end, state)
            pos = state.after
        elif state.tag != value_field.tag:
            state.elements = elements
            return False
        elif value_field.message is None:
            value = _read_value(value_field, data, at, end, state)
            if value_field.closed_enum is not None and value not in value_field.closed_enum:
                state.elements = elements
                return False
            pos = state.after
        else:
            pos = _length_end(data, at, end, state)
            if value is None:  # a second value is merged into the first, as in a message
                value = _new_part(value_field.message, state, at)
            decode_message(value_field.message, value, data, state.body, pos, state, depth + 2, 0)
    if value is None:
        value = _new_part(value_field.message, state, start)  # type: ignore[arg-type]
    mapping[key] = value
    return True


def _decode_entry_struct(
    field: FieldPlan,
    mapping: dict[Any, Any],
    data: Any,
    pos: int,
    end: int,
    state: Decoding,
    depth: int,
) -> bool:
    """Decode a map entry through a struct of its entry message, unless it holds unknown fields.

    Such an entry is left in ``state.rejected_entry`` for the caller to keep
    among the unknown fields: re-encoded, as upb keeps it, or as it came
    when it cannot be re-encoded (nested deeper than encoding allows). A
    missing key or value (proto2 entries may leave them out) reads as its
    zero value, as upb reads it.
    """
    entry_plan: MessagePlan = field.message  # type: ignore[assignment]
    entry = new_struct(entry_plan)
    decode_message(entry_plan, entry, data, pos, end, state, depth + 1, 0)
    if unknown_of(entry):
        from codec._encode import encode  # which imports this module

        try:
            state.rejected_entry = encode(entry)
        except EncodeError:
            state.rejected_entry = bytes(state.source[pos:end])
        return False
    value_field: FieldPlan = field.map_value  # type: ignore[assignment]
    value = _slot(entry, value_field)
    if value is None:
        value = _new_part(value_field.message, state, pos)  # type: ignore[arg-type]
    mapping[_slot(entry, field.map_key)] = value  # type: ignore[arg-type]
    return True


def _new_part(plan: MessagePlan, state: Decoding, pos: int) -> Struct:
    """A new sub-message struct, charged to the element budget for its size.

    A few wire bytes (an empty sub-message, a map entry without its value)
    make a whole struct of one slot per field: it is charged one element,
    and one more per eight slots (an element stands for an object of about
    that size). Its repeated and map fields cost nothing until elements
    arrive, and those are charged as they do.
    """
    state.spend(1 + len(plan.fields_by_slot) // 8, state.base + pos)
    return new_struct(plan)


class Decoder:
    """A reusable decoder of one struct class, with its options checked once.

    ``zero_copy`` gives ``bytes`` fields as memoryviews into the input,
    ``numpy`` packed numeric fields as numpy arrays (fixed-width ones
    without copying); ``max_depth`` limits nesting (100: protobuf C++, Java
    and upb), ``max_elements`` the elements (repeated values, messages,
    unknown fields) one decode may create, so a few wire bytes cannot make
    unbounded objects. A Decoder is also a ``message_type`` for
    :class:`codec.FrameDecoder` and :mod:`codec.aio`, which is how these
    options reach framed decoding.
    """

    def __init__(
        self,
        type: Any,  # the struct class, as msgspec names it
        *,
        zero_copy: bool = False,
        numpy: bool = False,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_elements: int = DEFAULT_MAX_ELEMENTS,
    ) -> None:
        self.plan = _plan_of_class(type)
        self.type = type
        self.zero_copy = _option_flag("zero_copy", zero_copy)
        self.numpy = _option_flag("numpy", numpy)
        self.max_depth = _option_count("max_depth", max_depth)
        self.max_elements = _option_count("max_elements", max_elements)
        self.state = Decoding(self.zero_copy, self.numpy, self.max_depth, self.max_elements)

    def decode(self, buffer: Any, *, base: int = 0) -> Any:
        """Decode a struct from any contiguous buffer; error offsets count from ``base``.

        Errors are :class:`DecodeError` subclasses. The input is not
        released: zero-copy fields and numpy columns keep views of it.
        """
        if not self._initialised():
            raise uninitialised(self)
        return self.state.run(self.plan, byte_view(buffer, False), position(base))

    def _initialised(self) -> bool:
        """False for an object made by ``Decoder.__new__`` whose ``__init__`` never ran."""
        if cython.compiled:
            return self.state is not None
        return hasattr(self, "state")

    def __repr__(self) -> str:
        if not self._initialised():
            return "Decoder(<not initialised>)"
        options = f"zero_copy={self.zero_copy}, numpy={self.numpy}, max_depth={self.max_depth}"
        return f"Decoder({self.type.__name__}, {options}, max_elements={self.max_elements})"


def _option_flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}")
    return value


def _option_count(name: str, value: Any) -> int:
    if type(value) is not int:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value <= _MAX_COUNT:
        raise ValueError(f"{name} must be between 0 and {_MAX_COUNT}, not {value}")
    return value


def decode(
    cls: Any,
    buffer: Any,
    *,
    zero_copy: bool = False,
    numpy: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    base: int = 0,
) -> Any:
    """Decode a message of struct class ``cls`` from any contiguous buffer.

    The options are :class:`Decoder`'s; make one Decoder to decode many
    buffers. Errors are :class:`DecodeError` subclasses whose offset counts
    from ``base``.
    """
    decoder = Decoder(
        cls, zero_copy=zero_copy, numpy=numpy, max_depth=max_depth, max_elements=max_elements
    )
    return decoder.decode(buffer, base=base)


def _bytes_of(source: memoryview) -> Any:
    """What the decoder reads: compiled, a pointer to the view's bytes."""
    if cython.compiled:
        return cython.cast(cython.p_uchar, PyMemoryView_GET_BUFFER(source).buf)
    return source
