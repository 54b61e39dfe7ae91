"""Tests of the varint, zigzag and fixed-width primitives in :mod:`codec.varint`.

What is checked, in both builds (compiled core and ``CODEC_PURE_PYTHON=1``):

* round trips over the full value ranges of every encoder/decoder pair;
* agreement with ``google.protobuf``'s own varint encoder and decoder on every
  valid input (minimal and padded encodings), and the one intended divergence
  (a 10th byte above 1 is rejected here, masked by protobuf);
* every varint row V1-V8 of the bad-input catalogue
  (``docs/bad-inputs.md``) with its error class and offset;
* the strict (multiformats unsigned-varint) profile;
* offsets, range and type checks, and that a failed write leaves the buffer untouched;
* every supported buffer type, and the rejected ones;
* that the compiled ``encode_into``/``decode`` do not allocate per call.
"""

from __future__ import annotations

import gc
import math
import os
import resource
import struct
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from google.protobuf.internal import decoder as pb_decoder
from google.protobuf.internal import encoder as pb_encoder
from google.protobuf.internal import wire_format as pb_wire_format
from hypothesis import assume, given
from hypothesis import strategies as st

import codec
from codec import varint
from codec.errors import EncodeError, TruncatedError, VarintError

U64_MAX = 2**64 - 1
U63_MAX = 2**63 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
FLT_MAX = struct.unpack("<f", bytes.fromhex("ffff7f7f"))[0]

u64 = st.integers(0, U64_MAX)
u63 = st.integers(0, U63_MAX)

# (strict flag, largest encodable value), one entry per profile
PROFILES = [
    pytest.param(False, U64_MAX, id="protobuf"),
    pytest.param(True, U63_MAX, id="strict"),
]

REPO_ROOT = Path(codec.__file__).resolve().parent.parent


def h(text: str) -> bytes:
    """Bytes from hex written with spaces, as in the catalogue."""
    return bytes.fromhex(text)


def long_varint(value: int, length: int) -> bytes:
    """``value`` as a varint of exactly ``length`` bytes (padded with 0x80 continuation)."""
    assert value < 2 ** (7 * length)
    out = bytearray()
    for i in range(length):
        chunk = (value >> (7 * i)) & 0x7F
        out.append(chunk | (0x80 if i < length - 1 else 0))
    return bytes(out)


# --- round trips -----------------------------------------------------------


@pytest.mark.parametrize(("strict", "high"), PROFILES)
@given(data=st.data())
def test_encode_into_decode_round_trip(strict: bool, high: int, data: st.DataObject) -> None:
    value = data.draw(st.integers(0, high), label="value")
    buf = bytearray(varint.MAX_LEN)
    end = varint.encode_into(value, buf, strict=strict)
    assert end == varint.size(value, strict=strict)
    assert bytes(buf[:end]) == varint.encode(value, strict=strict)
    assert varint.decode(bytes(buf[:end]), strict=strict) == (value, end)


@pytest.mark.parametrize(("strict", "high"), PROFILES)
@given(data=st.data())
def test_size_is_length_of_encoding(strict: bool, high: int, data: st.DataObject) -> None:
    value = data.draw(st.integers(0, high), label="value")
    assert varint.size(value, strict=strict) == len(varint.encode(value, strict=strict))


def _size_boundaries() -> list[object]:
    cases: list[object] = [pytest.param(0, 1, id="0")]
    for k in range(1, 10):
        cases.append(pytest.param(2 ** (7 * k) - 1, k, id=f"2^{7 * k}-1"))
        cases.append(pytest.param(2 ** (7 * k), k + 1, id=f"2^{7 * k}"))
    cases.append(pytest.param(U64_MAX, 10, id="2^64-1"))
    return cases


@pytest.mark.parametrize(("value", "length"), _size_boundaries())
def test_size_at_seven_bit_boundaries(value: int, length: int) -> None:
    assert varint.size(value) == length
    assert len(varint.encode(value)) == length
    assert varint.decode(varint.encode(value)) == (value, length)


def test_profile_length_constants() -> None:
    assert (varint.MAX_LEN, varint.STRICT_MAX_LEN) == (10, 9)


@given(st.integers(INT64_MIN, INT64_MAX))
def test_zigzag64_round_trip_and_protobuf_agreement(value: int) -> None:
    encoded = varint.zigzag_encode(value)
    assert 0 <= encoded <= U64_MAX
    assert encoded == pb_wire_format.ZigZagEncode(value)
    assert varint.zigzag_decode(encoded) == value


@given(u64)
def test_zigzag64_decode_then_encode(value: int) -> None:
    decoded = varint.zigzag_decode(value)
    assert decoded == pb_wire_format.ZigZagDecode(value)
    assert varint.zigzag_encode(decoded) == value


@given(st.integers(INT32_MIN, INT32_MAX))
def test_zigzag32_round_trip(value: int) -> None:
    encoded = varint.zigzag_encode32(value)
    assert 0 <= encoded < 2**32
    assert encoded == pb_wire_format.ZigZagEncode(value)
    assert varint.zigzag_decode32(encoded) == value


@pytest.mark.parametrize(
    ("encode", "decode", "signed", "unsigned"),
    [
        pytest.param(varint.zigzag_encode, varint.zigzag_decode, 0, 0, id="64-zero"),
        pytest.param(varint.zigzag_encode, varint.zigzag_decode, -1, 1, id="64-minus1"),
        pytest.param(varint.zigzag_encode, varint.zigzag_decode, 1, 2, id="64-plus1"),
        pytest.param(varint.zigzag_encode, varint.zigzag_decode, -2, 3, id="64-minus2"),
        pytest.param(
            varint.zigzag_encode, varint.zigzag_decode, INT64_MAX, U64_MAX - 1, id="64-max"
        ),
        pytest.param(varint.zigzag_encode, varint.zigzag_decode, INT64_MIN, U64_MAX, id="64-min"),
        pytest.param(varint.zigzag_encode32, varint.zigzag_decode32, -1, 1, id="32-minus1"),
        pytest.param(
            varint.zigzag_encode32, varint.zigzag_decode32, INT32_MAX, 2**32 - 2, id="32-max"
        ),
        pytest.param(
            varint.zigzag_encode32, varint.zigzag_decode32, INT32_MIN, 2**32 - 1, id="32-min"
        ),
    ],
)
def test_zigzag_known_values(
    encode: Callable[[int], int], decode: Callable[[int], int], signed: int, unsigned: int
) -> None:
    assert encode(signed) == unsigned
    assert decode(unsigned) == signed


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(2**32 + 2, 1, id="bit32-ignored"),
        pytest.param(U64_MAX, INT32_MIN, id="u64max-low32-is-u32max"),
        pytest.param(2**40 + 3, -2, id="high-bits-ignored"),
    ],
)
def test_zigzag_decode32_uses_low_32_bits(value: int, expected: int) -> None:
    assert varint.zigzag_decode32(value) == expected


@pytest.mark.parametrize(
    ("function", "value"),
    [
        pytest.param(varint.zigzag_encode, INT64_MAX + 1, id="encode64-above"),
        pytest.param(varint.zigzag_encode, INT64_MIN - 1, id="encode64-below"),
        pytest.param(varint.zigzag_encode32, INT32_MAX + 1, id="encode32-above"),
        pytest.param(varint.zigzag_encode32, INT32_MIN - 1, id="encode32-below"),
        pytest.param(varint.zigzag_decode, -1, id="decode64-negative"),
        pytest.param(varint.zigzag_decode, 2**64, id="decode64-above"),
        pytest.param(varint.zigzag_decode32, -1, id="decode32-negative"),
        pytest.param(varint.zigzag_decode32, 2**64, id="decode32-above"),
    ],
)
def test_zigzag_out_of_range(function: Callable[[int], int], value: int) -> None:
    with pytest.raises(EncodeError):
        function(value)


# --- fixed-width values ----------------------------------------------------

FIXED_INTS = [
    pytest.param(varint.encode_fixed32_into, varint.decode_fixed32, "<I", 0, 2**32, id="fixed32"),
    pytest.param(
        varint.encode_sfixed32_into, varint.decode_sfixed32, "<i", INT32_MIN, 2**31, id="sfixed32"
    ),
    pytest.param(varint.encode_fixed64_into, varint.decode_fixed64, "<Q", 0, 2**64, id="fixed64"),
    pytest.param(
        varint.encode_sfixed64_into, varint.decode_sfixed64, "<q", INT64_MIN, 2**63, id="sfixed64"
    ),
]

EncodeFn = Callable[..., int]
DecodeFn = Callable[..., tuple[object, int]]


@pytest.mark.parametrize(("encode", "decode", "fmt", "low", "high"), FIXED_INTS)
@given(data=st.data())
def test_fixed_int_round_trip(
    encode: EncodeFn, decode: DecodeFn, fmt: str, low: int, high: int, data: st.DataObject
) -> None:
    value = data.draw(st.integers(low, high - 1), label="value")
    offset = data.draw(st.integers(0, 3), label="offset")
    width = struct.calcsize(fmt)
    buf = bytearray(b"\xaa" * (offset + width + 2))
    end = encode(value, buf, offset)
    assert end == offset + width
    assert bytes(buf[offset:end]) == struct.pack(fmt, value)
    assert buf[:offset] == b"\xaa" * offset and buf[end:] == b"\xaa\xaa"
    assert decode(bytes(buf), offset) == (value, end)


@pytest.mark.parametrize(("encode", "decode", "fmt", "low", "high"), FIXED_INTS)
@pytest.mark.parametrize("side", ["below", "above"])
def test_fixed_int_out_of_range(
    encode: EncodeFn, decode: DecodeFn, fmt: str, low: int, high: int, side: str
) -> None:
    buf = bytearray(8)
    with pytest.raises(EncodeError):
        encode(low - 1 if side == "below" else high, buf)
    assert buf == bytearray(8)


@pytest.mark.parametrize(
    ("decode", "data", "expected"),
    [
        pytest.param(varint.decode_sfixed32, h("ff ff ff ff"), -1, id="sfixed32-minus1"),
        pytest.param(varint.decode_sfixed32, h("00 00 00 80"), INT32_MIN, id="sfixed32-min"),
        pytest.param(varint.decode_fixed32, h("ff ff ff ff"), 2**32 - 1, id="fixed32-max"),
        pytest.param(varint.decode_sfixed64, h("ff") * 8, -1, id="sfixed64-minus1"),
        pytest.param(varint.decode_sfixed64, h("00") * 7 + h("80"), INT64_MIN, id="sfixed64-min"),
        pytest.param(
            varint.decode_fixed64, h("01 02 03 04 05 06 07 08"), 0x0807060504030201, id="fixed64-le"
        ),
    ],
)
def test_fixed_known_values(decode: DecodeFn, data: bytes, expected: int) -> None:
    assert decode(data) == (expected, len(data))


def _float32(value: float) -> float:
    """``value`` rounded to binary32 by numpy (a C cast): overflow gives +-inf."""
    with np.errstate(over="ignore"):
        return float(np.float32(value))


def _same_float(actual: float, expected: float) -> bool:
    if math.isnan(expected):
        return math.isnan(actual)
    return actual == expected and math.copysign(1.0, actual) == math.copysign(1.0, expected)


@given(st.floats(width=32), st.integers(0, 3))
def test_float_round_trip_of_binary32_values(value: float, offset: int) -> None:
    buf = bytearray(offset + 4)
    assert varint.encode_float_into(value, buf, offset) == offset + 4
    if not math.isnan(value):
        assert bytes(buf[offset:]) == struct.pack("<f", value)
    decoded, end = varint.decode_float(bytes(buf), offset)
    assert end == offset + 4
    assert _same_float(decoded, value)


# Every binary32 NaN: exponent all ones, a mantissa that is not zero, either sign.
_FLOAT32_NANS = st.builds(
    lambda sign, mantissa: sign << 31 | 0x7F800000 | mantissa,
    st.integers(0, 1),
    st.integers(1, 0x7FFFFF),
)


@given(_FLOAT32_NANS)
def test_a_binary32_nan_comes_back_bit_for_bit(bits: int) -> None:
    """Signaling NaNs too: C's conversions to and from double would set the quiet bit."""
    decoded, _ = varint.decode_float(struct.pack("<I", bits))
    assert math.isnan(decoded)
    buf = bytearray(4)
    varint.encode_float_into(decoded, buf)
    assert struct.unpack("<I", buf)[0] == bits


@given(st.floats())
def test_float_rounds_doubles_like_a_c_cast(value: float) -> None:
    buf = bytearray(4)
    varint.encode_float_into(value, buf)
    assert _same_float(varint.decode_float(buf)[0], _float32(value))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(1e39, math.inf, id="1e39"),
        pytest.param(-1e39, -math.inf, id="minus-1e39"),
        pytest.param(sys.float_info.max, math.inf, id="double-max"),
        pytest.param(-sys.float_info.max, -math.inf, id="minus-double-max"),
        pytest.param(float(2**128 - 2**103), math.inf, id="halfway-to-2^128-rounds-up"),
        pytest.param(float(2**128 - 2**103 - 2**75), FLT_MAX, id="below-halfway-is-FLT_MAX"),
        pytest.param(-FLT_MAX, -FLT_MAX, id="minus-FLT_MAX"),
        pytest.param(math.inf, math.inf, id="inf"),
        pytest.param(1e-50, 0.0, id="underflow-to-zero"),
        pytest.param(-1e-50, -0.0, id="underflow-to-minus-zero"),
    ],
)
def test_float_overflow_and_underflow(value: float, expected: float) -> None:
    buf = bytearray(4)
    varint.encode_float_into(value, buf)
    assert _same_float(varint.decode_float(buf)[0], expected)


@given(st.floats(), st.integers(0, 3))
def test_double_round_trip(value: float, offset: int) -> None:
    buf = bytearray(offset + 8)
    assert varint.encode_double_into(value, buf, offset) == offset + 8
    if not math.isnan(value):
        assert bytes(buf[offset:]) == struct.pack("<d", value)
    decoded, end = varint.decode_double(bytes(buf), offset)
    assert end == offset + 8
    assert _same_float(decoded, value)


@pytest.mark.parametrize(
    "encode",
    [
        pytest.param(varint.encode_float_into, id="float"),
        pytest.param(varint.encode_double_into, id="double"),
    ],
)
@pytest.mark.parametrize(
    "value",
    [
        pytest.param("x", id="str"),
        pytest.param(None, id="None"),
        pytest.param(b"\x00", id="bytes"),
        pytest.param("1.5", id="numeric-str"),
    ],
)
def test_float_encoders_reject_non_numbers(encode: EncodeFn, value: object) -> None:
    buf = bytearray(8)
    with pytest.raises(EncodeError):
        encode(value, buf)
    assert buf == bytearray(8)


FIXED_DECODERS = [
    pytest.param(varint.decode_fixed32, 4, id="fixed32"),
    pytest.param(varint.decode_sfixed32, 4, id="sfixed32"),
    pytest.param(varint.decode_float, 4, id="float"),
    pytest.param(varint.decode_fixed64, 8, id="fixed64"),
    pytest.param(varint.decode_sfixed64, 8, id="sfixed64"),
    pytest.param(varint.decode_double, 8, id="double"),
]


@pytest.mark.parametrize(("decode", "width"), FIXED_DECODERS)
@pytest.mark.parametrize("offset", [0, 2])
@pytest.mark.parametrize("available", [0, 1, 3])
def test_fixed_decoders_truncated(
    decode: DecodeFn, width: int, offset: int, available: int
) -> None:
    data = b"\x11" * (offset + available)
    with pytest.raises(TruncatedError) as info:
        decode(data, offset)
    assert info.value.offset == offset
    assert info.value.missing == width - available


# --- agreement with google.protobuf ----------------------------------------


@given(u64)
def test_encode_matches_protobuf(value: int) -> None:
    assert varint.encode(value) == pb_encoder._VarintBytes(value)


@given(u64, st.binary(max_size=3))
def test_decode_matches_protobuf(value: int, tail: bytes) -> None:
    data = pb_encoder._VarintBytes(value) + tail
    assert varint.decode(data) == pb_decoder._DecodeVarint(data, 0)


@st.composite
def padded_varints(draw: st.DrawFn) -> tuple[int, int, bytes]:
    """A value below 2**64 and a non-minimal encoding of it, at most 10 bytes long."""
    value = draw(st.integers(0, 2**63 - 1) | st.integers(0, 2**20), label="value")
    minimal = len(pb_encoder._VarintBytes(value))
    length = draw(st.integers(minimal + 1, varint.MAX_LEN), label="length")
    return value, length, long_varint(value, length)


@given(padded_varints())
def test_padded_varints_accepted_like_protobuf_and_rejected_by_strict(
    case: tuple[int, int, bytes],
) -> None:
    value, length, data = case
    assert pb_decoder._DecodeVarint(data, 0) == (value, length)
    assert varint.decode(data) == (value, length)
    with pytest.raises(VarintError) as info:
        varint.decode(data, strict=True)
    assert info.value.offset == 0


@pytest.mark.parametrize(
    ("data", "masked"),
    [
        pytest.param(h("ff ff ff ff ff ff ff ff ff 7f"), U64_MAX, id="2^70-1"),
        pytest.param(h("80 80 80 80 80 80 80 80 80 02"), 0, id="2^64"),
        pytest.param(h("8f ce 80 80 80 80 80 80 80 02"), 9999, id="9999-plus-2^64"),
    ],
)
def test_intended_divergence_tenth_byte_above_one(data: bytes, masked: int) -> None:
    """protobuf masks a 10th byte above 1 to 64 bits; codec rejects it (as Go protowire does)."""
    assert pb_decoder._DecodeVarint(data, 0) == (masked, 10)
    with pytest.raises(VarintError) as info:
        varint.decode(data)
    assert info.value.offset == 0


# --- bad-input catalogue, section 1.1 ---------------------------------------

# (id, bytes, strict, expected outcome: an exception class or (value, end))
CATALOGUE = [
    pytest.param(h("80"), False, TruncatedError, id="V1-80"),
    pytest.param(h("ff") * 9, False, TruncatedError, id="V1-ff*9"),
    pytest.param(h("80"), True, TruncatedError, id="V1-80-strict"),
    pytest.param(h("80") * 10 + h("00"), False, VarintError, id="V2-11-bytes"),
    pytest.param(h("80") * 10, False, VarintError, id="V2-10th-continues-no-11th-byte"),
    pytest.param(h("ff") * 10 + h("01"), False, VarintError, id="V2-ff*10-01"),
    pytest.param(h("ff ff ff ff ff ff ff ff ff 7f"), False, VarintError, id="V3-2^70-1"),
    pytest.param(h("80 80 80 80 80 80 80 80 80 02"), False, VarintError, id="V3-2^64"),
    pytest.param(h("ff ff ff ff ff ff ff ff ff 01"), False, (U64_MAX, 10), id="V3-2^64-1-ok"),
    pytest.param(h("81 00"), False, (1, 2), id="V4-81-00"),
    pytest.param(h("80") * 9 + h("00"), False, (0, 10), id="V4-zero-in-10"),
    pytest.param(h("81 00"), True, VarintError, id="V4-81-00-strict"),
    pytest.param(h("80") * 8 + h("00"), True, VarintError, id="V4-zero-in-9-strict"),
    pytest.param(h("80 80 80 80 20"), False, (1 << 33, 5), id="V5-2^33"),
    pytest.param(h("ff") * 9 + h("01"), False, (U64_MAX, 10), id="V6-int32-minus1"),
    pytest.param(h("80 80 80 80 10"), False, (1 << 32, 5), id="V7-5th-byte-10"),
    pytest.param(h("ff ff ff ff 7f"), False, (2**35 - 1, 5), id="V7-5th-byte-7f"),
    pytest.param(h("80") * 8 + h("01"), False, (1 << 56, 9), id="V7-9th-byte-01"),
    pytest.param(h("80") * 9 + h("01"), False, (1 << 63, 10), id="V7-shift-63"),
    pytest.param(h("80 80 80"), False, TruncatedError, id="V8-80-80-80"),
    pytest.param(h("80 80 80 01"), False, (1 << 21, 4), id="V8-completed-2MiB"),
]


@pytest.mark.parametrize(("data", "strict", "expected"), CATALOGUE)
def test_catalogue_v1_to_v8(data: bytes, strict: bool, expected: object) -> None:
    if isinstance(expected, tuple):
        assert varint.decode(data, strict=strict) == expected
        if not strict:
            assert pb_decoder._DecodeVarint(data, 0) == expected
        return
    assert isinstance(expected, type)
    with pytest.raises(expected) as info:
        varint.decode(data, strict=strict)
    assert info.value.offset == 0


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(U64_MAX, id="int32-minus1-two's-complement"),
        pytest.param((-(2**31)) & U64_MAX, id="int32-min-two's-complement"),
    ],
)
def test_v6_negative_int32_takes_ten_bytes(value: int) -> None:
    data = varint.encode(value)
    assert len(data) == 10
    assert data == pb_encoder._VarintBytes(value)
    assert varint.decode(data) == (value, 10)


@pytest.mark.parametrize(
    ("value", "strict"),
    [
        pytest.param(value, strict, id=f"{value}-{'strict' if strict else 'protobuf'}")
        for value in (300, 1 << 21, U63_MAX, U64_MAX)
        for strict in (False, True)
        if value <= U63_MAX or not strict
    ],
)
def test_v8_every_split_point(value: int, strict: bool) -> None:
    """A prefix of a varint never decodes to a partial value; the whole one decodes."""
    data = varint.encode(value, strict=strict)
    for cut in range(len(data)):
        with pytest.raises(TruncatedError) as info:
            varint.decode(data[:cut], strict=strict)
        assert info.value.offset == 0
    assert varint.decode(data, strict=strict) == (value, len(data))


# --- strict profile --------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(h("00"), (0, 1), id="zero"),
        pytest.param(h("ff") * 8 + h("7f"), (U63_MAX, 9), id="2^63-1"),
        pytest.param(h("80") * 8 + h("01"), (1 << 56, 9), id="2^56"),
        pytest.param(h("ff") * 9, VarintError, id="9th-byte-continues"),
        pytest.param(h("ff") * 9 + h("01"), VarintError, id="2^64-1-ten-bytes"),
        pytest.param(h("80") * 9 + h("01"), VarintError, id="2^63-ten-bytes"),
        pytest.param(h("80 00"), VarintError, id="zero-padded"),
        pytest.param(h("ff 00"), VarintError, id="127-padded"),
        pytest.param(h("ac 82 00"), VarintError, id="300-padded"),
        pytest.param(h("ff") * 8, TruncatedError, id="8-bytes-incomplete"),
    ],
)
def test_strict_profile(data: bytes, expected: object) -> None:
    if isinstance(expected, tuple):
        assert varint.decode(data, strict=True) == expected
        return
    assert isinstance(expected, type)
    with pytest.raises(expected) as info:
        varint.decode(data, strict=True)
    assert info.value.offset == 0


def test_strict_encode_limit() -> None:
    assert varint.encode(U63_MAX, strict=True) == h("ff") * 8 + h("7f")
    with pytest.raises(EncodeError):
        varint.encode(U63_MAX + 1, strict=True)


# --- offsets ---------------------------------------------------------------


@given(u64, st.binary(max_size=8), st.binary(max_size=4))
def test_decode_at_offset(value: int, head: bytes, tail: bytes) -> None:
    encoded = varint.encode(value)
    data = head + encoded + tail
    assert varint.decode(data, len(head)) == (value, len(head) + len(encoded))


@given(u64, st.integers(0, 6))
def test_encode_into_at_offset(value: int, offset: int) -> None:
    buf = bytearray(b"\xaa" * (offset + varint.MAX_LEN + 1))
    end = varint.encode_into(value, buf, offset)
    assert end == offset + varint.size(value)
    assert bytes(buf[offset:end]) == varint.encode(value)
    assert buf[:offset] == b"\xaa" * offset
    assert set(buf[end:]) == {0xAA}


BAD_VARINTS = [
    pytest.param(h("80"), False, TruncatedError, id="truncated"),
    pytest.param(h("ff") * 9, False, TruncatedError, id="truncated-9"),
    pytest.param(h("80") * 10 + h("00"), False, VarintError, id="too-long"),
    pytest.param(h("80") * 9 + h("02"), False, VarintError, id="overflow"),
    pytest.param(h("81 00"), True, VarintError, id="strict-not-minimal"),
    pytest.param(h("ff") * 9, True, VarintError, id="strict-too-long"),
]


@pytest.mark.parametrize(("data", "strict", "error"), BAD_VARINTS)
def test_error_offset_is_varint_start(data: bytes, strict: bool, error: type[Exception]) -> None:
    head = h("05 96 01")  # two complete varints before the bad one
    with pytest.raises(error) as info:
        varint.decode(head + data, len(head), strict=strict)
    assert info.value.offset == len(head)


def _call_with_offset(name: str, offset: int) -> object:
    """Call the primitive ``name`` on a roomy buffer at ``offset``."""
    function = getattr(varint, name)
    if name.startswith("decode"):
        return function(bytes(16), offset)
    value = 1.0 if name in ("encode_float_into", "encode_double_into") else 1
    return function(value, bytearray(16), offset)


ALL_BUFFER_FUNCTIONS = [
    "decode",
    "decode_fixed32",
    "decode_sfixed32",
    "decode_float",
    "decode_fixed64",
    "decode_sfixed64",
    "decode_double",
    "encode_into",
    "encode_fixed32_into",
    "encode_sfixed32_into",
    "encode_float_into",
    "encode_fixed64_into",
    "encode_sfixed64_into",
    "encode_double_into",
]


@pytest.mark.parametrize("name", ALL_BUFFER_FUNCTIONS)
@pytest.mark.parametrize("offset", [-1, -(2**40)])
def test_negative_offset_is_value_error(name: str, offset: int) -> None:
    with pytest.raises(ValueError, match="negative"):
        _call_with_offset(name, offset)


@pytest.mark.parametrize("name", ALL_BUFFER_FUNCTIONS)
@pytest.mark.parametrize(
    "offset",
    [
        pytest.param(17, id="just-past-end"),
        pytest.param(2**40, id="2^40"),
        pytest.param(2**63, id="2^63"),
    ],
)
def test_offset_past_end(name: str, offset: int) -> None:
    error = TruncatedError if name.startswith("decode") else EncodeError
    with pytest.raises(error):
        _call_with_offset(name, offset)


def _no_core_dump() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


@pytest.mark.parametrize(
    "name",
    ["encode_into", "encode_fixed64_into", "decode_fixed32", "decode_fixed64"],
)
@pytest.mark.parametrize("back", [0, 3])
def test_offset_near_ssize_max_does_not_wrap(name: str, back: int, tmp_path: Path) -> None:
    """Run in a child process: a bounds check that wrapped around would crash it."""
    offset = sys.maxsize - back
    error = "TruncatedError" if name.startswith("decode") else "EncodeError"
    code = (
        "import codec.varint as v\n"
        f"f = v.{name}\n"
        f"args = (bytes(16), {offset}) if {name.startswith('decode')} "
        f"else ({U64_MAX}, bytearray(16), {offset})\n"
        "try:\n"
        "    f(*args)\n"
        "except Exception as e:\n"
        "    print(type(e).__name__)\n"
        "else:\n"
        "    print('no error')\n"
    )
    path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=tmp_path,  # a crash must not leave a core file in the checkout
        preexec_fn=_no_core_dump,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stdout.strip()) == (0, error), result.stderr


@given(u64, st.integers(0, 12), st.integers(0, 12))
def test_encode_into_without_room_leaves_buffer_unchanged(
    value: int, length: int, offset: int
) -> None:
    assume(offset + varint.size(value) > length)
    buf = bytearray(range(0x40, 0x40 + length))
    before = bytes(buf)
    with pytest.raises(EncodeError):
        varint.encode_into(value, buf, offset)
    assert buf == before


FIXED_ENCODERS = [
    pytest.param(varint.encode_fixed32_into, 4, 0xDEADBEEF, id="fixed32"),
    pytest.param(varint.encode_sfixed32_into, 4, -5, id="sfixed32"),
    pytest.param(varint.encode_float_into, 4, 1.5, id="float"),
    pytest.param(varint.encode_fixed64_into, 8, U64_MAX, id="fixed64"),
    pytest.param(varint.encode_sfixed64_into, 8, -5, id="sfixed64"),
    pytest.param(varint.encode_double_into, 8, 1.5, id="double"),
]


@pytest.mark.parametrize(("encode", "width", "value"), FIXED_ENCODERS)
@pytest.mark.parametrize("offset", [0, 2])
def test_fixed_encoders_without_room_leave_buffer_unchanged(
    encode: EncodeFn, width: int, value: object, offset: int
) -> None:
    buf = bytearray(range(0x40, 0x40 + offset + width - 1))
    before = bytes(buf)
    with pytest.raises(EncodeError):
        encode(value, buf, offset)
    assert buf == before


VARINT_ENCODERS: list[object] = [
    pytest.param(lambda value, strict: varint.size(value, strict=strict), id="size"),
    pytest.param(lambda value, strict: varint.encode(value, strict=strict), id="encode"),
    pytest.param(
        lambda value, strict: varint.encode_into(value, bytearray(10), strict=strict),
        id="encode_into",
    ),
]


@pytest.mark.parametrize("call", VARINT_ENCODERS)
@pytest.mark.parametrize(
    ("value", "strict"),
    [
        pytest.param(-1, False, id="minus1"),
        pytest.param(-(2**70), False, id="minus-2^70"),
        pytest.param(2**64, False, id="2^64"),
        pytest.param(2**100, False, id="2^100"),
        pytest.param(-1, True, id="minus1-strict"),
        pytest.param(2**63, True, id="2^63-strict"),
    ],
)
def test_varint_value_out_of_range(
    call: Callable[[object, bool], object], value: int, strict: bool
) -> None:
    with pytest.raises(EncodeError):
        call(value, strict)


INT_ENCODERS: list[object] = [
    *VARINT_ENCODERS,
    pytest.param(lambda value, strict: varint.zigzag_encode(value), id="zigzag_encode"),
    pytest.param(lambda value, strict: varint.zigzag_decode(value), id="zigzag_decode"),
    pytest.param(lambda value, strict: varint.zigzag_encode32(value), id="zigzag_encode32"),
    pytest.param(lambda value, strict: varint.zigzag_decode32(value), id="zigzag_decode32"),
    *(
        pytest.param(
            lambda value, strict, name=name: getattr(varint, name)(value, bytearray(8)), id=name
        )
        for name in (
            "encode_fixed32_into",
            "encode_sfixed32_into",
            "encode_fixed64_into",
            "encode_sfixed64_into",
        )
    ),
]


@pytest.mark.parametrize("call", INT_ENCODERS)
@pytest.mark.parametrize(
    "value",
    [
        pytest.param(1.5, id="float"),
        pytest.param(2.0, id="integral-float"),
        pytest.param("1", id="str"),
        pytest.param(None, id="None"),
        pytest.param(np.float64(3.0), id="numpy-float"),
    ],
)
def test_integer_encoders_reject_non_integers(
    call: Callable[[object, bool], object], value: object
) -> None:
    with pytest.raises(EncodeError):
        call(value, False)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(np.uint8(200), id="uint8"),
        pytest.param(np.int32(300), id="int32"),
        pytest.param(np.int64(2**40), id="int64"),
        pytest.param(np.uint64(U64_MAX), id="uint64-max"),
        pytest.param(True, id="bool"),
    ],
)
def test_integer_like_values_are_accepted(value: object) -> None:
    number = int(value)
    expected = pb_encoder._VarintBytes(number)
    buf = bytearray(12)
    assert varint.encode_into(value, buf, 1) == 1 + len(expected)
    assert bytes(buf[1 : 1 + len(expected)]) == expected
    assert varint.encode(value) == expected
    assert varint.size(value) == len(expected)
    assert varint.zigzag_decode(value) == pb_wire_format.ZigZagDecode(number)


def test_numpy_negative_scalar_is_out_of_range() -> None:
    with pytest.raises(EncodeError):
        varint.encode_into(np.int64(-1), bytearray(10))


# --- buffer types ----------------------------------------------------------

SAMPLE = h("05") + varint.encode(U64_MAX) + h("ac 02") + h("01 02 03 04 05 06 07 08")
SAMPLE_FIXED_AT = 1 + 10 + 2


def _slice_view(data: bytes) -> memoryview:
    return memoryview(b"\xff\xfe" + data + b"\xfd")[2:-1]


READABLE: list[object] = [
    pytest.param(bytes, id="bytes"),
    pytest.param(bytearray, id="bytearray"),
    pytest.param(memoryview, id="memoryview"),
    pytest.param(lambda d: np.frombuffer(d, dtype=np.uint8), id="numpy-uint8"),
    pytest.param(_slice_view, id="memoryview-slice"),
    pytest.param(lambda d: memoryview(bytearray(d)).toreadonly(), id="readonly-memoryview"),
]


@pytest.mark.parametrize("make", READABLE)
def test_decoders_accept_buffer(make: Callable[[bytes], object]) -> None:
    buffer = make(SAMPLE)
    assert varint.decode(buffer) == (5, 1)
    assert varint.decode(buffer, 1) == (U64_MAX, 11)
    assert varint.decode(buffer, 11) == (300, SAMPLE_FIXED_AT)
    assert varint.decode_fixed64(buffer, SAMPLE_FIXED_AT) == (0x0807060504030201, len(SAMPLE))
    assert varint.decode_fixed32(buffer, SAMPLE_FIXED_AT + 4) == (0x08070605, len(SAMPLE))
    with pytest.raises(TruncatedError):
        varint.decode_fixed32(buffer, len(SAMPLE) - 3)


def _numpy_target(size: int) -> tuple[object, Callable[[], bytes]]:
    array = np.full(size, 0xAA, dtype=np.uint8)
    return array, array.tobytes


def _bytearray_target(size: int) -> tuple[object, Callable[[], bytes]]:
    buf = bytearray(b"\xaa" * size)
    return buf, lambda: bytes(buf)


def _memoryview_target(size: int) -> tuple[object, Callable[[], bytes]]:
    buf = bytearray(b"\xaa" * size)
    return memoryview(buf), lambda: bytes(buf)


def _memoryview_slice_target(size: int) -> tuple[object, Callable[[], bytes]]:
    parent = bytearray(b"\x55" * 3 + b"\xaa" * size + b"\x55" * 2)
    return memoryview(parent)[3 : 3 + size], lambda: bytes(parent)[3 : 3 + size]


WRITABLE: list[object] = [
    pytest.param(_bytearray_target, id="bytearray"),
    pytest.param(_memoryview_target, id="memoryview"),
    pytest.param(_numpy_target, id="numpy-uint8"),
    pytest.param(_memoryview_slice_target, id="memoryview-slice"),
]


@pytest.mark.parametrize("make", WRITABLE)
def test_encoders_write_into_buffer(
    make: Callable[[int], tuple[object, Callable[[], bytes]]],
) -> None:
    target, contents = make(24)
    end = varint.encode_into(U64_MAX, target, 1)
    end = varint.encode_into(300, target, end)
    end = varint.encode_fixed64_into(0x0807060504030201, target, end)
    assert end == 21
    assert contents() == b"\xaa" + SAMPLE[1:] + b"\xaa" * 3
    if make is _memoryview_slice_target:
        assert bytes(target.obj)[:3] + bytes(target.obj)[-2:] == b"\x55" * 5


READ_ONLY: list[object] = [
    pytest.param(lambda: bytes(16), id="bytes"),
    pytest.param(lambda: memoryview(bytes(16)), id="memoryview-of-bytes"),
    pytest.param(lambda: memoryview(bytearray(16)).toreadonly(), id="readonly-memoryview"),
    pytest.param(
        lambda: np.frombuffer(bytes(16), dtype=np.uint8),
        id="readonly-numpy",
    ),
]


@pytest.mark.parametrize("make", READ_ONLY)
@pytest.mark.parametrize(
    "name",
    ["encode_into", "encode_fixed32_into", "encode_double_into"],
)
def test_read_only_target_is_buffer_error(make: Callable[[], object], name: str) -> None:
    target = make()
    before = bytes(target)
    value = 1.0 if name == "encode_double_into" else 1
    with pytest.raises(BufferError):
        getattr(varint, name)(value, target)
    assert bytes(target) == before


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda: varint.decode(memoryview(b"abcd")[::2]), id="decode"),
        pytest.param(
            lambda: varint.decode_fixed32(memoryview(b"abcdefgh")[::2]), id="decode_fixed32"
        ),
        pytest.param(
            lambda: varint.encode_into(1, memoryview(bytearray(4))[::2]), id="encode_into"
        ),
        pytest.param(
            lambda: varint.encode_fixed32_into(1, memoryview(bytearray(8))[::2]),
            id="encode_fixed32_into",
        ),
        pytest.param(
            lambda: varint.decode(np.zeros((4, 4), dtype=np.uint8)[:, 0]),
            id="numpy-column",
        ),
    ],
)
def test_non_contiguous_buffer_is_buffer_error(call: Callable[[], object]) -> None:
    with pytest.raises(BufferError):
        call()


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda: varint.decode("\x01"), id="decode-str"),
        pytest.param(lambda: varint.decode_fixed32("abcd"), id="decode_fixed32-str"),
        pytest.param(lambda: varint.decode(12), id="decode-int"),
        pytest.param(lambda: varint.encode_into(1, "abcd"), id="encode_into-str"),
        pytest.param(lambda: varint.encode_fixed32_into(1, "abcd"), id="encode_fixed32_into-str"),
    ],
)
def test_non_buffer_is_type_error(call: Callable[[], object]) -> None:
    with pytest.raises(TypeError):
        call()


# --- allocations (compiled build) -----------------------------------------

CALLS = 10_000


def _noop(first: object, second: object) -> None:
    """Stands in for the function under test, to measure the harness itself."""


def _traced_growth(
    function: Callable[[object, object], object], calls: Sequence[tuple[object, object]]
) -> tuple[int, int]:
    """Net and peak growth of traced memory over one pass of ``function(*args)`` for ``calls``."""

    def run() -> None:
        for first, second in calls:
            function(first, second)

    run()  # warm-up, outside tracing
    gc.collect()
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        run()  # warm-up under tracing
        gc.collect()
        tracemalloc.reset_peak()
        start, _ = tracemalloc.get_traced_memory()
        run()
        end, peak = tracemalloc.get_traced_memory()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return end - start, peak - start


def test_allocation_harness_sees_allocations() -> None:
    """The harness is not blind: kept and transient allocations both show up."""
    kept: list[object] = []
    net, _ = _traced_growth(lambda a, b: kept.append(a + b), [(U64_MAX, i) for i in range(1000)])
    assert net > 1000 * 24
    net_transient, peak = _traced_growth(lambda a, b: bytes(a), [(4096, None)] * 10)
    base_net, base_peak = _traced_growth(_noop, [(4096, None)] * 10)
    assert net_transient - base_net < 4096
    assert peak - base_peak >= 4096


# The harness itself holds the ints returned by get_traced_memory() while it
# measures, a constant of a few dozen bytes. Each test measures that constant
# with _noop over the same calls and asserts the function under test adds
# nothing to it.


@pytest.mark.skipif(not codec.COMPILED, reason="the no-allocation claim is for the compiled core")
def test_encode_into_allocates_nothing() -> None:
    buf = bytearray(16)
    calls = [(1 if i % 2 else U64_MAX, buf) for i in range(CALLS)]
    assert {varint.size(value) for value, _ in calls} == {1, 10}
    harness_net, harness_peak = _traced_growth(_noop, calls)
    net, peak = _traced_growth(varint.encode_into, calls)
    assert net - harness_net == 0
    assert peak - harness_peak == 0


@pytest.mark.skipif(not codec.COMPILED, reason="the no-allocation claim is for the compiled core")
def test_decode_allocates_only_its_result() -> None:
    data = h("01") + varint.encode(U64_MAX)
    calls = [(data, i % 2) for i in range(CALLS)]
    assert {varint.decode(data, offset)[1] - offset for _, offset in calls} == {1, 10}
    harness_net, harness_peak = _traced_growth(_noop, calls)
    net, peak = _traced_growth(varint.decode, calls)
    assert net - harness_net == 0
    assert peak - harness_peak < 1024
