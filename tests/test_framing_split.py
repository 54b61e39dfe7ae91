"""I1, split invariance of :class:`codec.FrameDecoder`.

Every named stream below is decoded whole, one byte at a time, at every
two-way split point and in hypothesis-chosen chunkings, through ``feed`` and
through ``get_buffer``/``buffer_updated``, from ``bytes``, ``bytearray`` and
``memoryview`` chunks. Each way must give the frames and the error (class,
stream offset, ``missing``) written next to the stream. Random byte strings
check the same invariance, and that only codec's own errors escape (I3), on
the same checks whichever path the bytes take (I4). The netty#17549 case (a
2 MiB frame split after its 3rd prefix byte) is tested on its own, being too
large to split everywhere.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from google.protobuf.internal import encoder as pb_encoder
from helpers.peerbench import Sample, sample
from hypothesis import given
from hypothesis import strategies as st

from codec import CodecError, DecodeError, FrameDecoder, FrameTooLargeError
from codec.errors import TruncatedError, VarintError

ErrorInfo = tuple[type, int | None, int | None] | None
Result = tuple[list[Any], ErrorInfo]
Factory = Callable[[], FrameDecoder]


def run(
    decoder_factory: Factory, chunks: Sequence[Any], eof: bool = True, via: str = "feed"
) -> Result:
    """Decode ``chunks`` and return ``(frames, (error class, offset, missing) or None)``.

    Bytes go in with ``feed``, or (``via="buffer"``) are copied into a
    ``get_buffer`` view and taken with ``buffer_updated``. After each chunk
    every ready frame is read; then ``feed_eof`` (when ``eof``). The first
    codec error ends the run, after the frames completed before it, which a
    poisoned decoder still hands out, have been read.
    """
    decoder = decoder_factory()
    frames: list[Any] = []

    def drain() -> None:
        while (frame := decoder.next_frame()) is not None:
            frames.append(bytes(frame) if isinstance(frame, memoryview) else frame)

    try:
        for chunk in chunks:
            if via == "feed":
                decoder.feed(chunk)
            else:
                size = len(memoryview(chunk))
                with decoder.get_buffer(size) as view:
                    view[:size] = chunk
                decoder.buffer_updated(size)
            drain()
        if eof:
            decoder.feed_eof()
            drain()
    except CodecError as exc:
        try:
            drain()
        except CodecError as again:
            assert again is exc, "a poisoned decoder must repeat the same error"
        else:
            raise AssertionError(f"decoder not poisoned after {exc!r}") from None
        return frames, (type(exc), exc.offset, getattr(exc, "missing", None))
    return frames, None


def frame(payload: bytes) -> bytes:
    return pb_encoder._VarintBytes(len(payload)) + payload


def h(text: str) -> bytes:
    return bytes.fromhex(text)


OK = frame(b"ok")
SAMPLE = sample()
SAMPLE_FRAME = frame(SAMPLE.SerializeToString())
MIXED = [b"", b"a", b"\x00" * 127, bytes(range(128)), b"q" * 300, b"xyz", b""]
MIXED_STREAM = b"".join(frame(p) for p in MIXED)
LIMIT = 4 * 1024 * 1024


class Vector:
    """A named stream, how to decode it, and what must come out."""

    def __init__(
        self,
        name: str,
        data: bytes,
        expected: Result,
        **kwargs: Any,
    ) -> None:
        self.name = name
        self.data = data
        self.expected = expected
        self.factory: Factory = functools.partial(FrameDecoder, **kwargs)

    def __repr__(self) -> str:
        return self.name


def truncated_prefix_vector(length: int) -> Vector:
    """A prefix of 1-5 bytes declaring ``length``, then 8 body bytes, then EOF."""
    prefix = pb_encoder._VarintBytes(length)
    return Vector(
        f"prefix-{len(prefix)}-bytes-truncated",
        prefix + b"12345678",
        ([], (TruncatedError, 0, length - 8)),
        max_frame_size=2**30,
    )


VECTORS = [
    # valid streams
    Vector("empty", b"", ([], None)),
    Vector("one-empty-frame", h("00"), ([b""], None)),
    Vector("mixed-sizes", MIXED_STREAM, (MIXED, None)),
    Vector(
        "many-tiny",
        b"".join(frame(bytes([i]) * (i % 4)) for i in range(60)),
        ([bytes([i]) * (i % 4) for i in range(60)], None),
    ),
    Vector(
        "non-minimal-prefixes",
        h("81 00") + b"x" + h("80 80 00") + h("01") + b"y",
        ([b"x", b"", b"y"], None),
    ),
    Vector(
        "messages",
        SAMPLE_FRAME + h("00") + SAMPLE_FRAME,
        ([SAMPLE, Sample(), SAMPLE], None),
        message_type=Sample,
    ),
    Vector("at-the-limit", frame(b"abc") + frame(b""), ([b"abc", b""], None), max_frame_size=3),
    # prefix errors (F1-F3, V2-V4)
    Vector("F1", h("81 80 80 02"), ([], (FrameTooLargeError, 0, None))),
    Vector(
        "F1-after-frames",
        MIXED_STREAM + h("81 80 80 02") + b"body",
        (MIXED, (FrameTooLargeError, len(MIXED_STREAM), None)),
    ),
    Vector(
        "F2-2^63-1", OK + h("ff ff ff ff ff ff ff ff 7f"), ([b"ok"], (FrameTooLargeError, 3, None))
    ),
    Vector("F2-0xffffffff", h("ff ff ff ff 0f"), ([], (FrameTooLargeError, 0, None))),
    Vector("F3-2^32", OK + h("80 80 80 80 10") + b"abc", ([b"ok"], (FrameTooLargeError, 3, None))),
    Vector(
        "F3-2^32-huge-limit",
        h("80 80 80 80 10") + b"abc",
        ([], (TruncatedError, 0, 2**32 - 3)),
        max_frame_size=2**40,
    ),
    Vector(
        "over-limit-by-one",
        frame(b"abc") + frame(b"abcd"),
        ([b"abc"], (FrameTooLargeError, 4, None)),
        max_frame_size=3,
    ),
    Vector(
        "zero-limit",
        h("00 00 01 61"),
        ([b"", b""], (FrameTooLargeError, 2, None)),
        max_frame_size=0,
    ),
    Vector("V2-eleven-bytes", OK + h("80" * 10 + "00") + OK, ([b"ok"], (VarintError, 3, None))),
    Vector("V3-2^70-1", h("ff" * 9 + "7f"), ([], (VarintError, 0, None))),
    Vector(
        "V3-2^64-after-frames",
        OK + OK + h("80" * 9 + "02"),
        ([b"ok", b"ok"], (VarintError, 6, None)),
    ),
    Vector(
        "V4-strict-81-00", OK + h("81 00") + b"x", ([b"ok"], (VarintError, 3, None)), strict=True
    ),
    Vector(
        "strict-ten-bytes",
        h("80" * 9 + "01"),
        ([], (VarintError, 0, None)),
        strict=True,
        max_frame_size=2**62,
    ),
    Vector(
        "default-ten-bytes",
        h("80" * 9 + "01"),
        ([], (FrameTooLargeError, 0, None)),
        max_frame_size=2**62,
    ),
    # EOF inside a frame (F4)
    Vector("F4-body", h("05 61 62 63"), ([], (TruncatedError, 0, 2))),
    Vector(
        "F4-body-after-frames",
        MIXED_STREAM + h("05 61 62 63"),
        (MIXED, (TruncatedError, len(MIXED_STREAM), 2)),
    ),
    Vector("F4-prefix", OK + h("80"), ([b"ok"], (TruncatedError, 3, None))),
    Vector(
        "F4-long-prefix",
        OK + h("ff ff ff"),
        ([b"ok"], (TruncatedError, 3, None)),
        max_frame_size=2**40,
    ),
    Vector("F4-prefix-only", h("05"), ([], (TruncatedError, 0, 5))),
    *(truncated_prefix_vector(n) for n in (10, 200, 20_000, 3_000_000, 2**28)),
    # payloads message_type cannot parse
    Vector(
        "bad-message",
        SAMPLE_FRAME + h("01 ff") + SAMPLE_FRAME,
        ([SAMPLE], (DecodeError, len(SAMPLE_FRAME), None)),
        message_type=Sample,
    ),
]

VECTOR_PARAMS = [pytest.param(v, id=v.name) for v in VECTORS]
VIA = ["feed", "buffer"]
KINDS = [bytes, bytearray, memoryview]


@pytest.mark.parametrize("vector", VECTOR_PARAMS)
def test_whole_stream_gives_the_expected_result(vector: Vector) -> None:
    assert run(vector.factory, [vector.data]) == vector.expected


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("vector", VECTOR_PARAMS)
def test_byte_at_a_time(vector: Vector, via: str, kind: type) -> None:
    data = vector.data
    chunks = [kind(data[i : i + 1]) for i in range(len(data))]
    assert run(vector.factory, chunks, via=via) == vector.expected


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("vector", VECTOR_PARAMS)
def test_every_two_way_split(vector: Vector, via: str, kind: type) -> None:
    data = vector.data
    for cut in range(len(data) + 1):
        chunks = [kind(data[:cut]), kind(data[cut:])]
        assert run(vector.factory, chunks, via=via) == vector.expected, f"split at {cut}"


@st.composite
def chunkings(draw: st.DrawFn, data: bytes) -> list[Any]:
    """``data`` cut at random points (repeats give empty chunks), in a random buffer type."""
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=min(len(data) + 2, 24))))
    kind = draw(st.sampled_from(KINDS))
    bounds = [0, *cuts, len(data)]
    return [kind(data[a:b]) for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("vector", VECTOR_PARAMS)
@given(data=st.data())
def test_random_chunkings(vector: Vector, via: str, data: st.DataObject) -> None:
    chunks = data.draw(chunkings(vector.data))
    assert run(vector.factory, chunks, via=via) == vector.expected


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("vector", VECTOR_PARAMS)
def test_without_eof_truncation_is_just_waiting(vector: Vector, via: str) -> None:
    """Without ``feed_eof`` an incomplete frame is no error; every other error still is."""
    frames, error = vector.expected
    expected = (frames, None) if error and error[0] is TruncatedError else vector.expected
    data = vector.data
    assert run(vector.factory, [data], eof=False, via=via) == expected
    chunks = [data[i : i + 1] for i in range(len(data))]
    assert run(vector.factory, chunks, eof=False, via=via) == expected


# --- random input: same result for any split, only codec errors (I1, I3, I4) --------

DECODER_SETTINGS = [
    {},
    {"strict": True},
    {"max_frame_size": 16},
    {"max_frame_size": 0},
    {"message_type": Sample},
    {"copy": True},
    {"copy": True, "strict": True, "max_frame_size": 16},
]


@given(
    stream=st.binary(max_size=300),
    settings=st.sampled_from(DECODER_SETTINGS),
    via=st.sampled_from(VIA),
    data=st.data(),
)
def test_random_bytes_split_invariance(
    stream: bytes, settings: dict[str, Any], via: str, data: st.DataObject
) -> None:
    factory = functools.partial(FrameDecoder, **settings)
    whole = run(factory, [stream])
    assert run(factory, data.draw(chunkings(stream)), via=via) == whole
    assert run(factory, [stream[i : i + 1] for i in range(len(stream))], via=via) == whole
    error = whole[1]
    if error is not None:
        assert issubclass(error[0], DecodeError)
        assert error[1] is not None and 0 <= error[1] <= len(stream)


@given(
    payloads=st.lists(st.binary(max_size=64), max_size=12),
    tail=st.binary(max_size=12),
    via=st.sampled_from(VIA),
    data=st.data(),
)
def test_valid_frames_before_garbage_survive_any_split(
    payloads: list[bytes], tail: bytes, via: str, data: st.DataObject
) -> None:
    head = b"".join(frame(p) for p in payloads)
    stream = head + tail
    factory = functools.partial(FrameDecoder, max_frame_size=64)
    whole = run(factory, [stream])
    frames, error = whole
    assert frames[: len(payloads)] == payloads  # nothing before the tail is lost
    assert error is None or error[1] >= len(head)
    assert run(factory, data.draw(chunkings(stream)), via=via) == whole


# --- netty#17549: a 2 MiB frame split after its 3rd prefix byte ------------------------

BIG = bytes(range(256)) * (2 * 1024 * 1024 // 256)
BIG_STREAM = frame(BIG)


def test_netty_17549_prefix_is_four_bytes() -> None:
    assert BIG_STREAM[:4] == h("80 80 80 01")


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("cut", [0, 1, 2, 3, 4, 5])
def test_netty_17549_two_mib_frame_split_in_its_prefix(cut: int, via: str) -> None:
    decoder = FrameDecoder()
    first, rest = BIG_STREAM[:cut], BIG_STREAM[cut:]
    decoder.feed(first) if via == "feed" else _via_buffer(decoder, first)
    assert decoder.next_frame() is None  # no bogus frame from a partial prefix
    assert decoder.frame_in_progress == (cut > 0)
    assert decoder.buffered == cut
    decoder.feed(rest) if via == "feed" else _via_buffer(decoder, rest)
    frames = [bytes(f) for f in decoder]
    assert len(frames) == 1
    assert frames[0] == BIG
    decoder.feed_eof()


def test_netty_17549_prefix_byte_by_byte_then_body_in_chunks() -> None:
    decoder = FrameDecoder()
    for i in range(4):
        decoder.feed(BIG_STREAM[i : i + 1])
        assert decoder.next_frame() is None
    chunk = 64 * 1024 - 1
    frames = []
    for pos in range(4, len(BIG_STREAM), chunk):
        decoder.feed(BIG_STREAM[pos : pos + chunk])
        frames += [bytes(f) for f in decoder]
    assert frames == [BIG]
    decoder.feed_eof()


def _via_buffer(decoder: FrameDecoder, data: bytes) -> None:
    with decoder.get_buffer(len(data)) as view:
        view[: len(data)] = data
    decoder.buffer_updated(len(data))
