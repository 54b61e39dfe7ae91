"""Fuzz target: struct decode against upb (google.protobuf), modulo the documented divergences.

Input layout: ``data[0]`` picks the message type as in ``fuzz_struct_decode.py``
(below 128: ``ROOTS[data[0] % len(ROOTS)]``, else ``CLASSES[data[0] % len(CLASSES)]``
of ``fuzz/_schemas.py``); ``data[1:]`` is the message.

Properties checked by :func:`check` (see ``fuzz/README.md``); :func:`verdict`
returns which case an input fell in (used for the agreement figures):

* codec raises nothing but :class:`codec.DecodeError` subclasses, with an offset;
* **same accept/reject**: codec accepts exactly when upb's ``FromString``
  accepts, except for the intended divergences below, which are recognised
  and named (every other difference is a finding);
* **same content**: when both accept, ``codec.encode(..., deterministic=True)`` of
  codec's struct equals
  upb's ``SerializePartialToString(deterministic=True)`` byte for byte (fields,
  values, map entries, unknown fields and their order).

Intended divergences (``tests/test_structs_differential.py`` tests each one):

1. a 10-byte varint value whose 10th byte is > 1: upb drops the extra bits,
   codec rejects (``VarintError``; catalogue V3, ``docs/bad-inputs.md``);
2. invalid UTF-8 in a proto2 ``string``: upb keeps bytes, codec may reject;
3. field number 0 in a message type with no fields: upb keeps it as unknown,
   codec rejects it everywhere (catalogue T1);
4. a map entry kept among the unknown fields (it held an unknown field of its
   own) whose value holds a map: upb re-encodes that inner map in its hash
   table's order, codec in the deterministic order.

A float32 NaN, signalling ones included, is no divergence: codec re-encodes
the 4 bytes it read, as upb does.

Run: ``python fuzz/fuzz_differential.py [libFuzzer flags] [corpus dirs]``. The
oracle is whichever google.protobuf backend is loaded (upb unless
``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION`` says otherwise); the divergences
above were established against upb.
"""

from __future__ import annotations

from typing import Any

if __name__ == "__main__":
    import atheris

    with atheris.instrument_imports(include=["codec"]):
        import codec
else:
    import codec

from google.protobuf.message import DecodeError as ProtobufDecodeError

try:
    from fuzz import _schemas
except ImportError:  # run as ``python fuzz/fuzz_differential.py``: fuzz/ is sys.path[0]
    import _schemas  # type: ignore[no-redef]

from tests.schemas.divergences import (
    deterministic,
    has_proto2_invalid_utf8,
    has_unknown_map_entry,
    is_field_zero,
    is_varint_overflow,
)

ROOTS = [_schemas.by_name(name) for name in _schemas.ROOTS]


def pick(data: bytes) -> tuple[Any, bytes]:
    """``(google.protobuf class, message)`` of a fuzz input."""
    which = data[0] if data else 0
    if which < 128:
        return ROOTS[which % len(ROOTS)], bytes(data[1:])
    return _schemas.CLASSES[which % len(_schemas.CLASSES)][1], bytes(data[1:])


def make_input(message: bytes, root: int = 0) -> bytes:
    """The fuzz input that reads ``message`` as ``ROOTS[root]`` (for seed corpora)."""
    return bytes([root]) + message


# --- the comparison -----------------------------------------------------------------------------


def verdict(data: bytes) -> str:
    """Decode with upb and codec; return the verdict, or raise AssertionError on a finding."""
    cls, message = pick(data)
    try:
        expected = cls.FromString(message)
    except ProtobufDecodeError:
        expected = None
    struct = codec.struct(cls)
    try:
        decoded = codec.decode(struct, message)
        error = None
    except codec.DecodeError as exc:
        decoded, error = None, exc
    name = cls.DESCRIPTOR.full_name
    where = f"{name} <- {message.hex()}"
    if error is not None:
        assert isinstance(error.offset, int) and 0 <= error.offset <= len(message), repr(error)
        if expected is None:
            return "both reject"
        if is_varint_overflow(message, error):
            return "divergence 1: varint overflow"
        if has_proto2_invalid_utf8(expected):
            return "divergence 2: proto2 invalid UTF-8"
        if is_field_zero(message, error):
            return "divergence 3: field 0 in a message without fields"
        raise AssertionError(f"codec rejects what upb accepts: {error!r}: {where}")
    assert expected is not None, f"codec accepts what upb rejects: {where}"
    upb_bytes = deterministic(expected)
    codec_bytes = codec.encode(decoded, partial=True, deterministic=True)
    if codec_bytes == upb_bytes:
        return "both accept, same content"
    if has_unknown_map_entry(decoded):
        return "divergence 4: a map entry kept as unknown, with a map inside"
    raise AssertionError(
        f"codec and upb read different content: {where}\n"
        f"  codec re-encodes {codec_bytes.hex()}\n"
        f"  upb re-encodes   {upb_bytes.hex()}"
    )


def check(data: bytes) -> None:
    """The property: raises AssertionError (or any non-DecodeError) on a finding."""
    verdict(bytes(data))


def main() -> None:
    """libFuzzer entry point (only when run as a script)."""
    try:
        from fuzz._harness import run
    except ImportError:  # run as ``python fuzz/fuzz_differential.py``: fuzz/ is sys.path[0]
        from _harness import run

    run(atheris, check)


if __name__ == "__main__":
    main()
