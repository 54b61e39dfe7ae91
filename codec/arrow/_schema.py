"""The Arrow schema of a message type, its column builders, and the arrays they make.

Strategy: one walk of a struct class's plan gives the Arrow type of each
field and the builder that writes it (``codec.arrow._builders``), so the
schema and the builders cannot disagree; finished builders become arrays
over their own buffers, without a copy. The mapping:

* integers, floats and bools to primitive columns of their width; an enum
  to ``int32`` (its number), or with ``enum_names`` to a dictionary column of
  the names of its values (a number the enum does not declare, which an open
  enum may hold, by its digits, so nothing read is lost);
* a string to ``string``, bytes to ``binary`` (``large_string`` and
  ``large_binary`` with ``large_types``, and their lists' offsets 64-bit);
* a message or group to a ``struct``, null where the field is not set; a
  message type met again inside itself (``AnyValue`` in an OTLP ``ArrayValue``)
  to ``binary``, its encoded bytes, since an Arrow type is finite;
* a repeated field to a ``list`` of non-null elements, a map to a ``map``;
* a field with presence (proto2, ``optional``, a oneof member) is null when
  absent; any other reads as its zero, as protobuf reads it.

The same walk gives the readers that write such batches back as frames
(``codec.arrow._writers``), one per builder. A batch to write is checked
against the schema first, column by column, so a mismatch names its
column; its strings, bytes and lists may have 32- or 64-bit offsets, its
fields may be nullable or not, and its enums numbers or names, whatever
``large_types`` and ``enum_names`` say.
"""

from __future__ import annotations

import re
from typing import Any

from codec._wire import KIND_NAMES
from codec.arrow._builders import (
    BOOLS,
    COMPILED,
    FIXED,
    LIST,
    MAP,
    STRUCT,
    TEXTS,
    Column,
    arrow_batch,
    join_oneof,
)
from codec.arrow._writers import Reader, bind_exported, take_widths
from codec.errors import EncodeError, SchemaError
from codec.structs._plan import FieldPlan, MessagePlan

#: Rows in a batch of :func:`codec.arrow.read_batches`, and frames in a part of an
#: indexed file (:func:`codec.arrow.write_index`), unless asked otherwise.
DEFAULT_BATCH_SIZE = 1 << 16

# Arrow's type of each fixed-width kind, and its width in bytes.
_FIXED: dict[str, tuple[str, int]] = {
    "int32": ("int32", 4),
    "sint32": ("int32", 4),
    "sfixed32": ("int32", 4),
    "enum": ("int32", 4),
    "int64": ("int64", 8),
    "sint64": ("int64", 8),
    "sfixed64": ("int64", 8),
    "uint32": ("uint32", 4),
    "fixed32": ("uint32", 4),
    "uint64": ("uint64", 8),
    "fixed64": ("uint64", 8),
    "float": ("float32", 4),
    "double": ("float64", 8),
}


def plan_for(message_type: Any) -> MessagePlan:
    """The plan of a struct class, or of the struct class of a pb2 message class."""
    plan = getattr(message_type, "__plan__", None)
    if not isinstance(plan, MessagePlan):
        import codec

        try:
            plan = codec.struct(message_type).__plan__
        except TypeError:
            raise TypeError(
                f"{message_type!r} is neither a struct class nor a protobuf message class"
            ) from None
    return plan


def schema_options(options: dict[str, Any]) -> dict[str, Any]:
    """The options of ``read_batches`` that shape the schema, of those given."""
    return {name: options[name] for name in ("large_types", "enum_names") if name in options}


class Layout:
    """A message type's Arrow schema and the root column that builds its batches."""

    def __init__(
        self, pa: Any, plan: MessagePlan, large_types: bool, enum_names: bool = False
    ) -> None:
        self._pa = pa
        self.key = (plan, large_types, enum_names)  # what the layouts kept are found by
        self._large = large_types
        self._enum_names = enum_names
        fields, columns = self._members(plan, (plan.full_name,))
        self.schema = pa.schema(fields)
        self.root = Column(STRUCT, None, False, children=columns, plan=plan)
        self._reader: Reader | None = None  # made on first use: a layout that only reads
        self._checked: Any = None  # the schema of the last batch bound, which matched
        self._exportable = False  # whether batches of it are bound through the C interface

    @property
    def reader(self) -> Reader:
        """The root of the readers that write batches of the schema as frames."""
        if self._reader is None:
            self._reader = _reader_of(self.root, "")
        return self._reader

    def batch(self, more: bool = False) -> Any:
        """The rows written so far as a ``RecordBatch``; the builders start over, sized
        for a batch like it if ``more`` are to come."""
        root = self.root
        root.complete()
        if COMPILED and root.children and not self._enum_names:
            batch = arrow_batch(root, self._pa.RecordBatch, self.schema)  # one call
        elif root.children:
            arrays = [
                self._array(field.type, column)
                for field, column in zip(self.schema, root.children, strict=True)
            ]
            batch = self._pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        else:  # a message without fields: its rows are counted by a struct array of none
            rows = self._pa.StructArray.from_buffers(self._pa.struct([]), root.length, [None])
            batch = self._pa.RecordBatch.from_struct_array(rows)
        root.clear(more)
        return batch

    def bind(self, batch: Any) -> int:
        """Have the readers read ``batch``, a ``RecordBatch``, once its schema is checked;
        return its rows."""
        schema = batch.schema
        root = self.reader
        if self._checked is None or not schema.equals(self._checked):
            _check_type(self._pa, self._pa.struct(self.schema), self._pa.struct(schema), "")
            exportable = take_widths(root, self._pa, schema)
            self._exportable = COMPILED and exportable
            self._checked = schema
        if self._exportable and getattr(batch, "is_cpu", False):
            return bind_exported(root, batch)  # in one export (compiled)
        for reader, array in zip(root.children, batch.columns, strict=True):
            self._bind(reader, array, array.offset)
        root.bind(0, batch.num_rows, None, None, None, 0)
        return root.size

    def _bind(self, reader: Reader, array: Any, shift: int) -> None:
        """Bind ``reader`` and its children to ``array`` and its children's arrays."""
        types = self._pa.types
        buffers = array.buffers()  # a buffer not in main memory has no bytes to view
        if types.is_dictionary(array.type):  # an enum's names (see _numbers_of)
            array = _numbers_of(self._pa, reader, array)
            buffers = array.buffers()
        validity = buffers[0] if array.null_count else None
        size = array.offset + len(array)
        shape = reader.shape
        if shape == STRUCT:
            for slot, child in enumerate(reader.children):
                member = array.field(slot)
                self._bind(child, member, member.offset - array.offset)
            reader.bind(shift, size, validity, None, None, 0)
        elif shape in (LIST, MAP):
            items = array.values
            self._bind(reader.children[0], items, items.offset)
            reader.bind(shift, size, validity, buffers[1], None, len(items))
        elif shape == TEXTS:
            data = buffers[2]
            span = 0 if data is None else data.size
            reader.bind(shift, size, validity, buffers[1], data, span)
        else:
            reader.bind(shift, size, validity, None, buffers[1], 0)

    # --- the schema and the builders, from the plan --------------------------------

    def _members(self, plan: MessagePlan, path: tuple[str, ...]) -> tuple[list[Any], list[Column]]:
        """The Arrow fields of a message's fields, by slot, and their builders."""
        fields = []
        columns = []
        for field in plan.fields_by_slot:
            arrow_type, column = self._typed(field, path)
            nullable = column.nullable
            fields.append(self._pa.field(field.name, arrow_type, nullable=nullable))
            columns.append(column)
        for slots in plan.oneofs.values():  # a member set clears the others' (not "optional")
            if len(slots) > 1:
                join_oneof([columns[slot] for slot in slots])
        return fields, columns

    def _typed(self, field: FieldPlan, path: tuple[str, ...]) -> tuple[Any, Column]:
        """The Arrow type of ``field`` and its builder."""
        pa = self._pa
        if field.map_key is not None:
            key_type, keys = self._value(field.map_key, False, path)
            value_type, values = self._value(field.map_value, False, path)  # type: ignore[arg-type]
            entries = Column(STRUCT, None, False, children=[keys, values], plan=field.message)
            item = pa.field("value", value_type, nullable=False)
            column = Column(MAP, field, False, children=[entries], large=False)
            return pa.map_(key_type, item), column
        if field.repeated:
            item_type, items = self._value(field, False, path)
            column = Column(LIST, field, False, children=[items], large=self._large)
            list_of = pa.large_list if self._large else pa.list_
            return list_of(pa.field("item", item_type, nullable=False)), column
        return self._value(field, field.presence, path)

    def _value(self, field: FieldPlan, nullable: bool, path: tuple[str, ...]) -> tuple[Any, Column]:
        """The Arrow type of one value of ``field`` and a builder of such values."""
        pa = self._pa
        kind = KIND_NAMES[field.kind]
        if kind in ("message", "group"):
            plan: MessagePlan = field.message  # type: ignore[assignment]
            if plan.full_name in path:  # met again inside itself: its encoded bytes
                if kind == "group":
                    cycle = " -> ".join((*path[path.index(plan.full_name) :], plan.full_name))
                    raise SchemaError(f"{cycle}: a group that contains itself has no Arrow type")
                arrow_type = pa.large_binary() if self._large else pa.binary()
                return arrow_type, Column(TEXTS, field, nullable, large=self._large)
            fields, columns = self._members(plan, (*path, plan.full_name))
            column = Column(STRUCT, field, nullable, children=columns, plan=plan)
            return pa.struct(fields), column
        if kind == "bool":
            return pa.bool_(), Column(BOOLS, field, nullable)
        if kind in ("string", "bytes"):
            if kind == "string":
                arrow_type = pa.large_string() if self._large else pa.string()
            else:
                arrow_type = pa.large_binary() if self._large else pa.binary()
            return arrow_type, Column(TEXTS, field, nullable, large=self._large)
        name, width = _FIXED[kind]
        column = Column(FIXED, field, nullable, width=width)
        if kind == "enum" and self._enum_names:
            return pa.dictionary(pa.int32(), pa.string()), column
        return getattr(pa, name)(), column

    # --- arrays, from the builders ---------------------------------------------------

    def _array(self, arrow_type: Any, column: Column) -> Any:
        pa = self._pa
        validity, offsets, values = column.buffers()
        length = column.length
        bitmap = None if validity is None else pa.py_buffer(validity)
        if pa.types.is_dictionary(arrow_type):  # an enum's numbers, named
            numbers = pa.Array.from_buffers(pa.int32(), length, [bitmap, pa.py_buffer(values)])
            return _named(pa, column.field, numbers)  # type: ignore[arg-type]  # an enum's
        if column.shape == FIXED or column.shape == BOOLS:
            return pa.Array.from_buffers(arrow_type, length, [bitmap, pa.py_buffer(values)])
        if column.shape == TEXTS:
            buffers = [bitmap, pa.py_buffer(offsets), pa.py_buffer(values)]
            return pa.Array.from_buffers(arrow_type, length, buffers)
        if column.shape == STRUCT:
            children = [
                self._array(field.type, child)
                for field, child in zip(arrow_type, column.children, strict=True)
            ]
            return pa.Array.from_buffers(arrow_type, length, [bitmap], children=children)
        child = column.children[0]
        if column.shape == MAP:
            entry_type = pa.struct([arrow_type.key_field, arrow_type.item_field])
            item_type = entry_type
        else:
            item_type = arrow_type.value_type
        items = self._array(item_type, child)
        return pa.Array.from_buffers(
            arrow_type, length, [None, pa.py_buffer(offsets)], children=[items]
        )


# --- enums by name ------------------------------------------------------------------


def _named(pa: Any, field: FieldPlan, numbers: Any) -> Any:
    """The dictionary array of the names of enum ``numbers``: each value's first name, in
    the order the enum declares them, then the digits of numbers it does not declare."""
    import pyarrow.compute as compute

    declared = list(field.enum_type)
    value_set = pa.array([int(member) for member in declared], pa.int32())
    names = [member.name for member in declared]
    indices = compute.index_in(numbers, value_set=value_set)
    if indices.null_count > numbers.null_count:  # numbers the enum does not declare
        others = compute.unique(compute.filter(numbers, compute.is_null(indices))).to_pylist()
        others = sorted(number for number in others if number is not None)
        value_set = pa.concat_arrays([value_set, pa.array(others, pa.int32())])
        names += [str(number) for number in others]
        indices = compute.index_in(numbers, value_set=value_set)
    return pa.DictionaryArray.from_arrays(indices.cast(pa.int32()), pa.array(names, pa.string()))


def _numbers_of(pa: Any, reader: Reader, names: Any) -> Any:
    """The enum numbers of a dictionary array of names (or of numbers' digits), to write:
    an array whose positions are those of ``names``'s buffers (nulls before its offset)."""
    import pyarrow.compute as compute

    field: FieldPlan = reader.field  # type: ignore[assignment]  # an enum column's field
    enum = field.enum_type
    numbers = []
    for name in names.dictionary.to_pylist():
        member = enum.__members__.get(name) if isinstance(name, str) else None
        if member is not None:
            numbers.append(int(member))
        elif isinstance(name, str) and _INT32_DIGITS.fullmatch(name) and _is_int32(int(name)):
            numbers.append(int(name))
        else:
            raise EncodeError(
                f"column {reader.path}: {name!r} is neither a name of {enum.__qualname__} nor"
                " an int32 number"
            )
    try:
        taken = compute.take(pa.array(numbers, pa.int32()), names.indices)
    except IndexError:
        raise ValueError(f"column {reader.path}: a dictionary index is out of range") from None
    if names.offset:
        return pa.concat_arrays([pa.nulls(names.offset, pa.int32()), taken])
    return taken


_INT32_DIGITS = re.compile(r"-?[0-9]{1,10}")


def _is_int32(number: int) -> bool:
    return -(1 << 31) <= number < 1 << 31


# --- the readers, and the schema of a batch to write -----------------------------------


def _reader_of(column: Column, path: str) -> Reader:
    """The reader of the arrays ``column`` builds (``path``: its name in errors)."""
    shape = column.shape
    if shape == STRUCT:
        plan: MessagePlan = column.plan  # type: ignore[assignment]
        children = tuple(
            _reader_of(child, f"{path}.{field.name}" if path else field.name)
            for field, child in zip(plan.fields_by_slot, column.children, strict=True)
        )
        oneofs = tuple(
            tuple(children[slot] for slot in slots)
            for slots in plan.oneofs.values()
            if len(slots) > 1
        )
        required = tuple(children[slot] for slot in _required_slots(plan))
        return Reader(
            STRUCT,
            column.field,
            path or "<row>",
            children=children,
            plan=plan,
            oneofs=oneofs,
            required=required,
        )
    if shape in (LIST, MAP):
        return Reader(shape, column.field, path, children=(_reader_of(column.children[0], path),))
    return Reader(shape, column.field, path, width=column.width)


def _required_slots(plan: MessagePlan) -> list[int]:
    descriptor = getattr(plan.cls, "DESCRIPTOR", None)
    if descriptor is None:
        return []
    return [
        field.slot
        for field in plan.fields_by_slot
        if descriptor.fields_by_name[field.name].is_required
    ]


def _check_type(pa: Any, expected: Any, found: Any, path: str) -> None:
    """EncodeError naming the column at ``path`` if ``found`` is not ``expected``, but
    for the width of offsets and for nullability."""
    types = pa.types
    if types.is_struct(expected):
        if not types.is_struct(found):
            _mismatch(expected, found, path)
        names = [field.name for field in expected]
        given = [field.name for field in found]
        if names != given:
            missing = [name for name in names if name not in given]
            extra = [name for name in given if name not in names]
            where = f"column {path}" if path else "the batch"
            raise EncodeError(
                f"{where} has fields {given}, not {names} (missing {missing}, not in the"
                f" message {extra})"
            )
        for want, have in zip(expected, found, strict=True):
            _check_type(pa, want.type, have.type, f"{path}.{want.name}" if path else want.name)
    elif types.is_map(expected):
        if not types.is_map(found):
            _mismatch(expected, found, path)
        _check_type(pa, expected.key_type, found.key_type, f"{path}.key")
        _check_type(pa, expected.item_type, found.item_type, f"{path}.value")
    elif types.is_list(expected):
        if not (types.is_list(found) or types.is_large_list(found)):
            _mismatch(expected, found, path)
        _check_type(pa, expected.value_type, found.value_type, path)
    elif types.is_string(expected):
        if not (types.is_string(found) or types.is_large_string(found)):
            _mismatch(expected, found, path)
    elif types.is_binary(expected):
        if not (types.is_binary(found) or types.is_large_binary(found)):
            _mismatch(expected, found, path)
    elif types.is_dictionary(expected):  # an enum: its numbers, or a dictionary of names
        named = types.is_dictionary(found) and types.is_integer(found.index_type)
        if not (found == pa.int32() or (named and _is_text(types, found.value_type))):
            _mismatch("an enum's int32 numbers or a dictionary of its names", found, path)
    elif expected != found:
        _mismatch(expected, found, path)


def _is_text(types: Any, arrow_type: Any) -> bool:
    return bool(types.is_string(arrow_type) or types.is_large_string(arrow_type))


def _mismatch(expected: Any, found: Any, path: str) -> None:
    raise EncodeError(f"column {path} is {found}, where the message's schema has {expected}")
