"""Fuzz target: one varint at a fuzzer-chosen offset, in both profiles.

Input layout: ``data[0]`` picks the offset, ``data[1:]`` is the buffer. The
offset is ``data[0] % (len(buffer) + 2)``, so it can also point at the end of
the buffer or one byte past it (both must give ``TruncatedError``).

Properties checked by :func:`check` (see ``fuzz/README.md``):

* only :class:`codec.DecodeError` subclasses escape, and the error's
  ``offset`` is the offset asked for;
* the outcome (value and end, or error class) matches a small model of the
  two profiles (protobuf: <= 10 bytes, 10th byte <= 1, padding allowed;
  strict: <= 9 bytes, minimal only);
* a decoded value re-encodes (protobuf profile) to a minimal varint of
  ``size(value)`` bytes that decodes back to the same value; in the strict
  profile the consumed bytes are exactly that minimal encoding;
* ``bytes``, ``bytearray`` and ``memoryview`` buffers give the same outcome;
* differential against ``google.protobuf.internal.decoder._DecodeVarint``:
  same ``(value, end)`` wherever codec accepts; where codec rejects, protobuf
  fails too, except for the documented 10th-byte overflow (protobuf masks).

Run: ``python fuzz/fuzz_varint.py [libFuzzer flags] [corpus dirs]``.
"""

from __future__ import annotations

from google.protobuf.internal.decoder import _DecodeVarint as _pb_decode_varint
from google.protobuf.message import DecodeError as _PbDecodeError

if __name__ == "__main__":
    import atheris

    with atheris.instrument_imports(include=["codec"]):
        import codec
        from codec import varint
else:
    import codec
    from codec import varint

_UINT64_END = 1 << 64
_UINT63_END = 1 << 63


def _model(buf: bytes, offset: int, strict: bool) -> tuple[int, int] | type[codec.DecodeError]:
    """Expected ``(value, end)``, or the expected error class, per the profile's rules."""
    limit = varint.STRICT_MAX_LEN if strict else varint.MAX_LEN
    value = 0
    for n in range(1, limit + 1):
        i = offset + n - 1
        if i >= len(buf):
            return codec.errors.TruncatedError
        byte = buf[i]
        value |= (byte & 0x7F) << (7 * (n - 1))
        if byte < 0x80:
            if strict and n > 1 and byte == 0:
                return codec.errors.VarintError  # not minimal
            if not strict and n == varint.MAX_LEN and byte > 1:
                return codec.errors.VarintError  # overflows 64 bits
            return value, i + 1
    return codec.errors.VarintError  # too long for the profile


def _decode(buffer: object, offset: int, strict: bool) -> tuple[int, int] | codec.DecodeError:
    """codec's answer; any exception other than DecodeError propagates (a finding)."""
    try:
        return varint.decode(buffer, offset, strict=strict)
    except codec.DecodeError as exc:
        return exc


def _key(outcome: tuple[int, int] | codec.DecodeError) -> object:
    if isinstance(outcome, codec.DecodeError):
        return (type(outcome), outcome.offset, str(outcome))
    return outcome


def _check_profile(buf: bytes, offset: int, strict: bool) -> tuple[int, int] | None:
    """Check one profile; return ``(value, end)`` when it accepts, else None."""
    outcome = _decode(buf, offset, strict)
    where = f"strict={strict} offset={offset} buf={buf.hex()}"

    for other in (bytearray(buf), memoryview(buf)):
        again = _decode(other, offset, strict)
        assert _key(again) == _key(outcome), (
            f"{type(other).__name__} gave {again!r}, bytes gave {outcome!r}: {where}"
        )

    expected = _model(buf, offset, strict)
    if isinstance(outcome, codec.DecodeError):
        assert outcome.offset == offset, f"error offset {outcome.offset}: {where}"
        assert type(outcome) is expected, f"raised {outcome!r}, expected {expected}: {where}"
        return None
    assert outcome == expected, f"decoded {outcome}, expected {expected}: {where}"
    return outcome


def _check_reference_on_reject(buf: bytes, offset: int, error_class: type) -> None:
    """Where the protobuf profile rejects, upb/pure protobuf must fail too, bar the overflow."""
    try:
        value, end = _pb_decode_varint(buf, offset)
    except IndexError:  # protobuf's "buffer ended" (callers convert it)
        assert error_class is codec.errors.TruncatedError, (
            f"protobuf ran out, codec raised {error_class}"
        )
        return
    except _PbDecodeError:  # "Too many bytes when decoding varint."
        assert error_class is codec.errors.VarintError, f"protobuf: too long, codec: {error_class}"
        return
    # Documented divergence (catalogue V3): a 10th byte above 1 is masked by protobuf.
    assert error_class is codec.errors.VarintError, f"protobuf accepted, codec raised {error_class}"
    assert end == offset + varint.MAX_LEN and buf[end - 1] > 1, (
        f"protobuf accepted ({value}, {end}) where codec raised VarintError"
    )


def check(data: bytes) -> None:
    """The property: raises AssertionError (or any non-DecodeError) on a finding."""
    buf = bytes(data[1:])
    offset = data[0] % (len(buf) + 2) if data else 0

    loose = _check_profile(buf, offset, strict=False)
    strict = _check_profile(buf, offset, strict=True)

    if loose is None:
        error = _decode(buf, offset, False)
        _check_reference_on_reject(buf, offset, type(error))
    else:
        value, end = loose
        assert 0 <= value < _UINT64_END and 1 <= end - offset <= varint.MAX_LEN
        minimal = varint.encode(value)
        assert len(minimal) == varint.size(value) <= end - offset, (value, minimal.hex())
        assert len(minimal) == 1 or minimal[-1] != 0, f"non-minimal encode: {minimal.hex()}"
        assert all(b & 0x80 for b in minimal[:-1]) and minimal[-1] < 0x80, minimal.hex()
        assert varint.decode(minimal) == (value, len(minimal)), minimal.hex()
        into = bytearray(len(minimal))
        assert varint.encode_into(value, into) == len(minimal) and into == minimal
        # Differential: protobuf's own decoder agrees wherever codec accepts.
        reference = _pb_decode_varint(buf, offset)
        assert reference == (value, end), f"protobuf {reference}, codec {(value, end)}"

        consumed = buf[offset:end]
        canonical = consumed == minimal and end - offset <= varint.STRICT_MAX_LEN
        assert (strict is not None) == canonical, (
            f"strict accepts={strict is not None} but consumed={consumed.hex()} "
            f"minimal={minimal.hex()}"
        )

    if strict is not None:
        value, end = strict
        assert strict == loose, f"strict {strict} != protobuf profile {loose}"
        assert 0 <= value < _UINT63_END
        assert buf[offset:end] == varint.encode(value, strict=True), (
            f"strict consumed {buf[offset:end].hex()} for {value}"
        )


def main() -> None:
    """libFuzzer entry point (only when run as a script)."""
    try:
        from fuzz._harness import run
    except ImportError:  # run as ``python fuzz/fuzz_varint.py``: fuzz/ is sys.path[0]
        from _harness import run

    run(atheris, check)


if __name__ == "__main__":
    main()
