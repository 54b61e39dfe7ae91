"""Structs: compiled encode and decode of message classes generated from descriptors.

Strategy: :mod:`codec.schema` turns each protobuf message descriptor into a
:class:`MessagePlan`: its fields in number order, each a :class:`FieldPlan`
that knows its kind, tag and slot. Struct instances keep their field values
in one list (``_values``), indexed by slot, so the compiled encoder reads
them without attribute lookups.

Encoding is two passes over the plan: :func:`message_size_at` measures, then
:func:`write_message_at` writes into room already made, so a nested message's
length prefix is known before its body and is always minimal. The size pass
leaves each struct's size in a slot of the struct (``_size``, as protobuf
C++'s ``_cached_size_``), where the write pass reads the length prefixes of
sub-messages and map entries: every message is measured once, and encoding
is linear in the size of the tree, however deep. Nothing is allocated for
integers, floats, ``bytes``, ``str`` (CPython keeps a ``str``'s UTF-8 form)
or nested structs, so a warm encode allocates nothing. The write pass does
not trust the size pass: Python code can run between and during the passes
(a value's ``__index__``, a sequence's ``__iter__``, another thread) and
change the struct, so every value is written only if it fits in the room
left, and each length-delimited part must fill exactly the size measured
for it; otherwise :class:`EncodeError` says the struct changed while it was
being encoded.

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

import operator
import struct as _struct_module
from typing import Any

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython

from codec._varint import byte_view
from codec._varint import encode as varint_encode
from codec.errors import (
    DecodeError,
    DepthLimitError,
    EncodeError,
    TruncatedError,
    WireFormatError,
)

if not cython.compiled:  # compiled, _struct.pxd cimports these C functions
    from codec._buffer import copy_bytes
    from codec._varint import (
        acquire,
        read_le,
        varint_error,
        varint_scan,
        varint_size,
        varint_value,
        varint_write,
        write_le,
    )

COMPILED: bool = cython.compiled

# Field kinds (C ints when compiled; Python code outside this module uses KINDS).
INT32, INT64, UINT32, UINT64, SINT32, SINT64, BOOL, ENUM = 0, 1, 2, 3, 4, 5, 6, 7
FIXED32, FIXED64, SFIXED32, SFIXED64, FLOAT, DOUBLE = 8, 9, 10, 11, 12, 13
STRING, BYTES, MESSAGE, GROUP = 14, 15, 16, 17
KINDS = {
    "int32": INT32, "int64": INT64, "uint32": UINT32, "uint64": UINT64,
    "sint32": SINT32, "sint64": SINT64, "bool": BOOL, "enum": ENUM,
    "fixed32": FIXED32, "fixed64": FIXED64, "sfixed32": SFIXED32, "sfixed64": SFIXED64,
    "float": FLOAT, "double": DOUBLE, "string": STRING, "bytes": BYTES,
    "message": MESSAGE, "group": GROUP,
}  # fmt: skip

# Wire types.
VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5

DEFAULT_MAX_DEPTH = 100  # protobuf C++, Java and upb
# A length-delimited size takes at most 5 bytes, padded ones included: upb's rule
# (no writer pads further; protozero pads to 4). codec.wire.MAX_SIZE_BYTES.
_MAX_SIZE_BYTES = 5
_MAX_DEPTH = DEFAULT_MAX_DEPTH  # C copy (cdef names cannot be imported)
# Elements (repeated values, messages, unknown fields) one decode may create:
# a few wire bytes can stand for a large object (an empty sub-message is two
# bytes), so a budget bounds what a hostile frame can make us allocate.
DEFAULT_MAX_ELEMENTS = 1_000_000

_DIRECT_NUMBERS = 256  # field numbers below this are looked up by list index
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1

_NUMPY_TYPES = {
    INT32: "<i4", INT64: "<i8", UINT32: "<u4", UINT64: "<u8", SINT32: "<i4", SINT64: "<i8",
    BOOL: "?", ENUM: "<i4", FIXED32: "<u4", FIXED64: "<u8", SFIXED32: "<i4",
    SFIXED64: "<i8", FLOAT: "<f4", DOUBLE: "<f8",
}  # fmt: skip


def natural_wire_type(kind: int) -> int:
    """Wire type of one value of ``kind``."""
    if kind <= ENUM:
        return VARINT
    if kind in (FIXED64, SFIXED64, DOUBLE):
        return I64
    if kind in (FIXED32, SFIXED32, FLOAT):
        return I32
    if kind == GROUP:
        return SGROUP
    return LEN


class FieldPlan:
    """How one field is encoded and decoded."""

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
    ) -> None:
        self.name = name
        self.number = number
        self.kind = kind
        self.slot = slot
        self.repeated = repeated
        self.packed = packed
        self.presence = presence
        # "strict": invalid UTF-8 is an error (proto3); "bytes": kept as bytes (proto2, as upb).
        self.utf8 = utf8
        self.closed_enum = closed_enum
        self.wire_type = natural_wire_type(kind)
        self.tag = (number << 3) | (LEN if packed else self.wire_type)
        self.tag_size = varint_size(self.tag)
        self.end_tag = (number << 3) | EGROUP
        self.message: MessagePlan | None = None  # for MESSAGE and GROUP
        self.map_key: FieldPlan | None = None  # for maps: the entry's key and value
        self.map_value: FieldPlan | None = None
        self.numpy_type = _NUMPY_TYPES.get(kind, "")
        self.oneof_slots: tuple[int, ...] = ()  # all members of this field's oneof, if any


class MessagePlan:
    """The fields of one message type, in number order, and its struct class."""

    def __init__(self, full_name: str, fields: list[FieldPlan]) -> None:
        self.full_name = full_name
        self.fields_by_slot = fields  # fields[i].slot == i
        self.fields = sorted(fields, key=lambda field: field.number)  # encoding order
        self.by_number = {field.number: field for field in fields}
        self.by_name = {field.name: field for field in fields}
        # Fields by number for small numbers, the common case: a list index, not a dict lookup.
        self.numbered: list[FieldPlan | None] = [None] * min(
            max(self.by_number, default=0) + 1, _DIRECT_NUMBERS
        )
        for field in fields:
            if field.number < len(self.numbered):
                self.numbered[field.number] = field
        self.defaults: list[Any] = [None] * len(fields)
        self.containers: list[tuple[int, bool]] = []  # (slot, is a map): see index_containers
        self.oneofs: dict[str, tuple[int, ...]] = {}
        self.cls: Any = None

    def index_containers(self) -> None:
        """Note which slots start as fresh lists or dicts (once map fields are known)."""
        self.containers = [(f.slot, f.map_key is not None) for f in self.fields if f.repeated]

    def field_numbered(self, number: int) -> FieldPlan | None:
        if number < len(self.numbered):
            return self.numbered[number]
        return self.by_number.get(number)

    def new_values(self) -> list[Any]:
        """Default field values for a new struct (fresh lists and dicts)."""
        values = list(self.defaults)
        for slot, is_map in self.containers:
            values[slot] = {} if is_map else []
        return values


class Struct:
    """Base class of generated message classes: field values live in one list."""

    def __init__(self, **fields: Any) -> None:
        plan: MessagePlan = type(self).__plan__  # type: ignore[attr-defined]
        self._plan = plan  # kept on the instance: no class lookup per encode
        self._values = plan.new_values()
        self._unknown = b""
        self._size = 0  # left by the last size pass, for the write pass that follows
        for name, value in fields.items():
            field = plan.by_name.get(name)
            if field is None:
                raise TypeError(f"{plan.full_name} has no field {name!r}")
            self._values[field.slot] = value

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return _values_equal(self._values, other._values) and self._unknown == other._unknown

    def __repr__(self) -> str:
        plan: MessagePlan = type(self).__plan__  # type: ignore[attr-defined]
        shown = ", ".join(
            f"{field.name}={self._values[field.slot]!r}"
            for field in sorted(plan.fields, key=lambda f: f.slot)
        )
        return f"{type(self).__name__}({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (decode, (type(self), encode(self)))


def _values_equal(left: list[Any], right: list[Any]) -> bool:
    for a, b in zip(left, right, strict=True):
        if a is b:
            continue
        if hasattr(a, "dtype") or hasattr(b, "dtype"):  # numpy arrays: compare elements
            if len(a) != len(b) or any(x != y for x, y in zip(a, b, strict=True)):
                return False
        elif a != b:
            return False
    return True


class Field:
    """Attribute access to one slot of a struct's values."""

    def __init__(self, slot: int, name: str) -> None:
        self.slot = slot
        self.name = name

    def __get__(self, instance: Struct | None, owner: type | None) -> Any:
        if instance is None:
            return self
        return instance._values[self.slot]

    def __set__(self, instance: Struct, value: Any) -> None:
        instance._values[self.slot] = value


# --- encoding: values ------------------------------------------------------
#
# Every scalar becomes one unsigned 64-bit pattern ("bits"): the varint to
# write for VARINT kinds (zigzag applied, negative ints sign-extended), the
# little-endian word for fixed-width kinds. Range and type checks happen here.


def _encode_error(field: FieldPlan, plan: MessagePlan, problem: str) -> EncodeError:
    return EncodeError(f"{plan.full_name}.{field.name}: {problem}")


def _integer_of(field: FieldPlan, plan: MessagePlan, value: Any) -> Any:
    """``value`` as an exact int (numpy integers and other ``__index__`` types accepted)."""
    if type(value) is int:
        return value
    if not isinstance(value, float) and hasattr(type(value), "__index__"):
        try:
            return operator.index(value)
        except (TypeError, ValueError):  # e.g. a numpy array of several elements
            pass
    raise _encode_error(field, plan, f"expected an integer, not {type(value).__name__}")


def _signed_of(field: FieldPlan, plan: MessagePlan, value: Any, bits: int) -> int:
    number = _integer_of(field, plan, value)
    if cython.compiled:
        signed = PyLong_AsLongLongAndOverflow(number, cython.address(overflow))
        if overflow == 0 and (bits == 64 or _INT32_MIN <= signed <= _INT32_MAX):
            return signed  # type: ignore[has-type, no-any-return]
    elif -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
        return number  # type: ignore[no-any-return]
    raise _encode_error(field, plan, f"{value!r} is out of range")


def _unsigned_of(field: FieldPlan, plan: MessagePlan, value: Any, bits: int) -> int:
    number = _integer_of(field, plan, value)
    if cython.compiled:
        signed = PyLong_AsLongLongAndOverflow(number, cython.address(overflow))
        if overflow == 0 and signed >= 0 and (bits == 64 or signed <= _MASK32):
            return signed  # type: ignore[has-type, no-any-return]
        if overflow == 1 and bits == 64 and number <= _MASK64:  # in [2**63, 2**64)
            return PyLong_AsUnsignedLongLong(number)  # type: ignore[no-any-return]
    elif 0 <= number < 2**bits:
        return number  # type: ignore[no-any-return]
    raise _encode_error(field, plan, f"{value!r} is out of range")


def _truth(field: FieldPlan, plan: MessagePlan, value: Any) -> bool:
    """A bool field's value: bools, integers and numpy bools are accepted."""
    if type(value) is bool:
        return value
    if type(value).__name__ == "bool" and getattr(type(value), "__module__", "") == "numpy":
        return bool(value)  # numpy.bool, which has no __index__
    return _signed_of(field, plan, value, 64) != 0


def _twos(number: int) -> int:
    """The two's-complement 64-bit pattern of a signed 64-bit integer."""
    if cython.compiled:
        return number
    return number & _MASK64


def _real(field: FieldPlan, plan: MessagePlan, value: Any) -> float:
    if type(value) is float:
        return value
    if hasattr(type(value), "__float__") or hasattr(type(value), "__index__"):
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):  # e.g. an array, or an int beyond floats
            pass
    raise _encode_error(field, plan, f"expected a number, not {type(value).__name__}")


def _double_bits(number: float) -> int:
    if cython.compiled:
        memcpy(cython.address(bits), cython.address(number), 8)
        return bits  # type: ignore[has-type]
    return _struct_module.unpack("<Q", _struct_module.pack("<d", number))[0]  # type: ignore[no-any-return]


def _float_bits(number: float) -> int:
    if cython.compiled:
        single = number  # C rounds to single precision; beyond its range gives infinity
        memcpy(cython.address(bits32), cython.address(single), 4)
        return bits32  # type: ignore[has-type]
    try:
        return _struct_module.unpack("<I", _struct_module.pack("<f", number))[0]  # type: ignore[no-any-return]
    except OverflowError:  # finite but beyond float32: infinity, as C rounds
        return 0xFF800000 if number < 0 else 0x7F800000


def _scalar_bits(field: FieldPlan, plan: MessagePlan, value: Any) -> int:
    """The 64-bit pattern written for a scalar value, range- and type-checked."""
    kind = field.kind
    if kind == DOUBLE:
        return _double_bits(_real(field, plan, value))
    if kind == FLOAT:
        return _float_bits(_real(field, plan, value))
    if kind in (UINT64, FIXED64):
        return _unsigned_of(field, plan, value, 64)
    if kind in (UINT32, FIXED32):
        return _unsigned_of(field, plan, value, 32)
    if kind == BOOL:
        return 1 if _truth(field, plan, value) else 0
    if kind in (INT64, SFIXED64):
        return _twos(_signed_of(field, plan, value, 64))
    # Zigzag shifts the unsigned pattern: shifting a negative signed value left is
    # undefined behaviour in C (UBSan caught it).
    if kind == SINT64:
        number = _signed_of(field, plan, value, 64)
        return ((_twos(number) << 1) ^ _twos(number >> 63)) & _MASK64
    number = _signed_of(field, plan, value, 32)
    if kind == SINT32:
        return ((_twos(number) << 1) ^ _twos(number >> 31)) & _MASK32
    if kind == SFIXED32:
        return number & _MASK32
    return _twos(number)  # INT32, ENUM: negative values take 10 bytes


def _text_size(field: FieldPlan, plan: MessagePlan, value: Any) -> int:
    """UTF-8 length of a string field's value (compiled: CPython's cached UTF-8)."""
    if type(value) is not str:
        return _bytes_size(field, plan, _not_text(field, plan, value))
    try:
        if cython.compiled:
            PyUnicode_AsUTF8AndSize(value, cython.address(size))
            return size  # type: ignore[has-type]
        return len(value.encode())
    except UnicodeEncodeError:
        raise _encode_error(field, plan, "string has a lone surrogate") from None


def _write_text(
    field: FieldPlan, plan: MessagePlan, value: Any, out: Any, pos: int, end: int, tagged: int
) -> int:
    if type(value) is not str:
        return _write_bytes(field, plan, _not_text(field, plan, value), out, pos, end, tagged)
    if cython.compiled:
        text = _utf8_or_null(value, cython.address(size))
        if text == cython.NULL:
            PyErr_Clear()
            raise _encode_error(field, plan, "string has a lone surrogate")
        if size == 0 and tagged == _IMPLICIT:  # type: ignore[has-type]
            return pos
        pos = _open_len(field, plan, out, pos, end, size, tagged)  # type: ignore[has-type]
        copy_bytes(out, pos, cython.cast(cython.p_uchar, text), size)  # type: ignore[has-type]
        return pos + size  # type: ignore[has-type, no-any-return]
    try:
        data = value.encode()
    except UnicodeEncodeError:
        raise _encode_error(field, plan, "string has a lone surrogate") from None
    if not data and tagged == _IMPLICIT:
        return pos
    pos = _open_len(field, plan, out, pos, end, len(data), tagged)
    copy_bytes(out, pos, data, len(data))
    return pos + len(data)


def _not_text(field: FieldPlan, plan: MessagePlan, value: Any) -> Any:
    """A non-str value of a string field: bytes are allowed where upb returns them."""
    if field.utf8 == "bytes" and isinstance(value, bytes):
        return value  # proto2 strings that were not UTF-8 on the wire come back as bytes
    raise _encode_error(field, plan, f"expected str, not {type(value).__name__}")


def _bytes_size(field: FieldPlan, plan: MessagePlan, value: Any) -> int:
    if type(value) is bytes:
        return len(value)
    if isinstance(value, str):
        raise _encode_error(field, plan, "expected a bytes-like object, not str")
    try:
        with byte_view(value, False) as view:
            return len(view)
    except TypeError:
        raise _encode_error(field, plan, f"expected bytes, not {type(value).__name__}") from None


def _write_bytes(
    field: FieldPlan, plan: MessagePlan, value: Any, out: Any, pos: int, end: int, tagged: int
) -> int:
    if cython.compiled:
        if type(value) is bytes:
            size = len(value)
            if size == 0 and tagged == _IMPLICIT:
                return pos
            pos = _open_len(field, plan, out, pos, end, size, tagged)
            copy_bytes(out, pos, cython.cast(cython.p_uchar, PyBytes_AS_STRING(value)), size)
            return pos + size
        _bytes_size(field, plan, value)  # the type checks of the size pass
        acquire(value, cython.address(view), PyBUF_SIMPLE)
        try:
            if view.len == 0 and tagged == _IMPLICIT:  # type: ignore[has-type]
                return pos
            pos = _open_len(field, plan, out, pos, end, view.len, tagged)  # type: ignore[has-type]
            copy_bytes(out, pos, cython.cast(cython.p_uchar, view.buf), view.len)  # type: ignore[has-type]
            return pos + view.len  # type: ignore[has-type, no-any-return]
        finally:
            PyBuffer_Release(cython.address(view))
    _bytes_size(field, plan, value)
    with byte_view(value, False) as source:
        if len(source) == 0 and tagged == _IMPLICIT:
            return pos
        pos = _open_len(field, plan, out, pos, end, len(source), tagged)
        copy_bytes(out, pos, source, len(source))
        return pos + len(source)


# --- encoding: sizes -------------------------------------------------------


def _value_size(field: FieldPlan, plan: MessagePlan, value: Any, depth: int) -> int:
    """Bytes of one value of ``field``, without its tag."""
    if field.wire_type != LEN and field.wire_type != SGROUP:
        return _bits_size(field, _scalar_bits(field, plan, value))
    kind = field.kind
    if kind == STRING:
        size = _text_size(field, plan, value)
    elif kind == BYTES:
        size = _bytes_size(field, plan, value)
    else:
        size = _submessage_size(field, plan, value, depth)
        if kind == GROUP:
            return size + varint_size(field.end_tag)
    return varint_size(size) + size


def _submessage_size(field: FieldPlan, plan: MessagePlan, value: Any, depth: int) -> int:
    return message_size_at(_sub_plan(field, plan, value), value, depth + 1)


def _sub_plan(field: FieldPlan, plan: MessagePlan, value: Any) -> MessagePlan:
    """The plan of a message field's value, which must be a struct of the field's type."""
    sub: MessagePlan = field.message  # type: ignore[assignment]
    if type(value) is not sub.cls:
        problem = f"expected {sub.cls.__name__}, not {type(value).__name__}"
        raise _encode_error(field, plan, problem)
    return sub


def _entry_size(field: FieldPlan, key: Any, value: Any, depth: int, measured: bool) -> int:
    """Bytes of one map entry message (key and value are always written, as upb does).

    ``measured`` (the write pass): a message value's size is the one its size
    pass left in it, not measured again.
    """
    entry: MessagePlan = field.message  # type: ignore[assignment]
    key_field: FieldPlan = field.map_key  # type: ignore[assignment]
    value_field: FieldPlan = field.map_value  # type: ignore[assignment]
    if measured and value_field.kind == MESSAGE:
        _sub_plan(value_field, entry, value)
        size = _measured(value)
        value_size = varint_size(size) + size
    else:
        value_size = _value_size(value_field, entry, value, depth)
    return (
        key_field.tag_size
        + _value_size(key_field, entry, key, depth)
        + value_field.tag_size
        + value_size
    )


def _check_container(field: FieldPlan, plan: MessagePlan, value: Any) -> None:
    """A map field needs a mapping, a repeated field a sized sequence (not str or bytes)."""
    if field.map_key is not None:
        if not hasattr(value, "items"):
            raise _encode_error(field, plan, f"expected a dict, not {type(value).__name__}")
    elif isinstance(value, (str, bytes)) or not _sized(value):
        raise _encode_error(field, plan, f"expected a sequence, not {type(value).__name__}")


def _sized(value: Any) -> bool:
    try:
        len(value)
    except TypeError:  # no length, or a 0-d numpy array
        return False
    return True


def _field_size(field: FieldPlan, plan: MessagePlan, value: Any, depth: int) -> int:
    """Bytes of a whole field (tags included), 0 when nothing is written."""
    if field.repeated:
        _check_container(field, plan, value)
    if field.map_key is not None:
        total = 0
        for key, item in value.items():
            entry = _entry_size(field, key, item, depth, False)
            total += field.tag_size + varint_size(entry) + entry
        return total
    if field.repeated:
        if field.packed:
            payload = 0
            for item in value:
                payload += _value_size(field, plan, item, depth)
            if payload == 0 and len(value) == 0:
                return 0
            return field.tag_size + varint_size(payload) + payload
        total = 0
        for item in value:
            total += field.tag_size + _value_size(field, plan, item, depth)
        return total
    if value is None:
        return 0  # unset: explicit presence, or no sub-message
    if field.presence or field.message is not None:
        return field.tag_size + _value_size(field, plan, value, depth)
    return _implicit_size(field, plan, value)


def _implicit_size(field: FieldPlan, plan: MessagePlan, value: Any) -> int:
    """Bytes of a singular proto3 scalar, string or bytes field: 0 for its zero value."""
    if field.wire_type == LEN:
        size = (
            _text_size(field, plan, value)
            if field.kind == STRING
            else _bytes_size(field, plan, value)
        )
        return field.tag_size + varint_size(size) + size if size else 0
    bits = _scalar_bits(field, plan, value)
    if bits == 0:  # -0.0 has bits, so it is written, as upb does
        return 0
    return field.tag_size + _bits_size(field, bits)


def _bits_size(field: FieldPlan, bits: int) -> int:
    if field.wire_type == VARINT:
        return _varint_bytes(bits)
    return 4 if field.wire_type == I32 else 8


def _varint_bytes(value: int) -> int:
    """``varint_size``; compiled, by counting leading zeros (no loop, no call across modules)."""
    if cython.compiled:
        return (9 * (63 - __builtin_clzll(value | 1)) + 73) >> 6  # type: ignore[no-any-return]
    return varint_size(value)


def message_size_at(plan: MessagePlan, message: Struct, depth: int) -> int:
    """Encoded size of ``message``, also left in ``message._size`` for the write pass.

    ``depth`` guards against structs that contain themselves.
    """
    if depth > _MAX_DEPTH:
        raise EncodeError(f"{plan.full_name}: nested deeper than {_MAX_DEPTH} levels")
    values = message._values
    if values is None:
        raise _changed(plan)
    total = 0
    for field in plan.fields:
        if field.slot >= len(values):  # emptied by Python code run for an earlier field
            raise _changed(plan)
        total += _field_size(field, plan, values[field.slot], depth)
    if plan.oneofs:
        _check_oneofs(plan, values)
    unknown = message._unknown
    if unknown is None:
        raise _changed(plan)
    total += len(unknown)
    message._size = total
    return total


def _measured(message: Struct) -> int:
    """The size the size pass left in a sub-message (the write pass always follows one)."""
    return message._size


def _check_oneofs(plan: MessagePlan, values: list[Any]) -> None:
    for name, slots in plan.oneofs.items():
        chosen = 0
        for slot in slots:
            if slot >= len(values):  # emptied by Python code run in the size pass
                raise _changed(plan)
            if values[slot] is not None:
                chosen += 1
        if chosen > 1:
            raise _oneof_error(plan, values, name, slots)


def _oneof_error(plan: MessagePlan, values: list[Any], name: str, slots: Any) -> EncodeError:
    names = ", ".join(plan.fields_by_slot[slot].name for slot in slots if values[slot] is not None)
    return EncodeError(f"{plan.full_name}: oneof {name} has several members set ({names})")


def message_size(message: Struct) -> int:
    """Encoded size of a struct, in bytes."""
    return message_size_at(plan_of(message), message, 0)


def plan_of(message: Any) -> MessagePlan:
    """The plan of a struct instance."""
    if not isinstance(message, Struct):
        raise EncodeError(f"expected a struct, not {type(message).__name__}")
    instance: Struct = message
    return instance._plan


# --- encoding: writing -----------------------------------------------------
#
# The write pass writes through a raw pointer into the room the size pass
# reserved, but Python code can run between and during the passes (a value's
# __index__ or __float__, a sequence's __iter__, a map key's __int__ while
# the keys are sorted, a finaliser, another thread), so the struct may no
# longer be what was measured. Each value is first taken in its C form (bits,
# a UTF-8 pointer, a buffer), which is where Python code can run; its bytes
# are then counted and written only if they fit before ``end``, with nothing
# run in between. A length-delimited part (sub-message, packed run, map
# entry) is given its measured size as its own end and must fill it exactly,
# as the whole message must fill its room: otherwise the struct changed
# while it was encoded, an EncodeError. The output is thus always a
# consistent encoding of the values the write pass read, or an error.

_UNTAGGED, _TAGGED, _IMPLICIT = 0, 1, 2  # how _write_value writes: _IMPLICIT skips zero values
_MAX_SCALAR_BYTES = 15  # a tag (5 bytes: field numbers < 2**29) and a 10-byte varint


def _changed(plan: MessagePlan) -> EncodeError:
    return EncodeError(f"{plan.full_name}: the struct changed while it was being encoded")


def _room(field: FieldPlan, plan: MessagePlan, pos: int, end: int, size: int, tagged: int) -> None:
    """Raise unless ``size`` bytes, after the tag unless _UNTAGGED, fit in ``out[pos:end]``."""
    if tagged != _UNTAGGED:
        size += field.tag_size
    if size > end - pos:
        raise _changed(plan)


def _open_len(
    field: FieldPlan, plan: MessagePlan, out: Any, pos: int, end: int, size: int, tagged: int
) -> int:
    """Write the tag (unless _UNTAGGED) and length prefix of a ``size``-byte value.

    Returns where the value goes; raises if the value would not end by ``end``.
    """
    _room(field, plan, pos, end, _varint_bytes(size) + size, tagged)
    if tagged != _UNTAGGED:
        pos = varint_write(out, pos, field.tag)
    return varint_write(out, pos, size)


def _write_value(
    field: FieldPlan,
    plan: MessagePlan,
    value: Any,
    out: Any,
    pos: int,
    end: int,
    depth: int,
    tagged: int,
) -> int:
    """Write one value of ``field`` (and its tag, unless _UNTAGGED) before ``end``."""
    if field.wire_type != LEN and field.wire_type != SGROUP:
        bits = _scalar_bits(field, plan, value)
        if bits == 0 and tagged == _IMPLICIT:  # -0.0 has bits, so it is written, as upb does
            return pos
        return _write_scalar(field, plan, bits, out, pos, end, tagged)
    kind = field.kind
    if kind == STRING:
        return _write_text(field, plan, value, out, pos, end, tagged)
    if kind == BYTES:
        return _write_bytes(field, plan, value, out, pos, end, tagged)
    sub = _sub_plan(field, plan, value)
    if kind == GROUP:
        if field.tag_size > end - pos:
            raise _changed(plan)
        pos = varint_write(out, pos, field.tag)
        pos = _write_fields(sub, value, out, pos, end, depth + 1)
        if varint_size(field.end_tag) > end - pos:
            raise _changed(plan)
        return varint_write(out, pos, field.end_tag)
    size = _measured(value)
    pos = _open_len(field, plan, out, pos, end, size, _TAGGED)
    return write_message_at(sub, value, out, pos, pos + size, depth + 1)


def _write_scalar(
    field: FieldPlan, plan: MessagePlan, bits: int, out: Any, pos: int, end: int, tagged: int
) -> int:
    """Write the scalar ``bits`` of ``field`` (and its tag, unless _UNTAGGED) before ``end``."""
    if end - pos < _MAX_SCALAR_BYTES:  # near the end of the room: count the bytes
        _room(field, plan, pos, end, _bits_size(field, bits), tagged)
    if tagged != _UNTAGGED:
        pos = varint_write(out, pos, field.tag)
    return _write_bits(field, bits, out, pos)


def _write_field(
    field: FieldPlan, plan: MessagePlan, value: Any, out: Any, pos: int, end: int, depth: int
) -> int:
    if field.map_key is not None:
        if type(value) is not dict:
            _check_container(field, plan, value)
        entry: MessagePlan = field.message  # type: ignore[assignment]
        key_field: FieldPlan = field.map_key
        value_field: FieldPlan = field.map_value  # type: ignore[assignment]
        for key, item in sorted(value.items(), key=_map_order(key_field)):
            size = _entry_size(field, key, item, depth, True)
            pos = _open_len(field, plan, out, pos, end, size, _TAGGED)
            entry_end = pos + size
            pos = _write_value(key_field, entry, key, out, pos, entry_end, depth, _TAGGED)
            pos = _write_value(value_field, entry, item, out, pos, entry_end, depth, _TAGGED)
            if pos != entry_end:
                raise _changed(plan)
        return pos
    if field.repeated:
        if type(value) is not list:
            _check_container(field, plan, value)
        if field.packed:
            payload = 0
            for item in value:
                payload += _value_size(field, plan, item, depth)
            if payload == 0 and len(value) == 0:
                return pos
            pos = _open_len(field, plan, out, pos, end, payload, _TAGGED)
            run_end = pos + payload
            for item in value:
                pos = _write_value(field, plan, item, out, pos, run_end, depth, _UNTAGGED)
            if pos != run_end:
                raise _changed(plan)
            return pos
        for item in value:
            pos = _write_value(field, plan, item, out, pos, end, depth, _TAGGED)
        return pos
    if value is None:
        return pos
    if field.presence or field.message is not None:
        return _write_value(field, plan, value, out, pos, end, depth, _TAGGED)
    if field.wire_type == LEN:
        return _write_value(field, plan, value, out, pos, end, depth, _IMPLICIT)
    bits = _scalar_bits(field, plan, value)  # the common case, without the call above
    if bits == 0:  # -0.0 has bits, so it is written, as upb does
        return pos
    return _write_scalar(field, plan, bits, out, pos, end, _TAGGED)


def _write_bits(field: FieldPlan, bits: int, out: Any, pos: int) -> int:
    if field.wire_type == VARINT:
        return varint_write(out, pos, bits)
    return write_le(out, pos, bits, 4 if field.wire_type == I32 else 8)


def _map_order(key_field: FieldPlan) -> Any:
    """Sort key giving upb's deterministic order of map entries.

    upb (protobuf 7) orders integer keys by descending unsigned value and
    string keys bytewise ascending, a key before its own prefixes.
    """
    kind = key_field.kind
    if kind == STRING:
        return lambda item: _utf8(item[0]) + b"\xff"  # 0xFF never occurs in UTF-8
    mask = _MASK32 if kind in (INT32, UINT32, SINT32, FIXED32, SFIXED32) else _MASK64
    return lambda item: -(int(item[0]) & mask)


def _utf8(key: str | bytes) -> bytes:
    return key if isinstance(key, bytes) else key.encode()  # proto2 keys may be bytes


def write_message_at(
    plan: MessagePlan, message: Struct, out: Any, pos: int, end: int, depth: int
) -> int:
    """Write ``message`` in ``out[pos:end]``, which it must fill; return ``end``.

    :func:`message_size_at` must have just measured ``message`` as
    ``end - pos`` bytes (the room is made, and the sizes of its sub-messages
    are the ones it left). :class:`EncodeError` if it changed since.
    """
    if _write_fields(plan, message, out, pos, end, depth) != end:
        raise _changed(plan)
    return end


def _write_fields(
    plan: MessagePlan, message: Struct, out: Any, pos: int, end: int, depth: int
) -> int:
    """Write the fields of ``message`` from ``pos``, not past ``end``; return where they end."""
    if depth > _MAX_DEPTH:  # a struct made to contain itself since the size pass
        raise EncodeError(f"{plan.full_name}: nested deeper than {_MAX_DEPTH} levels")
    values = message._values
    if values is None:
        raise _changed(plan)
    for field in plan.fields:
        if field.slot >= len(values):
            raise _changed(plan)
        pos = _write_field(field, plan, values[field.slot], out, pos, end, depth)
    unknown = message._unknown
    if unknown is None or len(unknown) > end - pos:
        raise _changed(plan)
    copy_bytes(out, pos, unknown, len(unknown))
    return pos + len(unknown)


def write_struct(plan: MessagePlan, message: Struct, data: bytearray, pos: int, size: int) -> int:
    """Write ``message``, just measured as ``size`` bytes, at ``data[pos:]``; return the end.

    The room is made. ``data`` stays exported meanwhile, so Python code that
    the write pass runs cannot resize it under the pointer (BufferError).
    """
    if cython.compiled:
        PyObject_GetBuffer(data, cython.address(view), PyBUF_SIMPLE)
        try:
            out = cython.cast(cython.p_uchar, view.buf)  # type: ignore[has-type]
            return write_message_at(plan, message, out, pos, pos + size, 0)
        finally:
            PyBuffer_Release(cython.address(view))
    with memoryview(data):
        return write_message_at(plan, message, data, pos, pos + size, 0)


def encode(message: Struct) -> bytes:
    """The wire bytes of a struct (deterministic: equal to upb's deterministic output)."""
    plan = plan_of(message)
    size = message_size_at(plan, message, 0)
    out = bytearray(size)
    write_struct(plan, message, out, 0, size)
    return bytes(out)


# --- decoding --------------------------------------------------------------


class Decoding:
    """Options of a decode, and the state of the one under way (reusable, one at a time)."""

    def __init__(self, zero_copy: bool, numpy: bool, max_depth: int, max_elements: int) -> None:
        self.zero_copy = zero_copy
        self.numpy = numpy
        self.max_depth = max_depth
        self.max_elements = max_elements
        self.source = memoryview(b"")  # the input, a flat byte view
        self.base = 0  # stream offset of the input's first byte, for error offsets
        self.elements = 0  # budget left
        self.rejected_entry: bytes | None = None
        # Undeclared closed-enum values met inside a packed run, as unknown varint fields.
        self.stray_values: bytearray | None = None
        self.tag = 0  # set by _read_tag
        self.body = 0  # set by _length_end: where the value's bytes start
        self.after = 0  # set by _read_value: where the value ends

    def run(self, plan: MessagePlan, source: memoryview, base: int) -> Struct:
        """Decode all of ``source`` (a flat byte view) as a message of ``plan``."""
        self.source = source
        self.base = base
        self.elements = self.max_elements
        self.rejected_entry = None
        self.stray_values = None
        message = new_struct(plan)
        decode_message(plan, message, _bytes_of(source), 0, len(source), self, 0, 0)
        return message

    def spend(self, count: int, offset: int) -> None:
        self.elements -= count
        if self.elements < 0:
            raise DecodeError("message has more elements than max_elements allows", offset)


def new_struct(plan: MessagePlan) -> Struct:
    message: Struct = Struct.__new__(plan.cls)
    message._plan = plan
    message._values = plan.new_values()
    message._unknown = b""
    message._size = 0
    return message


def _read_tag(data: Any, pos: int, end: int, state: Decoding) -> int:
    """Read and check the tag at ``pos`` into ``state.tag``; return the position after it."""
    n = varint_scan(data, pos, end, False)
    if n <= 0:
        if n == 0:
            raise TruncatedError("message ends inside a tag", state.base + pos)
        raise varint_error(n, state.base + pos)
    tag = varint_value(data, pos, n)
    if n > 5 or tag > _MASK32:
        raise WireFormatError("tag is longer than 5 bytes or above 2**32-1", state.base + pos)
    if tag >> 3 == 0:
        raise WireFormatError("field number 0", state.base + pos)
    if tag & 7 > I32:
        raise WireFormatError(f"reserved wire type {tag & 7}", state.base + pos)
    state.tag = tag
    return pos + n


def _read_varint(data: Any, pos: int, end: int, state: Decoding) -> int:
    n = varint_scan(data, pos, end, False)
    if n <= 0:
        if n == 0:
            raise TruncatedError("message ends inside a varint", state.base + pos)
        raise varint_error(n, state.base + pos)
    return n


def _length_end(data: Any, pos: int, end: int, state: Decoding) -> int:
    """End of the length-delimited value whose size is at ``pos``.

    Its body starts at ``state.body``. A size written in more than 5 bytes is
    refused (WireFormatError at the size), as upb refuses it.
    """
    n = _read_varint(data, pos, end, state)
    if n > _MAX_SIZE_BYTES:  # as upb, and as WireReader
        raise WireFormatError(
            f"size of a length-delimited value takes {n} bytes (at most 5)", state.base + pos
        )
    size = varint_value(data, pos, n)
    if size > end - pos - n:
        raise TruncatedError("length-delimited value runs past its message", state.base + pos)
    state.body = pos + n
    return pos + n + size


def _skip(data: Any, pos: int, end: int, tag: int, state: Decoding, depth: int) -> int:
    """Position after the value of a field with ``tag`` whose value starts at ``pos``."""
    wire = tag & 7
    if wire == VARINT:
        return pos + _read_varint(data, pos, end, state)
    if wire in (I64, I32):
        width = 8 if wire == I64 else 4
        if width > end - pos:
            raise TruncatedError("fixed-width value runs past its message", state.base + pos)
        return pos + width
    if wire == LEN:
        return _length_end(data, pos, end, state)
    if wire == EGROUP:
        raise WireFormatError("end-group tag without a matching start", state.base + pos)
    # SGROUP: skip to the matching end, iteratively.
    open_groups = [tag >> 3]
    while open_groups:
        if depth + len(open_groups) > state.max_depth:
            raise DepthLimitError(f"groups nested deeper than {state.max_depth}", state.base + pos)
        if pos >= end:
            raise TruncatedError("message ends inside a group", state.base + pos)
        start = pos
        pos = _read_tag(data, pos, end, state)
        inner = state.tag
        if inner & 7 == SGROUP:
            open_groups.append(inner >> 3)
        elif inner & 7 == EGROUP:
            if inner >> 3 != open_groups.pop():
                raise WireFormatError("group closed by another field number", state.base + start)
        else:
            pos = _skip(data, pos, end, inner, state, depth)
    return pos


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
    if depth > state.max_depth:
        raise DepthLimitError(f"messages nested deeper than {state.max_depth}", state.base + pos)
    values = message._values
    unknown: bytearray | None = None
    while pos < end:
        start = pos
        pos = _read_tag(data, pos, end, state)
        tag = state.tag
        if tag & 7 == EGROUP:
            if group and tag >> 3 == group:
                break
            raise WireFormatError("end-group tag without a matching start", state.base + start)
        field = plan.field_numbered(tag >> 3)
        if field is not None:
            after = _decode_field(field, plan, values, data, pos, end, tag & 7, state, depth)
            if after >= 0:
                pos = after
                if state.stray_values is not None:
                    if unknown is None:
                        unknown = bytearray(message._unknown)
                    unknown += state.stray_values
                    state.stray_values = None
                continue
        value_start = pos
        pos = _skip(data, pos, end, tag, state, depth)
        state.spend(1, state.base + start)
        if unknown is None:
            unknown = bytearray(message._unknown)
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


def _decode_field(
    field: FieldPlan,
    plan: MessagePlan,
    values: list[Any],
    data: Any,
    pos: int,
    end: int,
    wire: int,
    state: Decoding,
    depth: int,
) -> int:
    """Decode one known field at ``pos``; -1 when it must be kept as unknown."""
    slot = field.slot
    if field.map_key is not None:
        if wire != LEN:
            return -1
        after = _length_end(data, pos, end, state)
        state.spend(1, state.base + pos)
        if _decode_entry(field, values[slot], data, state.body, after, state, depth):
            return after
        return -1  # as upb does, an entry holding unknown fields stays in the unknown fields
    if field.repeated and wire == LEN and field.wire_type in (VARINT, I32, I64):
        after = _length_end(data, pos, end, state)
        _decode_packed(field, values, data, state.body, after, state)
        return after
    if wire != field.wire_type:
        return -1
    if field.kind == GROUP or field.kind == MESSAGE:
        existing = None if field.repeated else values[slot]
        sub = existing
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
            values[slot].append(sub)
        else:
            _set_singular(field, values, sub)
        return after
    value = _read_value(field, data, pos, end, state)
    if field.closed_enum is not None and value not in field.closed_enum:
        return -1  # proto2: an unknown enum value is kept as an unknown field
    if field.repeated:
        state.spend(1, state.base + pos)
        _append(values, slot, value)
    else:
        _set_singular(field, values, value)
    return state.after


def _set_singular(field: FieldPlan, values: list[Any], value: Any) -> None:
    """Set a singular field; a oneof member clears the others (the last one read wins)."""
    for other in field.oneof_slots:
        values[other] = None
    values[field.slot] = value


def _append(values: list[Any], slot: int, value: Any) -> None:
    current = values[slot]
    if hasattr(current, "dtype"):  # a numpy array from an earlier packed run
        current = values[slot] = current.tolist()
    current.append(value)


def _read_value(field: FieldPlan, data: Any, pos: int, end: int, state: Decoding) -> Any:
    """One scalar, string or bytes value at ``pos``; it ends at ``state.after``."""
    kind = field.kind
    if kind <= ENUM:
        n = _read_varint(data, pos, end, state)
        state.after = pos + n
        return _from_varint(kind, varint_value(data, pos, n))
    if field.wire_type == I32 or field.wire_type == I64:
        width = 4 if field.wire_type == I32 else 8
        if width > end - pos:
            raise TruncatedError("fixed-width value runs past its message", state.base + pos)
        state.after = pos + width
        return _from_fixed(kind, read_le(data, pos, width))
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


def _from_varint(kind: int, value: int) -> Any:
    """The value of a decoded varint; int32 and enum values are truncated, as protobuf requires."""
    if kind == UINT64:
        return value
    if kind == UINT32:
        return value & _MASK32
    if kind == BOOL:
        return value != 0
    if kind == SINT64:
        return _unzigzag(value)
    if kind == SINT32:
        return _unzigzag(value & _MASK32)
    if kind == INT64:
        return _signed64(value)
    return _signed32(value & _MASK32)  # INT32, ENUM


def _from_fixed(kind: int, bits: int) -> Any:
    if kind == SFIXED32:
        return _signed32(bits)
    if kind == SFIXED64:
        return _signed64(bits)
    if kind == FLOAT:
        return _bits_float(bits)
    if kind == DOUBLE:
        return _bits_double(bits)
    return bits  # FIXED32, FIXED64


def _unzigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def _signed64(value: int) -> int:
    if cython.compiled:
        return value  # the C conversion reinterprets the two's complement
    return value - (1 << 64) if value >> 63 else value


def _signed32(value: int) -> int:
    if cython.compiled:
        return cython.cast(cython.int, value)
    return value - (1 << 32) if value >> 31 else value


def _bits_float(bits: int) -> float:
    if cython.compiled:
        bits32 = bits
        memcpy(cython.address(single), cython.address(bits32), 4)
        return single  # type: ignore[has-type, no-any-return]
    return _struct_module.unpack("<f", _struct_module.pack("<I", bits))[0]  # type: ignore[no-any-return]


def _bits_double(bits: int) -> float:
    if cython.compiled:
        memcpy(cython.address(number), cython.address(bits), 8)
        return number  # type: ignore[has-type, no-any-return]
    return _struct_module.unpack("<d", _struct_module.pack("<Q", bits))[0]  # type: ignore[no-any-return]


def _decode_packed(
    field: FieldPlan, values: list[Any], data: Any, pos: int, end: int, state: Decoding
) -> None:
    """Append the elements of a packed run ``data[pos:end]`` to the field's list."""
    width = 4 if field.wire_type == I32 else 8 if field.wire_type == I64 else 0
    if width and (end - pos) % width:
        raise WireFormatError(
            "packed fixed-width run is not a whole number of elements", state.base + pos
        )
    if state.numpy and field.numpy_type:
        values[field.slot] = _numpy_column(field, values[field.slot], data, pos, end, state, width)
    else:
        while pos < end:
            value = _read_value(field, data, pos, end, state)
            state.spend(1, state.base + pos)
            if field.closed_enum is None or value in field.closed_enum:
                _append(values, field.slot, value)
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
        column = numpy.frombuffer(state.source, field.numpy_type, count, pos)
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
    if len(current):
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

    Such an entry is left in ``state.rejected_entry``, re-encoded, for the
    caller to keep among the unknown fields.
    """
    entry_plan: MessagePlan = field.message  # type: ignore[assignment]
    entry = new_struct(entry_plan)
    decode_message(entry_plan, entry, data, pos, end, state, depth + 1, 0)
    if entry._unknown:
        state.rejected_entry = encode(entry)
        return False
    key, value = entry._values[0], entry._values[1]
    if key is None:  # proto2 entries may leave out their key or value: zero values, as upb
        key = _zero(field.map_key)  # type: ignore[arg-type]
    if value is None:
        value_field: FieldPlan = field.map_value  # type: ignore[assignment]
        if value_field.message is None:
            value = _zero(value_field)
        else:
            value = _new_part(value_field.message, state, pos)
    mapping[key] = value
    return True


def _zero(field: FieldPlan) -> Any:
    """The zero value of a scalar, string or bytes field."""
    kind = field.kind
    if kind == STRING:
        return ""
    if kind == BYTES:
        return b""
    if kind == BOOL:
        return False
    if kind in (FLOAT, DOUBLE):
        return 0.0
    return 0


def _new_part(plan: MessagePlan, state: Decoding, pos: int) -> Struct:
    """A new sub-message struct, charged to the element budget with its fresh containers.

    A few wire bytes (an empty sub-message, a map entry without its value)
    make a whole struct, so its lists and dicts count too.
    """
    state.spend(1 + len(plan.containers), state.base + pos)
    return new_struct(plan)


def decode(
    cls: type[Struct],
    buffer: Any,
    *,
    zero_copy: bool = False,
    numpy: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    base: int = 0,
) -> Any:
    """Decode a message of struct class ``cls`` from any contiguous buffer.

    ``zero_copy`` returns ``bytes`` fields as memoryviews into ``buffer`` and
    ``numpy`` returns packed numeric fields as numpy arrays (fixed-width ones
    without copying). Errors are :class:`DecodeError` subclasses whose offset
    counts from ``base``.
    """
    plan: MessagePlan = cls.__plan__  # type: ignore[attr-defined]
    state = Decoding(zero_copy, numpy, max_depth, max_elements)
    # Not released here: zero-copy fields and numpy columns keep views of it.
    return state.run(plan, byte_view(buffer, False), base)


def _bytes_of(source: memoryview) -> Any:
    """What the decoder reads: compiled, a pointer to the view's bytes."""
    if cython.compiled:
        return cython.cast(cython.p_uchar, PyMemoryView_GET_BUFFER(source).buf)
    return source
