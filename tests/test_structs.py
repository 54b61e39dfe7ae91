"""Unit tests of structs: message classes generated from descriptors (``codec.struct``).

What is checked, in both builds (compiled core and ``CODEC_PURE_PYTHON=1``),
against the schemas of ``tests/schemas`` and, where a behaviour has a
reference, against upb (google.protobuf):

* ``codec.struct`` (from a class or a descriptor, cached, nested types map to
  struct classes) and ``codec.load_structs`` (``_pb2`` module,
  ``FileDescriptorSet`` message or its bytes, descriptor.proto itself; a
  set's files in any order, well-known imports left out, a missing import);
* construction: keywords, the default of every field shape (fresh lists and
  dicts), unknown keywords, assignment, ``==`` and ``repr``;
* encoding: byte-identical to ``SerializeToString(deterministic=True)`` for
  hand-picked values (zero values, ``-0.0``, presence, map key order, oneof
  members, groups, numpy arrays, long lengths), ``encoded_size``,
  ``EncodeError`` naming the field for out-of-range and wrong-type values
  (and for any odd value put in any field: nothing else may escape);
* oneofs (``which_oneof``, two members set), unknown fields (kept in order,
  written last, carried by ``to_pb2``/``from_pb2``);
* decoding from every kind of contiguous buffer, ``zero_copy`` (memoryviews
  into the input) and ``numpy`` (packed fields as arrays);
* the must-accept inputs: non-minimal varints, packed and unpacked input for
  one field, last value wins, sub-messages merge, wrong wire type kept as an
  unknown field, int32 truncation, any non-zero bool;
* the bad-input catalogue (``docs/bad-inputs.md``) beyond the vectors
  ``test_hostile`` runs through ``codec.decode``: unclosed groups, a
  declared length that reserves nothing, the depth limit (100 nested
  messages accepted, 101 rejected, as upb; 100,000 levels rejected at once,
  through fields, repeated fields, maps and unknown groups, without
  ``RecursionError``);
* framing: ``FrameEncoder.encode``, ``encode_frame_into`` and
  ``FrameDecoder(message_type=...)`` with structs.

Offsets of decode errors (the spec leaves them open; the varint layer and the
frame decoder already follow the same idea): the first byte of the wire item at
fault. A truncated varint or fixed-width value: its first byte. A bad tag
(field 0, too high, overlong, wire type 6/7, unmatched or mismatched end
group): the tag's first byte. A length-delimited value that runs past the end
of its buffer or of its enclosing message: its length prefix (the length is
what is wrong, as for a frame). A value whose content is wrong (a packed
fixed-width run whose length is not a multiple of the element size, a proto3
string that is not UTF-8, a sub-message nested one level too deep): the first
byte of that content, just after its length prefix.

Random and differential properties are in ``test_structs_differential.py``.
"""

from __future__ import annotations

import array
import contextlib
import math
import random
import string
import struct as pystruct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("grpc_tools", reason="the struct tests compile .proto files with grpcio-tools")

from google.protobuf import descriptor_pb2, message_factory
from google.protobuf import message as protobuf_message
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.internal.encoder import _VarintBytes
from helpers.deep import map_levels, nested
from helpers.heap import peak_after_warm_up
from helpers.unchecked import unchecked
from hypothesis import given
from hypothesis import strategies as st
from schemas import (
    editions_pb2,
    everything_pb2,
    file_descriptor_set,
    file_descriptor_set_bytes,
    legacy_pb2,
    message_classes,
)

import codec
from codec import DecodeError, EncodeError, _wire
from codec.errors import DepthLimitError, SchemaError, TruncatedError, WireFormatError
from codec.structs import _schema

FD = FieldDescriptor
E = everything_pb2
L = legacy_pb2


def varint(value: int) -> bytes:
    return _VarintBytes(value)  # type: ignore[no-any-return]


def tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def S(cls: Any) -> Any:
    """The struct class of a google.protobuf class."""
    return codec.struct(cls)


def upb_bytes(message: Any) -> bytes:
    """upb's deterministic serialization (partial: proto2 required fields may be missing)."""
    return message.SerializePartialToString(deterministic=True)  # type: ignore[no-any-return]


def decode_like_upb(cls: Any, data: bytes, **options: Any) -> Any:
    """codec's decode of ``data``, checked against upb's parse of the same bytes."""
    decoded = codec.decode(S(cls), data, **options)
    expected = cls.FromString(data)
    assert codec.encode(decoded, partial=True, deterministic=True) == upb_bytes(expected)
    assert codec.to_pb2(decoded) == expected
    return decoded


# --- struct() and load_structs() ---------------------------------------------------------


def test_struct_from_class_and_descriptor_is_one_cached_class() -> None:
    cls = codec.struct(E.AllTypes)
    assert isinstance(cls, type)
    assert codec.struct(E.AllTypes) is cls
    assert codec.struct(E.AllTypes.DESCRIPTOR) is cls


def test_nested_message_fields_map_to_struct_classes() -> None:
    message = E.AllTypes(
        f_inner=E.AllTypes.Inner(a=1, again=E.AllTypes.Inner(a=2)),
        r_leaf=[E.Leaf(id=3)],
        m_string_inner={"k": E.AllTypes.Inner(a=4)},
        c_inner=E.AllTypes.Inner(a=5),
        recursive=E.AllTypes(f_int32=6),
    )
    decoded = decode_like_upb(E.AllTypes, message.SerializeToString())
    inner = codec.struct(E.AllTypes.Inner)
    assert type(decoded.f_inner) is inner
    assert type(decoded.f_inner.again) is inner
    assert type(decoded.r_leaf[0]) is codec.struct(E.Leaf)
    assert type(decoded.m_string_inner["k"]) is inner
    assert type(decoded.c_inner) is inner
    assert type(decoded.recursive) is codec.struct(E.AllTypes)
    assert decoded.recursive.f_int32 == 6


def test_recursive_message_types() -> None:
    tree = S(E.Tree)
    value = tree(
        value=1,
        left=tree(value=2),
        children=[tree(value=3, right=tree(value=4))],
        named={"x": tree(value=5)},
    )
    expected = E.Tree(
        value=1,
        left=E.Tree(value=2),
        children=[E.Tree(value=3, right=E.Tree(value=4))],
        named={"x": E.Tree(value=5)},
    )
    assert codec.encode(value, deterministic=True) == upb_bytes(expected)


def _expected_names(module: Any) -> set[str]:
    return set(message_classes(module))


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(lambda: everything_pb2, id="pb2-module"),
        pytest.param(file_descriptor_set, id="FileDescriptorSet"),
        pytest.param(file_descriptor_set_bytes, id="FileDescriptorSet-bytes"),
    ],
)
def test_load_structs(source: Any) -> None:
    structs = codec.load_structs(source())
    assert isinstance(structs, dict)
    assert _expected_names(everything_pb2) <= set(structs)
    assert {"everything.AllTypes", "everything.AllTypes.Inner"} <= set(structs)
    # Whatever the source, the classes encode like upb.
    message = E.AllTypes(f_string="x", f_inner=E.AllTypes.Inner(a=-1), m_bool_string={True: "t"})
    value = codec.decode(structs["everything.AllTypes"], message.SerializeToString())
    assert type(value.f_inner) is structs["everything.AllTypes.Inner"]
    assert codec.encode(value, deterministic=True) == upb_bytes(message)
    inner = structs["everything.AllTypes.Inner"]
    built = structs["everything.AllTypes"](f_string="x", f_inner=inner(a=-1))
    assert codec.encode(built, deterministic=True) == upb_bytes(
        E.AllTypes(f_string="x", f_inner=E.AllTypes.Inner(a=-1))
    )


def test_load_structs_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "schema.pb"
    path.write_bytes(file_descriptor_set_bytes())
    for source in (str(path), path):
        assert "everything.AllTypes" in codec.load_structs(source)
    with path.open("rb") as file:
        assert "everything.AllTypes" in codec.load_structs(file)
    with path.open(encoding="latin-1") as text, pytest.raises(TypeError, match="binary mode"):
        codec.load_structs(text)
    (tmp_path / "bad.pb").write_bytes(b"\xff\xff")
    with pytest.raises(SchemaError, match=r"bad\.pb is not a serialized FileDescriptorSet"):
        codec.load_structs(tmp_path / "bad.pb")
    with pytest.raises(SchemaError, match="cannot read descriptor set"):
        codec.load_structs(tmp_path / "missing.pb")
    with pytest.raises(SchemaError, match="the bytes is not a serialized FileDescriptorSet"):
        codec.load_structs(b"\xff\xff")
    with pytest.raises(TypeError, match=r"load_structs takes a _pb2 module, .* not int"):
        codec.load_structs(3)


def test_load_structs_from_a_file_descriptor_set_includes_every_file() -> None:
    structs = codec.load_structs(file_descriptor_set_bytes())
    assert _expected_names(everything_pb2) | _expected_names(legacy_pb2) <= set(structs)


def _importing_set(*, with_import: bool) -> descriptor_pb2.FileDescriptorSet:
    """``loadtest/outer.proto`` (listed first), importing inner.proto and Timestamp's file.

    Timestamp's file is never in the set: protobuf ships it.
    """
    F = descriptor_pb2.FieldDescriptorProto
    inner = descriptor_pb2.FileDescriptorProto(
        name="loadtest/inner.proto", package="loadtest", syntax="proto3"
    )
    inner.message_type.add(name="Inner").field.add(
        name="a", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL
    )
    outer = descriptor_pb2.FileDescriptorProto(
        name="loadtest/outer.proto",
        package="loadtest",
        syntax="proto3",
        dependency=["loadtest/inner.proto", "google/protobuf/timestamp.proto"],
    )
    message = outer.message_type.add(name="Outer")
    for name, number, type_name in [
        ("inner", 1, ".loadtest.Inner"),
        ("at", 2, ".google.protobuf.Timestamp"),
    ]:
        message.field.add(
            name=name,
            number=number,
            type=F.TYPE_MESSAGE,
            label=F.LABEL_OPTIONAL,
            type_name=type_name,
        )
    files = [outer, inner] if with_import else [outer]
    return descriptor_pb2.FileDescriptorSet(file=files)


def test_load_structs_adds_the_files_of_a_set_in_dependency_order() -> None:
    """Files in any order; protobuf's well-known files found when the set leaves them out."""
    structs = codec.load_structs(_importing_set(with_import=True).SerializeToString())
    assert set(structs) == {"loadtest.Inner", "loadtest.Outer"}
    value = structs["loadtest.Outer"](inner=structs["loadtest.Inner"](a=3))
    assert codec.decode(structs["loadtest.Outer"], codec.encode(value)) == value


def test_load_structs_of_a_set_missing_an_import_names_it() -> None:
    with pytest.raises(
        ValueError, match=r"outer\.proto imports loadtest/inner\.proto, which the set"
    ):
        codec.load_structs(_importing_set(with_import=False))


def test_load_structs_from_a_pb2_module_uses_the_cached_classes() -> None:
    structs = codec.load_structs(legacy_pb2)
    assert _expected_names(legacy_pb2) <= set(structs)
    assert structs["legacy.Record"] is codec.struct(L.Record)
    assert structs["legacy.WithGroups.Header"] is codec.struct(L.WithGroups.Header)


def test_load_structs_of_descriptor_proto_decodes_descriptor_sets() -> None:
    structs = codec.load_structs(descriptor_pb2)
    assert {"google.protobuf.FileDescriptorSet", "google.protobuf.FieldDescriptorProto"} <= set(
        structs
    )
    data = file_descriptor_set_bytes()
    decoded = codec.decode(structs["google.protobuf.FileDescriptorSet"], data)
    names = [file.name for file in decoded.file]
    assert names == [
        "everything.proto",
        "legacy.proto",
        "editions.proto",
        "extensions.proto",
        "extensions_2023.proto",
    ]
    assert codec.to_pb2(decoded) == descriptor_pb2.FileDescriptorSet.FromString(data)
    assert codec.encode(decoded, deterministic=True) == upb_bytes(
        descriptor_pb2.FileDescriptorSet.FromString(data)
    )


# --- construction, defaults, eq, repr ---------------------------------------------------------

ZERO = {
    FD.TYPE_DOUBLE: 0.0,
    FD.TYPE_FLOAT: 0.0,
    FD.TYPE_BOOL: False,
    FD.TYPE_STRING: "",
    FD.TYPE_BYTES: b"",
}


def expected_default(field: FieldDescriptor) -> Any:
    """The default the spec gives each field shape."""
    if field.is_repeated:
        return {} if field.message_type and field.message_type.GetOptions().map_entry else []
    if field.message_type is not None:  # an empty one, not set
        return S(field.message_type)()
    default = field.default_value if field.has_default_value else ZERO.get(field.type, 0)
    if field.enum_type is not None:  # the enum's member: proto2 [default = ...], else the first
        return codec.structs._schema.enum_class(field.enum_type)(field.default_value)
    return default


@pytest.mark.parametrize("cls", [E.AllTypes, E.AllTypes.Inner, E.Tree, L.Record, L.WithGroups])
def test_defaults(cls: Any) -> None:
    value = S(cls)()
    for field in cls.DESCRIPTOR.fields:
        expected = expected_default(field)
        actual = getattr(value, field.name)
        assert actual == expected, field.name
        assert isinstance(actual, type(expected)), field.name


def test_unset_proto2_fields_read_their_declared_defaults() -> None:
    value = S(L.Record)()
    assert (value.count, value.note, value.level, value.big) == (7, "n/a", 5, 2**64 - 1)
    assert (value.id, value.name) == (0, "")  # required fields have presence too
    for name in ("count", "note", "level", "id", "name"):
        assert not value.HasField(name), name
    assert codec.encode(value, partial=True) == b""
    decoded = codec.decode(S(L.Record), b"\x08\x01\x12\x01n")
    assert decoded.count == 7 and decoded.flag is True and decoded.big == 2**64 - 1
    assert decoded.HasField("id") and not decoded.HasField("count")


def test_a_field_set_to_its_default_is_present() -> None:
    value = S(L.Record)(count=7)
    assert value.HasField("count")
    assert codec.encode(value, partial=True, deterministic=True) == upb_bytes(L.Record(count=7))
    value.ClearField("count")
    assert not value.HasField("count") and value.count == 7
    assert codec.encode(value, partial=True) == b""


def test_repeated_and_map_defaults_are_fresh_objects() -> None:
    cls = S(E.AllTypes)
    first, second = cls(), cls()
    assert first.p_int32 is not second.p_int32
    assert first.r_string is not second.r_string
    assert first.m_string_string is not second.m_string_string
    first.p_int32.append(1)
    first.m_string_string["a"] = "b"
    assert cls().p_int32 == [] and cls().m_string_string == {}


def test_keyword_construction_and_assignment() -> None:
    cls = S(E.AllTypes)
    value = cls(f_int32=-5, f_string="héllo", p_uint64=[1, 2**64 - 1], o_bool=False)
    assert value.f_int32 == -5 and value.f_string == "héllo"
    assert value.p_uint64 == [1, 2**64 - 1] and value.o_bool is False
    value.f_int32 = 7
    value.f_bytes = b"\x00\x01"
    value.f_inner = S(E.AllTypes.Inner)(a=3)
    expected = E.AllTypes(
        f_int32=7,
        f_string="héllo",
        p_uint64=[1, 2**64 - 1],
        o_bool=False,
        f_bytes=b"\x00\x01",
        f_inner=E.AllTypes.Inner(a=3),
    )
    assert codec.encode(value, deterministic=True) == upb_bytes(expected)


ASSIGNED = [
    None, True, False, 0, 1, -1, 7, 2**30 - 1, 2**30, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
    2**60 - 1, 2**60, -(2**60), 2**62 + 5, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**31),
    -(2**31) - 1, -(2**63) + 1, -(2**63), -(2**63) - 1, 1.0, 1.5, -0.0,
    math.inf, math.nan, "1", "héllo", "\ud800", b"1", b"\xff", np.int64(3), np.int32(-2),
    np.uint64(2**64 - 1), np.float64(1.5), np.float32(0.25), np.bool_(True), object(), [1],
]  # fmt: skip


def _outcome(assign: Any) -> str:
    try:
        assign()
    except TypeError:
        return "TypeError"
    except (ValueError, OverflowError):  # pb2 raises OverflowError for some ints out of range
        return "ValueError"
    return "accepted"


@pytest.mark.parametrize("cls", [E.AllTypes, L.Record], ids=lambda c: c.__name__)
def test_assignment_checks_match_pb2(cls: Any) -> None:
    """Every singular scalar field of every kind, assigned each value: the same outcome
    as pb2 (TypeError, ValueError, or accepted), and when accepted the same encoding.

    The one difference: a bytes field also takes other bytes-like objects (the
    zero-copy views the decoder gives), where pb2 wants ``bytes``.
    """
    different = []
    for field in cls.DESCRIPTOR.fields:
        if field.is_repeated or field.message_type is not None:
            continue
        for value in ASSIGNED:
            ours, theirs = S(cls)(), cls()
            got = _outcome(lambda: setattr(ours, field.name, value))  # noqa: B023
            want = _outcome(lambda: setattr(theirs, field.name, value))  # noqa: B023
            if got != want:
                different.append(f"{field.name} = {value!r}: {got}, pb2 {want}")
            elif got == "accepted" and codec.encode(
                ours, partial=True, deterministic=True
            ) != upb_bytes(theirs):
                different.append(f"{field.name} = {value!r}: encodes differently")
    assert not different, "\n".join(different)


@pytest.mark.parametrize("cls", [E.AllTypes, L.Record], ids=lambda c: c.__name__)
def test_repeated_element_checks_match_pb2(cls: Any) -> None:
    """Every repeated scalar field, packed and not, holding each value between two
    valid elements: the encoder refuses it (EncodeError) exactly where pb2's
    ``append`` does, and otherwise writes what upb writes.

    A list's elements are checked as it is encoded, so a run of small ints
    (the compiled encoder's fast path) and a value that leaves it are both met.
    """
    different = []
    for field in cls.DESCRIPTOR.fields:
        if not field.is_repeated or field.message_type is not None:
            continue
        if field.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
            continue  # bytes-like values differ by design, as for singular fields
        for value in ASSIGNED:
            if value is None:
                continue
            theirs = cls()
            elements = getattr(theirs, field.name)
            elements.append(1)
            want = _outcome(lambda: elements.append(value))  # noqa: B023
            elements.append(1)
            ours = unchecked(S(cls), **{field.name: [1, value, 1]})
            try:
                data = codec.encode(ours, partial=True)
            except EncodeError as error:
                if want != "ValueError" and want != "TypeError":
                    different.append(f"{field.name} [{value!r}]: {error}, pb2 {want}")
                continue
            if want != "accepted":
                different.append(f"{field.name} [{value!r}]: accepted, pb2 {want}")
            elif data != upb_bytes(theirs):
                different.append(f"{field.name} [{value!r}]: encodes differently")
    assert not different, "\n".join(different)


@pytest.mark.parametrize("cls", [E.AllTypes, L.Record], ids=lambda c: c.__name__)
def test_wire_writer_and_structs_share_one_scalar_rule(cls: Any) -> None:
    """Every singular scalar field, each value stored unchecked in a struct and written
    by ``WireWriter``'s method of the same kind: both refuse it (EncodeError), or both
    write the same field bytes (the struct's, when it writes the field at all).

    The struct knows one rule more, its schema's: a closed enum's field refuses
    the numbers the enum does not declare, which the schemaless writer writes.
    """
    struct_cls = S(cls)
    different = []
    for field in cls.DESCRIPTOR.fields:
        kind = _schema._KINDS[field.type]
        if field.is_repeated or field.message_type is not None or kind not in _wire.SCALAR_KINDS:
            continue
        method = _wire.KIND_NAMES[kind]
        closed = field.enum_type is not None and field.enum_type.is_closed
        declared = set(field.enum_type.values_by_number) if closed else set()
        for value in ASSIGNED:
            if value is None:  # an empty slot: the field is not set
                continue
            try:
                ours: bytes | str = codec.encode(
                    unchecked(struct_cls, **{field.name: value}), partial=True
                )
            except EncodeError as error:
                ours = "refused"
                if "closed enum" in str(error):
                    if closed and value not in declared:
                        continue  # the schema's rule, which the pb2 comparisons above check
                    different.append(f"{field.name} = {value!r}: {error}")
            writer = codec.wire.WireWriter()
            try:
                getattr(writer, method)(field.number, value)
                with writer.buffer.getbuffer() as view:
                    theirs: bytes | str = bytes(view)
            except EncodeError:
                theirs = "refused"
            if (ours == "refused") != (theirs == "refused") or (
                ours not in ("refused", b"") and ours != theirs
            ):
                different.append(f"{field.name} = {value!r}: struct {ours!r}, writer {theirs!r}")
    assert not different, "\n".join(different)


def test_bytes_fields_take_any_bytes_like_object() -> None:
    value = S(E.AllTypes)(f_bytes=memoryview(b"ab"), r_bytes=[bytearray(b"c")])
    assert codec.encode(value, deterministic=True) == upb_bytes(
        E.AllTypes(f_bytes=b"ab", r_bytes=[b"c"])
    )
    with pytest.raises(TypeError, match="f_bytes"):
        value.f_bytes = "text"


def test_assignment_stores_what_pb2_reads_back() -> None:
    value = S(E.AllTypes)(f_double=1, f_bool=2, f_int64=np.int64(3), f_string=b"x")
    assert (value.f_double, value.f_bool, value.f_int64, value.f_string) == (1.0, True, 3, "x")
    assert type(value.f_double) is float and type(value.f_int64) is int
    with pytest.raises(TypeError, match="None is not a value"):
        value.f_int32 = None
    with pytest.raises(AttributeError, match="no field"):
        value.no_such_field = 1
    with pytest.raises(AttributeError):
        del value.f_int32
    with pytest.raises(TypeError, match="keyword arguments only"):
        S(E.AllTypes)(1)


def test_unknown_keyword_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        S(E.CatInt32)(nope=1)
    with pytest.raises(TypeError):
        S(E.AllTypes)(f_int32=1, F_INT32=2)


def test_equality() -> None:
    cls = S(E.CatInt32)
    assert cls(value=1) == cls(value=1)
    assert cls(value=1) != cls(value=2)
    assert cls(value=0) == cls()
    assert cls(value=1) != S(E.CatFixed32)(value=1)  # same fields, another class
    assert cls(value=1) != 1
    nested = S(E.AllTypes)
    inner = S(E.AllTypes.Inner)
    assert nested(f_inner=inner(a=1), p_int32=[1]) == nested(f_inner=inner(a=1), p_int32=[1])
    assert nested(f_inner=inner(a=1)) != nested(f_inner=inner(a=2))
    assert nested(f_inner=inner()) != nested()  # an empty message is not an unset one
    assert nested(o_int32=0) != nested()  # presence


def test_equality_includes_unknown_fields() -> None:
    cls = S(E.CatInt32)
    with_unknown = codec.decode(cls, b"\x08\x01\x10\x05")
    assert with_unknown.value == 1
    assert with_unknown != cls(value=1)
    assert with_unknown == codec.decode(cls, b"\x08\x01\x10\x05")
    assert with_unknown != codec.decode(cls, b"\x08\x01\x10\x06")


def test_repr_shows_the_class_and_the_fields() -> None:
    text = repr(S(E.CatString)(text="hello", data=b"\x01"))
    assert "CatString" in text
    assert "text" in text and "'hello'" in text
    assert "data" in text
    nested = repr(S(E.CatNested)(inner=S(E.CatInt32)(value=42)))
    assert "CatNested" in nested and "CatInt32" in nested and "42" in nested


# --- encoding ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({}, id="empty"),
        pytest.param({"f_int32": -1}, id="negative-int32-takes-10-bytes"),
        pytest.param({"f_int32": 0, "f_string": "", "f_bool": False}, id="zeros-not-written"),
        pytest.param({"f_float": -0.0, "f_double": -0.0}, id="negative-zero-is-written"),
        pytest.param({"f_float": math.inf, "f_double": -math.inf}, id="infinities"),
        pytest.param({"f_float": 0.1, "f_double": 0.1}, id="float-rounding"),
        pytest.param({"o_int32": 0, "o_string": "", "o_bool": False}, id="optional-zeros"),
        pytest.param({"o_double": -0.0, "o_bytes": b""}, id="optional-zeros-2"),
        pytest.param({"f_color": -1, "f_shape": -7}, id="negative-enums"),
        pytest.param({"f_color": 1234}, id="open-enum-undeclared-value"),
        pytest.param({"f_uint64": 2**64 - 1, "f_int64": -(2**63)}, id="64-bit-extremes"),
        pytest.param({"f_sint32": -(2**31), "f_sint64": 2**63 - 1}, id="zigzag-extremes"),
        pytest.param({"f_max": "x", "f_2047": 1, "f_2048": -1}, id="long-tags"),
        pytest.param({"c_uint32": 0}, id="oneof-member-zero-is-written"),
        pytest.param({"c_empty": {}}, id="oneof-empty-message"),
        pytest.param({"k_leaf": {}}, id="second-oneof"),
        pytest.param({"f_empty": {}, "r_empty": [{}, {}]}, id="empty-messages"),
        pytest.param({"p_int32": [], "u_int32": []}, id="empty-repeated"),
        pytest.param({"p_int32": [0, -1, 2**31 - 1]}, id="packed-int32"),
        pytest.param({"p_bool": [True, False], "u_bool": [False, True]}, id="bools"),
        pytest.param({"p_float": [1.5, -0.0], "u_double": [math.inf, 0.0]}, id="floats"),
        pytest.param({"p_color": [0, -1, 99], "u_shape": [-7, 1]}, id="repeated-enums"),
        pytest.param({"r_string": ["", "a", "€"], "r_bytes": [b"", b"\xff"]}, id="strings"),
        pytest.param({"m_string_string": {"b": "1", "a": "2", "": "3"}}, id="map-string-keys"),
        pytest.param({"m_sint32_color": {1: 1, -1: 2, 0: 0}}, id="map-signed-keys"),
        pytest.param({"m_int32_int32": {-(2**31): 1, 2**31 - 1: 2, 0: 0}}, id="map-int32"),
        pytest.param({"m_sfixed64_uint64": {-5: 1, 5: 2}}, id="map-sfixed64"),
        pytest.param({"m_fixed64_bool": {2**64 - 1: True, 0: False}}, id="map-fixed64"),
        pytest.param({"m_bool_string": {True: "t", False: "f"}}, id="map-bool-keys"),
        pytest.param({"m_string_string": {"é": "1", "z": "2", "\x00": "3"}}, id="map-utf8-order"),
        pytest.param({"m_uint64_leaf": {7: {"id": 1}, 3: {}}}, id="map-message-values"),
        pytest.param({"m_int64_empty": {1: {}}}, id="map-empty-message-value"),
        pytest.param({"m_string_self": {"r": {"f_int32": 1}}}, id="map-recursive-values"),
        pytest.param({"recursive": {"recursive": {"f_bool": True}}}, id="recursive"),
    ],
)
def test_encode_matches_upb(fields: dict[str, Any]) -> None:
    expected = E.AllTypes(**fields)
    value = codec.from_pb2(expected)
    assert codec.encode(value, deterministic=True) == upb_bytes(expected)
    assert codec.encoded_size(value) == len(upb_bytes(expected))
    # The same struct built by hand, from keyword arguments.
    assert codec.encode(_struct_like(E.AllTypes, fields), deterministic=True) == upb_bytes(expected)


def _struct_like(cls: Any, fields: dict[str, Any]) -> Any:
    """A struct of ``cls`` built from keywords; dicts stand for sub-messages."""
    descriptor = cls.DESCRIPTOR
    kwargs: dict[str, Any] = {}
    for name, value in fields.items():
        field = descriptor.fields_by_name[name]
        if field.message_type is None:
            kwargs[name] = value
        elif field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            if value_field.message_type is None:
                kwargs[name] = dict(value)
            else:
                sub = message_classes_by_descriptor(value_field.message_type)
                kwargs[name] = {k: _struct_like(sub, v) for k, v in value.items()}
        else:
            sub = message_classes_by_descriptor(field.message_type)
            if field.is_repeated:
                kwargs[name] = [_struct_like(sub, v) for v in value]
            else:
                kwargs[name] = _struct_like(sub, value)
    return S(cls)(**kwargs)


def message_classes_by_descriptor(descriptor: Any) -> Any:
    return message_factory.GetMessageClass(descriptor)


def test_large_nested_lengths() -> None:
    # Length prefixes of 1, 2, 3 and 4 bytes, nested.
    message = E.AllTypes(
        f_string="s" * 127,
        recursive=E.AllTypes(
            r_string=["y" * 2**14],
            recursive=E.AllTypes(f_bytes=b"x" * (2**21 + 3), f_int32=-1),
        ),
    )
    expected = upb_bytes(message)
    value = codec.from_pb2(message)
    assert codec.encode(value, deterministic=True) == expected
    assert codec.encoded_size(value) == len(expected)
    assert codec.decode(S(E.AllTypes), expected) == value
    encoder = codec.FrameEncoder()
    assert encoder.encode(value) == len(varint(len(expected))) + len(expected)
    assert bytes(encoder.getbuffer()) == varint(len(expected)) + expected


class CountedInt:
    """An int32 value that counts how often the encoder reads it (``__index__``)."""

    def __init__(self, value: int) -> None:
        self.value = value
        self.reads = 0

    def __index__(self) -> int:
        self.reads += 1
        return self.value


@pytest.mark.parametrize(
    ("via", "levels"),
    # A map value is two levels deep for upb (entry, value), so that chain is shorter.
    [("recursive", 100), ("map-value", 50), ("both", 66)],
)
def test_encode_reads_each_value_once(via: str, levels: int) -> None:
    """A2: every value is read once, however deep, so encoding is linear in depth.

    The write pass used to measure every sub-message again at every level, so
    a value at depth d was read d + 2 times and a depth-100 chain cost
    O(depth**2); then each value was read twice (a size and a write pass);
    now the one reading pass leaves what it read on a tape.
    """
    cls = S(E.AllTypes)
    counted = [CountedInt(i) for i in range(levels)]  # the root at depth 0, the last at levels - 1
    message = None
    for level, value in enumerate(counted):
        if message is None:
            message = unchecked(cls, f_int32=value)
        elif via == "recursive" or (via == "both" and level % 2):
            message = unchecked(cls, f_int32=value, recursive=message)
        else:
            message = unchecked(cls, f_int32=value, m_string_self={str(level): message})
    assert message is not None
    expected = upb_bytes(codec.to_pb2(message))
    for v in counted:
        v.reads = 0

    assert codec.encode(message, deterministic=True) == expected
    assert [v.reads for v in counted] == [1] * len(counted)
    encoder = codec.FrameEncoder()
    encoder.encode(message)
    assert bytes(encoder.getbuffer()) == varint(len(expected)) + expected
    assert [v.reads for v in counted] == [2] * len(counted)
    assert codec.encoded_size(message) == len(expected)
    assert [v.reads for v in counted] == [3] * len(counted)


def test_fields_are_written_in_number_order() -> None:
    # The oneof `choice` declares c_string (112) before c_uint32 (111); field 130 comes
    # after the maps; the message fields come between scalars.
    value = S(E.AllTypes)(f_max="m", recursive=S(E.AllTypes)(), c_string="s", f_int32=1, f_2047=2)
    data = codec.encode(value)
    assert data == upb_bytes(
        E.AllTypes(f_max="m", recursive=E.AllTypes(), c_string="s", f_int32=1, f_2047=2)
    )
    assert data.startswith(b"\x08\x01")


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"id": 1, "name": "n"}, id="required-only"),
        pytest.param({"id": 1, "name": "n", "count": 0, "flag": False}, id="explicit-zeros"),
        pytest.param({"id": 1, "name": "n", "count": 7, "note": "n/a"}, id="values-equal-defaults"),
        pytest.param({"id": -1, "name": "", "level": -3, "kind": 9}, id="enums"),
        pytest.param({"id": 1, "name": "n", "unpacked": [1, -1], "packed": [1, -1]}, id="repeated"),
        pytest.param({"id": 1, "name": "n", "levels": [1, 5], "packed_levels": [5]}, id="r-enums"),
        pytest.param({"id": 1, "name": "n", "doubles": [0.5], "fixed": [2**64 - 1]}, id="packed"),
        pytest.param({"id": 1, "name": "n", "flags": [True, False]}, id="unpacked-bools"),
        pytest.param({"id": 1, "name": "n", "kinds_by_id": {2: 9, 1: 0}}, id="map-enum-values"),
        pytest.param({"id": 1, "name": "n", "code": 0}, id="oneof-zero"),
    ],
)
def test_encode_proto2_matches_upb(fields: dict[str, Any]) -> None:
    expected = L.Record(**fields)
    value = codec.from_pb2(expected)
    assert codec.encode(value, deterministic=True) == upb_bytes(expected)
    assert codec.encode(S(L.Record)(**fields), deterministic=True) == upb_bytes(expected)


def _editions_maps() -> Any:
    """An editions.Maps (file-level DELIMITED) with an entry in every map, and its children."""
    P = editions_pb2
    point = P.Point(x=-1, y=2**40)
    message = P.Maps(
        i32_i64={99: 87, -1: -(2**63)}, i64_u32={-(2**40): 2**32 - 1}, u32_s32={7: -7},
        u64_s64={2**64 - 1: 1}, s32_f32={-3: 3}, s64_f64={4: 2**64 - 1},
        f32_sf32={5: -5}, f64_sf64={6: -6}, sf32_float={-8: 0.5}, sf64_double={9: -2.25},
        bool_bool={True: False}, string_string={"k": "v", "": "e"},
        i32_bytes={1: b"\x00\xff"}, string_mood={"calm": 1}, u32_point={3: point},
        point=point, points=[point, P.Point()],
    )  # fmt: skip
    message.string_self["inner"].u32_point[1].x = 5
    message.child.string_self["deep"].i32_i64[1] = 2
    return message


def test_editions_maps_are_length_prefixed_and_messages_delimited() -> None:
    """Editions with message_encoding = DELIMITED: sub-messages are groups, maps are not."""
    message = _editions_maps()
    expected = upb_bytes(message)
    assert expected.startswith(b"\x0a")  # map field 1: a LEN tag (0x0b would be a group)
    cls = S(editions_pb2.Maps)
    value = codec.from_pb2(message)
    assert codec.encode(value, deterministic=True) == expected
    assert codec.decode(cls, expected) == value
    assert codec.unknown_fields(value.string_self["inner"]) == b""
    assert value.u32_point[3].y == 2**40 and value.string_self["inner"].u32_point[1].x == 5
    one = cls(i32_i64={99: 87})
    assert codec.encode(one) == b"\x0a\x04\x08\x63\x10\x57"


def test_encode_groups_matches_upb() -> None:
    expected = L.WithGroups(
        before=1,
        header=L.WithGroups.Header(version=3, author="a"),
        entry=[L.WithGroups.Entry(key="k", value=-1), L.WithGroups.Entry(key="")],
        after=2,
    )
    group = S(L.WithGroups)
    value = group(
        before=1,
        header=S(L.WithGroups.Header)(version=3, author="a"),
        entry=[S(L.WithGroups.Entry)(key="k", value=-1), S(L.WithGroups.Entry)(key="")],
        after=2,
    )
    assert codec.encode(value, deterministic=True) == upb_bytes(expected)
    assert codec.encode(group(header=S(L.WithGroups.Header)())) == b"\x13\x14"
    decoded = decode_like_upb(L.WithGroups, upb_bytes(expected))
    assert decoded == value


def test_encode_numpy_arrays() -> None:
    cls = S(E.AllTypes)
    lists = {
        "p_int32": [1, -2, 2**31 - 1],
        "p_int64": [-(2**63), 5],
        "p_uint32": [0, 2**32 - 1],
        "p_uint64": [2**64 - 1],
        "p_sint32": [-1, 1],
        "p_sint64": [-(2**63), 2**63 - 1],
        "p_fixed32": [2**32 - 1, 0],
        "p_fixed64": [2**64 - 1],
        "p_sfixed32": [-(2**31)],
        "p_sfixed64": [-(2**63)],
        "p_float": [1.5, -0.0, math.inf],
        "p_double": [0.1, math.nan],
        "p_bool": [True, False, True],
        "u_int32": [3, -3],
        "u_double": [2.5],
        "u_fixed64": [1, 2],
    }
    dtypes = {**NUMPY_DTYPES, "u_int32": np.int32, "u_double": np.float64, "u_fixed64": np.uint64}
    arrays = {name: np.array(values, dtype=dtypes[name]) for name, values in lists.items()}
    expected = upb_bytes(E.AllTypes(**lists))
    assert codec.encode(cls(**lists)) == expected
    assert codec.encode(cls(**arrays)) == expected
    # Arrays of a wider or other dtype are fine while the values fit.
    assert codec.encode(cls(p_int32=np.array([1, -2], dtype=np.int64))) == upb_bytes(
        E.AllTypes(p_int32=[1, -2])
    )
    # A non-contiguous array.
    strided = np.arange(10, dtype=np.int32)[::3]
    assert codec.encode(cls(p_int32=strided), deterministic=True) == upb_bytes(
        E.AllTypes(p_int32=[0, 3, 6, 9])
    )


def test_encode_numpy_array_out_of_range() -> None:
    with pytest.raises(EncodeError, match="p_int32"):
        codec.encode(S(E.AllTypes)(p_int32=np.array([1, 2**40], dtype=np.int64)))
    with pytest.raises(EncodeError, match="p_uint32"):
        codec.encode(S(E.AllTypes)(p_uint32=np.array([-1], dtype=np.int64)))


BAD_VALUES = [
    ("f_int32", 2**31),
    ("f_int32", -(2**31) - 1),
    ("f_int64", 2**63),
    ("f_uint32", -1),
    ("f_uint32", 2**32),
    ("f_uint64", 2**64),
    ("f_uint64", -1),
    ("f_sint32", 2**31),
    ("f_sint64", -(2**63) - 1),
    ("f_fixed32", -1),
    ("f_fixed64", 2**64),
    ("f_sfixed32", 2**31),
    ("f_sfixed64", 2**63),
    ("f_color", 2**31),
    ("f_int32", "1"),
    ("f_int32", 1.5),
    ("f_string", 1),
    ("f_string", "\ud800"),
    ("f_bytes", 1),
    ("f_bytes", "text"),
    ("f_bool", "yes"),
    ("f_double", "x"),
    ("f_float", "x"),
    ("f_inner", 5),
    ("f_inner", "inner"),
    ("o_int32", 2**31),
    ("o_string", 5),
    ("c_uint32", -1),
    ("p_int32", [1, 2**31]),
    ("p_int32", 5),
    ("p_double", ["x"]),
    ("u_uint64", [-1]),
    ("r_string", [b"\xff"]),
    ("r_bytes", ["x"]),
    ("r_inner", [5]),
    ("m_int32_int32", {"a": 1}),
    ("m_int32_int32", {1: "a"}),
    ("m_int32_int32", {2**31: 1}),
    ("m_string_string", {1: "a"}),
    ("m_uint64_leaf", {1: 5}),
    ("m_bool_string", {True: b"\xff"}),
    ("m_uint64_leaf", {1: None}),
    ("m_int32_int32", {1: True}),
]


@pytest.mark.parametrize(
    ("name", "bad"), [pytest.param(n, v, id=f"{n}={v!r}") for n, v in BAD_VALUES]
)
def test_bad_values_are_refused_by_assignment_or_by_encoding(name: str, bad: Any) -> None:
    """A bad value is refused as it is assigned (scalars, messages) or encoded (elements).

    Either way the error names the field; one stored around the checks of
    assignment is still refused by the encoder.
    """
    try:
        value = S(E.AllTypes)(**{name: bad})
    except (TypeError, ValueError) as error:
        assert name in str(error)
        value = unchecked(S(E.AllTypes), **{name: bad})
    with pytest.raises(EncodeError) as info:
        codec.encode(value)
    assert name in str(info.value)


GARBAGE = [
    pytest.param(None, id="None"),
    pytest.param("x", id="str"),
    pytest.param("\udc80", id="lone-surrogate"),
    pytest.param(b"x", id="bytes"),
    pytest.param(1.5, id="float"),
    pytest.param(math.nan, id="nan"),
    pytest.param(-1, id="minus-one"),
    pytest.param(2**70, id="huge-int"),
    pytest.param(True, id="True"),
    pytest.param([], id="empty-list"),
    pytest.param([None], id="list-of-None"),
    pytest.param([[1]], id="nested-list"),
    pytest.param((1, 2), id="tuple"),
    pytest.param({}, id="empty-dict"),
    pytest.param({1: None}, id="dict-of-None"),
    pytest.param({None: 1}, id="None-key"),
    pytest.param(object(), id="object"),
    pytest.param([object()], id="list-of-object"),
    pytest.param(memoryview(b"ab"), id="memoryview"),
    pytest.param(np.int64(3), id="numpy-int"),
    pytest.param(np.float32(1.5), id="numpy-float"),
    pytest.param(np.array(1), id="numpy-0d"),
    pytest.param(np.array([1]), id="numpy-1"),
    pytest.param(np.array([1.5]), id="numpy-1.5"),
    pytest.param(np.array([[1, 2]]), id="numpy-2d"),
    pytest.param(np.array(["a"]), id="numpy-str"),
]


@pytest.mark.parametrize("garbage", GARBAGE)
def test_any_value_in_any_field_is_refused_or_encodes(garbage: Any) -> None:
    """Whatever is put in a field, assigned or stored around the checks, encode works or
    raises EncodeError naming it; assignment raises only TypeError or ValueError."""
    wrong = []
    for cls in (E.AllTypes, L.Record, L.WithGroups):
        for field in cls.DESCRIPTOR.fields:
            try:
                assigned = [S(cls)(**{field.name: garbage})]
            except (TypeError, ValueError) as error:
                assigned = []
                if field.name not in str(error):
                    wrong.append(f"{field.full_name}: {error!r} does not name the field")
            for value in [*assigned, unchecked(S(cls), **{field.name: garbage})]:
                try:
                    codec.encode(value, partial=True)
                except EncodeError as error:
                    if field.name not in str(error):
                        wrong.append(f"{field.full_name}: {error!r} does not name the field")
                except Exception as error:
                    wrong.append(f"{field.full_name}: {error!r}")
    assert not wrong, "\n".join(wrong)


def test_encode_error_in_a_nested_message_names_the_field() -> None:
    inner = S(E.AllTypes.Inner)
    outer = S(E.AllTypes)
    for value, name in [
        (outer(f_leaf=unchecked(S(E.Leaf), samples=[1, 2**63])), "samples"),
        (outer(r_inner=[inner(), unchecked(inner, tags=[b"x"])]), "tags"),
        (outer(m_string_inner={"k": unchecked(inner, color=2**40)}), "color"),
        (outer(recursive=outer(recursive=unchecked(outer, f_uint32=-1))), "f_uint32"),
    ]:
        with pytest.raises(EncodeError) as info:
            codec.encode(value)
        assert name in str(info.value)


def test_wrong_struct_class_in_a_message_field() -> None:
    with pytest.raises(TypeError, match="f_inner"):
        S(E.AllTypes)(f_inner=S(E.Leaf)(id=1))
    with pytest.raises(EncodeError, match="f_inner"):
        codec.encode(unchecked(S(E.AllTypes), f_inner=S(E.Leaf)(id=1)))


def test_proto2_struct_values() -> None:
    # Out of range for the proto2 fields as well.
    with pytest.raises(EncodeError, match="count"):
        codec.encode(S(L.Record)(id=1, name="n", count=2**31))
    with pytest.raises(EncodeError, match="u32"):
        codec.encode(S(L.Record)(id=1, name="n", u32=-1))


# --- oneofs -------------------------------------------------------------------------------------


def test_which_oneof() -> None:
    cls = S(E.AllTypes)
    assert codec.which_oneof(cls(), "choice") is None
    assert codec.which_oneof(cls(c_inner=S(E.AllTypes.Inner)()), "choice") == "c_inner"
    assert codec.which_oneof(cls(c_bool=False), "choice") == "c_bool"
    value = cls(c_string="x", k_fixed64=0)
    assert codec.which_oneof(value, "choice") == "c_string"
    assert codec.which_oneof(value, "other") == "k_fixed64"
    value.ClearField("c_string")
    assert codec.which_oneof(value, "choice") is None
    decoded = codec.decode(cls, upb_bytes(E.AllTypes(c_empty=E.Empty())))
    assert codec.which_oneof(decoded, "choice") == "c_empty"
    record = codec.decode(S(L.Record), upb_bytes(L.Record(id=1, name="", code=0)))
    assert codec.which_oneof(record, "payload") == "code"


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"c_uint32": 1, "c_string": "x"}, id="two-scalars"),
        pytest.param({"c_uint32": 0, "c_bool": False}, id="two-zeros"),
        pytest.param({"c_string": "x", "c_inner": "INNER"}, id="scalar-and-message"),
        pytest.param({"c_inner": "INNER", "c_string": "x"}, id="message-and-scalar"),
    ],
)
def test_setting_a_oneof_member_clears_the_others(fields: dict[str, Any]) -> None:
    fields = {k: S(E.AllTypes.Inner)() if v == "INNER" else v for k, v in fields.items()}
    *cleared, last = fields
    value = S(E.AllTypes)(**fields)  # in order, as pb2's constructor assigns them
    assert value.WhichOneof("choice") == last
    for name in cleared:
        assert not value.HasField(name)
    expected = E.AllTypes()
    for name, item in fields.items():
        if name == "c_inner":
            expected.c_inner.SetInParent()
        else:
            setattr(expected, name, item)
    assert codec.encode(value, deterministic=True) == upb_bytes(expected)


def test_oneof_members_from_different_oneofs_are_fine() -> None:
    value = S(E.AllTypes)(c_uint32=1, k_fixed64=2)
    assert codec.encode(value, deterministic=True) == upb_bytes(E.AllTypes(c_uint32=1, k_fixed64=2))


# --- unknown fields -------------------------------------------------------------------------------


def test_unknown_fields_are_kept_in_order_and_written_last() -> None:
    cls = S(E.CatInt32)
    assert codec.unknown_fields(cls()) == b""
    data = b"\x18\x01\x08\x02\x10\x03\x22\x01a\x2d\x01\x02\x03\x04\x29" + bytes(8)
    decoded = codec.decode(cls, data)
    assert decoded.value == 2
    unknown = b"\x18\x01\x10\x03\x22\x01a\x2d\x01\x02\x03\x04\x29" + bytes(8)
    assert codec.unknown_fields(decoded) == unknown
    assert isinstance(codec.unknown_fields(decoded), bytes)
    assert codec.encode(decoded) == b"\x08\x02" + unknown
    assert codec.encode(decoded, deterministic=True) == upb_bytes(E.CatInt32.FromString(data))
    assert codec.encoded_size(decoded) == len(data)


def test_unknown_fields_of_nested_messages() -> None:
    data = b"\x0a\x04\x10\x07\x08\x01\x18\x02"  # CatNested{inner{?2=7, value=1}, ?3=2}
    decoded = decode_like_upb(E.CatNested, data)
    assert decoded.inner.value == 1
    assert codec.unknown_fields(decoded.inner) == b"\x10\x07"
    assert codec.unknown_fields(decoded) == b"\x18\x02"
    assert codec.encode(decoded) == b"\x0a\x04\x08\x01\x10\x07\x18\x02"


def test_unknown_groups_are_kept() -> None:
    data = b"\x13\x08\x01\x1b\x1c\x14\x08\x05"  # group 2 { 1: 1, group 3 {} }, value = 5
    decoded = decode_like_upb(E.CatInt32, data)
    assert decoded.value == 5
    assert codec.unknown_fields(decoded) == b"\x13\x08\x01\x1b\x1c\x14"


def test_unknown_fields_survive_assignment_and_conversion() -> None:
    decoded = codec.decode(S(E.CatInt32), b"\x10\x05\x08\x01")
    decoded.value = 9
    assert codec.encode(decoded) == b"\x08\x09\x10\x05"
    message = codec.to_pb2(decoded)
    assert message.SerializeToString() == b"\x08\x09\x10\x05"
    back = codec.from_pb2(E.CatInt32.FromString(b"\x10\x05\x08\x01"))
    assert codec.unknown_fields(back) == b"\x10\x05"
    assert back == codec.decode(S(E.CatInt32), b"\x10\x05\x08\x01")


def test_reserved_field_numbers_are_unknown_fields() -> None:
    data = tag(19000, 0) + b"\x01" + tag(19999, 2) + b"\x00"  # T6
    decoded = decode_like_upb(E.AllTypes, data)
    assert codec.unknown_fields(decoded) == data


# --- to_pb2 / from_pb2 ---------------------------------------------------------------------------


def test_to_pb2_and_from_pb2() -> None:
    message = E.AllTypes(
        f_int32=-3,
        o_string="",
        f_inner=E.AllTypes.Inner(tags=["a"]),
        m_uint64_leaf={5: E.Leaf(label="x")},
        c_bytes=b"b",
        p_color=[1, -1],
    )
    value = codec.from_pb2(message)
    assert type(value) is S(E.AllTypes)
    assert value.f_int32 == -3 and value.o_string == "" and value.o_int32 == 0
    assert value.HasField("o_string") and not value.HasField("o_int32")
    assert value.f_inner.tags == ["a"]
    assert value.m_uint64_leaf[5].label == "x"
    assert value.c_bytes == b"b" and value.p_color == [1, -1]
    back = codec.to_pb2(value)
    assert back == message
    assert back.DESCRIPTOR.full_name == "everything.AllTypes"
    assert back.HasField("o_string") and not back.HasField("o_int32")
    explicit = codec.to_pb2(value, E.AllTypes)
    assert isinstance(explicit, E.AllTypes) and explicit == message
    assert codec.from_pb2(message, S(E.AllTypes)) == value


def test_from_pb2_proto2_presence() -> None:
    value = codec.from_pb2(L.Record(id=1, name="n", flag=False))
    assert value.count == 7 and not value.HasField("count")  # the declared default, unset
    assert value.flag is False
    back = codec.to_pb2(value)
    assert not back.HasField("count") and back.HasField("flag")
    assert back.count == 7  # what a reader sees


def test_presence_past_the_first_64_bits() -> None:
    """A struct keeps the presence bits of fields past the 64th in words of their own."""
    F = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="wide.proto", package="wide", syntax="proto2")
    wide = file.message_type.add(name="Wide")
    for number in range(1, 151):
        wide.field.add(name=f"f{number}", number=number, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    Wide = codec.load_structs(descriptor_pb2.FileDescriptorSet(file=[file]))["wide.Wide"]
    chosen = {"f1": 1, "f64": 0, "f65": 65, "f130": -130, "f150": 0}
    value = Wide(**chosen)
    assert [n for n in (f"f{i}" for i in range(1, 151)) if value.HasField(n)] == list(chosen)
    value.ClearField("f130")
    assert not value.HasField("f130") and value.f130 == 0
    value.f129 = 7
    back = codec.decode(Wide, codec.encode(value))
    assert back == value and back.HasField("f129") and back.HasField("f150")
    assert not back.HasField("f130") and not back.HasField("f2")
    pb2 = codec.to_pb2(back)
    assert [f.name for f, _ in pb2.ListFields()] == ["f1", "f64", "f65", "f129", "f150"]
    assert codec.encode(back, deterministic=True) == upb_bytes(pb2)
    assert Wide() == Wide() and not Wide().HasField("f100")  # no words made by reading


# --- decoding: buffers, zero_copy, numpy ----------------------------------------------------------

SAMPLE = E.AllTypes(
    f_int32=1,
    f_string="s",
    f_bytes=b"abc",
    r_bytes=[b"x", b"", b"yz"],
    c_bytes=b"one",
    f_inner=E.AllTypes.Inner(a=1, tags=["t"]),
    p_double=[1.0, 2.5],
    m_uint32_bytes={1: b"q"},
)
SAMPLE_BYTES = SAMPLE.SerializeToString(deterministic=True)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(bytes, id="bytes"),
        pytest.param(bytearray, id="bytearray"),
        pytest.param(memoryview, id="memoryview"),
        pytest.param(lambda b: memoryview(b"xx" + b + b"yy")[2:-2], id="memoryview-slice"),
        pytest.param(lambda b: memoryview(bytearray(b)).toreadonly(), id="readonly"),
        pytest.param(lambda b: np.frombuffer(b, dtype=np.uint8), id="numpy"),
        pytest.param(lambda b: array.array("B", b), id="array"),
    ],
)
def test_decode_any_contiguous_buffer(make: Any) -> None:
    decoded = codec.decode(S(E.AllTypes), make(SAMPLE_BYTES))
    assert codec.to_pb2(decoded) == SAMPLE
    assert type(decoded.f_bytes) is bytes and decoded.f_bytes == b"abc"
    assert all(type(b) is bytes for b in decoded.r_bytes)
    assert isinstance(decoded.p_double, list)


def test_decode_empty_input() -> None:
    for data in (b"", bytearray(), memoryview(b"")):
        assert codec.decode(S(E.AllTypes), data) == S(E.AllTypes)()


def test_zero_copy_bytes_are_views_into_the_buffer() -> None:
    data = bytearray(SAMPLE_BYTES)
    decoded = codec.decode(S(E.AllTypes), data, zero_copy=True)
    for view, expected in [
        (decoded.f_bytes, b"abc"),
        (decoded.c_bytes, b"one"),
        *zip(decoded.r_bytes, [b"x", b"", b"yz"], strict=True),
    ]:
        assert isinstance(view, memoryview)
        assert view == expected
        assert view.obj is data
    assert isinstance(decoded.f_string, str)  # strings are still str
    assert codec.to_pb2(decoded) == SAMPLE
    assert codec.encode(decoded) == SAMPLE_BYTES
    # The views see the buffer itself.
    position = SAMPLE_BYTES.index(b"abc")
    data[position] = ord("A")
    assert bytes(decoded.f_bytes) == b"Abc"


def test_zero_copy_from_bytes() -> None:
    decoded = codec.decode(S(E.CatString), b"\x12\x03xyz", zero_copy=True)
    assert isinstance(decoded.data, memoryview) and decoded.data == b"xyz"
    assert codec.encode(decoded) == b"\x12\x03xyz"


NUMPY_DTYPES = {
    "p_int32": np.int32,
    "p_int64": np.int64,
    "p_uint32": np.uint32,
    "p_uint64": np.uint64,
    "p_sint32": np.int32,
    "p_sint64": np.int64,
    "p_fixed32": np.uint32,
    "p_fixed64": np.uint64,
    "p_sfixed32": np.int32,
    "p_sfixed64": np.int64,
    "p_float": np.float32,
    "p_double": np.float64,
    "p_bool": np.bool_,
}


def test_numpy_gives_packed_fields_as_arrays() -> None:
    values = {
        "p_int32": [1, -1, 2**31 - 1],
        "p_int64": [-(2**63), 1],
        "p_uint32": [2**32 - 1],
        "p_uint64": [2**64 - 1, 0],
        "p_sint32": [-(2**31), 5],
        "p_sint64": [-1],
        "p_fixed32": [7, 2**32 - 1],
        "p_fixed64": [2**64 - 1],
        "p_sfixed32": [-5],
        "p_sfixed64": [-(2**63), 2**63 - 1],
        "p_float": [1.5, -2.25],
        "p_double": [0.1, -0.0],
        "p_bool": [True, False, True],
    }
    message = E.AllTypes(**values)
    decoded = codec.decode(S(E.AllTypes), message.SerializeToString(), numpy=True)
    for name, expected in values.items():
        got = getattr(decoded, name)
        assert isinstance(got, np.ndarray), name
        assert got.dtype == NUMPY_DTYPES[name], (name, got.dtype)
        assert got.tolist() == expected, name
    assert codec.encode(decoded, deterministic=True) == upb_bytes(message)
    plain = codec.decode(S(E.AllTypes), message.SerializeToString())
    assert all(isinstance(getattr(plain, name), list) for name in values)


# --- must-accept inputs (catalogue P7, V4, V5, T5) ------------------------------------------------

INT64_MAX_VARINT = varint(2**63 - 1)

MUST_ACCEPT = [
    # (message class, bytes, {field: expected value})
    pytest.param(E.CatInt32, b"\x08\x81\x00", {"value": 1}, id="non-minimal-varint"),
    pytest.param(E.CatInt32, b"\x08" + b"\x80" * 9 + b"\x00", {"value": 0}, id="10-byte-zero"),
    pytest.param(E.CatInt32, b"\x08" + b"\xff" * 9 + b"\x01", {"value": -1}, id="negative-int32"),
    pytest.param(E.CatString, b"\x0a\x83\x00abc", {"text": "abc"}, id="non-minimal-length"),
    pytest.param(E.CatString, b"\x0a\x83\x80\x80\x80\x00abc", {"text": "abc"}, id="5-byte-length"),
    pytest.param(E.CatInt32, b"\x88\x80\x80\x80\x00\x01", {"value": 1}, id="5-byte-tag"),
    pytest.param(E.CatInt32, b"\x08\x01\x08\x02", {"value": 2}, id="last-int-wins"),
    pytest.param(E.CatString, b"\x0a\x01a\x0a\x01b", {"text": "b"}, id="last-string-wins"),
    pytest.param(
        E.AllTypes,
        tag(21, 0) + b"\x05" + tag(21, 0) + b"\x00",
        {"o_int32": 0},
        id="last-optional-wins",
    ),
    pytest.param(
        E.AllTypes,
        tag(41, 0) + b"\x01" + tag(41, 2) + b"\x02\x02\x03" + tag(41, 0) + b"\x04",
        {"p_int32": [1, 2, 3, 4]},
        id="packed-field-unpacked-and-packed",
    ),
    pytest.param(
        E.AllTypes,
        tag(61, 2) + b"\x02\x05\x06" + tag(61, 0) + b"\x07",
        {"u_int32": [5, 6, 7]},
        id="unpacked-field-packed",
    ),
    pytest.param(
        E.AllTypes,
        tag(47, 5) + b"\x01\x00\x00\x00" + tag(47, 2) + b"\x04\x02\x00\x00\x00",
        {"p_fixed32": [1, 2]},
        id="packed-fixed32-unpacked",
    ),
    pytest.param(
        E.AllTypes,
        tag(73, 2) + b"\x03\x01\x00\x02",
        {"u_bool": [True, False, True]},
        id="packed-bools-any-non-zero",
    ),
    pytest.param(
        E.AllTypes,
        tag(18, 2) + b"\x04\x08\x05\x1a\x00" + tag(18, 2) + b"\x05\x1a\x01y\x20\x01",
        {"f_inner": {"a": 5, "tags": ["", "y"], "color": 1}},
        id="sub-messages-merge",
    ),
    pytest.param(
        E.AllTypes,
        tag(18, 2) + b"\x04\x12\x02\x08\x01" + tag(18, 2) + b"\x04\x12\x02\x20\x02",
        {"f_inner": {"again": {"a": 1, "color": 2}}},
        id="nested-sub-messages-merge",
    ),
    pytest.param(
        E.AllTypes,
        tag(114, 2) + b"\x02\x08\x05" + tag(114, 2) + b"\x02\x20\x01",
        {"c_inner": {"a": 5, "color": 1}},
        id="oneof-message-merges",
    ),
    pytest.param(
        E.AllTypes,
        tag(114, 2) + b"\x02\x08\x05" + tag(111, 0) + b"\x01" + tag(114, 2) + b"\x02\x20\x01",
        {"c_inner": {"a": 0, "color": 1}, "c_uint32": None},
        id="oneof-message-reset-by-other-member",
    ),
    pytest.param(E.CatInt32, b"\x08" + varint(1 << 33), {"value": 0}, id="int32-truncates"),
    pytest.param(E.CatInt32, b"\x08" + varint((1 << 33) - 1), {"value": -1}, id="int32-2^33-1"),
    pytest.param(E.CatInt32, b"\x08" + INT64_MAX_VARINT, {"value": -1}, id="int32-int64-max"),
    pytest.param(E.AllTypes, b"\x18" + varint((1 << 33) + 1), {"f_uint32": 1}, id="uint32"),
    pytest.param(E.AllTypes, b"\x28" + varint((1 << 32) + 2), {"f_sint32": 1}, id="sint32"),
    pytest.param(E.AllTypes, tag(16, 0) + INT64_MAX_VARINT, {"f_color": -1}, id="enum-int64-max"),
    pytest.param(E.AllTypes, tag(16, 0) + varint(2**64 - 1), {"f_color": -1}, id="enum-minus-1"),
    pytest.param(E.AllTypes, tag(16, 0) + b"\xd2\x09", {"f_color": 1234}, id="open-enum"),
    pytest.param(E.AllTypes, b"\x68\x02", {"f_bool": True}, id="bool-2"),
    pytest.param(E.AllTypes, b"\x68\x80\x01", {"f_bool": True}, id="bool-128"),
    pytest.param(E.AllTypes, b"\x68" + varint(2**63), {"f_bool": True}, id="bool-2^63"),
    pytest.param(E.AllTypes, b"\x68\x80\x00", {"f_bool": False}, id="bool-padded-zero"),
    pytest.param(
        E.AllTypes, tag(33, 0) + b"\x00", {"o_bool": False}, id="optional-bool-false-is-set"
    ),
    pytest.param(
        E.AllTypes,
        tag(91, 2) + b"\x04\x08\x01\x10\x02" + tag(91, 2) + b"\x04\x08\x01\x10\x03",
        {"m_int32_int32": {1: 3}},
        id="map-last-entry-wins",
    ),
    pytest.param(
        E.AllTypes,
        tag(91, 2) + b"\x00" + tag(102, 2) + b"\x02\x12\x00",
        {"m_int32_int32": {0: 0}, "m_string_string": {"": ""}},
        id="map-entry-missing-key-and-value",
    ),
    pytest.param(
        E.AllTypes,
        tag(91, 2) + b"\x04\x10\x02\x08\x01",
        {"m_int32_int32": {1: 2}},
        id="map-entry-value-first",
    ),
    pytest.param(
        E.AllTypes,
        tag(94, 2) + b"\x02\x08\x01",
        {"m_uint64_leaf": {1: {}}},
        id="map-message-value-missing",
    ),
    pytest.param(
        E.AllTypes,
        tag(18, 3) + b"\x08\x01" + tag(18, 4),
        {"f_inner": None},
        id="message-field-as-group-is-unknown",
    ),
    pytest.param(E.CatString, b"\x0a\x04\xf0\x9f\x98\x80", {"text": "😀"}, id="utf8-4-bytes"),
    pytest.param(L.WithGroups, b"\x13\x18\x01\x14", {"header": {"version": 1}}, id="group"),
    pytest.param(
        L.WithGroups, b"\x12\x02\x18\x01", {"header": None}, id="group-field-as-len-is-unknown"
    ),
    pytest.param(
        L.WithGroups, b"\x2a\x02\x08\x01", {"entry": []}, id="repeated-group-as-len-is-unknown"
    ),
    pytest.param(
        L.Record, b"\x1a\x01\x05\x18\x02", {"count": 2, "id": None}, id="proto2-wrong-wire-type"
    ),
    pytest.param(
        L.Record,
        b"\xa0\x01\x01" + b"\xa2\x01\x02\x02\x03",
        {"unpacked": [1, 2, 3]},
        id="proto2-unpacked-field-packed",
    ),
]


def _check_fields(value: Any, expected: dict[str, Any]) -> None:
    for name, want in expected.items():
        got = getattr(value, name)
        if want is None:  # unset
            assert not value.HasField(name), name
        elif isinstance(want, dict) and got is not None and not isinstance(got, dict):
            _check_fields(got, want)  # a sub-message given as a dict of its fields
        elif isinstance(want, dict) and isinstance(got, dict):
            assert set(got) == set(want), name
            for key, item in want.items():
                if isinstance(item, dict):
                    _check_fields(got[key], item)
                else:
                    assert got[key] == item, (name, key)
        else:
            assert got == want, name


@pytest.mark.parametrize(("cls", "data", "expected"), MUST_ACCEPT)
def test_must_accept(cls: Any, data: bytes, expected: dict[str, Any]) -> None:
    decoded = decode_like_upb(cls, data)
    _check_fields(decoded, expected)
    assert decoded == codec.from_pb2(cls.FromString(data))


def test_every_two_byte_tag_reads_as_upb_reads_it() -> None:
    """A tag of two bytes is read in place: each of the 16,384 (field 0 and the
    non-minimal forms of one-byte tags among them, wire types 4, 6 and 7), then a value
    of its wire type, fails where upb fails and reads as upb reads it elsewhere."""
    failed = 0
    for first in range(0x80, 0x100):
        for second in range(0x80):
            number, wire = divmod((first & 0x7F) | second << 7, 8)
            value = {0: b"\x01", 1: b"\x01" * 8, 2: b"\x00", 3: tag(number, 4), 5: b"\x01" * 4}
            data = bytes([first, second]) + value.get(wire, b"")
            try:
                E.AllTypes.FromString(data)
            except protobuf_message.DecodeError:
                failed += 1
                with pytest.raises(DecodeError):
                    codec.decode(S(E.AllTypes), data)
            else:
                decode_like_upb(E.AllTypes, data)
    assert failed == 16384 * 3 // 8 + 5  # wire types 4, 6 and 7; field 0 on the others


def test_a_string_of_every_length_reads_as_upb_reads_it() -> None:
    """Strings of 0 to 40 bytes, ASCII, or ASCII but for one character at each place: two
    bytes of UTF-8, or a byte that is not UTF-8. The ASCII test reads a string in loads
    that overlap: codec's text is upb's, or both refuse the bytes."""
    failed = 0
    for size in range(41):
        texts = [b"a" * size] + [
            b"a" * place + odd + b"a" * (size - place)
            for place in range(size + 1)
            for odd in (b"\xc3\xa9", b"\xff")
        ]
        for text in texts:
            data = b"\x0a" + _VarintBytes(len(text)) + text
            try:
                expected = E.CatString.FromString(data).text
            except protobuf_message.DecodeError:
                failed += 1
                with pytest.raises(DecodeError):
                    codec.decode(S(E.CatString), data)
            else:
                assert codec.decode(S(E.CatString), data).text == expected
    assert failed == sum(size + 1 for size in range(41))


@given(
    st.lists(
        st.one_of(
            st.sampled_from(["", "l0", "l1", "http.method", "http.status", "a" * 32, "a" * 33]),
            st.text(st.characters(max_codepoint=0x7F), max_size=40),
            st.text(max_size=12),
        ),
        max_size=60,
    )
)
def test_short_strings_decoded_again_read_as_upb_reads_them(texts: list[str]) -> None:
    """Short ASCII strings are shared through a table of the ones decoded last, found by a
    hash of their bytes: strings that repeat, that differ in one byte, of 32 bytes and
    33 (one past the table's), each decoded twice among the others, read as upb reads
    them, and compiled, a repeat is the str decoded just before it."""
    decoder = codec.Decoder(S(E.CatString))
    for text in texts + texts[::-1]:
        data = E.CatString(text=text).SerializeToString()
        first = decoder.decode(data).text
        again = decoder.decode(data).text
        assert first == again == E.CatString.FromString(data).text == text
        if codec.COMPILED and text.isascii() and len(text) <= 32:
            assert again is first


@pytest.mark.parametrize("size", [1, 2, 3, 4, 7, 8, 9, 16, 17, 31, 32])
def test_short_strings_that_share_a_place_in_the_table_stay_apart(size: int) -> None:
    """More strings of one length than the table has places (512): some share a place,
    and each reads as its own bytes, first and again."""
    alphabet = string.ascii_letters + string.digits + "._-/"
    texts = sorted({"".join(random.Random(i).choices(alphabet, k=size)) for i in range(1500)})
    assert len(texts) > 512 if size > 1 else len(texts) == len(alphabet)
    decoder = codec.Decoder(S(E.CatString))
    for text in texts + texts[::-3] + texts:
        assert decoder.decode(E.CatString(text=text).SerializeToString()).text == text


def test_t5_wrong_wire_type_is_an_unknown_field() -> None:
    data = b"\x0a\x01\x00"  # int32 field 1 sent as LEN
    decoded = decode_like_upb(E.CatInt32, data)
    assert decoded.value == 0
    assert codec.unknown_fields(decoded) == data
    assert codec.encode(decoded) == data
    # Next to a well-typed value of the same field, in both orders.
    for data in (b"\x08\x07\x0a\x01\x00", b"\x0a\x01\x00\x08\x07"):
        decoded = decode_like_upb(E.CatInt32, data)
        assert decoded.value == 7
        assert codec.unknown_fields(decoded) == b"\x0a\x01\x00"
    # A fixed32 field sent as a varint, a string as fixed64.
    decoded = decode_like_upb(E.CatFixed32, b"\x08\x05")
    assert decoded.value == 0 and codec.unknown_fields(decoded) == b"\x08\x05"
    decoded = decode_like_upb(E.CatString, b"\x09" + bytes(8))
    assert decoded.text == "" and codec.unknown_fields(decoded) == b"\x09" + bytes(8)


# --- the bad-input catalogue beyond test_hostile's vectors -------------------------------------


def test_s2_unclosed_group() -> None:
    for data in (b"\x0b", b"\x0b\x08\x01", b"\x0b\x13\x14"):
        with pytest.raises(DecodeError) as info:
            codec.decode(S(E.CatInt32), data)
        assert isinstance(info.value.offset, int)


def test_p1_truncated_string_does_not_reserve_its_declared_length() -> None:
    # 2 GiB declared, 3 bytes given.
    data = b"\x0a\xff\xff\xff\xff\x07abc"
    with pytest.raises(TruncatedError) as info:
        codec.decode(S(E.CatString), data)
    assert info.value.offset == 1
    assert peak_after_warm_up(lambda: _swallow(S(E.CatString), data)) < 64 * 1024


def test_p8_declared_count_is_not_reserved() -> None:
    # packed bools: 1 MiB declared, 3 given
    data = b"\x0a\x80\x80\x40\x01\x01\x01"
    for options in ({}, {"numpy": True}):
        peak = peak_after_warm_up(lambda o=options: _swallow(S(E.CatPackedBool), data, **o))
        assert peak < 64 * 1024, options


def test_p8_many_elements_are_decoded() -> None:
    count = 64 * 1024
    data = b"\x0a" + varint(count) + b"\x01" * count
    decoded = codec.decode(S(E.CatPackedBool), data)
    assert len(decoded.flags) == count and all(decoded.flags)
    arrays = codec.decode(S(E.CatPackedBool), data, numpy=True)
    assert isinstance(arrays.flags, np.ndarray) and int(arrays.flags.sum()) == count


def test_packed_and_unpacked_occurrences_append_in_order() -> None:
    # a packed run, a lone element, then a packed run again, of one field: pb2 keeps all
    # five in order, whether the runs become numpy arrays or lists
    run = pystruct.pack("<2d", 0.5, -1.0)
    lone = pystruct.pack("<d", 2.0)
    data = (
        _VarintBytes(52 << 3 | 2)
        + _VarintBytes(len(run))
        + run
        + _VarintBytes(52 << 3 | 1)
        + lone
        + _VarintBytes(52 << 3 | 2)
        + _VarintBytes(len(run))
        + run
    )
    expected = list(E.AllTypes.FromString(data).p_double)
    assert expected == [0.5, -1.0, 2.0, 0.5, -1.0]
    for numpy in (False, True):
        assert list(codec.decode(S(E.AllTypes), data, numpy=numpy).p_double) == expected


def test_p8_empty_sub_messages() -> None:
    count = 10_000
    decoded = codec.decode(S(E.CatRepeated), b"\x0a\x00" * count)
    assert len(decoded.items) == count
    assert all(item == S(E.CatInt32)() for item in decoded.items)


def test_p8_repeated_singular_sub_message_merges() -> None:
    count = 10_000
    decoded = codec.decode(S(E.CatNested), b"\x0a\x02\x08\x01" * count)
    assert decoded.inner == S(E.CatInt32)(value=1)


def _swallow(cls: Any, data: bytes, **options: Any) -> None:
    with contextlib.suppress(DecodeError):
        codec.decode(cls, data, **options)


# --- depth limits (S4, S5) -----------------------------------------------------------------------


def test_depth_100_accepted_101_rejected() -> None:
    cls = S(E.Chain)
    data, _ = nested(100)
    decoded = decode_like_upb(E.Chain, data)
    depth = 0
    while decoded.HasField("child"):
        decoded = decoded.child
        depth += 1
    assert depth == 100
    data, offsets = nested(101)
    with pytest.raises(Exception, match="MaxDepth"):
        E.Chain.FromString(data)  # upb: the same limit
    with pytest.raises(DepthLimitError) as info:
        codec.decode(cls, data)
    assert info.value.offset == offsets[100] + 2  # the first byte of level 101


def test_max_depth_option() -> None:
    cls = S(E.Chain)
    codec.decode(cls, nested(5)[0], max_depth=5)
    with pytest.raises(DepthLimitError):
        codec.decode(cls, nested(6)[0], max_depth=5)
    codec.decode(cls, nested(150)[0], max_depth=200)
    codec.decode(cls, b"", max_depth=0)
    codec.decode(cls, b"\x10\x01", max_depth=0)
    with pytest.raises(DepthLimitError):
        codec.decode(cls, nested(1)[0], max_depth=0)


def test_depth_limit_counts_unknown_groups_like_upb() -> None:
    cls = S(E.CatInt32)
    for groups in (1, 100):
        data = b"\x13" * groups + b"\x14" * groups
        decoded = decode_like_upb(E.CatInt32, data)
        assert codec.unknown_fields(decoded) == data
    data = b"\x13" * 101 + b"\x14" * 101
    with pytest.raises(Exception, match="Error parsing"):
        E.CatInt32.FromString(data)
    with pytest.raises(DepthLimitError):
        codec.decode(cls, data)


def test_depth_limit_is_one_counter_for_messages_and_groups() -> None:
    groups = b"\x13" * 51 + b"\x14" * 51
    data, _ = nested(50, inner=groups[1:-1])  # 50 messages + 50 groups: upb accepts
    decode_like_upb(E.Chain, data)
    data, _ = nested(50, inner=groups)  # 50 + 51
    with pytest.raises(DepthLimitError):
        codec.decode(S(E.Chain), data)


def _tree_levels(field: bytes, levels: int) -> bytes:
    return nested(levels, field=field)[0]


DEEP = 100_000


@pytest.mark.parametrize(
    ("cls", "make", "error"),
    [
        pytest.param(E.Chain, lambda: nested(DEEP)[0], DepthLimitError, id="field"),
        pytest.param(E.Tree, lambda: _tree_levels(b"\x12", DEEP), DepthLimitError, id="tree"),
        pytest.param(
            E.Tree, lambda: _tree_levels(b"\x22", DEEP), DepthLimitError, id="repeated-field"
        ),
        pytest.param(E.Tree, lambda: map_levels(5_000), DepthLimitError, id="map-value"),
        pytest.param(
            E.CatInt32, lambda: b"\x13" * DEEP + b"\x14" * DEEP, DepthLimitError, id="groups"
        ),
        pytest.param(E.CatInt32, lambda: b"\x0b" * DEEP, DecodeError, id="open-groups"),
        pytest.param(
            L.WithGroups,
            lambda: b"\x13" + b"\x2b" * DEEP + b"\x2c" * DEEP + b"\x14",
            DepthLimitError,
            id="inside-a-known-group",
        ),
        pytest.param(
            E.AllTypes,
            lambda: nested(DEEP, field=tag(130, 2))[0],
            DepthLimitError,
            id="recursive-field",
        ),
    ],
)
def test_deep_nesting_is_rejected_near_the_top(cls: Any, make: Any, error: Any) -> None:
    data = make()
    with pytest.raises(error) as info:
        codec.decode(S(cls), data)
    assert isinstance(info.value.offset, int)
    assert info.value.offset < 2_000  # found near the top, not at the bottom (timed: D7)


# Run in a child process: a stack overflow would take the test run down with it.
STACK_PROBE = """
import sys, threading
sys.path[:0] = [{tests!r}]
import codec
from schemas import everything_pb2 as E
Chain = codec.struct(E.Chain)
AllTypes = codec.struct(E.AllTypes)

def chain(depth):
    data = b""
    for _ in range(depth):
        data = b"\\x0a" + codec.varint.encode(len(data)) + data
    return data

def decode(depth, max_depth):
    try:
        codec.decode(Chain, chain(depth), max_depth=max_depth)
        return "decoded"
    except codec.errors.DepthLimitError:
        return "DepthLimitError"

def encode(depth):
    message = AllTypes()
    for _ in range(depth):
        message = AllTypes(recursive=message)
    try:
        codec.encode(message)
        return "encoded"
    except codec.EncodeError:
        return "EncodeError"

results = []
def small_thread():
    results.append(decode(100, 100))
    results.append(encode(100))
threading.stack_size(32768)
thread = threading.Thread(target=small_thread)
thread.start()
thread.join()
threading.stack_size(0)
sys.setrecursionlimit(10**6)
results.append(decode(100_000, 100_000))
print(" ".join(results))
"""


def test_nesting_beyond_the_thread_stack_is_an_error_not_a_crash() -> None:
    """Review 6a: a chain 100,000 deep with max_depth=100,000, and the default depth on a
    thread with a 32 KiB stack, decode or encode, or end in DepthLimitError/EncodeError."""
    import subprocess
    import sys
    from pathlib import Path

    code = STACK_PROBE.format(tests=str(Path(__file__).parent))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    decoded, encoded, deep = done.stdout.split()
    assert decoded in ("decoded", "DepthLimitError")
    assert encoded in ("encoded", "EncodeError")
    # Compiled, 100,000 levels need more C stack than the main thread has; uncompiled,
    # Python calls do not nest on the C stack, and the recursion limit was raised.
    assert deep == "DepthLimitError" if codec.COMPILED else deep in ("decoded", "DepthLimitError")


# --- nothing but DecodeError escapes -------------------------------------------------------------


@given(
    data=st.binary(max_size=200),
    cls=st.sampled_from([E.AllTypes, E.Tree, L.Record, L.WithGroups, E.CatPackedBool]),
    zero_copy=st.booleans(),
    numpy=st.booleans(),
    max_depth=st.sampled_from([0, 1, 3, 100]),
)
def test_only_decode_errors_escape(
    data: bytes, cls: Any, zero_copy: bool, numpy: bool, max_depth: int
) -> None:
    try:
        decoded = codec.decode(S(cls), data, zero_copy=zero_copy, numpy=numpy, max_depth=max_depth)
    except DecodeError as error:
        assert isinstance(error.offset, int) and 0 <= error.offset <= len(data)
    else:
        codec.encoded_size(decoded)


# --- the object model under hostile use (struct-engine review, item 6) ----------------------


def test_a_struct_whose_init_never_ran_is_an_empty_message() -> None:
    cls = S(E.AllTypes)
    bare = cls.__new__(cls)
    assert codec.encode(bare) == b"" and codec.encoded_size(bare) == 0
    assert bare.r_string == [] and not bare.HasField("o_int32")
    with pytest.raises(AttributeError):
        bare.f_int32  # noqa: B018  (an empty slot: nothing to read, nothing to crash)
    bare.f_int32 = 3
    assert codec.encode(bare, deterministic=True) == upb_bytes(E.AllTypes(f_int32=3))
    merged = codec.decode(cls, upb_bytes(E.AllTypes(f_string="x")))
    assert merged.f_string == "x"


def test_a_slot_emptied_through_its_descriptor_is_unset() -> None:
    cls = S(E.AllTypes)
    value = cls(f_int32=5, o_int32=6, r_string=["a"], f_leaf=S(E.Leaf)(id=1))
    for name in ("f_int32", "o_int32", "f_leaf"):
        value.__plan__.by_name[name].member.__delete__(value)
    value.__plan__.by_name["r_string"].member.__delete__(value)
    assert codec.encode(value) == b""
    assert value.r_string == []


def test_a_plan_that_is_not_the_class_own_is_refused() -> None:
    cls, other = S(E.AllTypes), S(E.Leaf)
    value = cls(f_int32=1)
    own = cls.__plan__
    try:
        cls.__plan__ = other.__plan__  # offsets of another layout
        for attempt in (
            lambda: codec.encode(value),
            lambda: cls(f_int32=1),
            lambda: setattr(value, "f_int32", 2),
            lambda: codec.decode(cls, b"\x08\x01"),
        ):
            with pytest.raises(TypeError, match="not the plan of its class"):
                attempt()
    finally:
        cls.__plan__ = own
    assert codec.encode(value) == b"\x08\x01"


def test_a_container_descriptor_works_only_on_its_own_class() -> None:
    descriptor = vars(S(E.AllTypes))["r_string"]
    with pytest.raises(TypeError):
        descriptor.__get__(S(E.Leaf)(), S(E.Leaf))


def test_plans_cannot_be_pointed_elsewhere() -> None:
    """Compiled, what the encoder and decoder trust in a plan is read-only (uncompiled, a
    plan holds no pointer: nothing in it reaches memory)."""
    plan = S(E.AllTypes).__plan__
    assert isinstance(plan.fields, tuple) and isinstance(plan.fields_by_slot, tuple)
    if codec.COMPILED:
        field = plan.fields[0]
        for name in ("offset", "has_bit", "kind", "message", "member"):
            with pytest.raises(AttributeError):
                setattr(field, name, getattr(field, name))
        with pytest.raises(AttributeError):
            plan.cls = S(E.Leaf)


def test_a_map_entry_too_deep_to_re_encode_stays_unknown_without_encode_error() -> None:
    """An entry with an unknown field is kept as unknown bytes; one nested deeper than
    encoding allows (here 120 levels, decoded with max_depth=200) is kept as it came."""
    cls = S(E.AllTypes)
    fields = E.AllTypes.DESCRIPTOR.fields_by_name
    value = b"\x08\x01"  # f_int32 = 1, then 120 levels of `recursive` around it
    for _ in range(120):
        value = _VarintBytes(fields["recursive"].number << 3 | 2) + varint(len(value)) + value
    field = fields["m_string_self"]
    entry = b"\x0a\x01k" + b"\x12" + varint(len(value)) + value + b"\x18\x07"  # + field 3
    data = _VarintBytes(field.number << 3 | 2) + varint(len(entry)) + entry
    decoded = codec.decode(cls, data, max_depth=200)
    assert decoded.m_string_self == {}
    assert codec.unknown_fields(decoded) == data


# --- framing with structs ---------------------------------------------------------------


def _structs() -> list[Any]:
    cls = S(E.AllTypes)
    return [
        cls(),
        cls(f_string="hello", p_sint64=[-1, 2**40]),
        cls(f_inner=S(E.AllTypes.Inner)(tags=["a", "b"]), m_bool_string={False: "f"}),
        cls(f_bytes=b"\x00" * 300),
    ]


def _frame(payload: bytes) -> bytes:
    return varint(len(payload)) + payload


def test_frame_encoder_encodes_structs() -> None:
    encoder = codec.FrameEncoder()
    expected = b""
    for value in _structs():
        frame = _frame(codec.encode(value))
        assert encoder.encode(value) == len(frame)
        expected += frame
    assert bytes(encoder.getbuffer()) == expected


def test_encode_frame_into_encodes_structs() -> None:
    buffer = bytearray(b"head")
    value = _structs()[1]
    end = codec.encode_frame_into(value, buffer)
    assert bytes(buffer) == b"head" + _frame(codec.encode(value))
    assert end == len(buffer)
    end = codec.encode_frame_into(_structs()[2], buffer, 0)
    assert bytes(buffer) == _frame(codec.encode(_structs()[2]))


def test_frame_encoder_struct_errors_leave_the_buffer_alone() -> None:
    encoder = codec.FrameEncoder()
    encoder.encode(_structs()[1])
    before = bytes(encoder.getbuffer())
    with pytest.raises(EncodeError):
        encoder.encode(S(E.AllTypes)(f_int32=2**40))
    assert bytes(encoder.getbuffer()) == before
    buffer = bytearray(b"xyz")
    with pytest.raises(EncodeError):
        codec.encode_frame_into(S(E.AllTypes)(f_uint32=-1), buffer)
    assert buffer == b"xyz"
    with pytest.raises(codec.FrameTooLargeError):
        codec.FrameEncoder(max_frame_size=10).encode(_structs()[3])


def test_frame_decoder_yields_structs() -> None:
    values = _structs()
    stream = b"".join(_frame(codec.encode(v)) for v in values)
    decoder = codec.FrameDecoder(message_type=S(E.AllTypes))
    decoder.feed(stream)
    assert list(decoder) == values
    # One byte at a time; structs stay intact while more bytes come in.
    decoder = codec.FrameDecoder(message_type=S(E.AllTypes))
    received = []
    for i in range(len(stream)):
        decoder.feed(stream[i : i + 1])
        received.extend(decoder)
    decoder.feed_eof()
    assert received == values
    assert all(type(v) is S(E.AllTypes) for v in received)


def test_frame_decoder_from_a_pb2_stream() -> None:
    messages = [SAMPLE, E.AllTypes(), E.AllTypes(f_color=-1)]
    stream = b"".join(_frame(m.SerializeToString()) for m in messages)
    decoder = codec.FrameDecoder(message_type=S(E.AllTypes))
    decoder.feed(stream)
    assert [codec.to_pb2(v) for v in decoder] == messages


def test_decoder_carries_its_options() -> None:
    cls = S(E.AllTypes)
    data = upb_bytes(E.AllTypes(f_bytes=b"abc", p_double=[1.5, 2.5], recursive=E.AllTypes()))
    decoder = codec.Decoder(cls, zero_copy=True, numpy=True)
    value = decoder.decode(data)
    assert isinstance(value.f_bytes, memoryview) and bytes(value.f_bytes) == b"abc"
    assert isinstance(value.p_double, np.ndarray) and value.p_double.tolist() == [1.5, 2.5]
    assert decoder.decode(data) == value  # reusable
    with pytest.raises(DepthLimitError):
        codec.Decoder(cls, max_depth=0).decode(data)
    with pytest.raises(DecodeError, match="max_elements"):
        codec.Decoder(cls, max_elements=1).decode(data)
    with pytest.raises(DecodeError) as info:
        decoder.decode(b"\x08", base=1000)  # the value of field 1 is missing
    assert info.value.offset == 1001
    assert "zero_copy=True" in repr(decoder) and decoder.type is cls


@pytest.mark.parametrize(
    ("arguments", "error", "words"),
    [
        ((int,), TypeError, "not a struct class"),
        ((E.AllTypes,), TypeError, "is a google.protobuf message class; its struct is"),
        ((S(E.AllTypes),), None, ""),
        ((S(E.AllTypes), {"max_depth": -1}), ValueError, "max_depth"),
        ((S(E.AllTypes), {"max_depth": "100"}), TypeError, "max_depth"),
        ((S(E.AllTypes), {"max_elements": 2**63}), ValueError, "max_elements"),
        ((S(E.AllTypes), {"max_elements": True}), TypeError, "max_elements"),
        ((S(E.AllTypes), {"zero_copy": 1}), TypeError, "zero_copy"),
        ((S(E.AllTypes), {"numpy": None}), TypeError, "numpy"),
    ],
)
def test_decoder_arguments_are_checked(arguments: Any, error: Any, words: str) -> None:
    cls, *options = arguments
    if error is None:
        codec.Decoder(cls, **(options[0] if options else {}))
        return
    with pytest.raises(error, match=words):
        codec.Decoder(cls, **(options[0] if options else {}))


def test_frame_decoder_takes_a_decoder_with_its_options() -> None:
    cls = S(E.AllTypes)
    messages = [cls(f_bytes=bytes([i]) * 50, p_double=[float(i)]) for i in range(3)]
    stream = b"".join(_frame(codec.encode(m)) for m in messages)
    decoder = codec.FrameDecoder(message_type=codec.Decoder(cls, zero_copy=True, numpy=True))
    held = []
    for byte in range(len(stream)):  # one byte at a time: the window moves and compacts
        decoder.feed(stream[byte : byte + 1])
        held.extend(decoder)
    assert [bytes(m.f_bytes) for m in held] == [bytes([i]) * 50 for i in range(3)]
    assert [m.p_double.tolist() for m in held] == [[0.0], [1.0], [2.0]]
    assert all(isinstance(m.f_bytes, memoryview) for m in held)
    limited = codec.FrameDecoder(message_type=codec.Decoder(cls, max_depth=0))
    limited.feed(_frame(b"\x08\x01") + _frame(upb_bytes(E.AllTypes(recursive=E.AllTypes()))))
    assert next(limited) == cls(f_int32=1)
    with pytest.raises(DepthLimitError) as info:
        next(limited)
    # In stream offsets: frame 2's payload at 4, its sub-message (after a 2-byte tag
    # and a 1-byte size) at 7.
    assert info.value.offset == 7


def test_frame_decoder_bad_struct_payload() -> None:
    good = _frame(codec.encode(_structs()[1]))
    decoder = codec.FrameDecoder(message_type=S(E.CatString))
    decoder.feed(_frame(b"\x0a\x01a") + _frame(b"\x0a\x05abc"))
    assert decoder.next_frame() == S(E.CatString)(text="a")
    with pytest.raises(DecodeError) as info:
        decoder.next_frame()
    assert isinstance(info.value.offset, int)
    with pytest.raises(DecodeError):
        decoder.feed(good)  # poisoned


def test_float_values_round_trip_through_float32() -> None:
    value = S(E.AllTypes)(f_float=0.1, p_float=[1e-50, 3.4e38])
    decoded = codec.decode(S(E.AllTypes), codec.encode(value))
    assert decoded.f_float == pystruct.unpack("<f", pystruct.pack("<f", 0.1))[0]
    assert codec.encode(value, deterministic=True) == upb_bytes(
        E.AllTypes(f_float=0.1, p_float=[1e-50, 3.4e38])
    )


@pytest.mark.parametrize("numpy", [False, True])
def test_stray_closed_enum_value_keeps_its_full_varint(numpy: bool) -> None:
    """Found by the differential suite: an undeclared value of a closed enum in a packed run
    (here 2**57 - 1, which truncates to int32 -1) becomes an unknown field holding the varint
    as read, not the truncated value, as upb keeps it."""
    data = bytes.fromhex("c2010a00ffffffffffffffff01")
    decoded = codec.decode(codec.struct(legacy_pb2.Record), data, numpy=numpy)
    expected = legacy_pb2.Record.FromString(data).SerializePartialToString(deterministic=True)
    assert codec.encode(decoded, partial=True, deterministic=True) == expected
    assert codec.unknown_fields(decoded) == bytes.fromhex("c00100c001ffffffffffffffff01")


def test_proto2_map_entry_without_key_or_value_reads_zero_values() -> None:
    """Found by fuzzing (SECURITY.md K3): upb reads a left-out key or value as its zero value."""
    data = bytes.fromhex("08 01 12 00 92 03 00")
    decoded = codec.decode(codec.struct(legacy_pb2.Record), data)
    expected = legacy_pb2.Record.FromString(data).SerializePartialToString(deterministic=True)
    assert codec.encode(decoded, partial=True, deterministic=True) == expected


def test_valueless_map_entries_are_charged_for_the_structs_they_make() -> None:
    """Found by fuzzing (SECURITY.md A1): a 9-byte map entry with no value makes a whole
    AllTypes struct of over a hundred slots; the element budget charges a struct for its
    slots, so 1 MiB of such entries is refused instead of growing to gigabytes."""
    cls = codec.struct(everything_pb2.AllTypes)
    field = everything_pb2.AllTypes.DESCRIPTOR.fields_by_name["m_string_self"]
    entries = bytearray()
    key = 0
    while len(entries) < 1024 * 1024:
        name = str(key).encode()
        entry = b"\x0a" + bytes([len(name)]) + name
        entries += _VarintBytes(field.number << 3 | 2) + bytes([len(entry)]) + entry
        key += 1
    with pytest.raises(codec.DecodeError, match="max_elements"):
        codec.decode(cls, bytes(entries))


# --- map entries: read straight into the dict, or through their entry message ----------------


def _least_budget(cls: Any, data: bytes) -> int:
    """The smallest max_elements that decodes ``data``."""
    budget = 1
    while True:
        try:
            codec.Decoder(cls, max_elements=budget).decode(data)
        except DecodeError as error:
            assert "max_elements" in str(error)
            budget += 1
        else:
            return budget


def _entry(key: bytes, value: bytes, extra: bytes = b"") -> bytes:
    """A Tree.named entry: key "..." then a Tree value, then ``extra`` inside the entry."""
    body = b"\x0a" + _VarintBytes(len(key)) + key + b"\x12" + _VarintBytes(len(value)) + value
    body += extra
    return b"\x2a" + _VarintBytes(len(body)) + body


def test_map_entries_read_directly_or_as_their_message_agree() -> None:
    tree = S(E.Tree)
    child = upb_bytes(E.Tree(value=7, children=[E.Tree(value=8)]))
    plain = _entry(b"a", child) + _entry(b"b", b"")
    # An unknown field after the value: the entry is kept whole among the unknown
    # fields (re-encoded), after its value was already read by the direct path.
    odd = _entry(b"a", child, extra=b"\x18\x05") + _entry(b"b", b"")
    for data in (plain, odd):
        decoded = codec.decode(tree, data)
        assert codec.encode(decoded, deterministic=True) == upb_bytes(E.Tree.FromString(data))
    assert set(codec.decode(tree, odd).named) == {"b"}
    # What the direct path spent on the value it gave up is given back: the odd
    # entry costs two elements more than the plain one (its unknown field, and the
    # entry kept among the unknown fields), not a second value's worth on top.
    assert _least_budget(tree, odd) == _least_budget(tree, plain) + 2


def test_map_entry_errors_are_the_entry_messages_errors() -> None:
    tree = S(E.Tree)
    cases = [  # the error, and its offset, of the entry read as a message
        (_entry(b"a", b"\x08"), TruncatedError, 8),  # the value's varint is missing
        (b"\x2a\x03\x0a\x05ab", TruncatedError, 3),  # the key runs past its entry
        (b"\x2a\x02\x12\x7f", TruncatedError, 3),  # the value runs past its entry
        (b"\x2a\x02\x0c\x00", WireFormatError, 2),  # an end-group tag in the entry
        (b"\x2a\x03\x0a\x01\xff", DecodeError, 4),  # a key that is not UTF-8
    ]
    for data, error, offset in cases:
        with pytest.raises(error) as raised:
            codec.decode(tree, data)
        assert raised.value.offset == offset
        with pytest.raises(Exception):  # noqa: B017  (upb refuses them too, with its own error)
            E.Tree.FromString(data)
    with pytest.raises(DepthLimitError):
        codec.Decoder(tree, max_depth=1).decode(_entry(b"a", upb_bytes(E.Tree(value=1))))
    assert codec.Decoder(tree, max_depth=2).decode(_entry(b"a", b"")).named["a"] == tree()


@pytest.mark.parametrize("via", ["codec.encode", "FrameEncoder.encode", "encode_frame_into"])
def test_tapes_with_no_scratch_bytes_encode(via: str) -> None:
    """Structs whose tape needs no scratch bytes, or empty buffers with no address.

    A fresh tape has no scratch memory: copying zero bytes from it was
    undefined behaviour (a null pointer plus zero) that the sanitized build
    reported on the first input of fuzz_struct_decode, an empty struct.
    """
    cls = S(E.AllTypes)
    long_unknown = cls()
    long_unknown._unknown = b"\xa2\x1f\x40" + b"u" * 64  # field 500, LEN: spliced, not copied
    cases = [
        (cls(), b""),
        (long_unknown, long_unknown._unknown),
        (cls(r_bytes=[memoryview(np.zeros(0, np.uint8))]), b"\x92\x05\x00"),
        (cls(f_bytes=memoryview(bytearray())), b""),
    ]
    for message, expected in cases:
        assert expected == upb_bytes(codec.to_pb2(message))
        if via == "codec.encode":
            assert codec.encode(message) == expected
        elif via == "FrameEncoder.encode":
            encoder = codec.FrameEncoder()
            encoder.encode(message)
            assert bytes(encoder.getbuffer()) == varint(len(expected)) + expected
        else:
            buffer = bytearray()
            codec.encode_frame_into(message, buffer)
            assert bytes(buffer) == varint(len(expected)) + expected
