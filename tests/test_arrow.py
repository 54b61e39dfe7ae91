"""codec.arrow: framed streams as Arrow batches, judged by the struct decoder.

The oracle is codec's struct decoding, itself checked against upb: each row
must read, field by field under the schema's mapping, as the struct decoded
from its frame; each bad stream must raise what a
``FrameDecoder(message_type=...)`` raises, same class and offset, after the
rows of the frames before it. Hypothesis draws the messages (every type of
the test schemas, OTLP), the batch sizes and the damage.
"""

from __future__ import annotations

import io
import math
import tracemalloc
from typing import Any

import pytest

pytest.importorskip("pyarrow", reason="codec.arrow needs pyarrow (the arrow extra)")
pytest.importorskip("grpc_tools", reason="the test schemas compile with grpcio-tools")

import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf import message as protobuf_message
from google.protobuf.descriptor import FieldDescriptor as FD
from helpers import peerbench
from helpers.messages import ALL, mutations, pb2_messages
from helpers.streams import ROOTS, framed, otlp_requests
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.proto.common.v1 import common_pb2
from schemas import everything_pb2

import codec
import codec.arrow
from codec._wire import KINDS
from codec.arrow._schema import plan_for
from codec.errors import SchemaError, TruncatedError
from codec.structs._plan import FieldPlan, MessagePlan

MESSAGES = (KINDS["message"], KINDS["group"])

# --- a row, as the struct decoder reads it, and as Arrow gives it -------------------------


def expected(message: Any, plan: MessagePlan, path: tuple[str, ...]) -> dict[str, Any]:
    """The row of a struct, by the mapping of codec.arrow's schema."""
    return {field.name: _expected_field(message, field, path) for field in plan.fields_by_slot}


def _expected_field(message: Any, field: FieldPlan, path: tuple[str, ...]) -> Any:
    value = getattr(message, field.name)
    if field.map_key is not None:
        value_field: FieldPlan = field.map_value  # type: ignore[assignment]
        return {key: _expected_value(value_field, item, path) for key, item in value.items()}
    if field.repeated:
        return [_expected_value(field, item, path) for item in value]
    if field.presence and not message.HasField(field.name):
        return None
    return _expected_value(field, value, path)


def _expected_value(field: FieldPlan, value: Any, path: tuple[str, ...]) -> Any:
    if field.kind in MESSAGES:
        plan: MessagePlan = field.message  # type: ignore[assignment]
        if plan.full_name in path:  # kept encoded: compared as what it decodes to
            return ("message", value.SerializePartialToString(deterministic=True))
        return expected(value, plan, (*path, plan.full_name))
    if field.kind == KINDS["enum"]:
        return int(value)
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def actual(row: dict[str, Any], plan: MessagePlan, path: tuple[str, ...]) -> dict[str, Any]:
    """A row of ``to_pylist()``, in the form of :func:`expected`."""
    return {
        field.name: _actual_field(row[field.name], field, path) for field in plan.fields_by_slot
    }


def _actual_field(value: Any, field: FieldPlan, path: tuple[str, ...]) -> Any:
    if field.map_key is not None:
        value_field: FieldPlan = field.map_value  # type: ignore[assignment]
        return {key: _actual_value(value_field, item, path) for key, item in value}
    if field.repeated:
        return [_actual_value(field, item, path) for item in value]
    if value is None:
        return None
    return _actual_value(field, value, path)


def _actual_value(field: FieldPlan, value: Any, path: tuple[str, ...]) -> Any:
    if field.kind in MESSAGES:
        plan: MessagePlan = field.message  # type: ignore[assignment]
        if plan.full_name in path:
            decoded = codec.decode(plan.cls, value)
            return ("message", decoded.SerializePartialToString(deterministic=True))
        return actual(value, plan, (*path, plan.full_name))
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def check_rows(table: Any, structs: list[Any]) -> None:
    assert table.num_rows == len(structs)
    for row, struct in zip(table.to_pylist(), structs, strict=True):
        plan = struct.__plan__
        path = (plan.full_name,)
        assert actual(row, plan, path) == expected(struct, plan, path)


def oracle(stream: bytes, cls: Any) -> tuple[list[Any], codec.DecodeError | None]:
    """The structs a FrameDecoder parses from ``stream``, and the error that stops it."""
    decoder = codec.FrameDecoder(message_type=codec.struct(cls))
    structs: list[Any] = []
    try:
        decoder.feed(stream)
        structs.extend(decoder)
        decoder.feed_eof()
    except codec.DecodeError as exc:
        return structs, exc
    return structs, None


def read_as_structs(stream: bytes, cls: Any) -> list[Any]:
    """Read ``stream`` into Arrow and judge it by :func:`oracle`: the rows the struct
    decoder gives, or the error it raises, same class and offset; return the structs."""
    structs, error = oracle(stream, cls)
    if error is not None:
        with pytest.raises(type(error)) as caught:
            codec.arrow.read_table(stream, codec.struct(cls))
        assert caught.value.offset == error.offset
    else:
        check_rows(codec.arrow.read_table(stream, codec.struct(cls)), structs)
    return structs


# --- the schema -------------------------------------------------------------------------


def test_schema_maps_every_kind_of_field() -> None:
    schema = codec.arrow.schema(peerbench.Record)
    assert str(schema.field("kind").type) == "int32"
    assert str(schema.field("delta").type) == "int32"  # sint32
    assert str(schema.field("mask").type) == "uint32"  # fixed32
    assert str(schema.field("ratio").type) == "float"
    assert str(schema.field("payload").type) == "binary"
    labels = schema.field("labels").type
    assert (str(labels), labels.item_field.nullable) == ("map<string, int64>", False)
    assert str(schema.field("names").type) == "list<item: string not null>"
    assert (
        str(schema.field("origin").type) == "struct<start: double not null, end: double not null>"
    )
    assert not schema.field("title").nullable  # proto3: reads as "" when absent
    assert schema.field("origin").nullable and schema.field("text").nullable  # presence
    large = codec.arrow.schema(peerbench.Record, large_types=True)
    assert str(large.field("title").type) == "large_string"
    assert str(large.field("names").type) == "large_list<item: large_string not null>"


def test_a_type_met_inside_itself_is_kept_encoded() -> None:
    schema = codec.arrow.schema(common_pb2.AnyValue)
    array_value = schema.field("array_value").type
    assert str(array_value[0].type) == "list<item: binary not null>"  # AnyValue again


# An AnyValue kept encoded (an ArrayValue's value), hex: read plainly, or another way by
# the struct decoder than by its check walk (a sub-message given twice is merged).
KEPT_ANY_VALUES = {
    "plain": "0a 01 61",
    "merged": "2a 00 2a 00",
    "merged, its second cut": "2a 00 2a 02 0a 05",
    "not a message": "ff ff ff",
}


@pytest.mark.parametrize("case", sorted(KEPT_ANY_VALUES))
def test_a_message_kept_encoded_is_checked_as_the_struct_decoder_reads_it(case: str) -> None:
    """Its rows, or its error and offset in the stream, are the struct decoder's."""
    kept = bytes.fromhex(KEPT_ANY_VALUES[case])
    values = b"\x0a" + bytes([len(kept)]) + kept  # ArrayValue.values
    frame = b"\x2a" + bytes([len(values)]) + values  # AnyValue.array_value
    first = framed([b"\x0a\x01b"])
    stream = first + framed([frame, b"\x0a\x01c"])
    for _ in range(2):  # the decoder's state is taken again by the next call
        read_as_structs(stream, common_pb2.AnyValue)
    error = oracle(stream, common_pb2.AnyValue)[1]
    if error is not None:  # read from the second frame on: offsets still from the start
        with pytest.raises(type(error)) as caught:
            codec.arrow.read_table(stream[len(first) :], common_pb2.AnyValue, offset=len(first))
        assert caught.value.offset == error.offset


def test_a_group_met_inside_itself_has_no_arrow_type() -> None:
    """Only a hand-made descriptor has one (protoc gives each group a type of its own)."""
    proto = descriptor_pb2.FileDescriptorProto(name="loop.proto", package="loop", syntax="proto2")
    outer = proto.message_type.add(name="Outer")
    group = outer.nested_type.add(name="G")
    for message, number in ((outer, 1), (group, 2)):
        message.field.add(
            name="g",
            number=number,
            type=FD.TYPE_GROUP,
            label=FD.LABEL_OPTIONAL,
            type_name=".loop.Outer.G",
        )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("loop.Outer"))
    with pytest.raises(SchemaError, match="a group that contains itself"):
        codec.arrow.schema(cls)


def test_not_a_message_class() -> None:
    with pytest.raises(TypeError, match="neither a struct class nor"):
        codec.arrow.schema(int)


# --- rows equal struct decoding ---------------------------------------------------------


@pytest.mark.parametrize("name", ROOTS)
@given(data=st.data())
def test_rows_are_what_struct_decoding_reads(name: str, data: st.DataObject) -> None:
    cls = ALL[name]
    messages = data.draw(st.lists(pb2_messages(cls), max_size=5))
    payloads = [message.SerializeToString() for message in messages]
    stream = framed(payloads)
    batch_size = data.draw(st.integers(1, 6))
    struct_class = codec.struct(cls)
    batches = list(codec.arrow.read_batches(stream, struct_class, batch_size=batch_size))
    assert all(batch.num_rows == batch_size for batch in batches[:-1])
    table = pa.Table.from_batches(batches, schema=codec.arrow.schema(cls))
    check_rows(table, [codec.decode(struct_class, payload) for payload in payloads])


def test_real_streams_of_every_workload() -> None:
    requests = [message for message in otlp_requests()]
    records = peerbench.records(300)
    for messages in (records, requests):
        cls = type(messages[0])
        stream = framed([message.SerializeToString() for message in messages])
        for source in (stream, io.BytesIO(stream), memoryview(stream)):
            table = codec.arrow.read_table(source, cls, batch_size=64, chunk_size=1000)
            check_rows(table, [codec.from_pb2(message) for message in messages])


def test_readers_at_once_each_read_their_own_rows() -> None:
    """Layouts are kept between calls: a reader left unfinished, one read in the middle of
    it, and batches that start sized like the last must each still give their own rows."""
    records = peerbench.records(40)
    stream = framed([record.SerializeToString() for record in records])
    few = framed([record.SerializeToString() for record in records[:3]])
    expected = [codec.from_pb2(record) for record in records]
    check_rows(codec.arrow.read_table(few, peerbench.Record), expected[:3])  # one kept
    left = codec.arrow.read_batches(stream, peerbench.Record, batch_size=7)
    first = next(left)  # unfinished, for now
    check_rows(codec.arrow.read_table(few, peerbench.Record), expected[:3])

    class ReadingWhileRead(io.BytesIO):
        def readinto1(self, room: Any) -> int:  # with rows of a batch written
            check_rows(codec.arrow.read_table(few, peerbench.Record), expected[:3])
            return super().readinto1(room)

    source = ReadingWhileRead(stream)
    check_rows(codec.arrow.read_table(source, peerbench.Record, chunk_size=100), expected)
    inside = codec.arrow.read_batches(stream, peerbench.Record, batch_size=5)
    check_rows(pa.Table.from_batches([next(inside)]), expected[:5])
    check_rows(pa.Table.from_batches([first, *left]), expected)
    check_rows(pa.Table.from_batches([*inside]), expected[5:])
    for _ in range(2):  # the layouts the finished readers gave back
        check_rows(codec.arrow.read_table(stream, peerbench.Record, batch_size=16), expected)
    assert codec.arrow.schema(peerbench.Record) == codec.arrow.schema(peerbench.Record)


def test_batches_kept_keep_their_rows_while_later_ones_reuse_buffers() -> None:
    """A column reuses the buffers of a batch once no array holds them: a batch kept
    whole, or one column of it, or a slice, must still read as it did."""
    records = peerbench.records(120)
    stream = framed([record.SerializeToString() for record in records])
    expected = [codec.from_pb2(record) for record in records]
    kept: dict[int, Any] = {}
    for index, batch in enumerate(codec.arrow.read_batches(stream, peerbench.Record, batch_size=8)):
        if index % 3 == 0:
            kept[index] = batch  # whole
        elif index % 3 == 1:
            kept[index] = (batch.column("labels"), batch.slice(2, 3))  # some of it
    for index, held in kept.items():
        rows = expected[8 * index : 8 * index + 8]
        if index % 3 == 0:
            check_rows(pa.Table.from_batches([held]), rows)
        else:
            labels, middle = held
            assert labels.to_pylist() == [list(row.labels.items()) for row in rows]
            check_rows(pa.Table.from_batches([middle]), rows[2:5])
    for _ in range(3):  # a table kept while the next is read
        table = codec.arrow.read_table(stream, peerbench.Record)
        check_rows(table, expected)


def address(batch: Any) -> int:
    """Where the bytes of a batch of records' titles are."""
    return int(batch.column("title").buffers()[2].address)


def test_a_batch_freed_lends_its_buffers_to_a_later_one() -> None:
    """The buffers of a batch no array holds any more are the next batches' (no fresh
    pages): a later batch's column sits where a freed one's did."""
    records = peerbench.records(64)
    stream = framed([record.SerializeToString() for record in records])
    reader = codec.arrow.read_batches(stream, peerbench.Record, batch_size=16)
    first = next(reader)
    freed = address(first)
    second = next(reader)
    del first
    blocker = bytearray(4096)  # would take the freed memory, were it given back
    third, fourth = next(reader), next(reader)
    assert freed in (address(third), address(fourth))
    assert address(second) not in (address(third), address(fourth))  # held: not reused
    del blocker


def test_batches_another_engine_scans_on_its_threads_read_whole() -> None:
    """DuckDB scans batches on threads of its own, and lets their arrays go there (with no
    GIL held, as Arrow may): each query reads its rows, while later batches reuse the
    buffers of the batches let go."""
    duckdb = pytest.importorskip("duckdb")
    records = peerbench.records(96)
    stream = framed([record.SerializeToString() for record in records])
    connection = duckdb.connect()
    connection.execute("SET threads TO 2")
    query = "SELECT sum(level), count(DISTINCT title), sum(cardinality(labels)) FROM scanned"
    kept = []
    for index, batch in enumerate(codec.arrow.read_batches(stream, peerbench.Record, batch_size=8)):
        scanned = pa.Table.from_batches([batch])
        rows = records[8 * index : 8 * index + 8]
        answer = (sum(row.level for row in rows), 8, 80)
        assert connection.execute(query).fetchone() == answer
        if index % 2:
            kept.append((scanned, answer))  # scanned again below, after later reads
    for scanned, answer in kept:  # noqa: B007  (the name the query reads)
        assert connection.execute(query).fetchone() == answer
    connection.close()


def test_batches_let_go_hold_nothing_more() -> None:
    """Whatever a batch holds of its buffers (views, and what lists them for Arrow) is
    let go with its last array: reading again and again holds no more memory."""
    stream = framed([record.SerializeToString() for record in peerbench.records(200)])
    codec.arrow.read_table(stream, peerbench.Record, batch_size=16)  # the layout, warm
    tracemalloc.start()
    try:
        codec.arrow.read_table(stream, peerbench.Record, batch_size=16)
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(10):  # 13 batches each
            codec.arrow.read_table(stream, peerbench.Record, batch_size=16)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 2**16


def test_an_idle_layout_lets_large_buffers_go() -> None:
    """Past 16 MiB, a layout given back keeps no buffers of its batches for reuse."""
    stream = framed([peerbench.Record(payload=bytes(2**20)).SerializeToString()] * 20)
    assert codec.arrow.read_table(stream, peerbench.Record).num_rows == 20
    idle = codec.arrow._IDLE_LAYOUTS[plan_for(peerbench.Record), False, False]
    assert idle[-1].root.held() < 2**16  # the layout the read gave back last


def test_merges_and_oneofs_follow_protobuf() -> None:
    """A singular value met twice: the last; a sub-message met twice: merged; a oneof:
    the last member met, a message member merged only with itself; as structs read it."""
    first = everything_pb2.AllTypes(f_int32=1, f_string="one", c_inner=dict(a=1))
    second = everything_pb2.AllTypes(f_int32=2, c_inner=dict(tags=["two"]), k_fixed64=3)
    third = everything_pb2.AllTypes(k_leaf=dict())
    payload = first.SerializeToString() + second.SerializeToString() + third.SerializeToString()
    struct_class = codec.struct(everything_pb2.AllTypes)
    table = codec.arrow.read_table(framed([payload, payload]), struct_class)
    check_rows(table, [codec.decode(struct_class, payload)] * 2)
    row = table.to_pylist()[0]
    assert (row["f_int32"], row["f_string"]) == (2, "one")
    assert (row["c_inner"]["a"], row["c_inner"]["tags"]) == (1, ["two"])
    assert row["k_fixed64"] is None and row["k_leaf"] is not None


# --- bad streams: the decoder's errors, after the rows before them ------------------------


@pytest.mark.parametrize("name", ROOTS)
@given(data=st.data())
def test_damaged_streams_fail_as_the_frame_decoder_does(name: str, data: st.DataObject) -> None:
    cls = ALL[name]
    messages = data.draw(st.lists(pb2_messages(cls), min_size=1, max_size=4))
    payloads = [message.SerializeToString() for message in messages]
    bad = data.draw(st.integers(0, len(payloads) - 1))
    payloads[bad] = data.draw(mutations(payloads[bad]), label="damaged")
    stream = framed(payloads)
    if data.draw(st.booleans(), label="cut"):
        stream = stream[: data.draw(st.integers(0, len(stream)))]
    structs, error = oracle(stream, cls)
    rows: list[Any] = []
    try:
        for batch in codec.arrow.read_batches(stream, cls, batch_size=2):
            rows.extend(batch.to_pylist())
    except codec.DecodeError as exc:
        if "Arrow string column" in str(exc) and (error is None or error.offset > exc.offset):
            return  # a proto2 string that is not UTF-8: a struct keeps it as bytes
        assert error is not None, exc
        assert (type(exc), exc.offset) == (type(error), error.offset)
    else:
        assert error is None
    table = pa.Table.from_pylist(rows, schema=codec.arrow.schema(cls))
    check_rows(table, structs)


def _read_rows(source: Any, cls: Any, **options: Any) -> tuple[list[Any], Exception | None]:
    """The rows read from ``source`` before the error that stops it, and the error."""
    rows: list[Any] = []
    try:
        for batch in codec.arrow.read_batches(source, cls, batch_size=2, **options):
            rows.extend(batch.to_pylist())
    except codec.DecodeError as exc:
        return rows, exc
    return rows, None


def _described(error: Exception | None) -> Any:
    if error is None:
        return None
    return type(error), str(error), getattr(error, "offset", None), getattr(error, "missing", None)


PREFIX_DAMAGE = {
    "a prefix of eleven bytes": b"\xff" * 10 + b"\x01",
    "a frame over max_frame_size": b"\xea\x07" + b"\x00" * 1002,
    "a prefix not minimal (strict)": b"\x83\x00abc",
    "a stream cut inside a prefix": b"\x80",
    "a stream cut inside a body": b"\x05ab",
}


@pytest.mark.parametrize("damage", PREFIX_DAMAGE)
def test_bad_prefixes_fail_alike_from_bytes_and_from_a_stream(damage: str) -> None:
    """Bytes are walked in place, a stream through a FrameDecoder's window: both check
    the prefixes by one set of rules, so both give the same rows, then the same error,
    as the FrameDecoder alone gives."""
    records = peerbench.records(3)
    stream = framed([record.SerializeToString() for record in records]) + PREFIX_DAMAGE[damage]
    options = {"max_frame_size": 1001, "strict": True, "offset": 7}
    in_place = _read_rows(stream, peerbench.Record, **options)
    read = _read_rows(io.BytesIO(stream), peerbench.Record, chunk_size=5, **options)
    decoder = codec.FrameDecoder(1001, strict=True, offset=7)
    decoder.feed(stream)
    frames: list[Any] = []
    with pytest.raises(codec.DecodeError) as caught:
        frames.extend(decoder)
        decoder.feed_eof()
    assert len(frames) == 3 and [row["id"] for row in in_place[0]] == [r.id for r in records]
    assert in_place[0] == read[0]
    assert _described(in_place[1]) == _described(read[1]) == _described(caught.value)


def test_a_buffer_changed_between_batches_gives_rows_or_a_decode_error() -> None:
    """Bytes are read in place, so a bytearray changed while its batches are read is read
    as it is then: each batch's frames are checked in the call that walks them."""
    records = peerbench.records(6)
    source = bytearray(framed([record.SerializeToString() for record in records]))
    reader = codec.arrow.read_batches(source, peerbench.Record, batch_size=2)
    first = next(reader)
    source[:] = b"\xff" * len(source)  # every later prefix bad
    with pytest.raises(codec.DecodeError):
        next(reader)
    assert first.column("id").to_pylist() == [record.id for record in records[:2]]


def test_a_bad_frame_keeps_the_rows_before_it() -> None:
    records = peerbench.records(5)
    payloads = [record.SerializeToString() for record in records]
    payloads[3] = payloads[3][:-1]  # cut inside its last field
    stream = framed(payloads)
    rows: list[Any] = []
    with pytest.raises(codec.errors.TruncatedError) as caught:
        for batch in codec.arrow.read_batches(stream, peerbench.Record, batch_size=2):
            rows.extend(batch.to_pylist())
    assert [row["id"] for row in rows] == [record.id for record in records[:3]]
    assert caught.value.offset == oracle(stream, peerbench.Record)[1].offset  # type: ignore[union-attr]


# What may follow a tag: nothing, a one-byte varint or length, a length and its byte, the
# bytes of a fixed64, and an end-group tag of field 1.
AFTER_A_TAG = [b"", b"\x01", b"\x01a", b"\x00" * 8, b"\x0c"]


@pytest.mark.parametrize("name", ROOTS)
def test_every_one_byte_tag_reads_as_structs_read_it(name: str) -> None:
    """The walk finds a one-byte tag's column by one index (valid tags of its fields),
    and reads any other tag the long way: each of the 128, with what may follow it,
    gives the rows or the error (type and offset) the struct decoder gives."""
    cls = ALL[name]
    for tag in range(0x80):
        for after in AFTER_A_TAG:
            stream = framed([b"", bytes([tag]) + after, b""])
            structs, error = oracle(stream, cls)
            rows, failed = _read_rows(stream, cls)
            if failed is not None and "Arrow string column" in str(failed):
                continue  # a proto2 string that is not UTF-8: a struct keeps it as bytes
            assert _at(failed) == _at(error), (tag, after)
            table = pa.Table.from_pylist(rows, schema=codec.arrow.schema(cls))
            check_rows(table, structs)


def _at(error: Exception | None) -> Any:
    return None if error is None else (type(error), getattr(error, "offset", None))


def test_a_packed_run_cut_inside_an_element_fails_as_structs_do() -> None:
    """A packed fixed32 run of 3 bytes: the struct decoder's WireFormatError, at the run
    (found by fuzz_arrow: the column walk raised TruncatedError at its end)."""
    run = bytes.fromhex("fa0203000000")  # field 47, p_fixed32: 3 bytes
    stream = framed([b"", run])
    _, error = oracle(stream, everything_pb2.AllTypes)
    assert isinstance(error, codec.errors.WireFormatError)
    rows = 0
    with pytest.raises(codec.errors.WireFormatError) as caught:
        for batch in codec.arrow.read_batches(stream, everything_pb2.AllTypes, batch_size=1):
            rows += batch.num_rows
    assert (rows, caught.value.offset) == (1, error.offset)


VARINTS = [  # values of every length, and the two a varint may not be
    codec.varint.encode(value) for value in (1, 300, 2**20, 2**27, 2**34, 2**41, 2**48, 2**55)
] + [
    codec.varint.encode(2**63),
    codec.varint.encode(2**64 - 1),
    b"\xff" * 9 + b"\x02",
    b"\xff" * 10 + b"\x01",
]


@pytest.mark.parametrize("value", VARINTS, ids=lambda value: f"{len(value)}-bytes-{value[-1]:x}")
def test_a_varint_at_a_message_end_is_read_within_it(value: bytes) -> None:
    """A varint is measured in one load, past its message's end where the view has the
    bytes: a map entry's value and a frame's last field, whole or cut by the end with the
    bytes that would go on after it, read as structs read them, and fail where upb fails."""
    entry_tag = codec.varint.encode(91 << 3 | 2)  # AllTypes.m_int32_int32: key 1, then value
    for cut in range(1, len(value) + 1):
        entry = b"\x08\x01\x10" + value[:cut]
        in_entry = entry_tag + codec.varint.encode(len(entry)) + entry + value[cut:]
        at_frame_end = b"\x08" + value[:cut]  # f_int32, the next frame's bytes after it
        for payload in (in_entry, at_frame_end):
            rest = value[cut:] if payload is at_frame_end else b""
            stream = framed([payload]) + rest + framed([b"\x10\x05" * 8])
            _, error = oracle(stream, everything_pb2.AllTypes)
            try:
                everything_pb2.AllTypes.FromString(payload)
            except protobuf_message.DecodeError:  # then so does the frame, the first
                assert error is not None and error.offset <= len(payload), (cut, payload)
            read_as_structs(stream, everything_pb2.AllTypes)


STRINGS = "b206060a017a120177"  # AllTypes.m_string_string (field 102): {"z": "w"}
REQUIRED = "080112016e"  # legacy.Record's required fields


@pytest.mark.parametrize(
    ("name", "number", "head", "entry"),
    [  # AllTypes' field 92 is a map<int64, string>; Record's field 51 a map<int32, Kind>,
        # a closed enum that declares 0 and 9
        ("everything.AllTypes", 102, STRINGS, "0a01611201781201790a0162"),  # each twice
        ("everything.AllTypes", 102, STRINGS, "120178"),  # no key
        ("everything.AllTypes", 102, STRINGS, "0a0161"),  # no value
        ("everything.AllTypes", 102, STRINGS, ""),  # neither
        ("everything.AllTypes", 102, STRINGS, "1201780a0161"),  # the value first
        ("everything.AllTypes", 102, STRINGS, "8a000161120178"),  # an overlong tag
        ("everything.AllTypes", 102, STRINGS, "0a01611201781800"),  # an unknown field
        ("everything.AllTypes", 102, STRINGS, "0a01611003"),  # a value on a wrong wire type
        ("everything.AllTypes", 102, STRINGS, "0a016112"),  # cut inside the value
        ("everything.AllTypes", 92, "e205050805120177", "08051201ff"),  # a string not UTF-8
        ("legacy.Record", 51, REQUIRED, "08071063"),  # a number the enum does not declare
        ("legacy.Record", 51, REQUIRED, "08071009"),  # one it declares
    ],
)
def test_unusual_map_entries_read_as_structs_read_them(
    name: str, number: int, head: str, entry: str
) -> None:
    """Entries other than a key then a value, each once and plain, leave the walk's short
    path for its general one: rows and errors are those of struct decoding (Q4). ``head``: the
    fields before the entry, in each message (an entry of the common kind, or the message's
    required fields)."""
    cls = ALL[name]
    body = bytes.fromhex(entry)
    tag = codec.varint.encode(number << 3 | 2)
    payload = bytes.fromhex(head) + tag + codec.varint.encode(len(body)) + body
    read_as_structs(framed([payload, payload]), cls)


PACKED_EXTREMES = {  # every packed number field of AllTypes: its kind's edges, and 0
    "p_int32": [0, -1, 2**31 - 1, -(2**31), 300],
    "p_int64": [0, -1, 2**63 - 1, -(2**63), 300],
    "p_uint32": [0, 1, 2**32 - 1, 127, 128],
    "p_uint64": [0, 1, 2**64 - 1, 2**63, 16383],
    "p_sint32": [0, -1, 2**31 - 1, -(2**31), -64],
    "p_sint64": [0, -1, 2**63 - 1, -(2**63), 64],
    "p_fixed32": [0, 2**32 - 1, 1],
    "p_fixed64": [0, 2**64 - 1, 1],
    "p_sfixed32": [0, -1, -(2**31)],
    "p_sfixed64": [0, -1, -(2**63)],
    "p_float": [0.0, -1.5, float("inf")],
    "p_double": [0.0, -1.5, 1e300],
    "p_color": [0, 1, 2, 7, -3],  # an open enum: numbers it does not declare too
}


@pytest.mark.parametrize("name", sorted(PACKED_EXTREMES))
def test_packed_runs_of_numbers_read_as_structs_read_them(name: str) -> None:
    """A packed run of numbers goes into its list column in one pass (checked, then
    written): two runs of one field in a frame append, and a run holding a varint of 11
    bytes, or cut inside its last varint or fixed-width number, fails with the struct
    decoder's error and offset."""
    cls = everything_pb2.AllTypes
    values = PACKED_EXTREMES[name]
    run = cls(**{name: values}).SerializeToString()
    again = cls(**{name: values[::-1]}).SerializeToString()
    structs = read_as_structs(framed([run, run + again, b""]), cls)
    assert len(structs) == 3 and list(getattr(structs[1], name)) == values + values[::-1]
    field = cls.DESCRIPTOR.fields_by_name[name]
    tag = codec.varint.encode(field.number << 3 | 2)
    width = {FD.CPPTYPE_FLOAT: 4, FD.CPPTYPE_DOUBLE: 8}.get(field.cpp_type)
    if name.startswith(("p_fixed", "p_sfixed")):
        width = 4 if name.endswith("32") else 8
    damage = [b"\x01" + b"\xff" * 10 + b"\x01", b"\x01\x80"]  # too long; cut
    for damaged in damage if width is None else [b"\x00" * (2 * width - 1)]:
        bad = framed([run, tag + codec.varint.encode(len(damaged)) + damaged, run])
        assert len(read_as_structs(bad, cls)) == 1  # the damaged frame raises


# W3's Record: labels is field 15 (one-byte tag 7a), a map<string, int64>; its entries
# below, each the hex of its body, or of a field other than an entry (after "=").
RUNS_OF_ENTRIES = {
    "a run": ["0a01611001", "0a01621002", "0a0163107f"],
    "unusual ones among them": ["0a01611001", "10020a0162", "1003", "", "0a01641004"],
    "another field between": ["0a01611001", "=0801", "0a01621002", "0a01611003"],
    "a key not UTF-8": ["0a01611001", "0a01ff1002"],
    "cut inside the last": ["0a01611001", "0a01621002"],
}


@pytest.mark.parametrize("case", sorted(RUNS_OF_ENTRIES))
def test_runs_of_map_entries_read_as_structs_read_them(case: str) -> None:
    """Entries of a map that follow one another under its one-byte tag are read in one
    loop: common ones, unusual ones among them, another field between, and damage give
    the rows or the error that struct decoding gives."""
    payload = b""
    for body in RUNS_OF_ENTRIES[case]:
        if body.startswith("="):
            payload += bytes.fromhex(body[1:])
        else:
            payload += b"\x7a" + codec.varint.encode(len(body) // 2) + bytes.fromhex(body)
    if case == "cut inside the last":
        payload = payload[:-1]
    structs = read_as_structs(framed([payload, payload + payload, b""]), peerbench.Record)
    fails = case in ("a key not UTF-8", "cut inside the last")
    assert len(structs) == (0 if fails else 3)


# W2's Trace: spans is field 2 (one-byte tag 12), repeated Spans; a Span's tags, field 5,
# a packed uint32 that may come unpacked too (tag 28, each element) or packed (tag 2a).
TAGS = "2802 2803 2a020405 2806 2807 "  # [2, 3, 4, 5, 6, 7], unpacked and packed
RUNS_OF_ELEMENTS = {
    "spans, one after another": "1200 1204 " + TAGS[:10] + "1202 0801",
    "tags unpacked and packed": "12" + f"{len(bytes.fromhex(TAGS)):02x}" + TAGS,
    "another field between": "1200 0801 1202 0802 1200",
    "a span cut": "1200 1204 2802 28",
}


@pytest.mark.parametrize("case", sorted(RUNS_OF_ELEMENTS))
def test_runs_of_repeated_elements_read_as_structs_read_them(case: str) -> None:
    """Elements of a repeated field that follow one another under its one-byte tag are
    read in one loop; a tag of the same number on another wire type (a packed run), or
    another field, ends it: rows or the error as struct decoding gives them."""
    payload = bytes.fromhex(RUNS_OF_ELEMENTS[case])
    structs = read_as_structs(framed([payload, payload + payload, b""]), peerbench.Trace)
    assert len(structs) == (0 if case == "a span cut" else 3)
    if case == "tags unpacked and packed":
        assert list(structs[0].spans[0].tags) == [2, 3, 4, 5, 6, 7]


def test_a_repeated_group_met_as_a_length_delimited_value_is_passed_over() -> None:
    """No packed run of groups: on LEN, a repeated group's number is an unknown field,
    as structs read it (found by fuzz_arrow: the column walk read it as a packed run)."""
    legacy = ALL["legacy.WithGroups"]
    entry = bytes.fromhex("2a070a016e12020800")  # field 5 (group Entry) on LEN
    payload = legacy(before=1).SerializeToString() + entry
    table = codec.arrow.read_table(framed([payload]), legacy)
    check_rows(table, oracle(framed([payload]), legacy)[0])
    assert table.to_pylist()[0]["entry"] == []


def test_a_message_without_fields_keeps_its_rows() -> None:
    """Batches of a message type with no fields have no columns, and still their rows."""
    batches = list(codec.arrow.read_batches(b"\0\0\0", everything_pb2.Empty, batch_size=2))
    assert [batch.num_rows for batch in batches] == [2, 1]
    table = codec.arrow.read_table(b"\0\0\0", everything_pb2.Empty)
    assert (table.num_rows, table.num_columns) == (3, 0)
    encoder = codec.FrameEncoder()
    assert codec.arrow.write_frames(encoder, table, everything_pb2.Empty) == 3
    assert bytes(encoder.getbuffer()) == b"\0\0\0"


def test_enums_by_name() -> None:
    """enum_names: each enum a dictionary column of its values' names, a number the enum
    does not declare by its digits (nothing lost), nulls where the field is not set; the
    table writes back the frames it was read from."""
    messages = [
        everything_pb2.AllTypes(f_color=2, p_shape=[-7, 1, 9], m_sint32_color={3: -1}),
        everything_pb2.AllTypes(f_color=17, o_color=-(2**31), u_color=[0, 2**31 - 1]),
        everything_pb2.AllTypes(),
    ]
    stream = framed([message.SerializeToString() for message in messages])
    table = codec.arrow.read_table(stream, everything_pb2.AllTypes, enum_names=True)
    named = pa.dictionary(pa.int32(), pa.string())
    assert table.schema.field("f_color").type == named
    assert table.schema == codec.arrow.schema(everything_pb2.AllTypes, enum_names=True)
    assert table.column("f_color").to_pylist() == ["COLOR_GREEN", "17", "COLOR_UNSPECIFIED"]
    assert table.column("o_color").to_pylist() == [None, "COLOR_LOWEST", None]
    assert table.column("p_shape").to_pylist()[0] == ["SHAPE_INSIDE_OUT", "SHAPE_SQUARE", "9"]
    assert table.column("u_color").to_pylist()[1] == ["COLOR_UNSPECIFIED", "COLOR_HIGHEST"]
    assert table.column("m_sint32_color").to_pylist()[0] == [(3, "COLOR_INFRARED")]
    numbers = codec.arrow.read_table(stream, everything_pb2.AllTypes)
    assert numbers.column("f_color").to_pylist() == [2, 17, 0]
    for data in (table, numbers):
        encoder = codec.FrameEncoder()
        codec.arrow.write_frames(encoder, data, everything_pb2.AllTypes)
        assert bytes(encoder.getbuffer()) == stream


def test_enums_by_name_write_the_rows_of_slices() -> None:
    """Sliced dictionary arrays, at the top and inside structs, lists and maps, write their
    own rows."""
    messages = [
        everything_pb2.AllTypes(
            f_color=i % 4, p_shape=[1, -7, 9][: i % 4], o_leaf=dict(color=i), m_sint32_color={i: 2}
        )
        for i in range(7)
    ]
    payloads = [message.SerializeToString() for message in messages]
    table = codec.arrow.read_table(
        framed(payloads), everything_pb2.AllTypes, enum_names=True, batch_size=3
    )
    for start, rows in ((1, 3), (2, 4), (5, 2), (3, 1)):
        for data in (table.slice(start, rows), table.combine_chunks().slice(start, rows)):
            encoder = codec.FrameEncoder()
            codec.arrow.write_frames(encoder, data, everything_pb2.AllTypes)
            assert bytes(encoder.getbuffer()) == framed(payloads[start : start + rows])


def test_enum_names_that_name_nothing_are_refused() -> None:
    """Written back, a name the enum does not have (nor an int32's digits) is an
    EncodeError naming the column, and nothing is written."""
    good = codec.arrow.read_table(
        framed([everything_pb2.AllTypes(f_color=1).SerializeToString()]),
        everything_pb2.AllTypes,
        enum_names=True,
    )
    index = good.schema.get_field_index("f_color")
    for name in ("COLOR_PURPLE", "2147483648", "0x10", ""):
        colors = pa.DictionaryArray.from_arrays(pa.array([0], pa.int32()), pa.array([name]))
        table = good.set_column(index, good.schema.field(index), colors)
        encoder = codec.FrameEncoder()
        with pytest.raises(codec.EncodeError, match=f"column f_color: '{name}' is neither"):
            codec.arrow.write_frames(encoder, table, everything_pb2.AllTypes)
        assert len(encoder) == 0
    for index_value in (-1, 1):  # not valid Arrow: made unchecked
        colors = pa.DictionaryArray.from_arrays(
            pa.array([index_value], pa.int8()), pa.array(["COLOR_RED"]), safe=False
        )
        with pytest.raises(ValueError, match="column f_color: a dictionary index is out of"):
            codec.arrow.write_frames(
                codec.FrameEncoder(),
                good.set_column(index, "f_color", colors),
                everything_pb2.AllTypes,
            )
    numbers = pa.DictionaryArray.from_arrays(pa.array([0], pa.int8()), pa.array([3], pa.int64()))
    with pytest.raises(codec.EncodeError, match="where the message's schema has an enum's int32"):
        codec.arrow.write_frames(
            codec.FrameEncoder(),
            good.set_column(index, "f_color", numbers),
            everything_pb2.AllTypes,
        )
    # Any integer indices, large_string names, a null index: an absent field.
    colors = pa.DictionaryArray.from_arrays(
        pa.array([1, None, 0], pa.int8()), pa.array(["-5", "COLOR_BLUE"], pa.large_string())
    )
    table = pa.concat_tables([good] * 3).combine_chunks().set_column(index, "f_color", colors)
    encoder = codec.FrameEncoder()
    codec.arrow.write_frames(encoder, table, everything_pb2.AllTypes)
    decoder = codec.FrameDecoder(message_type=codec.struct(everything_pb2.AllTypes))
    decoder.feed(encoder.getbuffer())
    assert [int(message.f_color) for message in decoder] == [3, 0, -5]


def test_the_arguments_are_checked_at_once() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        codec.arrow.read_batches(b"", peerbench.Record, batch_size=0)
    with pytest.raises(TypeError):
        codec.arrow.read_batches(object(), peerbench.Record)
    with pytest.raises(TypeError, match="large_types"):
        codec.arrow.schema(peerbench.Record, large_types=1)
    with pytest.raises(ValueError, match="max_depth"):
        codec.arrow.read_batches(b"", peerbench.Record, max_depth=-1)


# --- scale-out: a partition per file ------------------------------------------------------


def _write_parts(directory: Any, messages: list[Any], parts: int) -> list[Any]:
    """``messages`` split into ``parts`` delimited files; the structs, in file order."""
    size = -(-len(messages) // parts)
    for part in range(parts):
        chunk = messages[part * size : (part + 1) * size]
        payloads = [message.SerializeToString() for message in chunk]
        (directory / f"part-{part:03}.bin").write_bytes(framed(payloads))
    return [codec.from_pb2(message) for message in messages]


@pytest.mark.parametrize("scheduler", ["threads", "sync"])
def test_dask_gives_the_answer_of_one_process(tmp_path: Any, scheduler: str) -> None:
    """The same query over a partition per file, on a Dask scheduler, and over one read."""
    dask = pytest.importorskip("dask", reason="codec.arrow.read_dask needs dask[dataframe]")
    pytest.importorskip("pandas", reason="dask's dataframes need pandas")
    records = peerbench.records(120)
    _write_parts(tmp_path, records, 4)
    frame = codec.arrow.read_dask(tmp_path / "part-*.bin", peerbench.Record)
    assert frame.npartitions == 4
    with dask.config.set(scheduler=scheduler):
        spread = frame.groupby("level")["score"].sum().compute().sort_index()
        rows = len(frame)
    whole = b"".join((tmp_path / f"part-{part:03}.bin").read_bytes() for part in range(4))
    table = codec.arrow.read_table(whole, peerbench.Record).to_pandas()
    once = table.groupby("level")["score"].sum().sort_index()
    assert rows == len(records) == len(table)
    assert spread.to_dict() == pytest.approx(once.to_dict())


def test_dask_partitions_hold_the_rows_of_their_files(tmp_path: Any) -> None:
    pytest.importorskip("dask", reason="codec.arrow.read_dask needs dask[dataframe]")
    records = peerbench.records(30)
    _write_parts(tmp_path, records, 3)
    frame = codec.arrow.read_dask(tmp_path, peerbench.Record)  # a directory: its files
    first = frame.get_partition(0).compute(scheduler="sync")
    assert list(first["id"]) == [record.id for record in records[:10]]
    assert frame.columns.tolist() == codec.arrow.schema(peerbench.Record).names


@pytest.mark.parametrize(
    ("reader", "module"), [("read_dask", "dask.dataframe"), ("read_ray", "ray.data")]
)
def test_the_scale_out_readers_refuse_at_once(tmp_path: Any, reader: str, module: str) -> None:
    pytest.importorskip(module, reason=f"codec.arrow.{reader} needs {module}")
    read = getattr(codec.arrow, reader)
    with pytest.raises(FileNotFoundError, match="no file matches"):
        read(tmp_path / "*.bin", peerbench.Record)
    (tmp_path / "a.bin").write_bytes(b"")
    with pytest.raises(ValueError, match="batch_size"):
        read(tmp_path, peerbench.Record, batch_size=0)


def _indexed_file(directory: Any, count: int, every: int) -> tuple[Any, list[Any]]:
    """A file of ``count`` W3 records, indexed a part every ``every`` frames."""
    records = peerbench.records(count)
    path = directory / "records.bin"
    path.write_bytes(framed([record.SerializeToString() for record in records]))
    index = codec.arrow.write_index(path, every=every)
    assert index == str(path) + codec.arrow.INDEX_SUFFIX
    return path, records


def test_an_indexed_file_is_read_in_parts(tmp_path: Any) -> None:
    """A part every 60 frames: the partitions hold the frames of their parts, in order,
    and the rows are those of one read."""
    dask = pytest.importorskip("dask", reason="codec.arrow.read_dask needs dask[dataframe]")
    path, records = _indexed_file(tmp_path, 250, 60)
    frame = codec.arrow.read_dask(tmp_path, peerbench.Record)  # the index is not a file of frames
    assert frame.npartitions == 5  # 60, 60, 60, 60 and 10 frames
    sizes = [len(frame.get_partition(n).compute(scheduler="sync")) for n in range(5)]
    assert sizes == [60, 60, 60, 60, 10]
    with dask.config.set(scheduler="threads"):
        ids = frame["id"].compute().tolist()
    assert ids == [record.id for record in records]
    assert codec.arrow.read_dask(path, peerbench.Record, batch_size=7).npartitions == 5


def test_an_index_parts_a_file_at_its_frames(tmp_path: Any) -> None:
    """Each part starts at a frame; an index that has gone stale, or is not one, raises;
    an error in a part carries its offset in the whole file."""
    from codec.arrow._scale import delimited_parts

    path, records = _indexed_file(tmp_path, 25, 10)
    data = path.read_bytes()
    parts = delimited_parts([str(path)])
    assert [end - start for _, start, end in parts] == [
        len(framed([r.SerializeToString() for r in records[n : n + 10]])) for n in (0, 10, 20)
    ]
    assert [(start, end) for _, start, end in parts][-1][1] == len(data)
    codec.arrow.write_index(path, every=100)  # written again: one part
    assert len(delimited_parts([str(path)])) == 1
    codec.arrow.write_index(path, every=10)
    bad = bytearray(data)
    second = parts[1][1]
    bad[second + 1] = 0xFF  # a tag with field number 0 in the second part's first frame
    path.write_bytes(bytes(bad))
    with pytest.raises(codec.DecodeError) as one_read:
        codec.arrow.read_table(bytes(bad), peerbench.Record)
    from codec.arrow._scale import ReadFile

    read = ReadFile(peerbench.Record, {})
    assert len(read(parts[0])) == 10
    with pytest.raises(codec.DecodeError) as in_part:
        read(parts[1])
    assert in_part.value.offset == one_read.value.offset
    assert in_part.value.offset >= second
    path.write_bytes(data + b"\x00")  # changed since it was indexed
    with pytest.raises(ValueError, match="stale"):
        delimited_parts([str(path)])
    (tmp_path / ("records.bin" + codec.arrow.INDEX_SUFFIX)).write_bytes(b"not an index")
    with pytest.raises(codec.DecodeError, match="not an index"):
        delimited_parts([str(path)])
    with pytest.raises(ValueError, match="every"):
        codec.arrow.write_index(path, every=0)
    with pytest.raises(ValueError, match="a part of a file from 9 to 3"):
        read((str(path), 9, 3))
    path.write_bytes(data[:-1])  # a file cut inside its last frame
    with pytest.raises(TruncatedError):
        codec.arrow.write_index(path)


def test_the_column_builders_refuse_what_would_crash_them() -> None:
    """The walk trusts its columns: a column is built once, whole, from built columns."""
    from codec.arrow._builders import (
        BOOLS,
        COMPILED,
        FIXED,
        LIST,
        STRUCT,
        Column,
        arrow_batch,
        decode_frames,
        join_oneof,
    )

    plan = codec.struct(peerbench.Record).__plan__
    blank = Column.__new__(Column)  # its __init__ never ran
    with pytest.raises(TypeError, match="STRUCT column"):
        decode_frames(blank, memoryview(b"\x00"), 0)
    with pytest.raises(TypeError, match="built"):
        Column(LIST, None, False, children=[blank])
    with pytest.raises(ValueError, match="a child a field"):
        Column(STRUCT, None, False, children=[], plan=plan)
    with pytest.raises(ValueError, match="width 3"):
        Column(FIXED, None, False, width=3)
    flags = Column(BOOLS, None, False)
    with pytest.raises(RuntimeError, match="built once"):
        flags.__init__(FIXED, None, False, width=8)  # type: ignore[misc]
    with pytest.raises(TypeError, match="built"):
        join_oneof([flags, blank])
    join_oneof([flags, Column(BOOLS, None, False)])
    with pytest.raises(ValueError, match="one oneof"):
        join_oneof([Column(BOOLS, None, False), flags])
    for column in (blank, flags):
        with pytest.raises(TypeError, match="STRUCT column"):
            arrow_batch(column, pa.RecordBatch, pa.schema([]))
    layout = codec.arrow._schema.Layout(pa, plan, False)
    assert decode_frames(layout.root, memoryview(b""), 0) == 0
    if COMPILED:
        assert arrow_batch(layout.root, pa.RecordBatch, layout.schema).num_rows == 0
        with pytest.raises(pa.ArrowInvalid, match="children"):  # released by Arrow (Q5)
            arrow_batch(layout.root, pa.RecordBatch, pa.schema([("x", pa.int8())]))
    else:
        with pytest.raises(RuntimeError, match="compiled build"):
            arrow_batch(layout.root, pa.RecordBatch, layout.schema)


@pytest.fixture(scope="module")
def ray_node() -> Any:
    """A local Ray node of two workers, for this module's tests; skipped, saying why, where
    Ray is not installed or cannot start one."""
    ray = pytest.importorskip("ray", reason="codec.arrow.read_ray needs ray[data]")
    pytest.importorskip("ray.data", reason="codec.arrow.read_ray needs ray[data]")
    try:
        # an object store of 100 MiB, not Ray's 30% of memory: the rows here are few, and
        # a smaller reservation starts where address space is limited (ulimit -v)
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            object_store_memory=100 * 2**20,
        )
    except Exception as exc:  # a node that cannot start here: its own message says why
        pytest.skip(f"a local Ray node did not start: {exc}")
    yield ray
    ray.shutdown()


def test_ray_gives_the_answer_of_one_process(tmp_path: Any, ray_node: Any) -> None:
    """The same query over a read task per file, on a local Ray node (worker processes,
    which import the message class by its module), and over one read."""
    spans = [
        span
        for request in otlp_requests(4)
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    cls = type(spans[0])
    _write_parts(tmp_path, spans, 3)
    dataset = codec.arrow.read_ray(tmp_path / "part-*.bin", cls, batch_size=50)
    spread = dataset.groupby("kind").count().to_pandas().set_index("kind")["count()"]
    assert dataset.schema().names == codec.arrow.schema(cls).names
    whole = b"".join((tmp_path / f"part-{part:03}.bin").read_bytes() for part in range(3))
    once = codec.arrow.read_table(whole, cls).to_pandas().groupby("kind").size()
    assert spread.sort_index().to_dict() == once.sort_index().to_dict()
    assert sum(once) == len(spans) == dataset.count()
    names = sorted(row["name"] for row in dataset.select_columns(["name"]).iter_rows())
    assert names == sorted(span.name for span in spans)
