"""Fuzz target: WireReader field iteration, nested readers and packed reads, against a model.

Input layout::

    data[0]   bits 0-1 max_depth, one of DEPTHS; bits 2-4 the buffer type, one of
              SOURCES; bit 5 walk nested readers; bits 6-7 unused
    data[1]   the packed kind tried on every LEN value (index into KINDS, modulo)
    data[2:]  the message bytes

Short inputs default the missing header bytes to 0, so any byte string is an input.

Properties checked by :func:`check` (see ``fuzz/README.md``):

* only :class:`codec.DecodeError` subclasses escape, from iteration, ``nested()``
  and ``packed()``;
* the fields (number, wire type, value) and the error (exact class, offset,
  ``missing``) equal those of a small model of the wire format written from the
  rules of ``codec/wire.py``'s docstring (tags <= 5 bytes and <= 2**32 - 1, no
  field 0, no wire type 6/7, LEN sizes <= 5 bytes, an end-group tag needs its
  start, groups are skipped under ``max_depth``, every length checked against
  the bytes left);
* iterating again after an error raises the same error;
* every buffer type (``bytes``, ``bytearray``, read-only and offset
  ``memoryview``\\ s, a 2-byte-item view) gives the same outcome;
* nested readers over LEN values and group bodies (when walking) report the
  model's fields and errors at offsets of the outermost buffer, and refuse to
  go deeper than ``max_depth``;
* ``packed(value, kind)`` gives the model's elements or error;
* the fields re-encoded with :class:`codec.wire.WireWriter` read back the same and
  take no more bytes than the input (minimal tags and varints).

Run: ``python fuzz/fuzz_wire_reader.py [libFuzzer flags] [corpus dirs]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

if __name__ == "__main__":
    import atheris

    with atheris.instrument_imports(include=["codec"]):
        import codec
else:
    import codec

DEPTHS = (100, 3, 1, 0)
KINDS = (
    "uint64",
    "int32",
    "sint64",
    "fixed32",
    "double",
    "bool",
    "sint32",
    "int64",
    "uint32",
    "enum",
    "fixed64",
    "sfixed32",
    "sfixed64",
    "float",
)
WALK = 0x20
MAX_READERS = 24  # nested readers per input, to bound the cost of one run

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5
Field = tuple[int, int, Any]
Error = tuple[type, int | None, int | None]  # class, offset, missing (None: not compared)


def _sources(data: bytes) -> list[Callable[[], Any]]:
    """Ways of handing ``data`` to the reader; the last one only for even lengths."""
    ways: list[Callable[[], Any]] = [
        lambda: data,
        lambda: bytearray(data),
        lambda: memoryview(data),
        lambda: memoryview(bytearray(data)).toreadonly(),
        lambda: memoryview(b"\xff" * 3 + data + b"\x0b")[3 : 3 + len(data)],
    ]
    if len(data) % 2 == 0:
        ways.append(lambda: memoryview(data).cast("H"))
    return ways


# --- the model ----------------------------------------------------------------------------


class ModelError(Exception):
    def __init__(self, cls: type, offset: int, missing: int | None = None) -> None:
        super().__init__(cls.__name__, offset, missing)
        self.key: Error = (cls, offset, missing)


def _tag(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    n = 0
    tag = 0
    while True:
        if n >= end - pos:
            raise ModelError(codec.errors.TruncatedError, pos)
        byte = buf[pos + n]
        tag |= (byte & 0x7F) << (7 * n)
        n += 1
        if byte < 0x80:
            break
        if n == 5:
            raise ModelError(codec.errors.WireFormatError, pos)
    if tag > 0xFFFFFFFF or tag >> 3 == 0 or tag & 7 > 5:
        raise ModelError(codec.errors.WireFormatError, pos)
    return tag, n


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    value = 0
    for n in range(1, 11):
        if pos + n > end:
            raise ModelError(codec.errors.TruncatedError, pos)
        byte = buf[pos + n - 1]
        value |= (byte & 0x7F) << (7 * (n - 1))
        if byte < 0x80:
            if n == 10 and byte > 1:
                raise ModelError(codec.errors.VarintError, pos)
            return value, n
    raise ModelError(codec.errors.VarintError, pos)


def _size(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """A LEN value's size: a valid varint of at most 5 bytes (upb's rule)."""
    size, n = _varint(buf, pos, end)
    if n > 5:
        raise ModelError(codec.errors.WireFormatError, pos)
    return size, n


def _skip(buf: bytes, pos: int, end: int, wire_type: int) -> int:
    if wire_type == VARINT:
        return pos + _varint(buf, pos, end)[1]
    if wire_type == LEN:
        size, n = _size(buf, pos, end)
        body = pos + n
        if size > end - body:
            raise ModelError(codec.errors.TruncatedError, pos, size - (end - body))
        return body + size
    width = 8 if wire_type == I64 else 4
    if width > end - pos:
        raise ModelError(codec.errors.TruncatedError, pos, width - (end - pos))
    return pos + width


def model(
    buf: bytes, start: int, end: int, depth: int, max_depth: int
) -> tuple[list[tuple[int, int, Any, int, int]], Error | None]:
    """Fields of ``buf[start:end]`` read at ``depth``; offsets are absolute.

    Each field is ``(number, wire type, value, value start, value end)``; the
    value of LEN fields and groups is the bytes of the body.
    """
    fields: list[tuple[int, int, Any, int, int]] = []
    pos = start
    try:
        while pos < end:
            tag, n = _tag(buf, pos, end)
            number, wire_type = tag >> 3, tag & 7
            at = pos + n
            if wire_type == VARINT:
                value, n = _varint(buf, at, end)
                fields.append((number, wire_type, value, at, at + n))
                pos = at + n
            elif wire_type == LEN:
                size, n = _size(buf, at, end)
                body = at + n
                if size > end - body:
                    raise ModelError(codec.errors.TruncatedError, at, size - (end - body))
                fields.append((number, wire_type, buf[body : body + size], body, body + size))
                pos = body + size
            elif wire_type in (I64, I32):
                after = _skip(buf, at, end, wire_type)
                fields.append(
                    (number, wire_type, int.from_bytes(buf[at:after], "little"), at, after)
                )
                pos = after
            elif wire_type == SGROUP:
                level = depth + 1
                if level > max_depth:
                    raise ModelError(codec.errors.DepthLimitError, pos)
                stack = [number]
                inner_pos = at
                while True:
                    if inner_pos >= end:
                        raise ModelError(codec.errors.TruncatedError, pos)
                    inner_tag, n = _tag(buf, inner_pos, end)
                    inner_number, inner_type = inner_tag >> 3, inner_tag & 7
                    after = inner_pos + n
                    if inner_type == SGROUP:
                        if level + len(stack) > max_depth:
                            raise ModelError(codec.errors.DepthLimitError, inner_pos)
                        stack.append(inner_number)
                    elif inner_type == EGROUP:
                        if inner_number != stack[-1]:
                            raise ModelError(codec.errors.WireFormatError, inner_pos)
                        stack.pop()
                        if not stack:
                            fields.append((number, SGROUP, buf[at:inner_pos], at, inner_pos))
                            pos = after
                            break
                    else:
                        after = _skip(buf, after, end, inner_type)
                    inner_pos = after
            else:
                raise ModelError(codec.errors.WireFormatError, pos)
    except ModelError as exc:
        return fields, exc.key
    return fields, None


def _packed_model(buf: bytes, start: int, end: int, kind: str) -> list[Any] | Error:
    width = {"fixed32": 4, "sfixed32": 4, "float": 4, "fixed64": 8, "sfixed64": 8, "double": 8}
    if kind in width:
        if (end - start) % width[kind]:
            return (codec.errors.WireFormatError, start, None)
        import numpy

        dtype = {"fixed32": "<u4", "sfixed32": "<i4", "float": "<f4"}
        dtype |= {"fixed64": "<u8", "sfixed64": "<i8", "double": "<f8"}
        return numpy.frombuffer(buf[start:end], dtype[kind]).tolist()  # type: ignore[no-any-return]
    values = []
    pos = start
    try:
        while pos < end:
            value, n = _varint(buf, pos, end)
            pos += n
            values.append(_element(value, kind))
    except ModelError as exc:
        return exc.key
    return values


def _element(value: int, kind: str) -> int:
    def signed(v: int, bits: int) -> int:
        return v - (1 << bits) if v >> (bits - 1) else v

    if kind == "uint64":
        return value
    if kind == "int64":
        return signed(value, 64)
    if kind == "sint64":
        return (value >> 1) ^ -(value & 1)
    if kind == "bool":
        return 1 if value else 0
    low = value & 0xFFFFFFFF
    if kind == "uint32":
        return low
    if kind == "sint32":
        return (low >> 1) ^ -(low & 1)
    return signed(low, 32)  # int32, enum


# --- codec's side ---------------------------------------------------------------------------


def _error_key(exc: codec.DecodeError, with_missing: bool) -> Error:
    missing = getattr(exc, "missing", None) if with_missing else None
    return type(exc), exc.offset, missing


def _read(reader: codec.wire.WireReader) -> tuple[list[Field], codec.DecodeError | None]:
    fields: list[Field] = []
    try:
        for number, wire_type, value in reader:
            fields.append((number, wire_type, value))
    except codec.DecodeError as exc:
        try:
            next(reader)
        except codec.DecodeError as again:
            assert (type(again), again.offset) == (type(exc), exc.offset), (again, exc)
        else:
            raise AssertionError(f"iterating again after {exc!r} did not raise") from None
        return fields, exc
    return fields, None


def _compare(
    where: str,
    got: tuple[list[Field], codec.DecodeError | None],
    expected: tuple[list[tuple[int, int, Any, int, int]], Error | None],
) -> None:
    fields, error = got
    model_fields, model_error = expected
    plain = [(n, w, bytes(v) if isinstance(v, memoryview) else v) for n, w, v in fields]
    assert plain == [f[:3] for f in model_fields], f"{where}: fields {plain} != {model_fields}"
    if model_error is None:
        assert error is None, f"{where}: codec raised {error!r}, the model accepts"
    else:
        assert error is not None, f"{where}: codec accepts, the model raises {model_error}"
        key = _error_key(error, model_error[2] is not None)
        assert key == model_error, f"{where}: {error!r} {key} != model {model_error}"


def _check_packed(
    reader: codec.wire.WireReader, value: memoryview, kind: str, buf: bytes, span: tuple[int, int]
) -> None:
    expected = _packed_model(buf, span[0], span[1], kind)
    try:
        array = reader.packed(value, kind)
    except codec.DecodeError as exc:
        assert isinstance(expected, tuple), f"packed {kind}: {exc!r}, model {expected}"
        assert (type(exc), exc.offset) == expected[:2], f"packed {kind}: {exc!r} != {expected}"
        return
    assert not isinstance(expected, tuple), f"packed {kind} accepted, model {expected}"
    got = array.tolist()
    if kind in ("float", "double"):  # NaN != NaN: compare the bit patterns
        assert array.tobytes() == buf[span[0] : span[1]], f"packed {kind}"
    else:
        assert got == expected, f"packed {kind}: {got} != {expected}"


def _reencode(fields: list[Field]) -> bytes:
    writer = codec.wire.WireWriter()
    for number, wire_type, value in fields:
        if wire_type == VARINT:
            writer.varint(number, value)
        elif wire_type == I64:
            writer.fixed64(number, value)
        elif wire_type == I32:
            writer.fixed32(number, value)
        elif wire_type == LEN:
            writer.bytes(number, value)
        else:
            writer.tag(number, SGROUP)
            writer.raw(value)
            writer.tag(number, EGROUP)
    with writer.buffer.getbuffer() as view:
        return bytes(view)


def check(data: bytes) -> None:
    """The property: raises AssertionError (or any non-DecodeError) on a finding."""
    data = bytes(data)
    flags = data[0] if data else 0
    kind = KINDS[(data[1] if len(data) > 1 else 0) % len(KINDS)]
    buf = data[2:]
    max_depth = DEPTHS[flags & 3]
    sources = _sources(buf)
    make = sources[((flags >> 2) & 7) % len(sources)]

    expected = model(buf, 0, len(buf), 0, max_depth)
    reader = codec.wire.WireReader(make(), max_depth=max_depth)
    got = _read(reader)
    _compare(f"top level ({make.__name__})", got, expected)

    # Every buffer type gives the same outcome (checked on the first two as well).
    for other in (sources[0], sources[-1]):
        _compare(
            "other buffer type",
            _read(codec.wire.WireReader(other(), max_depth=max_depth)),
            expected,
        )

    fields, error = got
    spans = expected[0]
    for (number, wire_type, value), span in zip(fields, spans, strict=True):
        del number
        if wire_type == LEN:
            _check_packed(reader, value, kind, buf, span[3:])

    if flags & WALK:
        budget = [MAX_READERS]
        _walk(reader, fields, spans, buf, 0, max_depth, budget)

    if error is None:
        output = _reencode(fields)
        again = _read(codec.wire.WireReader(output, max_depth=max_depth))
        assert again[1] is None, f"re-encoded fields do not read back: {again[1]!r}"
        plain = [(n, w, bytes(v) if w in (LEN, SGROUP) else v) for n, w, v in fields]
        back = [(n, w, bytes(v) if w in (LEN, SGROUP) else v) for n, w, v in again[0]]
        assert back == plain, f"re-encoded {output.hex()} reads {back}, not {plain}"
        assert len(output) <= len(buf), f"re-encoding grew {len(buf)} -> {len(output)} bytes"


def _walk(
    reader: codec.wire.WireReader,
    fields: list[Field],
    spans: list[tuple[int, int, Any, int, int]],
    buf: bytes,
    depth: int,
    max_depth: int,
    budget: list[int],
) -> None:
    """Open nested readers over LEN values and group bodies, depth first, within ``budget``."""
    for (_, wire_type, value), span in zip(fields, spans, strict=True):
        if wire_type not in (LEN, SGROUP) or budget[0] <= 0:
            continue
        budget[0] -= 1
        start, end = span[3], span[4]
        try:
            child = reader.nested(value)
        except codec.errors.DepthLimitError as exc:
            assert depth + 1 > max_depth, f"nested() refused depth {depth + 1}: {exc!r}"
            assert exc.offset == start, f"nested() error at {exc.offset}, value at {start}"
            continue
        assert depth + 1 <= max_depth, f"nested() accepted depth {depth + 1} > {max_depth}"
        assert child.depth == depth + 1 and child.offset == start
        expected = model(buf, start, end, depth + 1, max_depth)
        got = _read(child)
        _compare(f"nested at {start} depth {depth + 1}", got, expected)
        _walk(child, got[0], expected[0], buf, depth + 1, max_depth, budget)


def make_input(
    message: bytes,
    *,
    max_depth: int = 100,
    source: int = 0,
    walk: bool = True,
    kind: str = "uint64",
) -> bytes:
    """The fuzz input that reads ``message`` with these settings (for seed corpora)."""
    flags = DEPTHS.index(max_depth) | (source << 2) | (WALK if walk else 0)
    return bytes([flags, KINDS.index(kind)]) + message


def main() -> None:
    """libFuzzer entry point (only when run as a script)."""
    try:
        from fuzz._harness import run
    except ImportError:  # run as ``python fuzz/fuzz_wire_reader.py``: fuzz/ is sys.path[0]
        from _harness import run

    run(atheris, check)


if __name__ == "__main__":
    main()
