"""Lazy decoding (``Decoder(lazy=True)``, "lazy decoding" in ``codec/structs/_decode.py``).

What a lazy message must be, judged against the eager decode of the same bytes:

* the same content, read field by field, by the encoder, by pb2's methods,
  after mutations, copies and pickles, from any thread;
* the same errors at the same offsets, raised by the decode (the
  differential tests and the bad-input catalogue run lazily too:
  ``test_structs_differential.check_options_agree``, ``test_hostile``);
* its frame's bytes kept by the message (the input itself if it is a
  ``bytes``, else a copy), so the input may change or be reused at once;
* frames where reading one field could change another decoded eagerly;
* lazy for real: a decode makes a fraction of the eager decode's objects,
  and a field is parsed once, when it is first read.
"""

from __future__ import annotations

import copy
import functools
import gc
import pickle
import threading
import tracemalloc
import weakref
from typing import Any

import pytest

pytest.importorskip("grpc_tools", reason="the schemas are compiled with grpcio-tools")

from google.protobuf import descriptor_pb2
from schemas import everything_pb2 as E
from schemas import legacy_pb2 as L

import codec
from codec.errors import DecodeError, DepthLimitError

AllTypes = codec.struct(E.AllTypes)
Tree = codec.struct(E.Tree)
Record = codec.struct(L.Record)
WithGroups = codec.struct(L.WithGroups)

NESTED = E.AllTypes(
    f_int32=-5,
    f_string="top",
    r_string=["a", "b"],
    r_inner=[E.AllTypes.Inner(a=1, tags=["t"]), E.AllTypes.Inner(a=2)],
    p_int64=[1, -2, 3],
    u_double=[0.5, 1.5],
    m_int32_int32={1: 2, 3: 4},
    m_string_inner={"k": E.AllTypes.Inner(a=2)},
    m_string_self={"s": E.AllTypes(m_int64_string={3: "x"}, c_inner=E.AllTypes.Inner())},
    c_inner=E.AllTypes.Inner(a=3, tags=["u", "v"]),
    k_leaf=E.Leaf(samples=[1, 2]),
    recursive=E.AllTypes(r_leaf=[E.Leaf()], recursive=E.AllTypes(p_int32=[4])),
)
NESTED_BYTES = NESTED.SerializeToString(deterministic=True)
# A tree through every kind of pending field: singular, repeated and map, two levels down.
TREE_BYTES = E.Tree(
    value=1,
    left=E.Tree(right=E.Tree(value=2)),
    children=[E.Tree(value=i, children=[E.Tree(value=-i)]) for i in range(3)],
    named={"a": E.Tree(named={"b": E.Tree(value=3)})},
).SerializeToString(deterministic=True)


def tag(number: int, wire: int) -> bytes:
    return codec.varint.encode(number << 3 | wire)


def lazy(cls: Any, data: Any, **options: Any) -> Any:
    return codec.decode(cls, data, lazy=True, **options)


def blocks_made(action: Any) -> int:
    """Memory blocks ``action`` leaves allocated (its result kept)."""
    gc.collect()
    tracemalloc.start()
    try:
        kept = action()
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    return size


# --- the same content -------------------------------------------------------------------


def test_a_lazy_message_reads_as_the_eager_one() -> None:
    eager = codec.decode(AllTypes, NESTED_BYTES)
    assert lazy(AllTypes, NESTED_BYTES) == eager
    assert repr(lazy(AllTypes, NESTED_BYTES)) == repr(eager)
    assert codec.encode(lazy(AllTypes, NESTED_BYTES), deterministic=True) == NESTED_BYTES
    assert codec.to_pb2(lazy(AllTypes, NESTED_BYTES)) == NESTED
    message = lazy(AllTypes, NESTED_BYTES)
    assert message.recursive.recursive.p_int32 == [4]
    assert message.m_string_self["s"].m_int64_string == {3: "x"}
    assert [inner.a for inner in message.r_inner] == [1, 2]
    assert message.c_inner.tags == ["u", "v"]


def test_presence_is_known_without_a_parse() -> None:
    message = lazy(AllTypes, NESTED_BYTES)
    before = blocks_made(lambda: [message.HasField(name) for name in ("c_inner", "recursive")])
    assert message.HasField("c_inner") and message.HasField("recursive")
    assert message.WhichOneof("choice") == "c_inner" and message.WhichOneof("other") == "k_leaf"
    assert not message.HasField("k_fixed64")
    assert before < 1_000  # no sub-message was parsed to answer
    assert [field.name for field, _ in message.ListFields()] == [
        field.name for field, _ in NESTED.ListFields()
    ]


def test_pb2_methods_on_a_lazy_message() -> None:
    eager = codec.decode(AllTypes, NESTED_BYTES)
    assert lazy(AllTypes, NESTED_BYTES).ByteSize() == len(NESTED_BYTES)
    target = AllTypes()
    target.MergeFrom(lazy(AllTypes, NESTED_BYTES))
    assert target == eager
    target = AllTypes(f_int32=1)
    target.CopyFrom(lazy(AllTypes, NESTED_BYTES))
    assert target == eager
    message = lazy(AllTypes, NESTED_BYTES)
    message.MergeFrom(lazy(AllTypes, NESTED_BYTES))
    eager.MergeFrom(codec.decode(AllTypes, NESTED_BYTES))
    assert message == eager
    message = lazy(AllTypes, NESTED_BYTES)
    message.Clear()
    assert message == AllTypes() and codec.encode(message) == b""
    message = lazy(AllTypes, NESTED_BYTES + b"\xf8\x07\x01")  # an unknown field, 127
    message.DiscardUnknownFields()
    assert codec.encode(message, deterministic=True) == NESTED_BYTES


def test_copies_and_pickles_of_a_lazy_message() -> None:
    eager = codec.decode(AllTypes, NESTED_BYTES)
    assert copy.copy(lazy(AllTypes, NESTED_BYTES)) == eager
    assert copy.deepcopy(lazy(AllTypes, NESTED_BYTES)) == eager
    # pickled by class name: a type of protobuf's own, this test schema's descriptor
    file = descriptor_pb2.FileDescriptorProto()
    E.DESCRIPTOR.CopyToProto(file)
    data = file.SerializeToString()
    cls = codec.struct(descriptor_pb2.FileDescriptorProto)
    eager_file = codec.decode(cls, data)
    assert pickle.loads(pickle.dumps(lazy(cls, data))) == eager_file
    assert pickle.loads(pickle.dumps(lazy(cls, data).message_type)) == eager_file.message_type


# --- mutation -----------------------------------------------------------------------------


def test_writes_to_pending_fields() -> None:
    message = lazy(AllTypes, NESTED_BYTES)
    message.r_inner.append(AllTypes.Inner(a=9))  # parsed, then added to
    message.m_int32_int32[5] = 6
    message.recursive = AllTypes(f_int32=7)  # replaces a pending field unread
    message.ClearField("m_string_inner")
    message.c_string = "switched"  # clears the pending oneof member
    expected = E.AllTypes()
    expected.CopyFrom(NESTED)
    expected.r_inner.add(a=9)
    expected.m_int32_int32[5] = 6
    expected.recursive.CopyFrom(E.AllTypes(f_int32=7))
    expected.ClearField("m_string_inner")
    expected.c_string = "switched"
    assert codec.encode(message, deterministic=True) == expected.SerializeToString(
        deterministic=True
    )
    assert not message.HasField("c_inner")


def test_a_field_is_parsed_once_and_then_kept() -> None:
    message = lazy(AllTypes, NESTED_BYTES)
    first = message.r_inner
    assert message.r_inner is first
    assert message.c_inner is message.c_inner
    first[0].a = 42
    assert codec.decode(AllTypes, codec.encode(message)).r_inner[0].a == 42


# --- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "data"),
    [
        (AllTypes, NESTED_BYTES[:-1]),  # truncated inside the last sub-message
        (AllTypes, NESTED_BYTES + tag(130, 2) + b"\x05\x08"),  # a sub-message past the end
        (AllTypes, tag(83, 2) + b"\x03\x1a\x01\xff"),  # invalid UTF-8 in Inner.tags
        (AllTypes, tag(130, 2) + b"\x02\x00\x00"),  # field 0 inside recursive
        # field 0 inside a repeated group: found by the struct fuzz target (finding Y1)
        (WithGroups, bytes.fromhex("2b003b14")),
    ],
)
def test_errors_are_raised_by_the_decode_where_the_eager_decode_raises_them(
    cls: Any, data: bytes
) -> None:
    with pytest.raises(DecodeError) as eager:
        codec.decode(cls, data)
    with pytest.raises(DecodeError) as found:
        lazy(cls, data)
    assert (type(found.value), found.value.offset) == (type(eager.value), eager.value.offset)


def test_the_element_budget_counts_as_the_eager_decode_does() -> None:
    count = 0
    while True:
        try:
            codec.decode(AllTypes, NESTED_BYTES, max_elements=count)
            break
        except DecodeError:
            count += 1
    assert codec.decode(AllTypes, NESTED_BYTES, lazy=True, max_elements=count)
    with pytest.raises(DecodeError, match="max_elements"):
        codec.decode(AllTypes, NESTED_BYTES, lazy=True, max_elements=count - 1)


def test_the_depth_limit_holds_for_pending_fields() -> None:
    data = b""
    for _ in range(30):
        data = b"\x0a" + codec.varint.encode(len(data)) + data  # Chain.child
    chain = codec.struct(E.Chain)
    with pytest.raises(DepthLimitError):
        codec.decode(chain, data, lazy=True, max_depth=10)
    deep = codec.decode(chain, data, lazy=True, max_depth=30)
    for _ in range(30):
        deep = deep.child
    assert deep == chain()


# --- frames read eagerly ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "data"),
    [
        # a singular sub-message given twice: merged (a pending field of each, one number)
        (
            AllTypes,
            tag(130, 2)
            + b"\x04"
            + tag(41, 2)
            + b"\x01\x04"
            + tag(130, 2)
            + b"\x04"
            + tag(41, 2)
            + b"\x01\x05",
        ),
        # a map entry holding an unknown field: kept among the unknown fields
        (AllTypes, tag(91, 2) + b"\x06\x08\x01\x10\x02\x18\x03"),
        # a repeated closed-enum value the enum does not declare: an unknown field
        (Record, b"\x08\x01\x12\x01n\xb8\x01\x63"),
        # groups
        (WithGroups, b"\x13\x18\x01\x14\x2b\x32\x01k\x2c"),
    ],
    ids=["merged", "map-entry-unknown", "closed-enum", "groups"],
)
def test_frames_where_one_field_changes_another_read_as_the_eager_decode(
    cls: Any, data: bytes
) -> None:
    eager = codec.decode(cls, data)
    assert repr(lazy(cls, data)) == repr(eager)
    assert codec.encode(lazy(cls, data), partial=True) == codec.encode(eager, partial=True)


# --- the frame's bytes --------------------------------------------------------------------


def test_a_lazy_message_keeps_a_copy_of_a_mutable_input() -> None:
    source = bytearray(NESTED_BYTES)
    message = lazy(AllTypes, source)
    source[:] = bytes(len(source))  # the input changed: the message read before did not
    source += b"grown"  # and a bytearray with no view of it may be resized
    assert codec.encode(message, deterministic=True) == NESTED_BYTES
    view = memoryview(bytearray(NESTED_BYTES))
    message = lazy(AllTypes, view)
    view.release()
    assert message.r_inner[0].tags == ["t"]


def test_a_lazy_message_of_bytes_keeps_the_bytes_not_a_copy() -> None:
    big = E.AllTypes(r_bytes=[bytes(1000)] * 1000).SerializeToString()
    assert blocks_made(lambda: lazy(AllTypes, big)) < len(big) // 10
    assert blocks_made(lambda: lazy(AllTypes, bytearray(big))) > len(big)


def test_the_frame_is_kept_while_a_pending_field_is_unread_and_freed_after() -> None:
    data = bytes(NESTED_BYTES)
    message = lazy(AllTypes, bytearray(data))
    inner = message.recursive  # parsed: inner itself has pending fields
    del message
    gc.collect()
    assert inner.recursive.p_int32 == [4]  # its frame outlived the message it came from


def test_frame_decoder_gives_lazy_messages_that_survive_its_buffer() -> None:
    frames = [E.Tree(value=i, children=[E.Tree(value=-i)]) for i in range(50)]
    payloads = [frame.SerializeToString() for frame in frames]
    stream = b"".join(codec.varint.encode(len(payload)) + payload for payload in payloads)
    decoder = codec.FrameDecoder(message_type=codec.Decoder(Tree, lazy=True))
    messages = []
    for at in range(0, len(stream), 7):  # the buffer is reused as bytes arrive
        decoder.feed(stream[at : at + 7])
        while (message := decoder.next_frame()) is not None:
            messages.append(message)
    assert [codec.to_pb2(message) for message in messages] == frames


# --- lazy for real ------------------------------------------------------------------------


def test_a_lazy_decode_makes_a_fraction_of_the_eager_objects() -> None:
    data = E.Tree(children=[E.Tree(value=i, named={"x": E.Tree()}) for i in range(500)])
    data_bytes = data.SerializeToString()
    eager = blocks_made(lambda: codec.decode(Tree, data_bytes))
    assert blocks_made(lambda: lazy(Tree, data_bytes)) < eager // 20
    message = lazy(Tree, data_bytes)
    read = blocks_made(lambda: message.children)  # one level: the children, theirs pending
    assert read < eager // 2


def test_decoder_options() -> None:
    decoder = codec.Decoder(AllTypes, lazy=True, zero_copy=True, numpy=True)
    assert decoder.lazy and "lazy=True" in repr(decoder)
    message = decoder.decode(bytearray(NESTED_BYTES))
    assert list(message.p_int64) == [1, -2, 3] and message.p_int64.dtype.name == "int64"
    assert codec.encode(message, deterministic=True) == NESTED_BYTES
    with pytest.raises(TypeError):
        codec.Decoder(AllTypes, lazy="yes")  # type: ignore[arg-type]


# --- threads and the collector --------------------------------------------------------------


def test_threads_reading_one_lazy_message_see_the_same_content() -> None:
    expected = repr(codec.decode(Tree, TREE_BYTES))
    for _ in range(20):
        message = lazy(Tree, TREE_BYTES)
        seen: list[str] = []
        read = functools.partial(lambda into, read: into.append(repr(read)), seen, message)
        threads = [threading.Thread(target=read) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert seen == [expected] * 4


@pytest.mark.skipif(not codec.COMPILED, reason="the pure build tracks every object")
def test_what_a_lazy_read_makes_is_untracked() -> None:
    message = lazy(Tree, TREE_BYTES)
    parts = [message, message.left, message.left.right, message.children, *message.children]
    parts += [message.named, message.named["a"], message.named["a"].named]
    assert not any(gc.is_tracked(part) for part in parts)


def test_a_cycle_through_lazily_read_fields_is_collected() -> None:
    message = lazy(Tree, TREE_BYTES)
    child = message.children[0].children[0]
    child.children.append(message)  # message -> children -> child -> message
    alive = weakref.ref(message)
    del message, child
    gc.collect()
    assert alive() is None


def test_a_tracked_message_keeps_what_it_reads_tracked() -> None:
    """A cycle made before a pending field is read, closed through what it reads."""
    holder = Tree(value=0)
    message = lazy(Tree, TREE_BYTES)
    holder.children.append(message)  # message is now tracked, its fields still pending
    message.named["a"].children.append(holder)  # read after, then the cycle is closed
    alive = weakref.ref(holder)
    del holder, message
    gc.collect()
    assert alive() is None
