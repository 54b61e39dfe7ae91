"""Plans: what a message type is to the struct engine, compiled once from its descriptor.

Strategy: :mod:`codec.structs._schema` turns each protobuf message descriptor
into a :class:`MessagePlan`, its fields in number order, each a
:class:`FieldPlan` that knows its kind, wire type, tag (and the tag's bytes
as one word, so the encoder writes it in one store), presence bit, numpy
dtype and how the encoder takes it (its shape, decided here once). Once the
plan's struct class exists, :meth:`MessagePlan.bind` reads where each slot
lives in the object, so the compiled encoder and decoder
(:mod:`codec.structs._encode`, :mod:`codec.structs._decode`) reach a value by
offset. Everything the compiled code trusts is read-only from Python and set
once. A field is found by number with a list index for small numbers
(``_field_numbered``, inline in ``_plan.pxd``), and from a tag of one byte,
the commonest, by one index into ``by_tag``, which holds only valid tags.

This file is Cython pure-Python mode (types in ``_plan.pxd``).
"""

from __future__ import annotations

from typing import Any

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython  # type: ignore[no-redef]

from codec._varint import encode as varint_bytes
from codec._wire import NUMPY_DTYPES, SCALAR_KINDS

if not cython.compiled:  # compiled, _plan.pxd cimports these C functions and constants
    from codec._varint import varint_size
    from codec._wire import (
        DOUBLE,
        EGROUP,
        ENUM,
        GROUP,
        I32,
        I64,
        INT32,
        INT64,
        LEN,
        MESSAGE,
        STRING,
        UINT32,
        UINT64,
        VARINT,
        natural_wire_type,
    )

COMPILED: bool = cython.compiled

_DIRECT_NUMBERS = 256  # field numbers below this are looked up by list index

# How the encoder takes a field (FieldPlan.shape), decided once per field: all but
# the last have a path of their own in its loop, the rest share a general one. The
# singular numbers come first: a shape up to SHAPE_NUMBER is a number.
if not cython.compiled:  # compiled, _plan.pxd declares them
    SHAPE_INTEGER = 0  # a singular int32, int64, uint32, uint64 or open enum: a plain varint
    SHAPE_DOUBLE = 1  # a singular double
    SHAPE_NUMBER = 2  # any other singular number
    SHAPE_TEXT = 3  # a singular string
    SHAPE_MESSAGE = 4  # a singular length-prefixed message
    SHAPE_PACKED = 5  # a packed repeated number
    SHAPE_OTHER = 6  # bytes, a group, a map, a repeated string or message, a closed enum

# How a lazy decode's check walk passes over a value (MessagePlan.checks), by its tag:
# a number, string or bytes value on its field's declared wire type is measured (and a
# string's UTF-8 checked) without a look at its FieldPlan. Anything else takes the
# walk's general path (CHECK_GENERAL): a message, a group, a packed run, a closed enum,
# a number the plan does not know, a wire type its field does not declare.
if not cython.compiled:  # compiled, _plan.pxd declares them
    CHECK_GENERAL = 0
    CHECK_VARINT = 1
    CHECK_FIXED64 = 2
    CHECK_BYTES = 3
    CHECK_TEXT = 4  # a string whose UTF-8 is checked
    CHECK_FIXED32 = 5
    CHECK_ELEMENT = 8  # added to the above for a repeated field: the value is an element


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
        enum_type: Any = None,
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
        # An enum field's IntEnum class, and its members by number: a value it declares
        # reads as its member, any other (open enums) as an int.
        self.enum_type = enum_type
        self.enum_members = None if enum_type is None else {member: member for member in enum_type}
        self.default = default  # what an unset field reads as (None: a message, or a container)
        # Implicit presence (a proto3 singular scalar): written unless zero, and a slot
        # holding the default object itself is known to be zero without a look.
        self.implicit = not presence and not repeated
        self.wire_type = natural_wire_type(kind)
        self.shape = _shape(kind, repeated, packed, self.wire_type, closed_enum is not None)
        self.check = _check_of(self)  # how a lazy decode's check walk passes over a value
        self.tag = (number << 3) | (LEN if packed else self.wire_type)
        self.tag_size = varint_size(self.tag)
        # The tag's bytes as one little-endian word: the encoder puts them in one store.
        self.tag_word = int.from_bytes(varint_bytes(self.tag), "little")
        self.end_tag = (number << 3) | EGROUP
        self.message: MessagePlan | None = None  # for MESSAGE and GROUP, and map entries
        self.map_key: FieldPlan | None = None  # for maps: the entry's key and value
        self.map_value: FieldPlan | None = None
        self.numpy_type = NUMPY_DTYPES[kind] if kind in SCALAR_KINDS else ""
        self.oneof_others: tuple[FieldPlan, ...] = ()  # the other members of its oneof, if any
        self.has_bit = -1  # presence bit of a singular field with presence
        self.member: Any = None  # the slot's member descriptor on the struct class
        self.offset = 0  # compiled: the slot's offset in the struct object

    def link(self, message: MessagePlan, is_map: bool) -> None:
        """Give a message, group or map field the plan of its values (or entries)."""
        if self.message is not None:
            raise ValueError(f"field {self.name} is already linked")
        self.message = message
        if is_map:
            self.map_key, self.map_value = message.fields_by_slot
            self.shape = SHAPE_OTHER


def _shape(kind: int, repeated: bool, packed: bool, wire_type: int, closed: bool) -> int:
    """The encoder's path for a field that is not a map (see SHAPE_NUMBER).

    A ``closed`` enum's numbers take the general path, which checks that
    its enum declares them; the number paths check only the range.
    """
    if closed:
        return SHAPE_OTHER
    if repeated:
        return SHAPE_PACKED if packed else SHAPE_OTHER
    if kind in (INT32, INT64, UINT32, UINT64, ENUM):
        return SHAPE_INTEGER
    if kind == DOUBLE:
        return SHAPE_DOUBLE
    if wire_type in (VARINT, I32, I64):
        return SHAPE_NUMBER
    if kind == STRING:
        return SHAPE_TEXT
    return SHAPE_MESSAGE if kind == MESSAGE else SHAPE_OTHER


def _opens_value(tag: int) -> bool:
    """Whether ``tag`` is a valid tag that opens a value: a field number, and a wire type
    other than a group's end."""
    return tag >> 3 != 0 and tag & 7 != EGROUP and tag & 7 <= I32


def _check_of(field: FieldPlan) -> int:
    """How the check walk passes over a value of ``field`` on its declared wire type."""
    if field.kind in (MESSAGE, GROUP) or field.closed_enum is not None:
        return CHECK_GENERAL
    if field.wire_type == VARINT:
        check = CHECK_VARINT
    elif field.wire_type == I64:
        check = CHECK_FIXED64
    elif field.wire_type == I32:
        check = CHECK_FIXED32
    elif field.kind == STRING and field.utf8 != "bytes":
        check = CHECK_TEXT
    else:
        check = CHECK_BYTES
    return check | (CHECK_ELEMENT if field.repeated else 0)


class MessagePlan:
    """The fields of one message type, in number order, and its struct class."""

    def __init__(
        self, full_name: str, fields: list[FieldPlan], *, descending: bool = False
    ) -> None:
        self.fields_by_slot = tuple(fields)  # fields[i].slot == i
        self.rename(full_name)
        # Encoding order: by number (descending for the extensions of a message, as upb
        # writes them, see extend).
        order = sorted(fields, key=lambda field: field.number, reverse=descending)
        self.fields = tuple(order)
        # The fields whose values may be containers or structs, in slot order: what the
        # cycle collector's bookkeeping looks at (the others hold numbers and strings).
        self.containers = tuple(
            field for field in fields if field.repeated or field.kind in (MESSAGE, GROUP)
        )
        # The singular fields, in slot order: each holds its default while unset.
        self.singular = tuple(field for field in fields if not field.repeated)
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
        checks = bytearray(len(numbered) << 3)  # by tag: number << 3 | wire type
        for field in fields:
            if field.number < len(numbered):
                checks[field.number << 3 | field.wire_type] = field.check
        self.checks = bytes(checks)
        # Fields by one-byte tag (a number up to 15 and a wire type), for the tags that
        # are valid and open a value (not a group's end): a decoder's short way from a
        # tag's byte to its field, with no varint read and no check. None for any other.
        self.by_tag = tuple(
            numbered[tag >> 3] if tag >> 3 < len(numbered) and _opens_value(tag) else None
            for tag in range(0x80)
        )
        self.presence_words = 0  # 64-bit words of presence bits
        self.oneofs: dict[str, tuple[int, ...]] = {}  # whose members clear each other
        # Each oneof's members, the synthetic ones' too, by name (pb2's methods name them)
        self.oneof_members: dict[str, tuple[FieldPlan, ...]] = {}
        self.cls: Any = None
        # Called with a message before it is encoded whole (not partial): raises the
        # EncodeError for required fields not set. None: the type cannot miss any.
        self.required: Any = None
        # Called with a value assigned to a field of this type that is neither a struct of
        # it nor None: the struct it stands for (a Timestamp for a datetime), or None if it
        # stands for none. None: the type takes no such value (see accept).
        self.convert: Any = None
        # A message type with extensions keeps those set in a hidden slot, as a struct
        # whose fields are the extensions (see extend). None: it has none.
        self.extensions: FieldPlan | None = None

    def rename(self, full_name: str) -> None:
        """Name the message (and so its fields, as errors name them)."""
        self.full_name = full_name
        for field in self.fields_by_slot:
            field.label = f"{full_name}.{field.name}"

    def add_oneof(self, name: str, slots: tuple[int, ...], synthetic: bool = False) -> None:
        """Declare a oneof: setting one of its members clears the others.

        A ``synthetic`` one (the oneof of a proto3 ``optional`` field, named
        ``_field``) has one member, which clears nothing: only pb2's methods
        know its name (``WhichOneof``, ``HasField``, ``ClearField``).
        """
        if self.cls is not None:
            raise ValueError(f"{self.full_name} is already bound to its class")
        self.oneof_members[name] = tuple([self.fields_by_slot[slot] for slot in slots])
        if synthetic:
            return
        self.oneofs[name] = slots
        for slot in slots:
            member = self.fields_by_slot[slot]
            member.oneof_others = tuple(
                [self.fields_by_slot[other] for other in slots if other != slot]
            )

    def extend(self, extensions: MessagePlan) -> None:
        """Give the message type the extensions that ``extensions`` holds as its fields.

        ``extensions`` is the plan of a struct class of its own (made with
        ``descending``: upb writes extensions after the fields, the highest
        number first), so each extension is stored, checked, encoded and
        decoded as a field of its kind is. A message keeps such a struct in
        a hidden slot, empty (None) until an extension is set or decoded;
        the decoder reads a field its plan does not know into it when the
        extensions know the number, and the encoder writes its fields inline
        after the message's own. Its message fields carry presence bits: a
        sub-message read but not set is kept there, unset.
        """
        if self.cls is not None:
            raise ValueError(f"{self.full_name} is already bound to its class")
        holder = FieldPlan("Extensions", 0, MESSAGE, len(self.fields_by_slot))
        holder.link(extensions, False)
        self.extensions = holder

    def require(self, check: Any) -> None:
        """Have a whole (not partial) encode call ``check(message)`` first (see ``required``)."""
        self.required = check

    def accept(self, convert: Any) -> None:
        """Have fields of this type take what ``convert`` makes a struct of (see ``convert``)."""
        self.convert = convert

    def slot_names(self, taken: frozenset[str]) -> tuple[str, ...]:
        """The ``__slots__`` of the struct class: a field's name, or a hidden one.

        A field is read through the member descriptor of a slot of its own
        name, as fast as Python reads an attribute, when that name can be a
        slot's: an identifier that Python does not mangle (``__x``) and
        that is not in ``taken``, the class's own attributes (``DESCRIPTOR``,
        methods). Any other field, and a repeated, map or message field
        (read through a :class:`FieldAccess` that makes its container, or
        its default sub-message, on first use), has a slot of another name,
        one no field of the message has, and so has the hidden slot of the
        extensions. Those names begin with an underscore, so ``help()`` and
        completion leave them out.
        """
        used = set(self.by_name)

        def hidden(name: str) -> str:
            while name in used:
                name += "_"
            used.add(name)
            return name

        names = []
        for field in self.fields_by_slot:
            name = field.name
            private = name if name.startswith("_") else f"_{name}"  # one underscore: never mangled
            if not is_plain_attribute(name) or name in taken:
                name = hidden(f"_{field.number}")
            elif field.repeated:
                name = hidden(f"{private}_items")
            elif field.message is not None:
                name = hidden(f"{private}_part")
            names.append(name)
        if self.extensions is not None:
            names.append(hidden("_extensions"))
        return tuple(names)

    def _slotted(self) -> tuple[FieldPlan, ...]:
        """The fields that have a slot, in slot order: all, and the extensions' holder."""
        if self.extensions is None:
            return self.fields_by_slot
        return (*self.fields_by_slot, self.extensions)

    def bind(self, cls: Any) -> None:
        """Bind the plan to its struct class: read each slot's offset and number presence bits.

        Every singular field with presence has a bit: a scalar, string or
        bytes field with explicit presence, a oneof member, a sub-message.
        """
        if self.cls is not None:
            raise ValueError(f"{self.full_name} is already bound to its class")
        bits = 0
        for field, name in zip(self._slotted(), cls.__dict__["__slots__"], strict=True):
            member = cls.__dict__[name]
            if type(member).__name__ != "member_descriptor":
                raise TypeError(f"{cls.__name__}.{name} is not a slot")
            field.member = member
            field.offset = _member_offset(member)
            if field is self.extensions:
                continue
            if field.presence and not field.repeated:
                field.has_bit = bits
                bits += 1
        self.presence_words = (bits + 63) // 64
        self.cls = cls


if not cython.compiled:  # compiled, _plan.pxd holds these, inlined where they are used

    def _field_numbered(plan: MessagePlan, number: int) -> FieldPlan | None:
        """The field numbered ``number`` in ``plan``, or None (small numbers by list index)."""
        numbered = plan.numbered
        if number < len(numbered):
            return numbered[number]
        return plan.by_number.get(number)

    def packed_run(field: FieldPlan, wire: int) -> bool:
        """Whether an occurrence of ``field`` on wire type ``wire`` is a packed run."""
        return field.repeated and wire == LEN and field.wire_type in (VARINT, I32, I64)


def is_plain_attribute(name: str) -> bool:
    """Whether ``name`` is an attribute name Python keeps as it is: no mangled ``__x``."""
    return name.isidentifier() and not (name.startswith("__") and not name.endswith("__"))


def _member_offset(member: Any) -> int:
    """Offset of a ``__slots__`` member in its objects (compiled code reads slots by offset)."""
    if cython.compiled:
        descriptor = cython.cast(member_descr_ptr, cython.cast(object_ptr, member))
        return descriptor.d_member.offset
    return 0
