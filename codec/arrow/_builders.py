"""Arrow columns decoded straight from protobuf frames: a builder per Arrow array.

Strategy (the numbers are referred to below):

1. The builders form a tree shaped as the Arrow schema (``codec.arrow._schema``
   makes both from a struct class's plan): a STRUCT column per message, with a
   child per field; a LIST for a repeated field, whose child holds the
   elements; a MAP, whose child is a STRUCT of key and value; FIXED, BOOLS and
   TEXTS for numbers, bools, strings and bytes. Each is a few ``bytearray``
   buffers grown by doubling: the validity bitmap, the values, the offsets.
   Past what is written, every buffer is zero. A batch's arrays take the
   buffers as they are, compiled in one call through Arrow's C data interface
   (:func:`arrow_batch`), which holds a view of each buffer until Arrow lets the
   arrays go; the column goes on with buffers of an earlier batch
   that no array holds any more (no view of them is alive), set back to
   zero, or with new ones. Fresh pages cost a page fault each: reused, a
   stream of batches touches the same memory again.
2. Rows catch up. A message is row ``r`` of its STRUCT column, and row ``r``
   of each child is that field's value. The walk (:func:`decode_frames`)
   writes a value where the field is met; a child first catches up with the
   row it is written in: the rows it lacks get the absent value, null where
   protobuf has presence, else the field's zero (an empty list or map for a
   repeated field). A batch catches every column up with its parent before
   Arrow gets it (:meth:`Column.complete`). As the buffers are zero, absent
   numbers, bools and nulls cost a count, not a write; a list's row ends when
   the list catches up past it.
3. Protobuf's merge rules become truncations of the row: a singular value met
   again replaces the row's (the column is cut back to ``r``, then written); a
   oneof member clears the other members' row; a singular sub-message met
   again goes on in its row (so it is merged); a value a field cannot take (a
   closed enum's undeclared number) leaves the row as it was, as protobuf
   keeps it among the unknown fields. Unknown fields and extensions are
   passed over; a map entry holding any is left out of its map, as protobuf
   keeps it among the unknown fields. A map given a key twice keeps both
   entries (Arrow maps may), where protobuf keeps the last.
4. Nothing is made per message or per field: values are read from the frame
   and written into the buffers. The frames come from a
   :class:`codec.FrameDecoder` (``take_frames``), which checks their prefixes,
   or, for a stream held in memory, straight from its bytes, their prefixes
   checked by the decoder's rules (``codec.framing.frames_end``) in the call
   that walks them, so that no Python code runs between the check and the
   walk. A frame's error carries its offset in the stream, as the struct
   decoder's.

This file is Cython pure-Python mode (types in ``_builders.pxd``).
"""

from __future__ import annotations

from typing import Any

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython  # type: ignore[no-redef]

from codec._wire import DEFAULT_MAX_DEPTH
from codec.errors import DecodeError, DepthLimitError, TruncatedError
from codec.structs._decode import Decoder
from codec.structs._plan import FieldPlan, MessagePlan

if not cython.compiled:  # compiled, _builders.pxd cimports these C functions and constants
    from operator import getitem as PyTuple_GET_ITEM

    from codec._buffer import grown, is_exported, resize_zeroed
    from codec._varint import read_le, varint_scan, varint_value, write_le
    from codec._wire import (
        BOOL,
        EGROUP,
        GROUP,
        I32,
        I64,
        LEN,
        MESSAGE,
        SINT32,
        SINT64,
        STRING,
        VARINT,
        fixed_end,
        length_end,
        packed_width,
        read_tag,
        skip_field,
        stray_end_group,
        varint_length,
        varint_length_in,
    )
    from codec.framing import frames_end
    from codec.structs._decode import end_checks
    from codec.structs._plan import _field_numbered, packed_run

    def _pointer(data: bytearray) -> bytearray:
        """Where the walk writes a buffer's bytes: uncompiled, the ``bytearray`` itself."""
        return data


COMPILED: bool = cython.compiled

# Column.shape: the Arrow layout a builder writes (1).
if not cython.compiled:  # compiled, _builders.pxd declares them
    FIXED = 0  # a fixed-width number: ``width`` bytes a row
    BOOLS = 1  # a bit a row
    TEXTS = 2  # offsets and bytes: a string (checked UTF-8) or binary column
    LIST = 3  # offsets into ``children[0]``, the elements
    MAP = 4  # offsets into ``children[0]``, a STRUCT of key and value
    STRUCT = 5  # ``children``: a column per field of ``plan``, by slot

_INITIAL = 64  # bytes a buffer starts with
_RETIRED = 2  # generations of buffers handed to batches, kept to reuse once free (1)
_SPAN = 64 * 1024  # the bytes of frames decode_stream checks, then walks, at a time (4)
_LOW_64 = (1 << 64) - 1


class Column:
    """The buffers of one Arrow array being built, and how its rows are written (1, 2)."""

    def __init__(
        self,
        shape: int,
        field: FieldPlan | None,
        nullable: bool,
        *,
        width: int = 0,
        large: bool = False,
        children: list[Column] | tuple[Column, ...] | None = None,
        plan: MessagePlan | None = None,
    ) -> None:
        if _is_built(self):
            raise RuntimeError("a Column is built once")
        members = tuple(children) if children is not None else ()
        if not all(isinstance(child, Column) and _is_built(child) for child in members):
            raise TypeError("a column's children are columns, built")
        if shape == STRUCT:
            if not isinstance(plan, MessagePlan) or len(members) != len(plan.fields_by_slot):
                raise ValueError("a STRUCT column has the plan of its message and a child a field")
        elif shape in (LIST, MAP):
            if len(members) != 1 or (shape == MAP and _shape_of(members[0]) != STRUCT):
                raise ValueError("a LIST or MAP column has one child: its elements or entries")
        elif shape not in (FIXED, BOOLS, TEXTS) or (shape == FIXED and width not in (4, 8)):
            raise ValueError(f"no column of shape {shape} and width {width}")
        self.shape = shape
        self.field = field  # the field whose values it holds (None: the root, map entries)
        self.nullable = nullable
        self.width = width
        self.offset_width = 8 if large else 4
        self.children = members
        self.plan = plan
        # A STRUCT's children by field number, for the numbers its plan finds by index
        # (None where none is): how the walk finds a field's column from its tag.
        self.numbered: tuple[Column | None, ...] = ()
        if plan is not None:
            self.numbered = tuple(
                None if field is None else members[field.slot] for field in plan.numbered
            )
        # The wire type of the plain values this column holds, on which the walk writes
        # them by its short path (_plain): numbers, bools, strings and bytes; -1 for a
        # closed enum's numbers (a value may be dropped), a message's, and any other column.
        self.kind = -1 if field is None else field.kind
        plain = field is not None and (
            (shape in (FIXED, BOOLS) and field.closed_enum is None)
            or (shape == TEXTS and field.kind != MESSAGE)
        )
        self.plain_wire = field.wire_type if plain else -1  # type: ignore[union-attr]
        # A STRUCT's children by one-byte tag, as its plan's fields (see its by_tag): the
        # walk's short path, an index for a tag it need not read, check or look up.
        self.by_tag: tuple[Column | None, ...] = ()
        if plan is not None:
            self.by_tag = tuple(
                None if tagged is None else members[tagged.slot] for tagged in plan.by_tag
            )
        # The walk reads both tuples through their items, with no reference counted.
        self.children_at = _items_of(self.children)
        self.by_tag_at = _items_of(self.by_tag)
        self.checker: Any = None  # a Decoder of a message kept encoded (_check_kept)
        self.oneof: Oneof | None = None  # the oneof its field is a member of (join_oneof)
        self.oneof_index = 0  # its place among the oneof's members
        self.length = 0  # rows written; a child may have fewer than its parent (2)
        self.values_size = 0  # bytes written of the values, and of the offsets
        self.offsets_size = 0
        # The buffers of the last batches (newest first): (validity, values, offsets) and
        # the bytes of each written, for reuse once no array holds them (1).
        self.retired: list[tuple[bytearray, bytearray, bytearray, int, int, int]] = []
        self._start(False)
        self.built = True  # what the walk trusts is set, once

    def clear(self, sized: bool = False) -> None:
        """Start over with no rows, the buffers retired (Arrow arrays may hold them) (1):
        ``sized``, each to grow at once as large as the rows written used, and an eighth
        more, for a batch like the last to fill without growing again."""
        self._retire()
        self._start(sized)
        for child in self.children:
            cython.cast(Column, child).clear(sized)

    def let_go(self) -> None:
        """Keep no retired buffers, and small ones (a column with no rows, at rest)."""
        self.retired = []
        self._start(False)
        for child in self.children:
            cython.cast(Column, child).let_go()

    def _retire(self) -> None:
        """Keep the buffers, handed to a batch, for reuse once no array holds them (1)."""
        self.retired.insert(
            0,
            (
                self.validity,
                self.values,
                self.offsets,
                self._bitmap_written(),
                self.values_size,
                self.offsets_size,
            ),
        )
        del self.retired[_RETIRED:]

    def _start(self, sized: bool) -> None:
        """Have no rows, and small new buffers until the first growth (see :meth:`_grow`)."""
        if sized:
            bitmap = self._bitmap_written()
            self.hint = (_sized(bitmap), _sized(self.values_size), _sized(self.offsets_size))
        else:
            self.hint = (0, 0, 0)
        self.validity = _small_buffer()
        self.values = _small_buffer()
        self.offsets = _small_buffer()
        self.fresh = True
        self.length = 0
        self.values_size = 0
        self._moved()
        if self.shape in (TEXTS, LIST, MAP):
            self.offsets_size = self.offset_width  # the first offset, 0
        else:
            self.offsets_size = 0

    def _bitmap_written(self) -> int:
        """The bytes of the validity bitmap written (none: a column without nulls keeps none)."""
        return (self.length + 7) >> 3 if self.nullable else 0

    def held(self) -> int:
        """The bytes of the buffers this column and those under it keep, retired too."""
        total = len(self.validity) + len(self.values) + len(self.offsets)
        for generation in self.retired:
            total += len(generation[0]) + len(generation[1]) + len(generation[2])
        for child in self.children:
            total += cython.cast(Column, child).held()
        return total

    def buffers(self) -> tuple[Any, Any, Any]:
        """The validity bitmap (None if no row is null), offsets and values written, as
        memoryviews of the buffers."""
        validity = memoryview(self.validity)[: (self.length + 7) >> 3] if self.nullable else None
        offsets = memoryview(self.offsets)[: self.offsets_size]
        values = memoryview(self.values)[: self.values_size]
        return validity, offsets, values

    # --- rows (2, 3) ------------------------------------------------------------

    def begin(self) -> None:
        """Begin a row of a STRUCT, present."""
        self._mark()

    def catch_up(self, row: int) -> None:
        """Give the column ``row`` rows: those it lacks are absent (2)."""
        if row > self.length:  # (most often it has them: a check, no call)
            self._fill(row)

    def _fill(self, row: int) -> None:
        """Give the column absent rows up to ``row``, past its last (see :meth:`catch_up`)."""
        gap = row - self.length
        if self.nullable and (row + 7) >> 3 > self.validity_room:
            self._grow(self.validity, (row + 7) >> 3)  # their bits are 0: null
        if self.shape == FIXED:
            self._room(gap * self.width)  # zero
            self.values_size += gap * self.width
        elif self.shape == BOOLS:
            self._room(((row + 7) >> 3) - self.values_size)  # false
            self.values_size = (row + 7) >> 3
        elif self.shape != STRUCT:  # (its children catch up as they are written)
            # a string or bytes ends where the last did; a list's rows end with the
            # elements appended so far, which are its open row's (the gap's first)
            if self.shape == TEXTS:
                end = self.values_size
            else:
                end = cython.cast(Column, self.children[0]).length
            self._offset(end, gap)
        self.length = row

    def complete(self) -> None:
        """Catch every column under this one up with its parent (at a batch's end) (2)."""
        for child in self.children:
            if self.shape == STRUCT:
                cython.cast(Column, child).catch_up(self.length)
            cython.cast(Column, child).complete()

    def truncate(self, row: int) -> None:
        """Cut the column back to its first ``row`` rows (3), setting what is cut to zero
        (a LIST's or MAP's open row is row ``length``: it is cut too)."""
        if row < self.length or (row == self.length and self.shape in (LIST, MAP)):
            if self.nullable:
                _zero_bits(self.validity_at, row, self.length)
            if self.shape == FIXED:
                _zero_bytes(self.values_at, row * self.width, self.values_size)
                self.values_size = row * self.width
            elif self.shape == BOOLS:
                _zero_bits(self.values_at, row, self.length)
                self.values_size = (row + 7) >> 3
            elif self.shape == TEXTS:
                self.values_size = self._offset_at(row)
                self.offsets_size = (row + 1) * self.offset_width
            elif self.shape == LIST or self.shape == MAP:
                cython.cast(Column, self.children[0]).truncate(self._offset_at(row))
                self.offsets_size = (row + 1) * self.offset_width
            else:  # STRUCT
                for child in self.children:
                    cython.cast(Column, child).truncate(row)
            self.length = row

    # --- values (2) ---------------------------------------------------------------

    def put_bits(self, bits: int) -> None:
        """Append a number of a FIXED column: its ``width`` low bytes, little-endian."""
        if self.nullable:
            self._mark()
        else:
            self.length += 1  # the common case: a column with no nulls keeps no bitmap
        if self.values_size + self.width > self.values_room:
            self._grow(self.values, self.values_size + self.width)
        write_le(self.values_at, self.values_size, bits, self.width)
        self.values_size += self.width

    def put_bool(self, value: bool) -> None:
        self._mark()
        row = self.length - 1
        if (row >> 3) >= self.values_room:
            self._grow(self.values, (row >> 3) + 1)
        if value:
            _set_bit(self.values_at, row)
        self.values_size = (row >> 3) + 1

    def put_text(self, data: Any, start: int, end: int) -> None:
        """Append bytes ``data[start:end]`` to a TEXTS column."""
        self._mark()
        size = end - start
        self._room(size)
        if cython.compiled:
            codec_copy_value(
                self.values_at + self.values_size, cython.cast(cython.p_char, data + start), size
            )
        else:
            self.values_at[self.values_size : self.values_size + size] = data[start:end]
        self.values_size += size
        self._offset(self.values_size, 1)

    def extend_text(self, data: Any, start: int, end: int) -> None:
        """Append bytes ``data[start:end]`` to the last row of a TEXTS column."""
        self.offsets_size -= self.offset_width
        self.length -= 1
        self.put_text(data, start, end)

    # --- buffers (1) --------------------------------------------------------------

    def _mark(self) -> None:
        """Append a row, valid (the bitmap of a column that has no nulls is not kept)."""
        row = self.length
        if self.nullable:
            if (row >> 3) >= self.validity_room:
                self._grow(self.validity, (row >> 3) + 1)
            _set_bit(self.validity_at, row)
        self.length = row + 1

    def _room(self, size: int) -> None:
        if self.values_size + size > self.values_room:
            self._grow(self.values, self.values_size + size)

    def _grow(self, data: bytearray, end: int) -> None:
        """Make ``data``, one of the buffers, hold ``end`` bytes, the new ones zero (1).

        At its first growth in a batch, the column takes the buffers of the newest
        earlier batch that no array holds any more, if there is one: likely still in
        the caches, and no fresh pages. Else a buffer grows at least to the size
        hinted by :meth:`clear`.
        """
        role = 0 if data is self.validity else 1 if data is self.values else 2
        if self.fresh:
            self.fresh = False
            if self._adopt():
                data = self.validity if role == 0 else self.values if role == 1 else self.offsets
        if len(data) < end:
            resize_zeroed(data, grown(len(data), max(end, self.hint[role])))
        self._moved()

    def _adopt(self) -> bool:
        """Take the newest retired generation of buffers that no array holds, with what
        is written so far copied in; False if each is held."""
        reused = _free_generation(self.retired)
        if reused is None:
            return False
        self.validity = _taken_over(reused[0], reused[3], self.validity, self._bitmap_written())
        self.values = _taken_over(reused[1], reused[4], self.values, self.values_size)
        self.offsets = _taken_over(reused[2], reused[5], self.offsets, self.offsets_size)
        return True

    def _moved(self) -> None:
        """Note where each buffer's bytes now are, and how many it has room for: the walk
        writes through these, not through the ``bytearray``s (compiled: C pointers)."""
        self.validity_at = _pointer(self.validity)
        self.validity_room = len(self.validity)
        self.values_at = _pointer(self.values)
        self.values_room = len(self.values)
        self.offsets_at = _pointer(self.offsets)
        self.offsets_room = len(self.offsets)

    def _offset(self, offset: int, rows: int) -> None:
        """Append ``rows`` rows ending at ``offset``: the row just written, and the empty
        rows after it."""
        if offset >> (8 * self.offset_width - 1):
            raise OverflowError(
                f"column {self._name()} would hold more than 2 GiB in one batch:"
                " read smaller batches, or ask for large_types"
            )
        size = self.offsets_size + rows * self.offset_width
        if size > self.offsets_room:
            self._grow(self.offsets, size)
        for _ in range(rows):
            write_le(self.offsets_at, self.offsets_size, offset, self.offset_width)
            self.offsets_size += self.offset_width

    def _offset_at(self, row: int) -> int:
        return read_le(self.offsets_at, row * self.offset_width, self.offset_width)

    def _name(self) -> str:
        return "<root>" if self.field is None else self.field.label


class Oneof:
    """The columns of a oneof's members, and which of them holds the value of which row:
    the member written last, and its row (3)."""

    def __init__(self, members: list[Column]) -> None:
        self.members = tuple(members)
        self.row = -1
        self.holder = 0


def join_oneof(members: list[Column]) -> None:
    """Make the fields of ``members``, columns of one STRUCT, the members of a oneof: a
    value written to one drops the value of its row the others hold (3)."""
    if not all(isinstance(member, Column) and _is_built(member) for member in members):
        raise TypeError("the members of a oneof are columns, built")
    if any(cython.cast(Column, member).oneof is not None for member in members):
        raise ValueError("a column is a member of one oneof")
    oneof = Oneof(members)
    for index, member in enumerate(members):
        cython.cast(Column, member).oneof = oneof
        cython.cast(Column, member).oneof_index = index


def _items_of(items: tuple[Any, ...]) -> Any:
    """Compiled, a pointer to the items of ``items``, a tuple its column holds and never
    replaces, to read them by index without a reference counted; uncompiled, the tuple."""
    if cython.compiled:
        return codec_items(items)
    return items


def _sized(used: int) -> int:
    """The bytes a buffer starts with for a batch like one that used ``used``."""
    return max(_INITIAL, used + (used >> 3))


def _free_generation(retired: list[Any]) -> Any:
    """Take from ``retired`` the newest generation of buffers that no view (no Arrow
    array) holds any more; None if each is held."""
    for index in range(len(retired)):
        generation = retired[index]
        if not (
            is_exported(generation[0]) or is_exported(generation[1]) or is_exported(generation[2])
        ):
            del retired[index]
            return generation
    return None


def _small_buffer() -> bytearray:
    """A new buffer of :data:`_INITIAL` bytes, zero (compiled, made in C: calling
    ``bytearray`` takes 70 ns, and a batch's columns start over with three each)."""
    if cython.compiled:
        data = PyByteArray_FromStringAndSize(cython.NULL, _INITIAL)
        memset(_pointer(data), 0, _INITIAL)
        return data
    return bytearray(_INITIAL)


def _taken_over(data: bytearray, used: int, current: bytearray, written: int) -> bytearray:
    """``data``, a retired buffer, holding what ``current`` holds: the ``used`` bytes its
    batch wrote set to zero, then ``current``'s first ``written`` bytes copied in (past
    ``used``, a buffer that must be zero is: see :meth:`Column.truncate`)."""
    _zero_bytes(_pointer(data), 0, min(used, len(data)))
    if len(data) < len(current):
        resize_zeroed(data, len(current))
    if cython.compiled:
        memcpy(_pointer(data), _pointer(current), written)
    else:
        data[:written] = current[:written]
    return data


def _shape_of(column: Column) -> int:
    return column.shape


def _is_built(column: Column) -> bool:
    """Whether ``column``'s ``__init__`` ran to its end (not an object of ``__new__``)."""
    return column.built


def _set_bit(data: Any, index: int) -> None:
    """Set bit ``index`` of the bitmap at ``data`` (least significant first)."""
    data[index >> 3] |= 1 << (index & 7)


def _zero_bits(data: Any, start: int, stop: int) -> None:
    """Set bits ``start`` to ``stop`` of the bitmap at ``data`` to 0."""
    for index in range(start, stop):
        data[index >> 3] &= ~(1 << (index & 7)) & 0xFF


def _zero_bytes(data: Any, start: int, stop: int) -> None:
    """Set bytes ``start`` to ``stop`` at ``data`` to 0."""
    if cython.compiled:
        memset(data + start, 0, stop - start)
    else:
        data[start:stop] = bytes(stop - start)


# --- the walk (2, 3, 4) ---------------------------------------------------------------


class Walk:
    """The state of a walk over frames: where its bytes sit in the stream, its limit."""

    def __init__(self, view: memoryview, base: int, max_depth: int) -> None:
        self.view = view
        self.base = base  # the stream offset of the view's first byte
        self.max_depth = max_depth
        self.stop = len(view)  # the view's end: its bytes up to it may be loaded
        self.body = 0  # where the length-delimited value read last begins
        # A value read but not written (a closed enum's undeclared number): for the
        # message being read to note, as it notes a field passed over.
        self.dropped_value = False
        self.dropped = False  # whether the message read last passed over a field
        self.checkers: list[Any] = []  # the decoder states taken by _check_kept


def decode_frames(root: Column, view: Any, base: int, max_depth: int = DEFAULT_MAX_DEPTH) -> int:
    """Decode the frames of ``view``, complete frames whose prefixes are checked, each
    into a row of ``root``, a STRUCT column; return how many (``base``: the stream
    offset of ``view``)."""
    walk = _walk_of(root, view, base, max_depth)
    try:
        return _rows(root, _bytes_of(view), 0, len(view), walk)
    finally:
        end_checks(walk.checkers)


def decode_stream(
    root: Column,
    view: Any,
    pos: int,
    limit: int,
    base: int,
    max_depth: int,
    max_frame_size: int,
    strict: bool,
) -> int:
    """Decode up to ``limit`` frames of ``view``, a stream held in memory, from ``pos``,
    each into a row of ``root``; return where they end. It stops before a frame that is
    cut or has a bad prefix (``codec.framing.frame_error`` says which): at ``pos`` if
    that is the first. ``base``: the stream offset of ``view``.

    The frames are checked, then walked, :data:`_SPAN` bytes at a time: the walk reads
    them while the check left them in the cache (a stream read cold from memory takes a
    tenth longer checked whole first)."""
    walk = _walk_of(root, view, base, max_depth)  # made before the check: nothing runs after
    data = _bytes_of(view)
    try:
        while limit > 0 and pos < len(view):
            end = frames_end(view, pos, limit, max_frame_size, strict, _SPAN)
            if end == pos:
                break
            limit -= _rows(root, data, pos, end, walk)
            pos = end
    finally:
        end_checks(walk.checkers)
    return pos


def _walk_of(root: Column, view: Any, base: int, max_depth: int) -> Walk:
    """A walk of ``view``'s frames into ``root``; TypeError unless ``root`` is a built
    STRUCT column."""
    if not _is_built(root) or root.shape != STRUCT:
        raise TypeError("frames are decoded into the STRUCT column of their message")
    return Walk(view, base, max_depth)


def _rows(root: Column, data: Any, pos: int, end: int, walk: Walk) -> int:
    """Decode the complete, checked frames of ``data[pos:end]`` into rows of ``root``;
    return how many. A frame that fails leaves the rows before it whole."""
    rows = 0
    row = root.length
    try:
        while pos < end:
            n = 1
            while data[pos + n - 1] >= 0x80:
                n += 1
            body = pos + n
            pos = body + cython.cast(cython.Py_ssize_t, varint_value(data, body - n, n))
            row = root.length
            root.begin()
            _fields(root, data, body, pos, walk, 0, 0)
            rows += 1
    except BaseException:
        root.truncate(row)  # the rows before the bad frame stay whole
        raise
    return rows


def _fields(
    column: Column, data: Any, pos: int, end: int, walk: Walk, depth: int, group: int
) -> int:
    """Write the fields in ``data[pos:end]`` into the open row of ``column``, a STRUCT;
    return where they end (a group's end-group tag, for ``group``, the group's number)."""
    if depth > walk.max_depth:
        raise DepthLimitError(f"messages nested deeper than {walk.max_depth}", walk.base + pos)
    row = column.length - 1
    dropped = False  # a field passed over, or a value not written
    while pos < end:
        start = pos
        # The field's column, not held: the column's tuples hold it and are never replaced.
        child = cython.cast("PyObject *", None)
        if data[pos] < 0x80:  # a one-byte tag (a field numbered up to 15): one index
            child = column.by_tag_at[data[pos]]
        if cython.cast(object, child) is not None:
            tag = data[pos]
            pos += 1
            if cython.cast(Column, child).plain_wire == tag & 7:  # the most common case
                pos = _plain(cython.cast(Column, child), data, pos, end, tag & 7, walk, row)
                continue
        else:  # any other tag, checked; or one of a field the message does not have
            head = read_tag(data, pos, end, walk.base)
            tag = head >> 3
            pos += head & 7
            if tag & 7 == EGROUP:
                if group and tag >> 3 == group:
                    return pos
                stray_end_group(tag >> 3, start, walk.base)
            child = _column_numbered(column, tag >> 3)
        after = -1
        if cython.cast(object, child) is None:
            pass  # a number the message does not have
        elif cython.cast(Column, child).plain_wire == tag & 7:  # (numbered 16 and up)
            after = _plain(cython.cast(Column, child), data, pos, end, tag & 7, walk, row)
        else:
            field = cython.cast(Column, child).field
            if (
                cython.cast(Column, child).shape <= TEXTS
                and field.kind != MESSAGE
                and tag & 7 == field.wire_type
            ):  # a closed enum's number, of a singular field
                after = _value(
                    cython.cast(Column, child), field, data, pos, end, tag & 7, walk, row, depth
                )
            else:
                after = _field(
                    cython.cast(Column, child), field, data, pos, end, tag & 7, walk, depth, row
                )
            if walk.dropped_value:
                walk.dropped_value = False
                dropped = True
        if after >= 0:
            pos = after
        else:  # unknown, an extension, or not on a wire type its field takes (3)
            pos = skip_field(data, start, pos, end, tag, walk.base, depth, walk.max_depth)
            dropped = True
    if group:
        raise TruncatedError("message ends inside a group", walk.base + pos)
    walk.dropped = dropped
    return pos


def _column_numbered(column: Column, number: int) -> Any:
    """The child of ``column``, a STRUCT, holding field ``number``, or None; not held."""
    numbered = column.numbered
    if number < len(numbered):
        return PyTuple_GET_ITEM(numbered, number)
    field = _field_numbered(column.plan, number)  # type: ignore[arg-type]  # a STRUCT's
    if field is None:
        return cython.cast("PyObject *", None)
    return PyTuple_GET_ITEM(column.children, field.slot)


def _plain(column: Column, data: Any, pos: int, end: int, wire: int, walk: Walk, row: int) -> int:
    """Write the plain value at ``pos``, on ``column.plain_wire``, as the value of row
    ``row`` of its singular field (3); return where it ends."""
    if wire == LEN:
        return _text(column, data, pos, end, walk, row, 0)  # (a plain value is no message)
    if wire == VARINT:
        n = varint_length_in(data, pos, end, walk.stop, walk.base)
        bits = _varint_bits(column.kind, varint_value(data, pos, n))
        after = pos + n
    else:
        width = 4 if wire == I32 else 8
        after = fixed_end(pos, end, walk.base, width)
        bits = read_le(data, pos, width)
    _replace(column, row)
    if column.shape == BOOLS:
        column.put_bool(bits != 0)
    else:
        column.put_bits(bits)
    return after


def _field(
    child: Column,
    field: FieldPlan,
    data: Any,
    pos: int,
    end: int,
    wire: int,
    walk: Walk,
    depth: int,
    row: int,
) -> int:
    """Write an occurrence of ``field`` into ``child``, its column; return where it ends,
    or -1 when it is not on a wire type the field takes (an unknown field, for protobuf).
    A number, string or bytes of a singular field on its wire type goes straight to
    :func:`_value` instead."""
    if child.shape == MAP:
        if wire != LEN:
            return -1
        child.catch_up(row)  # its rows before this one end
        entries = cython.cast(Column, child.children[0])
        tag = _next_tag(field, LEN)  # the entries that follow at once are read here
        while True:
            after = _length_end(data, pos, end, walk)
            body = walk.body  # (which the entry's own strings move)
            entry = entries.length
            entries.begin()
            if not _pair(entries, data, body, after, walk, depth + 1):
                entries.truncate(entry)  # read again, as any message is
                entries.begin()
                _fields(entries, data, body, after, walk, depth + 1, 0)
                if walk.dropped:  # an entry with more than its key and value is not read (3)
                    entries.truncate(entry)
            if after >= end or data[after] != tag:
                return after
            pos = after + 1
    if child.shape == LIST:
        child.catch_up(row)  # its rows before this one end
        items = cython.cast(Column, child.children[0])
        if packed_run(field, wire):
            after = _length_end(data, pos, end, walk)
            pos = walk.body
            packed_width(field.wire_type, pos, after, walk.base)
            if items.shape == FIXED and not items.nullable and field.closed_enum is None:
                _packed_numbers(items, field, data, pos, after, walk)
                return after
            while pos < after:
                pos = _value(items, field, data, pos, after, field.wire_type, walk, -1, depth)
            return after
        if wire != field.wire_type:
            return -1
        tag = _next_tag(field, wire)  # the elements that follow at once are read here
        while True:
            if items.shape == STRUCT:
                items.begin()
                pos = _message(items, field, data, pos, end, walk, depth)
            else:
                pos = _value(items, field, data, pos, end, wire, walk, -1, depth)
            if pos >= end or data[pos] != tag:
                return pos
            pos += 1
    if wire != field.wire_type:
        return -1
    if child.shape == TEXTS and field.kind == MESSAGE and child.length == row + 1:
        after = _length_end(data, pos, end, walk)  # a message kept encoded, met again:
        _check_kept(child, walk.body, after, walk, depth + 1)
        child.extend_text(data, walk.body, after)  # its bytes go on, as a merge reads them
        return after
    if child.shape == STRUCT:
        if child.length <= row:  # else met before in this row: merged (3)
            _clear_others(child, row)
            child.catch_up(row)
            child.begin()
        return _message(child, field, data, pos, end, walk, depth)
    return _value(child, field, data, pos, end, wire, walk, row, depth)  # a message kept encoded


def _next_tag(field: FieldPlan, wire: int) -> int:
    """The byte of ``field``'s tag on ``wire`` if it takes one (numbers up to 15), for
    :func:`_field` to read the occurrences that follow at once in its loop; else 0x100,
    which no byte is."""
    tag = field.number << 3 | wire
    return tag if tag < 0x80 else 0x100


def _pair(entries: Column, data: Any, pos: int, end: int, walk: Walk, depth: int) -> bool:
    """Write the map entry ``data[pos:end]``, nested ``depth`` deep, into the open row of
    ``entries`` if it is the common one: its key, then its value, each once and plain
    (see :func:`_plain`). False, for :func:`_fields` to read it as any message, otherwise."""
    # The entry's columns, not held: the tuple holds them and is never replaced.
    keys = entries.children_at[0]
    values = entries.children_at[1]
    key_wire = cython.cast(Column, keys).plain_wire
    value_wire = cython.cast(Column, values).plain_wire
    if depth > walk.max_depth or key_wire < 0 or value_wire < 0:
        return False
    entry = entries.length - 1
    if pos >= end or data[pos] != (1 << 3 | key_wire):  # the key's tag, one byte
        return False
    pos = _plain(cython.cast(Column, keys), data, pos + 1, end, key_wire, walk, entry)
    if pos >= end or data[pos] != (2 << 3 | value_wire):  # the value's
        return False
    return _plain(cython.cast(Column, values), data, pos + 1, end, value_wire, walk, entry) == end


def _message(
    column: Column, field: FieldPlan, data: Any, pos: int, end: int, walk: Walk, depth: int
) -> int:
    """Write the sub-message or group at ``pos`` into the open row of ``column``."""
    if field.kind == GROUP:
        return _fields(column, data, pos, end, walk, depth + 1, field.number)
    after = _length_end(data, pos, end, walk)
    _fields(column, data, walk.body, after, walk, depth + 1, 0)
    return after


def _value(
    column: Column,
    field: FieldPlan,
    data: Any,
    pos: int,
    end: int,
    wire: int,
    walk: Walk,
    row: int,
    depth: int,
) -> int:
    """Write the number, string or bytes at ``pos`` into ``column``: appended, or as the
    value of row ``row`` of a singular field (``row`` >= 0), which replaces the row's (3);
    ``depth``: that of the message holding it. Return where it ends."""
    kind = field.kind
    if wire == VARINT:
        n = varint_length_in(data, pos, end, walk.stop, walk.base)
        raw = varint_value(data, pos, n)
        if field.closed_enum is not None and _int32(raw) not in field.closed_enum:
            walk.dropped_value = True  # kept among the unknown fields: the row stays (3)
            return pos + n
        _replace(column, row)
        if kind == BOOL:
            column.put_bool(raw != 0)
        else:
            column.put_bits(_varint_bits(kind, raw))
        return pos + n
    if wire in (I32, I64):
        width = 4 if wire == I32 else 8
        after = fixed_end(pos, end, walk.base, width)
        _replace(column, row)
        column.put_bits(read_le(data, pos, width))
        return after
    return _text(column, data, pos, end, walk, row, depth)


def _packed_numbers(
    items: Column, field: FieldPlan, data: Any, pos: int, end: int, walk: Walk
) -> None:
    """Append the numbers of the packed run ``data[pos:end]`` (its width checked) to
    ``items``, a FIXED column of no nulls: room made once, for as many varints as the
    run has final bytes, then each element written with no call (a varint of one or two
    bytes read in place). A bad varint raises the struct decoder's error, the elements
    before it appended."""
    wire = field.wire_type
    width = items.width
    at = items.values_size
    if wire != VARINT:
        n = 4 if wire == I32 else 8
        items._room((end - pos) // n * width)
        out = items.values_at
        while pos < end:
            write_le(out, at, read_le(data, pos, n), width)
            at += width
            pos += n
    else:
        kind = field.kind
        items._room(_final_bytes(data, pos, end) * width)
        out = items.values_at
        while pos < end:
            raw = data[pos]
            n = 1
            if raw >= 0x80:
                if pos + 1 < end and data[pos + 1] < 0x80:  # two bytes, also in place
                    raw = (raw & 0x7F) | (data[pos + 1] << 7)
                    n = 2
                else:
                    n = varint_scan(data, pos, end, False)
                    if n <= 0:
                        break
                    raw = varint_value(data, pos, n)
            write_le(out, at, _varint_bits(kind, raw), width)
            at += width
            pos += n
    items.length += (at - items.values_size) // width
    items.values_size = at
    if pos < end:
        varint_length(data, pos, end, walk.base)  # raises for the bad varint at pos


def _final_bytes(data: Any, pos: int, end: int) -> int:
    """How many bytes of ``data[pos:end]`` end a varint (their high bit clear)."""
    if cython.compiled:
        return codec_final_bytes(data + pos, end - pos)
    count = 0
    for index in range(pos, end):
        count += data[index] < 0x80
    return count


def _text(column: Column, data: Any, pos: int, end: int, walk: Walk, row: int, depth: int) -> int:
    """Write the string, bytes or message kept encoded at ``pos`` into ``column``, a TEXTS,
    as :func:`_value` writes a value; return where it ends."""
    after = _length_end(data, pos, end, walk)
    if column.kind == STRING and not _is_utf8(data, walk.body, after):
        raise DecodeError(
            f"string field {column._name()} is not valid UTF-8 (an Arrow string column needs it)",
            walk.base + walk.body,
        )
    if column.kind == MESSAGE:
        _check_kept(column, walk.body, after, walk, depth + 1)
    _replace(column, row)
    column.put_text(data, walk.body, after)
    return after


def _check_kept(column: Column, start: int, end: int, walk: Walk, depth: int) -> None:
    """Check the message of ``column``'s field kept encoded at ``start:end``, nested
    ``depth`` deep, as the struct decoder reads it, so that a bad one raises its error
    (only its bytes are kept)."""
    if column.checker is None:
        plan: MessagePlan = column.field.message  # type: ignore[union-attr,assignment]
        column.checker = Decoder(plan.cls, max_depth=max(walk.max_depth - depth, 0))
    checker = cython.cast(Decoder, column.checker)
    checker.state.begin_checks(walk.checkers, walk.base)  # (once a walk)
    checker.state.check_next(checker.plan, _bytes_of(walk.view), start, end)


def _replace(column: Column, row: int) -> None:
    """Make way for the value of row ``row`` of a singular field (none for ``row`` < 0):
    drop the value it holds, and the other members' of its oneof (3); catch up with the
    row (2)."""
    if row >= 0:
        if column.length > row or column.oneof is not None:
            _clear_others(column, row)
            column.truncate(row)
        column.catch_up(row)


def _clear_others(column: Column, row: int) -> None:
    """Drop the value of row ``row`` that another member of the oneof ``column``'s field is
    in holds, if one does, for ``column`` to hold it (3)."""
    oneof = column.oneof
    if oneof is not None:
        if oneof.row == row and oneof.holder != column.oneof_index:
            holder = PyTuple_GET_ITEM(oneof.members, oneof.holder)  # not held: the tuple's
            cython.cast(Column, holder).truncate(row)
        oneof.row = row
        oneof.holder = column.oneof_index


def _varint_bits(kind: int, raw: int) -> int:
    """The Arrow value of a varint read for ``kind``, as the bits the column stores."""
    # Compiled, C's unsigned types keep the low bits; the uncompiled source masks them.
    # (A constant above 2**31 would make Cython compute with Python ints.)
    if kind == SINT32:
        low = raw  # a uint32_t
        if not cython.compiled:
            low &= 0xFFFFFFFF
        bits = (low >> 1) ^ (0 - (low & 1))
        if not cython.compiled:
            bits &= 0xFFFFFFFF
        return bits
    if kind == SINT64:
        bits = (raw >> 1) ^ (0 - (raw & 1))
        if not cython.compiled:
            bits &= _LOW_64
        return bits
    return raw  # the column keeps its low bytes: int32, uint32 and enum keep 32 bits


def _int32(raw: int) -> int:
    """The number a varint gives an int32 or an enum field: its low 32 bits, signed."""
    if cython.compiled:
        return cython.cast(cython.int, cython.cast(cython.uint, raw))
    raw &= 0xFFFFFFFF
    return raw - (1 << 32) if raw >> 31 else raw


def _length_end(data: Any, pos: int, end: int, walk: Walk) -> int:
    """End of the length-delimited value at ``pos``; it begins at ``walk.body``."""
    bounds = length_end(data, pos, end, walk.base)
    walk.body = pos + (bounds & 7)
    return bounds >> 3


def _is_utf8(data: Any, start: int, end: int) -> bool:
    if cython.compiled:
        if codec_ascii(cython.cast(cython.p_char, data + start), end - start):
            return True
        return codec_utf8_valid(cython.cast(cython.p_char, data + start), end - start)
    try:
        bytes(data[start:end]).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# --- a batch through Arrow's C data interface (1) -------------------------------------


def arrow_batch(root: Column, record_batch: Any, schema: Any) -> Any:
    """The rows of ``root`` as a ``record_batch`` (pyarrow's class) of ``schema``, its
    arrays over the columns' buffers as they are, handed to Arrow in one call through its
    C data interface. The buffers stay held (:func:`is_exported`) until Arrow releases the
    arrays. Compiled only: uncompiled, :meth:`codec.arrow._schema.Layout.batch` makes each
    array with ``pyarrow.Array.from_buffers``."""
    if not _is_built(root) or root.shape != STRUCT:
        raise TypeError("a batch is made of the STRUCT column of its message")
    if cython.compiled:
        batch = codec_batch_new(_nodes(root))
        try:
            _node(batch, root)
        except BaseException:
            codec_batch_free(batch)
            raise
        root_node = codec_batch_root(batch)
        try:  # Arrow moves the root out at once; it releases it if it refuses the batch
            return record_batch._import_from_c(cython.cast(cython.size_t, root_node), schema)
        finally:
            codec_batch_done(batch)
    raise RuntimeError("batches go through Arrow's C data interface in the compiled build")


def _node(batch: Any, column: Column) -> Any:
    """Make the next node of ``batch`` the array of ``column``'s rows, with its children's,
    in the buffers Arrow's layout gives its type (compiled only, as :func:`arrow_batch`)."""
    node = cython.NULL
    if cython.compiled:
        children = column.children
        node = codec_batch_node(batch, len(children))
        for index in range(len(children)):
            node.children[index] = _node(batch, cython.cast(Column, children[index]))
        node.length = column.length
        node.null_count = -1 if column.nullable else 0  # -1: for Arrow to count
        codec_batch_buffer(batch, node, column.validity if column.nullable else None)
        if column.shape == TEXTS or column.shape == LIST or column.shape == MAP:
            codec_batch_buffer(batch, node, column.offsets)
        if column.shape <= TEXTS:  # FIXED, BOOLS or TEXTS
            codec_batch_buffer(batch, node, column.values)
    return node


def _nodes(column: Column) -> int:
    """How many arrays ``column``'s array is made of, its own included."""
    total = 1
    for child in column.children:
        total += _nodes(cython.cast(Column, child))
    return total


def _bytes_of(view: Any) -> Any:
    """The bytes of ``view`` as the walk reads them (compiled: a pointer)."""
    if cython.compiled:
        return cython.cast(cython.p_uchar, PyMemoryView_GET_BUFFER(view).buf)
    return view


if not cython.compiled:
    from codec._pure import fields_as_allocated

    fields_as_allocated(Column, built=False, oneof=None)
