"""Tests of the exception hierarchy in :mod:`codec.errors`.

Checks which classes derive from which (from ``ValueError`` and from
google.protobuf's ``DecodeError`` and ``EncodeError``), that every decode
error names its offset in ``str()``, that ``FrameTooLargeError`` carries its
size, limit and offset, and that every error survives a pickle round trip
with its attributes (errors cross process boundaries in fuzzing and
multiprocessing).

The differential tables run the same code on a pb2 class (upb) and on its
struct, over bad input and over messages missing a required field, and check
that codec's error is an instance of the class pb2 raised, so that pb2 code's
``except`` clauses keep catching it.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from google.protobuf import message as protobuf_message
from google.protobuf import proto
from schemas import everything_pb2 as E
from schemas import extensions_2023_pb2 as X
from schemas import legacy_pb2 as L

import codec
from codec import varint
from codec.errors import (
    CodecError,
    DecodeError,
    DepthLimitError,
    EncodeError,
    FrameTimeoutError,
    FrameTooLargeError,
    SchemaError,
    StreamError,
    TruncatedError,
    VarintError,
    WireFormatError,
)

PB2_DECODE_ERROR = protobuf_message.DecodeError
PB2_ENCODE_ERROR = protobuf_message.EncodeError

DECODE_ERRORS = [TruncatedError, VarintError, WireFormatError, DepthLimitError, FrameTooLargeError]


@pytest.mark.parametrize(
    ("cls", "base"),
    [
        pytest.param(DecodeError, CodecError, id="DecodeError-CodecError"),
        pytest.param(DecodeError, ValueError, id="DecodeError-ValueError"),
        pytest.param(EncodeError, CodecError, id="EncodeError-CodecError"),
        pytest.param(EncodeError, ValueError, id="EncodeError-ValueError"),
        pytest.param(CodecError, Exception, id="CodecError-Exception"),
        *(
            pytest.param(cls, DecodeError, id=f"{cls.__name__}-DecodeError")
            for cls in DECODE_ERRORS
        ),
        pytest.param(FrameTooLargeError, EncodeError, id="FrameTooLargeError-EncodeError"),
        pytest.param(DecodeError, PB2_DECODE_ERROR, id="DecodeError-pb2-DecodeError"),
        pytest.param(EncodeError, PB2_ENCODE_ERROR, id="EncodeError-pb2-EncodeError"),
        *(
            pytest.param(cls, PB2_DECODE_ERROR, id=f"{cls.__name__}-pb2-DecodeError")
            for cls in DECODE_ERRORS
        ),
        pytest.param(FrameTooLargeError, PB2_ENCODE_ERROR, id="FrameTooLargeError-pb2-EncodeError"),
        *(
            pytest.param(cls, ValueError, id=f"{cls.__name__}-ValueError")
            for cls in (*DECODE_ERRORS, SchemaError)
        ),
    ],
)
def test_subclass(cls: type, base: type) -> None:
    assert issubclass(cls, base)


@pytest.mark.parametrize(
    ("cls", "not_base"),
    [
        pytest.param(DecodeError, EncodeError, id="DecodeError-not-EncodeError"),
        pytest.param(EncodeError, DecodeError, id="EncodeError-not-DecodeError"),
        pytest.param(CodecError, ValueError, id="CodecError-not-ValueError"),
        *(
            pytest.param(cls, EncodeError, id=f"{cls.__name__}-not-EncodeError")
            for cls in DECODE_ERRORS
            if cls is not FrameTooLargeError
        ),
        *(
            pytest.param(cls, PB2_ENCODE_ERROR, id=f"{cls.__name__}-not-pb2-EncodeError")
            for cls in (DecodeError, *DECODE_ERRORS)
            if cls is not FrameTooLargeError
        ),
        pytest.param(EncodeError, PB2_DECODE_ERROR, id="EncodeError-not-pb2-DecodeError"),
        pytest.param(CodecError, protobuf_message.Error, id="CodecError-not-pb2-Error"),
        pytest.param(SchemaError, protobuf_message.Error, id="SchemaError-not-pb2-Error"),
    ],
)
def test_not_subclass(cls: type, not_base: type) -> None:
    assert not issubclass(cls, not_base)


@pytest.mark.parametrize(
    "cls", [DecodeError, EncodeError, *DECODE_ERRORS], ids=lambda cls: cls.__name__
)
def test_method_resolution_order(cls: type) -> None:
    """codec's classes first, then google.protobuf's, then ``ValueError``: codec's methods win."""
    order = cls.__mro__
    protobuf_bases = [base for base in order if base.__module__ == "google.protobuf.message"]
    assert protobuf_bases
    assert order.index(CodecError) < min(map(order.index, protobuf_bases))
    assert max(map(order.index, protobuf_bases)) < order.index(ValueError)
    assert order.index(ValueError) + 1 == order.index(Exception)


def test_the_package_exports_the_errors_a_caller_catches_and_errors_holds_them_all() -> None:
    for cls in (CodecError, DecodeError, EncodeError, FrameTooLargeError):
        assert getattr(codec, cls.__name__) is cls
    for cls in (CodecError, DecodeError, EncodeError, *DECODE_ERRORS):
        assert getattr(codec.errors, cls.__name__) is cls
    classes = {
        name
        for name, value in vars(codec.errors).items()
        if isinstance(value, type) and issubclass(value, Exception)
    }
    assert classes == set(codec.errors.__all__)


OFFSET = 4321

# Instances with an offset, and the attributes that must survive pickling.
WITH_OFFSET = [
    pytest.param(DecodeError("bad input", OFFSET), {}, id="DecodeError"),
    pytest.param(
        TruncatedError("input ends early", OFFSET, missing=7), {"missing": 7}, id="TruncatedError"
    ),
    pytest.param(VarintError("bad varint", OFFSET), {}, id="VarintError"),
    pytest.param(WireFormatError("bad wire type", OFFSET), {}, id="WireFormatError"),
    pytest.param(DepthLimitError("too deep", OFFSET), {}, id="DepthLimitError"),
    pytest.param(
        FrameTooLargeError(5_000_000, 4_194_304, OFFSET),
        {"size": 5_000_000, "limit": 4_194_304},
        id="FrameTooLargeError",
    ),
]


@pytest.mark.parametrize(("error", "extra"), WITH_OFFSET)
def test_str_contains_offset(error: DecodeError, extra: dict[str, object]) -> None:
    assert error.offset == OFFSET
    assert f"offset {OFFSET}" in str(error)
    for name, value in extra.items():
        assert getattr(error, name) == value


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(DecodeError("bad input"), id="DecodeError"),
        pytest.param(TruncatedError("input ends early"), id="TruncatedError"),
        pytest.param(FrameTooLargeError(10, 5), id="FrameTooLargeError"),
    ],
)
def test_str_without_offset(error: DecodeError) -> None:
    assert error.offset is None
    assert "offset" not in str(error)


def test_frame_too_large_attributes() -> None:
    error = FrameTooLargeError(5_000_000, 4_194_304, 12)
    assert (error.size, error.limit, error.offset) == (5_000_000, 4_194_304, 12)
    assert "5000000" in str(error) and "4194304" in str(error)


def _attributes(error: BaseException) -> dict[str, object]:
    return {
        name: getattr(error, name)
        for name in ("message", "offset", "missing", "size", "limit")
        if hasattr(error, name)
    }


def _check_pickle(error: BaseException, extra: dict[str, object]) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert isinstance(copy, PB2_DECODE_ERROR) == isinstance(error, DecodeError)
    assert isinstance(copy, PB2_ENCODE_ERROR) == isinstance(error, EncodeError)
    assert str(copy) == str(error)
    assert copy.args == error.args
    assert _attributes(copy) == _attributes(error)
    for name, value in extra.items():
        assert getattr(copy, name) == value


@pytest.mark.parametrize(
    ("error", "extra"),
    [
        *WITH_OFFSET,
        pytest.param(DecodeError("no offset"), {}, id="DecodeError-no-offset"),
        pytest.param(
            TruncatedError("no missing", 3), {"missing": None}, id="TruncatedError-no-missing"
        ),
        pytest.param(
            FrameTooLargeError(10, 5), {"size": 10, "limit": 5}, id="FrameTooLargeError-no-offset"
        ),
        pytest.param(VarintError("no offset"), {}, id="VarintError-no-offset"),
        pytest.param(WireFormatError("no offset"), {}, id="WireFormatError-no-offset"),
        pytest.param(DepthLimitError("no offset"), {}, id="DepthLimitError-no-offset"),
        pytest.param(EncodeError("value out of range"), {}, id="EncodeError"),
        pytest.param(SchemaError("no such type"), {}, id="SchemaError"),
        pytest.param(CodecError("any"), {}, id="CodecError"),
        pytest.param(StreamError("bad magic", 7), {"offset": 7}, id="StreamError"),
        pytest.param(FrameTimeoutError(2.5), {"timeout": 2.5}, id="FrameTimeoutError"),
    ],
)
def test_pickle_round_trip(error: BaseException, extra: dict[str, object]) -> None:
    _check_pickle(error, extra)


@pytest.mark.parametrize(
    ("call", "error_type", "extra"),
    [
        pytest.param(
            lambda: varint.decode(b"\x05\x80", 1),
            TruncatedError,
            {"offset": 1, "missing": None},
            id="truncated-varint",
        ),
        pytest.param(
            lambda: varint.decode_fixed64(b"\x00" * 5, 1),
            TruncatedError,
            {"offset": 1, "missing": 4},
            id="truncated-fixed64",
        ),
        pytest.param(
            lambda: varint.decode(b"\x05\x81\x00", 1, strict=True),
            VarintError,
            {"offset": 1},
            id="varint",
        ),
        pytest.param(lambda: varint.encode(-1), EncodeError, {}, id="encode"),
    ],
)
def test_pickle_round_trip_of_raised_error(
    call: Callable[[], object], error_type: type[CodecError], extra: dict[str, object]
) -> None:
    with pytest.raises(error_type) as info:
        call()
    _check_pickle(info.value, extra)


def test_decode_errors_are_caught_as_value_error() -> None:
    with pytest.raises(ValueError) as info:
        varint.decode(b"\x80")
    assert isinstance(info.value, TruncatedError)


def test_except_clauses_of_pb2_code_catch_codec_errors() -> None:
    with pytest.raises(PB2_DECODE_ERROR):
        varint.decode(b"\x80")
    with pytest.raises(PB2_ENCODE_ERROR):
        varint.encode(-1)
    try:
        raise FrameTooLargeError(10, 5, 0)
    except protobuf_message.Error as error:  # pb2's common base catches both sides
        assert isinstance(error, PB2_DECODE_ERROR) and isinstance(error, PB2_ENCODE_ERROR)


# --- the same code on pb2 classes and on structs ------------------------------------


def _chain(depth: int) -> bytes:
    """``everything.Chain`` nested ``depth`` deep through ``child`` (field 1)."""
    data = b""
    for _ in range(depth):
        data = b"\x0a" + varint.encode(len(data)) + data
    return data


# (pb2 class, input, the codec error class expected): each is bad for upb too.
BAD_MESSAGES = [
    pytest.param(E.AllTypes, b"not a protobuf message", WireFormatError, id="garbage-text"),
    pytest.param(E.Leaf, bytes(range(256)), WireFormatError, id="garbage-bytes"),
    pytest.param(E.CatInt32, b"\x80", TruncatedError, id="truncated-tag"),
    pytest.param(E.CatInt32, b"\x08\x80", TruncatedError, id="truncated-varint"),
    pytest.param(E.CatFixed32, b"\x0d\x01", TruncatedError, id="truncated-fixed32"),
    pytest.param(E.CatFixed64, b"\x09\x01\x02", TruncatedError, id="truncated-fixed64"),
    pytest.param(E.CatString, b"\x0a\x05ab", TruncatedError, id="truncated-length"),
    pytest.param(E.CatNested, b"\x0a\x05\x08\x01", TruncatedError, id="sub-message-past-end"),
    pytest.param(E.CatNested, b"\x0a\x01\x08", TruncatedError, id="truncated-inside-sub-message"),
    pytest.param(L.WithGroups, b"\x0b", TruncatedError, id="group-never-closed"),
    pytest.param(E.CatInt32, b"\x08" + b"\x80" * 10 + b"\x00", VarintError, id="varint-11-bytes"),
    pytest.param(E.CatString, b"\x0a" + b"\x80" * 10 + b"\x00", VarintError, id="length-11-bytes"),
    pytest.param(E.CatInt32, b"\x0f", WireFormatError, id="wire-type-7"),
    pytest.param(E.CatInt32, b"\x0e", WireFormatError, id="wire-type-6"),
    pytest.param(E.CatInt32, b"\x00\x00", WireFormatError, id="field-0"),
    pytest.param(E.CatInt32, b"\x0c", WireFormatError, id="end-group-without-start"),
    pytest.param(E.CatString, b"\x0a\x02\xff\xfe", DecodeError, id="invalid-utf8-proto3-string"),
    pytest.param(E.Chain, _chain(101), DepthLimitError, id="nested-101-deep"),
    pytest.param(E.Chain, _chain(1000), DepthLimitError, id="nested-1000-deep"),
]


def _from_string(cls: Any, data: bytes) -> object:
    return cls.FromString(data)


def _parse_from_string(cls: Any, data: bytes) -> object:
    return cls().ParseFromString(data)


def _raised(call: Callable[[], object]) -> BaseException:
    try:
        call()
    except Exception as error:
        return error
    raise AssertionError("no exception")


def _check_decode_error(error: BaseException, upb_error: BaseException, expected: type) -> None:
    """``error`` is codec's ``expected``, with an offset, and caught where ``upb_error`` is."""
    assert type(error) is expected, repr(error)
    assert isinstance(error, DecodeError)
    assert isinstance(error, type(upb_error)), f"{error!r} is not a {type(upb_error).__name__}"
    assert isinstance(error, PB2_DECODE_ERROR) and isinstance(error, ValueError)
    assert isinstance(error.offset, int), f"{error!r} has no offset"
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.offset) == (type(error), str(error), error.offset)


@pytest.mark.parametrize("parse", [_from_string, _parse_from_string])
@pytest.mark.parametrize(("cls", "data", "expected"), BAD_MESSAGES)
def test_decode_errors_are_caught_as_pb2_catches_its_own(
    parse: Callable[[Any, bytes], object], cls: Any, data: bytes, expected: type
) -> None:
    upb_error = _raised(lambda: parse(cls, data))
    assert type(upb_error) is PB2_DECODE_ERROR  # the input is bad for upb too
    struct = codec.struct(cls)
    _check_decode_error(_raised(lambda: parse(struct, data)), upb_error, expected)
    _check_decode_error(_raised(lambda: codec.decode(struct, data)), upb_error, expected)


# (stream, the codec error class expected with a struct, with the pb2 class), framed
# as protobuf's own ``proto.parse_length_prefixed`` reads delimited messages. With a
# pb2 class, a frame's body is upb's to judge: its verdict becomes a ``DecodeError``
# at the frame's offset.
BAD_STREAMS = [
    pytest.param(b"\x01\x0f", WireFormatError, DecodeError, id="garbage-body"),
    pytest.param(b"\x02\x08\x80", TruncatedError, DecodeError, id="truncated-varint-in-body"),
    pytest.param(b"\x05\x08\x01", TruncatedError, TruncatedError, id="truncated-body"),
    pytest.param(b"\x80", TruncatedError, TruncatedError, id="truncated-prefix"),
    pytest.param(b"\x80" * 11 + b"\x00", VarintError, VarintError, id="prefix-11-bytes"),
    pytest.param(
        varint.encode(5 << 20) + b"\x08\x01",
        FrameTooLargeError,
        FrameTooLargeError,
        id="over-long-frame",
    ),
]


@pytest.mark.parametrize(("data", "with_struct", "with_pb2"), BAD_STREAMS)
def test_frame_errors_are_caught_as_pb2_catches_its_own(
    data: bytes, with_struct: type, with_pb2: type
) -> None:
    """upb's delimited reader raises ``DecodeError`` or ``ValueError``; codec's are both."""
    cls = E.CatInt32
    upb_error = _raised(lambda: proto.parse_length_prefixed(cls, io.BytesIO(data)))
    assert type(upb_error) in (PB2_DECODE_ERROR, ValueError)
    for message_type, expected in ((codec.struct(cls), with_struct), (cls, with_pb2)):
        stream = io.BytesIO(data)
        error = _raised(lambda: list(codec.read_frames(stream, message_type)))  # noqa: B023
        _check_decode_error(error, upb_error, expected)


# Messages missing a required field: proto2 ``required`` and editions' LEGACY_REQUIRED.
MISSING_REQUIRED = [
    pytest.param(lambda: L.Record(id=1), id="proto2-required"),
    pytest.param(lambda: L.Link(next=L.Link(a=1)), id="proto2-required-nested"),
    pytest.param(lambda: X.Holder(x=1), id="editions-legacy-required"),
]

# (the call, whether to run it on the pb2 message too: codec's framing encoders take
# pb2 messages and turn their EncodeError into codec's).
ENCODES = [
    pytest.param(lambda m: m.SerializeToString(), False, id="SerializeToString"),
    pytest.param(
        lambda m: proto.serialize_length_prefixed(m, io.BytesIO()), False, id="proto-framed"
    ),
    pytest.param(lambda m: codec.encode(m), False, id="codec.encode"),
    pytest.param(lambda m: codec.FrameEncoder().encode(m), True, id="FrameEncoder"),
    pytest.param(lambda m: codec.encode_frame_into(m, bytearray()), True, id="encode_frame_into"),
    pytest.param(lambda m: codec.write_frames(io.BytesIO(), [m]), True, id="write_frames"),
]


@pytest.mark.parametrize(("encode", "also_pb2"), ENCODES)
@pytest.mark.parametrize("make", MISSING_REQUIRED)
def test_encode_errors_are_caught_as_pb2_catches_its_own(
    make: Callable[[], Any], encode: Callable[[Any], object], also_pb2: bool
) -> None:
    upb_error = _raised(lambda: make().SerializeToString())
    assert type(upb_error) is PB2_ENCODE_ERROR
    messages = [codec.from_pb2(make()), make()] if also_pb2 else [codec.from_pb2(make())]
    for message in messages:
        error = _raised(lambda: encode(message))  # noqa: B023
        assert type(error) is EncodeError, repr(error)
        assert isinstance(error, type(upb_error)) and isinstance(error, ValueError)
        assert "missing required fields" in str(error)
        copy = pickle.loads(pickle.dumps(error))
        assert (type(copy), str(copy)) == (type(error), str(error))


# Assignments pb2 refuses with ValueError or TypeError: codec's refusal (an
# ``EncodeError`` for a value out of range) is still caught by the same clause.
ASSIGNMENTS = [
    pytest.param(E.CatInt32, "value", 2**40, id="int32-out-of-range"),
    pytest.param(E.CatInt32, "value", -(2**31) - 1, id="int32-below-range"),
    pytest.param(E.CatInt32, "value", "7", id="str-for-int32"),
    pytest.param(E.CatInt32, "value", 1.5, id="float-for-int32"),
    pytest.param(L.Record, "level", 2, id="closed-enum-unknown-number"),
]


@pytest.mark.parametrize(("cls", "name", "value"), ASSIGNMENTS)
def test_assignment_errors_keep_pb2_classes(cls: Any, name: str, value: object) -> None:
    upb_errors = [
        _raised(lambda: cls(**{name: value})),
        _raised(lambda: setattr(cls(), name, value)),
    ]
    assert all(type(error) in (ValueError, TypeError) for error in upb_errors)
    struct = codec.struct(cls)
    errors = [
        _raised(lambda: struct(**{name: value})),
        _raised(lambda: setattr(struct(), name, value)),
    ]
    for error, upb_error in zip(errors, upb_errors, strict=True):
        assert isinstance(error, type(upb_error)), f"{error!r} is not a {type(upb_error).__name__}"
