"""Legal protobuf names that Python treats specially, in structs as in pb2.

The schema is ``schemas/names/odd_names.proto``: fields named as Python
mangles them (``__x``), as keywords, as the class's own attributes
(``DESCRIPTOR``, pb2's methods, ``mro``) and as hidden slots; enum values
that ``enum`` refuses; nested types and oneofs named as class attributes.
upb is the reference: a struct reaches each name as upb does (on a message
the field wins, on the class the class's own attribute), and its bytes,
decodes and JSON are upb's. Hypothesis adds random names of the same
families. Names of the form ``__x__`` are Python's and refused with a
``SchemaError``; a chain of 10,000 types builds without recursion.
"""

from __future__ import annotations

import copy
import importlib
import keyword
import sys
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message as PbMessage
from hypothesis import assume, given
from hypothesis import strategies as st
from schemas import SCHEMA_DIR

import codec
from codec.cli import main
from codec.structs._descriptor_set import compile_protos
from codec.structs._message import Message

FDP = descriptor_pb2.FieldDescriptorProto


@pytest.fixture(scope="module")
def odd_set() -> bytes:
    return compile_protos(["names/odd_names.proto"], [str(SCHEMA_DIR)])


@pytest.fixture(scope="module")
def structs(odd_set: bytes) -> dict[str, Any]:
    return codec.load_structs(odd_set)


@pytest.fixture(scope="module")
def pb2(odd_set: bytes) -> dict[str, Any]:
    """upb's classes of the same set, in a pool of their own."""
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_pb2.FileDescriptorSet.FromString(odd_set).file:
        pool.Add(file)
    names = ("odd.Names", "odd.Holder")
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(name)) for name in names
    }


_SCALARS: dict[int, Any] = {
    FieldDescriptor.TYPE_INT32: -7,
    FieldDescriptor.TYPE_INT64: -(2**40),
    FieldDescriptor.TYPE_UINT32: 2**31,
    FieldDescriptor.TYPE_SINT32: -3,
    FieldDescriptor.TYPE_DOUBLE: 2.5,
    FieldDescriptor.TYPE_BOOL: True,
    FieldDescriptor.TYPE_STRING: "text é",
    FieldDescriptor.TYPE_BYTES: b"\x00\xff",
    FieldDescriptor.TYPE_ENUM: 3,
}


def _sample(field: FieldDescriptor, make: Any) -> Any:
    """A value for ``field`` that is not its default; ``make`` builds a sub-message."""
    message_type = field.message_type
    if message_type is not None and message_type.GetOptions().map_entry:
        key = _SCALARS[message_type.fields_by_name["key"].type]
        value_field = message_type.fields_by_name["value"]
        return {key: _sample(value_field, make)}
    value = make() if message_type is not None else _SCALARS[field.type]
    return [value, value] if field.is_repeated else value


def _upb_bytes(message: Any) -> bytes:
    """upb's deterministic bytes, through the class: a field may hide the method."""
    encoded: bytes = type(message).SerializeToString(message, deterministic=True)
    return encoded


def _copy_into(target: Any, source: Any) -> None:
    type(target).CopyFrom(target, source)


def _set(message: Any, name: str, value: Any) -> None:
    """Assign ``value`` to a upb message's field as pb2 code does, by kind of field."""
    current = getattr(message, name)
    is_message = isinstance(value, PbMessage)
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, PbMessage):
                _copy_into(current[key], item)
            else:
                current[key] = item
    elif isinstance(value, list):
        for item in value:
            _copy_into(current.add(), item) if isinstance(item, PbMessage) else current.append(item)
    elif is_message:
        _copy_into(current, value)
    else:
        setattr(message, name, value)


def _upb_child(pb2_class: Any) -> Any:
    child = pb2_class()
    setattr(child, "from", 5)
    return child


def _struct_child(struct_class: Any) -> Any:
    return struct_class(**{"from": 5})


def _names_fields(pb2: dict[str, Any]) -> list[FieldDescriptor]:
    return list(pb2["odd.Names"].DESCRIPTOR.fields)


def test_each_field_is_set_and_read_by_its_name_as_upb(
    structs: dict[str, Any], pb2: dict[str, Any]
) -> None:
    Names, Upb = structs["odd.Names"], pb2["odd.Names"]
    for field in _names_fields(pb2):
        name = field.name
        message, reference = Names(), Upb()
        setattr(message, name, _sample(field, lambda: _struct_child(Names)))
        _set(reference, name, _sample(field, lambda: _upb_child(Upb)))
        encoded = codec.encode(message)
        assert encoded == _upb_bytes(reference), name
        read = getattr(message, name)
        expected = getattr(Upb.FromString(encoded), name)
        if field.message_type is not None and not field.is_repeated:
            assert codec.encode(read, deterministic=True) == _upb_bytes(expected), name
        elif field.message_type is None:
            assert list(read) == list(expected) if field.is_repeated else read == expected, name
        assert getattr(Names.FromString(encoded), name) == read, name


def test_constructor_keywords_and_decoding(structs: dict[str, Any], pb2: dict[str, Any]) -> None:
    Names, Upb = structs["odd.Names"], pb2["odd.Names"]
    fields = [
        field for field in _names_fields(pb2) if field.name != "MergeFrom"
    ]  # one oneof member
    message = Names(**{f.name: _sample(f, lambda: _struct_child(Names)) for f in fields})
    reference = Upb()
    for field in fields:
        _set(reference, field.name, _sample(field, lambda: _upb_child(Upb)))
    encoded = _upb_bytes(reference)
    assert codec.encode(message) == encoded
    decoded = codec.decode(Names, encoded)
    assert decoded == message
    assert _upb_bytes(codec.to_pb2(decoded)) == encoded  # a class of the set's own pool
    assert codec.from_pb2(reference, Names) == message
    assert copy.copy(message) == message
    assert "__field_name13=-7" in repr(message) and "DESCRIPTOR=-7" in repr(message)


def test_the_field_wins_on_a_message_the_class_attribute_on_the_class(
    structs: dict[str, Any], pb2: dict[str, Any]
) -> None:
    Names = structs["odd.Names"]
    message = Names(DESCRIPTOR=3, Clear="c", FromString=4, mro=5, ByteSize=6)
    message.HasField = 9
    message._unknown = 8
    assert (message.DESCRIPTOR, message.Clear, message.FromString, message.mro) == (3, "c", 4, 5)
    assert (message.HasField, message._unknown) == (9, 8)
    assert Names.DESCRIPTOR.full_name == "odd.Names"
    assert Names.mro()[0] is Names
    assert Names.FromString(codec.encode(message)) == message
    # pb2's methods, reached through the class where a field hides them on the message
    assert Names.HasField(message, "ByteSize") and Names.ByteSize(message) > 0
    listed = [field.name for field, _ in Names.ListFields(message)]
    assert listed == [
        "DESCRIPTOR",
        "Clear",
        "HasField",
        "FromString",
        "mro",
        "_unknown",
        "ByteSize",
    ]
    other = Names()
    Names.CopyFrom(other, message)
    assert other == message
    Names.MergeFrom(other, Names(__a=1))
    assert Names.WhichOneof(other, "__choice") == "__a"
    Names.Clear(other)
    assert other == Names() and codec.unknown_fields(other) == b""
    # JSON: json_format reads a message's DESCRIPTOR, a field here, in pb2 as in codec
    with pytest.raises(AttributeError):
        json_format.MessageToJson(pb2["odd.Names"](DESCRIPTOR=1))
    with pytest.raises(AttributeError):
        codec.to_json(message)


def test_json_of_odd_names_is_json_formats(structs: dict[str, Any], pb2: dict[str, Any]) -> None:
    Holder, Upb = structs["odd.Holder"], pb2["odd.Holder"]
    inner = getattr(Holder, "__Inner")(c=3)
    message = Holder(clear=structs["odd.Holder.Clear"](a=1), inner=inner, q=2, flags=2)
    reference = Upb.FromString(codec.encode(message))
    assert codec.to_json(message) == json_format.MessageToJson(reference)
    assert codec.from_json(Holder, codec.to_json(message)) == message


def test_enum_values_enum_refuses_read_as_ints(
    structs: dict[str, Any], pb2: dict[str, Any]
) -> None:
    Kind, Names = structs["odd.Kind"], structs["odd.Names"]
    enum_type = pb2["odd.Names"].DESCRIPTOR.fields_by_name["kind"].enum_type
    values = {value.name: value.number for value in enum_type.values}
    refused = {"mro", "_x_", "_Kind__z", "DESCRIPTOR", "items", "keys"}  # enum's and pb2's names
    assert set(Kind.__members__) == set(values) - refused
    assert Kind.Value("mro") == 1 and Kind.Name(7) == "_Kind__z" and Kind.keys() == list(values)
    assert Kind.Value("keys") == 11 and Kind.DESCRIPTOR.full_name == "odd.Kind"
    assert Names(kind="mro").kind == 1 and Names(kind="_x_").kind == 2
    for name, number in values.items():
        message = Names.FromString(_upb_bytes(pb2["odd.Names"](kind=number)))
        assert message.kind == number
        if name in refused:
            assert type(message.kind) is int
        else:
            assert message.kind is Kind[name]
        assert codec.encode(Names(kind=number)) == codec.encode(message)


def test_nested_types_enums_and_oneofs_named_as_class_attributes(
    structs: dict[str, Any], pb2: dict[str, Any]
) -> None:
    Holder, Upb = structs["odd.Holder"], pb2["odd.Holder"]
    for name in ("Clear", "DESCRIPTOR", "FromString", "HasField", "mro", "mro_"):
        theirs, ours = getattr(Upb, name, None), getattr(Holder, name, None)
        if name in ("Clear", "FromString", "HasField"):  # pb2's methods stay the class's
            assert callable(ours) and ours is not structs.get(f"odd.Holder.{name}"), name
        elif name == "DESCRIPTOR":
            assert ours.full_name == theirs.full_name == "odd.Holder"
        else:
            assert (ours == theirs) if not callable(theirs) else callable(ours), name
    assert getattr(Holder, "__Inner") is structs["odd.Holder.__Inner"]
    assert Holder.Flags is structs["odd.Holder.Flags"]
    assert Holder.Flags.HasField == 1 and Holder.mro_ == 1
    message = Holder(p=1)
    for oneof, member, value in (("DESCRIPTOR_", "p", 1), ("class", "r", "x"), ("__pick", "s", 3)):
        setattr(message, member, value)
        assert message.WhichOneof(oneof) == member
        reference = Upb.FromString(codec.encode(message))
        assert reference.WhichOneof(oneof) == member
    message.q = 4
    assert message.WhichOneof("class") == "q" and not message.HasField("r")


@pytest.mark.parametrize("name", ["__init__", "__class__", "__slots__", "__plan__", "__x__"])
def test_a_field_named_as_python_names_its_own_is_a_schema_error(name: str) -> None:
    Upb = _message_class([name], package=f"dunder{abs(hash(name))}")
    with pytest.raises(codec.errors.SchemaError, match=rf"field dunder\d+\.M\.{name}: .*__x__"):
        codec.struct(Upb)


def test_a_class_that_cannot_be_made_leaves_nothing_behind() -> None:
    """All or nothing: the types planned before the error are planned again, whole."""
    file = descriptor_pb2.FileDescriptorProto(name="half.proto", package="half")
    good = file.message_type.add(name="Good")
    good.field.add(name="value", number=1, type=FDP.TYPE_INT32, label=FDP.LABEL_OPTIONAL)
    bad = file.message_type.add(name="Bad")
    bad.field.add(name="good", number=1, type=FDP.TYPE_MESSAGE, type_name=".half.Good")
    bad.field.add(name="__init__", number=2, type=FDP.TYPE_INT32, label=FDP.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    for _ in range(2):
        with pytest.raises(codec.errors.SchemaError, match=r"half\.Bad\.__init__"):
            codec.struct(pool.FindMessageTypeByName("half.Bad"))
    Good = codec.struct(pool.FindMessageTypeByName("half.Good"))
    assert Good is not None and codec.decode(Good, b"\x08\x07").value == 7


def _message_class(names: list[str], package: str, repeated: str | None = None) -> Any:
    """A upb class of message ``M`` with an int32 field of each name (and a repeated one)."""
    file = descriptor_pb2.FileDescriptorProto(name=f"{package}.proto", package=package)
    file.syntax = "proto3"
    message = file.message_type.add(name="M")
    for number, name in enumerate(names, 1):
        message.field.add(name=name, number=number, type=FDP.TYPE_INT32, label=FDP.LABEL_OPTIONAL)
    if repeated is not None:
        message.field.add(
            name=repeated, number=len(names) + 1, type=FDP.TYPE_INT32, label=FDP.LABEL_REPEATED
        )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.M"))


# Names of the families above, and random identifiers shaped like them.
_ODD = [
    *keyword.kwlist,
    *(name for name in dir(Message) if not name.startswith("__")),
    "DESCRIPTOR",
    "mro",
    "_has",
    "_has_more",
    "_unknown",
    "_extensions",
    "_1",
    "_M__x",
]
_NAMES = st.one_of(
    st.sampled_from(_ODD),
    st.from_regex(r"(__|_|)[A-Za-z][A-Za-z0-9_]{0,5}(_items|_part|_|)", fullmatch=True),
).filter(lambda name: not (name.startswith("__") and name.endswith("__")))


@given(names=st.lists(_NAMES, min_size=1, max_size=6, unique=True), data=st.data())
def test_random_names_work_as_in_upb(names: list[str], data: st.DataObject) -> None:
    *singular, repeated = names
    try:
        Upb = _message_class(singular, package="random", repeated=repeated)
    except TypeError:  # names upb refuses (a JSON name twice)
        assume(False)
    Struct = codec.struct(Upb)
    values = {name: data.draw(st.integers(-(2**31), 2**31 - 1), label=name) for name in singular}
    items = data.draw(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=3), label=repeated)
    message = Struct(**values, **{repeated: items})
    reference = Upb(**values, **{repeated: items})
    assert codec.encode(message, deterministic=True) == _upb_bytes(reference)
    for name in singular:
        assert getattr(message, name) == getattr(reference, name) == values[name]
        setattr(message, name, 1)
        setattr(reference, name, 1)
    getattr(message, repeated).append(9)
    getattr(reference, repeated).append(9)
    assert codec.encode(message, deterministic=True) == _upb_bytes(reference)
    assert Struct.FromString(_upb_bytes(reference)) == message


def _chain(length: int) -> descriptor_pb2.FileDescriptorProto:
    """A file of message types M0 ... M<length - 1>, each holding the next."""
    file = descriptor_pb2.FileDescriptorProto(name="chain.proto", package="chain", syntax="proto3")
    for index in range(length):
        message = file.message_type.add(name=f"M{index}")
        message.field.add(name="value", number=1, type=FDP.TYPE_INT32, label=FDP.LABEL_OPTIONAL)
        if index + 1 < length:
            message.field.add(
                name="next",
                number=2,
                type=FDP.TYPE_MESSAGE,
                type_name=f".chain.M{index + 1}",
                label=FDP.LABEL_OPTIONAL,
            )
    return file


def test_a_chain_of_10000_types_each_holding_the_next_builds() -> None:
    file = _chain(10_000)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    First = codec.struct(pool.FindMessageTypeByName("chain.M0"))  # upb's classes recurse
    Last = codec.struct(pool.FindMessageTypeByName("chain.M9999"))
    assert First.DESCRIPTOR.fields_by_name["next"].message_type.name == "M1"
    Before = codec.struct(pool.FindMessageTypeByName("chain.M9998"))
    message = Before(value=1, next=Last(value=2))
    reference = message_factory.GetMessageClass(Before.DESCRIPTOR)(value=1)
    reference.next.value = 2
    assert codec.encode(message, deterministic=True) == _upb_bytes(reference)
    loaded = codec.load_structs(descriptor_pb2.FileDescriptorSet(file=[file]))
    assert len(loaded) == 10_000
    assert codec.decode(loaded["chain.M0"], b"\x12\x02\x08\x05").next.value == 5


def test_a_nested_type_made_before_the_type_holding_it() -> None:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_chain(3))
    file = descriptor_pb2.FileDescriptorProto(name="outer.proto", package="outer")
    outer = file.message_type.add(name="Outer")
    outer.nested_type.add(name="Inner").field.add(
        name="value", number=1, type=FDP.TYPE_INT32, label=FDP.LABEL_OPTIONAL
    )
    pool.Add(file)
    Inner = codec.struct(pool.FindMessageTypeByName("outer.Outer.Inner"))
    Outer = codec.struct(pool.FindMessageTypeByName("outer.Outer"))
    assert Outer.Inner is Inner
    Middle = codec.struct(pool.FindMessageTypeByName("chain.M1"))
    First = codec.struct(pool.FindMessageTypeByName("chain.M0"))
    assert First(next=Middle(value=2)).next.value == 2


def test_a_generated_module_of_odd_names_imports_and_works(tmp_path: Path) -> None:
    argv = ["generate", "-I", str(SCHEMA_DIR), "-o", str(tmp_path), "names/odd_names.proto"]
    assert main(argv) == 0
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("names.odd_names_structs")
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name.split(".")[0] == "names"]:
            del sys.modules[name]
    message = module.Names(__field_name13=1, DESCRIPTOR=2, **{"from": 3, "None": True})
    assert module.Names.FromString(codec.encode(message)) == message
    assert getattr(message, "from") == 3 and message.DESCRIPTOR == 2
    assert module.Names.DESCRIPTOR.full_name == "odd.Names"
    assert module.Holder.Flags.HasField == 1
