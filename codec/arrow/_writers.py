"""Arrow record batches written as protobuf frames: a reader per Arrow array.

Strategy (the numbers are referred to below):

1. The readers form a tree shaped as the Arrow schema, as the builders of
   ``codec.arrow._builders`` do, and are made from them
   (``codec.arrow._schema``): a STRUCT per message, with a child per field; a
   LIST per repeated field, whose child reads the elements; a MAP, whose
   child is a STRUCT of key and value; FIXED, BOOLS and TEXTS for numbers,
   bools, strings and bytes. Before a batch is written, each reader is bound
   to its array (:meth:`Reader.bind`, or, compiled, all at once through
   Arrow's C data interface: :func:`bind_exported`): the addresses of its
   buffers, checked to hold its positions, and ``shift``, which takes a
   position of its parent (a STRUCT's position, or an offset of a LIST) to
   its own. The walk then reads those buffers and touches no Python object.
2. A frame is written in one pass over its row, straight into the encoder's
   buffer. A length prefix (the frame's, a message's, a packed run's, a map
   entry's) is given one byte before its body, and written once the body's
   size is known; a body of 128 bytes or more is moved up by the bytes its
   prefix needs beyond that one, so each prefix is minimal.
3. Fields go out in number order, as upb writes them. A null is an absent
   field. A field without presence is left out when it holds its zero, as
   protobuf leaves it out (a float's zero is +0.0 only). A map entry has its
   key and its value, both written, in the column's order.
4. What Arrow can hold and protobuf cannot is refused: an
   :class:`~codec.errors.EncodeError` naming the column and the row for a
   null element of a list, a null key or value of a map, two members of a
   oneof set in one row, a required field null (unless ``partial``), a
   proto3 string that is not UTF-8, the bytes of a message kept encoded (a
   type nested in itself) that the struct decoder refuses; a
   ``ValueError`` for offsets outside their buffers (an Arrow array that is
   not valid). The frames written before are then taken back, so a refused
   batch writes nothing.

This file is Cython pure-Python mode (types in ``_writers.pxd``).
"""

from __future__ import annotations

import re
from typing import Any

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython  # type: ignore[no-redef]

from codec._varint import encode as varint_bytes
from codec.errors import DecodeError, EncodeError, FrameTooLargeError
from codec.structs._decode import Decoder
from codec.structs._plan import FieldPlan, MessagePlan

if not cython.compiled:  # compiled, _writers.pxd cimports these C functions and constants
    from operator import getitem as PyTuple_GET_ITEM

    from codec._buffer import (
        byte_pointer,
        cut_to,
        make_room,
        release_claim,
        set_end,
    )
    from codec._varint import read_le, varint_size, varint_write, varint_write_padded, write_le
    from codec._wire import ENUM, GROUP, INT32, MESSAGE, SINT32, SINT64, STRING, VARINT
    from codec.arrow._builders import BOOLS, FIXED, LIST, MAP, STRUCT, TEXTS
    from codec.framing import FrameEncoder
    from codec.structs._decode import end_checks

COMPILED: bool = cython.compiled

_MAX_POSITION = 1 << 62  # positions, shifts and offsets stay far from overflow
_MAX_DEPTH = 1000  # readers nested in a reader (the C stack the walk takes)
_SCALAR_ROOM = 24  # bytes a tag and a number may take, and the 8-byte stores past them
_ASCII_AHEAD = 4096  # bytes of a string column checked past a string at once (_is_utf8)
_NOT_ASCII = re.compile(b"[\x80-\xff]")
_LOW_32 = 0xFFFFFFFF
_LOW_64 = (1 << 64) - 1


class Reader:
    """The buffers of one Arrow array being written, and how its positions are found (1)."""

    def __init__(
        self,
        shape: int,
        field: FieldPlan | None,
        path: str,
        *,
        width: int = 0,
        children: tuple[Reader, ...] = (),
        plan: MessagePlan | None = None,
        oneofs: tuple[tuple[Reader, ...], ...] = (),
        required: tuple[Reader, ...] = (),
    ) -> None:
        if _is_made(self):
            raise RuntimeError("a Reader is made once")
        members = tuple(children)
        if not all(isinstance(child, Reader) and _is_made(child) for child in members):
            raise TypeError("a reader's children are readers, made")
        if shape == STRUCT:
            if not isinstance(plan, MessagePlan) or len(members) != len(plan.fields_by_slot):
                raise ValueError("a STRUCT reader has the plan of its message and a child a field")
            if any(
                cython.cast(Reader, child).field is not plan.fields_by_slot[slot]
                for slot, child in enumerate(members)
            ):
                raise ValueError("a STRUCT reader's children read its plan's fields, by slot")
        elif shape in (LIST, MAP):
            if len(members) != 1 or (
                cython.cast(Reader, members[0]).shape != STRUCT
                if shape == MAP
                else cython.cast(Reader, members[0]).shape in (LIST, MAP)
            ):
                raise ValueError(
                    "a LIST has one child, its elements (not lists), a MAP a STRUCT of entries"
                )
            if shape == MAP and len(cython.cast(Reader, members[0]).children) != 2:
                raise ValueError("a MAP's entries are a STRUCT of key and value")
        elif shape not in (FIXED, BOOLS, TEXTS) or (shape == FIXED and width not in (4, 8)):
            raise ValueError(f"no reader of shape {shape} and width {width}")
        if shape != STRUCT and not isinstance(field, FieldPlan):
            raise ValueError("a reader of values has their field")
        depth = 1 + max((cython.cast(Reader, child).depth for child in members), default=0)
        if depth > _MAX_DEPTH:
            raise ValueError(f"readers nested deeper than {_MAX_DEPTH}")
        if not all(
            isinstance(member, Reader) and member in members for group in oneofs for member in group
        ) or not all(isinstance(member, Reader) and member in members for member in required):
            raise ValueError("a oneof's members and the required fields are children")
        self.shape = shape
        self.depth = depth
        self.field = field  # the field whose values it reads (None: the root, map entries)
        self.path = path  # the column's name in errors: "resource.attributes.key"
        self.width = width
        self.children = members
        self.plan = plan
        # Children in the order their fields are written: by number (3).
        self.members = (
            tuple(sorted(members, key=lambda child: cython.cast(Reader, child).field.number))
            if shape == STRUCT
            else members
        )
        self.oneofs = tuple(tuple(group) for group in oneofs)
        self.required = tuple(required)
        # A oneof's members share a bit, so the walk tells a second member set in a row
        # from the fields it writes (4); past 64 oneofs, each row has them all checked.
        self.oneof_bit = 0
        for number, group in enumerate(self.oneofs[:64]):
            for member in group:
                cython.cast(Reader, member).oneof_bit = 1 << number
        self.rules = bool(self.required) or len(self.oneofs) > 64  # checked per row (4)
        # What the walk reads of the field, kept here (3).
        if isinstance(field, FieldPlan):
            self.kind = field.kind  # MESSAGE for a TEXTS: a message kept encoded
            self.varint = field.wire_type == VARINT
            self.tag = field.tag
            self.tag_word = field.tag_word
            self.tag_size = field.tag_size
            self.end_tag_word = int.from_bytes(varint_bytes(field.end_tag), "little")
            self.implicit = field.implicit
            self.packed = field.packed
            self.group = field.kind == GROUP
            self.utf8 = field.kind == STRING and field.utf8 == "strict"
        self.shift = 0
        self.size = 0  # positions its buffers hold (0 until bound)
        self.span_limit = 0  # how far its offsets may reach
        self.wide = False  # 64-bit offsets
        self.ascii_from = 0  # where its data are known to be ASCII (_is_utf8)
        self.ascii_to = 0
        self.held: Any = None  # the buffers bound, kept alive
        self.checker: Any = None  # a Decoder of a message kept encoded (_check_kept)
        if not cython.compiled:
            self.validity: Any = None  # the bytes bound: their addresses, compiled
            self.offsets: Any = None
            self.values: Any = None
        self.made = True

    def bind(
        self,
        shift: int,
        size: int,
        validity: Any,
        offsets: Any,
        values: Any,
        span_limit: int,
    ) -> None:
        """Read the array whose buffers these are: ``size`` positions (its offset and
        length), from a parent position plus ``shift`` (1).

        ``span_limit`` is how far the offsets of a LIST or MAP may reach (its
        child's length), or of a TEXTS (its data's size). A buffer that does
        not hold ``size`` positions is a ValueError; whether each child holds
        what its parent's positions reach is checked before a walk
        (:func:`_check_reach`), as a child may be bound again after its parent.
        The offsets' width is the one :func:`take_widths` gave the reader.
        """
        if not _is_made(self):
            raise TypeError("a Reader is bound once made")
        if not all(0 <= position <= _MAX_POSITION for position in (shift, size, span_limit)):
            raise ValueError(f"positions are from 0 to {_MAX_POSITION}")
        held = (_bytes(validity), _bytes(offsets), _bytes(values))  # their exports, kept
        if validity is not None:
            _check_holds(held[0], (size + 7) >> 3, self.path)
        shape = self.shape
        if shape in (LIST, MAP, TEXTS):
            _check_holds(held[1], (size + 1) * (8 if self.wide else 4), self.path)
        elif shape == FIXED:
            _check_holds(held[2], size * self.width, self.path)
        elif shape == BOOLS:
            _check_holds(held[2], (size + 7) >> 3, self.path)
        _point(self, held, _address(held[0]), _address(held[1]), _address(held[2]))
        if shape == TEXTS:  # its strings reach its last offset, which its data must hold
            reach = _data_reach(self, size)
            if reach > span_limit:
                raise ValueError(
                    f"column {self.path}: its last offset, {reach}, is past its data of"
                    f" {span_limit} bytes: not a valid Arrow array"
                )
            _check_holds(held[2], reach, self.path)
            span_limit = reach
        _reach(self, shift, size, span_limit)

    def unbind(self) -> None:
        """Let go of the buffers bound, this reader's and its children's."""
        for child in self.children:
            cython.cast(Reader, child).unbind()
        _point(self, None, cython.NULL, cython.NULL, cython.NULL)
        _reach(self, 0, 0, 0)


def _point(reader: Reader, held: Any, validity: Any, offsets: Any, values: Any) -> None:
    """Have ``reader`` read the buffers at these addresses (NULL: none), which ``held``
    keeps alive (None: an owner elsewhere)."""
    reader.held = held
    reader.validity = validity
    reader.offsets = offsets
    reader.values = values


def _reach(reader: Reader, shift: int, size: int, span_limit: int) -> None:
    """Have ``reader`` read ``size`` positions, from a parent position plus ``shift``,
    its offsets reaching up to ``span_limit`` (see :meth:`Reader.bind`)."""
    reader.shift = shift
    reader.size = size
    reader.span_limit = span_limit
    reader.ascii_from = reader.ascii_to = 0


def _data_reach(reader: Reader, size: int) -> int:
    """How far the strings of a TEXTS reader bound to ``size`` positions may reach: its
    last offset, whatever its data hold past it, however it is bound."""
    reach = _offset(reader, size)
    if reach < 0:
        raise ValueError(f"column {reader.path}: a negative offset")
    return reach


def _is_made(reader: Reader) -> bool:
    """Whether ``reader``'s ``__init__`` ran to its end (not an object of ``__new__``)."""
    return reader.made


def _check_reach(reader: Reader) -> None:
    """ValueError unless each child of ``reader``, and theirs, holds every position its
    parent's reach: a STRUCT's positions plus the child's shift, a LIST's or MAP's
    offsets (up to ``span_limit``) plus its child's shift (1)."""
    reach = reader.size if reader.shape == STRUCT else reader.span_limit
    for child in reader.children:  # none for a number, bool or text
        if cython.cast(Reader, child).size - cython.cast(Reader, child).shift < reach:
            raise ValueError(f"column {cython.cast(Reader, child).path} is too short")
        _check_reach(cython.cast(Reader, child))


def _bytes(buffer: Any) -> Any:
    """A buffer's bytes as a flat view, which keeps them from moving while it lives."""
    return None if buffer is None else memoryview(buffer).cast("B")


def _check_holds(view: Any, size: int, path: str) -> None:
    if size and (view is None or len(view) < size):
        raise ValueError(f"column {path}: a buffer holds fewer than {size} bytes")


def _address(view: Any) -> Any:
    """The bytes of a flat view as the walk reads them: compiled, their address."""
    if view is None:
        return cython.NULL
    if cython.compiled:
        return cython.cast(cython.p_uchar, PyMemoryView_GET_BUFFER(view).buf)
    return view


# --- binding through Arrow's C data interface (1) ------------------------------------
#
# Compiled, a batch whose columns are in main memory and hold no dictionary (enum
# names) is bound in one export: bind_exported reads the addresses of its buffers from
# the ArrowArrays, where Reader.bind takes a pyarrow object a buffer (a microsecond a
# column). The addresses come without sizes, so the batch is first validated by Arrow,
# whose checks are those of Reader.bind: each buffer holds its array's offset and
# length, a child its parent's positions, a TEXTS' last offset its data.


def take_widths(root: Reader, pa: Any, schema: Any) -> bool:
    """Give ``root``'s readers the offsets' widths of ``schema``'s types (a schema
    checked to match ``root``), which neither an exported array nor a pyarrow buffer
    carries; return whether batches of it can be bound through the C data interface:
    none of its columns is a dictionary."""
    exportable = True
    for reader, field in zip(root.children, schema, strict=True):
        exportable = _take_width(cython.cast(Reader, reader), pa, field.type) and exportable
    return exportable


def _take_width(reader: Reader, pa: Any, arrow_type: Any) -> bool:
    """Give ``reader`` and its children the offsets' widths of ``arrow_type``; False if a
    dictionary is found."""
    types = pa.types
    if types.is_dictionary(arrow_type):  # an enum's names: a number, no offsets
        return False
    shape = reader.shape
    if shape == STRUCT:
        exportable = True
        for slot, child in enumerate(reader.children):
            member = arrow_type.field(slot).type
            exportable = _take_width(cython.cast(Reader, child), pa, member) and exportable
        return exportable
    if shape in (LIST, MAP):
        reader.wide = types.is_large_list(arrow_type)
        items = (
            arrow_type.value_type
            if shape == LIST
            else pa.struct([arrow_type.key_field, arrow_type.item_field])
        )
        return _take_width(cython.cast(Reader, reader.children[0]), pa, items)
    reader.wide = types.is_large_string(arrow_type) or types.is_large_binary(arrow_type)
    return True


class Exported:
    """A record batch exported through the C data interface (compiled only), released
    when this is let go: the readers bound to it keep it, and so its buffers."""

    def __init__(self) -> None:
        if cython.compiled:
            self.array = cython.cast(
                cython.pointer(ArrowArray), calloc(1, cython.sizeof(ArrowArray))
            )
            if self.array == cython.NULL:
                raise MemoryError()

    def __dealloc__(self) -> None:
        if cython.compiled and self.array != cython.NULL:
            if self.array.release != cython.NULL:
                self.array.release(self.array)
            free(self.array)


def bind_exported(root: Reader, batch: Any) -> int:
    """Bind ``root``, the STRUCT reader of a batch's rows, to ``batch``, a
    ``RecordBatch`` of a schema :func:`take_widths` found exportable, through the C data
    interface (compiled only); return its rows. An invalid batch is Arrow's
    ``ArrowInvalid``, a ValueError, as Reader.bind's refusals are."""
    if not _is_made(root) or root.shape != STRUCT or root.field is not None:
        raise TypeError("batches are bound to the STRUCT reader of their message")
    if not cython.compiled:
        raise RuntimeError("the uncompiled build binds a batch with Reader.bind")
    try:
        batch.validate()  # Arrow's checks of the sizes the exported addresses come without
    except ValueError as error:  # pyarrow's ArrowInvalid
        raise ValueError(f"the batch is not a valid Arrow array: {error}") from error
    exported = Exported()
    if cython.compiled:
        batch._export_to_c(cython.cast(cython.size_t, exported.array))
        _bind_node(root, exported.array, exported.array.offset)  # a row: a root position
    root.held = exported
    return root.size - root.shift


def _bind_node(reader: Reader, node: Any, shift: int) -> None:
    """Bind ``reader`` and its children to ``node``, an exported array, and its children,
    from a parent position plus ``shift`` (as ``Layout._bind`` binds them)."""
    if cython.compiled:
        shape = reader.shape
        buffers = 1 if shape == STRUCT else 3 if shape == TEXTS else 2
        if (
            node.n_buffers != buffers
            or node.n_children != len(reader.children)
            or node.dictionary != cython.NULL
            or node.offset < 0
            or not 0 <= node.length <= _MAX_POSITION - node.offset
        ):
            raise ValueError(f"column {reader.path}: the exported array is not of its type")
        size = node.offset + node.length
        for slot in range(node.n_children):
            child = node.children[slot]
            _bind_node(cython.cast(Reader, reader.children[slot]), child, child.offset)
        at = node.buffers
        validity = cython.cast(cython.p_uchar, at[0]) if node.null_count else cython.NULL
        offsets = values = cython.NULL
        span_limit = 0
        if shape in (LIST, MAP):
            offsets = cython.cast(cython.p_uchar, at[1])
            span_limit = node.children[0].length
        elif shape == TEXTS:
            offsets = cython.cast(cython.p_uchar, at[1])
            values = cython.cast(cython.p_uchar, at[2])
        elif shape != STRUCT:
            values = cython.cast(cython.p_uchar, at[1])
        _point(reader, None, validity, offsets, values)  # the root's Exported keeps them
        if shape == TEXTS:  # Arrow checked that its data hold its last offset
            span_limit = _data_reach(reader, size)
            if reader.kind == MESSAGE:  # kept encoded: _check_kept's Decoder reads a view
                data = PyMemoryView_FromMemory(
                    cython.cast(cython.p_char, reader.values), span_limit, PyBUF_READ
                )
                reader.held = (None, None, data)
        _reach(reader, shift, size, span_limit)


# --- the walk (2) ------------------------------------------------------------------


class Walk:
    """Where the walk writes: the encoder's bytes, its room, and the row (2)."""

    def __init__(self) -> None:
        self.target: Any = None  # the FrameEncoder, set once it is claimed (encode_batches)
        self.partial = False
        self.pos = 0
        self.row = 0  # the batch's row being written, for errors
        # The decoder states that check messages kept encoded (_check_kept), taken for the
        # walk, and the reader whose message is being checked (None between checks).
        self.checkers: list[Any] = []
        self.checking: Reader | None = None
        if not cython.compiled:
            self.out: Any = None  # the encoder's bytes, and their size
            self.room = 0


def encode_batches(root: Reader, encoder: Any, batches: Any, bind: Any, partial: bool) -> int:
    """Append the rows of each batch of ``batches`` to ``encoder``, a
    :class:`codec.FrameEncoder`, as frames; return the bytes appended.

    ``bind(batch)`` binds ``root`` and its children to a batch and returns
    its rows. The encoder is claimed throughout, so the Python code run
    meanwhile (the iteration, the binding) cannot change it; on any error it
    is cut back to where it began, so nothing is appended.
    """
    if not _is_made(root) or root.shape != STRUCT or root.field is not None:
        raise TypeError("rows are read by the STRUCT reader of their message")
    if not isinstance(encoder, FrameEncoder):
        raise TypeError(f"expected a codec.FrameEncoder, not {type(encoder).__name__}")
    target: FrameEncoder = cython.cast(FrameEncoder, encoder)
    target._claim(True)
    start = target._length
    walk = Walk()
    walk.target = target
    walk.partial = partial
    walk.pos = start
    try:
        for batch in batches:
            rows = bind(batch)
            if not 0 <= rows <= root.size - root.shift:
                raise ValueError(f"the batch has {root.size - root.shift} rows, not {rows}")
            _check_reach(root)
            _moved(walk)
            _rows(root, rows, walk, target._max_frame_size)
        set_end(target, walk.pos)
    except BaseException as error:
        cut_to(target, start)
        if walk.checking is not None and isinstance(error, DecodeError):
            _refuse_kept(walk.checking, walk, error)
        raise
    finally:
        end_checks(walk.checkers)
        release_claim(target)
    return walk.pos - start


def _rows(root: Reader, rows: int, walk: Walk, limit: int) -> None:
    """Write rows ``[0, rows)`` of the batch ``root`` is bound to, a frame each."""
    for row in range(rows):
        walk.row = row
        _room(walk, _SCALAR_ROOM)
        prefix = _open_length(walk)
        _message(root, root.shift + row, walk)
        size = _close_length(walk, prefix)
        if size > limit:
            raise FrameTooLargeError(size, limit)


def _room(walk: Walk, size: int) -> None:
    """Make room for ``size`` more bytes at the walk's position."""
    if walk.pos + size > walk.room:
        make_room(walk.target._data, walk.pos + size, False)
        _moved(walk)


def _moved(walk: Walk) -> None:
    """Take the address and size of the encoder's bytes again (they may have moved)."""
    walk.out = byte_pointer(walk.target._data)
    walk.room = len(walk.target._data)


def _open_length(walk: Walk) -> int:
    """Leave one byte, room made, for the length prefix of what is written next (2)."""
    walk.pos += 1
    return walk.pos


def _close_length(walk: Walk, body: int) -> int:
    """Write the prefix of the body from ``body`` on; return the body's size. A body of
    128 bytes or more is moved up to make room for its prefix (2)."""
    size = walk.pos - body
    if size < 0x80:
        walk.out[body - 1] = size
    else:
        extra = varint_size(size) - 1
        _room(walk, extra)
        _move_up(walk.out, body, size, extra)
        varint_write(walk.out, body - 1, size)
        walk.pos += extra
    return size


def _move_up(out: Any, start: int, size: int, by: int) -> None:
    """Move ``size`` bytes at ``start`` up by ``by`` bytes (room made)."""
    if cython.compiled:
        memmove(out + start + by, out + start, size)
    else:
        out[start + by : start + by + size] = out[start : start + size]


def _message(reader: Reader, p: int, walk: Walk) -> None:
    """The fields of the message at position ``p`` of a STRUCT reader, by number (3)."""
    if reader.rules:
        if len(reader.oneofs) > 64:
            _check_oneofs(reader, p, walk)
        if reader.required and not walk.partial:
            _check_required(reader, p, walk)
    members = reader.members
    chosen = 0  # the bits of the oneofs a member of which is set
    for i in range(len(members)):
        # The member's reader, not held (the tuple holds it and is never replaced), so
        # each use below casts it: a typed local would count a reference each field.
        child = PyTuple_GET_ITEM(members, i)
        q = p + cython.cast(Reader, child).shift
        if cython.cast(Reader, child).oneof_bit and _is_valid(cython.cast(Reader, child), q):
            if chosen & cython.cast(Reader, child).oneof_bit:
                _check_oneofs(reader, p, walk)  # raises, naming both members
            chosen |= cython.cast(Reader, child).oneof_bit
        shape = cython.cast(Reader, child).shape
        if shape >= LIST:
            _composite(cython.cast(Reader, child), q, walk)
        elif not _is_valid(cython.cast(Reader, child), q):
            pass  # a null: the field is absent
        elif shape == FIXED:  # a field without presence is left out if zero (3)
            raw = _load(cython.cast(Reader, child), q)
            if raw or not cython.cast(Reader, child).implicit:
                _room(walk, _SCALAR_ROOM)
                walk.pos = _tag_at(walk.out, walk.pos, cython.cast(Reader, child))
                _number(cython.cast(Reader, child), raw, walk)
        elif shape == TEXTS:
            start = _offset(cython.cast(Reader, child), q)
            end = _offset(cython.cast(Reader, child), q + 1)
            if start != end or not cython.cast(Reader, child).implicit:
                _text(cython.cast(Reader, child), q, start, end, walk)
        else:  # BOOLS
            raw = _bit(cython.cast(Reader, child).values, q)
            if raw or not cython.cast(Reader, child).implicit:
                _room(walk, _SCALAR_ROOM)
                walk.pos = _tag_at(walk.out, walk.pos, cython.cast(Reader, child))
                walk.pos = write_le(walk.out, walk.pos, raw, 1)


def _composite(reader: Reader, q: int, walk: Walk) -> None:
    """A message or group field, a list or a map, at position ``q``."""
    if reader.shape == STRUCT:
        if _is_valid(reader, q):
            _room(walk, _SCALAR_ROOM)
            walk.pos = _tag_at(walk.out, walk.pos, reader)
            _nested(reader, q, walk)
    elif _is_valid(reader, q):  # a null list is an empty one
        start = _offset(reader, q)
        end = _offset(reader, q + 1)
        if not 0 <= start <= end <= reader.span_limit:
            _invalid_offsets(reader, q)
        items = cython.cast(Reader, reader.children[0])
        if reader.shape == MAP:
            _entries(reader, items, start + items.shift, end + items.shift, walk)
        elif start < end:
            _elements(reader, items, start + items.shift, end + items.shift, walk)


def _elements(reader: Reader, items: Reader, start: int, end: int, walk: Walk) -> None:
    """The elements at positions ``[start, end)`` of ``items``: a packed run, or each
    tagged."""
    if reader.packed:
        _room(walk, _SCALAR_ROOM)
        walk.pos = _tag_at(walk.out, walk.pos, reader)
        body = _open_length(walk)
        for k in range(start, end):
            if not _is_valid(items, k):
                _refuse(items, walk, "a list holds a null, which a repeated field cannot")
            _room(walk, _SCALAR_ROOM)
            _element(items, k, walk)
        _close_length(walk, body)
    else:
        for k in range(start, end):
            if not _is_valid(items, k):
                _refuse(items, walk, "a list holds a null, which a repeated field cannot")
            _tagged(items, k, walk)


def _entries(reader: Reader, entries: Reader, start: int, end: int, walk: Walk) -> None:
    """The map entries at positions ``[start, end)`` of ``entries``, each a message of
    its key and value, both written (3)."""
    keys = cython.cast(Reader, entries.children[0])
    values = cython.cast(Reader, entries.children[1])
    for e in range(start, end):
        if not (_is_valid(entries, e) and _is_valid(keys, e + keys.shift)):
            _refuse(keys, walk, "a map holds a null key")
        if not _is_valid(values, e + values.shift):
            _refuse(values, walk, "a map holds a null value, which protobuf's maps cannot")
        _room(walk, _SCALAR_ROOM)
        walk.pos = _tag_at(walk.out, walk.pos, reader)
        body = _open_length(walk)
        _tagged(keys, e + keys.shift, walk)
        _tagged(values, e + values.shift, walk)
        _close_length(walk, body)


def _tagged(reader: Reader, q: int, walk: Walk) -> None:
    """The value at position ``q``, tagged, whatever it is: an element of a list not
    packed, a map entry's key or value."""
    if reader.shape == TEXTS:
        _text(reader, q, _offset(reader, q), _offset(reader, q + 1), walk)
    else:
        _room(walk, _SCALAR_ROOM)
        walk.pos = _tag_at(walk.out, walk.pos, reader)
        _element(reader, q, walk)


def _element(reader: Reader, q: int, walk: Walk) -> None:
    """The number, bool or message at position ``q``, after its tag (room made for a
    number)."""
    shape = reader.shape
    if shape == FIXED:
        _number(reader, _load(reader, q), walk)
    elif shape == BOOLS:
        walk.pos = write_le(walk.out, walk.pos, _bit(reader.values, q), 1)
    else:
        _nested(reader, q, walk)


def _nested(reader: Reader, q: int, walk: Walk) -> None:
    """The message at position ``q`` of a STRUCT reader, after its tag: a group's fields
    and end tag, or a message's length and fields."""
    if reader.group:
        _message(reader, q, walk)
        _room(walk, _SCALAR_ROOM)
        write_le(walk.out, walk.pos, reader.end_tag_word, 8)  # as _tag_at writes a tag
        walk.pos += reader.tag_size
    else:
        body = _open_length(walk)
        _message(reader, q, walk)
        _close_length(walk, body)


def _number(reader: Reader, raw: int, walk: Walk) -> None:
    """A number the column holds as ``raw``, its low bytes (room made)."""
    if reader.varint:
        walk.pos = varint_write_padded(walk.out, walk.pos, _varint_bits(reader.kind, raw))
    else:
        walk.pos = write_le(walk.out, walk.pos, raw, reader.width)


def _text(reader: Reader, q: int, start: int, end: int, walk: Walk) -> None:
    """A string, bytes, or the encoded bytes of a message met again inside itself,
    tagged: ``reader``'s data from ``start`` to ``end``, its offsets at ``q``."""
    if not 0 <= start <= end <= reader.span_limit:
        _invalid_offsets(reader, q)
    size = end - start
    if reader.utf8 and not _is_utf8(reader, start, end):
        _refuse(reader, walk, "a string is not UTF-8, which a proto3 string must be")
    if reader.kind == MESSAGE:  # a message met again inside itself, kept encoded
        _check_kept(reader, start, end, walk)
    _room(walk, _SCALAR_ROOM + size)
    walk.pos = _tag_at(walk.out, walk.pos, reader)
    walk.pos = varint_write(walk.out, walk.pos, size)
    if cython.compiled:
        codec_copy_value(
            walk.out + walk.pos, cython.cast(cython.p_char, reader.values + start), size
        )
    else:
        walk.out[walk.pos : walk.pos + size] = reader.values[start:end]
    walk.pos += size


def _tag_at(out: Any, pos: int, reader: Reader) -> int:
    """Write the tag of ``reader``'s field at ``pos`` (room made); return its end.

    Compiled, one store of the tag's bytes as an 8-byte word, of which the
    first ``tag_size`` count."""
    if cython.compiled:
        write_le(out, pos, reader.tag_word, 8)
        return pos + reader.tag_size
    return varint_write(out, pos, reader.tag)


def _load(reader: Reader, q: int) -> int:
    """The number at position ``q`` of a FIXED reader, as its low bytes."""
    if reader.width == 8:
        return read_le(reader.values, q * 8, 8)
    return read_le(reader.values, q * 4, 4)


def _varint_bits(kind: int, raw: int) -> int:
    """The varint of a number the column holds as ``raw``, its low bytes."""
    if kind in (INT32, ENUM):  # sign-extended to 64 bits, as protobuf writes them
        if cython.compiled:
            return cython.cast(
                cython.ulonglong,
                cython.cast(
                    cython.longlong, cython.cast(cython.int, cython.cast(cython.uint, raw))
                ),
            )
        return (raw - (1 << 32)) & _LOW_64 if raw >> 31 else raw
    if kind == SINT32:
        return ((raw << 1) ^ (_LOW_32 if raw >> 31 else 0)) & _LOW_32
    if kind == SINT64:
        return ((raw << 1) ^ (_LOW_64 if raw >> 63 else 0)) & _LOW_64
    return raw  # int64, uint32, uint64


def _is_valid(reader: Reader, q: int) -> bool:
    if reader.validity == cython.NULL:
        return True
    return _bit(reader.validity, q)


def _bit(data: bytes, q: int) -> bool:
    return (data[q >> 3] >> (q & 7)) & 1 != 0


def _offset(reader: Reader, q: int) -> int:
    """Offset ``q`` of a TEXTS, LIST or MAP reader, signed as Arrow's are."""
    if reader.wide:
        raw = read_le(reader.offsets, q * 8, 8)
        if cython.compiled:
            return cython.cast(cython.longlong, raw)
        return raw - (1 << 64) if raw >> 63 else raw
    raw = read_le(reader.offsets, q * 4, 4)
    if cython.compiled:
        return cython.cast(cython.int, cython.cast(cython.uint, raw))
    return raw - (1 << 32) if raw >> 31 else raw


def _is_utf8(reader: Reader, start: int, end: int) -> bool:
    """Whether ``reader``'s data from ``start`` to ``end`` are UTF-8: at once if they lie
    in the run of its data already found to be ASCII."""
    if reader.ascii_from <= start and end <= reader.ascii_to:
        return True
    return _is_utf8_text(reader, start, end)


def _is_utf8_text(reader: Reader, start: int, end: int) -> bool:
    """:func:`_is_utf8` past the ASCII run: the run is carried on through these bytes and
    up to ``_ASCII_AHEAD`` more, to its first byte that is not ASCII, so that the strings
    written next are found in it. A column's strings are checked in one pass over their
    bytes, with no branch on each one's length; a string that is not ASCII, or that lies
    before the run (offsets that go back: a null's), alone."""
    if start < reader.ascii_from:
        return _is_utf8_alone(reader, start, end)
    if start > reader.ascii_to:  # a run starts here
        reader.ascii_from = reader.ascii_to = start
    ahead = min(max(end, reader.ascii_to + _ASCII_AHEAD), reader.span_limit)
    if cython.compiled:
        reader.ascii_to += codec_ascii_span(
            cython.cast(cython.p_char, reader.values + reader.ascii_to), ahead - reader.ascii_to
        )
    else:
        data = bytes(reader.values[reader.ascii_to : ahead])
        found = _NOT_ASCII.search(data)
        reader.ascii_to += len(data) if found is None else found.start()
    if end <= reader.ascii_to:
        return True
    return _is_utf8_alone(reader, start, end)


def _is_utf8_alone(reader: Reader, start: int, end: int) -> bool:
    if cython.compiled:
        return codec_utf8_valid(cython.cast(cython.p_char, reader.values + start), end - start)
    try:
        bytes(reader.values[start:end]).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# --- what protobuf cannot hold (4) ----------------------------------------------------


def _check_oneofs(reader: Reader, p: int, walk: Walk) -> None:
    for group in reader.oneofs:
        chosen: Any = None
        for member in group:
            if _is_valid(cython.cast(Reader, member), p + cython.cast(Reader, member).shift):
                if chosen is not None:
                    first = cython.cast(Reader, chosen).field.name
                    _refuse(
                        member,
                        walk,
                        f"{first} is set too, and both are members of one oneof",
                    )
                chosen = member


def _check_kept(reader: Reader, start: int, end: int, walk: Walk) -> None:
    """Check the bytes a message is kept as, ``start:end`` of ``reader``'s data, as the
    struct decoder reads them: a DecodeError, which :func:`encode_batches` makes an
    EncodeError (4). The decoder's state is set up once a walk."""
    if reader.checker is None:
        plan: MessagePlan = reader.field.message  # type: ignore[union-attr,assignment]
        reader.checker = Decoder(plan.cls)
    checker = cython.cast(Decoder, reader.checker)
    checker.state.begin_checks(walk.checkers, 0)  # (once a walk)
    walk.checking = reader
    checker.state.check_next(checker.plan, reader.values, start, end)
    walk.checking = None


def _refuse_kept(reader: Reader, walk: Walk, error: DecodeError) -> None:
    label = reader.field.label  # type: ignore[union-attr]  # a TEXTS reader's
    _refuse(reader, walk, f"the bytes kept for {label} are not a message: {error.message}")


def _check_required(reader: Reader, p: int, walk: Walk) -> None:
    for member in reader.required:
        if not _is_valid(cython.cast(Reader, member), p + cython.cast(Reader, member).shift):
            _refuse(member, walk, "a required field is null (pass partial=True to allow it)")


def _refuse(reader: Reader, walk: Walk, what: str) -> None:
    raise EncodeError(f"column {reader.path}, row {walk.row}: {what}")


def _invalid_offsets(reader: Reader, q: int) -> None:
    raise ValueError(
        f"column {reader.path}: offsets {_offset(reader, q)}..{_offset(reader, q + 1)}"
        f" at position {q} are outside its data: not a valid Arrow array"
    )


if not cython.compiled:
    from codec._pure import fields_as_allocated

    fields_as_allocated(Reader, made=False)
