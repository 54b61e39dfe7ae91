"""Structs as a drop-in for pb2 classes: pb2's methods and semantics, enums, nested types,
one class per descriptor, pickle and copy.

Each test does the same thing to a struct and to the equivalent google.protobuf
(upb) message and compares what comes out: pb2 is the specification here.
"""

from __future__ import annotations

import copy
import enum
import pickle
import subprocess
import sys
import threading
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2
from google.protobuf.internal import enum_type_wrapper
from helpers.unchecked import put
from schemas import everything_pb2 as E
from schemas import extensions_2023_pb2, file_descriptor_set, file_descriptor_set_bytes
from schemas import legacy_pb2 as L

import codec

AllTypes = codec.struct(E.AllTypes)
Record = codec.struct(L.Record)
Link = codec.struct(L.Link)
Holder = codec.struct(extensions_2023_pb2.Holder)


def _pb2_all_types() -> Any:
    message = E.AllTypes(f_int32=-5, f_string="hi", f_color=3, f_shape=2)
    message.p_int32.extend([1, -2, 3])
    message.m_string_string["a"] = "1"  # type: ignore[index]
    message.f_inner.a = 9
    message.f_inner.tags.append("x")
    message.c_inner.a = 4
    return message


def _same(struct: Any, message: Any) -> None:
    assert struct.SerializeToString(deterministic=True) == message.SerializeToString(
        deterministic=True
    )


# --- pb2's methods ------------------------------------------------------------------


def test_serialize_and_parse_as_pb2() -> None:
    message = _pb2_all_types()
    value = AllTypes.FromString(message.SerializeToString())
    _same(value, message)
    assert value.SerializePartialToString(deterministic=True) == message.SerializePartialToString(
        deterministic=True
    )
    assert value.ByteSize() == message.ByteSize()
    other = AllTypes(f_int64=3)
    assert other.ParseFromString(message.SerializeToString()) == message.ByteSize()
    assert other == value  # replaced, not merged: f_int64 is gone


def test_from_string_takes_any_buffer() -> None:
    data = _pb2_all_types().SerializeToString()
    for buffer in (data, bytearray(data), memoryview(data)):
        assert AllTypes.FromString(buffer) == AllTypes.FromString(data)


@pytest.mark.parametrize("how", ["MergeFrom", "MergeFromString"])
def test_merge_as_pb2(how: str) -> None:
    base = E.AllTypes(f_int32=1, f_string="kept")
    base.p_int32.extend([1, 2])
    base.f_inner.a = 5
    base.m_string_string["a"] = "1"  # type: ignore[index]
    base.m_string_string["b"] = "2"  # type: ignore[index]
    extra = E.AllTypes(f_int32=7)
    extra.p_int32.append(3)
    extra.f_inner.tags.append("t")
    extra.m_string_string["b"] = "20"  # type: ignore[index]
    value = AllTypes.FromString(base.SerializeToString())
    if how == "MergeFrom":
        value.MergeFrom(AllTypes.FromString(extra.SerializeToString()))
        base.MergeFrom(extra)
    else:
        assert value.MergeFromString(extra.SerializeToString()) == extra.ByteSize()
        base.MergeFromString(extra.SerializeToString())
    _same(value, base)
    assert value.p_int32 == [1, 2, 3] and value.f_inner.a == 5 and value.f_inner.tags == ["t"]
    assert value.m_string_string == {"a": "1", "b": "20"}


def test_a_failed_merge_changes_nothing() -> None:
    value = AllTypes(f_int32=1, p_int32=[4])
    with pytest.raises(codec.DecodeError):
        value.MergeFromString(b"\x0a\x05ab")  # a length past the end
    assert value == AllTypes(f_int32=1, p_int32=[4])
    with pytest.raises(
        TypeError, match=r"expected a struct or a pb2 message of everything\.AllTypes, not Leaf"
    ):
        value.MergeFrom(codec.struct(E.Leaf)())


def test_clear_and_copy_from() -> None:
    value = AllTypes.FromString(_pb2_all_types().SerializeToString())
    source = AllTypes(f_int32=3, c_string="s")
    value.CopyFrom(source)
    assert value == source and value is not source
    source.f_int32 = 4
    assert value.f_int32 == 3  # a copy, not shared
    value.CopyFrom(value)
    assert value.f_int32 == 3
    value.Clear()
    assert value == AllTypes() and value.SerializeToString() == b""
    decoded = AllTypes.FromString(b"\xf8\xff\xff\xff\x0f\x01")  # an unknown field 0x1fffffff
    decoded.Clear()
    assert codec.unknown_fields(decoded) == b""


def test_list_fields_as_pb2() -> None:
    message = _pb2_all_types()
    message.f_double = -0.0  # written, so listed, as pb2 lists it
    value = AllTypes.FromString(message.SerializeToString())
    listed = value.ListFields()
    expected = message.ListFields()
    assert [field for field, _ in listed] == [field for field, _ in expected]
    for (field, mine), (_, theirs) in zip(listed, expected, strict=True):
        if field.message_type is None:
            assert mine == theirs, field.name
        elif field.message_type.GetOptions().map_entry:
            assert dict(mine) == dict(theirs), field.name
        else:
            assert codec.to_pb2(mine) == theirs, field.name


@pytest.mark.parametrize(
    ("setup", "name"),
    [
        pytest.param({}, "choice", id="oneof-unset"),
        pytest.param({"c_uint32": 0}, "choice", id="oneof-set-to-zero"),
        pytest.param({"c_inner": {}}, "choice", id="oneof-message"),
        pytest.param({}, "_o_int32", id="optional-unset"),
        pytest.param({"o_int32": 0}, "_o_int32", id="optional-set-to-zero"),
    ],
)
def test_oneof_names_in_has_clear_and_which_as_pb2(setup: dict[str, Any], name: str) -> None:
    """A oneof's name, a proto3 optional field's synthetic one (``_o_int32``) too."""
    theirs = E.AllTypes(**setup)
    mine = AllTypes.FromString(theirs.SerializeToString())
    assert mine.WhichOneof(name) == theirs.WhichOneof(name)
    assert mine.HasField(name) == theirs.HasField(name)
    mine.ClearField(name)
    theirs.ClearField(name)
    assert (mine.WhichOneof(name), mine.HasField(name)) == (None, False)
    assert codec.encode(mine) == theirs.SerializeToString(deterministic=True)
    with pytest.raises(ValueError):
        mine.HasField("no_such_oneof")
    with pytest.raises(ValueError):
        theirs.HasField("no_such_oneof")


def test_a_constructor_takes_dicts_for_messages_and_refuses_unknown_keywords_as_pb2() -> None:
    fields = {"f_inner": {"a": 3, "leaf": {"label": "l"}}, "f_leaf": {"id": 1}}
    theirs = E.AllTypes(**fields)
    mine = AllTypes(**fields)
    assert codec.encode(mine) == theirs.SerializeToString(deterministic=True)
    assert type(mine.f_inner) is AllTypes.Inner and mine.f_inner.leaf.label == "l"
    mine.f_inner = {"a": 4}  # structs take more than pb2: an assignment too
    assert mine.f_inner == AllTypes.Inner(a=4)
    for cls in (E.AllTypes, AllTypes):
        with pytest.raises(ValueError, match="nope"):  # pb2's type
            cls(nope=1)
    with pytest.raises(TypeError, match="nope"):  # and Python's, for a bad keyword
        AllTypes(nope=1)
    with pytest.raises(codec.EncodeError):  # a dict's value is checked as a keyword's
        AllTypes(f_inner={"leaf": {"id": 2**40}})


def test_required_fields() -> None:
    link = Link(next=Link(next=Link()))
    pb2 = L.Link(next=L.Link(next=L.Link()))
    assert link.FindInitializationErrors() == pb2.FindInitializationErrors()
    assert not link.IsInitialized() and not pb2.IsInitialized()
    missing = r"missing required fields: a, next\.a, next\.next\.a$"
    with pytest.raises(codec.EncodeError, match=missing):
        link.SerializeToString()
    assert link.SerializePartialToString() == pb2.SerializePartialToString()
    record = Record(id=1)
    with pytest.raises(codec.EncodeError, match=r"missing required fields: name$"):
        record.SerializeToString()
    record.name = "n"
    assert record.IsInitialized()
    assert record.SerializeToString() == L.Record(id=1, name="n").SerializeToString()


@pytest.mark.parametrize(
    "message", [Link(next=Link()), L.Link(next=L.Link())], ids=["struct", "pb2"]
)
def test_encoders_refuse_missing_required_fields_unless_partial(message: Any) -> None:
    expected = L.Link(next=L.Link()).SerializePartialToString()
    encoder = codec.FrameEncoder()
    encoder.write(b"kept")
    with pytest.raises(codec.EncodeError, match="required"):
        encoder.encode(message)
    assert bytes(encoder.getbuffer()) == b"\x04kept"  # nothing written
    assert encoder.encode(message, partial=True) == 1 + len(expected)
    assert bytes(encoder.getbuffer()).endswith(expected)
    buffer = bytearray(b"x")
    with pytest.raises(codec.EncodeError, match="required"):
        codec.encode_frame_into(message, buffer)
    assert buffer == b"x"
    assert codec.encode_frame_into(message, buffer, partial=True) == 2 + len(expected)


def test_module_functions_agree_with_the_methods() -> None:
    link = Link(next=Link(a=1))
    with pytest.raises(codec.EncodeError, match=r"legacy\.Link is missing required fields: a$"):
        codec.encode(link)
    assert codec.encode(link, partial=True) == link.SerializePartialToString()
    assert codec.encoded_size(link) == link.ByteSize() == len(link.SerializePartialToString())
    link.a = 2
    assert (
        codec.encode(link)
        == link.SerializeToString()
        == L.Link(a=2, next=L.Link(a=1)).SerializeToString()
    )


def test_required_fields_inside_repeated_and_maps() -> None:
    pb2 = L.WithGroups()
    pb2.entry.add()
    value = codec.from_pb2(pb2)
    assert value.FindInitializationErrors() == pb2.FindInitializationErrors() == ["entry[0].key"]


def test_values_stored_around_the_checks_do_not_break_the_required_check() -> None:
    """The encoder refuses a wrong value with its own EncodeError, required fields or not."""
    for name, bad in (("next", 5), ("next", [Link()])):
        link = Link(a=1)
        put(link, name, bad)  # the slot, around the check
        assert link.FindInitializationErrors() == []
        with pytest.raises(codec.EncodeError, match=r"legacy\.Link\.next: expected"):
            codec.encode(link)
    groups = codec.struct(L.WithGroups)()
    groups.__class__.__dict__["_entry_items"].__set__(groups, 7)  # a repeated group, not a list
    with pytest.raises(codec.EncodeError, match="expected a sequence"):
        codec.encode(groups)


def test_legacy_required_in_an_edition_as_pb2() -> None:
    """``features.field_presence = LEGACY_REQUIRED`` is a required field (edition 2023)."""
    for cls in (extensions_2023_pb2.Holder, Holder):
        message = cls(x=1)
        assert not message.IsInitialized()
        assert message.FindInitializationErrors() == ["needed"]
        with pytest.raises(Exception, match="needed"):
            message.SerializeToString()
        assert message.SerializePartialToString() == b"\x08\x01"
        message.needed = 0
        assert message.SerializeToString() == b"\x08\x01\x10\x00"
    with pytest.raises(
        codec.EncodeError, match=r"exts2023.Holder is missing required fields: needed"
    ):
        codec.encode(Holder(x=1))


def test_a_message_without_required_fields_is_always_initialized() -> None:
    assert AllTypes().IsInitialized()
    assert AllTypes().FindInitializationErrors() == []


# --- enums -------------------------------------------------------------------------


def test_enum_types_are_int_enums() -> None:
    shape = AllTypes.Shape
    assert issubclass(shape, enum.IntEnum)
    assert [(member.name, int(member)) for member in shape] == [
        (value.name, value.number) for value in E.AllTypes.Shape.DESCRIPTOR.values
    ]
    assert AllTypes.SHAPE_ROUND is shape.SHAPE_ROUND == E.AllTypes.SHAPE_ROUND
    assert Record.Kind.KIND_SPECIAL == 9 and Record.KIND_SPECIAL is Record.Kind.KIND_SPECIAL


@pytest.mark.parametrize(
    "ours",
    [
        pytest.param(AllTypes.Shape, id="nested"),
        pytest.param(codec.load_structs(E)["everything.Color"], id="top-level"),
        pytest.param(Record.Kind, id="closed"),
    ],
)
def test_enum_types_have_pb2s_methods(ours: Any) -> None:
    theirs = enum_type_wrapper.EnumTypeWrapper(ours.DESCRIPTOR)  # what a _pb2 module holds
    assert issubclass(ours, codec.Enum)
    assert ours.keys() == theirs.keys()
    assert ours.values() == theirs.values()
    assert ours.items() == theirs.items()
    for name, number in theirs.items():
        assert ours.Name(number) == theirs.Name(number) and ours.Value(name) == number
    for call, argument in (("Name", 12345), ("Value", "NO_SUCH_NAME")):
        with pytest.raises(ValueError):
            getattr(theirs, call)(argument)
        with pytest.raises(ValueError, match=f"{theirs.DESCRIPTOR.full_name} has no"):
            getattr(ours, call)(argument)


def test_top_level_enums_come_with_the_messages() -> None:
    structs = codec.load_structs(E)
    color = structs["everything.Color"]
    assert issubclass(color, enum.IntEnum) and color.COLOR_INFRARED == -1
    assert structs["everything.AllTypes.Shape"] is AllTypes.Shape
    assert codec.load_structs(file_descriptor_set_bytes())["legacy.Level"].LEVEL_HIGH == 5


def test_decoded_enum_fields_are_members_and_unknown_open_values_ints() -> None:
    message = E.AllTypes(f_color=1, f_shape=-7)
    message.p_color.extend([1, 3, 77])
    message.m_sint32_color[1] = 2  # type: ignore[index]
    value = AllTypes.FromString(message.SerializeToString() + b"\x80\x01\x2a")  # f_color = 42
    assert value.f_color == 42 and type(value.f_color) is int  # the last one on the wire
    assert value.f_shape is AllTypes.Shape.SHAPE_INSIDE_OUT
    assert [type(item).__name__ for item in value.p_color] == ["Color", "Color", "int"]
    assert type(value.m_sint32_color[1]).__name__ == "Color"
    assert type(AllTypes().f_color).__name__ == "Color"  # the default too


def test_closed_enum_default_and_values() -> None:
    assert Record().level is codec.load_structs(L)["legacy.Level"].LEVEL_HIGH  # [default = ...]
    record = Record.FromString(L.Record(id=1, name="n", kind=9).SerializeToString())
    assert record.kind is Record.KIND_SPECIAL


def test_enum_assignment_takes_a_member_a_number_or_a_name() -> None:
    value = AllTypes()
    value.f_shape = AllTypes.SHAPE_ROUND
    assert value.f_shape is AllTypes.SHAPE_ROUND
    value.f_shape = 1
    assert value.f_shape is AllTypes.SHAPE_SQUARE
    value.f_shape = "SHAPE_INSIDE_OUT"
    assert value.f_shape is AllTypes.SHAPE_INSIDE_OUT
    value.f_shape = 99  # an open enum keeps an undeclared number
    assert value.f_shape == 99 and type(value.f_shape) is int
    pb2 = E.AllTypes()
    for bad in ("NO_SUCH_SHAPE", "COLOR_RED"):
        with pytest.raises(ValueError, match="is not a name of the enum"):
            value.f_shape = bad
        with pytest.raises(ValueError):
            pb2.f_shape = bad  # pb2 refuses them too
    assert (
        AllTypes(f_shape="SHAPE_ROUND").SerializeToString()
        == E.AllTypes(f_shape="SHAPE_ROUND").SerializeToString()
    )
    record = Record()
    with pytest.raises(ValueError, match="closed enum"):
        record.level = 2


# --- nested types ------------------------------------------------------------------


def test_nested_types_are_class_attributes() -> None:
    assert AllTypes.Inner is codec.struct(E.AllTypes.Inner)
    assert AllTypes.Inner(a=1).SerializeToString() == E.AllTypes.Inner(a=1).SerializeToString()
    assert codec.struct(L.WithGroups).Entry is codec.struct(L.WithGroups.Entry)
    assert not hasattr(AllTypes, "MInt32Int32Entry")  # map entries are not types of their own


# --- one class per descriptor ------------------------------------------------------


def test_one_class_per_descriptor() -> None:
    assert codec.struct(E.AllTypes) is codec.struct(E.AllTypes.DESCRIPTOR) is AllTypes
    structs = codec.load_structs(E)
    assert structs["everything.AllTypes"] is AllTypes


def test_classes_of_two_pools_coexist() -> None:
    mine = codec.load_structs(file_descriptor_set_bytes())
    other = mine["everything.AllTypes"]
    assert other is not AllTypes
    assert codec.struct(E.AllTypes) is AllTypes  # loading the set replaced nothing
    data = _pb2_all_types().SerializeToString()
    assert other.FromString(data).SerializeToString() == data
    leaf = mine["everything.Leaf"]
    value = AllTypes()
    mixed = r"a struct of everything\.Leaf from another descriptor pool"
    with pytest.raises(TypeError, match=mixed):
        value.k_leaf = leaf()
    unchecked = AllTypes()
    put(unchecked, "k_leaf", leaf())  # the slot, around the check
    with pytest.raises(codec.EncodeError, match=mixed):
        codec.encode(unchecked)


def test_classes_are_made_once_when_threads_ask_at_once() -> None:
    pool = descriptor_pool.DescriptorPool()
    for file in file_descriptor_set().file:
        pool.Add(file)
    names = ["everything.Tree", "everything.AllTypes", "legacy.Record", "everything.Chain"]
    threads = 8
    barrier = threading.Barrier(threads)
    got: list[list[Any]] = [[] for _ in range(threads)]
    failures: list[BaseException] = []

    def ask(index: int) -> None:
        try:
            barrier.wait()
            for name in names:
                cls = codec.struct(pool.FindMessageTypeByName(name))
                got[index].append(cls)
                codec.encode(cls(), partial=True)  # legacy.Record has required fields
            tree = got[index][0]
            codec.encode(tree(children=[tree()]))
        except BaseException as error:  # reported below
            failures.append(error)

    workers = [threading.Thread(target=ask, args=(index,)) for index in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not failures
    assert all(classes == got[0] for classes in got)
    assert all(cls is not None for cls in got[0])


# --- pickle and copy ---------------------------------------------------------------


def _importable_message() -> Any:
    proto = descriptor_pb2.DescriptorProto(name="M")
    proto.field.add(name="f", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32)
    proto.reserved_range.add(start=5, end=9)
    return codec.from_pb2(proto)


def test_pickle_round_trip() -> None:
    value = _importable_message()
    again = pickle.loads(pickle.dumps(value))
    assert again == value and type(again) is type(value)
    nested = value.reserved_range[0]  # a nested type's struct, found through its _pb2 class
    assert pickle.loads(pickle.dumps(nested)) == nested
    stamp = codec.from_pb2(timestamp_pb2.Timestamp(seconds=5, nanos=6))
    assert pickle.loads(pickle.dumps(stamp, protocol=pickle.HIGHEST_PROTOCOL)) == stamp


def test_a_struct_missing_required_fields_pickles_and_copies_as_pb2s_do() -> None:
    """A pickle is the partial encoding: the missing fields stay missing."""
    part = codec.struct(descriptor_pb2.UninterpretedOption.NamePart)(name_part="x")
    for again in (pickle.loads(pickle.dumps(part)), copy.copy(part), copy.deepcopy(part)):
        assert again == part and not again.IsInitialized()


def test_unpickle_in_another_process() -> None:
    data = pickle.dumps(_importable_message())
    script = (
        "import pickle, sys\n"
        "value = pickle.loads(sys.stdin.buffer.read())\n"
        "print(type(value).__qualname__, value.name, value.field[0].name,"
        " value.reserved_range[0].end)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=data, capture_output=True, check=True, timeout=120
    )
    assert done.stdout.decode().split() == ["google.protobuf.DescriptorProto", "M", "f", "9"]


def test_a_class_from_a_descriptor_set_does_not_pickle() -> None:
    value = codec.load_structs(file_descriptor_set_bytes())["everything.Leaf"](id=1)
    with pytest.raises(pickle.PicklingError, match=r"cannot pickle a struct of everything\.Leaf:"):
        pickle.dumps(value)


def test_copy_and_deepcopy_are_independent() -> None:
    value = AllTypes.FromString(_pb2_all_types().SerializeToString())
    for made in (copy.copy(value), copy.deepcopy(value)):
        assert made == value and made is not value
        made.p_int32.append(100)
        made.f_inner.a = 0
        assert value.p_int32 == [1, -2, 3] and value.f_inner.a == 9


# --- JSON ---------------------------------------------------------------------------


def test_json_as_json_format() -> None:
    from google.protobuf import json_format, struct_pb2

    message = _pb2_all_types()
    message.f_bytes = b"\x00\xff"
    message.f_int64 = -(2**40)
    value = AllTypes.FromString(message.SerializeToString())
    for options in ({}, {"preserving_proto_field_name": True, "use_integers_for_enums": True}):
        assert codec.to_dict(value, **options) == json_format.MessageToDict(message, **options)
    assert codec.to_json(value, indent=None) == json_format.MessageToJson(message, indent=None)
    assert codec.from_dict(AllTypes, codec.to_dict(value)) == value
    assert codec.from_json(AllTypes, codec.to_json(value)) == value
    stamp = codec.from_pb2(timestamp_pb2.Timestamp(seconds=5, nanos=6))
    assert codec.to_json(stamp) == '"1970-01-01T00:00:05.000000006Z"'
    tree = {"a": [1, "x", None, {"b": True}]}
    Value = codec.struct(struct_pb2.Struct)
    assert codec.to_dict(codec.from_dict(Value, tree)) == tree


def test_json_errors_are_json_formats() -> None:
    from google.protobuf import json_format

    with pytest.raises(json_format.ParseError, match="no_such_field"):
        codec.from_dict(AllTypes, {"no_such_field": 1})
    assert codec.from_dict(AllTypes, {"no_such_field": 1}, ignore_unknown_fields=True) == AllTypes()
    with pytest.raises(TypeError, match="expected a struct class"):
        codec.from_json(int, "{}")
