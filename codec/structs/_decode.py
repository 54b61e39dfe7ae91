"""Struct decoding: one walk over the tags, each object built once, straight into its slots.

Strategy: :class:`Decoder` keeps a :class:`Decoding` (the options and the
state of the decode under way) for one struct class; :func:`decode_message`
walks the tags of a message once, finds each field by number
(``_field_numbered``, a list index for small numbers) and stores what it
reads straight into the slot of a struct made for it (``new_struct``), so
each object is built once. It follows the protobuf rules that the
conformance suite requires: last value wins for singular fields, repeated
fields accept packed and unpacked input, a singular message seen twice is
merged, a known field with the wrong wire type and unknown fields are kept,
in order, as unknown bytes. A number the plan does not know is looked up in
the plan's extensions, when it has any (a struct of their own, made on the
first one met): that is the only extra step, and only off the path of known
fields. Every length is checked against the bytes
left, counts are never taken from the input to reserve memory, nesting is
limited by ``max_depth`` and by the C stack left in the thread (one pointer
compare a level, against a floor taken once per decode), and the objects a
decode makes by ``max_elements``.

This file is Cython pure-Python mode (types in ``_decode.pxd``).
"""

from __future__ import annotations

from types import GenericAlias
from typing import TYPE_CHECKING, Any

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython  # type: ignore[no-redef]

from codec._buffer import not_copied
from codec._introspection import InitSignature
from codec._varint import byte_view
from codec._varint import encode as varint_encode
from codec._wire import DEFAULT_MAX_DEPTH, checked_count, checked_flag
from codec.errors import (
    DecodeError,
    DepthLimitError,
    EncodeError,
    TruncatedError,
)
from codec.structs._encode import encode
from codec.structs._plan import FieldPlan, MessagePlan
from codec.structs._struct import STACK_EXHAUSTED, Frame, Struct

if TYPE_CHECKING:
    from codec._generic import S  # a struct class's instances

if not cython.compiled:  # compiled, _decode.pxd cimports these C functions and constants
    from codec._buffer import uninitialised
    from codec._varint import read_le, stream_base, varint_value
    from codec._wire import (
        BYTES,
        EGROUP,
        ENUM,
        GROUP,
        I32,
        I64,
        LEN,
        MESSAGE,
        VARINT,
        fixed_end,
        fixed_value_of,
        length_end,
        packed_width,
        read_tag,
        skip_field,
        skip_value,
        stray_end_group,
        varint_length,
        varint_value_of,
    )
    from codec.structs._plan import (
        CHECK_ELEMENT,
        CHECK_FIXED32,
        CHECK_FIXED64,
        CHECK_GENERAL,
        CHECK_TEXT,
        CHECK_VARINT,
        SHAPE_TEXT,
        _field_numbered,
        packed_run,
    )
    from codec.structs._struct import (
        _container,
        _plan_of_class,
        _set_field,
        _set_value,
        _slot,
        _store,
        add_decoded_entry,
        defer,
        new_struct,
        set_range,
        set_unknown,
        unknown_of,
        untrack_decoded,
    )

COMPILED: bool = cython.compiled

# Elements (repeated values, messages, unknown fields) one decode may create:
# a few wire bytes can stand for a large object (an empty sub-message is two
# bytes), so a budget bounds what a hostile frame can make us allocate.
DEFAULT_MAX_ELEMENTS = 1_000_000
MAX_COUNT = 2**62  # the largest max_depth or max_elements (a C Py_ssize_t holds it)
LAZY_FRAME_LIMIT = 2**32  # a struct notes where its fields are in 32-bit offsets
# A lazy decode reads a singular sub-message of at most this many bytes (its length prefix
# included) at once: keeping it pending and parsing it when read costs more than parsing it
# with its message (W4 decode + read: 443 µs a request with none read at once, 390 with 32).
SMALL_PART = 32
_NO_INPUT = memoryview(b"")


class Decoding(Frame):
    """Options of a decode, and the state of the one under way (reusable, one at a time).

    A lazy decode's frame is one too: it keeps the frame's bytes as its
    ``source`` and parses its structs' pending fields (``is_frame``).
    """

    def __init__(
        self, zero_copy: bool, numpy: bool, max_depth: int, max_elements: int, lazy: bool
    ) -> None:
        self.zero_copy = zero_copy
        self.numpy = numpy
        self.max_depth = max_depth
        self.max_elements = max_elements
        self.lazy = lazy
        self.deferring = False  # message fields are left pending (_decode_field)
        self.is_frame = False  # a lazy decode's frame, which keeps its source
        self.frame: Decoding | None = None  # the frame of a lazy decode under way, once made
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
            return self._fresh().run(plan, source, base)
        self._start(source, base)
        try:
            if self.lazy and len(source) < LAZY_FRAME_LIMIT:
                self.deferring = True
                try:
                    return self._message(plan, source)
                except _NotPlain:  # read it eagerly (2)
                    self._start(source, base)
                finally:
                    self.deferring = False
                    self.frame = None
            return self._message(plan, source)
        except RecursionError:  # uncompiled: Python's own guard of its stack
            raise DepthLimitError(STACK_EXHAUSTED, base) from None
        finally:
            self.source = _NO_INPUT  # the caller may release the input now
            self.busy = False

    def begin_checks(self, taken: list[Decoding], base: int) -> None:
        """Take this state, unless ``taken`` holds it already, for checks of messages one
        after another (:meth:`check_next`) on this thread, their offsets from ``base``.
        ``taken``: the states a walk took, given back by :func:`end_checks`."""
        if not self.busy:
            self._start(_NO_INPUT, base)
            taken.append(self)

    def check_next(self, plan: MessagePlan, data: Any, start: int, end: int) -> None:
        """Raise what decoding ``data[start:end]`` (compiled: the address of bytes the
        caller keeps alive) as a message of ``plan`` raises, making nothing, with the
        state taken (:meth:`begin_checks`): the check walk, or a decode of a copy for
        what it leaves to one (see "lazy decoding", 2)."""
        self.elements = self.max_elements
        if not cython.compiled:
            self.source = data  # which the uncompiled walk reads strings from
        try:
            _check_message(plan, data, start, end, self, 0)
        except _NotPlain:
            self._fresh().run(plan, memoryview(bytes(data[start:end])), self.base + start)
        except RecursionError:  # uncompiled: Python's own guard of its stack
            raise DepthLimitError(STACK_EXHAUSTED, self.base + start) from None

    def _message(self, plan: MessagePlan, source: memoryview) -> Struct:
        message = new_struct(plan)
        decode_message(plan, message, _bytes_of(source), 0, len(source), self, 0, 0)
        return message

    def _fresh(self) -> Decoding:
        """A state of the same options, for a decode (or a frame's parse) re-entered while
        one runs."""
        if self.is_frame:
            return _new_frame(self, self.source)
        return Decoding(self.zero_copy, self.numpy, self.max_depth, self.max_elements, self.lazy)

    def _start(self, source: memoryview, base: int) -> None:
        self.busy = True
        self.source = source
        self.base = base
        self.elements = self.max_elements
        self.rejected_entry = None
        self.stray_values = None
        if cython.compiled:
            self.floor = codec_stack_floor()

    def parse(self, message: Struct, first: int, pending: int) -> None:
        """Parse the fields of ``message`` whose bit is set in ``pending`` (bit i: the field
        of slot ``first + i``) from this frame into their empty slots.

        Their occurrences are read in order, as the eager decode reads them;
        the sub-messages they make have pending fields in turn.
        """
        if self.busy:  # re-entered, by Python code its allocations ran
            self._fresh().parse(message, first, pending)
        else:
            self._parse(message, first, pending)

    def _parse(self, message: Struct, first: int, pending: int) -> None:
        source = self.source
        self._start(source, self.base)  # no budget: the frame was counted whole when checked
        plan = _plan_of_class(type(message))
        data = _bytes_of(source)
        if cython.compiled:
            pos = cython.cast(Struct, message)._start
            end = cython.cast(Struct, message)._end
        else:
            pos, end = vars(message)["_start"], vars(message)["_end"]
        try:
            while pos < end:
                start = pos
                pos = _read_tag(data, pos, end, self)
                tag = self.tag
                field = _field_numbered(plan, tag >> 3)
                after = -1
                if field is not None and _marked(pending, field.slot - first):
                    after = _decode_field(field, plan, message, data, pos, end, tag & 7, self, 0)
                if after < 0:
                    after = skip_field(data, start, pos, end, tag, self.base, 0, self.max_depth)
                pos = after
        finally:
            self.source = source  # a frame keeps its bytes
            self.busy = False


def _spend(state: Decoding, count: int, offset: int) -> None:
    """Charge ``count`` elements to the decode's budget; the element at ``offset`` is one
    too many when it runs out."""
    state.elements -= count
    if state.elements < 0:
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
    if state.deferring:
        set_range(message, pos, end)
    seen = 0  # while deferring: the singular message fields met (see _once)
    unknown: bytearray | None = None
    while pos < end:
        start = pos
        # (Not a conditional expression: Cython would type-test its result.)
        if data[pos] < 0x80:  # noqa: SIM108  # a one-byte tag (a number up to 15)
            field = cython.cast(FieldPlan, plan.by_tag[data[pos]])
        else:
            field = None
        if field is not None:  # of a field, most often: no read, no check
            tag = data[pos]
            state.tag = tag  # the tag just read, as _read_tag leaves it
            pos += 1
        else:
            pos = _read_tag(data, pos, end, state)
            tag = state.tag
            if tag & 7 == EGROUP:
                if group and tag >> 3 == group:
                    break
                stray_end_group(tag >> 3, start, state.base)
            field = _field_numbered(plan, tag >> 3)
        if field is not None and _plain(field, tag & 7):  # the common case, without a call
            _set_field(plan, message, field, _read_value(field, data, pos, end, state))
            pos = state.after
            continue
        if field is not None and state.deferring and _deferred(field, tag & 7):
            if not field.repeated:
                seen = _once(seen, field)
            after = _defer(field, plan, message, data, pos, end, tag & 7, state, depth)
        elif field is not None:
            after = _decode_field(field, plan, message, data, pos, end, tag & 7, state, depth)
        elif plan.extensions is not None:
            after = _decode_extension(plan, message, data, pos, end, tag, state, depth)
        else:
            after = -1
        if after >= 0:
            pos = after
            if state.stray_values is not None:
                if unknown is None:
                    unknown = bytearray(unknown_of(message))
                unknown += state.stray_values
                state.stray_values = None
            continue
        value_start = pos
        pos = skip_field(data, start, pos, end, tag, state.base, depth, state.max_depth)
        _spend(state, 1, state.base + start)
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
        set_unknown(message, bytes(unknown))
    untrack_decoded(plan, message)
    return pos


def _decode_extension(
    plan: MessagePlan,
    message: Struct,
    data: Any,
    pos: int,
    end: int,
    tag: int,
    state: Decoding,
    depth: int,
) -> int:
    """Decode a field of ``message`` its plan does not know into its extensions' struct.

    -1 when no extension has the number, or the field must be kept as
    unknown (see :func:`_decode_field`).
    """
    holder: FieldPlan = plan.extensions  # type: ignore[assignment]
    extensions: MessagePlan = holder.message  # type: ignore[assignment]
    field = _field_numbered(extensions, tag >> 3)
    if field is None:
        return -1
    if state.deferring:
        raise _NotPlain  # (see "lazy decoding")
    found = _slot(message, holder)
    if type(found) is not extensions.cls:  # none yet (or a value stored around the checks)
        found = _new_part(extensions, state, pos)
        _store(message, holder, found)
    return _decode_field(field, extensions, found, data, pos, end, tag & 7, state, depth)


@cython.cfunc
@cython.inline
@cython.locals(field=FieldPlan, wire=cython.int)
@cython.returns(cython.bint)
@cython.exceptval(check=False)
def _plain(field: FieldPlan, wire: int) -> bool:
    """Whether a field is a singular number or string, on the wire as it is declared.

    Its value is read and stored as :func:`_decode_field` would. A closed
    enum is not of these shapes: its undeclared values go to the unknown fields.
    """
    return field.shape <= SHAPE_TEXT and wire == field.wire_type  # a number or a string


@cython.cfunc
@cython.inline
@cython.locals(pending=cython.ulonglong, bit=cython.Py_ssize_t)
@cython.returns(cython.bint)
@cython.exceptval(check=False)
def _marked(pending: int, bit: int) -> bool:
    """Whether bit ``bit`` of ``pending`` is set (none outside 0 to 63)."""
    return 0 <= bit < 64 and (pending >> bit) & 1 == 1


def _check_nesting(state: Decoding, depth: int, pos: int) -> None:
    """Refuse a message at ``pos`` nested ``depth`` deep: past max_depth, or the C stack."""
    if depth > state.max_depth:
        raise DepthLimitError(f"messages nested deeper than {state.max_depth}", state.base + pos)
    if cython.compiled and codec_below(state.floor):
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
    if not _accepts(field, wire):
        return -1
    if field.map_key is not None:
        after = _length_end(data, pos, end, state)
        _spend(state, 1, state.base + pos)
        entries = _container(plan, message, field)
        if _decode_entry(field, entries, data, state.body, after, state, depth):
            return after
        return -1  # as upb does, an entry holding unknown fields stays in the unknown fields
    if packed_run(field, wire):
        after = _length_end(data, pos, end, state)
        _decode_packed(plan, field, message, data, state.body, after, state)
        return after
    if field.kind == GROUP and state.deferring:
        raise _NotPlain  # its end is known once it is read: read it eagerly, with its frame
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
            _append(plan, message, field, sub)
        else:  # untracked, as the message is until it ends (see untrack_decoded)
            _set_value(plan, message, field, sub)
        return after
    value = _read_value(field, data, pos, end, state)
    if field.closed_enum is not None and value not in field.closed_enum:
        return -1  # proto2: an unknown enum value is kept as an unknown field
    if field.repeated:
        _spend(state, 1, state.base + pos)
        _append(plan, message, field, value)
    else:
        _set_field(plan, message, field, value)
    return state.after


@cython.cfunc
@cython.inline
@cython.locals(field=FieldPlan, wire=cython.int)
@cython.returns(cython.bint)
@cython.exceptval(check=False)
def _accepts(field: FieldPlan, wire: int) -> bool:
    """Whether an occurrence of ``field`` on wire type ``wire`` is read as the field, not
    kept as unknown: a map entry is length-delimited, a repeated number may be packed."""
    if field.map_key is not None:
        return wire == LEN
    return wire == field.wire_type or packed_run(field, wire)


@cython.cfunc
@cython.inline
@cython.locals(plan=MessagePlan, message=Struct, field=FieldPlan)
@cython.returns(cython.int)
@cython.exceptval(-1, check=False)
def _append(plan: MessagePlan, message: Struct, field: FieldPlan, value: Any) -> None:
    """Append a decoded element to a repeated field's container, unchecked."""
    list.append(_list_of(plan, message, field), value)  # the list's own: unchecked


def _list_of(plan: MessagePlan, message: Struct, field: FieldPlan) -> list[Any]:
    """The list of a repeated field, made on first use, which decoded elements are appended to.

    The field may hold another sequence (assigned by the caller, or a numpy
    array from an earlier packed run): it becomes a list first.
    """
    current = _container(plan, message, field)
    if not isinstance(current, list):
        current = current.tolist() if hasattr(current, "tolist") else list(current)
        _store(message, field, current)
    return current  # type: ignore[no-any-return]


def _read_value(field: FieldPlan, data: Any, pos: int, end: int, state: Decoding) -> Any:
    """One scalar, string or bytes value at ``pos``; it ends at ``state.after``."""
    kind = field.kind
    if kind <= ENUM:
        n = varint_length(data, pos, end, state.base)
        state.after = pos + n
        number = varint_value_of(kind, varint_value(data, pos, n))
        if kind == ENUM and field.enum_members is not None:
            return field.enum_members.get(number, number)  # a declared value reads as its member
        return number
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
    text = _text_at(data, start, after, state)
    if text is not None:
        return text
    if field.utf8 == "bytes":
        return _bytes_at(data, start, after, state)
    raise _not_utf8(field, state, start)


def _not_utf8(field: FieldPlan, state: Decoding, start: int) -> DecodeError:
    return DecodeError(f"string field {field.name} is not valid UTF-8", state.base + start)


def _bytes_at(data: Any, start: int, end: int, state: Decoding) -> bytes:
    if cython.compiled:
        return PyBytes_FromStringAndSize(cython.cast(cython.p_char, data + start), end - start)
    return bytes(state.source[start:end])


def _text_at(data: Any, start: int, end: int, state: Decoding) -> str | None:
    """The ``str`` of the UTF-8 bytes ``data[start:end]``, or None if they are not UTF-8.

    Compiled, ASCII (the common case) is copied straight into a new ``str``.
    """
    if cython.compiled:
        first = cython.cast(cython.p_char, data + start)
        text = codec_text(first, end - start, cython.address(bad))
        return None if bad else text
    try:
        return bytes(state.source[start:end]).decode()
    except UnicodeDecodeError:
        return None


def _decode_packed(
    plan: MessagePlan,
    field: FieldPlan,
    message: Struct,
    data: Any,
    pos: int,
    end: int,
    state: Decoding,
) -> None:
    """Append the elements of a packed run ``data[pos:end]`` to the field's list."""
    width = packed_width(field.wire_type, pos, end, state.base)
    if state.numpy and field.numpy_type:
        column = _numpy_column(field, _slot(message, field), data, pos, end, state, width)
        _store(message, field, column)
    else:  # no Python code runs in the run, so its list stays the field's
        items = _list_of(plan, message, field)
        while pos < end:
            value = _read_value(field, data, pos, end, state)
            _spend(state, 1, state.base + pos)
            if field.closed_enum is None or value in field.closed_enum:
                list.append(items, value)
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
        _spend(state, count, state.base + pos)
        # From a slice: the column's export is the slice's, so the input view stays releasable.
        column = numpy.frombuffer(state.source[pos:end], field.numpy_type, count)
    else:
        items: list[Any] = []
        while pos < end:
            value = _read_value(field, data, pos, end, state)
            _spend(state, 1, state.base + pos)
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
    add_decoded_entry(mapping, key, value)
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
        try:
            state.rejected_entry = encode(entry)
        except EncodeError:
            state.rejected_entry = bytes(state.source[pos:end])
        return False
    value_field: FieldPlan = field.map_value  # type: ignore[assignment]
    value = _slot(entry, value_field)
    if value is None:
        value = _new_part(value_field.message, state, pos)  # type: ignore[arg-type]
    add_decoded_entry(mapping, _slot(entry, field.map_key), value)  # type: ignore[arg-type]
    return True


def _new_part(plan: MessagePlan, state: Decoding, pos: int) -> Struct:
    """A new sub-message struct, charged to the element budget for its size.

    A few wire bytes (an empty sub-message, a map entry without its value)
    make a whole struct of one slot per field: it is charged one element,
    and one more per eight slots (an element stands for an object of about
    that size). Its repeated and map fields cost nothing until elements
    arrive, and those are charged as they do.
    """
    _charge_part(plan, state, pos)
    return new_struct(plan)


def _charge_part(plan: MessagePlan, state: Decoding, pos: int) -> None:
    """Charge the element budget for a new sub-message of ``plan`` (see :func:`_new_part`)."""
    _spend(state, 1 + (len(plan.fields_by_slot) >> 3), state.base + pos)  # one per 8 slots


# --- lazy decoding -----------------------------------------------------------
#
# ``Decoder(lazy=True)`` gives structs whose sub-messages, repeated and map
# fields are parsed when first read (see "pending fields" in _struct.py):
#
# 1. decode_message reads the message's own fields as an eager decode does,
#    and leaves each sub-message, repeated and map field pending (_defer).
#    Each occurrence it leaves is checked first (_check_field,
#    _check_message): the checks, in the order and with the element
#    charges of decode_message, making nothing. So the whole frame is
#    checked, depth first as an eager decode reads it: a lazy decode
#    accepts the frames an eager one accepts, and raises its errors, at the
#    same offsets, when it decodes.
# 2. A frame where reading one field could change another is decoded
#    eagerly instead: one with an extension, a group, a map entry or a
#    repeated closed-enum value kept among the unknown fields, or a
#    singular sub-message met twice (merged). The first one met stops the
#    lazy decode (_NotPlain) and an eager one starts over. So are frames of
#    4 GiB or more.
# 3. The first field left pending makes the frame (_pending_frame): a
#    Decoding of the decode's options that keeps the frame's bytes (the
#    input itself if it is a ``bytes``, else a copy). The frame parses a
#    pending field when it is first read, a level at a time: the
#    sub-messages it makes have pending fields too. A small singular
#    sub-message is read at once (SMALL_PART).
# 4. The walk is cheap where most of a frame is: a repeated field's
#    occurrences that follow each other are left pending together
#    (_run_end), and a number, string or bytes value is passed over by its
#    tag's entry in MessagePlan.checks, without a look at its field.


class _NotPlain(Exception):
    """The frame is decoded eagerly (2)."""


@cython.cfunc
@cython.inline
@cython.locals(field=FieldPlan, wire=cython.int)
@cython.returns(cython.bint)
@cython.exceptval(check=False)
def _deferred(field: FieldPlan, wire: int) -> bool:
    """Whether an occurrence of ``field`` is left pending by a lazy decode (3): not a group,
    which is read eagerly (2)."""
    return (
        (field.repeated or field.kind == MESSAGE) and field.kind != GROUP and _accepts(field, wire)
    )


def _once(seen: int, field: FieldPlan) -> int:
    """``seen`` (a bit per singular message field met in a message, by slot modulo 64)
    with ``field``'s; :class:`_NotPlain` if it was set: the field is given twice, and
    merged (2), or shares a bit with another, which is decoded eagerly too."""
    bit = cython.cast(cython.ulonglong, 1) << (field.slot & 63)
    if seen & bit:
        raise _NotPlain
    return seen | bit  # type: ignore[no-any-return]


def _defer(
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
    """Leave an occurrence of ``field`` of ``message`` pending (3), with those of a
    repeated field that follow it (4), checked first (1) unless a frame reads them (its
    frame was checked); return where they end.

    A singular sub-message of at most SMALL_PART bytes is read at once:
    leaving it pending would cost more than it saves.
    """
    if field.repeated:
        after = _run_end(field, data, pos, end, wire, state, depth)
    else:
        after = skip_value(data, pos, end, state.base, wire)
        if after - pos <= SMALL_PART:
            return _decode_field(field, plan, message, data, pos, end, wire, state, depth)
        if not state.is_frame:
            _check_field(field, data, pos, end, wire, state, depth)
    defer(plan, message, field, _pending_frame(state))
    return after


def _run_end(
    field: FieldPlan, data: Any, pos: int, end: int, wire: int, state: Decoding, depth: int
) -> int:
    """Where the occurrences of repeated ``field`` with the tag just read, from the one at
    ``pos`` to the last that follows it, end: each checked (1) unless a frame reads them."""
    tag = state.tag
    while True:
        if state.is_frame:
            pos = skip_value(data, pos, end, state.base, wire)
        else:
            pos = _check_field(field, data, pos, end, wire, state, depth)
        if pos >= end:
            return pos
        after = _read_tag(data, pos, end, state)
        if state.tag != tag:
            return pos  # the next field's tag, which decode_message reads again
        pos = after


def _pending_frame(state: Decoding) -> Decoding:
    """The frame a field left pending is parsed from (3): a lazy decode makes it for the
    first field it leaves pending, so a message with none keeps no bytes."""
    if state.is_frame:
        return state
    if state.frame is None:
        source = state.source
        if cython.compiled:
            owner = cython.cast(object, PyMemoryView_GET_BUFFER(source).obj)
        else:
            owner = source.obj
        whole = type(owner) is bytes and len(owner) == len(source)
        # a copy of the whole input has its offsets
        state.frame = _new_frame(state, source if whole else memoryview(bytes(source)))
    return state.frame


def _new_frame(state: Decoding, source: memoryview) -> Decoding:
    """A frame of ``state``'s options keeping ``source`` (made without a call of
    ``Decoding``, whose arguments cost more than the rest of a small lazy decode)."""
    frame = Decoding.__new__(Decoding)
    frame.zero_copy = state.zero_copy
    frame.numpy = state.numpy
    frame.max_depth = frame.max_elements = MAX_COUNT  # checked: nothing left to limit
    frame.lazy = frame.deferring = frame.is_frame = True
    frame.source = source
    frame.base = state.base
    return frame


def _check_message(
    plan: MessagePlan, data: Any, pos: int, end: int, state: Decoding, depth: int
) -> None:
    """Check ``data[pos:end]`` as :func:`decode_message` reads it, making nothing (1)."""
    _check_nesting(state, depth, pos)
    checks = plan.checks
    size = len(plan.checks)
    seen = 0  # the singular message fields met, a bit each (by slot, modulo 64)
    while pos < end:
        start = pos
        tag = data[pos]
        check = checks[tag] if tag < 0x80 and tag < size else CHECK_GENERAL
        if check != CHECK_GENERAL:
            state.tag = tag  # a one-byte tag of a leaf (valid, as the table holds it): no read
            pos += 1
        else:
            pos = _read_tag(data, pos, end, state)
            tag = state.tag
            check = checks[tag] if tag < size else CHECK_GENERAL
        if check != CHECK_GENERAL:
            pos = _leaf_of(plan, check, data, pos, end, state)
            continue
        if tag & 7 == EGROUP:
            stray_end_group(tag >> 3, start, state.base)
        field = _field_numbered(plan, tag >> 3)
        after = -1
        if field is not None:
            if field.message is not None and not field.repeated:
                seen = _once(seen, field)
            after = _check_field(field, data, pos, end, tag & 7, state, depth)
        elif plan.extensions is not None and _is_extension(plan, tag >> 3):
            raise _NotPlain
        if after >= 0:
            pos = after
        else:
            pos = skip_field(data, start, pos, end, tag, state.base, depth, state.max_depth)
            _spend(state, 1, state.base + start)


def _is_extension(plan: MessagePlan, number: int) -> bool:
    holder: FieldPlan = plan.extensions  # type: ignore[assignment]
    return _field_numbered(holder.message, number) is not None  # type: ignore[arg-type]


def _check_field(
    field: FieldPlan, data: Any, pos: int, end: int, wire: int, state: Decoding, depth: int
) -> int:
    """Check one occurrence of ``field`` as :func:`_decode_field` reads it; -1 when
    it is kept as unknown."""
    if not _accepts(field, wire):
        return -1
    if field.map_key is not None:
        after = _length_end(data, pos, end, state)
        _spend(state, 1, state.base + pos)
        _check_entry(field, data, state.body, after, state, depth)
        return after
    if packed_run(field, wire):
        after = _length_end(data, pos, end, state)
        _check_packed(field, data, state.body, after, state)
        return after
    if field.kind == GROUP:
        raise _NotPlain
    if field.kind == MESSAGE:
        _charge_part(field.message, state, pos)  # type: ignore[arg-type]
        after = _length_end(data, pos, end, state)
        _check_message(field.message, data, state.body, after, state, depth + 1)  # type: ignore[arg-type]
        return after
    if field.closed_enum is None:
        after = _value_end(field, data, pos, end, state)
    elif _read_value(field, data, pos, end, state) in field.closed_enum:
        after = state.after
    elif field.repeated:
        raise _NotPlain
    else:
        return -1
    if field.repeated:
        _spend(state, 1, state.base + pos)
    return after


def _check_packed(field: FieldPlan, data: Any, pos: int, end: int, state: Decoding) -> None:
    """Check a packed run ``data[pos:end]`` as :func:`_decode_packed` reads it."""
    width = packed_width(field.wire_type, pos, end, state.base)
    if width and state.numpy and field.numpy_type:
        _spend(state, (end - pos) // width, state.base + pos)
        pos = end  # a column of the run's bytes
    elif field.closed_enum is None and state.elements >= end - pos:
        # No element can overrun the budget (there are at most as many as bytes): the
        # values are checked, then charged at once.
        count = 0
        while pos < end:
            pos = _value_end(field, data, pos, end, state)
            count += 1
        state.elements -= count
    while pos < end:
        if field.closed_enum is None:
            after = _value_end(field, data, pos, end, state)
        elif _read_value(field, data, pos, end, state) in field.closed_enum:
            after = state.after
        else:
            raise _NotPlain
        _spend(state, 1, state.base + pos)
        pos = after


def _check_entry(
    field: FieldPlan, data: Any, pos: int, end: int, state: Decoding, depth: int
) -> None:
    """Check a map entry ``data[pos:end]`` as :func:`_read_entry` reads it."""
    entry: MessagePlan = field.message  # type: ignore[assignment]
    value_field: FieldPlan = field.map_value  # type: ignore[assignment]
    if value_field.kind == GROUP:
        raise _NotPlain
    _check_nesting(state, depth + 1, pos)
    checks = entry.checks
    size = len(entry.checks)
    start = pos
    has_part = False  # a message value was met (a second one is merged into it)
    while pos < end:
        at = _read_tag(data, pos, end, state)
        check = checks[state.tag] if state.tag < size else CHECK_GENERAL
        if check != CHECK_GENERAL:  # the key, and most values
            pos = _leaf_of(entry, check, data, at, end, state)
        elif state.tag != value_field.tag:
            raise _NotPlain
        elif value_field.message is None:  # a closed enum
            if _read_value(value_field, data, at, end, state) in value_field.closed_enum:  # type: ignore[operator]
                pos = state.after
            else:
                raise _NotPlain
        else:
            pos = _length_end(data, at, end, state)
            if not has_part:
                _charge_part(value_field.message, state, at)
                has_part = True
            _check_message(value_field.message, data, state.body, pos, state, depth + 2)
    if value_field.message is not None and not has_part:
        _charge_part(value_field.message, state, start)


def _value_end(field: FieldPlan, data: Any, pos: int, end: int, state: Decoding) -> int:
    """Where the number, string or bytes of ``field`` at ``pos`` ends, checked as
    :func:`_read_value` reads it, making nothing."""
    after = _leaf_end(field.check, data, pos, end, state)
    if after < 0:
        raise _not_utf8(field, state, state.body)
    return after


def _leaf_of(plan: MessagePlan, check: int, data: Any, pos: int, end: int, state: Decoding) -> int:
    """Where the value at ``pos`` of the tag just read ends, checked, and charged if it is
    an element; ``check``: the tag's entry in ``plan.checks``, not CHECK_GENERAL (4)."""
    after = _leaf_end(check, data, pos, end, state)
    if after < 0:
        field = _field_numbered(plan, state.tag >> 3)
        raise _not_utf8(field, state, state.body)  # type: ignore[arg-type]
    if check & CHECK_ELEMENT:
        _spend(state, 1, state.base + pos)
    return after


def _leaf_end(check: int, data: Any, pos: int, end: int, state: Decoding) -> int:
    """Where the number, string or bytes at ``pos`` ends, checked as :func:`_read_value`
    reads it, making nothing (``check``: its field's ``FieldPlan.check``); -1 for a
    string that is not UTF-8."""
    check &= CHECK_ELEMENT - 1
    if check == CHECK_VARINT:
        return pos + varint_length(data, pos, end, state.base)
    if check in (CHECK_FIXED64, CHECK_FIXED32):
        return fixed_end(pos, end, state.base, 8 if check == CHECK_FIXED64 else 4)
    after = _length_end(data, pos, end, state)
    if check == CHECK_TEXT and not _is_utf8(data, state.body, after, state):
        return -1
    return after


def _is_utf8(data: Any, start: int, end: int, state: Decoding) -> bool:
    """Whether ``data[start:end]`` is UTF-8 (compiled, ASCII is told without a ``str``)."""
    if cython.compiled and codec_ascii(cython.cast(cython.p_char, data + start), end - start):
        return True
    return _text_at(data, start, end, state) is not None


class Decoder:
    """A reusable decoder of one struct class, with its options checked once.

    ``zero_copy`` gives ``bytes`` fields as memoryviews into the input,
    ``numpy`` packed numeric fields as numpy arrays (fixed-width ones
    without copying); ``max_depth`` limits nesting (100: protobuf C++, Java
    and upb), ``max_elements`` the elements (repeated values, messages,
    unknown fields) one decode may create, so a few wire bytes cannot make
    unbounded objects. What it makes is left out of Python's cycle
    collector until a store could close a cycle through it (see "the cycle
    collector" in ``_struct.py``).

    ``lazy`` reads a message's own numbers and strings when it decodes, and
    its sub-messages, repeated and map fields when they are first read, a
    level at a time. The whole frame is still checked when it decodes, so
    errors are raised there, as without ``lazy``. A lazy message keeps its
    frame's bytes until its last pending field is read: the input itself
    if it is a ``bytes``, else a copy made when it decodes (so the input
    may be reused at once, as a :class:`codec.FrameDecoder`'s buffer is). A
    frame where reading one field could change another (an extension, a
    group, a map entry or a repeated closed-enum value kept among the
    unknown fields, a sub-message given twice) is decoded eagerly.

    A Decoder is also a ``message_type`` for
    :class:`codec.FrameDecoder` and :mod:`codec.aio`, which is how these
    options reach framed decoding.
    """

    # Decoder[Sample] in an annotation evaluated at run time (codec/_generic.pyi).
    @classmethod
    def __class_getitem__(cls, item: Any) -> GenericAlias:
        return GenericAlias(cls, item)

    __signature__ = InitSignature()  # what inspect.signature(cls) reads

    @cython.embedsignature(True)  # the signature line InitSignature reads, compiled
    def __init__(
        self,
        type: Any,  # the struct class, as msgspec names it
        *,
        zero_copy: bool = False,
        numpy: bool = False,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_elements: int = DEFAULT_MAX_ELEMENTS,
        lazy: bool = False,
    ) -> None:
        """Check the options once, for every decode."""
        self.plan = _plan_of_class(type)
        self.type = type
        self.zero_copy = checked_flag("zero_copy", zero_copy)
        self.numpy = checked_flag("numpy", numpy)
        self.max_depth = checked_count("max_depth", max_depth, maximum=MAX_COUNT)
        self.max_elements = checked_count("max_elements", max_elements, maximum=MAX_COUNT)
        self.lazy = checked_flag("lazy", lazy)
        self.state = Decoding(
            self.zero_copy, self.numpy, self.max_depth, self.max_elements, self.lazy
        )

    def __reduce__(self) -> Any:
        raise not_copied(self)

    def decode(self, buffer: Any, *, base: int = 0) -> Any:
        """Decode a struct from any contiguous buffer; error offsets count from ``base``.

        Errors are :class:`DecodeError` subclasses. The input is not
        released: zero-copy fields and numpy columns keep views of it.
        """
        if not self._initialised():
            raise uninitialised(self)
        view = byte_view(buffer, False)
        return self.state.run(self.plan, view, stream_base(base, len(view)))

    def _initialised(self) -> bool:
        """False for an object made by ``Decoder.__new__`` whose ``__init__`` never ran."""
        if cython.compiled:
            return self.state is not None
        return hasattr(self, "state")

    def __repr__(self) -> str:
        if not self._initialised():
            return "Decoder(<not initialised>)"
        options = f"zero_copy={self.zero_copy}, numpy={self.numpy}, max_depth={self.max_depth}"
        limits = f"max_elements={self.max_elements}, lazy={self.lazy}"
        return f"Decoder({self.type.__name__}, {options}, {limits})"


def decode(
    cls: type[S],
    buffer: Any,
    *,
    zero_copy: bool = False,
    numpy: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    lazy: bool = False,
    base: int = 0,
) -> S:
    """Decode a message of struct class ``cls`` from any contiguous buffer.

    The options are :class:`Decoder`'s; make one Decoder to decode many
    buffers. Errors are :class:`DecodeError` subclasses whose offset counts
    from ``base``.
    """
    decoder = Decoder(
        cls,
        zero_copy=zero_copy,
        numpy=numpy,
        max_depth=max_depth,
        max_elements=max_elements,
        lazy=lazy,
    )
    return decoder.decode(buffer, base=base)  # type: ignore[no-any-return]


if not cython.compiled:
    from codec._pure import fields_as_allocated

    fields_as_allocated(
        Decoding,
        zero_copy=False,
        numpy=False,
        max_depth=0,
        max_elements=0,
        lazy=False,
        deferring=False,
        is_frame=False,
        frame=None,
        source=None,
        busy=False,
        base=0,
        elements=0,
        rejected_entry=None,
        stray_values=None,
        tag=0,
        body=0,
        after=0,
    )


def end_checks(taken: list[Decoding]) -> None:
    """Give back the states a walk took for its checks (:meth:`Decoding.begin_checks`)."""
    for state in taken:
        cython.cast(Decoding, state).source = _NO_INPUT
        cython.cast(Decoding, state).busy = False


def _bytes_of(source: memoryview) -> Any:
    """What the decoder reads: compiled, a pointer to the view's bytes."""
    if cython.compiled:
        return cython.cast(cython.p_uchar, PyMemoryView_GET_BUFFER(source).buf)
    return source
