"""Differential tests of structs against upb (the google.protobuf backend).

Random google.protobuf messages are built for every message type of the test
schemas (``tests/schemas/everything.proto``, ``legacy.proto``) and of
``google/protobuf/descriptor.proto`` by one generic hypothesis strategy driven
by the descriptor (each field filled with random values of its type, oneofs
with at most one member, required fields always, recursion bounded). Then:

(a) ``codec.encode(codec.from_pb2(m), deterministic=True) ==
    m.SerializeToString(deterministic=True)`` byte for byte, and
    ``codec.encoded_size`` is its length; without ``deterministic``, the
    bytes upb parses back to ``m`` (map entries in the maps' own order);
(b) ``codec.decode(Cls, m.SerializeToString())`` equals ``codec.from_pb2(m)``
    and converts back to ``m`` with ``codec.to_pb2``; the same for
    ``bytearray``/``memoryview`` input and with ``zero_copy``/``numpy``;
(c) random mutations (bit flips, byte changes, insertions, deletions,
    truncation) of valid encodings, and valid encodings of one type decoded as
    another type, and plain random bytes: either upb and codec both accept
    and agree on the content (compared through the deterministic re-encodings:
    codec's deterministic encoding of its result against upb's
    ``SerializePartialToString(deterministic=True)``), or both reject, or
    codec rejects for one of the intended divergences below. codec may only
    ever raise a ``codec.DecodeError`` subclass.

Intended divergences (each has a detector below and a test of its own; every
other difference fails):

1. **Varint overflow** (catalogue V3, ``docs/bad-inputs.md``): a 10-byte varint whose
   10th byte is > 1 (a value >= 2**64). upb drops the extra bits and accepts;
   codec rejects it with ``VarintError`` at the varint's first byte (the Go
   ``protowire`` rule, the varint profiles of ``codec.varint``). Applies to values and to
   lengths (upb rejects those too, so only values diverge).
2. **Invalid UTF-8 in a proto2 ``string`` field.** upb does not validate
   proto2 strings (Python then sees ``bytes``); codec may reject them with a
   ``DecodeError`` (structs hold ``str``). Accepting them is also allowed,
   provided the re-encoding keeps the bytes (then there is no divergence).
3. **Field number 0 in a message type that has no fields** (``Empty``,
   ``FeatureSet.ProtoLimitsFeature``, ...). upb skips its field-number check
   for such messages and keeps the field as unknown (``00 01`` parses as an
   ``Empty``; in ``Leaf`` the same bytes are rejected); codec rejects field 0
   everywhere, as the catalogue (T1) and the conformance suite require:
   ``WireFormatError`` at the tag.
4. **A map entry kept among the unknown fields whose value holds a map.** An
   entry that holds an unknown field of its own is kept, re-encoded, among the
   unknown fields (as upb keeps it); upb re-encodes the map inside its value in
   its hash table's order (which changes from one process to the next), codec
   in the deterministic order.

Not divergences, but upb behaviours codec must copy, so they are asserted:
the last member of a oneof on the wire wins; a length-delimited size written
in more than 5 bytes (padded) is refused, as upb reads at most 5 (a finding, K2,
until codec followed it); a value that a proto2 (closed)
enum does not declare goes to the unknown fields (a singular field, and each
such element of a repeated field, packed or not, as its own varint record); a
map entry holding an unknown field (or a key or value with the wrong wire
type, or an undeclared closed-enum value) is kept whole as an unknown field of
the parent and not put in the map; a message missing proto2 required fields is
accepted (``codec.encode`` may then raise ``EncodeError`` as upb's
``SerializeToString`` does, or write the partial message as
``SerializePartialToString`` does); proto2 strings that are not UTF-8 may come
out as ``bytes``, as upb gives them; a ``float`` NaN, signalling ones included,
re-encodes to the 4 bytes it was read from, as upb keeps them (a numpy float32
array holding it too).
"""

from __future__ import annotations

import contextlib
import io
import math
import struct as pystruct
from typing import Any

import numpy as np
import pytest

pytest.importorskip("grpc_tools", reason="the struct tests compile .proto files with grpcio-tools")

from google.protobuf import wrappers_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.internal.encoder import _VarintBytes
from google.protobuf.message import DecodeError as ProtobufDecodeError
from helpers import peerbench as _peerbench
from helpers.messages import ALL, extensions_of, mutations, pb2_messages
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from schemas import everything_pb2, legacy_pb2
from schemas.divergences import (
    MESSAGE_TYPES,
    deterministic,
    has_nan,
    has_proto2_invalid_utf8,
    has_unknown_map_entry,
    is_field_zero,
    is_varint_overflow,
)

import codec

FD = FieldDescriptor
NAMES = sorted(ALL)


def encoded(value: Any) -> bytes:
    """codec's encoding with map entries in upb's deterministic order: what is compared."""
    return codec.encode(value, deterministic=True)


# Types whose random instances reach every other type of their schema.
ROOTS = [
    "everything.AllTypes",
    "everything.Tree",
    "legacy.Record",
    "legacy.WithGroups",
    "legacy.Link",
    "exts.Extendable",
    "exts2023.Loose",
    "google.protobuf.FileDescriptorSet",
]

# Generated messages get big quickly; the data-size check is about that, not a bug.
BIG = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


any_pb2_message = st.sampled_from(NAMES).flatmap(lambda name: pb2_messages(ALL[name]))


# --- helpers ------------------------------------------------------------------------


def struct_of(cls: Any) -> type:
    return codec.struct(cls)


def upb_parse(cls: Any, data: bytes) -> Any:
    """upb's parse of ``data`` as ``cls``, or None when upb rejects it."""
    try:
        return cls.FromString(data)
    except ProtobufDecodeError:
        return None


def codec_parse(cls: Any, data: Any, **options: bool) -> tuple[Any, codec.DecodeError | None]:
    """codec's parse of ``data``: (struct, None) or (None, error). Any other exception escapes."""
    try:
        return codec.decode(struct_of(cls), data, **options), None
    except codec.DecodeError as error:
        return None, error


def _encoding(value: Any) -> Any:
    """``encoded(value)``, or the class of its EncodeError (missing required fields)."""
    try:
        return encoded(value)
    except codec.EncodeError as error:
        return type(error)


def check_options_agree(cls: Any, data: bytes, decoded: Any, error: Any) -> None:
    """``zero_copy``/``numpy`` decoding of a bytearray, and lazy decoding, find the same
    content or the same error. A lazy message is read field by field (``repr``, which
    parses each pending field as Python code reads it) and by the encoder."""
    other, other_error = codec_parse(cls, bytearray(data), zero_copy=True, numpy=True)
    lazy, lazy_error = codec_parse(cls, data, lazy=True)
    if error is None:
        assert other_error is None, f"only zero_copy/numpy decoding fails: {other_error!r}"
        assert _encoding(other) == _encoding(decoded)
        assert lazy_error is None, f"only lazy decoding fails: {lazy_error!r}"
        assert repr(lazy) == repr(decoded)
        assert _encoding(codec_parse(cls, bytearray(data), lazy=True)[0]) == _encoding(decoded)
    else:
        assert other_error is not None, f"only plain decoding fails: {error!r}"
        assert (type(other_error), other_error.offset) == (type(error), error.offset)
        assert lazy_error is not None, f"only eager decoding fails: {error!r}"
        assert (type(lazy_error), lazy_error.offset) == (type(error), error.offset)


def check_against_upb(cls: Any, data: bytes) -> str:
    """Decode ``data`` with upb and codec and check that they agree; return the verdict."""
    with contextlib.suppress(InvalidArgument):  # outside a hypothesis test
        note(f"{cls.DESCRIPTOR.full_name} <- {data.hex(' ')}")
    expected = upb_parse(cls, data)
    decoded, error = codec_parse(cls, data)
    check_options_agree(cls, data, decoded, error)
    if error is not None:
        assert isinstance(error.offset, int), f"{error!r} has no offset"
        if expected is None:
            return "both reject"
        if is_varint_overflow(data, error):
            return "divergence 1: varint overflow"
        if has_proto2_invalid_utf8(expected):
            return "divergence 2: proto2 invalid UTF-8"
        if is_field_zero(data, error):
            return "divergence 3: field 0 in a message without fields"
        upb_read = deterministic(expected).hex(" ")
        raise AssertionError(f"codec rejects what upb accepts: {error!r}; upb reads {upb_read}")
    assert expected is not None, f"codec accepts what upb rejects: {decoded!r}"
    return compare_content(cls, expected, decoded)


def compare_content(cls: Any, expected: Any, decoded: Any) -> str:
    """Both accepted: compare codec's re-encoding with upb's deterministic one."""
    upb_bytes = deterministic(expected)
    try:
        codec_bytes = encoded(decoded)
    except codec.EncodeError:
        if not expected.IsInitialized():
            return "both accept; missing required fields"  # as upb's SerializeToString
        raise
    assert codec.encoded_size(decoded) == len(codec_bytes)
    again = encoded(codec.decode(type(decoded), codec_bytes))
    assert again == codec_bytes, f"decode -> encode is no fixed point: {again.hex(' ')}"
    if codec_bytes == upb_bytes:
        verdict = "both accept, same content"
    elif has_unknown_map_entry(decoded):
        verdict = "divergence 4: a map entry kept as unknown, with a map inside"
    else:
        raise AssertionError(
            "codec and upb read different content:\n"
            f"  codec re-encodes {codec_bytes.hex(' ')}\n"
            f"  upb re-encodes   {upb_bytes.hex(' ')}"
        )
    # The conversions carry the same content, unknown fields included, at every level.
    converted = codec.from_pb2(expected)
    if has_unknown_map_entry(decoded):
        # upb writes the map inside the entry of divergence 4 in its hash order, which
        # changes from one process to the next, deterministic or not, and compares
        # unknown fields byte for byte: only the size of the content can be compared.
        assert len(encoded(converted)) == len(codec_bytes), "from_pb2 loses content"
    else:
        assert encoded(converted) == codec_bytes, "from_pb2 loses content"
        assert deterministic(codec.to_pb2(decoded)) == codec_bytes, "to_pb2 loses content"
    return verdict


def assert_struct_matches(message: Any, decoded: Any) -> None:
    """``decoded`` (a struct) holds the content of the google.protobuf ``message``."""
    assert type(decoded) is struct_of(type(message))
    assert encoded(decoded) == deterministic(message)
    assert codec.to_pb2(decoded) == message
    if not has_nan(message):
        assert decoded == codec.from_pb2(message)


# --- the strategy itself ---------------------------------------------------------------


@pytest.mark.parametrize("name", ROOTS)
@BIG
@given(data=st.data())
def test_strategy_builds_valid_messages(name: str, data: st.DataObject) -> None:
    """The generator makes initialized messages that upb round-trips (no codec involved)."""
    message = data.draw(pb2_messages(ALL[name]))
    assert message.IsInitialized()
    encoded = message.SerializeToString(deterministic=True)
    assert type(message).FromString(encoded) == message


def test_strategy_covers_every_message_type() -> None:
    reached: set[str] = set()

    def visit(descriptor: Descriptor) -> None:
        if descriptor.full_name in reached:
            return
        reached.add(descriptor.full_name)
        for field in [*descriptor.fields, *extensions_of(descriptor)]:
            if field.type in MESSAGE_TYPES:
                target = field.message_type
                if target.GetOptions().map_entry:
                    target = target.fields_by_name["value"].message_type
                if target is not None:
                    visit(target)

    for name in ROOTS:
        visit(ALL[name].DESCRIPTOR)
    # The rest are drawn by the tests that sample any type.
    unreached = {name for name in NAMES if not name.startswith("everything.Cat")} - reached
    assert unreached == {
        "everything.Chain",
        "exts.Open",
        "exts.Plain",
        "exts.Scope",
        "exts2023.Holder",
        "google.protobuf.FeatureSet.ProtoLimitsFeature",
        "google.protobuf.FeatureSet.VisibilityFeature",
        "google.protobuf.FeatureSetDefaults",
        "google.protobuf.FeatureSetDefaults.FeatureSetEditionDefault",
        "google.protobuf.GeneratedCodeInfo",
        "google.protobuf.GeneratedCodeInfo.Annotation",
    }


# --- (a) encode matches upb's deterministic serialization ------------------------------


@pytest.mark.parametrize("name", ROOTS)
@BIG
@given(data=st.data())
def test_encode_matches_upb(name: str, data: st.DataObject) -> None:
    message = data.draw(pb2_messages(ALL[name]))
    value = codec.from_pb2(message)
    expected = message.SerializeToString(deterministic=True)
    assert encoded(value) == expected
    assert codec.encoded_size(value) == len(expected)
    assert codec.to_pb2(value) == message


@BIG
@given(message=any_pb2_message)
def test_encode_matches_upb_any_type(message: Any) -> None:
    value = codec.from_pb2(message)
    assert encoded(value) == message.SerializeToString(deterministic=True)
    assert codec.encoded_size(value) == message.ByteSize()


def _boundary_lengths() -> list[int]:
    # Name lengths that put a Span's body (13 bytes besides the name and its
    # 1- or 2-byte prefix) on either side of 128 and 16,384 bytes, the sizes
    # where its length prefix grows; a name longer than 64 bytes is spliced
    # into the output rather than copied, so both kinds of body are there.
    return sorted({*range(0, 8), *range(60, 70), *range(105, 125), *range(16_360, 16_380)})


@pytest.mark.parametrize("length", _boundary_lengths())
def test_length_prefixes_at_their_size_boundaries(length: int) -> None:
    spans = [
        _peerbench.Span(name="x" * length, tags=[1, 300], window=_peerbench.Interval(end=0.5)),
        _peerbench.Span(scope_id=1, name="y" * (length // 2)),
    ]
    message = _peerbench.Trace(index=1, spans=spans)
    value = codec.from_pb2(message)
    expected = message.SerializeToString(deterministic=True)
    assert encoded(value) == expected
    assert codec.encoded_size(value) == len(expected)
    encoder = codec.FrameEncoder()
    encoder.encode(value)
    assert bytes(encoder.getbuffer()) == _VarintBytes(len(expected)) + expected


@pytest.mark.parametrize("length", range(71))
def test_short_strings_and_bytes_are_copied_exactly(length: int) -> None:
    # Up to 64 bytes are copied into the tape, 8 to 32 of them by overlapping 8-byte
    # moves: every position holds a byte of its own, so a move misplaced shows.
    text = "".join(chr(0x41 + i % 58) for i in range(length))
    data = bytes(range(1, length + 1))
    message = everything_pb2.AllTypes(
        f_string=text, f_bytes=data, r_string=[text, text[::-1]], r_bytes=[data[::-1]]
    )
    expected = message.SerializeToString(deterministic=True)
    value = codec.from_pb2(message)
    assert encoded(value) == expected
    assert codec.decode(type(value), expected) == value


def _magnitudes() -> list[int]:
    """0, and each power of two from 2**0 to 2**63 with its neighbours below and above."""
    return sorted({0, *(n for k in range(64) for n in ((1 << k) - 1, 1 << k, (1 << k) + 1))})


@pytest.mark.parametrize("top", [1, 2, 8, 14, 15, 21, 28, 35, 42, 49, 56, 57, 63, 64])
def test_varints_of_every_length_match_upb(top: int) -> None:
    # The tape writes a varint of up to 8 bytes in one store, its length found from the
    # value: the values below 2**top, and their negatives, at every length boundary,
    # packed (one run, each right after the last) and as singular fields.
    unsigned = [n for n in _magnitudes() if n < 1 << top]
    signed = [n for n in unsigned if n < 1 << 63] + [-n for n in unsigned if 0 < n <= 1 << 63]
    message = everything_pb2.AllTypes(
        f_uint64=max(unsigned),
        f_int64=min(signed),
        f_sint64=max(signed),
        p_uint64=unsigned,
        p_int64=signed,
        p_sint64=signed,
        u_uint64=unsigned,
    )
    expected = message.SerializeToString(deterministic=True)
    value = codec.from_pb2(message)
    assert encoded(value) == expected
    encoder = codec.FrameEncoder()
    encoder.encode(value)
    assert bytes(encoder.getbuffer()) == _VarintBytes(len(expected)) + expected


# Keys whose order hangs on each rule of the comparison: a shared first 8 bytes,
# lengths on either side of 8, a key before its own prefixes, NUL and non-ASCII bytes.
_TEXT_KEYS = [
    "",
    "a",
    "ab",
    "a\0",
    "a\0b",
    "b",
    "abcdefg",
    "abcdefgh",
    "abcdefgh\0",
    "abcdefghi",
    "abcdefgi",
    "abcdefghij",
    "abcdefghz",
    "\0",
    "\0\0",
    "é",
    "e\u0301",
    "\U0001f600",
    "zz",
    "abcdefgh" * 3,
    "abcdefgh" * 3 + "a",
    "abcdefgh" * 2 + "abcdefgz",
    "~",
    "\x7f",
]


@pytest.mark.parametrize("count", [2, 5, 16, 17, len(_TEXT_KEYS)])
@pytest.mark.parametrize("shift", [0, 7, 13])
def test_map_entries_are_sorted_as_upb_sorts_them(count: int, shift: int) -> None:
    # Up to 16 entries are sorted by insertion, more by qsort; the keys go in rotated,
    # so each count starts from another order.
    keys = (_TEXT_KEYS[shift:] + _TEXT_KEYS[:shift])[:count]
    numbers = [(-1) ** i * 6**i for i in range(count)]  # up to 6**23 < 2**63
    message = everything_pb2.AllTypes(
        m_string_string={key: key[::-1] for key in keys},
        m_int64_string={number: str(number) for number in numbers},
        m_sint64_double={number: 0.5 for number in numbers},
    )
    expected = message.SerializeToString(deterministic=True)
    assert encoded(codec.from_pb2(message)) == expected


# --- map order: each map's own, unless deterministic ------------------------------------------


@pytest.mark.parametrize("name", ROOTS)
@BIG
@given(data=st.data())
def test_encode_in_the_maps_own_order_is_the_same_message_to_upb(
    name: str, data: st.DataObject
) -> None:
    message = data.draw(pb2_messages(ALL[name]))
    value = codec.from_pb2(message)
    plain = codec.encode(value)
    assert len(plain) == codec.encoded_size(value)
    again = type(message).FromString(plain)
    assert deterministic(again) == deterministic(message)


_KEYS = ["b", "", "ab", "a"]
_NUMBERS = [3, -1, 7, 0]


def test_map_entries_go_out_in_the_maps_own_order() -> None:
    cls = struct_of(everything_pb2.AllTypes)
    strings = {key: key.upper() for key in _KEYS}
    numbers = {number: str(number) for number in _NUMBERS}
    value = cls(m_string_string=strings, m_int64_string=numbers)
    one_by_one = b"".join(  # m_int64_string is field 92, m_string_string 102
        [codec.encode(cls(m_int64_string={key: text})) for key, text in numbers.items()]
        + [codec.encode(cls(m_string_string={key: text})) for key, text in strings.items()]
    )
    assert codec.encode(value) == one_by_one
    # A decode keeps the order of the wire, so its encode gives the same bytes back.
    assert codec.encode(codec.decode(cls, one_by_one)) == one_by_one
    pb2_message = everything_pb2.AllTypes(m_string_string=strings, m_int64_string=numbers)
    upb_sorted = pb2_message.SerializeToString(deterministic=True)
    assert codec.encode(value, deterministic=True) == upb_sorted != one_by_one


def test_every_encoder_takes_deterministic_as_pb2_does() -> None:
    pb2_message = everything_pb2.AllTypes(
        m_string_string={key: key.upper() for key in _KEYS}, f_int32=5
    )
    value = codec.from_pb2(pb2_message)
    value.m_string_string = {key: key.upper() for key in reversed(_KEYS)}
    upb_sorted = pb2_message.SerializeToString(deterministic=True)
    assert value.SerializeToString(deterministic=True) == upb_sorted
    assert value.SerializePartialToString(deterministic=True) == upb_sorted
    assert value.SerializeToString() == codec.encode(value) != upb_sorted
    frame = _VarintBytes(len(upb_sorted)) + upb_sorted
    for message in (value, pb2_message):
        encoder = codec.FrameEncoder(deterministic=True)
        assert encoder.deterministic is True
        encoder.encode(message)
        assert bytes(encoder.getbuffer()) == frame
        buffer = bytearray()
        codec.encode_frame_into(message, buffer, deterministic=True)
        assert buffer == frame
        sink = io.BytesIO()
        codec.write_frames(sink, [message], deterministic=True)
        assert sink.getvalue() == frame
    encoder = codec.FrameEncoder()
    assert encoder.deterministic is False
    encoder.encode(value)
    assert bytes(encoder.getbuffer()) == _VarintBytes(len(upb_sorted)) + codec.encode(value)
    for wrong in (1, None, "yes"):
        with pytest.raises(TypeError, match="deterministic must be True or False"):
            codec.FrameEncoder(deterministic=wrong)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="deterministic must be True or False"):
            codec.encode_frame_into(value, bytearray(), deterministic=wrong)  # type: ignore[arg-type]


def _tree(levels: int, key_length: int) -> Any:
    """A Tree whose bodies nest ``levels`` deep, each holding the level below three times."""
    tree = everything_pb2.Tree(value=levels)
    if levels:
        tree.left.CopyFrom(_tree(levels - 1, key_length))
        tree.children.add().CopyFrom(_tree(levels - 1, key_length // 2))
        tree.named["k" * key_length].CopyFrom(_tree(levels - 1, 0))
    return tree


@pytest.mark.parametrize("levels", [1, 2, 4, 6])
@pytest.mark.parametrize("key_length", [0, 40, 70, 200])
def test_long_bodies_inside_long_bodies(levels: int, key_length: int) -> None:
    # A body of 128 bytes or more gets its length prefix's splice when it is closed,
    # before the splices of its own body (long keys, spliced rather than copied, and
    # the prefixes of the long bodies inside it): the order the write pass needs.
    message = _tree(levels, key_length)
    expected = message.SerializeToString(deterministic=True)
    value = codec.from_pb2(message)
    assert encoded(value) == expected
    assert codec.encoded_size(value) == len(expected)


# --- (b) decode matches upb's parse ---------------------------------------------------


@pytest.mark.parametrize("name", ROOTS)
@BIG
@given(data=st.data())
def test_decode_matches_upb(name: str, data: st.DataObject) -> None:
    message = data.draw(pb2_messages(ALL[name]))
    wire = message.SerializeToString()  # not deterministic: map order as upb writes it
    for buffer in (wire, bytearray(wire), memoryview(wire)):
        assert_struct_matches(message, codec.decode(struct_of(type(message)), buffer))


@BIG
@given(message=any_pb2_message)
def test_decode_matches_upb_any_type(message: Any) -> None:
    wire = message.SerializeToString()
    assert_struct_matches(message, codec.decode(struct_of(type(message)), wire))


@pytest.mark.parametrize("name", ["everything.AllTypes", "everything.Tree", "legacy.Record"])
@BIG
@given(data=st.data())
def test_decode_options_keep_content(name: str, data: st.DataObject) -> None:
    """zero_copy and numpy change the containers, not the content."""
    message = data.draw(pb2_messages(ALL[name]))
    wire = message.SerializeToString()
    cls = struct_of(type(message))
    expected = deterministic(message)
    for options in ({"zero_copy": True}, {"numpy": True}, {"zero_copy": True, "numpy": True}):
        decoded = codec.decode(cls, wire, **options)
        assert encoded(decoded) == expected, options
        assert codec.to_pb2(decoded) == message, options


# --- (c) mutated, mistyped and random input --------------------------------------------


@pytest.mark.parametrize("name", ROOTS)
@BIG
@given(data=st.data())
def test_mutated_input_agrees_with_upb(name: str, data: st.DataObject) -> None:
    cls = ALL[name]
    message = data.draw(pb2_messages(cls))
    wire = message.SerializeToString(deterministic=data.draw(st.booleans()))
    check_against_upb(cls, data.draw(mutations(wire), label="mutated"))


@BIG
@given(message=any_pb2_message, name=st.sampled_from(NAMES))
def test_other_types_input_agrees_with_upb(message: Any, name: str) -> None:
    """A valid encoding of one type read as another: wrong wire types, unknown fields."""
    check_against_upb(ALL[name], message.SerializeToString())


@given(data=st.binary(max_size=64), name=st.sampled_from(NAMES))
@example(data=b"\x0b" * 64, name="everything.AllTypes")
@example(data=b"\x0a\x80\x80\x80\x80\x10", name="everything.CatString")
def test_random_bytes_agree_with_upb(data: bytes, name: str) -> None:
    check_against_upb(ALL[name], data)


# --- the intended divergences, one example each ------------------------------------------


def test_divergence_varint_overflow() -> None:
    data = b"\x08" + b"\xff" * 9 + b"\x7f"
    assert everything_pb2.CatInt32.FromString(data).value == -1  # upb drops the bits
    with pytest.raises(codec.errors.VarintError) as info:
        codec.decode(struct_of(everything_pb2.CatInt32), data)
    assert info.value.offset == 1
    assert check_against_upb(everything_pb2.CatInt32, data) == "divergence 1: varint overflow"


def test_varint_overflow_in_a_length_is_no_divergence() -> None:
    data = b"\x0a" + b"\x80" * 9 + b"\x02"  # 2**64 as a string length
    with pytest.raises(ProtobufDecodeError):
        everything_pb2.CatString.FromString(data)
    with pytest.raises(codec.errors.VarintError):
        codec.decode(struct_of(everything_pb2.CatString), data)
    assert check_against_upb(everything_pb2.CatString, data) == "both reject"


@pytest.mark.parametrize(
    ("cls", "data", "offset"),
    [
        pytest.param(everything_pb2.CatString, "0a 80 80 80 80 80 00", 1, id="6-byte-zero"),
        pytest.param(everything_pb2.CatPackedInt32, "0a 81 80 80 80 80 00 01", 1, id="packed"),
        pytest.param(everything_pb2.CatNested, "0a 07 0a 80 80 80 80 80 00", 3, id="unknown-len"),
        pytest.param(legacy_pb2.WithGroups, "0a" + " 80" * 9 + " 00", 1, id="K2-reproducer"),
    ],
)
def test_size_longer_than_5_bytes_is_refused_as_upb_refuses_it(
    cls: Any, data: str, offset: int
) -> None:
    """K2: upb reads a LEN size in at most 5 bytes; codec refuses longer ones at the size."""
    message = bytes.fromhex(data)
    with pytest.raises(codec.errors.WireFormatError) as info:
        codec.decode(struct_of(cls), message)
    assert info.value.offset == offset
    assert check_against_upb(cls, message) == "both reject"


def test_size_padded_to_5_bytes_is_accepted_as_upb_accepts_it() -> None:
    message = bytes.fromhex("0a 83 80 80 80 00 61 62 63")
    assert everything_pb2.CatString.FromString(message).text == "abc"
    assert check_against_upb(everything_pb2.CatString, message) == "both accept, same content"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        pytest.param("everything.Empty", b"\x00\x01", id="Empty"),
        pytest.param("everything.Empty", b"\x05\xc2\x66\xff\x65", id="Empty-fixed32"),
        pytest.param("everything.AllTypes", b"\xa2\x01\x02\x00\x01", id="nested-Empty"),
        pytest.param("google.protobuf.FeatureSet.ProtoLimitsFeature", b"\x03\x04", id="group"),
    ],
)
def test_divergence_field_zero_in_a_message_without_fields(name: str, data: bytes) -> None:
    ALL[name].FromString(data)  # upb accepts (it rejects field 0 elsewhere: T1 rows)
    with pytest.raises(codec.errors.WireFormatError):
        codec.decode(struct_of(ALL[name]), data)
    verdict = check_against_upb(ALL[name], data)
    assert verdict == "divergence 3: field 0 in a message without fields"


def test_divergence_proto2_invalid_utf8() -> None:
    data = b"\x08\x01\x12\x02\xff\xfe"
    assert legacy_pb2.Record.FromString(data).name == b"\xff\xfe"  # upb: bytes, no check
    verdict = check_against_upb(legacy_pb2.Record, data)
    assert verdict in ("divergence 2: proto2 invalid UTF-8", "both accept, same content")


# --- upb behaviours that are not divergences ------------------------------------------------


def _tag(number: int, wire_type: int) -> bytes:
    return _VarintBytes(number << 3 | wire_type)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(_tag(91, 2) + b"\x06\x08\x01\x10\x02\x18\x03", id="unknown-field"),
        pytest.param(_tag(91, 2) + b"\x05\x0d\x01\x00\x00\x00", id="key-wrong-wire-type"),
        pytest.param(_tag(91, 2) + b"\x05\x08\x01\x12\x01\x00", id="value-wrong-wire-type"),
    ],
)
def test_map_entry_with_unknown_fields_stays_unknown(data: bytes) -> None:
    expected = everything_pb2.AllTypes.FromString(data)
    assert dict(expected.m_int32_int32) == {}  # upb keeps the whole entry as unknown
    decoded = codec.decode(struct_of(everything_pb2.AllTypes), data)
    assert decoded.m_int32_int32 == {}
    assert codec.unknown_fields(decoded) == data
    assert encoded(decoded) == data


@pytest.mark.parametrize(
    ("data", "unknown"),
    [
        pytest.param(b"\x48\x02", b"\x48\x02", id="singular"),
        pytest.param(b"\xb8\x01\x01\xb8\x01\x02", b"\xb8\x01\x02", id="unpacked"),
        pytest.param(b"\xba\x01\x03\x01\x02\x05", b"\xb8\x01\x02", id="unpacked-sent-packed"),
        pytest.param(b"\xc2\x01\x03\x01\x02\x05", b"\xc0\x01\x02", id="packed"),
        pytest.param(b"\xc0\x01\x18\xc0\x01\x05", b"\xc0\x01\x18", id="packed-sent-unpacked"),
        pytest.param(b"\x9a\x03\x04\x08\x01\x10\x07", b"\x9a\x03\x04\x08\x01\x10\x07", id="map"),
    ],
)
def test_undeclared_closed_enum_values_are_unknown_fields(data: bytes, unknown: bytes) -> None:
    data = b"\x08\x01\x12\x00" + data  # legacy.Record with its required fields
    expected = legacy_pb2.Record.FromString(data)
    decoded = codec.decode(struct_of(legacy_pb2.Record), data)
    assert decoded == codec.from_pb2(expected)
    for options in ({}, {"numpy": True}, {"zero_copy": True}):
        decoded = codec.decode(struct_of(legacy_pb2.Record), data, **options)
        assert codec.unknown_fields(decoded) == unknown, options
        assert encoded(decoded) == deterministic(expected), options
    assert check_against_upb(legacy_pb2.Record, data) == "both accept, same content"


def test_oneof_last_member_on_the_wire_wins() -> None:
    data = _tag(111, 0) + b"\x05" + _tag(112, 2) + b"\x01x"
    expected = everything_pb2.AllTypes.FromString(data)
    assert expected.WhichOneof("choice") == "c_string"
    decoded = codec.decode(struct_of(everything_pb2.AllTypes), data)
    assert codec.which_oneof(decoded, "choice") == "c_string"
    assert not decoded.HasField("c_uint32")
    assert encoded(decoded) == expected.SerializeToString(deterministic=True)


def test_missing_required_fields_are_accepted() -> None:
    data = b"\x18\x05"  # legacy.Record without id and name
    assert not legacy_pb2.Record.FromString(data).IsInitialized()
    decoded = codec.decode(struct_of(legacy_pb2.Record), data)
    assert decoded.count == 5 and not decoded.HasField("id") and not decoded.HasField("name")
    assert check_against_upb(legacy_pb2.Record, data).startswith("both accept")


def test_numpy_is_only_a_container_choice() -> None:
    message = everything_pb2.AllTypes(p_double=[1.5, -0.0], p_sint64=[-(2**63)], p_bool=[True])
    decoded = codec.decode(
        struct_of(everything_pb2.AllTypes), message.SerializeToString(), numpy=True
    )
    assert isinstance(decoded.p_double, np.ndarray)
    assert encoded(decoded) == message.SerializeToString(deterministic=True)


# Float32 NaNs: exponent all ones, mantissa not zero. The signalling ones have the
# mantissa's top bit (the quiet bit) clear; two quiet ones are there for contrast.
SIGNALLING_NANS = [0x7F800001, 0x7FA00001, 0x7FBFFFFF, 0xFF800001, 0xFFA5A5A5]
FLOAT32_NANS = [*SIGNALLING_NANS, 0x7FC00000, 0xFFC00001]


def _floats(*bits: int) -> bytes:
    return pystruct.pack(f"<{len(bits)}I", *bits)


def _packed(number: int, payload: bytes) -> bytes:
    return _tag(number, 2) + _VarintBytes(len(payload)) + payload  # type: ignore[no-any-return]


def _float_map_entry(key: int, bits: int) -> bytes:
    """An entry of ``m_fixed32_float``; upb and codec write such entries in falling key order."""
    return _packed(97, b"\x0d" + pystruct.pack("<I", key) + b"\x15" + _floats(bits))


# (id, class, encoding)
_NAN_CASES = [
    ("singular", everything_pb2.AllTypes, _tag(11, 5) + _floats(0x7FA00001)),
    ("optional", everything_pb2.AllTypes, _tag(31, 5) + _floats(0xFF800001)),
    ("packed", everything_pb2.AllTypes, _packed(51, _floats(0x3FC00000, *FLOAT32_NANS))),
    (
        "unpacked",
        everything_pb2.AllTypes,
        b"".join(_tag(71, 5) + _floats(bits) for bits in FLOAT32_NANS),
    ),
    (
        "map-value",
        everything_pb2.AllTypes,
        b"".join(
            _float_map_entry(len(FLOAT32_NANS) - i, bits) for i, bits in enumerate(FLOAT32_NANS)
        ),
    ),
    ("proto2", legacy_pb2.Record, b"\x08\x01\x12\x00" + _tag(7, 5) + _floats(0x7FBFFFFF)),
    ("FloatValue", wrappers_pb2.FloatValue, _tag(1, 5) + _floats(0xFFA5A5A5)),
]


@pytest.mark.parametrize(
    ("cls", "data", "numpy"),
    [
        pytest.param(cls, data, numpy, id=f"{name}-numpy" if numpy else name)
        for name, cls, data in _NAN_CASES
        for numpy in (False, True)
    ],
)
def test_float32_signalling_nan_keeps_its_bits(cls: Any, data: bytes, numpy: bool) -> None:
    """decode -> encode gives back the 4 bytes of every float NaN, as upb's re-encoding does."""
    assert deterministic(cls.FromString(data)) == data  # upb keeps them
    for zero_copy in (False, True):
        decoder: codec.Decoder[Any] = codec.Decoder(
            struct_of(cls), zero_copy=zero_copy, numpy=numpy
        )
        for buffer in (data, bytearray(data), memoryview(data)):
            assert encoded(decoder.decode(buffer)) == data, (zero_copy, type(buffer))


@pytest.mark.parametrize(
    ("cls", "data"),
    [pytest.param(cls, data, id=name) for name, cls, data in _NAN_CASES],
)
def test_float32_signalling_nan_is_no_divergence(cls: Any, data: bytes) -> None:
    """The differential check (numpy decoding included) finds the same content."""
    assert check_against_upb(cls, data) == "both accept, same content"


def test_float32_signalling_nans_in_a_numpy_array_keep_their_bits() -> None:
    data = _packed(51, _floats(*FLOAT32_NANS))
    decoded: Any = codec.Decoder(struct_of(everything_pb2.AllTypes), numpy=True).decode(data)
    assert isinstance(decoded.p_float, np.ndarray)
    assert decoded.p_float.dtype == np.float32
    assert decoded.p_float.view(np.uint32).tolist() == FLOAT32_NANS


def test_float32_signalling_nans_in_a_numpy_array_encode_as_upb_does() -> None:
    data = _packed(51, _floats(*FLOAT32_NANS))
    decoded: Any = codec.Decoder(struct_of(everything_pb2.AllTypes), numpy=True).decode(data)
    assert encoded(decoded) == deterministic(everything_pb2.AllTypes.FromString(data))


@given(
    sign=st.integers(0, 1),
    payload=st.integers(1, 0x3FFFFF),  # the quiet bit clear: signalling
    name=st.sampled_from(["f_float", "p_float", "u_float"]),
)
def test_every_float32_signalling_nan_keeps_its_bits(sign: int, payload: int, name: str) -> None:
    bits = sign << 31 | 0x7F800000 | payload
    number = everything_pb2.AllTypes.DESCRIPTOR.fields_by_name[name].number
    data = _packed(number, _floats(bits)) if name == "p_float" else _tag(number, 5) + _floats(bits)
    decoded = codec.decode(struct_of(everything_pb2.AllTypes), data)
    value = getattr(decoded, name)
    assert all(map(math.isnan, [value] if name == "f_float" else value))
    assert encoded(decoded) == deterministic(everything_pb2.AllTypes.FromString(data)) == data


def test_divergence_4_unknown_map_entry_with_a_map_inside() -> None:
    # Tree.named = {?: Tree(named={"": Tree(), "10": Tree()})}, the outer entry holding
    # an unknown varint field 1 (its key field, on the wrong wire type).
    data = b"\x2a\x12\x08\x00\x12\x0e\x2a\x04\x0a\x00\x12\x00\x2a\x06\x0a\x0210\x12\x00"
    expected = everything_pb2.Tree.FromString(data)
    decoded = codec.decode(struct_of(everything_pb2.Tree), data)
    assert has_unknown_map_entry(decoded)
    # upb's hash order changes from one process to the next: the same order or not.
    verdict = compare_content(everything_pb2.Tree, expected, decoded)
    same = encoded(decoded) == deterministic(expected)
    assert verdict == "both accept, same content" if same else verdict.startswith("divergence 4")
    plain = codec.decode(struct_of(everything_pb2.Tree), b"\x2a\x04\x0a\x00\x12\x00")
    assert not has_unknown_map_entry(plain)
