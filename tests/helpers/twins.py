"""The results of the rules that exist twice, as C in a ``.pxd`` and as Python.

Cython inlines a helper into another module only from a ``.pxd``, so the hot
protobuf rules (varint and zigzag, the int32 and uint32 ranges, float32
rounding, fixed-width values, tags, UTF-8 text) have a C body there and a
Python twin in the ``.py`` for the uncompiled build. :func:`table` calls
every public path through them on the edge values of each rule and writes
down what comes back, or the error; ``tests/test_twins.py`` compares the
table of the compiled build with the table of the uncompiled one, made by
this module run as a script (``python -m helpers.twins``) in a child
process with ``CODEC_PURE_PYTHON=1``.
"""

from __future__ import annotations

import json
import math
import struct as _struct
from collections.abc import Callable
from typing import Any

import codec
from codec import varint, wire

# The values at the edges of every integer rule: varint byte counts, the
# int32/uint32/int64/uint64 ranges and one past each.
EDGES = sorted(
    {0, 1, -1, 127, 128, 16_383, 16_384}
    | {
        sign * 2**bits + delta
        for bits in (31, 32, 63, 64)
        for sign in (1, -1)
        for delta in (-1, 0, 1)
    }
)
FLOATS = [0.0, -0.0, 1.5, 3.4028235e38, 3.5e38, -3.5e38, 1e-46, math.inf, -math.inf, math.nan]
TEXTS = ["", "a", "é", "\U0001f600", "\ud800", "x" * 200]
SCALARS = [
    "int32",
    "int64",
    "uint32",
    "uint64",
    "sint32",
    "sint64",
    "fixed32",
    "fixed64",
    "sfixed32",
    "sfixed64",
    "bool",
]


def _outcome(call: Callable[[], Any]) -> str:
    """What ``call`` returns, or the class and text of what it raises."""
    try:
        result = call()
    except Exception as exc:  # a twin must raise the same error with the same text
        return f"{type(exc).__name__}: {exc}"
    if isinstance(result, bytes | bytearray | memoryview):
        return bytes(result).hex()
    if isinstance(result, float):
        return "nan" if math.isnan(result) else repr(result)
    return repr(result)


def _varint_rows() -> list[str]:
    rows = []
    for value in EDGES:
        rows.append(f"varint.encode({value}) = {_outcome(lambda v=value: varint.encode(v))}")
        rows.append(f"varint.size({value}) = {_outcome(lambda v=value: varint.size(v))}")
        for name in ("zigzag_encode", "zigzag_encode32", "zigzag_decode", "zigzag_decode32"):
            function = getattr(varint, name)
            rows.append(f"{name}({value}) = {_outcome(lambda f=function, v=value: f(v))}")
        for name in ("fixed32", "fixed64", "sfixed32", "sfixed64"):
            writer = getattr(varint, f"encode_{name}_into")
            rows.append(
                f"encode_{name}_into({value}) = "
                f"{_outcome(lambda w=writer, v=value: _written(w, v))}"
            )
    for value in FLOATS:
        for name in ("float", "double"):
            writer, reader = (
                getattr(varint, f"encode_{name}_into"),
                getattr(varint, f"decode_{name}"),
            )
            rows.append(
                f"{name} round trip({value!r}) = "
                f"{_outcome(lambda w=writer, r=reader, v=value: r(_written(w, v))[0])}"
            )
    for data in (b"\x80", b"\xff" * 10 + b"\x01", b"\xff" * 9 + b"\x02", b"\x80\x00", b"\x81\x00"):
        for strict in (False, True):
            rows.append(
                f"varint.decode({data.hex()}, strict={strict}) = "
                f"{_outcome(lambda d=data, s=strict: varint.decode(d, 0, strict=s))}"
            )
    return rows


def _written(writer: Callable[[Any, bytearray, int], int], value: Any) -> bytearray:
    out = bytearray(8)
    end = writer(value, out, 0)
    return out[:end]


def _wire_rows() -> list[str]:
    rows = []
    for kind in SCALARS:
        for value in EDGES:
            rows.append(
                f"WireWriter.{kind}({value}) = {_outcome(lambda k=kind, v=value: _field(k, v))}"
            )
    for kind in ("float", "double"):
        for value in FLOATS:
            rows.append(
                f"WireWriter.{kind}({value!r}) = {_outcome(lambda k=kind, v=value: _field(k, v))}"
            )
    for text in TEXTS:
        rows.append(f"WireWriter.string({text!r}) = {_outcome(lambda t=text: _field('string', t))}")
    for data in (_field("sint64", -5), b"\x08", b"\x0b", b"\x00\x01", b"\x12\x05ab"):
        rows.append(
            f"WireReader({data.hex()}) = {_outcome(lambda d=data: list(wire.WireReader(d)))}"
        )
    return rows


def _field(kind: str, value: Any) -> bytes:
    writer = wire.WireWriter()
    getattr(writer, kind)(1, value)
    return bytes(writer.buffer.getbuffer())


def _struct_rows() -> list[str]:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    file = descriptor_pb2.FileDescriptorProto(name="twins.proto", package="twins", syntax="proto3")
    record = file.message_type.add(name="Scalars")
    for number, kind in enumerate([*SCALARS, "float", "double", "string"], 1):
        record.field.add(
            name=kind,
            number=number,
            type=getattr(descriptor_pb2.FieldDescriptorProto, f"TYPE_{kind.upper()}"),
        )
        record.field.add(
            name=f"packed_{kind}",
            number=100 + number,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
            type=getattr(descriptor_pb2.FieldDescriptorProto, f"TYPE_{kind.upper()}"),
        )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    Scalars = codec.struct(
        message_factory.GetMessageClass(pool.FindMessageTypeByName("twins.Scalars"))
    )

    def trip(name: str, value: Any) -> str:
        return _outcome(lambda: _round_trip(Scalars, name, value))

    rows = []
    for kind in SCALARS:
        rows += [f"Scalars({kind}={value}) = {trip(kind, value)}" for value in EDGES]
        rows.append(f"Scalars(packed_{kind}=EDGES) = {trip(f'packed_{kind}', EDGES)}")
    for kind in ("float", "double"):
        rows += [f"Scalars({kind}={value!r}) = {trip(kind, value)}" for value in FLOATS]
    rows += [f"Scalars(string={text!r}) = {trip('string', text)}" for text in TEXTS]
    return rows


def _round_trip(cls: Any, name: str, value: Any) -> str:
    data = codec.encode(cls(**{name: value}))
    back = getattr(codec.decode(cls, data), name)
    shown = [_shown(item) for item in back] if name.startswith("packed_") else _shown(back)
    return f"{data.hex()} -> {shown}"


def _shown(value: Any) -> Any:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else _struct.pack("<d", value).hex()
    return value


def table() -> list[str]:
    """One line per call: the call, then its result or its error."""
    return _varint_rows() + _wire_rows() + _struct_rows()


if __name__ == "__main__":
    print(json.dumps({"compiled": codec.COMPILED, "table": table()}))
