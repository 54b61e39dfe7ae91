"""Differential runs of pb2 idioms: one piece of user code, run on pb2 classes and on structs.

An *idiom* is a function of user code that takes a :class:`Namespace` of
message classes (the pb2 classes, or the struct classes of the same
messages, under the same names) and returns a result. :func:`compare` runs
it on both and tells whether the struct behaves as pb2 does:

- both return, and the results are equal once :func:`normalize`\\ d
  (messages become their type's name and deterministic encoding, containers
  lists and dicts of tagged plain values, so ``1`` and ``1.0`` and ``True``
  stay apart and a repeated container equals a list);
- or pb2 raises, and the struct raises an instance of the class pb2 raised
  (so pb2's ``except`` clauses still catch it).

An idiom marked as an *extension* is code pb2 refuses (or answers
otherwise) and structs accept on purpose: the struct's result must be the
documented one given with the idiom, and pb2's must differ from it.

:func:`markdown` runs a table of idioms and writes the behaviour table.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import datetime
import math
from collections.abc import Callable, Iterable
from typing import Any

from google.protobuf import (
    any_pb2,
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    empty_pb2,
    field_mask_pb2,
    message_factory,
    struct_pb2,
    timestamp_pb2,
    wrappers_pb2,
)
from google.protobuf import message as pb2_message
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2
from schemas import everything_pb2, extensions_pb2, legacy_pb2

import codec
from codec.structs._schema import enum_class

__all__ = [
    "SAME",
    "Idiom",
    "Namespace",
    "Outcome",
    "Verdict",
    "compare",
    "markdown",
    "namespaces",
    "normalize",
    "run",
]

# The modules whose every top-level message and enum type is in a namespace, by its
# own name (the first module to use a name keeps it).
_MODULES = (
    trace_pb2,
    common_pb2,
    resource_pb2,
    metrics_pb2,
    trace_service_pb2,
    timestamp_pb2,
    duration_pb2,
    any_pb2,
    struct_pb2,
    field_mask_pb2,
    wrappers_pb2,
    empty_pb2,
)
# From the test schemas (standing in for the conformance protos, which the installed
# protobuf package does not ship): proto3 with every field kind, proto2 with
# defaults, closed enums and required fields, and proto2 extensions.
_SCHEMA_TYPES = {
    everything_pb2: ("AllTypes", "Leaf", "Color"),
    legacy_pb2: ("Record", "Link", "Level", "WithGroups"),
    extensions_pb2: ("Extendable", "Payload", "Scope"),
}


class Namespace:
    """Message and enum classes by name, all pb2's or all structs.

    ``ns.Span``, ``ns.Timestamp``, ``ns.AllTypes``... are the classes;
    ``ns.SpanFlags``, ``ns.Color``... the top-level enum types (pb2's
    ``EnumTypeWrapper`` or the struct's :class:`codec.Enum`). ``ns.ext`` is the
    ``_pb2`` module of the extensions schema (the extensions are
    ``FieldDescriptor``\\ s, the same for both), ``ns.pb2`` the pb2 namespace
    (for code that mixes the two) and ``ns.kind`` ``"pb2"`` or ``"struct"``.
    """

    def __init__(self, kind: str, classes: dict[str, Any], pb2: Namespace | None = None) -> None:
        self.kind = kind
        self.ext = extensions_pb2
        self.pb2: Namespace = self if pb2 is None else pb2
        self._classes = classes
        for name, cls in classes.items():
            setattr(self, name, cls)

    def __getattr__(self, name: str) -> Any:  # the classes, for a type checker
        raise AttributeError(f"no class {name!r} in the {self.kind} namespace")

    def __repr__(self) -> str:
        return f"<{self.kind} namespace of {len(self._classes)} types>"


def _moments() -> Any:
    """``Moments``: a field of each well-known type that takes Python values in pb2
    (a datetime, a timedelta, a dict, a list), and ``Value``, which takes none."""
    file = descriptor_pb2.FileDescriptorProto(name="idioms/moments.proto", package="idioms")
    file.syntax = "proto3"
    message = file.message_type.add(name="Moments")
    fields = [
        ("at", "Timestamp", False),
        ("took", "Duration", False),
        ("data", "Struct", False),
        ("items", "ListValue", False),
        ("times", "Timestamp", True),
        ("value", "Value", False),
        ("records", "Struct", True),
    ]
    for number, (name, kind, repeated) in enumerate(fields, 1):
        field = message.field.add(name=name, number=number, type_name=f".google.protobuf.{kind}")
        field.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
        field.label = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
        if repeated:
            field.label = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
    for kind in ("duration", "struct", "timestamp"):
        file.dependency.append(f"google/protobuf/{kind}.proto")
    pool = descriptor_pool.DescriptorPool()
    for module in (duration_pb2, struct_pb2, timestamp_pb2):
        pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("idioms.Moments"))


def _pb2_types() -> dict[str, Any]:
    """Each type's pb2 class (a message) or ``EnumTypeWrapper`` (an enum), by name."""
    found: dict[str, Any] = {"Moments": _moments()}
    for module in _MODULES:
        file = module.DESCRIPTOR
        for name in [*file.message_types_by_name, *file.enum_types_by_name]:
            found.setdefault(name, getattr(module, name))
    for module, names in _SCHEMA_TYPES.items():
        for name in names:
            found[name] = getattr(module, name)
            if isinstance(found[name], EnumDescriptor):  # as a generated module has it
                found[name] = EnumTypeWrapper(found[name])
    return found


def _struct_type(pb2_type: Any) -> Any:
    descriptor = pb2_type.DESCRIPTOR
    if isinstance(descriptor, EnumDescriptor):
        return enum_class(descriptor)
    return codec.struct(pb2_type)


def namespaces() -> tuple[Namespace, Namespace]:
    """The pb2 namespace and the struct namespace of the same types."""
    types = _pb2_types()
    pb2 = Namespace("pb2", types)
    structs = Namespace("struct", {name: _struct_type(cls) for name, cls in types.items()}, pb2)
    return pb2, structs


# --- results -----------------------------------------------------------------------


def _is_message(value: Any) -> bool:
    return isinstance(value, pb2_message.Message | codec.Message)


def normalize(value: Any) -> Any:
    """A hashable, comparable form of an idiom's result (see the module docstring)."""
    if _is_message(value):
        return ("message", value.DESCRIPTOR.full_name, _encoding(value))
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):  # an IntEnum member equals its number, as it reads in pb2
        return ("int", int(value))
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value)
    if isinstance(value, bytes | bytearray | memoryview):
        return ("bytes", bytes(value))
    if isinstance(value, datetime.datetime | datetime.timedelta):
        return (type(value).__name__, value, getattr(value, "tzinfo", None))
    if isinstance(value, Descriptor | FieldDescriptor | EnumDescriptor):
        return ("descriptor", value.full_name)
    if isinstance(value, collections.abc.Mapping):
        items = [(normalize(key), normalize(item)) for key, item in value.items()]
        return ("dict", tuple(sorted(items, key=repr)))
    if isinstance(value, collections.abc.Sequence):  # lists, tuples, repeated containers
        return ("list", tuple(normalize(item) for item in value))
    if isinstance(value, collections.abc.Set):
        return ("set", tuple(sorted((normalize(item) for item in value), key=repr)))
    raise TypeError(f"an idiom returned {type(value).__name__}; return plain values or messages")


def _encoding(message: Any) -> bytes:
    encoded: bytes = message.SerializePartialToString(deterministic=True)
    return encoded


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What running an idiom gave: a normalized result, or the exception it raised."""

    result: Any = None
    error: BaseException | None = None

    def describe(self) -> str:
        if self.error is not None:
            return f"raises {type(self.error).__name__}"
        text = repr(_readable(self.result))
        return f"gives {text if len(text) <= 60 else text[:57] + '...'}"


def _readable(normalized: Any) -> Any:
    """The normalized result with the tags left out, for a table cell."""
    if isinstance(normalized, tuple) and normalized:
        tag = normalized[0]
        if tag in ("int", "float", "bytes", "descriptor"):
            return normalized[1]
        if tag == "message":
            return f"{normalized[1].rsplit('.', 1)[-1]}<{normalized[2]!r}>"
        if tag in ("list", "set"):
            return [_readable(item) for item in normalized[1]]
        if tag == "dict":
            return {_readable(key): _readable(item) for key, item in normalized[1]}
        if tag in ("datetime", "timedelta"):
            return normalized[1]
        return tuple(_readable(item) for item in normalized)
    return normalized


def run(code: Callable[[Namespace], Any], ns: Namespace) -> Outcome:
    """Run an idiom on a namespace, its result normalized (an error normalizing is its error)."""
    try:
        return Outcome(result=normalize(code(ns)))
    except Exception as error:
        return Outcome(error=error)


# --- the table ---------------------------------------------------------------------

SAME = "same"


@dataclasses.dataclass(frozen=True)
class Idiom:
    """One piece of pb2 user code and what structs are expected to do with it.

    ``extension`` (why structs accept more) with ``struct`` (the documented
    result, plain values, normalized as results are) marks a deliberate
    extension; ``differs`` (what differs) marks a known difference not fixed
    yet, in the builds named by ``builds``: the test expects it to fail there.
    """

    group: str
    name: str
    code: Callable[[Namespace], Any]
    extension: str | None = None
    struct: Any = None
    differs: str | None = None
    builds: tuple[str, ...] = ("compiled", "pure")


@dataclasses.dataclass(frozen=True)
class Verdict:
    """How an idiom's struct outcome compares with pb2's."""

    status: str  # "same", "extension" or "differs"
    pb2: Outcome
    struct: Outcome
    why: str


def _agree(pb2: Outcome, struct: Outcome) -> bool:
    if pb2.error is not None:
        return struct.error is not None and isinstance(struct.error, type(pb2.error))
    return struct.error is None and struct.result == pb2.result


def compare(idiom: Idiom, pb2_ns: Namespace, struct_ns: Namespace) -> Verdict:
    """Run ``idiom`` on both namespaces and say how the struct's outcome compares."""
    pb2 = run(idiom.code, pb2_ns)
    struct = run(idiom.code, struct_ns)
    detail = f"pb2 {pb2.describe()}, struct {struct.describe()}"
    if idiom.extension is not None:
        documented = struct.error is None and struct.result == normalize(idiom.struct)
        if documented and not _agree(pb2, struct):
            return Verdict("extension", pb2, struct, idiom.extension)
        if not documented:
            expected = Outcome(result=normalize(idiom.struct)).describe()
            return Verdict("differs", pb2, struct, f"{detail} (documented: {expected})")
        return Verdict("differs", pb2, struct, f"{detail}: no longer an extension, it is {SAME}")
    if _agree(pb2, struct):
        return Verdict(SAME, pb2, struct, "")
    if pb2.error is not None and struct.error is not None:
        detail += f" (not a {type(pb2.error).__name__})"
    return Verdict("differs", pb2, struct, detail)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(idioms: Iterable[Idiom]) -> str:
    """The behaviour table of ``idioms``, computed by running them, with counts."""
    pb2_ns, struct_ns = namespaces()
    build = "compiled" if codec.COMPILED else "pure Python"
    rows = ["| group | idiom | structs |", "|---|---|---|"]
    counts: dict[str, int] = {}
    for idiom in idioms:
        verdict = compare(idiom, pb2_ns, struct_ns)
        counts[verdict.status] = counts.get(verdict.status, 0) + 1
        shown = verdict.status if not verdict.why else f"{verdict.status} ({verdict.why})"
        rows.append(f"| {idiom.group} | `{idiom.name}` | {_cell(shown)} |")
    total = sum(counts.values())
    summary = ", ".join(f"{counts.get(key, 0)} {key}" for key in (SAME, "differs", "extension"))
    return "\n".join([f"Build: {build}. {total} idioms: {summary}.", "", *rows])
