"""Tests of the framing layer, :mod:`codec.framing` (``FrameEncoder``, ``FrameDecoder``,
``encode_frame_into``).

What is checked, in both builds (compiled core and ``CODEC_PURE_PYTHON=1``):

* every frame-level row of the bad-input catalogue (``docs/bad-inputs.md``
  section 1.2, F1-F7; F8 is a wire-layer row and lives with the wire tests) and
  the varint rows that apply to a frame prefix (V1-V4), each with its error
  class, stream offset and attributes;
* I2, the poisoned decoder: after an error every later call raises the same
  error object, but complete frames before the fault are still handed out;
* round trips of raw payloads and ``peerbench.Sample`` messages, and interop
  in both directions with the naive ``_VarintBytes(len(p)) + p`` stream;
* ``encode_frame_into`` offsets, resizing and argument checks; every payload
  type (bytes, bytearray, memoryview, numpy arrays);
* that encoder errors leave the buffer exactly as it was;
* buffer safety (M1, M5): a live ``getbuffer()`` view blocks ``clear()`` and
  growth; a frame view stays intact however much is fed after it; the
  ``get_buffer``/``buffer_updated`` contract; empty feeds and payloads (M6);
* payloads that ``message_type`` cannot parse give ``codec.DecodeError``.

Split invariance (I1) is in ``test_framing_split.py``, allocation bounds in
``test_heap.py``.
"""

from __future__ import annotations

import gc
import io
import os
import subprocess
import sys
import threading
import time
import traceback
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf.internal import decoder as pb_decoder
from google.protobuf.internal import encoder as pb_encoder
from google.protobuf.message import DecodeError as ProtobufDecodeError
from google.protobuf.message import EncodeError as ProtobufEncodeError
from helpers.heap import fill_freed_memory
from helpers.misuse import DECODER_REENTRY, ENCODER_REENTRY, Overlap, Reentrant, race
from helpers.peerbench import Blob, Sample, sample
from helpers.unchecked import unchecked
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec import (
    DEFAULT_MAX_FRAME_SIZE,
    CodecError,
    DecodeError,
    EncodeError,
    FrameDecoder,
    FrameEncoder,
    FrameTooLargeError,
    encode_frame_into,
    varint,
)
from codec.errors import TruncatedError, VarintError

SAMPLE_FRAME = pb_encoder._VarintBytes(sample().ByteSize()) + sample().SerializeToString()

KiB = 1024
MiB = 1024 * KiB
REPO_ROOT = Path(codec.__file__).resolve().parent.parent


def h(text: str) -> bytes:
    """Bytes from hex written with spaces, as in the catalogue."""
    return bytes.fromhex(text)


def naive_frame(payload: bytes) -> bytes:
    """The reference framing: google.protobuf's own varint, then the payload."""
    return pb_encoder._VarintBytes(len(payload)) + payload


def drain(decoder: FrameDecoder) -> list[Any]:
    """Every frame the decoder has ready, as bytes (or messages)."""
    out = []
    while (frame := decoder.next_frame()) is not None:
        out.append(bytes(frame) if isinstance(frame, memoryview) else frame)
    return out


def window_capacity(decoder: FrameDecoder) -> int:
    """Size of the decoder's receive window (``_data`` is not visible in the compiled build).

    A ``get_buffer`` view is a slice of the window, so its ``obj`` is the window
    itself. Asking for 1 byte makes no room the next ``feed`` would not make.
    """
    with decoder.get_buffer(1) as view:
        window = view.obj
        assert isinstance(window, bytearray)
        return len(window)


# --- catalogue: prefix errors ----------------------------------------------------

LIMIT = DEFAULT_MAX_FRAME_SIZE
OK = naive_frame(b"ok")  # a valid 3-byte frame to put errors at a non-zero offset

# (data, decoder kwargs, error class, offset, expected attributes)
PREFIX_ERRORS = [
    pytest.param(
        h("81 80 80 02"), {}, FrameTooLargeError, 0, {"size": LIMIT + 1, "limit": LIMIT}, id="F1"
    ),
    pytest.param(
        OK + h("81 80 80 02"),
        {},
        FrameTooLargeError,
        3,
        {"size": LIMIT + 1, "limit": LIMIT},
        id="F1-after-frame",
    ),
    pytest.param(
        h("81 01"),
        {"max_frame_size": 128},
        FrameTooLargeError,
        0,
        {"size": 129, "limit": 128},
        id="F1-custom-limit",
    ),
    pytest.param(
        h("01"),
        {"max_frame_size": 0},
        FrameTooLargeError,
        0,
        {"size": 1, "limit": 0},
        id="F1-zero-limit",
    ),
    pytest.param(
        h("ff ff ff ff ff ff ff ff 7f"),
        {},
        FrameTooLargeError,
        0,
        {"size": 2**63 - 1},
        id="F2-2^63-1",
    ),
    pytest.param(
        h("ff ff ff ff 0f"), {}, FrameTooLargeError, 0, {"size": 0xFFFFFFFF}, id="F2-0xffffffff"
    ),
    pytest.param(
        h("80 80 80 80 10"), {}, FrameTooLargeError, 0, {"size": 2**32}, id="F3-2^32-not-0"
    ),
    pytest.param(h("80 80 80 80 08"), {}, FrameTooLargeError, 0, {"size": 2**31}, id="F3-2^31"),
    pytest.param(
        h("ff ff ff ff ff ff ff ff ff 01"),
        {},
        FrameTooLargeError,
        0,
        {"size": 2**64 - 1},
        id="F2-2^64-1",
    ),
    pytest.param(
        h("ff ff ff ff ff ff ff ff ff 01"),
        {"max_frame_size": sys.maxsize},
        FrameTooLargeError,
        0,
        {"size": 2**64 - 1, "limit": sys.maxsize},
        id="F2-2^64-1-max-limit",
    ),
    pytest.param(
        h("80 80 80 80 80 80 80 80 80 80 00"), {}, VarintError, 0, {}, id="V2-eleven-bytes"
    ),
    pytest.param(OK + h("80" * 10), {}, VarintError, 3, {}, id="V2-after-frame"),
    pytest.param(h("ff ff ff ff ff ff ff ff ff 7f"), {}, VarintError, 0, {}, id="V3-2^70-1"),
    pytest.param(h("80 80 80 80 80 80 80 80 80 02"), {}, VarintError, 0, {}, id="V3-2^64"),
    pytest.param(h("81 00 61"), {"strict": True}, VarintError, 0, {}, id="V4-strict-81-00"),
    pytest.param(
        OK + h("80 80 00"), {"strict": True}, VarintError, 3, {}, id="V4-strict-3-byte-zero"
    ),
    pytest.param(
        h("80 80 80 80 80 80 80 80 80 01"),
        {"strict": True, "max_frame_size": sys.maxsize},
        VarintError,
        0,
        {},
        id="strict-ten-bytes",
    ),
    pytest.param(
        h("80 80 80 80 80 80 80 80 80 01"),
        {"max_frame_size": sys.maxsize},
        FrameTooLargeError,
        0,
        {"size": 2**63},
        id="default-ten-bytes-2^63",
    ),
]


@pytest.mark.parametrize(("data", "kwargs", "error", "offset", "attrs"), PREFIX_ERRORS)
def test_bad_prefix_is_refused_with_class_offset_and_attributes(
    data: bytes, kwargs: dict[str, Any], error: type[DecodeError], offset: int, attrs: dict
) -> None:
    decoder = FrameDecoder(**kwargs)
    with pytest.raises(error) as info:
        decoder.feed(data)
        drain(decoder)  # a prefix after an unread frame is checked when that frame is read
    assert type(info.value) is error
    assert info.value.offset == offset
    for name, value in attrs.items():
        assert getattr(info.value, name) == value
    assert isinstance(info.value, DecodeError)


# (bytes before the bad prefix, the bad prefix up to the byte that decides, decoder kwargs)
AS_SOON = [
    pytest.param(b"", h("81 80 80 02"), {}, id="F1"),
    pytest.param(OK, h("81 80 80 02"), {}, id="F1-after-frame"),
    pytest.param(b"", h("ff ff ff ff ff ff ff ff 7f"), {}, id="F2-2^63-1"),
    pytest.param(OK, h("ff ff ff ff 0f"), {}, id="F2-0xffffffff"),
    pytest.param(b"", h("80 80 80 80 10"), {}, id="F3-2^32"),
    pytest.param(b"", h("80" * 10), {}, id="V2-tenth-byte-decides"),
    pytest.param(OK, h("ff" * 9 + "02"), {}, id="V3-2^64"),
    pytest.param(b"", h("81 00"), {"strict": True}, id="V4-strict"),
    pytest.param(b"", h("80" * 9), {"strict": True}, id="strict-ninth-byte-decides"),
]


@pytest.mark.parametrize(("head", "bad", "kwargs"), AS_SOON)
def test_bad_prefix_is_refused_as_soon_as_it_is_decided(
    head: bytes, bad: bytes, kwargs: dict[str, Any]
) -> None:
    """The byte that decides a bad prefix raises, in ``feed``; no body byte is waited for."""
    decoder = FrameDecoder(**kwargs)
    decoder.feed(head)
    drain(decoder)
    for i in range(len(bad) - 1):
        decoder.feed(bad[i : i + 1])
        assert decoder.next_frame() is None
        assert decoder.frame_in_progress
    with pytest.raises(DecodeError) as info:
        decoder.feed(bad[-1:])
    assert info.value.offset == len(head)


def test_limit_is_inclusive() -> None:
    decoder = FrameDecoder(max_frame_size=3)
    decoder.feed(naive_frame(b"abc"))
    assert drain(decoder) == [b"abc"]
    with pytest.raises(FrameTooLargeError) as info:
        decoder.feed(h("04"))
    assert (info.value.size, info.value.limit, info.value.offset) == (4, 3, 4)


def test_default_limit_frame_is_accepted_and_waits_for_its_body() -> None:
    decoder = FrameDecoder()
    decoder.feed(h("80 80 80 02"))  # exactly 4 MiB
    assert decoder.next_frame() is None
    assert decoder.frame_in_progress
    with pytest.raises(TruncatedError) as info:
        decoder.feed_eof()
    assert info.value.missing == LIMIT


@pytest.mark.parametrize(
    ("prefix", "declared"),
    [
        pytest.param(h("80 80 80 80 10"), 2**32, id="F3-2^32"),
        pytest.param(h("ff ff ff ff 0f"), 2**32 - 1, id="F2-2^32-1"),
        pytest.param(h("80 80 80 80 80 01"), 2**35, id="2^35"),
    ],
)
def test_huge_limit_does_not_truncate_a_large_declared_length(prefix: bytes, declared: int) -> None:
    """F3 with a limit above 2**32: the length is neither wrapped nor refused, the body awaited."""
    decoder = FrameDecoder(max_frame_size=2**40)
    decoder.feed(prefix + b"abc")
    assert decoder.next_frame() is None
    assert decoder.frame_in_progress
    assert decoder.buffered == len(prefix) + 3
    assert window_capacity(decoder) < 64 * KiB  # nothing reserved from the declared length
    with pytest.raises(TruncatedError) as info:
        decoder.feed_eof()
    assert info.value.offset == 0
    assert info.value.missing == declared - 3


# A limit near sys.maxsize is valid (``max_frame_size`` accepts [0, sys.maxsize]). The
# checks run in a child process because a wrong answer here can be a segfault.
HUGE_DECLARED = [
    pytest.param(sys.maxsize - 9, id="maxsize-9"),
    pytest.param(sys.maxsize - 8, id="maxsize-8"),
    pytest.param(sys.maxsize, id="maxsize"),
]


@pytest.mark.parametrize("declared", HUGE_DECLARED)
def test_declared_length_near_maxsize_waits_for_its_body(declared: int) -> None:
    script = f"""
import sys
from codec import FrameDecoder, varint
from codec.errors import TruncatedError
declared = {declared}
decoder = FrameDecoder(max_frame_size=sys.maxsize)
prefix = varint.encode(declared)
decoder.feed(prefix + b"ab")
assert decoder.next_frame() is None, "a frame came out of 2 body bytes"
assert decoder.buffered == len(prefix) + 2, decoder.buffered
assert decoder.frame_in_progress
try:
    decoder.feed_eof()
except TruncatedError as exc:
    assert exc.missing == declared - 2, exc.missing
else:
    raise AssertionError("feed_eof returned quietly")
print("ok")
"""
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        timeout=60,
    )
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert result.stdout.strip() == "ok"


def test_non_minimal_prefix_is_accepted_by_default() -> None:
    """``81 00`` declares length 1 in two bytes; ``80 80 00`` declares 0 in three."""
    decoder = FrameDecoder()
    decoder.feed(h("81 00") + b"x" + h("80 80 00") + h("01") + b"y")
    assert drain(decoder) == [b"x", b"", b"y"]
    decoder.feed_eof()


def test_strict_accepts_minimal_prefixes() -> None:
    payloads = [b"", b"a", b"b" * 127, b"c" * 128, b"d" * 16384]
    decoder = FrameDecoder(strict=True)
    decoder.feed(b"".join(naive_frame(p) for p in payloads))
    assert drain(decoder) == payloads


# --- catalogue: EOF (F4) ---------------------------------------------------------

# (data, offset, missing) of the TruncatedError that feed_eof raises
TRUNCATED = [
    pytest.param(h("05 61 62 63"), 0, 2, id="F4-body"),
    pytest.param(OK + h("05 61 62 63"), 3, 2, id="F4-body-after-frame"),
    pytest.param(h("05"), 0, 5, id="F4-prefix-only"),
    pytest.param(h("80"), 0, None, id="F4-inside-prefix"),
    pytest.param(OK + h("80 80 80"), 3, None, id="F4-inside-long-prefix"),
    pytest.param(h("80 01") + b"x" * 100, 0, 28, id="F4-two-byte-prefix"),
]


@pytest.mark.parametrize(("data", "offset", "missing"), TRUNCATED)
def test_eof_inside_a_frame_is_truncated_error(
    data: bytes, offset: int, missing: int | None
) -> None:
    decoder = FrameDecoder()
    decoder.feed(data)
    with pytest.raises(TruncatedError) as info:
        decoder.feed_eof()
    assert info.value.offset == offset
    assert info.value.missing == missing


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty-stream"),
        pytest.param(OK, id="one-frame"),
        pytest.param(OK + h("00") + OK, id="three-frames"),
    ],
)
def test_eof_at_a_frame_boundary_is_quiet(data: bytes) -> None:
    decoder = FrameDecoder()
    decoder.feed(data)
    assert decoder.feed_eof() is None
    assert drain(decoder) == drain_reference(data)
    assert decoder.next_frame() is None
    assert decoder.feed_eof() is None  # repeating it changes nothing


def drain_reference(data: bytes) -> list[bytes]:
    """Split ``data`` with google.protobuf's varint decoder (the reference)."""
    out, pos = [], 0
    while pos < len(data):
        size, pos = pb_decoder._DecodeVarint(data, pos)
        out.append(data[pos : pos + size])
        pos += size
    return out


# --- catalogue: zero-length frames (F5), progress (F6), tiny feeds (F7) ----------


def test_zero_length_frame() -> None:
    decoder = FrameDecoder()
    decoder.feed(h("00"))
    frame = decoder.next_frame()
    assert isinstance(frame, memoryview)
    assert len(frame) == 0
    assert decoder.next_frame() is None
    assert decoder.buffered == 0


def test_flood_of_zero_length_frames() -> None:
    decoder = FrameDecoder()
    decoder.feed(bytes(100_000))
    count = 0
    for frame in decoder:
        assert len(frame) == 0
        count += 1
    assert count == 100_000
    assert decoder.buffered == 0
    decoder.feed_eof()


def test_frame_in_progress_and_buffered() -> None:
    decoder = FrameDecoder()
    assert not decoder.frame_in_progress
    assert decoder.buffered == 0
    decoder.feed(h("80"))  # half of the 2-byte prefix of a 128-byte frame
    assert decoder.frame_in_progress
    assert decoder.buffered == 1
    assert decoder.next_frame() is None
    decoder.feed(h("01") + b"x" * 100)
    assert decoder.frame_in_progress
    assert decoder.buffered == 102
    assert decoder.next_frame() is None
    decoder.feed(b"x" * 28 + h("02") + b"y")
    assert not decoder.frame_in_progress  # complete, not yet read
    assert decoder.buffered == 132
    assert bytes(decoder.next_frame()) == b"x" * 128
    assert decoder.frame_in_progress  # the second frame has started
    assert decoder.buffered == 2
    decoder.feed(b"y")
    assert bytes(decoder.next_frame()) == b"yy"
    assert not decoder.frame_in_progress
    assert decoder.buffered == 0


def test_stalled_large_frame_holds_only_what_was_received() -> None:
    """F6/F2: a 4 MiB prefix and a trickle of body bytes reserve nothing from the length."""
    decoder = FrameDecoder()
    decoder.feed(h("80 80 80 02"))
    for _ in range(100):
        decoder.feed(b"z")
    assert decoder.frame_in_progress
    assert decoder.buffered == 104
    assert window_capacity(decoder) < 64 * KiB


def test_many_one_byte_feeds_keep_the_window_bounded() -> None:
    """F7: a 64 KiB frame fed one byte at a time; the window tracks what was received."""
    size = 64 * KiB
    stream = naive_frame(bytes(range(256)) * (size // 256))
    decoder = FrameDecoder()
    for i in range(len(stream) - 1):
        decoder.feed(stream[i : i + 1])
        assert decoder.buffered == i + 1
        if i % 4096 == 0:
            assert decoder.next_frame() is None
            assert window_capacity(decoder) < 4 * size
    assert window_capacity(decoder) < 4 * size
    decoder.feed(stream[-1:])
    frame = decoder.next_frame()
    assert bytes(frame) == stream[3:]
    assert len(frame.obj) < 4 * size
    del frame
    assert decoder.buffered == 0


@pytest.mark.parametrize("hold", [False, True])
def test_window_shrinks_back_after_a_large_frame(hold: bool) -> None:
    """A window that grew for one large frame does not keep that memory for small ones."""
    decoder = FrameDecoder()
    big = b"B" * (2 * MiB)
    decoder.feed(naive_frame(big))
    view = decoder.next_frame()
    assert bytes(view) == big
    if not hold:
        del view
    decoder.feed(OK)
    assert drain(decoder) == [b"ok"]
    assert window_capacity(decoder) <= 128 * KiB
    if hold:
        assert bytes(view) == big


@pytest.mark.parametrize("message_type", [None, Blob], ids=["raw", "parsed"])
def test_shrink_gives_back_the_window_of_a_large_frame(message_type: Any) -> None:
    """Once a large frame is taken, shrink() gives its memory back without a next read.

    An idle connection gets no next read: it kept twice its largest frame.
    """
    big = Blob(data=b"B" * (2 * MiB)).SerializeToString()
    small = Blob(data=b"small").SerializeToString()
    stream = naive_frame(big) + naive_frame(small)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        decoder = FrameDecoder(message_type=message_type)
        decoder.feed(stream)
        large = decoder.next_frame()
        assert decoder.buffered == len(naive_frame(small))
        if message_type is None:
            assert bytes(large) == big  # the large frame's view outlives the cut
        else:
            assert large == Blob(data=b"B" * (2 * MiB))
        del large
        decoder.shrink()
        last = decoder.next_frame()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert last == (small if message_type is None else Blob(data=b"small"))
    assert kept < 256 * KiB  # the decoder, the last frame, and no 2 MiB window


def test_window_in_steady_use_is_not_cut_back() -> None:
    """Frames of 64 KiB read 64 KiB at a time, shrink() after each read: one window throughout.

    Nothing is cut back and grown again in turn (as codec.aio reads).
    """
    stream = naive_frame(bytes(64 * KiB)) * 40
    decoder = FrameDecoder()
    capacities = []
    pos = 0
    while pos < len(stream):
        with decoder.get_buffer(-1) as room:
            size = min(len(room), len(stream) - pos)
            room[:size] = stream[pos : pos + size]
        decoder.buffer_updated(size)
        pos += size
        capacities += [len(frame.obj) for frame in decoder]
        decoder.shrink()
    assert len(capacities) == 40
    assert len(set(capacities[2:])) == 1  # after the first reads grew it


def test_no_shrink_under_an_offered_receive_buffer() -> None:
    """Bytes written into a get_buffer() view land in the stream, shrink() called meanwhile."""
    decoder = FrameDecoder()
    decoder.feed(naive_frame(b"B" * (2 * MiB)) + OK)
    room = decoder.get_buffer(16)
    room[:3] = naive_frame(b"hi")
    assert len(decoder.next_frame()) == 2 * MiB
    decoder.shrink()
    del room
    decoder.buffer_updated(3)
    assert drain(decoder) == [b"ok", b"hi"]


# --- I2: poisoning ------------------------------------------------------------------

# (decoder kwargs, stream, call feed_eof, frames handed out before the error, error class)
POISONERS = [
    pytest.param({}, OK + h("81 80 80 02"), False, [b"ok"], FrameTooLargeError, id="too-large"),
    pytest.param({}, h("80" * 11), False, [], VarintError, id="varint"),
    pytest.param({"strict": True}, OK + h("81 00"), False, [b"ok"], VarintError, id="strict"),
    pytest.param({}, OK + OK + h("05 61"), True, [b"ok", b"ok"], TruncatedError, id="eof-body"),
    pytest.param({}, OK + h("80"), True, [b"ok"], TruncatedError, id="eof-prefix"),
    pytest.param(
        {"message_type": Sample},
        SAMPLE_FRAME + h("01 ff"),
        False,
        [sample()],
        DecodeError,
        id="bad-message",
    ),
]


CALLS: list[tuple[str, Callable[[FrameDecoder], object]]] = [
    ("feed", lambda d: d.feed(b"\x00")),
    ("feed-empty", lambda d: d.feed(b"")),
    ("get_buffer", lambda d: d.get_buffer(16)),
    ("buffer_updated", lambda d: d.buffer_updated(0)),
    ("next_frame", lambda d: d.next_frame()),
    ("feed_eof", lambda d: d.feed_eof()),
]


@pytest.mark.parametrize(("kwargs", "data", "eof", "before", "error"), POISONERS)
def test_error_poisons_the_decoder(
    kwargs: dict[str, Any], data: bytes, eof: bool, before: list[Any], error: type[CodecError]
) -> None:
    # Read nothing before the error: the frames before it come out afterwards.
    decoder = FrameDecoder(**kwargs)
    try:
        decoder.feed(data)
        if eof:
            decoder.feed_eof()
    except CodecError as exc:
        first: CodecError | None = exc
    else:
        first = None
    frames = []
    try:
        while (frame := decoder.next_frame()) is not None:
            frames.append(bytes(frame) if isinstance(frame, memoryview) else frame)
        raise AssertionError("no error")
    except CodecError as exc:
        err = exc
    assert frames == before
    assert type(err) is error
    assert first is None or first is err
    assert not decoder.frame_in_progress
    for calls in (CALLS, CALLS[::-1], CALLS):
        for _name, call in calls:
            with pytest.raises(error) as info:
                call(decoder)
            assert info.value is err


def _deliver(decoder: FrameDecoder, data: bytes, way: str) -> None:
    if way == "feed":
        decoder.feed(data)
    elif way == "get_buffer":
        decoder.get_buffer(len(data))[: len(data)] = data
        decoder.buffer_updated(len(data))
    else:
        for i in range(len(data)):
            decoder.feed(data[i : i + 1])


@pytest.mark.parametrize("way", ["feed", "get_buffer", "byte-at-a-time"])
@pytest.mark.parametrize(
    ("kwargs", "bad", "error"),
    [
        pytest.param({}, varint.encode(2**40), FrameTooLargeError, id="too-large"),
        pytest.param({"max_frame_size": 2}, h("03"), FrameTooLargeError, id="limit-plus-1"),
        pytest.param({"strict": True}, h("81 00"), VarintError, id="strict"),
        pytest.param({}, h("80" * 9 + "02"), VarintError, id="overflow"),
    ],
)
def test_prefix_behind_frames_not_taken_is_checked_on_arrival(
    kwargs: dict[str, Any], bad: bytes, error: type[DecodeError], way: str
) -> None:
    """O3: complete frames not taken yet do not defer the check of the prefix behind them.

    The bad prefix poisons the decoder when it arrives: no byte more is
    accepted, the frames before it still come out, then the error.
    """
    decoder = FrameDecoder(**kwargs)
    before = naive_frame(b"a") + naive_frame(b"bc")
    _deliver(decoder, before, way)
    _deliver(decoder, bad, way)  # nothing taken yet, so nothing raised yet
    with pytest.raises(error) as info:
        decoder.feed(b"x" * 100_000)
    err = info.value
    assert err.offset == len(before)
    if isinstance(err, FrameTooLargeError):
        assert err.size == varint.decode(bad)[0]
    assert decoder.buffered <= len(before) + len(bad)
    assert not decoder.frame_in_progress
    assert bytes(decoder.next_frame()) == b"a"
    assert bytes(decoder.next_frame()) == b"bc"
    for call in (lambda: decoder.next_frame(), lambda: decoder.feed_eof()):
        with pytest.raises(error) as again:
            call()
        assert again.value is err


class _Broken:
    """A message type whose parser fails for a reason that is not the input's fault."""

    failure: BaseException = IndexError("a bug in the parser")

    @classmethod
    def FromString(cls, data: Any) -> Any:
        raise cls.failure


@pytest.mark.parametrize(
    "failure", [IndexError("a bug"), MemoryError(), RecursionError("no stack left")]
)
def test_parser_failures_that_are_no_verdict_propagate(
    failure: BaseException, monkeypatch: pytest.MonkeyPatch
) -> None:
    """O2: only decode errors become DecodeError; a bug or MemoryError is not the frame's fault."""
    monkeypatch.setattr(_Broken, "failure", failure)
    decoder = FrameDecoder(message_type=_Broken)
    decoder.feed(naive_frame(b"a") + naive_frame(b"b"))
    with pytest.raises(type(failure)) as info:
        decoder.next_frame()
    assert info.value is failure
    with pytest.raises(type(failure)):  # not poisoned: the next frame is parsed in turn
        decoder.next_frame()
    assert decoder.next_frame() is None


def test_truncation_keeps_complete_frames_readable() -> None:
    """feed_eof reports the truncation at once; the two frames before it still come out."""
    decoder = FrameDecoder()
    decoder.feed(naive_frame(b"first") + naive_frame(b"second") + h("05 61 62 63"))
    with pytest.raises(TruncatedError) as info:
        decoder.feed_eof()
    err = info.value
    assert (err.offset, err.missing) == (13, 2)
    assert bytes(decoder.next_frame()) == b"first"
    with pytest.raises(TruncatedError) as again:
        decoder.feed(b"x")  # no more input, even before the frames are read
    assert again.value is err
    assert bytes(decoder.next_frame()) == b"second"
    for _ in range(3):
        with pytest.raises(TruncatedError) as again:
            decoder.next_frame()
        assert again.value is err


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda d: d.feed(b"x"), id="feed"),
        pytest.param(lambda d: d.feed(b""), id="feed-empty"),
        pytest.param(lambda d: d.get_buffer(1), id="get_buffer"),
        pytest.param(lambda d: d.buffer_updated(0), id="buffer_updated"),
    ],
)
def test_input_after_feed_eof_is_runtime_error(call: Callable[[FrameDecoder], object]) -> None:
    decoder = FrameDecoder()
    decoder.feed(OK)
    decoder.feed_eof()
    with pytest.raises(RuntimeError):
        call(decoder)
    assert drain(decoder) == [b"ok"]  # the frames already received are still there
    assert decoder.feed_eof() is None


# --- round trips and interop ---------------------------------------------------------

payloads = st.lists(
    st.one_of(st.binary(max_size=200), st.binary(min_size=1 * KiB, max_size=6 * KiB)),
    max_size=20,
)


@given(payloads)
def test_write_then_decode_round_trip(items: list[bytes]) -> None:
    encoder = FrameEncoder()
    for item in items:
        written = encoder.write(item)
        assert written == len(naive_frame(item))
    stream = bytes(encoder.getbuffer())
    assert len(encoder) == len(stream)
    assert stream == b"".join(naive_frame(p) for p in items)  # minimal prefixes
    decoder = FrameDecoder()
    decoder.feed(stream)
    assert drain(decoder) == items
    decoder.feed_eof()


@given(payloads)
def test_naive_stream_decodes(items: list[bytes]) -> None:
    decoder = FrameDecoder()
    decoder.feed(b"".join(naive_frame(p) for p in items))
    assert drain(decoder) == items
    decoder.feed_eof()


@given(payloads)
def test_encoder_output_splits_with_protobuf_varint(items: list[bytes]) -> None:
    encoder = FrameEncoder()
    for item in items:
        encoder.write(item)
    assert drain_reference(bytes(encoder.getbuffer())) == items


@given(payloads)
def test_encode_frame_into_round_trip(items: list[bytes]) -> None:
    buffer = bytearray()
    end = 0
    for item in items:
        end = encode_frame_into(item, buffer)
        assert end == len(buffer)
    assert bytes(buffer) == b"".join(naive_frame(p) for p in items)


samples = st.builds(
    Sample,
    ts_ns=st.integers(0, 2**64 - 1),
    scope_id=st.integers(0, 2**32 - 1),
    value=st.integers(-(2**63), 2**63 - 1),
    name=st.text(st.characters(exclude_categories=("Cs",)), max_size=40),
)


@given(st.lists(samples, max_size=20))
def test_messages_round_trip(messages: list[Any]) -> None:
    encoder = FrameEncoder()
    for message in messages:
        assert encoder.encode(message) == len(naive_frame(message.SerializeToString()))
    stream = bytes(encoder.getbuffer())
    assert stream == b"".join(naive_frame(m.SerializeToString()) for m in messages)
    decoder = FrameDecoder(message_type=Sample)
    decoder.feed(stream)
    decoded = list(decoder)
    assert all(type(m) is Sample for m in decoded)
    assert decoded == messages


@given(st.lists(samples, max_size=10))
def test_naive_message_stream_decodes_to_messages(messages: list[Any]) -> None:
    decoder = FrameDecoder(message_type=Sample)
    decoder.feed(b"".join(naive_frame(m.SerializeToString()) for m in messages))
    assert list(decoder) == messages


def test_iteration_stops_at_an_incomplete_frame() -> None:
    decoder = FrameDecoder()
    decoder.feed(OK + OK + h("05 61"))
    assert [bytes(f) for f in decoder] == [b"ok", b"ok"]
    assert list(decoder) == []
    decoder.feed(b"bcde")
    assert [bytes(f) for f in decoder] == [b"abcde"]


# --- encode_frame_into -------------------------------------------------------------

# (initial buffer, payload, offset, expected buffer)
INTO = [
    pytest.param(b"", b"ab", -1, b"\x02ab", id="append-empty"),
    pytest.param(b"xyz", b"ab", -1, b"xyz\x02ab", id="append"),
    pytest.param(b"xyz", b"ab", 3, b"xyz\x02ab", id="offset-at-end"),
    pytest.param(b"0123456789", b"ab", 0, b"\x02ab", id="overwrite-shrinks"),
    pytest.param(b"0123456789", b"ab", 4, b"0123\x02ab", id="overwrite-middle-shrinks"),
    pytest.param(b"0123", b"abcdef", 2, b"01\x06abcdef", id="overwrite-grows"),
    pytest.param(b"0123", b"", 1, b"0\x00", id="empty-payload"),
    pytest.param(b"-", b"q" * 128, 1, b"-\x80\x01" + b"q" * 128, id="two-byte-prefix"),
    pytest.param(b"0123", b"ab", 4, b"0123\x02ab", id="offset-len"),
]


@pytest.mark.parametrize(("initial", "payload", "offset", "expected"), INTO)
def test_encode_frame_into(initial: bytes, payload: bytes, offset: int, expected: bytes) -> None:
    buffer = bytearray(initial)
    end = encode_frame_into(payload, buffer, offset)
    assert end == len(expected)
    assert bytes(buffer) == expected


def test_encode_frame_into_message() -> None:
    message = sample()
    buffer = bytearray(b"head")
    end = encode_frame_into(message, buffer)
    assert bytes(buffer) == b"head" + naive_frame(message.SerializeToString())
    assert end == len(buffer)


@pytest.mark.parametrize(
    "target",
    [
        pytest.param(b"", id="bytes"),
        pytest.param(memoryview(bytearray(8)), id="memoryview"),
        pytest.param(np.zeros(8, dtype=np.uint8), id="numpy"),
        pytest.param([], id="list"),
    ],
)
def test_encode_frame_into_needs_a_bytearray(target: object) -> None:
    with pytest.raises(TypeError):
        encode_frame_into(b"ab", target)  # type: ignore[arg-type]


@pytest.mark.parametrize("offset", [-2, -100, 6, 1000])
def test_encode_frame_into_bad_offset(offset: int) -> None:
    buffer = bytearray(b"01234")
    with pytest.raises(ValueError):
        encode_frame_into(b"ab", buffer, offset)
    assert buffer == b"01234"


@pytest.mark.parametrize(
    ("payload", "offset"),
    [
        pytest.param(b"x" * 11, -1, id="append"),
        pytest.param(b"x" * 11, 0, id="overwrite"),
        pytest.param(Blob(data=b"x" * 10), 2, id="message"),
    ],
)
def test_encode_frame_into_over_limit_leaves_buffer(payload: Any, offset: int) -> None:
    buffer = bytearray(b"01234")
    with pytest.raises(FrameTooLargeError) as info:
        encode_frame_into(payload, buffer, offset, max_frame_size=10)
    assert info.value.limit == 10
    assert info.value.size > 10
    assert buffer == b"01234"


@pytest.mark.parametrize("payload", [pytest.param("text", id="str"), pytest.param(5, id="int")])
def test_non_buffer_payload_is_type_error(payload: object) -> None:
    encoder = FrameEncoder()
    with pytest.raises(TypeError):
        encoder.write(payload)
    assert len(encoder) == 0


# --- payload types -------------------------------------------------------------------

RAW = bytes(range(256)) * 3

# (payload factory, the bytes it frames as)
PAYLOAD_TYPES = [
    pytest.param(lambda: RAW, RAW, id="bytes"),
    pytest.param(lambda: bytearray(RAW), RAW, id="bytearray"),
    pytest.param(lambda: memoryview(RAW), RAW, id="memoryview"),
    pytest.param(lambda: memoryview(RAW)[10:20], RAW[10:20], id="memoryview-slice"),
    pytest.param(lambda: memoryview(bytearray(RAW)).toreadonly(), RAW, id="memoryview-readonly"),
    pytest.param(lambda: np.frombuffer(RAW, dtype=np.uint8), RAW, id="numpy-uint8"),
    pytest.param(
        lambda: np.arange(100, dtype=np.float64),
        np.arange(100, dtype=np.float64).tobytes(),
        id="numpy-float64",
    ),
    pytest.param(
        lambda: np.arange(12, dtype=np.int32).reshape(3, 4),
        np.arange(12, dtype=np.int32).tobytes(),
        id="numpy-2d",
    ),
    pytest.param(
        lambda: memoryview(np.arange(6, dtype=np.uint16)),
        np.arange(6, dtype=np.uint16).tobytes(),
        id="memoryview-itemsize-2",
    ),
    pytest.param(lambda: b"", b"", id="empty-bytes"),
    pytest.param(lambda: np.zeros(0, dtype=np.float64), b"", id="empty-numpy"),
]


@pytest.mark.parametrize(("make", "raw"), PAYLOAD_TYPES)
def test_payload_types_write(make: Callable[[], Any], raw: bytes) -> None:
    encoder = FrameEncoder()
    payload = make()
    assert encoder.write(payload) == len(naive_frame(raw))
    assert bytes(encoder.getbuffer()) == naive_frame(raw)


@pytest.mark.parametrize(("make", "raw"), PAYLOAD_TYPES)
def test_payload_types_encode_frame_into(make: Callable[[], Any], raw: bytes) -> None:
    buffer = bytearray(b"#")
    assert encode_frame_into(make(), buffer) == 1 + len(naive_frame(raw))
    assert bytes(buffer) == b"#" + naive_frame(raw)


@pytest.mark.parametrize(("make", "raw"), PAYLOAD_TYPES)
def test_payload_types_encode_as_write_does(make: Callable[[], Any], raw: bytes) -> None:
    """One rule for every entry point: a bytes-like object given as a message is its payload."""
    encoder = FrameEncoder()
    assert encoder.encode(make()) == len(naive_frame(raw))
    sink = io.BytesIO()
    assert codec.write_frames(sink, [make()]) == 1
    assert bytes(encoder.getbuffer()) == sink.getvalue() == naive_frame(raw)


def test_float64_array_is_framed_as_its_raw_bytes() -> None:
    array = np.linspace(0.0, 1.0, 1000)
    encoder = FrameEncoder()
    encoder.write(array)
    decoder = FrameDecoder()
    decoder.feed(encoder.getbuffer())
    frame = decoder.next_frame()
    assert len(frame) == array.nbytes == 8000
    np.testing.assert_array_equal(np.frombuffer(frame, dtype=np.float64), array)


@pytest.mark.parametrize(("make", "raw"), PAYLOAD_TYPES)
def test_feed_accepts_every_payload_type(make: Callable[[], Any], raw: bytes) -> None:
    """The decoder takes any contiguous buffer; the bytes of ``raw`` are read as a stream."""
    decoder = FrameDecoder()
    decoder.feed(naive_frame(b"head"))
    decoder.feed(make())
    assert decoder.buffered == 5 + len(raw)
    assert bytes(decoder.next_frame()) == b"head"


NON_CONTIGUOUS = [
    pytest.param(lambda: memoryview(b"abcdefgh")[::2], id="memoryview-strided"),
    pytest.param(lambda: np.zeros((4, 4), dtype=np.uint8)[:, 0], id="numpy-column"),
]


@pytest.mark.parametrize("make", NON_CONTIGUOUS)
def test_non_contiguous_payload_is_buffer_error(make: Callable[[], Any]) -> None:
    """Both builds refuse a non-contiguous payload the same way, and write nothing."""
    encoder = FrameEncoder()
    encoder.write(b"kept")
    with pytest.raises(BufferError):
        encoder.write(make())
    assert bytes(encoder.getbuffer()) == naive_frame(b"kept")
    buffer = bytearray(b"01")
    with pytest.raises(BufferError):
        encode_frame_into(make(), buffer)
    assert buffer == b"01"
    decoder = FrameDecoder()
    with pytest.raises(BufferError):
        decoder.feed(make())
    assert decoder.buffered == 0


# --- encoder errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda e: e.write(b"x" * 101), id="write"),
        pytest.param(lambda e: e.write(np.zeros(13, dtype=np.float64)), id="write-numpy"),
        pytest.param(lambda e: e.encode(Blob(data=b"x" * 99)), id="encode"),
        pytest.param(lambda e: e.write(b"x" * 10_000), id="write-needs-growth"),
    ],
)
def test_over_limit_write_leaves_the_encoder_as_it_was(call: Callable[[FrameEncoder], int]) -> None:
    encoder = FrameEncoder(max_frame_size=100, capacity=64)
    encoder.write(b"a" * 100)  # exactly at the limit
    encoder.write(b"b")
    before, length, capacity = bytes(encoder.getbuffer()), len(encoder), encoder.capacity
    with pytest.raises(FrameTooLargeError) as info:
        call(encoder)
    assert info.value.limit == 100
    assert info.value.size > 100
    assert isinstance(info.value, EncodeError)
    assert bytes(encoder.getbuffer()) == before
    assert len(encoder) == length
    assert encoder.capacity == capacity
    encoder.write(b"c")  # still usable
    assert bytes(encoder.getbuffer()) == before + naive_frame(b"c")


class _NotSerializable:
    """Looks like a message, but serializing fails the way protobuf fails (proto2 required)."""

    def SerializeToString(self) -> bytes:
        raise ProtobufEncodeError("Message is missing required fields: id")


@pytest.mark.parametrize(
    "message",
    [
        pytest.param(3, id="int"),
        pytest.param(None, id="none"),
        pytest.param(object(), id="object"),
        pytest.param("text", id="str"),
    ],
)
def test_encode_of_a_non_message_is_type_error(message: object) -> None:
    encoder = FrameEncoder()
    encoder.encode(sample())
    before = bytes(encoder.getbuffer())
    expected = f"cannot encode {type(message).__name__}: expected a struct, a protobuf message"
    with pytest.raises(TypeError, match=expected):
        encoder.encode(message)
    assert bytes(encoder.getbuffer()) == before
    buffer = bytearray(b"01")
    with pytest.raises(TypeError, match=expected):
        encode_frame_into(message, buffer)
    assert buffer == b"01"


def test_protobuf_encode_error_is_encode_error() -> None:
    encoder = FrameEncoder()
    encoder.encode(sample())
    before = bytes(encoder.getbuffer())
    with pytest.raises(EncodeError, match="missing required fields: id") as info:
        encoder.encode(_NotSerializable())
    assert type(info.value) is EncodeError  # codec's own, which is also protobuf's EncodeError
    assert isinstance(info.value.__cause__, ProtobufEncodeError)
    assert bytes(encoder.getbuffer()) == before


def test_encode_frame_into_serialize_error_leaves_buffer() -> None:
    buffer = bytearray(b"01")
    with pytest.raises(EncodeError):
        encode_frame_into(_NotSerializable(), buffer, 0)
    assert buffer == b"01"


@pytest.mark.parametrize("cls", [FrameEncoder, FrameDecoder])
@pytest.mark.parametrize("limit", [-1, sys.maxsize + 1])
def test_limit_out_of_range_is_value_error(cls: type, limit: int) -> None:
    with pytest.raises(ValueError):
        cls(limit)


def test_limit_is_reported() -> None:
    assert FrameEncoder().max_frame_size == DEFAULT_MAX_FRAME_SIZE == 4 * MiB
    assert FrameDecoder(17).max_frame_size == 17
    assert FrameEncoder(0).max_frame_size == 0


def test_encoder_capacity_and_clear() -> None:
    encoder = FrameEncoder(capacity=16)
    assert encoder.capacity == 16
    encoder.write(b"x" * 100)
    grown = encoder.capacity
    assert grown >= 101
    encoder.clear()
    assert len(encoder) == 0
    assert bytes(encoder.getbuffer()) == b""
    assert encoder.capacity == grown  # clear keeps the capacity
    with pytest.raises(ValueError):
        FrameEncoder(capacity=-1)


def test_encoder_shrink_gives_back_capacity_and_keeps_pending_frames() -> None:
    encoder = FrameEncoder()
    encoder.write(b"x" * MiB)
    encoder.clear()
    encoder.write(b"abc")
    encoder.shrink()
    assert encoder.capacity == 4096
    encoder.shrink(2)  # never below the pending bytes
    assert encoder.capacity == 4
    assert bytes(encoder.getbuffer()) == b"\x03abc"
    encoder.shrink(100)  # nor above the capacity
    assert encoder.capacity == 4
    with encoder.getbuffer(), pytest.raises(BufferError):
        encoder.shrink(4)
    with pytest.raises(ValueError):
        encoder.shrink(-1)
    encoder.write(b"y" * 10_000)
    assert bytes(encoder.getbuffer()) == b"\x03abc" + naive_frame(b"y" * 10_000)


# --- buffer safety (M1, M5, M6) ----------------------------------------------------


def test_live_getbuffer_view_blocks_clear_and_growth() -> None:
    encoder = FrameEncoder(capacity=16)
    encoder.write(b"abc")
    view = encoder.getbuffer()
    assert view.readonly
    with pytest.raises(BufferError):
        encoder.clear()
    with pytest.raises(BufferError):
        encoder.write(b"x" * 100)  # needs growth
    assert len(encoder) == 4
    assert bytes(view) == b"\x03abc"
    encoder.write(b"y")  # fits in place: allowed, and the view does not change
    assert bytes(view) == b"\x03abc"
    del view
    encoder.write(b"x" * 100)
    assert bytes(encoder.getbuffer()) == b"\x03abc\x01y\x64" + b"x" * 100
    encoder.clear()
    assert len(encoder) == 0


def test_released_getbuffer_view_unblocks() -> None:
    encoder = FrameEncoder(capacity=8)
    encoder.write(b"abc")
    with encoder.getbuffer() as view:
        assert bytes(view) == b"\x03abc"
        with pytest.raises(BufferError):
            encoder.clear()
    encoder.write(b"z" * 64)
    encoder.clear()


def test_getbuffer_view_is_read_only() -> None:
    encoder = FrameEncoder()
    encoder.write(b"abc")
    view = encoder.getbuffer()
    with pytest.raises(TypeError):
        view[0] = 0
    del view


def _push(decoder: FrameDecoder, data: bytes, via: str) -> None:
    if via == "feed":
        decoder.feed(data)
        return
    with decoder.get_buffer(len(data)) as view:
        view[: len(data)] = data
    decoder.buffer_updated(len(data))


@pytest.mark.parametrize("via", ["feed", "buffer"])
def test_held_frame_views_survive_later_feeds(via: str) -> None:
    """M5: keep frame views, feed far more (compaction, growth, shrinking), read them back."""
    decoder = FrameDecoder()
    held: list[tuple[memoryview, bytes]] = []
    for round_ in range(40):
        # Each round's bytes differ, so a view overwritten in place would show it.
        payloads = [bytes([(round_ * 7 + i) % 251]) * (100 + 37 * i) for i in range(20)]
        stream = b"".join(naive_frame(p) for p in payloads)
        half = len(stream) // 2 + 3
        _push(decoder, stream[:half], via)
        frames = drain(decoder) if round_ % 5 else []
        if round_ % 5 == 0:  # keep every frame view of this round
            while (frame := decoder.next_frame()) is not None:
                held.append((frame, payloads[len(frames)]))
                frames.append(bytes(frame))
        _push(decoder, stream[half:], via)
        frames += drain(decoder)
        assert frames == payloads
        if round_ % 10 == 9:  # a large frame makes the window grow, then shrink back
            big = bytes([round_]) * (300 * KiB)
            _push(decoder, naive_frame(big), via)
            frame = decoder.next_frame()
            held.append((frame, big))
    for view, payload in held:
        assert bytes(view) == payload


def test_held_frame_view_survives_a_frame_that_reuses_the_same_window_position() -> None:
    decoder = FrameDecoder()
    decoder.feed(naive_frame(b"A" * 1000))
    first = decoder.next_frame()
    decoder.feed(naive_frame(b"B" * 1000))  # would land where the first frame was, if compacted
    second = decoder.next_frame()
    assert bytes(first) == b"A" * 1000
    assert bytes(second) == b"B" * 1000


def test_get_buffer_view() -> None:
    decoder = FrameDecoder()
    view = decoder.get_buffer(10)
    assert len(view) == 10
    assert not view.readonly
    view[:5] = naive_frame(b"abcd")
    del view
    decoder.buffer_updated(5)
    assert drain(decoder) == [b"abcd"]
    with decoder.get_buffer(0) as view:  # no size hint: a receive chunk
        assert len(view) == 64 * KiB
    with decoder.get_buffer(-1) as view:
        assert len(view) == 64 * KiB
    with decoder.get_buffer(1 * MiB) as view:
        assert len(view) == 1 * MiB
    decoder.buffer_updated(0)
    assert decoder.buffered == 0


@pytest.mark.parametrize(
    ("hint", "extra"),
    [
        pytest.param(10, 1, id="one-more-than-the-view"),
        pytest.param(10, 100, id="inside-the-window-beyond-the-view"),
        pytest.param(1, 10**9, id="beyond-the-window"),
        pytest.param(None, 5, id="no-get_buffer"),
    ],
)
def test_buffer_updated_more_than_the_view_is_value_error(hint: int | None, extra: int) -> None:
    """Only bytes written into the last ``get_buffer`` view may be taken (asyncio's contract).

    Taking more would read bytes nobody wrote: zeros, or stale bytes of frames
    already consumed, replayed as if they had been received again.
    """
    decoder = FrameDecoder()
    decoder.feed(naive_frame(b"ab"))
    assert drain(decoder) == [b"ab"]
    size = 0
    if hint is not None:
        with decoder.get_buffer(hint) as view:
            size = len(view)
    with pytest.raises(ValueError):
        decoder.buffer_updated(size + extra)
    assert decoder.buffered == 0
    assert decoder.next_frame() is None


@pytest.mark.parametrize(
    "between",
    [
        pytest.param(lambda d: d.buffer_updated(4), id="buffer_updated-again"),
        pytest.param(lambda d: d.feed(b"xy"), id="feed"),
    ],
)
def test_one_get_buffer_view_is_taken_once(between: Callable[[FrameDecoder], None]) -> None:
    """After the view's bytes were taken (or ``feed`` moved the window), none remain given out."""
    decoder = FrameDecoder()
    with decoder.get_buffer(10) as view:
        view[:4] = h("03 61 62 63")
    between(decoder)
    buffered = decoder.buffered
    with pytest.raises(ValueError):
        decoder.buffer_updated(1)
    assert decoder.buffered == buffered
    decoder.buffer_updated(0)


def test_buffer_updated_negative_is_value_error() -> None:
    decoder = FrameDecoder()
    with decoder.get_buffer(8):
        pass
    with pytest.raises(ValueError):
        decoder.buffer_updated(-1)
    assert decoder.buffered == 0


def test_empty_feeds_change_nothing() -> None:
    """M6: ``b""`` and other empty buffers, between and inside frames."""
    decoder = FrameDecoder()
    decoder.feed(b"")
    assert decoder.buffered == 0
    assert not decoder.frame_in_progress
    decoder.feed(h("03") + b"a")
    for empty in (b"", bytearray(), memoryview(b""), np.zeros(0, dtype=np.uint8)):
        decoder.feed(empty)
        assert decoder.buffered == 2
        assert decoder.next_frame() is None
    decoder.buffer_updated(0)
    decoder.feed(b"bc")
    decoder.feed(b"")
    assert drain(decoder) == [b"abc"]
    decoder.feed(b"")
    decoder.feed_eof()


def test_empty_payloads_and_messages() -> None:
    encoder = FrameEncoder()
    assert encoder.write(b"") == 1
    assert encoder.encode(Sample()) == 1
    assert encoder.write(memoryview(b"")) == 1
    assert bytes(encoder.getbuffer()) == h("00 00 00")
    decoder = FrameDecoder(message_type=Sample)
    decoder.feed(encoder.getbuffer())
    assert list(decoder) == [Sample(), Sample(), Sample()]
    assert encode_frame_into(b"", bytearray()) == 1


# --- message_type and payloads that do not parse ------------------------------------

# (stream, offset of the bad frame, messages before it)
BAD_MESSAGES = [
    pytest.param(h("01 ff"), 0, [], id="invalid-tag"),
    pytest.param(SAMPLE_FRAME + h("01 ff"), len(SAMPLE_FRAME), [sample()], id="after-a-message"),
    pytest.param(h("00 03 22 01 ff"), 1, [Sample()], id="invalid-utf8-string"),
    pytest.param(h("02 0a 05"), 0, [], id="field-runs-past-frame"),
    pytest.param(h("01 08"), 0, [], id="truncated-varint-field"),
    pytest.param(h("02 0f 00"), 0, [], id="reserved-wire-type"),
]


@pytest.mark.parametrize(("data", "offset", "before"), BAD_MESSAGES)
def test_unparsable_payload_is_codec_decode_error(data: bytes, offset: int, before: list) -> None:
    decoder = FrameDecoder(message_type=Sample)
    decoder.feed(data)
    got = []
    with pytest.raises(DecodeError) as info:
        while (message := decoder.next_frame()) is not None:
            got.append(message)
    assert got == before
    assert type(info.value) is DecodeError  # codec's own, which is also protobuf's DecodeError
    assert type(info.value.__cause__) is ProtobufDecodeError  # upb's verdict, translated
    assert info.value.offset == offset
    with pytest.raises(DecodeError) as again:
        decoder.next_frame()
    assert again.value is info.value


def test_message_frames_do_not_pin_the_window() -> None:
    """Parsed frames release their view, so the window is compacted in place, not copied."""
    decoder = FrameDecoder(message_type=Sample)
    stream = SAMPLE_FRAME * 100
    decoder.feed(stream)
    assert list(decoder) == [sample()] * 100
    gc.collect()
    with decoder.get_buffer(1) as view:
        window = view.obj
    decoder.feed(stream)
    assert list(decoder) == [sample()] * 100
    with decoder.get_buffer(1) as view:
        assert view.obj is window


# --- misuse: re-entry and threads -----------------------------------------------------


SampleStruct = codec.struct(Sample)


def _frames_of(stream: bytes) -> list[bytes]:
    decoder = FrameDecoder()
    decoder.feed(stream)
    decoder.feed_eof()
    return [bytes(frame) for frame in decoder]


@pytest.mark.parametrize("action", ENCODER_REENTRY.values(), ids=list(ENCODER_REENTRY))
def test_an_encoder_reentered_while_it_encodes_a_struct_refuses(
    action: Callable[[FrameEncoder], object],
) -> None:
    """A struct value's ``__index__`` calls back into the encoder writing the struct."""
    encoder = FrameEncoder()
    encoder.write(b"before")
    value = Reentrant(7, lambda: action(encoder))
    message = unchecked(SampleStruct, scope_id=value, name="outer")
    encoder.encode(message)
    assert value.outcomes  # the callback ran, and every call in it was refused
    assert set(value.outcomes) == {"FrameEncoder is already encoding"}
    assert _frames_of(bytes(encoder.getbuffer())) == [
        b"before",
        codec.encode(SampleStruct(scope_id=7, name="outer")),
    ]


@pytest.mark.parametrize("action", ENCODER_REENTRY.values(), ids=list(ENCODER_REENTRY))
def test_an_encoder_with_an_open_frame_refuses_what_would_break_it(
    action: Callable[[FrameEncoder], object],
) -> None:
    """Inside ``with encoder.frame()``, only the frame's own fields go in."""
    encoder = FrameEncoder()
    encoder.write(b"before")
    with encoder.frame() as writer:
        writer.uint32(1, 5)
        if action is ENCODER_REENTRY["a WireWriter over it"]:
            action(encoder)  # fields may come from any writer: they belong to the frame
        else:
            with pytest.raises(RuntimeError, match=r"^FrameEncoder is already encoding"):
                action(encoder)
        writer.uint32(2, 6)
    inner = b"\x08\x01" if action is ENCODER_REENTRY["a WireWriter over it"] else b""
    assert _frames_of(bytes(encoder.getbuffer())) == [b"before", b"\x08\x05" + inner + b"\x10\x06"]


def test_an_encoder_written_from_a_frames_field_callback_refuses() -> None:
    encoder = FrameEncoder()
    value = Reentrant(5, lambda: encoder.write(b"inner"))
    with encoder.frame() as writer:
        writer.uint32(1, value)
    assert value.outcomes == ["FrameEncoder is already encoding: a nested message or frame is open"]
    assert _frames_of(bytes(encoder.getbuffer())) == [b"\x08\x05"]


def _parser(action: Callable[[bytes], object], outcomes: list[str]) -> Any:
    """A ``message_type`` whose parser runs ``action(payload)`` first, noting what it raised."""

    class Parsed:
        @staticmethod
        def FromString(data: memoryview) -> bytes:
            try:
                action(bytes(data))
            except RuntimeError as exc:
                outcomes.append(str(exc))
            else:
                outcomes.append("done")
            return bytes(data)

    return Parsed


@pytest.mark.parametrize("action", DECODER_REENTRY.values(), ids=list(DECODER_REENTRY))
def test_a_decoder_reentered_from_its_parser_refuses(
    action: Callable[[FrameDecoder], object],
) -> None:
    outcomes: list[str] = []
    decoder = FrameDecoder(
        message_type=_parser(lambda payload: payload != b"cde" and action(decoder), outcomes)
    )
    decoder.feed(b"\x01a\x01b\x03")  # two frames and the start of a third
    assert list(decoder) == [b"a", b"b"]
    assert outcomes == ["FrameDecoder is already decoding"] * 2
    decoder.feed(b"cde")
    decoder.feed_eof()
    assert list(decoder) == [b"cde"]
    assert outcomes[2:] == ["done"]


def test_two_threads_on_one_encoder_lose_no_frame() -> None:
    """Every write from a second thread either raises or is in the stream, whole.

    One thread encodes structs whose value's ``__index__`` yields the GIL (the
    first waits until the other thread has tried a write, so the two overlap
    at least once); the other writes frames meanwhile. The stream must decode
    to exactly the frames whose call returned.
    """
    encoder = FrameEncoder()
    overlap = Overlap()
    written: list[object] = []

    def encoding() -> None:
        try:
            for i in range(200):
                message = unchecked(
                    SampleStruct, scope_id=Reentrant(i, overlap.pause), name=f"a{i}"
                )
                try:
                    encoder.encode(message)
                except RuntimeError as exc:
                    overlap.refused.append(str(exc))
                else:
                    written.append(codec.encode(SampleStruct(scope_id=i, name=f"a{i}")))
        finally:
            overlap.finished.set()  # the other thread stops with it

    def write(i: int) -> bytes:
        payload = b"b%d" % i
        encoder.write(payload)
        return payload

    race(encoding, lambda: overlap.tries(write, written))
    assert sorted(_frames_of(bytes(encoder.getbuffer()))) == sorted(written)
    assert overlap.refused  # the overlap arranged above
    assert set(overlap.refused) == {"FrameEncoder is already encoding"}


def test_two_threads_on_one_decoder_lose_no_frame() -> None:
    """Every whole frame fed by either thread comes out once, or its feed raised."""
    fed: list[bytes] = []
    taken: list[bytes] = []
    refused: list[str] = []
    inside, tried = threading.Event(), threading.Event()
    pausing = [True]

    def pause(payload: bytes) -> None:
        if not inside.is_set():
            inside.set()
            tried.wait(10)
        if pausing[0]:
            time.sleep(0)

    decoder = FrameDecoder(message_type=_parser(pause, []))

    def run(name: bytes) -> None:
        for i in range(300):
            payload = name + b"%d" % i
            try:
                decoder.feed(varint.encode(len(payload)) + payload)
            except RuntimeError as exc:
                refused.append(str(exc))
            else:
                fed.append(payload)
            tried.set()
            try:
                while (frame := decoder.next_frame()) is not None:
                    taken.append(frame)
            except RuntimeError as exc:
                refused.append(str(exc))

    race(lambda: run(b"a"), lambda: run(b"b"))
    pausing[0] = False
    taken.extend(decoder)
    assert sorted(taken) == sorted(fed)
    assert refused
    assert set(refused) == {"FrameDecoder is already decoding"}


# --- receive memory ---------------------------------------------------------------------


@pytest.mark.parametrize("size", [5000, 8192, 65536, 100_000, MiB])
def test_get_buffer_hands_out_no_bytes_of_freed_objects(size: int) -> None:
    """The room of a grown window is zeroed: freed objects' bytes never show through."""
    for _ in range(3):
        fill_freed_memory(0xA5)
        decoder = FrameDecoder()
        with decoder.get_buffer(size) as view:
            assert len(view) == size
            assert view.tobytes() == bytes(size)


def test_get_buffer_after_frames_holds_zeros_or_this_streams_bytes() -> None:
    """Room already used holds bytes received before; room grown into holds zeros."""
    decoder = FrameDecoder()
    decoder.feed(b"\x03\xee\xee\xee")
    assert [bytes(frame) for frame in decoder] == [b"\xee\xee\xee"]
    fill_freed_memory(0xA5)
    with decoder.get_buffer(200_000) as view:
        assert set(view.tobytes()) <= {0x00, 0x03, 0xEE}


# --- raw frames as bytes (copy=True) -------------------------------------------------


def test_copy_gives_frames_as_bytes() -> None:
    payloads = [b"abc", b"", b"x" * 300, bytes(range(256)) * 600]
    stream = b"".join(naive_frame(p) for p in payloads)
    decoder = FrameDecoder(copy=True)
    decoder.feed(stream[:7])
    first = decoder.next_frame()
    decoder.feed(stream[7:])  # the window moves in place: no frame holds a view of it
    frames = [first, *decoder]
    assert [type(f) for f in frames] == [bytes] * len(payloads)
    assert frames == payloads


def test_copy_does_not_apply_to_parsed_frames() -> None:
    decoder = FrameDecoder(message_type=Sample, copy=True)
    decoder.feed(naive_frame(sample().SerializeToString()))
    assert decoder.next_frame() == sample()


def test_message_type_is_reported_as_given() -> None:
    assert FrameDecoder().message_type is None
    assert FrameDecoder(message_type=Sample).message_type is Sample
    decoder = codec.Decoder(codec.struct(Sample))
    assert FrameDecoder(message_type=decoder).message_type is decoder


# --- one dispatch: the serializer of a protobuf class is found once -----------------


def test_messages_of_alternating_classes_are_each_serialized_by_their_own() -> None:
    messages = [sample(), Blob(data=b"\x00\x01"), sample(), Blob(data=b""), sample()]
    encoder = FrameEncoder()
    for message in messages:
        encoder.encode(message)
    expected = b"".join(naive_frame(m.SerializeToString()) for m in messages)
    assert bytes(encoder.getbuffer()) == expected
    partial = bytearray()
    for message in messages:
        encode_frame_into(message, partial, partial=True)
    assert bytes(partial) == b"".join(naive_frame(m.SerializePartialToString()) for m in messages)


def test_an_object_without_serializer_is_type_error_after_a_protobuf_message() -> None:
    class Lookalike:
        def ByteSize(self) -> int:
            return 0

    encoder = FrameEncoder()
    encoder.encode(sample())
    with pytest.raises(TypeError, match="cannot encode Lookalike: expected a struct"):
        encoder.encode(Lookalike())
    assert bytes(encoder.getbuffer()) == naive_frame(sample().SerializeToString())


def test_a_repeated_error_keeps_a_traceback_of_its_own_raise() -> None:
    """A poisoned decoder raises its error again at every call: the traceback does not grow
    with each raise (which would keep every earlier caller's frames alive)."""
    decoder = FrameDecoder()
    with pytest.raises(codec.DecodeError):
        decoder.feed(b"\xff" * 10 + b"\x01")
    depths = []
    for _ in range(5):
        with pytest.raises(codec.DecodeError) as info:
            decoder.next_frame()
        depths.append(len(traceback.extract_tb(info.value.__traceback__)))
    assert len(set(depths)) == 1, depths


def test_take_frames_hands_out_complete_frames_a_run_at_a_time() -> None:
    """Up to ``limit`` complete frames, prefixes included, in one view; a frame not yet
    complete waits; a bad prefix raises when it is reached, after the frames before it."""
    decoder = codec.FrameDecoder(max_frame_size=8)
    decoder.feed(b"\x01a\x02bc\x00\x03de")  # three frames, then one cut short
    assert bytes(decoder.take_frames(2)) == b"\x01a\x02bc"
    assert bytes(decoder.take_frames(5)) == b"\x00"
    assert bytes(decoder.take_frames(5)) == b""  # b"\x03de" lacks a byte
    decoder.feed(b"f\x09")  # completes it; then a prefix over max_frame_size
    assert bytes(decoder.take_frames(5)) == b"\x03def"
    with pytest.raises(codec.FrameTooLargeError) as caught:
        decoder.take_frames(5)
    assert caught.value.offset == 10  # after 2 + 3 + 1 + 4 bytes of frames
    with pytest.raises(ValueError, match="limit"):
        codec.FrameDecoder().take_frames(-1)


@pytest.mark.parametrize("start", [0, 1, 300, 2**40])
def test_a_decoder_fed_from_the_middle_counts_offsets_from_the_stream_start(start: int) -> None:
    """``offset``: the stream offset of the first byte fed (a part of a file, read from a
    frame in its middle). Every error counts from the whole stream's start, as a decoder
    fed the whole stream counts it."""
    tail = b"\x01b\x02cd\x80"  # two frames, then a prefix the stream cuts short
    whole = b"\x00" * start + tail if start < 1000 else None  # empty frames before it
    for take in (list, lambda decoder: [decoder.take_frames(9)]):
        decoder = codec.FrameDecoder(offset=start)
        decoder.feed(tail)
        assert b"".join(bytes(frame) for frame in take(decoder)).endswith(b"cd")
        with pytest.raises(TruncatedError) as caught:
            decoder.feed_eof()
        assert caught.value.offset == start + 5
        if whole is not None:
            oracle = codec.FrameDecoder()
            oracle.feed(whole)
            take(oracle)
            with pytest.raises(TruncatedError) as expected:
                oracle.feed_eof()
            assert expected.value.offset == caught.value.offset
    too_long = codec.FrameDecoder(max_frame_size=2, offset=start)
    too_long.feed(b"\x01a\x05")
    assert bytes(too_long.next_frame()) == b"a"
    with pytest.raises(codec.FrameTooLargeError) as large:
        too_long.next_frame()
    assert large.value.offset == start + 2
    parsed = codec.FrameDecoder(message_type=Sample, offset=start)
    parsed.feed(b"\x01\x80")  # a payload cut inside a tag
    with pytest.raises(codec.DecodeError) as bad:
        parsed.next_frame()
    assert bad.value.offset == start  # the frame at fault
    with pytest.raises(ValueError, match="offset"):
        codec.FrameDecoder(offset=-1)
    with pytest.raises(ValueError, match="past"):
        codec.FrameDecoder(offset=2**62 + 1)
    with pytest.raises(TypeError, match="offset"):
        codec.FrameDecoder(offset=1.5)  # type: ignore[call-overload]


def test_frames_end_walks_checked_frames_and_refuses_odd_views() -> None:
    """frames_end and frame_error, the decoder's prefix rules for a stream in memory."""
    from array import array

    from codec.framing import frame_error, frames_end

    stream = memoryview(b"\x01a\x02bc\x03d")
    assert frames_end(stream, 0, 10, 100, False, 100) == 5  # before the frame the end cuts
    assert frames_end(stream, 0, 1, 100, False, 100) == 2
    assert frames_end(stream, 0, 10, 100, False, 1) == 2  # once 1 byte is passed
    assert frames_end(stream, 2, 10, 1, False, 100) == 2  # a frame over the limit: stops at it
    cut = frame_error(stream, 5, 100, False, 10)
    assert (type(cut), cut.offset, cut.missing) == (TruncatedError, 15, 2)
    assert isinstance(frame_error(stream, 2, 1, False, 0), FrameTooLargeError)
    with pytest.raises(ValueError, match="is complete"):
        frame_error(stream, 0, 100, False, 0)
    with pytest.raises(ValueError, match="outside"):
        frames_end(stream, 9, 1, 100, False, 100)
    with pytest.raises(TypeError, match="flat byte"):
        frames_end(memoryview(array("i", [1, 2])), 0, 1, 100, False, 100)
