"""Tests of the exception hierarchy in :mod:`codec.errors`.

Checks which classes derive from which (and from ``ValueError``), that every
decode error names its offset in ``str()``, that ``FrameTooLargeError``
carries its size, limit and offset, and that every error survives a pickle
round trip with its attributes (errors cross process boundaries in fuzzing
and multiprocessing).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable

import pytest

import codec
from codec import varint
from codec.errors import (
    CodecError,
    DecodeError,
    DepthLimitError,
    EncodeError,
    FrameTooLargeError,
    TruncatedError,
    VarintError,
    WireFormatError,
)

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
    ],
)
def test_not_subclass(cls: type, not_base: type) -> None:
    assert not issubclass(cls, not_base)


def test_package_exports_the_same_classes() -> None:
    for cls in (CodecError, DecodeError, EncodeError, *DECODE_ERRORS):
        assert getattr(codec, cls.__name__) is cls


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
        pytest.param(EncodeError("value out of range"), {}, id="EncodeError"),
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
