"""Struct encoding: each value read once onto a tape, then the tape written out.

Strategy: encoding a struct takes two passes, but only the first reads the
struct. :func:`measure` walks the plan and writes every number, tag and
short string straight into the scratch bytes of a :class:`Tape`, already
encoded. The length prefix of a sub-message, packed run or map entry takes
one byte, patched in once its body has been read. What cannot be written
yet is left as a *splice* at its place in those bytes: the prefix of a body
of 128 bytes or more (so every prefix is minimal, as upb's), and the bytes
of a long string or bytes value, which stay where they are, with a
reference held. :func:`write_tape` then copies the
scratch bytes between the splices and the splices themselves into room of
exactly the measured size, with no Python code run. No value is read
twice, nothing can change under the write, and the output is always the
encoding of the values as :func:`measure` read them: Python code that runs
while the struct is read (a value's ``__index__`` or ``__float__``, a
sequence's ``__iter__``, another thread taking the GIL there) may change
the struct, but the tape keeps what was read, and the objects whose bytes
a splice points into, until it is released.

Compiled, a tape is C memory kept between encodes: one shared tape serves
every encode of the process, so a warm encode allocates nothing, and an
encode started while it is in use (from a value's ``__index__``, or by
another thread) takes a fresh tape of its own. Its scratch bytes are about
the size of the output, less the long strings, and a splice takes 24 bytes
and a reference 8; a tape whose arrays grew past :data:`_KEPT_BYTES` in all
gives them back when released. Map entries go out in the map's own order
(a dict's: insertion), as pb2's default leaves it unspecified; with
``deterministic``, sorted in upb's deterministic order in a C array, without
a Python object made. A message's extensions are its extensions' struct, written inline
after its fields (one test of the plan for a message type without any).
Nesting is bounded by ``_MAX_DEPTH`` and by the C stack left in the
thread (``codec.structs._struct.STACK_EXHAUSTED``).

This file is Cython pure-Python mode (types in ``_encode.pxd``).
"""

from __future__ import annotations

import contextlib
import operator
from typing import Any

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython  # type: ignore[no-redef]

from codec._varint import byte_view
from codec._wire import DEFAULT_MAX_DEPTH
from codec.errors import EncodeError
from codec.structs._struct import STACK_EXHAUSTED


class Shortened(Exception):
    """Uncompiled: a list was cut, by another thread, between reads of its length and an item.

    (Compiled, no other thread runs between the two: the walk holds the GIL.)
    """


if not cython.compiled:  # compiled, _encode.pxd cimports these C functions and constants
    from builtins import len as PyDict_Size
    from builtins import len as PyList_GET_SIZE
    from builtins import len as PyTuple_GET_SIZE
    from operator import getitem as PyTuple_GET_ITEM

    def PyList_GET_ITEM(items: list[Any], index: int) -> Any:  # the C name
        """``items[index]``, or :class:`Shortened` if the list no longer reaches it."""
        try:
            return items[index]
        except IndexError:
            raise Shortened from None

    from codec._buffer import copy_bytes
    from codec._varint import varint_size, varint_write, varint_write_padded, write_le
    from codec._wire import (
        BOOL,
        BYTES,
        FIXED32,
        GROUP,
        I32,
        I64,
        INT32,
        LEN,
        MAX_PREFIX_BYTES,
        SFIXED32,
        SGROUP,
        SINT32,
        STRING,
        UINT32,
        VARINT,
        double_bits,
        plain_varint_bits,
        scalar_bits,
        zigzagged,
    )
    from codec.structs._plan import (
        SHAPE_DOUBLE,
        SHAPE_INTEGER,
        SHAPE_MESSAGE,
        SHAPE_NUMBER,
        SHAPE_PACKED,
        SHAPE_TEXT,
        FieldPlan,
        MessagePlan,
    )
    from codec.structs._struct import (
        Struct,
        _check_member,
        _encode_error,
        _has,
        _lent,
        _lone_surrogate,
        _sized,
        _slot,
        _type_of,
        plan_of,
        ready,
        unknown_of,
    )

COMPILED: bool = cython.compiled
_MAX_DEPTH = DEFAULT_MAX_DEPTH  # C copy (cdef names cannot be imported)

# Sizes (compiled: C constants of _encode.pxd, so the compiler folds them into the code).
if not cython.compiled:
    _TAG_ROOM = 8  # a tag takes at most 5 bytes (field numbers < 2**29), put in one 8-byte store
    _MAX_VARINT_BYTES = 10
    _MAX_SCALAR_BYTES = 15  # a tag and a 10-byte varint
    _RUN = 256  # elements of a packed run of integers written per room check
    _COPIED = 64  # strings and bytes up to this length are copied into the tape, longer spliced
    _KEPT_BYTES = 1 << 20  # a released tape keeps at most this much memory (its three arrays)
    _FIRST_BYTES = 4096
    _FIRST_SPLICES = 64
    _STACK_ITEMS = 64  # map entries sorted on the C stack; more are sorted in malloc'd memory
    _INSERTED = 16  # map entries sorted by insertion; more by qsort
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


class Tape:
    """One struct's encoding: scratch bytes, the splices between them, and what they hold."""

    def __init__(self) -> None:
        self.size = 0  # of the output, once measured: the scratch bytes and what the splices add
        self.busy = False  # between measure() and release()
        self.deterministic = False  # map entries in upb's order, else in the map's own
        if not cython.compiled:
            self.scratch = bytearray()
            self.used = self.room = 0
            self.extra = 0  # bytes the splices add
            self.splices: list[list[Any]] = []  # [at, value, data]: a length or data

    def __dealloc__(self) -> None:
        if cython.compiled:
            _drop_references(self)
            free(self.scratch)
            free(self.splices)
            free(self.owners)


_SHARED = Tape()  # the tape of the encode in progress, when only one is


def _taken() -> Tape:
    """The shared tape, or a fresh one while the shared one is in use."""
    tape = _SHARED
    if tape.busy:
        tape = Tape()
    tape.busy = True
    if cython.compiled:
        tape.floor = codec_stack_floor()
    return tape


def release(tape: Tape) -> None:
    """Drop the tape's references and contents, ready for the next encode."""
    _drop_references(tape)
    if cython.compiled:
        tape.count = 0
        kept = (
            tape.room
            + tape.capacity * cython.sizeof(Splice)
            + tape.owner_room * cython.sizeof(object_ptr)
        )
        if kept > _KEPT_BYTES:
            free(tape.scratch)
            free(tape.splices)
            free(tape.owners)
            tape.scratch = cython.NULL
            tape.splices = cython.NULL
            tape.owners = cython.NULL
            tape.room = tape.capacity = tape.owner_room = 0
    else:
        tape.splices.clear()
        if tape.room > _KEPT_BYTES:
            tape.scratch = bytearray()
            tape.room = 0
    tape.used = 0
    tape.extra = 0
    tape.size = 0
    tape.busy = False


def _drop_references(tape: Tape) -> None:
    if cython.compiled:
        while tape.held > 0:  # one by one: a finaliser run by a release may run Python code
            tape.held -= 1
            owner = tape.owners[tape.held]
            tape.owners[tape.held] = cython.NULL
            Py_XDECREF(owner)


# --- writing onto the tape ---------------------------------------------------


@cython.cfunc
@cython.inline
@cython.locals(tape=Tape, size=cython.Py_ssize_t)
@cython.returns(cython.int)
@cython.exceptval(-1, check=False)
def _scratch_room(tape: Tape, size: int) -> None:
    """Make room for ``size`` more scratch bytes."""
    if tape.used + size > tape.room:
        _grow_scratch(tape, size)


def _grow_scratch(tape: Tape, size: int) -> None:
    room = max(tape.room * 2, tape.used + size, _FIRST_BYTES)
    if cython.compiled:
        grown = realloc(tape.scratch, room)
        if grown == cython.NULL:
            raise MemoryError()
        tape.scratch = cython.cast(cython.p_uchar, grown)
    else:
        tape.scratch.extend(bytes(room - len(tape.scratch)))
    tape.room = room


@cython.cfunc
@cython.inline
@cython.locals(tape=Tape, data="const char *", size=cython.Py_ssize_t)
@cython.returns(cython.void)
@cython.exceptval(check=False)
def _copy(tape: Tape, data: Any, size: int) -> None:
    """Copy ``size`` bytes into the scratch (room made)."""
    if cython.compiled:
        codec_copy_value(tape.scratch + tape.used, data, size)
    else:
        copy_bytes(tape.scratch, tape.used, data, size)
    tape.used += size


def _splice(tape: Tape, index: int, at: int, value: int, data: Any) -> None:
    """Put a splice for scratch position ``at`` at ``index``, before the splices from there on.

    The splices are kept in the order of their positions, as the write pass
    takes them.
    """
    if cython.compiled:
        if tape.count == tape.capacity:
            _grow_splices(tape)
        splice = tape.splices + index
        if index < tape.count:
            memmove(splice + 1, splice, (tape.count - index) * cython.sizeof(Splice))
        splice.at = at
        splice.value = value
        splice.data = data
        tape.count += 1
    else:
        tape.splices.insert(index, [at, value, data])


def _grow_splices(tape: Tape) -> None:
    if cython.compiled:
        capacity = tape.capacity * 2 if tape.capacity else _FIRST_SPLICES
        grown = realloc(tape.splices, capacity * cython.sizeof(Splice))
        if grown == cython.NULL:
            raise MemoryError()
        tape.splices = cython.cast(splice_ptr, grown)
        tape.capacity = capacity


@cython.cfunc
@cython.inline
@cython.locals(tape=Tape, prefix="Prefix")
@cython.returns("Prefix")
@cython.exceptval(check=False)
def _open_length(tape: Tape) -> Any:
    """Leave a length prefix, room made; its body is what the tape gets until :func:`_close_length`.

    The prefix takes one scratch byte. It is given a splice only if its body
    takes 128 bytes or more, which is known when it is closed.
    """
    if cython.compiled:
        prefix.at = tape.used
        prefix.extra = tape.extra
        prefix.count = tape.count
        tape.used += 1
        return prefix
    else:
        tape.used += 1
        return (tape.used - 1, tape.extra, len(tape.splices))


@cython.cfunc
@cython.inline
@cython.locals(
    tape=Tape,
    prefix="Prefix",
    at=cython.Py_ssize_t,
    extra=cython.Py_ssize_t,
    count=cython.Py_ssize_t,
    size=cython.Py_ssize_t,
)
@cython.returns(cython.int)
@cython.exceptval(-1, check=False)
def _close_length(tape: Tape, prefix: Any) -> None:
    """Give the length prefix left by :func:`_open_length` the size of its body.

    A body of less than 128 bytes has its size in the prefix's scratch byte.
    A longer body gives the prefix a splice, written in place of that byte
    and put before the splices of the body, so the splices stay in the order
    of their bytes. Each enclosing body that is long moves the splices inside
    it once: nesting is bounded, so this stays linear in the splices.
    """
    if cython.compiled:
        at, extra, count = prefix.at, prefix.extra, prefix.count
    else:
        at, extra, count = prefix
    size = tape.used - at - 1 + tape.extra - extra
    if size < 0x80:
        tape.scratch[at] = size
    else:
        _splice(tape, count, at, size, cython.NULL)
        tape.extra += varint_size(size) - 1


def _hold(tape: Tape, owner: Any) -> None:
    """Keep ``owner`` alive until the tape is released (a splice points into its bytes)."""
    if cython.compiled:
        if tape.held == tape.owner_room:
            room = tape.owner_room * 2 if tape.owner_room else _FIRST_SPLICES
            grown = realloc(tape.owners, room * cython.sizeof(object_ptr))
            if grown == cython.NULL:
                raise MemoryError()
            tape.owners = cython.cast(cython.pointer(object_ptr), grown)
            tape.owner_room = room
        Py_INCREF(owner)
        tape.owners[tape.held] = cython.cast(object_ptr, owner)
        tape.held += 1


def _data(tape: Tape, owner: Any, data: Any, size: int) -> None:
    """Put ``size`` bytes of ``owner`` (at ``data``) after the scratch written so far.

    Room is made for :data:`_COPIED` bytes, the most that are copied.
    """
    if size <= _COPIED:
        _copy(tape, data, size)
    else:
        _hold(tape, owner)
        end = tape.count if cython.compiled else len(tape.splices)  # type: ignore[attr-defined]
        _splice(tape, end, tape.used, size, data)
        tape.extra += size


# --- the reading pass ----------------------------------------------------------


def measure(message: Any, partial: bool, deterministic: bool) -> Tape:
    """Read ``message`` onto a tape (its ``size`` the encoded size); :func:`release` it after.

    EncodeError for a value the field cannot hold, with the tape released,
    and, unless ``partial``, for required fields that are not set. Map
    entries are in upb's deterministic order if ``deterministic``, else in
    each map's own.
    """
    plan = plan_of(message)
    if not partial and plan.required is not None:
        plan.required(message)
    tape = _taken()
    tape.deterministic = deterministic
    try:
        _message(tape, plan, message, 0)
    except BaseException:
        release(tape)
        raise
    tape.size = tape.used + tape.extra
    return tape


def _message(tape: Tape, plan: MessagePlan, message: Struct, depth: int) -> None:
    """Put the fields of ``message`` on the tape, in number order."""
    if depth > _MAX_DEPTH:
        raise EncodeError(f"{plan.full_name}: nested deeper than {_MAX_DEPTH} levels")
    if cython.compiled and codec_below(tape.floor):
        raise EncodeError(f"{plan.full_name}: {STACK_EXHAUSTED}")
    if not cython.compiled or message._frame is not None:
        ready(message)  # a lazy decode's pending fields parsed
    # Not held: a plan's tuple of fields, made with the plan and never replaced, holds them.
    fields = cython.cast("object_ptr", plan.fields) if cython.compiled else plan.fields
    for i in range(PyTuple_GET_SIZE(cython.cast(tuple, fields))):
        field = PyTuple_GET_ITEM(cython.cast(tuple, fields), i)
        _member(tape, plan, message, cython.cast(FieldPlan, field), depth)
    if plan.extensions is not None:
        _extensions(tape, plan, message, depth)
    if (message._unknown if cython.compiled else unknown_of(message)) is not None:  # type: ignore[attr-defined]
        _unknown_fields(tape, message)


def _unknown_fields(tape: Tape, message: Struct) -> None:
    """Put the unknown fields kept by ``message`` (its ``_unknown`` bytes) on the tape."""
    unknown: bytes = message._unknown if cython.compiled else unknown_of(message)  # type: ignore[attr-defined]
    if unknown:
        _scratch_room(tape, _COPIED)
        _data(tape, unknown, _data_of_bytes(unknown), len(unknown))


@cython.cfunc
@cython.inline
@cython.locals(
    tape=Tape,
    plan=MessagePlan,
    message=Struct,
    field=FieldPlan,
    depth=cython.int,
    lent="object_ptr",
)
@cython.returns(cython.int)
@cython.exceptval(-1, check=False)
def _member(tape: Tape, plan: MessagePlan, message: Struct, field: FieldPlan, depth: int) -> None:
    """Put one field of ``message`` on the tape, if it is set and not at its implicit zero."""
    if field.has_bit < 0 or _has(message, field.has_bit):
        # A number or a str is read where it lies, without a reference: no Python code
        # runs until it is read (checked_bits holds what it is lent). Anything else is held.
        lent = _lent(message, field)
        if cython.cast(object, lent) is not None:  # None: unset, or an empty container never used
            _value_of_member(tape, plan, field, lent, depth)


@cython.cfunc
@cython.inline
@cython.locals(
    tape=Tape,
    plan=MessagePlan,
    field=FieldPlan,
    lent="object_ptr",
    depth=cython.int,
    value=object,
    shape=cython.int,
    bits=cython.ulonglong,
)
@cython.returns(cython.int)
@cython.exceptval(-1, check=False)
def _value_of_member(
    tape: Tape, plan: MessagePlan, field: FieldPlan, lent: Any, depth: int
) -> None:
    """Put the value of a member that is set on the tape, unless it is an implicit zero.

    One switch on the shape (each case an equality, so Cython makes a C
    ``switch`` of it). An implicit zero is found from the bits or the size
    read, as the value is written: no test of the default before.
    """
    shape = field.shape
    if shape == SHAPE_INTEGER:
        bits = plain_varint_bits(field, field.kind, cython.cast(object, lent))
        if bits != 0 or not field.implicit:
            _put_number(tape, field, bits, VARINT)
    elif shape == SHAPE_DOUBLE:
        bits = double_bits(field, cython.cast(object, lent))
        if bits != 0 or not field.implicit:  # -0.0 has bits, so it is written, as upb does
            _put_number(tape, field, bits, I64)
    elif shape == SHAPE_NUMBER:
        bits = scalar_bits(field, field.kind, cython.cast(object, lent))
        if bits != 0 or not field.implicit:
            _put_number(tape, field, bits, field.wire_type)
    elif shape == SHAPE_TEXT:
        if type(cython.cast(object, lent)) is str:
            _text(tape, field, plan, cython.cast(object, lent), field.implicit)
        else:
            value = cython.cast(object, lent)  # held, as below: not a str, so not read in place
            _field(tape, field, plan, value, depth)
    else:
        value = cython.cast(object, lent)  # held: Python code may run while it is written
        if shape == SHAPE_MESSAGE and type(value) is cython.cast(MessagePlan, field.message).cls:
            _nested(
                tape,
                field,
                cython.cast(MessagePlan, field.message),
                cython.cast(Struct, value),
                depth,
            )
        elif shape == SHAPE_PACKED and isinstance(value, list):
            _packed(tape, field, value)
        else:
            _field(tape, field, plan, value, depth)


def _extensions(tape: Tape, plan: MessagePlan, message: Struct, depth: int) -> None:
    """Put the extensions set in ``message`` on the tape: its extensions' struct, inline."""
    field: FieldPlan = plan.extensions  # type: ignore[assignment]  # the caller checked
    holder = _slot(message, field)
    if holder is not None:
        extensions: MessagePlan = field.message  # type: ignore[assignment]  # linked
        if type(holder) is not extensions.cls:
            raise _not_message(field, plan, holder)
        _message(tape, extensions, cython.cast(Struct, holder), depth)


@cython.cfunc
@cython.inline
@cython.locals(
    tape=Tape, field=FieldPlan, bits=cython.ulonglong, wire_type=cython.int, out=cython.p_uchar
)
@cython.returns(cython.int)
@cython.exceptval(-1, check=False)
def _put_number(tape: Tape, field: FieldPlan, bits: int, wire_type: int) -> None:
    """Put a number's tag and bits on the tape, in ``wire_type`` (the field's).

    Given as a constant, the wire type's tests are left out by the compiler.
    The position is kept in a local: a store through the scratch pointer
    would make the compiler read the tape's fields again after it.
    """
    _scratch_room(tape, _MAX_SCALAR_BYTES)
    out = tape.scratch
    tape.used = _bits_at(out, _tag_at(out, tape.used, field), bits, wire_type)


@cython.cfunc
@cython.inline
@cython.locals(tape=Tape, field=FieldPlan)
@cython.returns(cython.void)
@cython.exceptval(check=False)
def _put_tag(tape: Tape, field: FieldPlan) -> None:
    """Put the field's tag on the tape (room made for :data:`_TAG_ROOM` bytes)."""
    tape.used = _tag_at(tape.scratch, tape.used, field)


@cython.cfunc
@cython.inline
@cython.locals(out=cython.p_uchar, pos=cython.Py_ssize_t, field=FieldPlan)
@cython.returns(cython.Py_ssize_t)
@cython.exceptval(check=False)
def _tag_at(out: Any, pos: int, field: FieldPlan) -> int:
    """Put the field's tag at ``out[pos:]`` (room made); return the end.

    Compiled, the tag is one store of the 8 bytes of ``field.tag_word``, of
    which its ``tag_size`` count: no loop over its bytes.
    """
    if cython.compiled:
        write_le(out, pos, field.tag_word, 8)
        return pos + field.tag_size
    return varint_write(out, pos, field.tag)


@cython.cfunc
@cython.inline
@cython.locals(
    out=cython.p_uchar, pos=cython.Py_ssize_t, bits=cython.ulonglong, wire_type=cython.int
)
@cython.returns(cython.Py_ssize_t)
@cython.exceptval(check=False)
def _bits_at(out: Any, pos: int, bits: int, wire_type: int) -> int:
    """Put a number's bits at ``out[pos:]``, in ``wire_type`` (room made); return the end."""
    if wire_type == VARINT:
        return varint_write_padded(out, pos, bits)
    return write_le(out, pos, bits, 4 if wire_type == I32 else 8)


def _field(tape: Tape, field: FieldPlan, plan: MessagePlan, value: Any, depth: int) -> None:
    """Put a whole field that is not a singular number on the tape."""
    if field.map_key is not None:
        _map(tape, field, plan, value, depth)
    elif not field.repeated:  # a string, bytes or message
        _value(tape, field, plan, value, depth, field.implicit)
    else:
        if not isinstance(value, list):
            _check_sequence(field, plan, value)
        if field.packed:
            _packed(tape, field, value)
        else:  # a list (a Repeated too) is walked by index, without an iterator object
            _repeated(tape, field, plan, value if isinstance(value, list) else list(value), depth)


def _repeated(
    tape: Tape, field: FieldPlan, plan: MessagePlan, items: list[Any], depth: int
) -> None:
    """Put the elements of an unpacked repeated field (a list, or a subclass of one: read
    as a list, by index) on the tape, one field each."""
    if field.message is not None:  # messages or groups
        sub = cython.cast(MessagePlan, field.message)
        for item in cython.cast(list, items):
            if type(item) is not sub.cls:
                raise _not_message(field, plan, item)
            _nested(tape, field, sub, cython.cast(Struct, item), depth)
    else:
        for item in cython.cast(list, items):
            _value(tape, field, plan, item, depth, False)


def _packed(tape: Tape, field: FieldPlan, items: Any) -> None:
    """Put a packed run on the tape: its tag, length prefix and values; nothing if empty."""
    start = tape.used
    _scratch_room(tape, _TAG_ROOM)  # the tag and a 1-byte length prefix
    _put_tag(tape, field)
    prefix = _open_length(tape)
    if not isinstance(items, list):
        for item in items:
            _put_element(tape, field, item)
    elif cython.compiled:  # no try: compiled, a list is never cut under the walk
        _list_elements(tape, field, cython.cast(list, items))
    else:  # another thread may cut the list: what was read is written
        with contextlib.suppress(Shortened):
            _list_elements(tape, field, items)
    if tape.used == start + field.tag_size + 1:  # no items: nothing is written
        tape.used = start
    else:
        _close_length(tape, prefix)


def _list_elements(tape: Tape, field: FieldPlan, items: list[Any]) -> None:
    """Put the elements of a packed run held in a list (a subclass too) on the tape."""
    if field.wire_type == VARINT and field.kind != BOOL and field.closed_enum is None:
        _integers(tape, field, items)
    else:  # read where they lie, as _message reads numbers
        i = 0
        while i < PyList_GET_SIZE(items):  # the list may change while an item is read
            _put_element(tape, field, cython.cast(object, PyList_GET_ITEM(items, i)))
            i += 1


@cython.cfunc
@cython.inline
@cython.locals(
    tape=Tape,
    field=FieldPlan,
    items=list,
    i=cython.Py_ssize_t,
    end=cython.Py_ssize_t,
    out=cython.p_uchar,
    pos=cython.Py_ssize_t,
    item="object_ptr",
    kind=cython.int,
    low="int64_t",
    high="int64_t",
    small=cython.longlong,
    zigzag_them=cython.bint,
    bits=cython.ulonglong,
)
@cython.returns(cython.int)
@cython.exceptval(-1, check=False)
def _integers(tape: Tape, field: FieldPlan, items: list) -> None:  # type: ignore[type-arg]
    """Put the elements of a packed run of varint integers (not bools) on the tape.

    As :func:`_element` puts them, but with the kind's range and zigzag
    looked up once for the run, and room made once for up to :data:`_RUN`
    elements. Compiled, an exact int in range is written without a test of
    its kind, at a position kept in a local. Any other element may run
    Python code that changes the list, so the run's end is found again
    after it.
    """
    kind = field.kind
    if cython.compiled:
        int64_range(kind, cython.address(low), cython.address(high))
    zigzag_them = zigzagged(kind)
    i = 0
    while i < PyList_GET_SIZE(items):
        end = min(PyList_GET_SIZE(items), i + _RUN)
        _scratch_room(tape, (end - i) * _MAX_VARINT_BYTES)
        out = tape.scratch
        pos = tape.used
        while i < end:
            item = PyList_GET_ITEM(items, i)  # compiled: not held, as _message reads numbers
            i += 1
            if (
                cython.compiled
                and type(cython.cast(object, item)) is int
                and codec_small_int(cython.cast(object, item), cython.address(small))
                and low <= small <= high
            ):
                bits = zigzag(small) if zigzag_them else twos_complement(small)
                pos = varint_write_padded(out, pos, bits)
            else:
                bits = scalar_bits(field, kind, cython.cast(object, item))
                pos = varint_write_padded(out, pos, bits)  # in the room made: no other writer
                break
        tape.used = pos


@cython.cfunc
@cython.inline
@cython.locals(tape=Tape, field=FieldPlan, bits=cython.ulonglong)
@cython.returns(cython.int)
@cython.exceptval(-1, check=False)
def _put_element(tape: Tape, field: FieldPlan, item: Any) -> None:
    """Put one element of a packed run on the tape."""
    bits = _number_bits(field, item)
    _scratch_room(tape, _MAX_SCALAR_BYTES)
    tape.used = _bits_at(tape.scratch, tape.used, bits, field.wire_type)


@cython.cfunc
@cython.inline
@cython.locals(field=FieldPlan, bits=cython.ulonglong)
@cython.returns(cython.ulonglong)
@cython.exceptval(0xFFFFFFFFFFFFFFFE, check=True)
def _number_bits(field: FieldPlan, value: Any) -> int:
    """The bits of a number of ``field``, checked: its range, and a closed enum's members.

    The encoder's number paths (SHAPE_NUMBER, SHAPE_PACKED) never meet a
    closed enum, so they call scalar_bits directly.
    """
    bits = scalar_bits(field, field.kind, value)
    if field.closed_enum is not None:
        _check_member(field, bits)
    return bits


def _value(
    tape: Tape, field: FieldPlan, plan: MessagePlan, value: Any, depth: int, implicit: bool
) -> None:
    """Put one value of ``field`` and its tag on the tape; nothing for an ``implicit`` empty one."""
    wire_type = field.wire_type
    kind = field.kind
    if wire_type != LEN and wire_type != SGROUP:
        bits = _number_bits(field, value)
        if bits != 0 or not implicit:
            _put_number(tape, field, bits, wire_type)
    elif kind == STRING and type(value) is str:
        _text(tape, field, plan, value, implicit)
    elif kind in (STRING, BYTES):
        if kind == STRING:
            value = _not_text(field, plan, value)
        _bytes(tape, field, plan, value, implicit)
    else:
        sub = cython.cast(MessagePlan, field.message)
        if type(value) is not sub.cls:
            raise _not_message(field, plan, value)
        _nested(tape, field, sub, cython.cast(Struct, value), depth)


def _nested(tape: Tape, field: FieldPlan, sub: MessagePlan, value: Struct, depth: int) -> None:
    """Put a message of ``field`` (a struct of ``sub``'s class) and its tag on the tape."""
    _scratch_room(tape, _TAG_ROOM)  # the tag and a 1-byte length prefix
    _put_tag(tape, field)
    if field.kind == GROUP:
        _message(tape, sub, value, depth + 1)
        _scratch_room(tape, MAX_PREFIX_BYTES)
        tape.used = varint_write(tape.scratch, tape.used, field.end_tag)
    else:
        prefix = _open_length(tape)
        _message(tape, sub, value, depth + 1)
        _close_length(tape, prefix)


@cython.cfunc
@cython.inline
@cython.locals(tape=Tape, field=FieldPlan, size=cython.Py_ssize_t, out=cython.p_uchar)
@cython.returns(cython.int)
@cython.exceptval(-1, check=False)
def _head(tape: Tape, field: FieldPlan, size: int) -> None:
    """Put the tag and length prefix of a ``size``-byte string or bytes value on the tape.

    The room made holds the value too if it is copied (see :func:`_data`).
    """
    _scratch_room(tape, 2 * MAX_PREFIX_BYTES + _COPIED)  # at least _TAG_ROOM
    out = tape.scratch
    tape.used = varint_write_padded(out, _tag_at(out, tape.used, field), size)


def _text(tape: Tape, field: FieldPlan, plan: MessagePlan, text: Any, implicit: bool) -> None:
    """Put a ``str`` on the tape as its UTF-8 bytes (compiled: CPython's own)."""
    if cython.compiled:
        data = utf8_or_null(text, cython.address(size))
        if data == cython.NULL:
            raise _lone_surrogate(field, plan)
    else:
        try:
            data = text.encode()
        except UnicodeEncodeError:
            raise _lone_surrogate(field, plan) from None
        size = len(data)
    if size or not implicit:
        _head(tape, field, size)
        _data(tape, text, data, size)


def _not_text(field: FieldPlan, plan: MessagePlan, value: Any) -> Any:
    """A non-str value of a string field: bytes are allowed where upb returns them."""
    if field.utf8 == "bytes" and isinstance(value, bytes):
        return value  # proto2 strings that were not UTF-8 on the wire come back as bytes
    raise _encode_error(field, plan, f"expected str, not {type(value).__name__}")


def _bytes(tape: Tape, field: FieldPlan, plan: MessagePlan, value: Any, implicit: bool) -> None:
    """Put a bytes-like value on the tape: a ``bytes`` as it is, any other through a view.

    The view keeps the buffer exported until the tape is released, so a
    ``bytearray`` cannot be resized under a splice into it.
    """
    if type(value) is not bytes:
        value = _view_of(field, plan, value)
    size = len(value)
    if size or not implicit:
        _head(tape, field, size)
        _data(tape, value, _data_of_bytes(value), size)


def _view_of(field: FieldPlan, plan: MessagePlan, value: Any) -> Any:
    if isinstance(value, str):
        raise _encode_error(field, plan, "expected a bytes-like object, not str")
    try:
        return byte_view(value, False)
    except (TypeError, BufferError):
        raise _encode_error(field, plan, f"expected bytes, not {type(value).__name__}") from None


@cython.cfunc
@cython.inline
@cython.returns("const char *")
@cython.exceptval(check=False)
def _data_of_bytes(value: Any) -> Any:
    """Where the bytes of a ``bytes`` or of a flat byte view are (uncompiled: the object)."""
    if cython.compiled:
        if type(value) is bytes:
            return PyBytes_AS_STRING(value)
        return cython.cast(cython.p_char, PyMemoryView_GET_BUFFER(value).buf)
    return value


def _not_message(field: FieldPlan, plan: MessagePlan, value: Any) -> EncodeError:
    """The error for a value of a message field that is not a struct of the field's type."""
    sub: MessagePlan = field.message  # type: ignore[assignment]
    problem = f"expected a struct of {sub.full_name}, not {_type_of(field, value)}"
    return _encode_error(field, plan, problem)


def _check_sequence(field: FieldPlan, plan: MessagePlan, value: Any) -> None:
    """A repeated field needs a sized sequence (not str or bytes)."""
    if isinstance(value, (str, bytes)) or not _sized(value):
        raise _encode_error(field, plan, f"expected a sequence, not {type(value).__name__}")


# --- maps ----------------------------------------------------------------------


def _map(tape: Tape, field: FieldPlan, plan: MessagePlan, mapping: Any, depth: int) -> None:
    """Put the entries of a map field on the tape: in the map's own order, or in upb's.

    upb's order (see :func:`_map_order`) if the tape is ``deterministic``.
    Either way the entries are taken first, so the Python code an entry's
    value may run cannot change the map under the walk.
    """
    if cython.compiled and isinstance(mapping, dict):  # a dict or Entries
        _dict_entries(tape, field, plan, mapping, depth)
    elif not isinstance(mapping, dict) and not hasattr(mapping, "items"):
        raise _encode_error(field, plan, f"expected a dict, not {type(mapping).__name__}")
    else:
        entries = list(mapping.items())
        if tape.deterministic:
            entries.sort(key=_map_order(field.map_key))  # type: ignore[arg-type]
        for key, item in entries:
            _entry(tape, field, key, item, depth)


def _entry(tape: Tape, field: FieldPlan, key: Any, item: Any, depth: int) -> None:
    """Put one map entry on the tape: a message of key and value, both always written."""
    entry: MessagePlan = field.message  # type: ignore[assignment]
    _scratch_room(tape, _TAG_ROOM)  # the tag and a 1-byte length prefix
    _put_tag(tape, field)
    prefix = _open_length(tape)
    _value(tape, field.map_key, entry, key, depth, False)  # type: ignore[arg-type]
    _value(tape, field.map_value, entry, item, depth, False)  # type: ignore[arg-type]
    _close_length(tape, prefix)


# Compiled, a dict's entries are taken into a C array of MapItem (a key, its
# value and what it sorts by), and sorted there when the tape is deterministic:
# on the C stack for maps of up to _STACK_ITEMS entries, else in memory from
# outside Python's allocator, freed at once. The array holds references, so the
# Python code that reading an entry may run (a value's __index__) cannot free a
# key or a value under it.


def _dict_entries(
    tape: Tape, field: FieldPlan, plan: MessagePlan, mapping: Any, depth: int
) -> None:
    """Compiled: put a dict's entries on the tape, in its own order or in upb's."""
    if cython.compiled:
        count = PyDict_Size(mapping)  # not len(): a subclass's __len__ would be Python code
        items = cython.cast(item_ptr, on_stack)
        scratch = cython.NULL
        if count > _STACK_ITEMS:
            scratch = malloc(count * cython.sizeof(MapItem))
            if scratch == cython.NULL:
                raise MemoryError()
            items = cython.cast(item_ptr, scratch)
        taken = 0
        index = 0
        try:
            # No Python code runs during the walk: the dict cannot change under PyDict_Next.
            while taken < count and PyDict_Next(
                mapping, cython.address(index), cython.address(key), cython.address(item)
            ):
                Py_INCREF(cython.cast(object, key))
                Py_INCREF(cython.cast(object, item))
                items[taken].key = key
                items[taken].value = item
                taken += 1
            if tape.deterministic:
                kind = field.map_key.kind
                mask = _MASK32 if kind in (INT32, UINT32, SINT32, FIXED32, SFIXED32) else _MASK64
                for i in range(taken):  # may run Python code (a key's __index__)
                    _sort_value(cython.address(items[i]), kind == STRING, mask)
                if kind == STRING:  # one call each: the order inlined in each
                    _sort_items(items, taken, _text_before)
                else:
                    _sort_items(items, taken, _number_before)
            for i in range(taken):
                _entry(
                    tape,
                    field,
                    cython.cast(object, items[i].key),
                    cython.cast(object, items[i].value),
                    depth,
                )
        finally:
            for i in range(taken):
                Py_XDECREF(items[i].key)
                Py_XDECREF(items[i].value)
            free(scratch)


def _sort_items(items: Any, count: int, before: Any) -> None:
    """Compiled: sort ``count`` map items in the order of ``before``.

    A map has a few entries as a rule: up to :data:`_INSERTED` are sorted
    by insertion, in place, with ``before`` inlined; more by qsort.
    """
    if cython.compiled:
        if count > _INSERTED:
            qsort(items, count, cython.sizeof(MapItem), before)
            return
        for i in range(1, count):
            current = items[i]
            j = i
            while j > 0 and before(cython.address(current), cython.address(items[j - 1])) < 0:
                items[j] = items[j - 1]
                j -= 1
            items[j] = current


def _sort_value(item: Any, text: bool, mask: int) -> None:
    """Compiled: what a map item sorts by; a key of the wrong type sorts anywhere.

    A text key's first 8 bytes, big-endian and zero-padded, are its ``number``:
    one comparison of them orders most pairs (see :func:`_text_before`).
    """
    if cython.compiled:
        key = cython.cast(object, item.key)
        item.text = cython.NULL
        item.size = 0
        item.number = 0
        if not text:
            item.number = _key_number(key) & mask
        elif type(key) is str:
            item.text = utf8_or_null(key, cython.address(item.size))
            if item.text == cython.NULL:  # a lone surrogate, which recording the key refuses
                PyErr_Clear()
                item.size = 0
        elif type(key) is bytes:  # proto2 keys may be bytes
            item.text = PyBytes_AS_STRING(key)
            item.size = len(key)
        for i in range(min(item.size, 8)):  # nothing for a number
            item.number |= cython.cast(uint64_t, cython.cast(uchar, item.text[i])) << (56 - 8 * i)


def _key_number(key: Any) -> int:
    """Compiled: an integer key's 64-bit pattern, without a Python integer made."""
    if cython.compiled:
        if type(key) is not int:
            try:
                key = operator.index(key)
            except Exception:  # not an integer: recording the key refuses it
                return 0
        number = PyLong_AsLongLongAndOverflow(key, cython.address(overflow))
        if overflow == 0:
            return number
        if overflow == 1:
            unsigned = PyLong_AsUnsignedLongLong(key)
            if unsigned != _MASK64 or not PyErr_Occurred():
                return unsigned
            PyErr_Clear()  # beyond 64 bits: recording the key refuses it
    return 0


def _text_before(a: Any, b: Any) -> int:
    """Compiled order of string keys: bytewise ascending, a key before its prefixes.

    The bytes the keys share in length are compared as their first 8 (their
    ``number``), masked to that length when it is shorter, and only past them
    by memcmp.
    """
    if cython.compiled:
        x = cython.cast(item_ptr, a)
        y = cython.cast(item_ptr, b)
        common = x.size if x.size < y.size else y.size
        head = ~(_MASK64 >> (8 * common)) if common < 8 else _MASK64  # those bytes of 8
        if (x.number & head) != (y.number & head):
            return -1 if (x.number & head) < (y.number & head) else 1
        order = memcmp(x.text + 8, y.text + 8, common - 8) if common > 8 else 0
        if order != 0:
            return order
        return (y.size > x.size) - (y.size < x.size)
    return 0


def _number_before(a: Any, b: Any) -> int:
    """Compiled order of integer keys: descending unsigned value."""
    if cython.compiled:
        x = cython.cast(item_ptr, a)
        y = cython.cast(item_ptr, b)
        return (x.number < y.number) - (x.number > y.number)
    return 0


def _map_order(key_field: FieldPlan) -> Any:
    """Sort key giving upb's deterministic order of map entries.

    upb (protobuf 7) orders integer keys by descending unsigned value and
    string keys bytewise ascending, a key before its own prefixes. A key
    of the wrong type sorts anywhere: recording it raises the EncodeError.
    """
    kind = key_field.kind
    if kind == STRING:
        return lambda item: _text_order(item[0])
    mask = _MASK32 if kind in (INT32, UINT32, SINT32, FIXED32, SFIXED32) else _MASK64
    return lambda item: -(_integer_order(item[0]) & mask)


def _text_order(key: Any) -> bytes:
    if isinstance(key, bytes):  # proto2 keys may be bytes
        return key + b"\xff"
    try:
        return key.encode() + b"\xff"  # type: ignore[no-any-return]  # 0xFF is never in UTF-8
    except Exception:  # not a str, or a lone surrogate
        return b""


def _integer_order(key: Any) -> int:
    try:
        return operator.index(key)
    except Exception:  # not an integer
        return 0


# --- the writing pass -------------------------------------------------------------


def _replay(tape: Tape, out: Any, pos: int) -> int:
    """Write the tape at ``out[pos:]`` (``tape.size`` bytes of room made); return the end.

    No Python code runs here, and nothing is read but the tape.
    """
    done = 0  # scratch bytes written, or skipped
    if cython.compiled:
        for i in range(tape.count):
            splice = tape.splices + i
            pos = _scratch_copy(tape, out, pos, done, splice.at)
            if splice.data == cython.NULL:  # a length prefix, in place of its scratch byte
                pos = varint_write(out, pos, splice.value)
                done = splice.at + 1
            else:
                memcpy(out + pos, splice.data, splice.value)  # data splices are never empty
                pos += splice.value
                done = splice.at
        return _scratch_copy(tape, out, pos, done, tape.used)
    for at, value, data in tape.splices:
        copy_bytes(out, pos, tape.scratch[done:at], at - done)
        pos += at - done
        if isinstance(data, (bytes, memoryview)):
            copy_bytes(out, pos, data, value)
            pos += value
            done = at
        else:  # a length prefix
            pos = varint_write(out, pos, value)
            done = at + 1
    copy_bytes(out, pos, tape.scratch[done : tape.used], tape.used - done)
    return pos + tape.used - done


@cython.cfunc
@cython.inline
@cython.locals(
    tape=Tape,
    out=cython.p_uchar,
    pos=cython.Py_ssize_t,
    start=cython.Py_ssize_t,
    end=cython.Py_ssize_t,
)
@cython.returns(cython.Py_ssize_t)
@cython.exceptval(check=False)
def _scratch_copy(tape: Tape, out: Any, pos: int, start: int, end: int) -> int:
    """Compiled: copy the scratch bytes ``[start:end]`` to ``out[pos:]``; return the end.

    A tape that never needed scratch bytes has no scratch memory (NULL).
    """
    if end > start:
        memcpy(out + pos, tape.scratch + start, end - start)  # type: ignore[name-defined, operator]
    return pos + end - start


def write_tape(tape: Tape, data: bytearray, pos: int) -> int:
    """Write a measured tape at ``data[pos:]`` (the room is made); return the end."""
    if cython.compiled:
        return _replay(tape, cython.cast(cython.p_uchar, PyByteArray_AS_STRING(data)), pos)
    return _replay(tape, data, pos)


def encode(message: Struct, partial: bool = False, deterministic: bool = False) -> bytes:
    """The wire bytes of a struct.

    EncodeError naming the required fields not set, unless ``partial``. As
    with pb2's ``SerializeToString``, the order of map entries is the maps'
    own (a dict's insertion order) unless ``deterministic``, which gives
    upb's deterministic order: then the bytes equal upb's
    ``SerializeToString(deterministic=True)``. Compiled, the tape is written
    straight into the ``bytes`` object returned, made at its exact size.
    """
    tape = measure(message, partial, deterministic)
    try:
        if cython.compiled:
            out = PyBytes_FromStringAndSize(cython.NULL, tape.size)
            _replay(tape, cython.cast(cython.p_uchar, PyBytes_AS_STRING(out)), 0)
            return out
        data = bytearray(tape.size)
        _replay(tape, data, 0)
        return bytes(data)
    finally:
        release(tape)


def message_size(message: Struct) -> int:
    """Encoded size of a struct, in bytes (required fields set or not)."""
    tape = measure(message, True, False)
    size = tape.size
    release(tape)
    return size
