"""Fuzz target: encode -> decode round trip of structs built from the fuzz input.

Input layout: ``data[0]`` picks the root type (``ROOTS[data[0] % len(ROOTS)]``
of ``fuzz/_schemas.py``); ``data[1]`` bit 0 asks for one bad value (below);
the rest drives a builder that walks the type's descriptor and, field by field,
decides whether to set it and which value to use (integers near the edges of
their ranges, float32-exact floats, NaNs and infinities, non-ASCII text,
repeated fields, maps, oneof members, nested messages up to ``MAX_DEPTH``; at
most ``MAX_VALUES`` fields are set, to bound the cost of one run). The same values
are set on a google.protobuf message of the type.

Properties checked by :func:`check` (see ``fuzz/README.md``):

* ``codec.encode(s, deterministic=True)`` equals upb's
  ``SerializePartialToString(deterministic=True)`` of the twin message, and
  ``encoded_size(s)`` is its length; ``codec.encode(s)``, maps in their own
  order, is the same message to upb;
* decode(encode(s)) encodes to the same bytes and (without NaNs) equals ``s``;
* the bytes read by ``WireReader`` without error, fields in number order;
* ``FrameEncoder.encode``, ``encode_frame_into`` and ``FrameDecoder(message_type=...)``
  give ``varint(len) + bytes`` and back the same struct;
* a bad value (out of range, wrong type, wrong struct class, a non-sequence for a
  repeated field), planted in one field, makes every encoder raise
  :class:`codec.EncodeError` (nothing else) and leave its buffer as it was.

Run: ``python fuzz/fuzz_roundtrip.py [libFuzzer flags] [corpus dirs]``.
"""

from __future__ import annotations

import math
import struct
from typing import Any

if __name__ == "__main__":
    import atheris

    with atheris.instrument_imports(include=["codec"]):
        import codec
else:
    import codec

from google.protobuf.descriptor import FieldDescriptor as FD

try:
    from fuzz import _input, _schemas
except ImportError:  # run as ``python fuzz/fuzz_roundtrip.py``: fuzz/ is sys.path[0]
    import _input  # type: ignore[no-redef]
    import _schemas  # type: ignore[no-redef]

ROOTS = [_schemas.by_name(name) for name in _schemas.ROOTS]
MAX_DEPTH = 3
MAX_REPEATED = 4
MAX_VALUES = 150  # values per built struct: bounds the cost of one run
BAD = 0x01

SIGNED = {FD.TYPE_INT32: 32, FD.TYPE_SINT32: 32, FD.TYPE_SFIXED32: 32, FD.TYPE_ENUM: 32}
SIGNED |= {FD.TYPE_INT64: 64, FD.TYPE_SINT64: 64, FD.TYPE_SFIXED64: 64}
UNSIGNED = {FD.TYPE_UINT32: 32, FD.TYPE_FIXED32: 32, FD.TYPE_UINT64: 64, FD.TYPE_FIXED64: 64}
MESSAGE_TYPES = (FD.TYPE_MESSAGE, FD.TYPE_GROUP)
ALPHABET = "a\x00\x7fé\u07ff\u0800€\uffff\U00010000😀\U0010ffff"


class Source(_input.InputReader):
    """Reads choices from the fuzz input; past its end every read is 0."""

    def take(self, n: int) -> bytes:
        """The next ``n`` bytes, padded with zeros past the end."""
        chunk = super().take(n)
        return chunk + bytes(n - len(chunk))

    def integer(self, bits: int, signed: bool) -> int:
        choice = self.byte()
        low = -(2 ** (bits - 1)) if signed else 0
        high = 2 ** (bits - 1) - 1 if signed else 2**bits - 1
        if choice < 96:
            value = choice - 48 if signed else choice
        elif choice < 160:
            edges = [low, high, low + 1, high - 1, 127, 128, 16383, 16384, 2**31 - 1, 2**31]
            value = edges[choice % len(edges)]
        else:
            value = int.from_bytes(self.take(bits // 8), "little")
            if signed and value >> (bits - 1):
                value -= 1 << bits
        return min(max(value, low), high)


# --- building a struct and its google.protobuf twin ------------------------------------------


class Builder:
    def __init__(self, source: Source) -> None:
        self.source = source
        self.has_nan = False
        self.budget = MAX_VALUES

    def scalar(self, field: Any) -> Any:
        kind = field.type
        source = self.source
        if kind == FD.TYPE_ENUM:
            values = [v.number for v in field.enum_type.values]
            if field.enum_type.is_closed or source.byte() & 1:
                return values[source.byte() % len(values)]
            return source.integer(32, True)
        if kind in SIGNED:
            return source.integer(SIGNED[kind], True)
        if kind in UNSIGNED:
            return source.integer(UNSIGNED[kind], False)
        if kind == FD.TYPE_BOOL:
            return bool(source.byte() & 1)
        if kind == FD.TYPE_FLOAT:
            value = struct.unpack("<f", source.take(4))[0]
        elif kind == FD.TYPE_DOUBLE:
            value = struct.unpack("<d", source.take(8))[0]
        elif kind == FD.TYPE_STRING:
            return "".join(
                ALPHABET[source.byte() % len(ALPHABET)] for _ in range(source.byte() % 6)
            )
        elif kind == FD.TYPE_BYTES:
            return source.take(source.byte() % 8)
        else:
            raise AssertionError(f"not a scalar: {field.full_name}")
        self.has_nan |= math.isnan(value)
        return value

    def message(self, cls: Any, depth: int) -> tuple[Any, Any]:
        """A struct of ``cls`` and its google.protobuf twin."""
        descriptor = cls.DESCRIPTOR
        twin = cls()
        values: dict[str, Any] = {}
        source = self.source
        chosen = {}
        for oneof in descriptor.oneofs:
            members = oneof.fields
            if len(members) > 1 or not members[0].has_presence or members[0].message_type:
                pick = source.byte() % (len(members) + 1)
                chosen[oneof.name] = members[pick - 1].name if pick else None
        for field in descriptor.fields:
            oneof = field.containing_oneof
            if oneof is not None and oneof.name in chosen:
                if chosen[oneof.name] != field.name:
                    continue
            elif not field.is_required and (source.byte() % 3 or self.budget <= 0):
                continue
            self.budget -= 1
            nested = field.type in MESSAGE_TYPES
            if nested and depth >= MAX_DEPTH and not field.is_required:
                continue
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                self._map(field, twin, values, depth)
            elif field.is_repeated:
                items = []
                for _ in range(source.byte() % MAX_REPEATED):
                    if nested:
                        item, item_twin = self.message(_class(field.message_type), depth + 1)
                        getattr(twin, field.name).add().CopyFrom(item_twin)
                    else:
                        item = self.scalar(field)
                        getattr(twin, field.name).append(item)
                    items.append(item)
                values[field.name] = items
            elif nested:
                if depth >= MAX_DEPTH:  # a required message at the bottom: leave it unset
                    continue
                item, item_twin = self.message(_class(field.message_type), depth + 1)
                getattr(twin, field.name).CopyFrom(item_twin)
                values[field.name] = item
            else:
                value = self.scalar(field)
                setattr(twin, field.name, value)
                values[field.name] = value
        return codec.struct(cls)(**values), twin

    def _map(self, field: Any, twin: Any, values: dict[str, Any], depth: int) -> None:
        key_field = field.message_type.fields_by_name["key"]
        value_field = field.message_type.fields_by_name["value"]
        mapping: dict[Any, Any] = {}
        target = getattr(twin, field.name)
        for _ in range(self.source.byte() % MAX_REPEATED):
            key = self.scalar(key_field)
            if value_field.type in MESSAGE_TYPES:
                if depth >= MAX_DEPTH:
                    break
                item, item_twin = self.message(_class(value_field.message_type), depth + 1)
                target[key].CopyFrom(item_twin)
            else:
                item = self.scalar(value_field)
                target[key] = item
            mapping[key] = item
        values[field.name] = mapping


def _class(descriptor: Any) -> Any:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(descriptor)


# --- bad values -----------------------------------------------------------------------------------


def plant_bad_value(message: Any, source: Source) -> str:
    """Put one value no encoder may accept into a field of ``message``; describe it."""
    plan = type(message).__plan__
    field = plan.fields_by_slot[source.byte() % len(plan.fields_by_slot)]
    kind = field.kind
    kinds = codec._wire.KINDS
    choice = source.byte()
    if field.repeated or field.map_key is not None:
        if choice % 2 or field.map_key is not None:
            bad: Any = 5  # not a sequence / mapping
        else:
            bad = [_bad_scalar(field, kinds, choice)]
    else:
        bad = _bad_scalar(field, kinds, choice)
    if bad is None:
        bad = object()
    # Assignment would refuse it (TypeError, ValueError): store it through the slot's
    # descriptor, as Python code can, after making the field present (which also
    # clears the other members of its oneof).
    if field.has_bit >= 0:
        setattr(message, field.name, getattr(message, field.name))
    field.member.__set__(message, bad)
    return f"{plan.full_name}.{field.name} ({kind}) = {bad!r}"


def _bad_scalar(field: Any, kinds: dict[str, int], choice: int) -> Any:
    kind = field.kind
    if kind in (kinds["message"], kinds["group"]):
        return [7, "x", codec.struct(_schemas.by_name("peerbench.Blob"))()][choice % 3]
    if kind == kinds["string"]:
        return [5, b"\xff" if field.utf8 != "bytes" else 5.0, "\ud800"][choice % 3]
    if kind == kinds["bytes"]:
        return ["text", 5, [1, 2]][choice % 3]
    if kind in (kinds["float"], kinds["double"]):
        return ["1.0", b"x", None][choice % 3]
    if kind == kinds["bool"]:
        return ["yes", 1.5, 2**64][choice % 3]
    unsigned = kind in (kinds["uint32"], kinds["uint64"], kinds["fixed32"], kinds["fixed64"])
    wide = kind in (
        kinds["uint64"],
        kinds["fixed64"],
        kinds["int64"],
        kinds["sint64"],
        kinds["sfixed64"],
    )
    if unsigned:
        out_of_range = [-1, 2**64 if wide else 2**32]
    else:
        out_of_range = [2**63 if wide else 2**31, -(2**63) - 1 if wide else -(2**31) - 1]
    return [*out_of_range, "1", 1.0][choice % 4]


def _check_refused(message: Any, what: str) -> None:
    """Every encoder raises EncodeError for ``message`` and leaves its buffer unchanged."""
    calls = {
        "encode": lambda: codec.encode(message),
        "encoded_size": lambda: codec.encoded_size(message),
    }
    for name, call in calls.items():
        try:
            call()
        except codec.EncodeError:
            pass
        else:
            raise AssertionError(f"{name} accepted {what}")
    encoder = codec.FrameEncoder()
    encoder.write(b"before")
    with encoder.getbuffer() as view:
        before = bytes(view)
    try:
        encoder.encode(message)
    except codec.EncodeError:
        pass
    else:
        raise AssertionError(f"FrameEncoder.encode accepted {what}")
    with encoder.getbuffer() as view:
        assert bytes(view) == before, f"FrameEncoder.encode left bytes behind for {what}"
    target = bytearray(b"prefix")
    try:
        codec.encode_frame_into(message, target, 3)
    except codec.EncodeError:
        pass
    else:
        raise AssertionError(f"encode_frame_into accepted {what}")
    assert target == b"prefix", f"encode_frame_into changed its buffer for {what}"


# --- the property ---------------------------------------------------------------------------------


def check(data: bytes) -> None:
    """The property: raises AssertionError (or any non-EncodeError/DecodeError) on a finding."""
    data = bytes(data)
    root = ROOTS[(data[0] if data else 0) % len(ROOTS)]
    flags = data[1] if len(data) > 1 else 0
    source = Source(data[2:])
    builder = Builder(source)
    message, twin = builder.message(root, 0)
    cls = type(message)

    if flags & BAD:
        what = plant_bad_value(message, source)
        _check_refused(message, what)
        return

    encoded = codec.encode(message)
    assert codec.encoded_size(message) == len(encoded)
    expected = twin.SerializePartialToString(deterministic=True)
    in_order = codec.encode(message, True, True)
    assert in_order == expected, f"codec {in_order.hex()} != upb {expected.hex()}: {message!r}"
    reread = type(twin).FromString(encoded).SerializePartialToString(deterministic=True)
    assert reread == expected, f"upb reads {encoded.hex()} as another message"

    decoded = codec.decode(cls, encoded)
    assert codec.encode(decoded) == encoded, f"decode -> encode changed {encoded.hex()}"
    if not builder.has_nan:
        assert decoded == message, f"{decoded!r} != {message!r}"

    numbers = [number for number, _, _ in codec.wire.WireReader(encoded)]
    assert numbers == sorted(numbers), f"fields out of number order: {numbers}"

    frame = codec.varint.encode(len(encoded)) + encoded
    encoder = codec.FrameEncoder()
    assert encoder.encode(message) == len(frame)
    with encoder.getbuffer() as view:
        assert bytes(view) == frame, "FrameEncoder.encode wrote another frame"
    target = bytearray(b"keep")
    end = codec.encode_frame_into(message, target, -1)
    assert end == len(target) == 4 + len(frame) and target == b"keep" + frame
    decoder = codec.FrameDecoder(message_type=cls)
    decoder.feed(frame)
    decoder.feed_eof()
    frames = list(decoder)
    assert len(frames) == 1 and codec.encode(frames[0]) == encoded


def make_input(choices: bytes, root: int = 0, bad: bool = False) -> bytes:
    """The fuzz input that builds a ``ROOTS[root]`` from ``choices`` (for seed corpora)."""
    return bytes([root, BAD if bad else 0]) + choices


def main() -> None:
    """libFuzzer entry point (only when run as a script)."""
    try:
        from fuzz._harness import run
    except ImportError:  # run as ``python fuzz/fuzz_roundtrip.py``: fuzz/ is sys.path[0]
        from _harness import run

    run(atheris, check)


if __name__ == "__main__":
    main()
