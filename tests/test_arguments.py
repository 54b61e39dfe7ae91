"""Tests of the arguments checked when framing objects are made, and of ``get_buffer``'s bounds.

What is checked, in both builds:

* a wrong type is a ``TypeError``, a bad value a ``ValueError``, each naming
  the argument and what it accepts, raised by the constructor (not at the
  first frame): ``max_frame_size`` and ``capacity`` of ``FrameEncoder``,
  ``max_frame_size``, ``strict`` and ``message_type`` of ``FrameDecoder``,
  ``max_frame_size`` of ``encode_frame_into``; only an ``int`` is a size
  (not a ``bool``, nor numpy's integers: an ``__index__`` may change);
* ``message_type`` accepts what the decoder can use: pb2 classes, struct
  classes, ``codec.Decoder`` and classes with a ``FromString``, and nothing
  else (not ``int``, not a message instance);
* a message class handed to ``encode`` is a ``TypeError`` that says to pass
  an instance, and nothing is written;
* ``get_buffer(sizehint)`` gives at most the larger of 64 KiB and the
  largest frame the limit allows, so a huge hint neither allocates (checked
  with tracemalloc) nor fails, and a frame of the largest size still
  arrives through such views; ``sizehint`` must be an integer.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np
import pytest
from helpers.peerbench import Sample

import codec
from codec import FrameDecoder, FrameEncoder, encode_frame_into, varint

KiB = 1024
MiB = 1024 * KiB
SampleStruct = codec.struct(Sample)


class Parsed:
    """A message type of the decoder's duck type: a class with ``FromString``."""

    @staticmethod
    def FromString(data: memoryview) -> bytes:
        return bytes(data)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda size: FrameEncoder(size), id="FrameEncoder"),
        pytest.param(lambda size: FrameDecoder(size), id="FrameDecoder"),
        pytest.param(
            lambda size: encode_frame_into(b"x", bytearray(), max_frame_size=size),
            id="encode_frame_into",
        ),
    ],
)
@pytest.mark.parametrize(
    ("size", "error", "message"),
    [
        ("4MiB", TypeError, "max_frame_size must be an int (a number of bytes), not str"),
        (4.0, TypeError, "max_frame_size must be an int (a number of bytes), not float"),
        (None, TypeError, "max_frame_size must be an int (a number of bytes), not NoneType"),
        (True, TypeError, "max_frame_size must be an int (a number of bytes), not bool"),
        (np.int64(9), TypeError, "max_frame_size must be an int (a number of bytes), not int64"),
        (-1, ValueError, "max_frame_size must be between 0 and "),
        (2**63, ValueError, "max_frame_size must be between 0 and "),
    ],
)
def test_bad_max_frame_size(make: Any, size: object, error: type, message: str) -> None:
    with pytest.raises(error) as info:
        make(size)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("capacity", "error", "message"),
    [
        ("4096", TypeError, "capacity must be an int (a number of bytes), not str"),
        (-1, ValueError, "capacity must be between 0 and "),
    ],
)
def test_bad_encoder_capacity(capacity: object, error: type, message: str) -> None:
    with pytest.raises(error) as info:
        FrameEncoder(capacity=capacity)  # type: ignore[arg-type]
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("value", ["yes", 1, None])
@pytest.mark.parametrize("option", ["strict", "copy"])
def test_decoder_flags_must_be_bools(option: str, value: object) -> None:
    with pytest.raises(TypeError) as info:
        FrameDecoder(**{option: value})
    assert str(info.value) == f"{option} must be True or False, not {type(value).__name__}"


# Each class and an option it takes, and the wrong values of that option's kind.
OPTION_TAKERS = {
    "FrameDecoder": (lambda **option: FrameDecoder(**option), ("strict", "max_frame_size")),
    "Decoder": (lambda **option: codec.Decoder(SampleStruct, **option), ("zero_copy", "max_depth")),
    "WireReader": (lambda **option: codec.wire.WireReader(b"", **option), ("max_depth",)),
}
WRONG_VALUES = {
    "strict": [("yes", TypeError, "strict must be True or False, not str")],
    "zero_copy": [(1, TypeError, "zero_copy must be True or False, not int")],
    "max_depth": [
        (True, TypeError, "max_depth must be an int, not bool"),
        (2.0, TypeError, "max_depth must be an int, not float"),
        (-1, ValueError, "max_depth must be between 0 and "),
    ],
    "max_frame_size": [(-1, ValueError, "max_frame_size must be between 0 and ")],
}


@pytest.mark.parametrize(
    ("taker", "option", "value", "error", "message"),
    [
        pytest.param(taker, option, *wrong, id=f"{taker}-{option}-{wrong[0]!r}")
        for taker, (_, options) in OPTION_TAKERS.items()
        for option in options
        for wrong in WRONG_VALUES[option]
    ],
)
def test_every_option_of_a_kind_is_refused_with_one_text(
    taker: str, option: str, value: object, error: type[Exception], message: str
) -> None:
    """A flag, a count and a size are checked by one function each, whichever class takes them."""
    make = OPTION_TAKERS[taker][0]
    with pytest.raises(error) as info:
        make(**{option: value})
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("message_type", "given"),
    [
        pytest.param(int, "<class 'int'>", id="int"),
        pytest.param(bytes, "<class 'bytes'>", id="bytes"),
        pytest.param(Sample(), "Sample", id="a-pb2-instance"),
        pytest.param(SampleStruct(), "Sample", id="a-struct-instance"),
        pytest.param("Sample", "str", id="a-name"),
        pytest.param(Parsed.FromString, "function", id="a-parser-function"),
    ],
)
def test_bad_message_type_is_refused_when_the_decoder_is_made(
    message_type: object, given: str
) -> None:
    with pytest.raises(TypeError) as info:
        FrameDecoder(message_type=message_type)
    assert str(info.value) == (
        "message_type must be a protobuf message class, a struct class, a codec.Decoder"
        f" or None, not {given}"
    )


@pytest.mark.parametrize(
    ("message_type", "expected"),
    [
        pytest.param(None, b"\x08\x05", id="none"),
        pytest.param(Sample, Sample(ts_ns=5), id="pb2"),
        pytest.param(SampleStruct, SampleStruct(ts_ns=5), id="struct"),
        pytest.param(codec.Decoder(SampleStruct), SampleStruct(ts_ns=5), id="Decoder"),
        pytest.param(Parsed, b"\x08\x05", id="duck-type"),
    ],
)
def test_accepted_message_types_decode(message_type: object, expected: object) -> None:
    decoder = FrameDecoder(message_type=message_type)
    decoder.feed(b"\x02\x08\x05")
    frame = decoder.next_frame()
    assert (bytes(frame) if isinstance(frame, memoryview) else frame) == expected


@pytest.mark.parametrize("cls", [Sample, SampleStruct], ids=["pb2", "struct"])
def test_encoding_a_message_class_is_a_type_error(cls: type) -> None:
    encoder = FrameEncoder()
    with pytest.raises(TypeError) as info:
        encoder.encode(cls)
    assert str(info.value) == (
        "cannot encode the class Sample itself: expected a message, such as Sample(...)"
    )
    assert len(encoder) == 0
    buffer = bytearray(b"kept")
    with pytest.raises(TypeError):
        encode_frame_into(cls, buffer)
    assert buffer == b"kept"


@pytest.mark.parametrize(
    "call",
    [
        lambda: codec.decode(Sample, b""),
        lambda: codec.Decoder(Sample),
        lambda: codec.from_dict(Sample, {}),
        lambda: codec.from_json(Sample, "{}"),
    ],
)
def test_a_pb2_class_where_a_struct_class_is_needed_is_named_with_what_to_call(call: Any) -> None:
    """These make structs; a pb2 class is named, with its struct class to pass instead."""
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == (
        "'Sample' is a google.protobuf message class; its struct is codec.struct(Sample)"
    )
    with pytest.raises(TypeError, match=r"^'int' is not a struct class$"):
        codec.decode(int, b"")


@pytest.mark.parametrize("call", [codec.encode, codec.encoded_size])
def test_a_pb2_message_where_a_struct_is_needed_is_named_with_what_to_call(call: Any) -> None:
    with pytest.raises(codec.EncodeError) as info:
        call(Sample(name="x"))
    assert str(info.value) == (
        "expected a struct, not the google.protobuf message Sample: convert it with "
        "codec.from_pb2(message), or call its SerializeToString()"
    )
    with pytest.raises(codec.EncodeError, match=r"^expected a struct, not bytes$"):
        call(b"x")


def test_json_of_something_not_a_message_asks_for_a_message() -> None:
    for call in (codec.to_dict, codec.to_json):
        with pytest.raises(TypeError, match=r"^expected a struct or a pb2 message, not bytes$"):
            call(b"x")
    assert codec.to_dict(Sample(name="x")) == codec.to_dict(codec.from_pb2(Sample(name="x")))


# --- get_buffer bounds ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "hint", "room"),
    [
        pytest.param(1000, 100_000_000, 64 * KiB, id="small-limit-huge-hint"),
        pytest.param(1000, 2**40, 64 * KiB, id="small-limit-2**40"),
        pytest.param(1000, 2**70, 64 * KiB, id="hint-beyond-ssize_t"),
        pytest.param(1000, 5000, 5000, id="small-limit-hint-within-a-chunk"),
        pytest.param(200_000, 10**8, 200_003, id="frame-larger-than-a-chunk"),
        pytest.param(200_000, 150_000, 150_000, id="hint-within-the-frame"),
        pytest.param(codec.DEFAULT_MAX_FRAME_SIZE, 2**40, 4 * MiB + 4, id="default-limit"),
        pytest.param(1000, -1, 64 * KiB, id="no-hint"),
        pytest.param(1000, 0, 64 * KiB, id="zero-hint"),
    ],
)
def test_get_buffer_room_is_bounded_by_the_frame_limit(limit: int, hint: int, room: int) -> None:
    decoder = FrameDecoder(limit)
    with decoder.get_buffer(hint) as view:
        assert len(view) == room
    decoder.buffer_updated(0)


def test_a_huge_hint_allocates_only_what_the_limit_needs() -> None:
    decoder = FrameDecoder(max_frame_size=1000)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        with decoder.get_buffer(100_000_000):
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * KiB


@pytest.mark.parametrize("limit", [1000, 100 * KiB])
def test_the_largest_frame_arrives_through_bounded_views(limit: int) -> None:
    payload = bytes(range(256)) * (limit // 256) + bytes(limit % 256)
    stream = varint.encode(limit) + payload + b"\x01z"
    decoder = FrameDecoder(limit)
    pos = 0
    frames = []
    while pos < len(stream):
        with decoder.get_buffer(10**9) as view:
            size = min(len(view), len(stream) - pos)
            view[:size] = stream[pos : pos + size]
        decoder.buffer_updated(size)
        pos += size
        frames += [bytes(frame) for frame in decoder]
    decoder.feed_eof()
    assert frames == [payload, b"z"]


@pytest.mark.parametrize("hint", ["64KiB", 1.5, None, b"\x10", np.int64(10)])
def test_get_buffer_hint_must_be_an_integer(hint: object) -> None:
    decoder = FrameDecoder()
    with pytest.raises(TypeError) as info:
        decoder.get_buffer(hint)  # type: ignore[arg-type]
    assert str(info.value).startswith("sizehint must be an int")
    decoder.feed(b"\x01a")  # nothing was given out: the decoder goes on
    assert [bytes(frame) for frame in decoder] == [b"a"]
