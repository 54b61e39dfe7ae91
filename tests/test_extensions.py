"""Extensions on structs, against pb2 (upb): the ``Extensions`` mapping, decoding, encoding.

The schemas are ``schemas/extensions.proto`` (proto2: extensions of every
kind of ``exts.Extendable``, file-level and nested in ``exts.Scope``) and
``schemas/extensions_2023.proto`` (edition 2023: verified strings, an open
enum, packed numbers, a delimited message, an extension of the proto2
message, a LEGACY_REQUIRED field, tested in ``test_dropin.py``). Each test
does the same thing to a struct and to the equivalent pb2 message and
compares what comes out; the
random differential tests in ``test_structs_differential.py`` draw
extensions too. A few behaviours are codec's own and tested as such:
enum extensions read as ``IntEnum`` members, iteration is by number, and
extensions registered after a struct class was made are not its own.
"""

from __future__ import annotations

import copy
import pickle
import sys
import types
from typing import Any

import pytest

pytest.importorskip("grpc_tools", reason="the struct tests compile .proto files with grpcio-tools")

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.message import DecodeError as ProtobufDecodeError
from schemas import extensions_2023_pb2 as Y
from schemas import extensions_pb2 as X
from schemas import file_descriptor_set

import codec

Extendable = codec.struct(X.Extendable)
Loose = codec.struct(Y.Loose)

SCALARS = [X.i32, X.s64, X.f32, X.dbl, X.flag, X.text, X.blob, X.color, X.big, X.Scope.scoped]


def _both() -> tuple[Any, Any]:
    """A pb2 message with extensions of every kind set, and the struct of the same content."""
    message = X.Extendable(a=1)
    message.Extensions[X.i32] = -7
    message.Extensions[X.text] = "héllo"
    message.Extensions[X.color] = 2
    message.Extensions[X.big] = 2**64 - 1
    message.Extensions[X.numbers].extend([3, -1])
    message.Extensions[X.packed_numbers].extend([-2, 5])
    message.Extensions[X.self].a = 4
    message.Extensions[X.self].Extensions[X.dbl] = 0.5
    message.Extensions[X.payloads].add(id=9)
    message.Extensions[X.grouped].g = 3
    message.Extensions[X.Scope.payload].id = 2
    message.Extensions[Y.verified_text] = "ok"
    return message, Extendable.FromString(message.SerializeToString())


def _deterministic(message: Any) -> bytes:
    return message.SerializeToString(deterministic=True)  # type: ignore[no-any-return]


def _outcome(action: Any) -> Any:
    """What ``action()`` gives, or the type of the exception it raises."""
    try:
        return action()
    except Exception as error:
        return type(error)


# --- the mapping ---------------------------------------------------------------------


@pytest.mark.parametrize("extension", SCALARS, ids=lambda e: e.name)
def test_unset_scalars_read_as_their_defaults(extension: Any) -> None:
    value = Extendable().Extensions[extension]
    assert value == X.Extendable().Extensions[extension]
    assert type(value) is type(X.Extendable().Extensions[extension]) or extension is X.color
    assert not Extendable().HasExtension(extension)


def test_enum_extensions_read_as_members() -> None:
    message, value = _both()
    assert value.Extensions[X.color] is codec.load_structs(X)["exts.Color"].GREEN
    assert value.Extensions[X.color] == message.Extensions[X.color]
    assert Extendable().Extensions[X.color] == 1  # a closed enum's first value


def test_get_set_delete_as_pb2() -> None:
    message, value = _both()
    for extension in [*SCALARS, Y.verified_text]:
        assert value.Extensions[extension] == message.Extensions[extension], extension.name
        assert value.HasExtension(extension) == message.HasExtension(extension)
        assert (extension in value.Extensions) == (extension in message.Extensions)
    assert len(value.Extensions) == len(message.Extensions)
    assert set(value.Extensions) == set(message.Extensions)
    assert [e.number for e in value.Extensions] == sorted(e.number for e in message.Extensions)
    for target in (message, value):
        del target.Extensions[X.i32]
        target.ClearExtension(X.text)
        target.Extensions[X.f32] = 8
        target.Extensions[X.flag] = False  # set, though false
    assert _deterministic(message) == value.SerializeToString()
    assert value.Extensions[X.text] == "hi"
    assert not value.HasExtension(X.i32)
    assert value.HasExtension(X.flag)


@pytest.mark.parametrize(
    ("extension", "value"),
    [
        (X.i32, "1"),
        (X.i32, 1.5),
        (X.i32, 2**31),
        (X.big, -1),
        (X.f32, 2**32),
        (X.dbl, "x"),
        (X.flag, "yes"),
        (X.text, 5),
        (X.blob, "text"),
        (X.color, 5),
        (X.i32, None),
        (X.self, X.Extendable()),
        (X.numbers, [1]),
        (X.payloads, []),
    ],
)
def test_bad_assignments_raise_as_pb2(extension: Any, value: Any) -> None:
    expected = _outcome(lambda: X.Extendable().Extensions.__setitem__(extension, value))
    struct_value = value if not isinstance(value, X.Extendable) else Extendable()
    got = _outcome(lambda: Extendable().Extensions.__setitem__(extension, struct_value))
    assert isinstance(expected, type) and issubclass(expected, Exception)
    assert got is expected or (isinstance(got, type) and issubclass(got, expected))


def test_errors_name_the_extension() -> None:
    with pytest.raises(TypeError, match=r"exts\.Extendable\.\[exts\.i32\]: expected"):
        Extendable().Extensions[X.i32] = "1"
    with pytest.raises(ValueError, match=r"\[exts\.color\]: 5 is not a value of its closed enum"):
        Extendable().Extensions[X.color] = 5
    with pytest.raises(TypeError, match=r"\[exts\.self\]: a message extension is not assigned"):
        Extendable().Extensions[X.self] = Extendable()


def test_a_message_extension_read_is_not_set_until_written_to() -> None:
    for cls in (X.Extendable, Extendable):
        message = cls()
        part = message.Extensions[X.self]
        assert type(part) is cls
        assert not message.HasExtension(X.self)
        assert len(message.Extensions) == 0
        assert message.ListFields() == []
        assert message.SerializeToString() == b""
        assert message == cls()
        assert message.Extensions[X.self] is part or cls is X.Extendable
        part.Extensions[X.i32] = 0
        assert message.HasExtension(X.self)
        assert message.SerializeToString() == b"\x8a\x07\x03\xa0\x06\x00"


def test_an_empty_message_extension_on_the_wire_is_set() -> None:
    data = b"\x8a\x07\x00"
    assert X.Extendable.FromString(data).HasExtension(X.self)
    value = Extendable.FromString(data)
    assert value.HasExtension(X.self)
    assert value.SerializeToString() == data


def test_repeated_extensions_are_lists() -> None:
    message, value = _both()
    assert value.Extensions[X.numbers] == [3, -1]
    assert isinstance(value.Extensions[X.numbers], list)
    assert value.Extensions[X.payloads][0].id == 9
    value.Extensions[X.texts].append("a")
    message.Extensions[X.texts].append("a")
    value.Extensions[X.payloads].append(codec.struct(X.Payload)(id=1))
    message.Extensions[X.payloads].add(id=1)
    assert value.SerializeToString(deterministic=True) == _deterministic(message)
    for target in (message, value):
        with pytest.raises(KeyError, match="repeated"):
            target.HasExtension(X.numbers)
        assert X.numbers in target.Extensions
        assert X.colors not in target.Extensions
        del target.Extensions[X.numbers]
        assert X.numbers not in target.Extensions
    assert value.SerializeToString(deterministic=True) == _deterministic(message)


def test_fields_and_extensions_by_name_as_pb2() -> None:
    message, value = _both()
    for name in ("i32", "[exts.i32]", "exts.i32"):
        for target in (message, value):
            with pytest.raises(ValueError):
                target.HasField(name)
            with pytest.raises(ValueError):
                target.ClearField(name)
    with pytest.raises(AttributeError):
        value.i32  # noqa: B018


def test_list_fields_as_pb2() -> None:
    message, value = _both()
    expected = message.ListFields()
    got = value.ListFields()
    assert [field for field, _ in got] == [field for field, _ in expected]  # the same descriptors
    for (field, mine), (_, theirs) in zip(got, expected, strict=True):
        if field.message_type is not None and not field.is_repeated:
            assert mine.SerializeToString(deterministic=True) == _deterministic(theirs), (
                field.full_name
            )
        elif field.message_type is not None:
            assert [m.SerializeToString() for m in mine] == [_deterministic(m) for m in theirs]
        else:
            assert mine == (list(theirs) if field.is_repeated else theirs), field.full_name


def test_mappings_compare_and_hash_as_pb2() -> None:
    message, value = _both()
    other, other_value = _both()
    for mine, theirs in ((message, other), (value, other_value)):
        assert mine.Extensions == mine.Extensions
        assert mine.Extensions != theirs.Extensions  # the mappings of two messages
        with pytest.raises(TypeError):
            hash(mine.Extensions)


def test_keys_that_are_not_extensions_of_the_message() -> None:
    value = Extendable()
    for key in ("exts.i32", 100, X.Extendable.DESCRIPTOR.fields_by_name["a"]):
        with pytest.raises(KeyError, match="is not an extension's FieldDescriptor"):
            value.Extensions[key]
        with pytest.raises(KeyError):
            X.Extendable().Extensions[key]
    with pytest.raises(
        KeyError, match=r"exts2023\.verified extends exts2023\.Loose, not exts\.Ext"
    ):
        value.Extensions[Y.verified]
    with pytest.raises(KeyError):
        X.Extendable().Extensions[Y.verified]
    for cls in (X.Plain, codec.struct(X.Plain)):
        with pytest.raises(AttributeError):
            cls().Extensions  # noqa: B018


def test_a_message_without_extensions_has_no_slot_for_them() -> None:
    for cls in (codec.struct(X.Plain), codec.struct(X.Payload), codec.struct(X.Scope)):
        assert cls.__plan__.extensions is None
        assert "_extensions" not in cls.__slots__
    assert Extendable.__plan__.extensions is not None


def test_extension_ranges_without_extensions() -> None:
    Open = codec.struct(X.Open)
    assert Open.__plan__.extensions is None  # no slot
    for message in (X.Open.FromString(b"\x50\x01"), Open.FromString(b"\x50\x01")):
        assert len(message.Extensions) == 0
        assert list(message.Extensions) == []
        assert message.SerializeToString() == b"\x50\x01"  # field 10 stays unknown
        with pytest.raises(KeyError):
            message.Extensions[X.i32]


def test_nested_extensions_are_class_attributes_as_in_pb2() -> None:
    assert codec.struct(X.Scope).scoped is X.Scope.scoped
    assert codec.struct(X.Scope).payload is X.Scope.payload


def test_a_class_of_another_pool_takes_a_descriptor_of_the_same_name() -> None:
    own = codec.load_structs(file_descriptor_set())["exts.Extendable"]
    assert own is not Extendable
    value = own()
    value.Extensions[X.i32] = 3  # the _pb2 module's descriptor, another pool's
    own_i32 = own.DESCRIPTOR.file.pool.FindExtensionByName("exts.i32")
    assert own_i32 is not X.i32
    assert value.Extensions[own_i32] == 3
    assert value.SerializeToString() == b"\xa0\x06\x03"


def test_a_descriptor_of_the_same_name_that_differs_is_refused_naming_both() -> None:
    pool = descriptor_pool.DescriptorPool()
    for file in file_descriptor_set().file:
        if file.name == "extensions.proto":
            for extension in file.extension:
                if extension.name == "i32":
                    extension.number = 120
        pool.Add(file)
    other = pool.FindExtensionByName("exts.i32")
    with pytest.raises(KeyError, match=r"number 120, type 5\) is not the extension exts.i32"):
        Extendable().Extensions[other]


def test_extensions_registered_later_are_not_the_class_s() -> None:
    """upb parses an extension added to the pool after the class was made; codec does not."""
    pool = descriptor_pool.DescriptorPool()
    for file in file_descriptor_set().file:
        pool.Add(file)
    cls = codec.struct(pool.FindMessageTypeByName("exts.Extendable"))
    late = descriptor_pb2.FileDescriptorProto(
        name="late.proto", package="late", dependency=["extensions.proto"], syntax="proto2"
    )
    late.extension.add(name="late_i", number=120, type=5, label=1, extendee=".exts.Extendable")
    pool.Add(late)
    extension = pool.FindExtensionByName("late.late_i")
    value = cls.FromString(b"\xc0\x07\x05")
    assert codec.unknown_fields(value) == b"\xc0\x07\x05"
    assert value.SerializeToString() == b"\xc0\x07\x05"
    with pytest.raises(KeyError, match=r"late\.late_i is not an extension of exts\.Extendable"):
        value.Extensions[extension]


# --- methods that take the whole message ---------------------------------------------------


def test_clear_copy_merge_equality_as_pb2() -> None:
    message, value = _both()
    other, other_value = X.Extendable(), Extendable()
    other.Extensions[X.numbers].append(8)
    other_value.Extensions[X.numbers].append(8)
    other.Extensions[X.self].Extensions[X.i32] = 1
    other_value.Extensions[X.self].Extensions[X.i32] = 1
    message.MergeFrom(other)
    value.MergeFrom(other_value)
    assert value.SerializeToString(deterministic=True) == _deterministic(message)
    copied = Extendable()
    copied.CopyFrom(value)
    assert copied == value
    copied.Extensions[X.self].Extensions[X.i32] = 2
    assert copied != value
    del copied.Extensions[X.self]
    assert copied != value
    for target in (message, value):
        target.Clear()
        assert len(target.Extensions) == 0
        assert target.SerializeToString() == b""
    assert value == Extendable()
    set_zero = Extendable()
    set_zero.Extensions[X.i32] = 0
    assert set_zero != Extendable()
    assert (X.Extendable() == X.Extendable(a=0)) == (Extendable() == Extendable(a=0))


def test_merge_from_string_and_parse() -> None:
    message, value = _both()
    data = message.SerializeToString()
    merged = Extendable()
    merged.Extensions[X.i32] = 5
    merged.Extensions[X.f32] = 6
    merged.MergeFromString(data)
    expected = X.Extendable()
    expected.Extensions[X.i32] = 5
    expected.Extensions[X.f32] = 6
    expected.MergeFromString(data)
    assert merged.SerializeToString(deterministic=True) == _deterministic(expected)
    merged.ParseFromString(data)
    assert merged == value


def test_pickle_and_copy_keep_extensions(monkeypatch: pytest.MonkeyPatch) -> None:
    _, value = _both()
    # Pickles name an importable class: make the struct class one for the test.
    home = types.ModuleType("extensions_structs")
    home.Extendable = Extendable  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, home.__name__, home)
    where = Extendable.__module__, Extendable.__qualname__
    Extendable.__module__, Extendable.__qualname__ = home.__name__, "Extendable"
    try:
        assert pickle.loads(pickle.dumps(value)) == value
    finally:
        Extendable.__module__, Extendable.__qualname__ = where
    assert copy.copy(value) == value
    deep = copy.deepcopy(value)
    assert deep == value
    deep.Extensions[X.numbers].append(1)
    assert value.Extensions[X.numbers] == [3, -1]


def test_repr_shows_extensions() -> None:
    _, value = _both()
    assert "[exts.i32]=-7" in repr(value)
    assert repr(Extendable(a=1)) == "Extendable(a=1)"


def test_json_as_json_format() -> None:
    message, value = _both()
    for options in ({}, {"preserving_proto_field_name": True}):
        assert codec.to_dict(value, **options) == json_format.MessageToDict(message, **options)
    assert codec.to_json(value) == json_format.MessageToJson(message)
    assert codec.from_dict(Extendable, codec.to_dict(value)) == value
    assert codec.from_json(Extendable, codec.to_json(value)) == value
    assert "[exts.i32]" in codec.to_dict(value)


# --- required fields -----------------------------------------------------------------------


def test_required_fields_in_message_extensions_as_pb2() -> None:
    for cls in (X.Extendable, Extendable):
        message = cls()
        message.Extensions[X.Scope.payload].note = "x"
        if cls is Extendable:
            message.Extensions[X.payloads].append(codec.struct(X.Payload)())
        else:
            message.Extensions[X.payloads].add()
        message.Extensions[X.self].Extensions[X.Scope.payload].note = "y"
        assert not message.IsInitialized()
        assert sorted(message.FindInitializationErrors()) == [
            "payload.id",
            "payloads[0].id",
            "self.payload.id",
        ]
        with pytest.raises(Exception, match=r"payload\.id"):
            message.SerializeToString()
        partial = message.SerializePartialToString()
        assert cls.FromString(partial).SerializePartialToString() == partial
    with pytest.raises(codec.EncodeError, match=r"missing required fields: .*payloads"):
        codec.encode(message)


def test_required_fields_in_extensions_of_a_message_held() -> None:
    """``exts.Scope`` has no required field, but its ``inner`` may miss one in an extension."""
    message = X.Scope()
    message.inner.Extensions[X.Scope.payload].note = "x"
    value = codec.struct(X.Scope)(inner=Extendable())
    value.inner.Extensions[X.Scope.payload].note = "x"
    for target in (message, value):
        assert target.FindInitializationErrors() == ["inner.payload.id"]
        with pytest.raises(Exception, match=r"inner\.payload\.id"):
            target.SerializeToString()
    assert value.SerializePartialToString() == message.SerializePartialToString()


# --- decoding and encoding ---------------------------------------------------------------


def test_encoding_is_upbs_deterministic_one() -> None:
    """Fields by number, then extensions (the highest number first), then unknown fields."""
    message, value = _both()
    message.MergeFromString(b"\xf8\x0c\x01")  # 199: in an extension range, not an extension
    value.MergeFromString(b"\xf8\x0c\x01")
    assert value.SerializeToString(deterministic=True) == _deterministic(message)
    assert codec.unknown_fields(value) == b"\xf8\x0c\x01"
    assert codec.encoded_size(value) == message.ByteSize()


def test_invalid_utf8_in_a_verified_string_extension_is_refused() -> None:
    data = b"\x08\x01" + b"\xb2\x09\x02\xff\xfe"  # exts2023.verified_text, edition 2023
    with pytest.raises(ProtobufDecodeError):
        X.Extendable.FromString(data)
    with pytest.raises(codec.DecodeError, match=r"\[exts2023.verified_text\]") as caught:
        Extendable.FromString(data)
    assert caught.value.offset == 5
    nested = b"\x1a\x05" + data[2:]  # the same, inside `child`
    with pytest.raises(codec.DecodeError) as caught:
        codec.decode(Extendable, nested, base=100)
    assert caught.value.offset == 105
    loose = b"\x52\x01\xff"  # exts2023.verified
    with pytest.raises(ProtobufDecodeError):
        Y.Loose.FromString(loose)
    with pytest.raises(codec.DecodeError):
        Loose.FromString(loose)


def test_proto2_string_extensions_are_not_verified_as_upb() -> None:
    data = b"\xca\x06\x02\xff\xfe"
    assert X.Extendable.FromString(data).Extensions[X.text] == b"\xff\xfe"
    value = Extendable.FromString(data)
    assert value.Extensions[X.text] == b"\xff\xfe"
    assert value.SerializeToString() == data


@pytest.mark.parametrize(
    "data",
    [
        b"\xd8\x06\x09",  # color = 9: not a value of the closed enum
        b"\x82\x07\x02\x09\x01",  # colors, packed, with an undeclared value
        b"\xa5\x06\x01\x00\x00\x00",  # i32 with the wrong wire type
        b"\x80\x08\x01",  # 128: no extension there
    ],
)
def test_what_upb_keeps_unknown_stays_unknown(data: bytes) -> None:
    expected = X.Extendable.FromString(data)
    value = Extendable.FromString(data)
    assert value.SerializeToString(deterministic=True) == _deterministic(expected)
    assert codec.unknown_fields(value) != b""
    assert value.Extensions[X.colors] == list(expected.Extensions[X.colors])


def test_open_enum_and_packed_extensions_in_an_edition() -> None:
    message = Y.Loose()
    message.Extensions[Y.mood] = 7  # open: any value
    message.Extensions[Y.packed].extend([1, 300])
    message.Extensions[Y.delimited].x = 2
    message.Extensions[Y.nested].Extensions[Y.verified] = "é"
    data = message.SerializeToString()
    value = Loose.FromString(data)
    assert value.Extensions[Y.mood] == 7
    assert value.Extensions[Y.packed] == [1, 300]
    assert value.SerializeToString(deterministic=True) == _deterministic(message)
    assert b"\x73\x08\x02\x74" in data  # delimited: a group


def test_extensions_nest_within_the_depth_limit() -> None:
    data = b""
    for _ in range(5):
        data = b"\x8a\x07" + bytes([len(data)]) + data
    value = codec.decode(Extendable, data, max_depth=5)
    assert value.SerializeToString() == data
    with pytest.raises(codec.errors.DepthLimitError):
        codec.decode(Extendable, data, max_depth=4)
    message = X.Extendable.FromString(data)
    assert message.SerializeToString() == data


def test_decoders_and_frames_read_extensions() -> None:
    message, value = _both()
    data = message.SerializeToString()
    for decoder in (codec.Decoder(Extendable), codec.Decoder(Extendable, zero_copy=True)):
        decoded = decoder.decode(bytearray(data))
        assert decoded.SerializeToString() == value.SerializeToString()
    encoder = codec.FrameEncoder()
    encoder.encode(value)
    encoder.encode(value)
    frames = bytes(encoder.getbuffer())
    frame_decoder = codec.FrameDecoder(message_type=Extendable)
    for i in range(len(frames)):
        frame_decoder.feed(frames[i : i + 1])
    received = list(frame_decoder)
    assert received == [value, value]
    assert received[0].Extensions[X.self].Extensions[X.dbl] == 0.5


def test_to_and_from_pb2_keep_extensions() -> None:
    message, value = _both()
    assert codec.to_pb2(value) == message
    assert codec.from_pb2(message) == value
    assert message_factory.GetMessageClass(Extendable.DESCRIPTOR) is X.Extendable
