"""codec.arrow.write_frames: Arrow batches back into frames, judged by the struct encoder.

The oracle is codec's struct encoding, itself byte-identical to upb: a
stream read into Arrow (``read_table``) and written back must give the same
bytes, frame for frame, as the struct encoder gave (map entries in their
order, as upb's default). What Arrow can hold and protobuf cannot must be an
EncodeError naming the column and the row, with nothing written; a batch
whose schema differs must name the column; an Arrow array that is not valid
must be a ValueError, never a read outside its buffers.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any

import pytest

pytest.importorskip("pyarrow", reason="codec.arrow needs pyarrow (the arrow extra)")
pytest.importorskip("grpc_tools", reason="the test schemas compile with grpcio-tools")

import pyarrow as pa
from helpers import peerbench
from helpers.messages import ALL, pb2_messages
from helpers.streams import ROOTS, framed, otlp_requests
from hypothesis import given
from hypothesis import strategies as st

import codec
import codec.arrow
from codec.errors import EncodeError, FrameTooLargeError


def rewritten(data: Any, message_type: Any, **options: Any) -> bytes:
    """The frames ``write_frames`` appends, after a frame already in the encoder."""
    encoder = codec.FrameEncoder()
    encoder.write(b"before")
    written = codec.arrow.write_frames(encoder, data, message_type, **options)
    out = bytes(encoder.getbuffer())
    assert out[:7] == framed([b"before"])
    assert written == len(out) - 7
    return out[7:]


def struct_frames(messages: list[Any]) -> bytes:
    """The frames of ``messages`` as codec's struct encoder writes them."""
    encoder = codec.FrameEncoder()
    for message in messages:
        encoder.encode(codec.from_pb2(message) if hasattr(message, "DESCRIPTOR") else message)
    return bytes(encoder.getbuffer())


# --- the bytes of the struct encoder --------------------------------------------------------


@pytest.mark.parametrize("name", ROOTS)
@given(data=st.data())
def test_a_stream_read_into_arrow_writes_back_as_it_was(name: str, data: st.DataObject) -> None:
    cls = ALL[name]
    struct_class = codec.struct(cls)
    messages = data.draw(st.lists(pb2_messages(cls), max_size=5))
    stream = struct_frames([codec.decode(struct_class, m.SerializeToString()) for m in messages])
    batch_size = data.draw(st.integers(1, 6))
    large, named = data.draw(st.booleans()), data.draw(st.booleans(), label="enum_names")
    table = codec.arrow.read_table(
        stream, struct_class, batch_size=batch_size, large_types=large, enum_names=named
    )
    assert rewritten(table, struct_class) == stream


def test_real_streams_of_every_workload() -> None:
    spans = [
        span
        for request in otlp_requests()
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    for messages in (peerbench.records(300), otlp_requests(), spans):
        cls = type(messages[0])
        stream = struct_frames(messages)
        table = codec.arrow.read_table(stream, cls, batch_size=64)
        assert table.to_batches()[0].num_rows == 64 or len(messages) < 64
        assert rewritten(table, cls) == stream
        assert rewritten(table.to_batches(), cls) == stream  # an iterable of batches
        assert (
            rewritten(pa.RecordBatchReader.from_batches(table.schema, table.to_batches()), cls)
            == stream
        )


def test_slices_and_offsets_write_their_own_rows() -> None:
    """Sliced arrays (an offset into their buffers, nested arrays' offsets too) write
    the rows they show, and only those."""
    records = peerbench.records(40)
    cls = type(records[0])
    table = codec.arrow.read_table(struct_frames(records), cls)
    for start, length in ((0, 40), (3, 10), (39, 1), (17, 0)):
        part = table.slice(start, length)
        assert rewritten(part, cls) == struct_frames(records[start : start + length])
    chunked = pa.concat_tables([table.slice(5, 7), table.slice(0, 5), table.slice(12)])
    assert rewritten(chunked, cls) == struct_frames(records[5:12] + records[:5] + records[12:])


def test_a_table_of_python_values_writes_as_pb2_would() -> None:
    """A table a user builds: nullable columns, 64-bit offsets, nulls for absent fields."""
    Record = peerbench.Record
    table = pa.table(
        {
            "title": pa.array(["first", None, ""], pa.large_string()),
            "names": [["x", "y"], None, []],
            "labels": pa.array(
                [[("k", 1)], None, []], pa.map_(pa.string(), pa.field("value", pa.int64()))
            ),
            "origin": pa.array(
                [{"start": 0.0, "end": 1.5}, None, {"start": None, "end": None}],
                pa.struct([("start", pa.float64()), ("end", pa.float64())]),
            ),
            "number": [None, 7, None],
        }
    )
    expected = [
        Record(title="first", names=["x", "y"], labels={"k": 1}, origin={"end": 1.5}),
        Record(number=7),
        Record(origin={}),
    ]
    assert rewritten(_complete(table, Record), Record) == struct_frames(expected)


def _complete(table: Any, message_type: Any) -> Any:
    """``table`` with the schema's columns it lacks, all null, in the schema's order."""
    schema = codec.arrow.schema(message_type)
    columns = [
        table.column(field.name)
        if field.name in table.column_names
        else pa.nulls(table.num_rows, field.type)
        for field in schema
    ]
    return pa.table(columns, names=schema.names)


# --- what protobuf cannot hold, and schemas that differ ---------------------------------------


def _record_table() -> tuple[Any, Any, Any]:
    records = peerbench.records(4)
    cls = codec.struct(type(records[0]))
    return cls, codec.arrow.read_table(struct_frames(records), cls), records


def _with_column(table: Any, name: str, column: Any) -> Any:
    return table.set_column(table.schema.get_field_index(name), name, column)


def _refused(table: Any, cls: Any, error: type[Exception], match: str, **options: Any) -> None:
    """``error`` matching ``match``, and the encoder as it was: the bytes before kept."""
    encoder = codec.FrameEncoder()
    encoder.write(b"kept")
    before = bytes(encoder.getbuffer())
    with pytest.raises(error, match=match):
        codec.arrow.write_frames(encoder, table, cls, **options)
    assert bytes(encoder.getbuffer()) == before
    assert encoder.encode(b"next") == 5  # the encoder still works


def test_nulls_protobuf_cannot_hold_name_column_and_row() -> None:
    cls, table, _ = _record_table()
    names = table.column("names").to_pylist()
    names[2] = ["a", None]
    _refused(
        _with_column(table, "names", pa.array(names, pa.list_(pa.string()))),
        cls,
        EncodeError,
        r"column names, row 2: a list holds a null",
    )
    labels = table.column("labels").to_pylist()
    labels[3] = [("k", None)]
    mapped = pa.array(labels, pa.map_(pa.string(), pa.field("value", pa.int64())))
    _refused(_with_column(table, "labels", mapped), cls, EncodeError, r"labels.value, row 3")


def test_two_members_of_a_oneof_in_one_row_are_refused() -> None:
    Everything = codec.struct(ALL["everything.AllTypes"])
    oneof = next(iter(Everything.__plan__.oneofs.values()))
    first, second = (Everything.__plan__.fields_by_slot[slot] for slot in oneof[:2])
    schema = codec.arrow.schema(Everything)
    row = {field.name: None for field in schema}
    value = {first.name: _some(schema.field(first.name).type)}
    both = dict(value, **{second.name: _some(schema.field(second.name).type)})
    one = pa.Table.from_pylist([dict(row, **value)], schema=_nullable(schema))
    two = pa.Table.from_pylist([dict(row, **value), dict(row, **both)], schema=_nullable(schema))
    assert rewritten(one, Everything) == struct_frames([Everything(**value)])
    _refused(two, Everything, EncodeError, rf"row 1: {first.name} is set too")


def _some(arrow_type: Any) -> Any:
    """A value of ``arrow_type`` that is not its zero."""
    if pa.types.is_struct(arrow_type):
        return {}
    if pa.types.is_string(arrow_type) or pa.types.is_binary(arrow_type):
        return "x" if pa.types.is_string(arrow_type) else b"x"
    if pa.types.is_boolean(arrow_type):
        return True
    return 1


def _nullable(schema: Any) -> Any:
    return pa.schema([field.with_nullable(True) for field in schema])


def test_a_required_field_left_null_is_refused_unless_partial() -> None:
    Required = codec.struct(ALL["legacy.Record"])
    required = [field.name for field in Required.DESCRIPTOR.fields if field.is_required]
    assert required, "legacy.Record declares a required field"
    schema = _nullable(codec.arrow.schema(Required))
    table = pa.Table.from_pylist([{}], schema=schema)
    _refused(table, Required, EncodeError, rf"column {required[0]}, row 0: a required field")
    assert rewritten(table, Required, partial=True) == b"\x00"  # one empty frame


def test_a_proto3_string_must_be_utf8() -> None:
    cls, table, _ = _record_table()
    name = next(
        field.name
        for field in cls.__plan__.fields_by_slot
        if field.utf8 == "strict" and not field.repeated and field.kind == 14
    )
    column = table.column(name).combine_chunks()
    data = b"\xff\xfe" * 4
    offsets = pa.array([0, 2, 4, 6, 8], pa.int32()).buffers()[1]
    bad = pa.Array.from_buffers(pa.string(), 4, [None, offsets, pa.py_buffer(data)])
    assert len(column) == 4
    _refused(_with_column(table, name, bad), cls, EncodeError, rf"column {name}, row 0: .*UTF-8")


# Bytes that are not UTF-8 alone, or that end or begin a character cut in two.
_NOT_UTF8 = (b"\xff", b"\xe2", b"\x82\xac", b"\xed\xa0\x80", b"\xc0\x80", b"\xf4\x90\x80\x80")
_STRING_BYTES = st.one_of(
    st.text(st.characters(max_codepoint=0x7F), max_size=20).map(str.encode),
    st.integers(0, 5000).map(lambda size: b"a" * size),  # runs past the writer's look-ahead
    st.text(max_size=6).map(lambda text: text.encode("utf-8", "surrogatepass")),
    st.sampled_from(_NOT_UTF8),
    st.binary(max_size=6),
)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@given(strings=st.lists(_STRING_BYTES, max_size=40), skip=st.integers(0, 3))
def test_a_string_is_refused_exactly_where_it_is_not_utf8(strings: list[bytes], skip: int) -> None:
    """Strings of every kind, side by side in one column's data, judged by Python's
    decoder: the first that is not UTF-8 is refused by its row, wherever the ones before
    it left off; a column of UTF-8 writes as the struct encoder writes it."""
    Sample = codec.struct(peerbench.Sample)
    offsets = pa.array(list(accumulate(map(len, strings), initial=0)), pa.int32())
    data = [None, offsets.buffers()[1], pa.py_buffer(b"".join(strings))]
    names = pa.Array.from_buffers(pa.string(), len(strings), data)
    zeros = {name: [0] * len(strings) for name in ("ts_ns", "scope_id", "value")}
    schema = codec.arrow.schema(Sample)
    table = pa.table({**zeros, "name": names}, schema=schema).slice(skip)
    rows = strings[skip:]
    bad = next((row for row, string in enumerate(rows) if not _is_utf8(string)), None)
    if bad is None:
        expected = struct_frames([Sample(name=string.decode()) for string in rows])
        assert rewritten(table, Sample) == expected
    else:
        _refused(table, Sample, EncodeError, rf"^column name, row {bad}: .*UTF-8")


def test_a_frame_over_the_limit_writes_nothing() -> None:
    cls, table, records = _record_table()
    size = len(codec.encode(codec.from_pb2(records[0])))
    encoder = codec.FrameEncoder(max_frame_size=size - 1, capacity=16)
    encoder.write(b"kept")
    with pytest.raises(FrameTooLargeError) as caught:
        codec.arrow.write_frames(encoder, table, cls)
    assert caught.value.size == size
    assert bytes(encoder.getbuffer()) == b"\x04kept"


def test_a_schema_that_differs_names_its_column() -> None:
    cls, table, _ = _record_table()
    wrong = table.column("labels").cast(pa.map_(pa.string(), pa.int32()))
    _refused(
        _with_column(table, "labels", wrong), cls, EncodeError, r"column labels\.value is int32"
    )
    _refused(table.drop_columns(["names"]), cls, EncodeError, r"missing \['names'\]")
    _refused(table.append_column("extra", pa.array([1] * 4)), cls, EncodeError, r"\['extra'\]")
    _refused(table.select(list(reversed(table.column_names))), cls, EncodeError, "has fields")
    with pytest.raises(TypeError, match="FrameEncoder"):
        codec.arrow.write_frames(bytearray(), table, cls)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="RecordBatch"):
        codec.arrow.write_frames(codec.FrameEncoder(), [table.to_pydict()], cls)
    with pytest.raises(TypeError, match="RecordBatch or Table"):
        codec.arrow.write_frames(codec.FrameEncoder(), b"frames", cls)


def test_offsets_outside_their_buffers_are_a_value_error() -> None:
    """An Arrow array that is not valid (its buffers changed after it was checked) is
    refused, never read outside its buffers."""
    cls, table, _ = _record_table()
    for bad_offsets in ([0, 1, 2, 2, 9], [0, 2, 1, 2, 2], [0, -1, 2, 2, 2]):
        for item in (pa.list_(pa.string()), pa.string()):
            offsets = bytearray(pa.array([0, 1, 2, 2, 2], pa.int32()).buffers()[1])
            if item == pa.string():
                array = pa.Array.from_buffers(
                    item, 4, [None, pa.py_buffer(offsets), pa.py_buffer(b"ab")]
                )
                name = "title"
            else:
                array = pa.Array.from_buffers(
                    item, 4, [None, pa.py_buffer(offsets)], children=[pa.array(["a", "b"])]
                )
                name = "names"
            offsets[:] = pa.array(bad_offsets, pa.int32()).buffers()[1].to_pybytes()
            _refused(_with_column(table, name, array), cls, ValueError, "not a valid Arrow array")


def test_a_string_reaches_no_further_than_its_last_offset(monkeypatch: Any) -> None:
    """Offsets that go back at a null leave a string before it reaching past the last
    offset: refused, whether the batch is bound through the C data interface or through
    pyarrow's buffers, never written from the bytes past it."""
    import codec.arrow._schema as schema_module

    Sample = codec.struct(peerbench.Sample)
    offsets = pa.array([0, 5, 2, 3], pa.int32()).buffers()[1]
    valid = pa.array([True, False, True]).buffers()[1]
    data = [valid, offsets, pa.py_buffer(b"abcde")]
    names = pa.Array.from_buffers(pa.string(), 3, data, null_count=1)
    zeros = {name: [0] * 3 for name in ("ts_ns", "scope_id", "value")}
    table = pa.table({**zeros, "name": names}, schema=_nullable(codec.arrow.schema(Sample)))
    _refused(table, Sample, ValueError, "column name: .*not a valid Arrow array")
    take_widths = schema_module.take_widths  # the widths still taken, no batch exported
    monkeypatch.setattr(
        schema_module, "take_widths", lambda *arguments: take_widths(*arguments) and False
    )
    codec.arrow._IDLE_LAYOUTS.clear()
    _refused(table, Sample, ValueError, "column name: .*not a valid Arrow array")


def _walk(root: Any, rows: int) -> int:
    """The bytes ``encode_batches`` appends for ``rows`` rows of what ``root`` is bound to."""
    from codec.arrow._writers import encode_batches

    return encode_batches(root, codec.FrameEncoder(), [None], lambda _: rows, False)


def test_the_readers_refuse_what_would_crash_them() -> None:
    """The walk trusts its readers: made once, whole, shaped as Arrow arrays, not nested
    past a limit, and bound to buffers that hold what their positions reach."""
    from codec.arrow._builders import FIXED, LIST, MAP, STRUCT, TEXTS
    from codec.arrow._writers import Reader, Walk

    plan = codec.struct(peerbench.Record).__plan__
    blank = Reader.__new__(Reader)
    with pytest.raises(TypeError, match="STRUCT reader"):
        _walk(blank, 0)
    with pytest.raises(TypeError, match="made"):
        Reader(LIST, plan.fields_by_slot[0], "x", children=(blank,))
    with pytest.raises(ValueError, match="a child a field"):
        Reader(STRUCT, None, "x", children=(), plan=plan)
    with pytest.raises(ValueError, match="width 3"):
        Reader(FIXED, plan.fields_by_slot[0], "x", width=3)
    number = Reader(FIXED, plan.fields_by_slot[0], "n", width=8)
    with pytest.raises(ValueError, match="not lists"):
        Reader(
            LIST,
            plan.fields_by_slot[0],
            "x",
            children=(Reader(LIST, plan.fields_by_slot[0], "x", children=(number,)),),
        )
    with pytest.raises(ValueError, match="a MAP a STRUCT"):
        Reader(MAP, plan.fields_by_slot[0], "x", children=(number,))
    chain_plan = codec.struct(ALL["everything.Chain"]).__plan__
    child, depth = chain_plan.fields_by_slot  # Chain child = 1; int32 depth = 2
    level = Reader(TEXTS, child, "c")  # the innermost kept encoded
    with pytest.raises(ValueError, match="nested deeper than 1000"):
        for _ in range(1001):
            members = (level, Reader(FIXED, depth, "d", width=4))
            level = Reader(STRUCT, child, "c", children=members, plan=chain_plan)
    with pytest.raises(ValueError, match="fewer than 16 bytes"):
        number.bind(0, 2, None, None, b"\x00" * 15, 0)
    for huge in (2**62 + 1, 2**63 - 1):
        with pytest.raises((ValueError, OverflowError)):
            number.bind(huge, 0, None, None, None, 0)
    with pytest.raises(RuntimeError, match="made once"):
        number.__init__(FIXED, plan.fields_by_slot[0], "n", width=4)  # type: ignore[misc]
    Walk()  # holds nothing a Python caller can hand the walk
    root = codec.arrow._schema.Layout(pa, plan, False).reader
    with pytest.raises(ValueError, match="has 0 rows, not 1"):
        _walk(root, 1)  # bound to nothing yet
    root.bind(0, 1, None, None, None, 0)
    with pytest.raises(ValueError, match="too short"):
        _walk(root, 1)  # its children hold no row
    layout = codec.arrow._schema.Layout(pa, plan, False)
    layout.bind(codec.arrow.read_table(framed([b""] * 3), plan.cls).to_batches()[0])
    names = layout.reader.children[[f.name for f in plan.fields_by_slot].index("names")]
    names.children[0].bind(0, 0, None, b"\x00" * 4, b"", 0)  # after its parent
    layout.reader.bind(0, 3, None, None, None, 0)
    assert _walk(layout.reader, 3) == 3
    names.bind(0, 3, None, pa.array([0, 0, 1, 1], pa.int32()).buffers()[1], None, 1)
    with pytest.raises(ValueError, match="column names is too short"):
        _walk(layout.reader, 3)


def test_a_later_batch_refused_takes_the_earlier_ones_back() -> None:
    """The encoder is held for the whole call: the batches before a bad one are taken
    back, and code the iteration runs cannot use the encoder."""
    cls, table, _ = _record_table()
    bad = _with_column(table, "names", pa.array([["a", None]] * 4, pa.list_(pa.string())))
    for data in ([table.to_batches()[0], bad.to_batches()[0]], [table.to_batches()[0], "x"]):
        _refused(data, cls, (EncodeError, TypeError), "row 0|RecordBatch")
    encoder = codec.FrameEncoder()

    def meddling() -> Any:
        yield table.to_batches()[0]
        encoder.getbuffer()  # a view, then a rollback, would leave it showing stale bytes

    with pytest.raises(RuntimeError, match="already"):
        codec.arrow.write_frames(encoder, meddling(), cls)
    assert len(encoder) == 0
    assert codec.arrow.write_frames(encoder, [table, table], cls) == 2 * len(
        struct_frames(_record_table()[2])
    )


def test_a_message_kept_encoded_must_be_one() -> None:
    """An OTLP ArrayValue's values are AnyValues kept as their bytes (a type met again inside
    itself): bytes that are not a message are refused, as the struct decoder refuses them."""
    requests = otlp_requests(1)
    cls = type(requests[0])
    table = codec.arrow.read_table(struct_frames(requests), cls)
    assert rewritten(table, cls) == struct_frames(requests)
    values = table.column("resource_spans").to_pylist()
    found = _kept_values(values)
    assert found, "the workload has AnyValues kept encoded"
    found[0][:] = [b"\xff\xff\xff"]
    damaged = pa.array(values, table.schema.field("resource_spans").type)
    _refused(_with_column(table, "resource_spans", damaged), cls, EncodeError, "are not a message")


# An AnyValue kept encoded (an ArrayValue's value) that the struct decoder reads another way
# than its check walk: a sub-message given twice, merged. Hex, and the refusal if refused.
KEPT_ANY_VALUES = {
    "merged": ("2a 00 2a 00", None),
    "merged, its second cut": ("2a 00 2a 02 0a 05", "runs past the end"),
    "not a message": ("ff ff ff", "varint|tag"),
}


@pytest.mark.parametrize("case", sorted(KEPT_ANY_VALUES))
def test_a_message_kept_encoded_is_checked_as_the_struct_decoder_reads_it(case: str) -> None:
    from opentelemetry.proto.common.v1 import common_pb2

    cls = common_pb2.AnyValue
    kept = bytes.fromhex(KEPT_ANY_VALUES[case][0])
    refusal = KEPT_ANY_VALUES[case][1]
    rows = [{"string_value": "a"}, {"array_value": {"values": [kept]}}]
    table = pa.Table.from_pylist(rows, schema=codec.arrow.schema(cls))
    values = b"\x0a" + bytes([len(kept)]) + kept  # ArrayValue.values
    expected = framed([b"\x0a\x01a", b"\x2a" + bytes([len(values)]) + values])
    for _ in range(2):  # the decoder's state is taken again by the next call
        if refusal is None:
            assert rewritten([table, table], cls) == 2 * expected
        else:
            match = r"column array_value\.values, row 1: the bytes kept for .* are not a message: "
            _refused(table, cls, EncodeError, match + f".*({refusal})")


def test_a_decode_error_from_the_callers_batches_passes_through() -> None:
    """Only a DecodeError of a check names a column: the caller's own passes unchanged."""
    from opentelemetry.proto.common.v1 import common_pb2

    cls = common_pb2.AnyValue
    rows = [{"array_value": {"values": [b"\x0a\x01a"]}}]  # a value checked first
    table = pa.Table.from_pylist(rows, schema=codec.arrow.schema(cls))

    def batches() -> Any:
        yield table
        raise codec.DecodeError("the caller's", 7)

    encoder = codec.FrameEncoder()
    with pytest.raises(codec.DecodeError) as caught:
        codec.arrow.write_frames(encoder, batches(), cls)
    assert (type(caught.value), caught.value.offset) == (codec.DecodeError, 7)
    assert bytes(encoder.getbuffer()) == b""


def _kept_values(value: Any) -> list[Any]:
    """The lists of AnyValue bytes under ``value`` (rows of nested dicts and lists)."""
    if isinstance(value, dict):
        if isinstance(value.get("array_value"), dict) and value["array_value"]["values"]:
            return [value["array_value"]["values"]]
        return [found for item in value.values() for found in _kept_values(item)]
    if isinstance(value, list):
        return [found for item in value for found in _kept_values(item)]
    return []


def test_a_message_of_many_oneofs_has_each_checked() -> None:
    """Past the 64 oneofs whose members share a bit, each row has its oneofs checked one
    by one: a second member set is refused all the same."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from google.protobuf.descriptor import FieldDescriptor as FD

    proto = descriptor_pb2.FileDescriptorProto(name="many.proto", package="many", syntax="proto3")
    message = proto.message_type.add(name="Many")
    for group in range(70):
        message.oneof_decl.add(name=f"choice{group}")
        for member in range(2):
            message.field.add(
                name=f"c{group}_{member}",
                number=2 * group + member + 1,
                type=FD.TYPE_INT32,
                label=FD.LABEL_OPTIONAL,
                oneof_index=group,
            )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("many.Many"))
    schema = _nullable(codec.arrow.schema(cls))
    row = {field.name: None for field in schema}
    for group in (0, 69):  # a oneof with a bit, and one past them
        good = dict(row, **{f"c{group}_1": 5, "c3_0": 7})
        table = pa.Table.from_pylist([good], schema=schema)
        assert rewritten(table, cls) == struct_frames([cls(**{f"c{group}_1": 5, "c3_0": 7})])
        both = dict(good, **{f"c{group}_0": 1})
        _refused(
            pa.Table.from_pylist([good, both], schema=schema),
            cls,
            EncodeError,
            rf"column c{group}_1, row 1: c{group}_0 is set too",
        )


def test_both_ways_of_binding_a_batch_write_the_same_frames(monkeypatch: Any) -> None:
    """Compiled, a batch is bound through the C data interface unless it holds a
    dictionary; through pyarrow's objects otherwise. Both read the same rows."""
    import codec.arrow._schema as schema_module

    records = peerbench.records(30)
    cls = type(records[0])
    table = codec.arrow.read_table(struct_frames(records), cls)
    tables = [
        table,
        table.slice(4, 11),
        pa.concat_tables([table.slice(20, 3), table.slice(0, 5)]),
        codec.arrow.read_table(struct_frames(records), cls, large_types=True).slice(2, 9),
    ]
    exported = [rewritten(each, cls) for each in tables]
    take_widths = schema_module.take_widths  # the widths still taken, no batch exported
    monkeypatch.setattr(
        schema_module, "take_widths", lambda *arguments: take_widths(*arguments) and False
    )
    codec.arrow._IDLE_LAYOUTS.clear()  # layouts that decided for the schemas already
    assert [rewritten(each, cls) for each in tables] == exported
    assert exported[1] == struct_frames(records[4:15])


def test_a_batch_written_is_let_go() -> None:
    """The export a batch is bound through is released once the batch is written: its
    buffers, which pyarrow allocated, go back to pyarrow's pool."""
    records = peerbench.records(50)
    cls = type(records[0])
    rows = codec.arrow.read_table(struct_frames(records), cls).to_pylist()
    schema = codec.arrow.schema(cls)
    baseline = pa.total_allocated_bytes()
    for _ in range(3):
        table = pa.Table.from_pylist(rows, schema=schema)  # buffers from pyarrow's pool
        assert pa.total_allocated_bytes() > baseline
        assert rewritten(table, cls) == struct_frames(records)
        del table
        assert pa.total_allocated_bytes() == baseline
