"""Hostile-input suite: every row of the bad-input catalogue through every public decode API.

The catalogue is ``docs/bad-inputs.md`` (V1-V8 varints, F1-F9 frames,
T1-T6 tags, S1-S6 structure, P1-P8 payloads, I1-I4 incremental invariants,
M1-M6 memory safety). :data:`ROWS` names every row; each has at least one
vector or dedicated test in this file (``test_every_row_has_a_vector``), even
where another test file covers it too.

Vectors are grouped by the layer their bytes belong to, and each runs through
every API of its layer, with the outcome written next to it:

* ``varint`` bytes: ``codec.varint.decode`` (the profile the vector names);
* ``stream`` bytes: ``FrameDecoder`` fed with ``feed()`` and with
  ``get_buffer()``/``buffer_updated()``, each whole and one byte at a time (all
  four must give the same frames and error), then ``feed_eof()``; with a
  schema, also ``FrameDecoder(message_type=<struct class>)``;
* ``message`` bytes (with a schema from ``tests/schemas``): ``WireReader``
  (walked as a hand-written decoder would: ``nested()`` into sub-messages and
  map entries, ``packed()`` for packed numeric fields, by the schema),
  ``codec.decode`` of the struct class, and
  ``FrameDecoder(message_type=<struct class>)`` fed the message as one frame
  (error offsets then count from the stream start: the prefix is subtracted).

An outcome is :class:`Err` (exact class; offset, ``missing`` and attributes
where given) or :class:`Ok` (a check of the result). Per-API overrides say
where an API documents another behaviour (``WireReader`` yields raw varints
and does not validate UTF-8; ``codec.decode`` reports an unclosed group and
groups nested too deep one tag later than ``WireReader``).

The dedicated tests below the matrix cover what a byte string cannot say:
amplification guards (a packed run cannot reserve more than it delivers, the
``max_elements`` budget), depth (100 accepted, 101 rejected, 100,000 levels or
group starts rejected without ``RecursionError``, quickly), memory under
hostile prefixes, slowloris and tiny-read streams, poisoning, and the
buffer-lifetime scenarios M1-M6. Everything runs in whichever build is loaded
(compiled, or ``CODEC_PURE_PYTHON=1``).
"""

from __future__ import annotations

import array
import copy
import gc
import gzip
import importlib
import io
import json
import os
import pickle
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("grpc_tools", reason="the schemas are compiled with grpcio-tools")

from google.protobuf.descriptor import FieldDescriptor as FD
from helpers.deep import map_levels, nested
from helpers.heap import peak_after_warm_up
from helpers.uninitialised import (
    UNINITIALISED_CALLS,
    acceptable,
    compiled_public_classes,
    probe,
    public_names,
    uninitialised_cases,
)
from schemas import everything_pb2, legacy_pb2

import codec
from codec import DecodeError, FrameDecoder, FrameEncoder, FrameTooLargeError
from codec.errors import DepthLimitError, TruncatedError, VarintError, WireFormatError
from codec.wire import WireReader

E = everything_pb2
L = legacy_pb2
KiB = 1024
MiB = 1024 * KiB
LIMIT = codec.DEFAULT_MAX_FRAME_SIZE

#: The catalogue, row by row, as docs/bad-inputs.md lists it: id -> the input.
ROWS: dict[str, str] = dict(
    re.findall(
        r"^\| ([A-Z]\d) \| (.+?) \|$",
        (Path(__file__).parent.parent / "docs" / "bad-inputs.md").read_text(),
        re.MULTILINE,
    )
)

#: Rows covered by the dedicated tests (filled by the ``covers`` decorator).
COVERED: dict[str, list[str]] = {}


def covers(*rows: str) -> Callable[[Any], Any]:
    def mark(test: Any) -> Any:
        for row in rows:
            assert row in ROWS, row
            COVERED.setdefault(row, []).append(test.__name__)
        return test

    return mark


def h(text: str) -> bytes:
    return bytes.fromhex(text)


def varint(value: int) -> bytes:
    return codec.varint.encode(value)


def S(cls: Any) -> Any:
    return codec.struct(cls)


# --- outcomes --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Err:
    """A rejection: the exact class; offset, missing and attributes when given."""

    cls: type[DecodeError]
    offset: int | None = None
    missing: int | None = None
    attrs: tuple[tuple[str, Any], ...] = ()

    def check(self, result: Any) -> None:
        assert isinstance(result, DecodeError), f"accepted ({result!r}), expected {self}"
        assert type(result) is self.cls, f"{result!r}, expected {self.cls.__name__}"
        assert isinstance(result.offset, int), f"{result!r} has no offset"
        if self.offset is not None:
            assert result.offset == self.offset, f"{result!r}: offset {result.offset}"
        if self.missing is not None:
            assert getattr(result, "missing", None) == self.missing, f"{result!r}: missing"
        for name, value in self.attrs:
            assert getattr(result, name) == value, f"{result!r}: {name}"


@dataclass(frozen=True)
class Ok:
    """An acceptance; ``expect`` is the result itself, or a predicate of it."""

    expect: Any = None

    def check(self, result: Any) -> None:
        assert not isinstance(result, BaseException), f"rejected: {result!r}"
        if callable(self.expect):
            assert self.expect(result), f"unexpected result {result!r}"
        elif self.expect is not None:
            assert result == self.expect, f"{result!r} != {self.expect!r}"


@dataclass(frozen=True)
class Stream:
    """The frames a stream gives (payload bytes, or structs), then its error (or None)."""

    frames: tuple[Any, ...]
    error: Err | None = None


@dataclass
class Vector:
    row: str
    name: str
    layer: str  # "varint", "stream" or "message"
    data: bytes
    expect: Any  # Err | Ok | Stream
    schema: Any = None  # a google.protobuf class (the struct class is made from it)
    strict: bool = False  # varint profile / FrameDecoder(strict=)
    limit: int = LIMIT  # FrameDecoder(max_frame_size=)
    offset: int = 0  # varint.decode offset
    per_api: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.row}-{self.name}"


# --- the APIs ------------------------------------------------------------------------------------


def api_varint(v: Vector) -> Any:
    try:
        return codec.varint.decode(v.data, v.offset, strict=v.strict)
    except DecodeError as exc:
        return exc


def _stream(v: Vector, via: str, bytewise: bool, message_type: Any = None) -> Stream:
    decoder = FrameDecoder(v.limit, strict=v.strict, message_type=message_type)
    frames: list[Any] = []

    def drain() -> None:
        while (frame := decoder.next_frame()) is not None:
            frames.append(bytes(frame) if isinstance(frame, memoryview) else frame)

    chunks = [v.data[i : i + 1] for i in range(len(v.data))] if bytewise else [v.data]
    try:
        for chunk in chunks:
            if via == "feed":
                decoder.feed(chunk)
            else:
                with decoder.get_buffer(len(chunk)) as window:
                    window[: len(chunk)] = chunk
                decoder.buffer_updated(len(chunk))
            drain()
        decoder.feed_eof()
        drain()
    except DecodeError as exc:
        drain_error = None
        try:
            drain()
        except DecodeError as again:
            drain_error = again
        assert drain_error is exc, f"not poisoned after {exc!r}"
        return Stream(tuple(frames), exc)  # type: ignore[arg-type]
    return Stream(tuple(frames), None)


def api_feed(v: Vector) -> Stream:
    return _stream(v, "feed", False)


def api_get_buffer(v: Vector) -> Stream:
    return _stream(v, "buffer", False)


def api_stream_bytewise(v: Vector) -> Stream:
    """Both ways in, one byte at a time: must equal the whole-stream outcome (I1)."""
    feed = _stream(v, "feed", True)
    buffer = _stream(v, "buffer", True)
    assert _key(feed) == _key(buffer), f"feed {feed} != get_buffer {buffer}"
    return feed


def api_stream_message_type(v: Vector) -> Stream:
    return _stream(v, "feed", False, S(v.schema))


def _key(stream: Stream) -> Any:
    error = stream.error
    if error is not None:
        error = (type(error), error.offset, getattr(error, "missing", None))  # type: ignore[assignment]
    return stream.frames, error


_PACKED_KINDS = {
    FD.TYPE_INT32: "int32", FD.TYPE_INT64: "int64", FD.TYPE_UINT32: "uint32",
    FD.TYPE_UINT64: "uint64", FD.TYPE_SINT32: "sint32", FD.TYPE_SINT64: "sint64",
    FD.TYPE_BOOL: "bool", FD.TYPE_ENUM: "enum", FD.TYPE_FIXED32: "fixed32",
    FD.TYPE_SFIXED32: "sfixed32", FD.TYPE_FLOAT: "float", FD.TYPE_FIXED64: "fixed64",
    FD.TYPE_SFIXED64: "sfixed64", FD.TYPE_DOUBLE: "double",
}  # fmt: skip


def walk(reader: WireReader, descriptor: Any) -> list[Any]:
    """Read every field as a hand-written decoder would: into sub-messages, packed runs."""
    out: list[Any] = []
    for number, wire_type, value in reader:
        fd = descriptor.fields_by_number.get(number)
        if (
            fd is not None
            and fd.message_type is not None
            and wire_type in (codec.wire.LEN, codec.wire.SGROUP)
        ):
            out.append((number, wire_type, walk(reader.nested(value), fd.message_type)))
        elif (
            fd is not None
            and fd.is_repeated
            and wire_type == codec.wire.LEN
            and fd.type in _PACKED_KINDS
        ):
            out.append((number, wire_type, reader.packed(value, _PACKED_KINDS[fd.type]).tolist()))
        else:
            out.append(
                (number, wire_type, bytes(value) if isinstance(value, memoryview) else value)
            )
    return out


def api_wire_reader(v: Vector) -> Any:
    try:
        return walk(WireReader(v.data), v.schema.DESCRIPTOR)
    except DecodeError as exc:
        return exc


def api_decode(v: Vector) -> Any:
    try:
        return codec.decode(S(v.schema), v.data)
    except DecodeError as exc:
        return exc


def api_decode_lazy(v: Vector) -> Any:
    """The message decoded lazily, each pending field then read (through its encoding)."""
    try:
        decoded = codec.decode(S(v.schema), v.data, lazy=True)
    except DecodeError as exc:
        return exc
    codec.encode(decoded, partial=True)  # parses every pending field
    return decoded


def api_message_frame(v: Vector) -> Any:
    """The message as the payload of one frame, through FrameDecoder(message_type=...)."""
    prefix = varint(len(v.data))
    framed = Vector(v.row, v.name, "stream", prefix + v.data, None, v.schema)
    stream = api_stream_message_type(framed)
    if stream.error is not None:
        error = stream.error
        assert isinstance(error.offset, int) and error.offset >= len(prefix), error
        error.offset -= len(prefix)  # compare with the one-shot offsets
        return error
    assert len(stream.frames) == 1, stream
    return stream.frames[0]


APIS: dict[str, dict[str, Callable[[Vector], Any]]] = {
    "varint": {"varint.decode": api_varint},
    "stream": {
        "FrameDecoder.feed": api_feed,
        "FrameDecoder.get_buffer": api_get_buffer,
        "FrameDecoder/bytewise": api_stream_bytewise,
        "FrameDecoder(message_type)": api_stream_message_type,
    },
    "message": {
        "WireReader": api_wire_reader,
        "codec.decode": api_decode,
        "codec.decode(lazy)": api_decode_lazy,
        "FrameDecoder(message_type)": api_message_frame,
    },
}


def check_outcome(expect: Any, result: Any) -> None:
    if isinstance(expect, Stream):
        assert isinstance(result, Stream), result
        got_frames = tuple(
            codec.encode(f) if hasattr(type(f), "__plan__") else f for f in result.frames
        )
        want_frames = tuple(
            codec.encode(f) if hasattr(type(f), "__plan__") else f for f in expect.frames
        )
        assert got_frames == want_frames, f"frames {got_frames!r} != {want_frames!r}"
        if expect.error is None:
            assert result.error is None, f"unexpected {result.error!r}"
        else:
            expect.error.check(result.error)
    else:
        expect.check(result)


# --- the vectors ----------------------------------------------------------------------------------


def struct_is(cls: Any, **values: Any) -> Callable[[Any], bool]:
    return lambda result: result == S(cls)(**values)


def has(**values: Any) -> Callable[[Any], bool]:
    return lambda result: all(getattr(result, k) == v for k, v in values.items())


def unknown(data: bytes, **values: Any) -> Callable[[Any], bool]:
    return lambda result: codec.unknown_fields(result) == data and has(**values)(result)


def depth_of(result: Any) -> int:
    depth = 0
    while result.HasField("child"):
        result, depth = result.child, depth + 1
    return depth


def reader_depth(fields: list[Any]) -> int:
    depth = 0
    while fields and isinstance(fields[0][2], list):
        fields, depth = fields[0][2], depth + 1
    return depth


DEEP_100, _ = nested(100, b"\x0a")
DEEP_101, DEEP_101_AT = nested(101, b"\x0a")
TOO_DEEP_AT = DEEP_101_AT[100] + 2  # the first byte of level 101
BIG_PAYLOAD = bytes(range(256)) * 64  # 16 KiB: a 3-byte prefix
GZIP_BOMB = gzip.compress(b"\x00" * MiB)

V = Vector
ST = "stream"
# fmt: off
VARINT_VECTORS = [
    V("V1", "80", "varint", h("80"), Err(TruncatedError, 0)),
    V("V1", "ff-x9", "varint", h("ff" * 9), Err(TruncatedError, 0)),
    V("V1", "ff-x9-strict", "varint", h("ff" * 9), Err(VarintError, 0), strict=True),
    V("V1", "empty", "varint", b"", Err(TruncatedError, 0)),
    V("V2", "eleven-bytes", "varint", h("80" * 10 + "00"), Err(VarintError, 0)),
    V("V2", "eleven-bytes-strict", "varint", h("80" * 10 + "00"), Err(VarintError, 0), strict=True),
    V("V3", "2p70-1", "varint", h("ff" * 9 + "7f"), Err(VarintError, 0)),
    V("V3", "2p64", "varint", h("80" * 9 + "02"), Err(VarintError, 0)),
    V("V3", "at-offset", "varint", h("aa bb" + "80" * 9 + "02"), Err(VarintError, 2), offset=2),
    V("V4", "81-00", "varint", h("81 00"), Ok((1, 2))),
    V("V4", "81-00-strict", "varint", h("81 00"), Err(VarintError, 0), strict=True),
    V("V4", "zero-10-bytes", "varint", h("80" * 9 + "00"), Ok((0, 10))),
    V("V4", "zero-10-strict", "varint", h("80" * 9 + "00"), Err(VarintError, 0), strict=True),
    V("V6", "minus-1-as-uint64", "varint", h("ff" * 9 + "01"), Ok((2**64 - 1, 10))),
    V("V6", "minus-1-strict", "varint", h("ff" * 9 + "01"), Err(VarintError, 0), strict=True),
    V("V7", "byte5-7f", "varint", h("ff ff ff ff 7f"), Ok((2**35 - 1, 5))),
    V("V7", "2p63-1", "varint", h("ff" * 8 + "7f"), Ok((2**63 - 1, 9))),
    V("V7", "2p63-1-strict", "varint", h("ff" * 8 + "7f"), Ok((2**63 - 1, 9)), strict=True),
    V("V7", "bit-63", "varint", h("80" * 9 + "01"), Ok((2**63, 10))),
    V("V8", "split-at-offset", "varint", h("00 96"), Err(TruncatedError, 1), offset=1),
    V("V8", "offset-past-end", "varint", h("96 01"), Err(TruncatedError, 3), offset=3),
]

STREAM_VECTORS = [
    V("V1", "eof-in-prefix", ST, h("80"), Stream((), Err(TruncatedError, 0))),
    V("V1", "frame-then-eof-in-prefix", ST, h("01 61 ff ff"),
      Stream((b"a",), Err(TruncatedError, 2))),
    V("V2", "eleven-byte-prefix", ST, h("80" * 10 + "00"), Stream((), Err(VarintError, 0))),
    V("V3", "overflowing-prefix", ST, h("ff" * 9 + "7f"), Stream((), Err(VarintError, 0))),
    V("V3", "2p64-prefix", ST, h("80" * 9 + "02"), Stream((), Err(VarintError, 0))),
    V("V4", "padded-prefix", ST, h("81 00 7a"), Stream((b"z",))),
    V("V4", "padded-prefix-strict", ST, h("81 00 7a"), Stream((), Err(VarintError, 0)),
      strict=True),
    V("V4", "strict-tenth-byte", ST, h("80" * 9 + "00"), Stream((), Err(VarintError, 0)),
      strict=True),
    V("V8", "3-byte-prefix-16KiB", ST, varint(len(BIG_PAYLOAD)) + BIG_PAYLOAD,
      Stream((BIG_PAYLOAD,))),
    V("F1", "4MiB-plus-1", ST, h("81 80 80 02"),
      Stream((), Err(FrameTooLargeError, 0, attrs=(("size", LIMIT + 1), ("limit", LIMIT)))),
      schema=E.CatInt32),
    V("F1", "limit-plus-1-after-a-frame", ST, h("00 11") + bytes(17),
      Stream((b"",), Err(FrameTooLargeError, 1, attrs=(("size", 17),))), limit=16),
    V("F1", "limit-0", ST, h("00 00 01 78"), Stream((b"", b""), Err(FrameTooLargeError, 2)),
      limit=0),
    V("F2", "2p63-1", ST, h("ff" * 8 + "7f"),
      Stream((), Err(FrameTooLargeError, 0, attrs=(("size", 2**63 - 1),))), schema=E.CatInt32),
    V("F2", "ffffffff", ST, h("ff ff ff ff 0f"),
      Stream((), Err(FrameTooLargeError, 0, attrs=(("size", 2**32 - 1),)))),
    V("F3", "2p32", ST, h("80 80 80 80 10"),
      Stream((), Err(FrameTooLargeError, 0, attrs=(("size", 2**32),)))),
    V("F3", "2p31", ST, h("80 80 80 80 08"),
      Stream((), Err(FrameTooLargeError, 0, attrs=(("size", 2**31),)))),
    V("F3", "2p32-huge-limit-no-wrap", ST, h("80 80 80 80 10 61 62 63"),
      Stream((), Err(TruncatedError, 0, missing=2**32 - 3)), limit=2**40),
    V("F3", "2p64-1-huge-limit", ST, h("ff" * 9 + "01"),
      Stream((), Err(FrameTooLargeError, 0, attrs=(("size", 2**64 - 1),))), limit=sys.maxsize),
    V("F4", "eof-in-body", ST, h("05 61 62 63"), Stream((), Err(TruncatedError, 0, missing=2))),
    V("F4", "frame-then-eof-in-body", ST, h("03 61 62 63 05 61"),
      Stream((b"abc",), Err(TruncatedError, 4, missing=4))),
    V("F4", "eof-at-boundary", ST, h("03 61 62 63"), Stream((b"abc",))),
    V("F5", "empty-frame", ST, h("00"), Stream((b"",)), schema=E.CatInt32),
    V("F5", "flood-1000", ST, bytes(1000), Stream((b"",) * 1000)),
    V("F9", "gzip-bomb-is-opaque", ST, varint(len(GZIP_BOMB)) + GZIP_BOMB, Stream((GZIP_BOMB,))),
    V("I1", "mixed-frames", ST, h("00 01 61 02 62 63 00 81 01") + bytes(129),
      Stream((b"", b"a", b"bc", b"", bytes(129)))),
    V("I1", "frames-then-garbage", ST, h("01 61") + h("80" * 10 + "00"),
      Stream((b"a",), Err(VarintError, 2))),
    V("I2", "frames-then-too-large", ST, h("01 61 01 62 7f"),
      Stream((b"a", b"b"), Err(FrameTooLargeError, 4)), limit=100),
]

MSG = "message"
DEPTH_101_ERR = Err(DepthLimitError, TOO_DEEP_AT)
MESSAGE_VECTORS = [
    V("V1", "truncated-value", MSG, h("08 80"), Err(TruncatedError, 1), E.CatInt32),
    V("V1", "tag-then-nothing", MSG, h("08"), Err(TruncatedError, 1), E.CatInt32),
    V("V1", "truncated-tag", MSG, h("88"), Err(TruncatedError, 0), E.CatInt32),
    V("V2", "eleven-byte-value", MSG, h("08" + "80" * 10 + "00"), Err(VarintError, 1), E.CatInt32),
    V("V3", "overflowing-value", MSG, h("08" + "ff" * 9 + "7f"), Err(VarintError, 1), E.CatInt32),
    V("V3", "overflowing-length", MSG, h("0a" + "80" * 9 + "02"), Err(VarintError, 1), E.CatString),
    V("V4", "padded-value", MSG, h("08 81" + " 80" * 8 + " 00"), Ok(struct_is(E.CatInt32, value=1)),
      E.CatInt32, per_api={"WireReader": Ok([(1, 0, 1)])}),
    V("V4", "padded-size-5-bytes", MSG, h("0a 83 80 80 80 00 61 62 63"),
      Ok(struct_is(E.CatString, text="abc")), E.CatString,
      per_api={"WireReader": Ok([(1, 2, b"abc")])}),
    # K2: a LEN size takes at most 5 bytes (upb's rule); a longer one is refused at the size.
    V("V4", "padded-size-6-bytes", MSG, h("0a 80 80 80 80 80 00"), Err(WireFormatError, 1),
      E.CatString),
    V("V4", "padded-size-10-bytes-nested", MSG, h("0a 0b 0a" + " 80" * 9 + " 00"),
      Err(WireFormatError, 3), E.CatNested),
    V("V4", "padded-unknown-size", MSG, h("12" + " 80" * 9 + " 00"), Err(WireFormatError, 1),
      E.CatInt32),
    V("V4", "padded-packed-size", MSG, h("0a 81 80 80 80 80 00 01"), Err(WireFormatError, 1),
      E.CatPackedInt32),
    V("V4", "padded-size-of-a-group-schema", MSG, h("0a" + " 80" * 9 + " 00"),
      Err(WireFormatError, 1), L.WithGroups),
    V("V5", "int32-2p33", MSG, h("08 80 80 80 80 20"), Ok(struct_is(E.CatInt32, value=0)),
      E.CatInt32,
      per_api={"WireReader": Ok([(1, 0, 2**33)])}),
    V("V5", "uint32-2p33-plus-1", MSG, h("18") + varint(2**33 + 1), Ok(has(f_uint32=1)), E.AllTypes,
      per_api={"WireReader": Ok([(3, 0, 2**33 + 1)])}),
    V("V5", "bool-2", MSG, h("68 02"), Ok(has(f_bool=True)), E.AllTypes,
      per_api={"WireReader": Ok([(13, 0, 2)])}),
    V("V5", "enum-int64-max", MSG, h("80 01") + varint(2**63 - 1), Ok(has(f_color=-1)), E.AllTypes,
      per_api={"WireReader": Ok([(16, 0, 2**63 - 1)])}),
    V("V5", "packed-int32-truncates", MSG, h("0a 05 80 80 80 80 20"),
      Ok(struct_is(E.CatPackedInt32, values=[0])), E.CatPackedInt32,
      per_api={"WireReader": Ok([(1, 2, [0])])}),
    V("V6", "int32-minus-1", MSG, h("08" + "ff" * 9 + "01"), Ok(struct_is(E.CatInt32, value=-1)),
      E.CatInt32, per_api={"WireReader": Ok([(1, 0, 2**64 - 1)])}),
    V("V7", "uint32-byte5-7f", MSG, h("18 ff ff ff ff 7f"), Ok(has(f_uint32=2**32 - 1)), E.AllTypes,
      per_api={"WireReader": Ok([(3, 0, 2**35 - 1)])}),
    V("V7", "sint32-from-2p64-1", MSG, h("28" + "ff" * 9 + "01"), Ok(has(f_sint32=-(2**31))),
      E.AllTypes, per_api={"WireReader": Ok([(5, 0, 2**64 - 1)])}),
    V("V7", "tag-byte5-high-bits", MSG, h("f8 ff ff ff 1f 00"), Err(WireFormatError, 0),
      E.CatInt32),
    V("F3", "len-2p32", MSG, h("0a 80 80 80 80 10 00"), Err(TruncatedError, 1), E.CatString),
    V("F3", "len-2p31-minus-1", MSG, h("0a ff ff ff ff 07 61"), Err(TruncatedError, 1),
      E.CatString),
    V("F8", "child-longer-than-parent", MSG, h("0a 02 0a 05"), Err(TruncatedError, 3), E.CatNested),
    V("T1", "case-0", MSG, h("01 44 45 41 44 42 45 45 46"), Err(WireFormatError, 0), E.CatInt32),
    V("T1", "case-1", MSG, h("02 01 01"), Err(WireFormatError, 0), E.CatInt32),
    V("T1", "case-2", MSG, h("03 04"), Err(WireFormatError, 0), E.CatInt32),
    V("T1", "case-3", MSG, h("05 44 45 41 44"), Err(WireFormatError, 0), E.CatInt32),
    V("T1", "after-a-field", MSG, h("08 01 00 00"), Err(WireFormatError, 2), E.CatInt32),
    V("T1", "in-a-sub-message", MSG, h("0a 02 00 00"), Err(WireFormatError, 2), E.CatNested),
    V("T2", "field-2p29", MSG, h("80 80 80 80 10 00"), Err(WireFormatError, 0), E.CatInt32),
    V("T2", "conformance-too-high", MSG, h("88 80 80 80 40 00"), Err(WireFormatError, 0),
      E.CatInt32),
    V("T2", "max-field-accepted", MSG, varint((2**29 - 1) << 3) + b"\x00",
      Ok(lambda r: codec.unknown_fields(r) == varint((2**29 - 1) << 3) + b"\x00"), E.CatInt32,
      per_api={"WireReader": Ok([(2**29 - 1, 0, 0)])}),
    V("T3", "overlong-tag", MSG, h("88 80 80 80 80 80 80 80 00 01"), Err(WireFormatError, 0),
      E.CatInt32),
    V("T3", "six-byte-tag", MSG, h("88 80 80 80 80 00 01"), Err(WireFormatError, 0), E.CatInt32),
    V("T3", "five-byte-tag-accepted", MSG, h("88 80 80 80 00 07"),
      Ok(struct_is(E.CatInt32, value=7)),
      E.CatInt32, per_api={"WireReader": Ok([(1, 0, 7)])}),
    V("T4", "type-6", MSG, h("0e 00"), Err(WireFormatError, 0), E.CatInt32),
    V("T4", "type-7", MSG, h("0f 00"), Err(WireFormatError, 0), E.CatInt32),
    V("T4", "type-7-after-a-field", MSG, h("08 01 0f"), Err(WireFormatError, 2), E.CatInt32),
    V("T5", "int32-as-len", MSG, h("0a 01 00"), Ok(unknown(h("0a 01 00"), value=0)), E.CatInt32,
      per_api={"WireReader": Ok([(1, 2, b"\x00")])}),
    V("T5", "fixed32-as-varint", MSG, h("08 05"), Ok(unknown(h("08 05"), value=0)), E.CatFixed32,
      per_api={"WireReader": Ok([(1, 0, 5)])}),
    V("T6", "field-19000", MSG, varint(19000 << 3) + b"\x01",
      Ok(unknown(varint(19000 << 3) + b"\x01", value=0)), E.CatInt32,
      per_api={"WireReader": Ok([(19000, 0, 1)])}),
    V("S1", "bare-end-group", MSG, h("0c"), Err(WireFormatError, 0), E.CatInt32),
    V("S1", "after-a-field", MSG, h("08 01 14"), Err(WireFormatError, 2), E.CatInt32),
    V("S1", "in-a-sub-message", MSG, h("0a 01 0c"), Err(WireFormatError, 2), E.CatNested),
    V("S2", "bare-start", MSG, h("0b"), Err(TruncatedError, 0), E.CatInt32),
    V("S2", "start-with-data", MSG, h("08 01 0b 08 01"), Err(TruncatedError, 2), E.CatInt32),
    V("S3", "mismatched", MSG, h("0b 14"), Err(WireFormatError, 1), E.CatInt32),
    V("S3", "mismatched-nested", MSG, h("0b 1b 0c"), Err(WireFormatError, 2), E.CatInt32),
    V("S3", "known-group", MSG, h("13 18 01 1c"), Err(WireFormatError, 3), L.WithGroups),
    V("S4", "depth-100", MSG, DEEP_100, Ok(lambda r: depth_of(r) == 100), E.Chain,
      per_api={"WireReader": Ok(lambda r: reader_depth(r) == 100)}),
    V("S4", "depth-101", MSG, DEEP_101, DEPTH_101_ERR, E.Chain),
    V("S4", "depth-100000", MSG, nested(100_000, b"\x0a")[0], Err(DepthLimitError), E.Chain),
    V("S4", "recursive-field-100000", MSG, nested(100_000, varint(130 << 3 | 2))[0],
      Err(DepthLimitError), E.AllTypes),
    V("S5", "unknown-groups-101", MSG, b"\x13" * 101 + b"\x14" * 101, Err(DepthLimitError, 100),
      E.CatInt32),
    V("S5", "unknown-groups-100", MSG, b"\x13" * 100 + b"\x14" * 100,
      Ok(lambda r: len(codec.unknown_fields(r)) == 200), E.CatInt32,
      per_api={"WireReader": Ok(lambda r: r[0][:2] == (2, codec.wire.SGROUP))}),
    V("S5", "group-starts-100000", MSG, b"\x0b" * 100_000, Err(DepthLimitError, 100), E.CatInt32),
    V("S5", "groups-in-a-known-group", MSG, b"\x13" + b"\x2b" * 100_000, Err(DepthLimitError),
      L.WithGroups),
    V("S6", "map-values-60", MSG, map_levels(60), Err(DepthLimitError), E.Tree),
    V("S6", "map-values-5000", MSG, map_levels(5_000), Err(DepthLimitError), E.Tree),
    V("S6", "map-values-49-accepted", MSG, map_levels(49), Ok(), E.Tree),
    V("P1", "len-past-end", MSG, h("0a 05 61 62 63"), Err(TruncatedError, 1, missing=2),
      E.CatString),
    V("P1", "empty-bytes-past-end", MSG, h("12 01"), Err(TruncatedError, 1), E.CatString),
    V("P1", "unknown-len-past-end", MSG, h("12 05 61 62 63"), Err(TruncatedError, 1), E.CatInt32),
    V("P1", "len-2p32-past-end", MSG, h("0a 80 80 80 80 10"), Err(TruncatedError, 1),
      E.CatString),
    V("P1", "past-the-parent-end", MSG, h("0a 03 12 05 61 62 63"), Err(TruncatedError, 3),
      E.CatNested),
    V("P2", "fixed32", MSG, h("0d 61 62 63"), Err(TruncatedError, 1), E.CatFixed32),
    V("P2", "fixed64", MSG, h("09 61 62 63 64 65 66 67"), Err(TruncatedError, 1), E.CatFixed64),
    V("P2", "unknown-fixed32", MSG, h("15 61 62 63"), Err(TruncatedError, 1), E.CatInt32),
    V("P3", "varint-crosses-parent", MSG, h("0a 02 08 96 01"), Err(TruncatedError, 3), E.CatNested),
    V("P3", "fixed32-crosses-parent", MSG, h("0a 03 0d 01 02 03 04"), Err(TruncatedError, 3),
      E.CatNested),
    V("P4", "packed-fixed32-3-bytes", MSG, h("0a 03 00 00 00"), Err(WireFormatError, 2),
      E.CatPackedFixed32),
    V("P4", "packed-double-12-bytes", MSG, varint(52 << 3 | 2) + b"\x0c" + bytes(12),
      Err(WireFormatError, 3), E.AllTypes),
    V("P5", "packed-varint-truncated", MSG, h("0a 01 80"), Err(TruncatedError, 2),
      E.CatPackedInt32),
    V("P5", "second-element-truncated", MSG, h("0a 02 01 80"), Err(TruncatedError, 3),
      E.CatPackedInt32),
    V("P5", "varint-cut-by-the-run-end", MSG, h("0a 02 01 80 01"), Err(TruncatedError, 3),
      E.CatPackedInt32),
    V("P6", "invalid-utf8", MSG, h("72 04 a0 b0 c0 d0"), Err(DecodeError, 2), E.AllTypes,
      per_api={"WireReader": Ok([(14, 2, h("a0 b0 c0 d0"))])}),
    V("P6", "surrogate", MSG, h("0a 03 ed a0 80"), Err(DecodeError, 2), E.CatString,
      per_api={"WireReader": Ok([(1, 2, h("ed a0 80"))])}),
    V("P6", "overlong", MSG, h("0a 02 c0 80"), Err(DecodeError, 2), E.CatString,
      per_api={"WireReader": Ok([(1, 2, h("c0 80"))])}),
    V("P6", "above-u10ffff", MSG, h("0a 04 f4 90 80 80"), Err(DecodeError, 2), E.CatString,
      per_api={"WireReader": Ok([(1, 2, h("f4 90 80 80"))])}),
    V("P6", "the-second-value", MSG, h("0a 01 61 0a 01 ff"), Err(DecodeError, 5), E.CatString,
      per_api={"WireReader": Ok([(1, 2, b"a"), (1, 2, b"\xff")])}),
    V("P6", "repeated", MSG, h("8a 05 01 ff"), Err(DecodeError, 3), E.AllTypes,
      per_api={"WireReader": Ok([(81, 2, b"\xff")])}),
    V("P6", "oneof", MSG, h("82 07 01 ff"), Err(DecodeError, 3), E.AllTypes,
      per_api={"WireReader": Ok([(112, 2, b"\xff")])}),
    V("P6", "map-key", MSG, h("b2 06 03 0a 01 ff"), Err(DecodeError, 5), E.AllTypes,
      per_api={"WireReader": Ok([(102, 2, [(1, 2, b"\xff")])])}),
    V("P6", "map-value", MSG, h("b2 06 03 12 01 ff"), Err(DecodeError, 5), E.AllTypes,
      per_api={"WireReader": Ok([(102, 2, [(2, 2, b"\xff")])])}),
    V("P6", "nested", MSG, h("92 01 03 1a 01 ff"), Err(DecodeError, 5), E.AllTypes,
      per_api={"WireReader": Ok([(18, 2, [(3, 2, b"\xff")])])}),
    V("P7", "last-value-wins", MSG, h("08 01 08 02"), Ok(struct_is(E.CatInt32, value=2)),
      E.CatInt32,
      per_api={"WireReader": Ok([(1, 0, 1), (1, 0, 2)])}),
    V("P7", "sub-messages-merge", MSG, h("0a 02 08 01 0a 00"),
      Ok(lambda r: r.inner == S(E.CatInt32)(value=1)), E.CatNested,
      per_api={"WireReader": Ok([(1, 2, [(1, 0, 1)]), (1, 2, [])])}),
    V("P7", "packed-and-unpacked", MSG, h("08 01 0a 02 02 03 08 04"),
      Ok(struct_is(E.CatPackedInt32, values=[1, 2, 3, 4])), E.CatPackedInt32,
      per_api={"WireReader": Ok([(1, 0, 1), (1, 2, [2, 3]), (1, 0, 4)])}),
    V("P7", "unknown-fields-in-order", MSG, h("10 01 08 05 18 02"),
      Ok(unknown(h("10 01 18 02"), value=5)), E.CatInt32,
      per_api={"WireReader": Ok([(2, 0, 1), (1, 0, 5), (3, 0, 2)])}),
    V("P8", "packed-bools-1MiB-declared", MSG, h("0a 80 80 40 01 01 01"), Err(TruncatedError, 1),
      E.CatPackedBool),
    V("P8", "empty-sub-messages", MSG, h("0a 00") * 1000, Ok(lambda r: len(r.items) == 1000),
      E.CatRepeated, per_api={"WireReader": Ok([(1, 2, [])] * 1000)}),
    V("P8", "repeated-singular-merges", MSG, h("0a 02 08 01") * 1000,
      Ok(lambda r: r.inner == S(E.CatInt32)(value=1)), E.CatNested,
      per_api={"WireReader": Ok([(1, 2, [(1, 0, 1)])] * 1000)}),
    V("M6", "empty-message", MSG, b"", Ok(struct_is(E.AllTypes)), E.AllTypes,
      per_api={"WireReader": Ok([])}),
    V("M6", "empty-fields", MSG, h("0a 00 12 00"), Ok(struct_is(E.CatString, text="", data=b"")),
      E.CatString, per_api={"WireReader": Ok([(1, 2, b""), (2, 2, b"")])}),
]

# fmt: on

VECTORS = VARINT_VECTORS + STREAM_VECTORS + MESSAGE_VECTORS


def _cases() -> list[Any]:
    cases = []
    for vector in VECTORS:
        for api, run in APIS[vector.layer].items():
            if api == "FrameDecoder(message_type)" and vector.schema is None:
                continue
            expect = vector.per_api.get(api, vector.expect)
            if vector.layer == "stream" and api == "FrameDecoder(message_type)":
                expect = _as_structs(vector, expect)
            cases.append(pytest.param(vector, run, expect, id=f"{vector.id}-{api}"))
    return cases


def _as_structs(vector: Vector, expect: Stream) -> Stream:
    cls = S(vector.schema)
    return Stream(tuple(codec.decode(cls, f) for f in expect.frames), expect.error)


CASES = _cases()


@pytest.mark.parametrize(("vector", "run", "expect"), CASES)
def test_vector(vector: Vector, run: Callable[[Vector], Any], expect: Any) -> None:
    result = run(vector)
    check_outcome(expect, result)


@pytest.mark.parametrize("row", list(ROWS))
def test_every_row_has_a_vector(row: str) -> None:
    """The table of rows is complete: each has a vector or a dedicated test in this file."""
    vectors = [v.id for v in VECTORS if v.row == row]
    assert vectors or COVERED.get(row), f"catalogue row {row} ({ROWS[row]}) is not tested here"


def test_matrix_size() -> None:
    """Keeps the figure quoted in SECURITY.md honest: vectors x APIs."""
    layers = {layer: sum(v.layer == layer for v in VECTORS) for layer in APIS}
    assert len(CASES) >= 3 * len(MESSAGE_VECTORS) + len(VARINT_VECTORS)
    assert all(layers.values()), layers


#: Rejected message vectors that upb accepts: the intended divergences.
UPB_ACCEPTS = {"V3-overflowing-value": "upb drops the bits above 64 (docs/bad-inputs.md)"}


@pytest.mark.parametrize(
    "vector",
    [pytest.param(v, id=v.id) for v in MESSAGE_VECTORS if isinstance(v.expect, Err)],
)
def test_a_rejected_message_is_rejected_from_any_buffer_and_by_upb(vector: Vector) -> None:
    """The same error from bytes, bytearray and memoryview; upb, the reference, agrees."""
    for buffer in (bytearray(vector.data), memoryview(vector.data)):
        vector.expect.check(api_decode(replace(vector, data=buffer)))
        vector.expect.check(api_decode_lazy(replace(vector, data=buffer)))
    if vector.id in UPB_ACCEPTS:
        vector.schema.FromString(vector.data)
    else:
        with pytest.raises(Exception, match="Error parsing message"):
            vector.schema.FromString(vector.data)


# --- I3 / I4: nothing else escapes; the same checks on every path ---------------------------------


@covers("I3")
@pytest.mark.parametrize("layer", list(APIS))
def test_every_vector_through_every_other_layer_raises_only_decode_errors(layer: str) -> None:
    """Cross-feeding: each vector's bytes through the APIs of every layer (I3).

    The adapters return a DecodeError instead of raising it and check their own
    consistency (feed == get_buffer byte by byte, framed offsets); anything else
    raised is a finding.
    """
    schemas = [E.AllTypes, L.Record, L.WithGroups, E.Tree]
    for source in VECTORS:
        if len(source.data) > 20_000:
            continue
        for schema in schemas[: 1 if layer != "message" else None]:
            vector = Vector(source.row, source.name, layer, source.data, None, schema)
            for run in APIS[layer].values():
                result = run(vector)
                if isinstance(result, Stream):
                    result = result.error
                assert (
                    result is None
                    or not isinstance(result, BaseException)
                    or isinstance(result, DecodeError)
                ), result


@covers("I3")
def test_every_one_and_two_byte_message_raises_only_decode_errors() -> None:
    cls = S(E.AllTypes)
    inputs = [bytes([a]) for a in range(256)] + [
        bytes([a, b]) for a in range(256) for b in (0, 1, 0x80, 0xFF)
    ]
    for data in inputs:
        for run in (lambda d: list(WireReader(d)), lambda d: codec.decode(cls, d)):
            try:
                run(data)
            except DecodeError as exc:
                assert isinstance(exc.offset, int) and 0 <= exc.offset <= len(data)


@covers("I4")
def test_the_same_error_on_every_path() -> None:
    """Tag, length and truncation errors: same class and offset whichever API finds them."""
    for vector in MESSAGE_VECTORS:
        if vector.per_api or not isinstance(vector.expect, Err) or vector.expect.offset is None:
            continue
        seen = {}
        for api, run in APIS["message"].items():
            result = run(vector)
            assert isinstance(result, DecodeError), (vector.id, api, result)
            seen[api] = (type(result), result.offset)
        assert len(set(seen.values())) == 1, (vector.id, seen)
    for vector in STREAM_VECTORS:
        if vector.schema is None:
            continue
        outcomes = {api: _key(run(vector))[1] for api, run in APIS["stream"].items()}
        assert len(set(outcomes.values())) == 1, (vector.id, outcomes)


# --- I1, I2: splits and poisoning -----------------------------------------------------------------


@covers("I1", "V8")
@pytest.mark.parametrize("via", ["feed", "buffer"])
def test_every_two_way_split_of_a_prefix_and_body(via: str) -> None:
    stream = varint(len(BIG_PAYLOAD)) + BIG_PAYLOAD + h("02 61 62") + h("80 80")
    vector = Vector("I1", "split", "stream", stream, None)
    whole = _key(_stream(vector, via, False))
    assert whole[0] == (BIG_PAYLOAD, b"ab") and whole[1][0] is TruncatedError
    for cut in [*range(0, 8), *range(len(stream) - 8, len(stream) + 1)]:
        decoder = FrameDecoder()
        frames = []
        error = None
        try:
            for chunk in (stream[:cut], stream[cut:]):
                if via == "feed":
                    decoder.feed(chunk)
                else:
                    with decoder.get_buffer(len(chunk)) as window:
                        window[: len(chunk)] = chunk
                    decoder.buffer_updated(len(chunk))
                frames += [bytes(f) for f in decoder]
            decoder.feed_eof()
        except DecodeError as exc:
            error = (type(exc), exc.offset, getattr(exc, "missing", None))
        assert (tuple(frames), error) == whole, cut


@covers("I2")
@pytest.mark.parametrize(
    "bad",
    [h("80" * 10 + "00"), h("81 80 80 02"), h("ff" * 9 + "7f")],
    ids=["V2", "F1", "V3"],
)
def test_an_error_poisons_the_decoder(bad: bytes) -> None:
    decoder = FrameDecoder()
    decoder.feed(h("01 61") + bad)  # the bad prefix is examined once "a" is taken
    assert bytes(decoder.next_frame()) == b"a"
    with pytest.raises(DecodeError) as first:
        decoder.next_frame()
    alone = FrameDecoder()
    with pytest.raises(DecodeError) as at_once:
        alone.feed(bad)  # with nothing before it, refused by the feed itself
    assert type(at_once.value) is type(first.value)
    calls = [
        lambda: decoder.feed(h("01 62")),
        lambda: decoder.get_buffer(10),
        lambda: decoder.buffer_updated(0),
        decoder.next_frame,
        decoder.feed_eof,
    ]
    for call in calls:
        with pytest.raises(DecodeError) as again:
            call()
        assert again.value is first.value
    assert not decoder.frame_in_progress


# --- F2, F5, F6, F7: memory and work bounds of the stream ---------------------------------------


HOSTILE_PREFIXES = [
    pytest.param(h("ff" * 8 + "7f"), id="2p63-1"),
    pytest.param(h("ff ff ff ff 0f"), id="ffffffff"),
    pytest.param(varint(LIMIT + 1), id="limit+1"),
    pytest.param(h("80 80 80 80 10"), id="2p32"),
]


@covers("F2", "F1")
@pytest.mark.parametrize("api", ["feed", "get_buffer", "message_type"])
@pytest.mark.parametrize("prefix", HOSTILE_PREFIXES)
def test_hostile_prefix_alone_is_refused_without_allocation(prefix: bytes, api: str) -> None:
    def run() -> None:
        decoder = FrameDecoder(message_type=S(E.CatInt32) if api == "message_type" else None)
        with pytest.raises(FrameTooLargeError):
            if api == "get_buffer":
                with decoder.get_buffer(len(prefix)) as window:
                    window[: len(prefix)] = prefix
                decoder.buffer_updated(len(prefix))
            else:
                decoder.feed(prefix)

    assert peak_after_warm_up(run) < 64 * KiB


@covers("F6")
def test_slowloris_holds_only_what_was_received() -> None:
    """A 4 MiB frame arriving one byte at a time: memory follows the bytes, not the length."""
    received = 20_000

    def run() -> FrameDecoder:
        decoder = FrameDecoder()
        decoder.feed(varint(LIMIT))
        for _ in range(received):
            decoder.feed(b"x")
        assert decoder.frame_in_progress
        assert decoder.buffered == received + len(varint(LIMIT))
        assert decoder.next_frame() is None
        return decoder

    assert peak_after_warm_up(run) < received + 64 * KiB


@covers("F7", "F5")
def test_many_tiny_reads_keep_constant_state() -> None:
    """50,000 one-byte feeds of empty frames: no per-feed state survives the feed."""

    def run() -> None:
        decoder = FrameDecoder()
        for _ in range(50_000):
            decoder.feed(b"\x00")
            frame = decoder.next_frame()
            assert frame is not None and len(frame) == 0
            frame.release()
        assert decoder.buffered == 0

    assert peak_after_warm_up(run) < 64 * KiB


@covers("F5")
def test_flood_of_empty_frames_in_one_feed_is_all_delivered() -> None:
    # Its speed is a figure of SECURITY.md (fuzz/figures/), not an assertion here.
    decoder = FrameDecoder()
    decoder.feed(bytes(300_000))
    count = sum(1 for _ in decoder)
    assert count == 300_000


# --- P8: amplification guards ---------------------------------------------------------------------


@covers("P8")
@pytest.mark.parametrize(
    "declared",
    [
        pytest.param(MiB, id="1MiB"),
        pytest.param(2**31 - 1, id="2GiB"),
        pytest.param(2**35 - 1, id="2p35-1"),  # the largest size 5 bytes hold (K2)
    ],
)
@pytest.mark.parametrize("api", ["decode", "decode-numpy", "WireReader.packed", "FrameDecoder"])
def test_packed_run_cannot_reserve_more_than_it_delivers(declared: int, api: str) -> None:
    cls = S(E.CatPackedBool)
    data = h("0a") + varint(declared) + b"\x01" * 3

    def run() -> None:
        with pytest.raises(TruncatedError):
            if api == "decode":
                codec.decode(cls, data)
            elif api == "decode-numpy":
                codec.decode(cls, data, numpy=True)
            elif api == "WireReader.packed":
                list(WireReader(data))
            else:
                decoder = FrameDecoder(message_type=cls)
                decoder.feed(varint(len(data)) + data)
                decoder.next_frame()

    assert peak_after_warm_up(run) < 64 * KiB


@covers("P8")
@pytest.mark.parametrize("numpy", [False, True])
def test_packed_allocation_follows_the_elements_delivered(numpy: bool) -> None:
    """A delivered packed run costs at most ~a pointer per element (a list) or a byte (numpy)."""
    count = 64 * KiB
    data = h("0a") + varint(count) + b"\x01" * count
    cls = S(E.CatPackedBool)
    per_element = 16  # varint elements go through a list even for numpy=True
    peak = peak_after_warm_up(lambda: codec.decode(cls, data, numpy=numpy))
    assert peak < count * per_element + 64 * KiB, peak


@covers("P8")
@pytest.mark.parametrize(
    ("cls", "element"),
    [
        pytest.param(E.CatPackedBool, b"\x01", id="packed-bool"),
        pytest.param(E.CatRepeated, b"\x0a\x00", id="empty-sub-message"),
        pytest.param(E.CatInt32, b"\x10\x00", id="unknown-field"),
        pytest.param(E.AllTypes, varint(106 << 3 | 2) + b"\x00", id="map-entry"),
        pytest.param(E.AllTypes, varint(104 << 3 | 2) + b"\x00", id="map-entry-message-value"),
    ],
)
def test_max_elements_budget(cls: Any, element: bytes) -> None:
    """Every element delivered costs at least one unit of ``max_elements``."""
    struct_cls = S(cls)
    count = 50
    if cls is E.CatPackedBool:
        data, prefix = h("0a") + varint(count) + element * count, 2
    else:
        data, prefix = element * count, 0
    codec.decode(struct_cls, data)  # the default budget
    assert codec.structs._decode.DEFAULT_MAX_ELEMENTS == 1_000_000
    with pytest.raises(DecodeError) as info:
        codec.decode(struct_cls, data, max_elements=count - 1)
    assert type(info.value) is DecodeError and "max_elements" in str(info.value)
    assert isinstance(info.value.offset, int) and prefix <= info.value.offset < len(data)
    with pytest.raises(DecodeError):
        codec.decode(struct_cls, data, max_elements=0)


# --- S4, S5: depth, quickly and without recursion ------------------------------------------------


DEEP = 100_000


@covers("S4", "S5")
@pytest.mark.parametrize(
    ("cls", "data"),
    [
        pytest.param(E.Chain, nested(DEEP, b"\x0a")[0], id="nested-messages"),
        pytest.param(E.Tree, nested(DEEP, b"\x22")[0], id="repeated-field"),
        pytest.param(E.CatInt32, b"\x0b" * DEEP, id="group-starts"),
        pytest.param(E.CatInt32, b"\x13" * DEEP + b"\x14" * DEEP, id="unknown-groups"),
        pytest.param(L.WithGroups, b"\x13" + b"\x2b" * DEEP, id="in-a-known-group"),
    ],
)
@pytest.mark.parametrize("api", ["WireReader", "codec.decode", "FrameDecoder(message_type)"])
def test_hundred_thousand_levels_rejected_near_the_top_without_recursion(
    cls: Any, data: bytes, api: str
) -> None:
    vector = Vector("S4", "deep", "message", data, None, cls)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(400)  # a recursive decoder would hit this long before depth 100,000
    try:
        result = APIS["message"][api](vector)
    finally:
        sys.setrecursionlimit(limit)
    assert isinstance(result, DepthLimitError), result
    assert result.offset < 2_000  # found near the top; the time it takes is D7 of SECURITY.md


@covers("S4")
@pytest.mark.parametrize("api", ["WireReader", "codec.decode", "FrameDecoder(message_type)"])
def test_depth_limit_is_100(api: str) -> None:
    run = APIS["message"][api]
    assert not isinstance(run(Vector("S4", "100", MSG, DEEP_100, None, E.Chain)), DecodeError)
    too_deep = run(Vector("S4", "101", MSG, DEEP_101, None, E.Chain))
    assert isinstance(too_deep, DepthLimitError) and too_deep.offset == TOO_DEEP_AT
    groups = run(Vector("S5", "g100", MSG, b"\x13" * 100 + b"\x14" * 100, None, E.CatInt32))
    assert not isinstance(groups, DecodeError)
    groups = run(Vector("S5", "g101", MSG, b"\x13" * 101 + b"\x14" * 101, None, E.CatInt32))
    assert isinstance(groups, DepthLimitError)


# --- M1-M6: buffer lifetimes ----------------------------------------------------------------------


@covers("M1")
def test_encoder_refuses_to_grow_or_clear_under_a_view() -> None:
    encoder = FrameEncoder(capacity=16)
    encoder.write(b"abc")
    view = encoder.getbuffer()
    before = bytes(view)
    for call in (lambda: encoder.write(b"x" * 100), encoder.clear):
        with pytest.raises(BufferError):
            call()
        assert bytes(view) == before and len(encoder) == len(before)
    encoder.write(b"fits")  # no growth needed: allowed, the view is unchanged
    assert bytes(view) == before
    view.release()
    encoder.write(b"x" * 100)
    encoder.clear()


@covers("M1", "M5")
@pytest.mark.parametrize("via", ["feed", "buffer"])
def test_decoder_compaction_never_moves_a_held_frame(via: str) -> None:
    decoder = FrameDecoder()
    held = []
    for i in range(200):
        payload = bytes([i % 251]) * (i * 37 % 3000)
        frame = varint(len(payload)) + payload
        if via == "feed":
            decoder.feed(frame[:5])
            decoder.feed(frame[5:])
        else:
            with decoder.get_buffer(len(frame)) as window:
                window[: len(frame)] = frame
            decoder.buffer_updated(len(frame))
        view = decoder.next_frame()
        held.append((view, payload))
        if i % 3 == 0:
            old, _ = held.pop(0)
            old.release()
    del decoder
    gc.collect()  # views outlive their decoder
    for view, payload in held:
        assert bytes(view) == payload


@covers("M5")
def test_abandoned_get_buffer_view_cannot_corrupt_frames() -> None:
    decoder = FrameDecoder()
    decoder.feed(h("03 61 62 63"))
    frame = decoder.next_frame()
    stale = decoder.get_buffer(100)  # never committed
    decoder.feed(h("02 78 79"))
    stale[:] = b"\xee" * len(stale)  # a late recv_into
    assert bytes(frame) == b"abc" and bytes(decoder.next_frame()) == b"xy"


def _numpy() -> Any:
    import numpy

    return numpy


@covers("M2")
@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda d: memoryview(d + d)[::2], id="non-contiguous"),
        pytest.param(lambda d: _numpy().frombuffer(d + d, "u1")[::2], id="numpy-strided"),
    ],
)
def test_non_contiguous_input_is_buffer_error(make: Callable[[bytes], Any]) -> None:
    data = h("08 96 01")
    for call in (
        lambda: codec.varint.decode(make(data)),
        lambda: FrameDecoder().feed(make(data)),
        lambda: WireReader(make(data)),
        lambda: codec.decode(S(E.CatInt32), make(data)),
    ):
        with pytest.raises(BufferError):
            call()


@covers("M2")
@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda d: memoryview(bytearray(d)).toreadonly(), id="read-only"),
        pytest.param(lambda d: array.array("H", d), id="2-byte-items"),
        pytest.param(lambda d: memoryview(b"\xff" + d + b"\xff")[1:-1], id="offset-view"),
    ],
)
def test_read_only_and_multibyte_input_is_read_as_its_bytes(make: Callable[[bytes], Any]) -> None:
    data = h("08 96 01 12 01 61")  # an even length: the 2-byte-item array holds it exactly
    assert codec.varint.decode(make(data), 1) == (150, 3)
    fields = [(n, t, bytes(v) if t == codec.wire.LEN else v) for n, t, v in WireReader(make(data))]
    assert fields == [(1, codec.wire.VARINT, 150), (2, codec.wire.LEN, b"a")]
    decoder = FrameDecoder()
    decoder.feed(make(data))
    assert decoder.buffered == len(data)
    decoded = codec.decode(S(E.AllTypes), make(data))
    assert decoded.f_int32 == 150
    assert codec.unknown_fields(decoded) == h("12 01 61")  # int64 field 2 sent as LEN (T5)


@covers("M3", "M5")
def test_readers_and_zero_copy_values_pin_their_bytearray() -> None:
    """The codec holds real buffer exports, not bare pointers: resizing must fail while alive."""
    buffer = bytearray(h("0a 03 61 62 63 10 01"))
    reader = WireReader(buffer)
    with pytest.raises(BufferError):
        buffer.extend(b"x")
    value = next(reader)[2]
    del reader
    with pytest.raises(BufferError):  # the value alone still pins it
        buffer.extend(b"x")
    assert bytes(value) == b"abc"
    del value
    buffer.extend(b"x")  # nothing holds it any more
    del buffer[-1]

    source = bytearray(h("12 03 61 62 63"))
    decoded = codec.decode(S(E.CatString), source, zero_copy=True)
    assert isinstance(decoded.data, memoryview) and bytes(decoded.data) == b"abc"
    with pytest.raises(BufferError):
        source.extend(b"x")
    data = decoded.data
    del decoded
    with pytest.raises(BufferError):  # the field outlives its struct
        source.extend(b"x")
    assert bytes(data) == b"abc"
    del data
    source.extend(b"x")


@covers("M3")
def test_encode_frame_into_refuses_an_exported_bytearray() -> None:
    target = bytearray(b"head")
    view = memoryview(target)
    with pytest.raises(BufferError):
        codec.encode_frame_into(b"payload", target)
    assert target == b"head" and bytes(view) == b"head"
    view.release()
    assert codec.encode_frame_into(b"payload", target) == 4 + 1 + 7


class Flaky:
    """An index that changes every time it is read (msgpack-python#723)."""

    def __init__(self, *values: int) -> None:
        self.values = list(values)
        self.calls = 0

    def __index__(self) -> int:
        self.calls += 1
        return self.values.pop(0) if len(self.values) > 1 else self.values[0]


@covers("M4")
def test_unstable_index_arguments_are_read_once() -> None:
    """Offsets are converted to C integers once: bounds checks and reads see one value."""
    offset = Flaky(0, 10**6)
    assert codec.varint.decode(h("96 01"), offset) == (150, 2)
    assert offset.calls == 1
    target = bytearray(8)
    offset = Flaky(2, 10**9)
    assert codec.varint.encode_into(300, target, offset) == 4
    assert target == h("00 00 ac 02 00 00 00 00") and offset.calls == 1
    # Sizes and limits are not indexes: anything but an int is refused before use.
    decoder = FrameDecoder()
    for call in (
        lambda: decoder.get_buffer(Flaky(8, 10**9)),  # type: ignore[arg-type]
        lambda: FrameDecoder(max_frame_size=Flaky(64, 2**62)),  # type: ignore[arg-type]
        lambda: decoder.buffer_updated(Flaky(1, -1)),  # type: ignore[arg-type]
    ):
        with pytest.raises(TypeError):
            call()
    decoder.feed(h("01 61"))
    assert bytes(decoder.next_frame()) == b"a"


@covers("M6")
def test_zero_length_edges() -> None:
    with pytest.raises(TruncatedError):
        codec.varint.decode(b"")
    assert list(WireReader(b"")) == []
    assert list(WireReader(memoryview(b""))) == []
    assert codec.decode(S(E.AllTypes), bytearray()) == S(E.AllTypes)()
    decoder = FrameDecoder()
    decoder.feed(b"")
    decoder.feed(bytearray())
    with decoder.get_buffer(0) as window:
        assert len(window) > 0
    decoder.buffer_updated(0)
    assert decoder.next_frame() is None and decoder.buffered == 0
    decoder.feed(b"\x00")
    empty = decoder.next_frame()
    assert bytes(empty) == b"" and len(empty) == 0
    decoder.feed_eof()
    encoder = FrameEncoder(capacity=0)
    assert encoder.write(b"") == 1
    with encoder.frame():
        pass
    with encoder.getbuffer() as view:
        assert bytes(view) == b"\x00\x00"
    assert codec.encode_frame_into(b"", bytearray()) == 1
    assert codec.encode(S(E.CatString)(text="", data=b"")) == b""


# --- objects whose __init__ never ran -------------------------------------------------------


def _probe(cases: list[tuple[str, str, str]]) -> dict[str, tuple[str, str]]:
    """Run the calls in a child process (a crash must not take pytest down with it)."""
    run = probe(cases)
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert lines[0] == ["compiled", codec.COMPILED]  # the child runs the build under test
    started = [line[1] for line in lines if line[0] == "call"]
    assert run.returncode == 0, f"crashed (exit {run.returncode}) in {started[-1]!r}: {run.stderr}"
    return {line[1]: (line[2], line[3]) for line in lines if line[0] == "done"}


def test_every_public_method_has_a_probe_call() -> None:
    missing = {
        f"{name}.{method}"
        for name, cls in compiled_public_classes().items()
        for method in public_names(cls)
        if method not in UNINITIALISED_CALLS
    }
    assert not missing


def test_objects_whose_init_never_ran_do_not_crash() -> None:
    """``cls.__new__(cls)``, then each method: it works or raises a clear error, never crashes.

    Compiled, such an object's fields are NULL and 0; each class checks the
    one its methods would otherwise use.
    """
    cases = uninitialised_cases()
    outcomes = _probe(cases)
    assert sorted(outcomes) == sorted(label for label, _, _ in cases)
    unclear = {label: got for label, got in outcomes.items() if not acceptable(*got)}
    assert not unclear
    assert outcomes["WireWriter.uint32"][0] == "RuntimeError"  # the two crashes of the report
    assert outcomes["Delimited.__exit__"][0] == "RuntimeError"
    assert outcomes["Decoder.decode"][0] == "RuntimeError"


@pytest.mark.parametrize(
    "call",
    [
        "codec.structs._struct.unknown_of(None)",
        "codec.structs._struct.enable_fast_paths(None)",
        "codec.structs._struct.enable_fast_paths(3)",
    ],
)
def test_struct_helpers_reachable_from_python_check_their_arguments(call: str) -> None:
    outcomes = _probe([(call, "", call)])
    assert outcomes[call][0] == "TypeError", outcomes[call]


#: The containers of repeated and map fields, made otherwise than by reading a field:
#: each use works or says clearly what is wrong.
_CONTAINERS = (
    "from codec.wellknown.struct_structs import ListValue, Struct, Value\n"
    "from codec.wellknown.field_mask_structs import FieldMask\n"
    "strings = type(FieldMask().paths); messages = type(ListValue().values)\n"
    "entries = type(Struct().fields)\n"
)
CONTAINER_MISUSE = {
    "Repeated()": "strings()",
    "Repeated.__new__, append": "strings.__new__(strings).append('x')",
    "Repeated.__new__, item assignment": "r = strings.__new__(strings); r[:] = ['x']",
    "RepeatedMessages.__new__, add": "messages.__new__(messages).add()",
    "a subclass of RepeatedMessages, add": (
        "mine = type('Mine', (messages,), {}); mine.__new__(mine).add()"
    ),
    "RepeatedMessages.MergeFrom": "messages.__new__(messages).MergeFrom([Value()])",
    "Entries()": "entries()",
    "Entries.fromkeys": "entries.fromkeys(['a'])",
    "Entries.__new__, read": "entries.__new__(entries)['a']",
    "Entries.__new__, item assignment": "entries.__new__(entries)['a'] = Value()",
    "Entries.__new__, update": "entries.__new__(entries).update(a=Value())",
    "Entries.__new__, setdefault": "entries.__new__(entries).setdefault('a', Value())",
    "Entries.__new__, |=": "e = entries.__new__(entries); e |= {'a': Value()}",
    "Entries.__new__, get_or_create": "entries.__new__(entries).get_or_create('a')",
    "Entries.__new__, MergeFrom": "entries.__new__(entries).MergeFrom({'a': Value()})",
}


def test_containers_not_read_from_a_message_do_not_crash() -> None:
    cases = [(label, "", _CONTAINERS + call) for label, call in CONTAINER_MISUSE.items()]
    outcomes = _probe(cases)
    assert sorted(outcomes) == sorted(CONTAINER_MISUSE)
    assert {label: kind for label, (kind, _) in outcomes.items() if kind != "TypeError"} == {}


@pytest.mark.skipif(not codec.COMPILED, reason="uncompiled, every helper is plain Python")
def test_struct_helpers_that_trust_their_arguments_are_c_only() -> None:
    from codec.structs import _struct

    for helper in ["new_struct", "message_size_at", "write_struct", "write_message_at"]:
        assert not hasattr(_struct, helper), helper


@pytest.mark.skipif(not codec.COMPILED, reason="uncompiled, the helpers are plain Python")
def test_buffer_helpers_that_trust_their_arguments_are_c_only() -> None:
    """``resize(None, 5)`` would hand NULL to CPython: the helpers take no call from Python."""
    helpers = ["byte_pointer", "copy_bytes", "move_bytes", "resize", "resize_zeroed"]
    helpers += ["is_exported", "grown", "uninitialised"]
    assert not [name for name in helpers if hasattr(codec._buffer, name)]


# --- a struct's class swapped for another of the same slots -------------------------

_CLASS_SWAP = """
import codec
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

FIELD = descriptor_pb2.FieldDescriptorProto


def message(name, optional):
    # 400 int32 fields of the same names in both: the same __slots__, so CPython lets
    # __class__ be assigned; 129 have presence in Small (3 words), all 400 in Big (7).
    file = descriptor_pb2.FileDescriptorProto(name=name + ".proto", package=name, syntax="proto3")
    body = file.message_type.add(name="M")
    for number in range(1, 401):
        field = body.field.add(name=f"f{number}", number=number, type=FIELD.TYPE_INT32)
        field.label = FIELD.LABEL_OPTIONAL
        if number <= optional:
            field.proto3_optional = True
            body.oneof_decl.add(name=f"_f{number}")
            field.oneof_index = len(body.oneof_decl) - 1
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return codec.struct(message_factory.GetMessageClass(pool.FindMessageTypeByName(name + ".M")))


Small, Big = message("small", 129), message("big", 400)
small = Small(f129=1)  # its presence words past the first: 2 (16 bytes)
object.__dict__["__class__"].__set__(small, Big)
for number in range(130, 401):
    setattr(small, f"f{number}", number)
assert small.HasField("f129") and small.HasField("f400")
assert Big.FromString(small.SerializeToString()) == small
print("ok")
"""


def test_a_struct_given_a_class_with_more_presence_bits_grows_its_words() -> None:
    """Two struct classes of the same slots: CPython lets ``__class__`` be assigned around
    ``Struct.__setattr__``. The presence words of the old class are grown, never overrun."""
    env = dict(os.environ, PYTHONPATH=str(Path(codec.__file__).resolve().parent.parent))
    done = subprocess.run(
        [sys.executable, "-c", _CLASS_SWAP], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ok"]


# --- copies and pickles of objects that own memory ------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: codec.FrameEncoder(),
        lambda: codec.FrameDecoder(),
        lambda: codec.Decoder(S(E.CatInt32)),
        lambda: codec.wire.WireReader(b"\x08\x01"),
        lambda: codec.wire.WireWriter(),
        lambda: codec._buffer.WriteBuffer(),
    ],
    ids=["FrameEncoder", "FrameDecoder", "Decoder", "WireReader", "WireWriter", "WriteBuffer"],
)
def test_objects_owning_a_buffer_refuse_to_be_copied_or_pickled(make: Callable[[], Any]) -> None:
    """A copy would share the buffer: a decoder's copy read freed memory, an encoder's wrote
    stale bytes. Each refuses, in both builds."""
    original = make()
    for attempt in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="cannot be copied or pickled: it owns its buffer"):
            attempt(original)


def test_a_frame_decoder_is_unharmed_by_a_refused_copy() -> None:
    decoder = codec.FrameDecoder()
    decoder.feed(codec.varint.encode(10**6) + b"\x00" * 10**6)
    with pytest.raises(TypeError):
        copy.copy(decoder)
    assert len(next(decoder)) == 10**6
    decoder.feed(b"\x01x")
    assert bytes(next(decoder)) == b"x"


@pytest.mark.skipif(not codec.COMPILED, reason="uncompiled, no class is rebuilt from C state")
def test_no_compiled_class_is_rebuilt_from_unchecked_state() -> None:
    """Cython's automatic pickling would set C fields the code trusts (offsets, lengths)."""
    found = []
    for name in codec._pure.COMPILED_MODULES:
        module = importlib.import_module(name)
        found += [
            f"{name}.{key}"
            for key in vars(module)
            # __pyx_unpickle_Enum remakes a member of a cpdef enum: a value, no C state
            if key.startswith("__pyx_unpickle") and key != "__pyx_unpickle_Enum"
        ]
        for value in vars(module).values():
            if isinstance(value, type) and "__setstate_cython__" in vars(value):
                found.append(f"{name}.{value.__name__}.__setstate_cython__")
    assert found == []


# --- a struct of another class stored around the checks in the extensions -----------

_FOREIGN_EXTENSIONS = """
import sys
import threading
import time
import codec
from schemas import extensions_pb2 as X

Extendable, Plain = codec.struct(X.Extendable), codec.struct(X.Plain)
OPERATIONS = [
    "repr(m)", "codec.encode(m)", "m.SerializeToString()", "m.ByteSize()", "m.ListFields()",
    "m.IsInitialized()", "m == Extendable()", "m.HasExtension(X.i32)", "m.Extensions[X.i32]",
    "len(m.Extensions)", "codec.FrameEncoder().encode(m)", "m.MergeFrom(Extendable())",
    "m.ClearExtension(X.i32)", "codec.structs._struct.take_extensions(m, Plain())", "m.Clear()",
]
for where in ("holder", "_113", "_114"):  # the hidden slot; a message extension's; a repeated one's
    for operation in OPERATIONS:
        m = Extendable(a=1)
        m.Extensions[X.i32] = 5
        slot = type(m).__dict__["_extensions"]
        holder = slot.__get__(m, type(m))
        if where == "holder":
            slot.__set__(m, Plain(a=3))
        else:
            type(holder).__dict__[where].__set__(holder, Plain(a=3))
        try:
            eval(operation)
            outcome = "ok"
        except Exception as error:
            outcome = type(error).__name__
        print(where, operation, outcome, flush=True)
"""


def test_a_foreign_struct_in_the_extensions_is_refused_or_ignored() -> None:
    """Stored through a slot's descriptor, around the checks: never read as what it is not."""
    tests = Path(__file__).resolve().parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tests.parent), str(tests)]))
    done = subprocess.run(
        [sys.executable, "-c", _FOREIGN_EXTENSIONS],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-500:] + done.stderr[-2000:]
    outcomes = [line.rsplit(" ", 1)[1] for line in done.stdout.splitlines()]
    assert len(outcomes) == 45
    assert set(outcomes) <= {"ok", "TypeError", "EncodeError"}
    encodes = [line for line in done.stdout.splitlines() if "encode" in line and "holder" in line]
    assert all(line.endswith("EncodeError") for line in encodes), encodes


# --- the required-field walk and error offsets at their limits ------------------------


def _cycle_and_deep() -> list[Any]:
    Link = S(L.Link)
    cycle = Link(a=1)
    cycle.next = cycle
    deep = Link(a=1)
    for _ in range(2000):
        deep = Link(a=1, next=deep)
    return [cycle, deep]


@pytest.mark.parametrize(
    "encode",
    [
        codec.encode,
        lambda m: m.SerializeToString(),
        lambda m: codec.FrameEncoder().encode(m),
        lambda m: codec.encode_frame_into(m, bytearray()),
        lambda m: codec.write_frames(io.BytesIO(), [m]),
    ],
    ids=["encode", "SerializeToString", "FrameEncoder", "encode_frame_into", "write_frames"],
)
def test_a_cycle_or_deep_nesting_with_required_fields_is_an_encode_error(encode: Any) -> None:
    """The required-field check walks without recursion; the encoder's depth limit refuses."""
    for message in _cycle_and_deep():
        with pytest.raises(codec.EncodeError, match="nested deeper than 100 levels"):
            encode(message)


def test_the_required_field_walk_reports_a_cycle_once() -> None:
    cycle, deep = _cycle_and_deep()
    assert cycle.IsInitialized() and deep.IsInitialized()
    Link = S(L.Link)
    loop = Link(next=Link())
    loop.next.next = loop
    assert loop.FindInitializationErrors() == ["a", "next.a"]


@pytest.mark.parametrize("base", [2**63 - 1, 2**63 - 2, 2**70])
def test_a_base_whose_offsets_would_not_fit_is_refused(base: int) -> None:
    with pytest.raises(ValueError, match="base must be at most"):
        codec.decode(S(E.AllTypes), b"\x12", base=base)


def test_error_offsets_near_the_largest_base_stay_positive() -> None:
    base = sys.maxsize - 2  # the largest a 1-byte input takes
    with pytest.raises(codec.DecodeError) as info:
        codec.decode(S(E.AllTypes), b"\x12", base=base)
    assert info.value.offset == base + 1


def test_a_packed_list_changed_by_another_thread_during_encode_is_read_whole() -> None:
    """Uncompiled, a thread switch can fall between two bytecodes of the encoder's walk."""
    message = S(E.AllTypes)(p_int32=list(range(2000)))
    stop = threading.Event()

    def refill() -> None:
        while not stop.is_set():
            items = message.p_int32
            list.clear(items)
            list.extend(items, range(2000))

    errors: list[str] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    thread = threading.Thread(target=refill)
    thread.start()
    try:
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            try:
                codec.decode(S(E.AllTypes), codec.encode(message))  # whatever was read, whole
            except Exception as error:
                errors.append(type(error).__name__)
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
    assert errors == []


def _nested_struct_json(levels: int) -> str:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"a": value}
    return json.dumps(value)


@pytest.mark.parametrize("levels", [34, 49])  # 49: json_format's deepest Struct
def test_json_that_json_format_parses_gives_its_struct(levels: int) -> None:
    """Its limits are json_format's: a JSON level of a Struct is three wire levels."""
    from google.protobuf import json_format, struct_pb2

    text = _nested_struct_json(levels)
    expected = json_format.Parse(text, struct_pb2.Struct())
    parsed = codec.from_json(S(struct_pb2.Struct), text)
    assert codec.encode(parsed, True, deterministic=True) == expected.SerializeToString(
        deterministic=True
    )


def test_json_beyond_json_formats_limit_is_its_parse_error() -> None:
    from google.protobuf import json_format, struct_pb2

    with pytest.raises(json_format.ParseError, match="too deep"):
        codec.from_json(S(struct_pb2.Struct), _nested_struct_json(50))


def test_json_of_more_elements_than_a_decode_takes_is_parsed_whole() -> None:
    parsed = codec.from_dict(S(E.AllTypes), {"pInt32": [1] * 1_000_001})
    assert len(parsed.p_int32) == 1_000_001


def test_the_required_field_walk_reads_empty_slots_as_unset() -> None:
    """A struct made by ``__new__``, or a slot emptied through its descriptor: no AttributeError."""
    Link = S(L.Link)
    bare = Link.__new__(Link)
    emptied = Link(a=1, next=Link(a=2), tag="t")
    for name in ("_next_part", "tag"):
        type(emptied).__dict__[name].__delete__(emptied)
    for message, missing in ((bare, ["a"]), (emptied, ["next.a"])):
        assert message.FindInitializationErrors() == missing
        assert not message.IsInitialized()
        for encode in (codec.encode, lambda m: m.SerializeToString(), FrameEncoder().encode):
            with pytest.raises(codec.EncodeError, match="missing required fields"):
                encode(message)
