"""The wire core: the protobuf rules that every encoder and decoder of the package shares.

Strategy: ``codec.wire`` (the field-by-field writer and reader) and
``codec.structs._struct`` (structs) are two engines over one format, so each rule of
the format is written here once and both cimport it: the wire types, the
scalar kinds with their wire type, width and numpy dtype, and the reading of
the framing items every decoder meets before it looks at a value: a tag, a
varint's length, a length-delimited value's bounds, a fixed-width value's
bounds, and the skipping of a value or of a whole group.

Readers check before they read: a position is never advanced past ``end``,
and a failure raises a :class:`~codec.errors.DecodeError` subclass whose
offset is ``base`` plus the position of the item at fault (the first byte of
the tag, of the varint, of the size, of the fixed-width value; a group never
closed is reported at its start tag). Where a reader finds two things, it
returns them in one integer: a tag or a size takes at most 5 bytes, so the
low 3 bits hold its byte count and the rest the tag (:func:`read_tag`) or
the end of the value (:func:`length_end`). Groups are skipped by a loop over
a stack of open field numbers, never by recursion.

Writers share the rules of a value (a scalar's bits, checked: :func:`checked_bits`;
a string's UTF-8, with one error text: ``LONE_SURROGATE``; the limits and the
checks of every option). How a length-delimited value gets its length is
decided by what the writer knows when it starts the value, so it takes one of
two forms: the struct encoder has every value in hand, so it measures first
(a tape whose splices carry the nested lengths) and framing writes the size it
is handed (``codec.structs._dispatch``); ``WireWriter`` writes as it is called,
so it reserves one byte and moves the body when the length needs more.

Compiled, the hot readers are ``cdef inline`` functions with their bodies in
``_wire.pxd``, so every compiled module inlines them; the functions that
raise are here, called only on the error path. Uncompiled, the twins below
do the same with Python integers.
"""

from __future__ import annotations

import operator
import sys
from typing import Any

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython  # type: ignore[no-redef]

from codec.errors import DepthLimitError, EncodeError, TruncatedError, WireFormatError

COMPILED: bool = cython.compiled

if not cython.compiled:  # compiled, _wire.pxd cimports these
    from codec._varint import (
        Bytes,
        bits_float32,
        bits_float64,
        float32_bits,
        float64_bits,
        twos_complement,
        unzigzag,
        varint_error,
        varint_scan,
        varint_scan_in,
        varint_value,
        zigzag,
    )

    PyNumber_Index = operator.index  # compiled, the C function itself: no lookup, no call

# Wire types: the low 3 bits of a tag (compiled: C constants of _wire.pxd).
if not cython.compiled:
    VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5
    # A tag, and the size of a length-delimited value, take at most 5 bytes (non-minimal
    # ones included): upb's rule. No writer pads a size further (protozero pads to 4).
    MAX_PREFIX_BYTES = 5
    MAX_FIELD_NUMBER = 2**29 - 1  # a tag is field << 3 | wire type, at most 2**32 - 1
_MAX_TAG = 0xFFFFFFFF

# A str with no UTF-8 form (a lone surrogate) is refused with this text, by every writer.
LONE_SURROGATE = "string has a lone surrogate"

# Messages and groups nested deeper than this are refused: protobuf C++, Java and upb.
DEFAULT_MAX_DEPTH = 100


# --- arguments: each kind of option checked once, with one error text ---------


def checked_flag(name: str, value: Any) -> bool:
    """``value``, an argument called ``name``, checked to be a ``bool`` (a TypeError if not)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {type(value).__name__}")
    return value


def checked_int(name: str, value: Any, unit: str = "") -> int:
    """``value``, an argument called ``name``, checked to be an ``int`` (of ``unit``, if named).

    Anything else (a ``bool``, a float, an object with ``__index__``, which
    may answer differently each time it is asked) is a :class:`TypeError`
    naming the argument.
    """
    if type(value) is not int:
        what = f"an int (a number of {unit})" if unit else "an int"
        raise TypeError(f"{name} must be {what}, not {type(value).__name__}")
    return value


def checked_count(
    name: str, value: Any, minimum: int = 0, maximum: int = sys.maxsize, unit: str = ""
) -> int:
    """``value``, an argument called ``name``, as an ``int`` in ``[minimum, maximum]``.

    A wrong type is a :class:`TypeError`, a number out of range a
    :class:`ValueError`, each naming the argument and what it accepts.
    """
    number = checked_int(name, value, unit)
    if not minimum <= number <= maximum:
        units = f" {unit}" if unit else ""
        raise ValueError(f"{name} must be between {minimum} and {maximum}{units}, not {number}")
    return number


# Kinds of field value (compiled: C constants of _wire.pxd, so a switch on a kind is
# a jump table).
if not cython.compiled:
    INT32, INT64, UINT32, UINT64, SINT32, SINT64, BOOL, ENUM = 0, 1, 2, 3, 4, 5, 6, 7
    FIXED32, FIXED64, SFIXED32, SFIXED64, FLOAT, DOUBLE = 8, 9, 10, 11, 12, 13
    STRING, BYTES, MESSAGE, GROUP = 14, 15, 16, 17
KIND_NAMES = (
    "int32", "int64", "uint32", "uint64", "sint32", "sint64", "bool", "enum",
    "fixed32", "fixed64", "sfixed32", "sfixed64", "float", "double",
    "string", "bytes", "message", "group",
)  # fmt: skip
KINDS = {name: kind for kind, name in enumerate(KIND_NAMES)}
SCALAR_KINDS = frozenset(range(STRING))  # the kinds a packed field may have

# The numpy dtype of a packed column of each scalar kind: native order for the
# varint kinds (each element is decoded), little-endian for the fixed-width ones
# (their bytes are copied as they are).
NUMPY_DTYPES = (
    "=i4", "=i8", "=u4", "=u8", "=i4", "=i8", "?", "=i4",
    "<u4", "<u8", "<i4", "<i8", "<f4", "<f8",
)  # fmt: skip


def scalar_kind(name: object) -> int:
    """The kind named ``name`` if it is a scalar kind (one a packed field may have), else -1."""
    kind = KINDS.get(name, -1) if isinstance(name, str) else -1
    return kind if kind in SCALAR_KINDS else -1


def natural_wire_type(kind: int) -> int:
    """The wire type a value of ``kind`` takes, unpacked."""
    if kind <= ENUM:
        return VARINT
    if kind in (FIXED32, SFIXED32, FLOAT):
        return I32
    if kind in (FIXED64, SFIXED64, DOUBLE):
        return I64
    return SGROUP if kind == GROUP else LEN


def kind_width(kind: int) -> int:
    """Bytes of a value of a fixed-width kind; 0 for a varint kind."""
    wire_type = natural_wire_type(kind)
    if wire_type == I32:
        return 4
    return 8 if wire_type == I64 else 0


if not cython.compiled:  # compiled, _wire.pxd holds these, inlined where they are used

    def read_tag(data: Bytes, pos: int, end: int, base: int) -> int:
        """The valid tag at ``pos`` as ``tag << 3 | its byte count``."""
        n = varint_scan(data, pos, end, False)
        if 0 < n <= MAX_PREFIX_BYTES:
            tag = varint_value(data, pos, n)
            if tag <= _MAX_TAG and tag >> 3 != 0 and tag & 7 <= I32:
                return (tag << 3) | n
        return bad_tag(data, pos, end, base)

    def varint_length(data: Bytes, pos: int, end: int, base: int) -> int:
        """Byte count of the valid varint at ``pos``."""
        return varint_length_in(data, pos, end, end, base)

    def varint_length_in(data: Bytes, pos: int, end: int, readable: int, base: int) -> int:
        """:func:`varint_length`, where the bytes up to ``readable`` may be loaded (see
        ``codec._varint.varint_scan_in``)."""
        n = varint_scan_in(data, pos, end, readable, False)
        if n > 0:
            return n
        return bad_varint(n, pos, base)

    def length_end(data: Bytes, pos: int, end: int, base: int) -> int:
        """Bounds of the length-delimited value whose size is at ``pos``, checked:
        ``its end << 3 | the size's byte count`` (the value starts after the size)."""
        n = varint_scan(data, pos, end, False)
        if 0 < n <= MAX_PREFIX_BYTES:
            size = varint_value(data, pos, n)
            if size <= end - pos - n:
                return ((pos + n + size) << 3) | n
        return bad_length(data, pos, end, base)

    def fixed_end(pos: int, end: int, base: int, width: int) -> int:
        """End of the ``width``-byte value at ``pos``, checked."""
        if width <= end - pos:
            return pos + width
        return bad_fixed(pos, end, base, width)

    def packed_width(wire_type: int, start: int, end: int, base: int) -> int:
        """The byte width of the elements of a packed run ``start:end`` on ``wire_type``
        (0: varints), checked to divide the run."""
        width = 4 if wire_type == I32 else 8 if wire_type == I64 else 0
        if width and (end - start) % width:
            return bad_packed(start, end, base, width)
        return width


if not cython.compiled:  # compiled, _wire.pxd holds these, inlined where they are used

    def varint_value_of(kind: int, raw: int) -> Any:
        """The value of a varint read for ``kind``: int32, sint32 and enum keep the low 32
        bits (protobuf's rule), int64 and the 32-bit kinds are signed, bool is ``raw != 0``."""
        if kind == UINT64:
            return raw
        if kind == BOOL:
            return raw != 0
        if kind == SINT64:
            return unzigzag(raw)
        raw &= 0xFFFFFFFF if kind != INT64 else 0xFFFFFFFFFFFFFFFF
        if kind == UINT32:
            return raw
        if kind == SINT32:
            return unzigzag(raw)
        if kind == INT64:
            return raw - (1 << 64) if raw >> 63 else raw
        return raw - (1 << 32) if raw >> 31 else raw  # INT32, ENUM

    def fixed_value_of(kind: int, bits: int) -> Any:
        """The value of a fixed-width ``bits`` read for ``kind``."""
        if kind == FLOAT:
            return bits_float32(bits)
        if kind == DOUBLE:
            return bits_float64(bits)
        if kind == SFIXED32:
            return bits - (1 << 32) if bits >> 31 else bits
        if kind == SFIXED64:
            return bits - (1 << 64) if bits >> 63 else bits
        return bits  # FIXED32, FIXED64


# --- the value of a scalar to write -------------------------------------------
#
# Every scalar becomes one unsigned 64-bit pattern ("bits"): the varint to write
# for the varint kinds (zigzag applied, negative int32/int64/enum sign-extended),
# the little-endian word for the fixed-width ones. The rules of which Python
# values a kind takes are pb2's: an integer kind takes an int or an object with
# __index__ (a numpy integer) but not a bool or a float; bool takes a bool, a
# numpy bool or an integer; float and double take any real number but str and
# bytes. ``owner`` is the field an error names: an object with a ``label`` (a
# struct's field plan, passed as it is so the hot path costs no reference), or
# a field number. ``assigning`` makes a wrong type a
# TypeError (as pb2 raises it for an assignment) instead of an EncodeError; a
# value out of range is always an EncodeError, a ValueError.

# Half-open value ranges of the integer kinds, by kind (bool, float, double: unused).
_LOW = (-(2**31), -(2**63), 0, 0, -(2**31), -(2**63), 0, -(2**31), 0, 0, -(2**31), -(2**63))
_HIGH = (2**31, 2**63, 2**32, 2**64, 2**31, 2**63, 2, 2**31, 2**32, 2**64, 2**31, 2**63)

if not cython.compiled:  # compiled, _wire.pxd holds these, inlined where they are used

    def fits(kind: int, number: int) -> bool:
        """Whether a signed 64-bit ``number`` is in the range of integer ``kind``."""
        return _LOW[kind] <= number < _HIGH[kind]

    def zigzagged(kind: int) -> bool:
        """Whether integer ``kind`` is written zigzag-encoded."""
        return kind in (SINT32, SINT64)

    def integer_pattern(kind: int, number: int) -> int:
        """The bits of a signed 64-bit ``number`` that :func:`fits` integer ``kind``."""
        if zigzagged(kind):
            return zigzag(number)
        if kind == SFIXED32:
            return number & 0xFFFFFFFF
        return twos_complement(number)

    def scalar_bits(owner: object, kind: int, value: object) -> int:
        """The bits written for ``value`` in a scalar field of ``kind``, checked."""
        return checked_bits(owner, kind, value)

    def plain_varint_bits(owner: object, kind: int, value: object) -> int:
        """:func:`scalar_bits` for int32, int64, uint32, uint64 and enums (compiled: faster)."""
        return checked_bits(owner, kind, value)

    def double_bits(owner: object, value: object) -> int:
        """:func:`scalar_bits` for a double (compiled: faster)."""
        return checked_bits(owner, DOUBLE, value)


def checked_bits(owner: object, kind: int, lent: object) -> int:
    """The bits written for any ``value`` in a scalar field of ``kind``, checked.

    Compiled, :func:`scalar_bits` reads an exact int or float inline and
    calls this for any other value, which it may only lend: the slot it came
    from may be emptied by the Python code run here (a value's ``__index__``),
    so the value is held first.
    """
    value = lent  # compiled: a reference of its own
    if kind in (DOUBLE, FLOAT):
        if type(value) is float:
            number = value
        elif kind == FLOAT and _is_numpy(value, "float32"):
            # its bits as it holds them: float() would set a signaling NaN's quiet bit
            return int.from_bytes(value.tobytes(), sys.byteorder)  # type: ignore[attr-defined]
        else:
            number = real_of(owner, kind, value, False)
        return float64_bits(number) if kind == DOUBLE else float32_bits(number)
    if kind == BOOL:
        if value is True or value is False:
            return 1 if value else 0
        return 1 if truth_of(owner, value, False) else 0
    return integer_bits(owner, kind, value)


def integer_bits(owner: object, kind: int, value: object) -> int:
    """The bits of ``value`` in an integer field of ``kind``: type- and range-checked."""
    number = value if type(value) is int else integer_of(owner, kind, value, False)
    if cython.compiled:
        signed = PyLong_AsLongLongAndOverflow(number, cython.address(overflow))
        if overflow == 0:
            if fits(kind, signed):
                return integer_pattern(kind, signed)
        elif overflow == 1 and kind in (UINT64, FIXED64):
            unsigned = PyLong_AsUnsignedLongLong(number)
            if not PyErr_Occurred():
                return unsigned
            PyErr_Clear()  # OverflowError: 2**64 or more
    elif fits(kind, number):
        return integer_pattern(kind, number)
    raise out_of_range(owner, kind, number)


def integer_of(owner: object, kind: int, value: object, assigning: bool) -> Any:
    """``value`` as an exact int for an integer field: ``__index__`` types, not bools
    or floats. Raises the error of a wrong type."""
    if type(value) is int:
        return value
    if isinstance(value, int) and not isinstance(value, bool):  # an IntEnum member, say
        return PyNumber_Index(value)
    if (
        not isinstance(value, (float, bool))
        and hasattr(type(value), "__index__")
        and not _is_numpy(value, "bool")
    ):
        try:
            return PyNumber_Index(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):  # e.g. a numpy array of several elements
            pass
    raise wrong_type(owner, "an integer", value, assigning)


def truth_of(owner: object, value: object, assigning: bool) -> bool:
    """A bool field's value: a bool, a numpy bool or an integer of the int64 range."""
    if type(value) is bool:
        return value
    if _is_numpy(value, "bool"):
        return bool(value)  # numpy.bool, which has no __index__
    number = integer_of(owner, BOOL, value, assigning)
    if not -(2**63) <= number < 2**63:
        raise EncodeError(f"{describe(owner)}: {number!r} is out of range for a bool")
    return number != 0  # type: ignore[no-any-return]


def real_of(owner: object, kind: int, value: object, assigning: bool) -> float:
    """A float or double field's value: a float, or any real number but str and bytes."""
    if type(value) is float:
        return value
    if not isinstance(value, (str, bytes)) and (
        hasattr(type(value), "__float__") or hasattr(type(value), "__index__")
    ):
        try:
            return float(value)  # type: ignore[arg-type]
        except OverflowError:  # an int beyond floats
            raise EncodeError(
                f"{describe(owner)}: {value!r} is beyond the range of {KIND_NAMES[kind]}"
            ) from None
        except (TypeError, ValueError):  # e.g. an array
            pass
    raise wrong_type(owner, "a number", value, assigning)


def _is_numpy(value: object, name: str) -> bool:
    """Whether ``value`` is a numpy scalar of type ``name`` (numpy is not imported here)."""
    return type(value).__name__ == name and getattr(type(value), "__module__", "") == "numpy"


def describe(owner: object) -> str:
    """How an error names the field ``owner`` stands for."""
    label = getattr(owner, "label", None)
    return label if isinstance(label, str) else f"field {owner}"


def wrong_type(owner: object, expected: str, value: object, assigning: bool) -> Exception:
    """A value of the wrong type: TypeError when assigned (as pb2), EncodeError when written."""
    message = f"{describe(owner)}: expected {expected}, not {type(value).__name__}"
    return TypeError(message) if assigning else EncodeError(message)


def out_of_range(owner: object, kind: int, number: object) -> EncodeError:
    return EncodeError(
        f"{describe(owner)}: {KIND_NAMES[kind]} value {number!r} is outside "
        f"[{_LOW[kind]}, {_HIGH[kind]})"
    )


# --- errors of the readers -----------------------------------------------------


def bad_tag(data: Bytes, pos: int, end: int, base: int) -> int:
    """Raise the error of the tag at ``pos``, which :func:`read_tag` refused."""
    n = 0
    while n < end - pos and data[pos + n] >= 0x80:
        n += 1
        if n == MAX_PREFIX_BYTES:
            raise WireFormatError("tag is longer than 5 bytes", base + pos)
    if n == end - pos:
        raise TruncatedError("data ends inside a tag", base + pos)
    tag = varint_value(data, pos, n + 1)
    if tag > _MAX_TAG:
        raise WireFormatError(
            f"tag {tag:#x} is above 2**32 - 1 (field number above {MAX_FIELD_NUMBER})",
            base + pos,
        )
    if tag >> 3 == 0:
        raise WireFormatError("field number 0", base + pos)
    raise WireFormatError(f"reserved wire type {tag & 7}", base + pos)


def bad_varint(status: int, pos: int, base: int) -> int:
    """Raise the error of a varint_scan ``status`` (0 or negative) at ``pos``."""
    if status == 0:
        raise TruncatedError("data ends inside a varint", base + pos)
    raise varint_error(status, base + pos)


def bad_length(data: Bytes, pos: int, end: int, base: int) -> int:
    """Raise the error of the size at ``pos``, which :func:`length_end` refused."""
    n = varint_scan(data, pos, end, False)
    if n <= 0:
        bad_varint(n, pos, base)
    if n > MAX_PREFIX_BYTES:
        raise WireFormatError(
            f"size of a length-delimited value takes {n} bytes (at most {MAX_PREFIX_BYTES})",
            base + pos,
        )
    size = varint_value(data, pos, n)
    left = end - pos - n
    raise TruncatedError(
        f"length-delimited value of {size} bytes runs past the end",
        base + pos,
        missing=size - left,
    )


def bad_fixed(pos: int, end: int, base: int, width: int) -> int:
    """Raise the error of a ``width``-byte value at ``pos`` that runs past ``end``."""
    raise TruncatedError(
        f"data ends inside a {width}-byte value", base + pos, missing=width - (end - pos)
    )


def bad_packed(start: int, end: int, base: int, width: int) -> int:
    """Raise the error of a packed run ``start:end`` that is not a whole number of elements."""
    raise WireFormatError(
        f"packed run of {end - start} bytes is not a whole number of {width}-byte elements",
        base + start,
    )


def skip_value(data: Bytes, pos: int, end: int, base: int, wire_type: int) -> int:
    """End of the value of ``wire_type`` at ``pos`` (not a group: see :func:`skip_group`)."""
    if wire_type == VARINT:
        return pos + varint_length(data, pos, end, base)
    if wire_type == LEN:
        return length_end(data, pos, end, base) >> 3
    return fixed_end(pos, end, base, 8 if wire_type == I64 else 4)


def skip_group(
    data: Bytes, pos: int, end: int, base: int, field: int, start: int, depth: int, max_depth: int
) -> int:
    """Skip the body of the group of ``field``, whose start tag is at ``start``.

    ``pos`` is where its body begins and ``depth`` the nesting level of the
    group itself; the groups inside it count against ``max_depth`` too.
    Returns ``the end of its end tag << 3 | that tag's byte count``.
    """
    if depth > max_depth:
        raise DepthLimitError(f"groups nested deeper than {max_depth}", base + start)
    open_fields = [field]
    while True:
        if pos >= end:
            raise TruncatedError(f"group of field {field} runs past the end", base + start)
        head = read_tag(data, pos, end, base)
        tag = head >> 3
        after = pos + (head & 7)
        wire_type = tag & 7
        if wire_type == SGROUP:
            if depth + len(open_fields) > max_depth:
                raise DepthLimitError(f"groups nested deeper than {max_depth}", base + pos)
            open_fields.append(tag >> 3)
        elif wire_type == EGROUP:
            innermost = open_fields.pop()
            if tag >> 3 != innermost:
                raise WireFormatError(
                    f"group of field {innermost} closed by an end-group tag of field {tag >> 3}",
                    base + pos,
                )
            if not open_fields:
                return (after << 3) | (head & 7)
        else:
            after = skip_value(data, after, end, base, wire_type)
        pos = after


def skip_field(
    data: Bytes, start: int, pos: int, end: int, tag: int, base: int, depth: int, max_depth: int
) -> int:
    """End of the value at ``pos`` of a field passed over, whose tag, ``tag``, is at
    ``start``, in a message nested ``depth`` deep: a group is skipped whole, a stray
    end-group tag raises."""
    wire_type = tag & 7
    if wire_type == SGROUP:
        return skip_group(data, pos, end, base, tag >> 3, start, depth + 1, max_depth) >> 3
    if wire_type == EGROUP:
        return stray_end_group(tag >> 3, start, base)
    return skip_value(data, pos, end, base, wire_type)


def stray_end_group(field: int, pos: int, base: int) -> int:
    """Raise the error of an end-group tag of ``field`` at ``pos`` that closes nothing."""
    raise WireFormatError(f"end-group tag of field {field} without a start", base + pos)
