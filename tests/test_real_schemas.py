"""A sweep of real schemas: structs against upb on every message type of four published packages.

The schemas are those the ``_pb2`` modules of four distributions declare:
``protobuf`` (the well-known types, ``descriptor.proto``, ``plugin.proto``),
``googleapis-common-protos`` (``google.api``, ``google.rpc``, ``google.type``,
``google.longrunning``, ...), ``opentelemetry-proto`` (common, resource,
trace, metrics, logs, profiles and the collector services) and ``perfetto``
(the whole trace schema, ``perfetto_trace_pb2``), all test extras. Every
module a distribution lists is imported when this module is, before any test
makes a struct class, so each class knows every extension of the default
pool (``google.api``'s options on ``descriptor.proto``'s messages). The
message types are found by walking each file's descriptors (nested types
too, map entries left out, a file reached twice counted once), about 1,300
of them; :func:`test_discovery` checks the counts per package against what
was measured, less a small margin, so a discovery that breaks cannot pass by
testing nothing.

Every content is built twice, independently: as the google.protobuf (upb)
message, through pb2's setters, and as the struct, through its keyword
constructor (nested structs, lists, dicts) and its ``Extensions`` mapping.
Two sources of content, for every type:

- a hypothesis strategy derived from the descriptor: up to 12 of the
  message's fields and extensions (4 below the top), each real oneof one
  member or none, required fields always, every value in its type's range,
  sub-messages at most 2 levels down, repeated fields and maps of up to 3
  elements; a few well-known types get values their JSON mapping accepts
  (``Timestamp``, ``Duration`` and ``FieldMask`` in range, a ``Value`` with
  its kind set and a finite number). Hypothesis cannot run one test function
  parametrized a thousand times (its settings chain grows with each run
  until the recursion limit), so the types are cut into chunks of
  :data:`CHUNK` and each example draws one message of every type of its
  chunk: each type gets :data:`EXAMPLES` examples a run (the profile's
  budget divided by :data:`DIVISOR`: 10 in ``ci``);
- fixed values that set every field and extension of the type at once
  (extremes of each integer range, a negative zero, a NaN, non-ASCII text,
  the last value of each enum, two elements of each repeated field, a map
  entry, sub-messages with their required fields), once for each member of
  its largest oneof, so that no field is left out.

Then:

(a) ``codec.encode(struct, deterministic=True)`` is byte for byte upb's
    ``SerializeToString(deterministic=True)``, and ``codec.encoded_size``
    its length;
(b) ``codec.decode`` of upb's own (not deterministic) bytes equals the
    upb message field by field: a walk of the descriptor that compares
    presence, which member of each oneof is set, every value with its
    Python type (floats by their bits, so NaNs and signed zeros count),
    repeated fields element by element, maps key by key, the extensions
    the class knows and the unknown fields (none), recursively; the decoded
    struct also equals the constructed one (without NaNs), and the
    constructed one passes the same walk;
(c) ``codec.to_json`` of the decoded struct is ``json_format.MessageToJson``'s
    text with the same options (drawn from a few sets), or both raise the
    same error. ``json_format`` writes a map in the order of upb's hash
    table, which depends on the order its entries went in, not only on
    them: the text is compared with that of the upb message parsed from its
    deterministic encoding (map entries put in by key, as codec's are), and
    the parsed JSON with that of the message as it was built.
"""

from __future__ import annotations

import functools
import importlib
import json
import struct as pystruct
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Any

import pytest

pytest.importorskip("grpc_tools", reason="the test schemas compile .proto files with grpcio-tools")

from google.protobuf import descriptor_pb2, json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, FileDescriptor
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from schemas import message_descriptors
from schemas.divergences import MESSAGE_TYPES, has_nan, is_map
from schemas.strategies import INT_RANGES, scalar_values

import codec
from codec.structs._extensions import extension_plan

FD = FieldDescriptor

#: Each distribution swept, with the number of message types it held when this test was
#: written (protobuf 7.36, googleapis-common-protos 1.76, opentelemetry-proto 1.45,
#: perfetto 0.59) less a margin for types a later release drops.
SOURCES = {
    "protobuf": 66 - 6,
    "googleapis-common-protos": 141 - 10,
    "opentelemetry-proto": 60 - 6,
    "perfetto": 1020 - 50,
}
TOTAL = 1287 - 60

CHUNK = 16  # types per test case
DIVISOR = 6  # of the profile's max_examples, per type
EXAMPLES = max(2, settings.default.max_examples // DIVISOR)
TOP_FIELDS = 12  # fields set at most in a drawn message, at the top and below it
NESTED_FIELDS = 4
DEPTH = 2  # levels of sub-messages below the top
ITEMS = 3  # elements of a repeated field or a map, at most

JSON_OPTIONS = [
    {},
    {"preserving_proto_field_name": True, "indent": None},
    {"always_print_fields_with_no_presence": True, "use_integers_for_enums": True},
]


# --- discovery ------------------------------------------------------------------------------


def _files(distribution: str) -> list[FileDescriptor]:
    """The file descriptors of every ``_pb2`` module a distribution installs (none if missing)."""
    try:
        listed = metadata.files(distribution) or []
    except metadata.PackageNotFoundError:
        return []
    modules = sorted(
        ".".join(path.with_suffix("").parts) for path in listed if path.name.endswith("_pb2.py")
    )
    return [importlib.import_module(name).DESCRIPTOR for name in modules]


def _discover() -> dict[str, list[Descriptor]]:
    found: dict[str, list[Descriptor]] = {}
    seen: set[str] = set()
    for distribution in SOURCES:
        descriptors = []
        for file in _files(distribution):
            if file.name not in seen:  # google.longrunning's file has three modules
                seen.add(file.name)
                descriptors.extend(message_descriptors(file))
        found[distribution] = sorted(descriptors, key=lambda d: d.full_name)
    return found


TYPES = _discover()  # before any struct class is made here: the pool holds every extension


def _chunks() -> Iterator[Any]:
    for source, descriptors in TYPES.items():
        for start in range(0, len(descriptors), CHUNK):
            names = [d.full_name for d in descriptors[start : start + CHUNK]]
            yield pytest.param(names, id=f"{source}-{start // CHUNK:02d}")


BY_NAME = {d.full_name: d for descriptors in TYPES.values() for d in descriptors}


def test_discovery() -> None:
    counts = {source: len(descriptors) for source, descriptors in TYPES.items()}
    for source, least in SOURCES.items():
        assert counts[source] >= least, f"{source}: {counts[source]} message types (test extra?)"
    assert sum(counts.values()) >= TOTAL, counts
    assert len(BY_NAME) == sum(counts.values()), "a message type found twice"
    for name in ("google.protobuf.Timestamp", "google.rpc.Status", "perfetto.protos.TracePacket"):
        assert name in BY_NAME
    opentelemetry = {name.split(".")[2] for name in BY_NAME if name.startswith("opentelemetry.")}
    assert {"common", "resource", "trace", "metrics", "logs", "collector"} <= opentelemetry
    # The struct classes know every extension the pool holds, so the sweep sets them all.
    for descriptor in BY_NAME.values():
        if descriptor.extension_ranges:
            in_pool = descriptor.file.pool.FindAllExtensions(descriptor)
            assert len(known_extensions(descriptor)) == len(in_pool), descriptor.full_name
    assert len(known_extensions(BY_NAME["google.protobuf.MethodOptions"])) >= 5


# --- the strategy: one content, built as a upb message and as a struct ------------------------


# Values the JSON mapping of a well-known type accepts, by (message, field).
JSON_SAFE: dict[tuple[str, str], st.SearchStrategy[Any]] = {
    ("google.protobuf.Timestamp", "seconds"): st.integers(-62_135_596_800, 253_402_300_799),
    ("google.protobuf.Timestamp", "nanos"): st.integers(0, 999_999_999),
    ("google.protobuf.Duration", "seconds"): st.integers(0, 315_576_000_000),
    ("google.protobuf.Duration", "nanos"): st.integers(0, 999_999_999),
    ("google.protobuf.FieldMask", "paths"): st.from_regex(
        r"[a-z]{1,4}(_[a-z]{1,4})?", fullmatch=True
    ),
    ("google.protobuf.Value", "number_value"): st.floats(allow_nan=False, allow_infinity=False),
}
ONEOF_SET = {("google.protobuf.Value", "kind")}  # JSON refuses a Value without a kind


def scalars(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    """Values of a scalar field (or a map key or value)."""
    safe = JSON_SAFE.get((field.containing_type.full_name, field.name))
    if safe is not None:
        return safe
    return scalar_values(field, max_size=8)


@functools.cache
def struct_of(descriptor: Descriptor) -> type:
    return codec.struct(message_factory.GetMessageClass(descriptor))


@functools.cache
def known_extensions(descriptor: Descriptor) -> list[FieldDescriptor]:
    """The extensions the struct class of ``descriptor`` knows, by number."""
    plan = extension_plan(struct_of(descriptor))
    if plan is None:
        return []
    return sorted(plan.cls.EXTENSIONS.values(), key=lambda extension: extension.number)


@functools.cache
def choices(descriptor: Descriptor) -> tuple[list[Any], list[Any], list[Any]]:
    """What a message of ``descriptor`` may set: (required fields, optional units, oneofs).

    A unit is a field or an extension; a oneof (but the one protoc makes for a
    proto3 ``optional`` field, which counts as a field) is one unit of its own.
    """
    proto = descriptor_pb2.DescriptorProto()
    descriptor.CopyToProto(proto)
    synthetic = {proto.oneof_decl[f.oneof_index].name for f in proto.field if f.proto3_optional}
    oneofs = [oneof for oneof in descriptor.oneofs if oneof.name not in synthetic]
    required = [field for field in descriptor.fields if field.is_required]
    units = [
        field
        for field in [*descriptor.fields, *known_extensions(descriptor)]
        if not field.is_required and field.containing_oneof not in oneofs
    ]
    return required, units, oneofs


def draw_value(draw: Callable[..., Any], field: FieldDescriptor, depth: int) -> Any:
    """A value of ``field``: a scalar, a (upb, struct) pair, a list of either, or a dict."""

    def one(of: FieldDescriptor) -> Any:
        if of.type in MESSAGE_TYPES:
            return draw(pairs(of.message_type, depth - 1))
        return draw(scalars(of))

    if is_map(field):
        entry = field.message_type
        keys = draw(st.lists(scalars(entry.fields_by_name["key"]), max_size=ITEMS, unique=True))
        return {key: one(entry.fields_by_name["value"]) for key in keys}
    if field.is_repeated:
        size = draw(st.integers(0, ITEMS))
        return [one(field) for _ in range(size)]
    return one(field)


def _set_upb(message: Any, field: FieldDescriptor, value: Any) -> None:
    """Set a field or an extension of a upb message to a drawn value."""
    target = message.Extensions[field] if field.is_extension else getattr(message, field.name)
    if is_map(field):
        for key, item in value.items():
            if isinstance(item, tuple):
                target[key].CopyFrom(item[0])
            else:
                target[key] = item
    elif field.is_repeated:
        for item in value:
            if isinstance(item, tuple):
                target.add().CopyFrom(item[0])
            else:
                target.append(item)
    elif isinstance(value, tuple):
        target.CopyFrom(value[0])
    elif field.is_extension:
        message.Extensions[field] = value
    else:
        setattr(message, field.name, value)


def _struct(value: Any) -> Any:
    return value[1] if isinstance(value, tuple) else value


def _set_extension(message: Any, field: FieldDescriptor, value: Any) -> None:
    """Set an extension of a struct as pb2 code does: a message or repeated one is not assigned
    (a repeated extension of a struct is a list)."""
    if field.is_repeated:
        message.Extensions[field].extend(_struct(item) for item in value)
    elif isinstance(value, tuple):
        message.Extensions[field].CopyFrom(value[1])
    else:
        message.Extensions[field] = value


def _empty_message_extension(field: FieldDescriptor, value: Any) -> bool:
    """Whether ``value`` is an empty message for a singular message extension.

    Such an extension differs by design (README, "Extensions"): upb counts it
    as set once ``CopyFrom`` reached it, a struct once something is set in it.
    """
    single_message = field.is_extension and not field.is_repeated and isinstance(value, tuple)
    return single_message and codec.encode(value[1], True) == b""


def assemble(descriptor: Descriptor, values: list[tuple[FieldDescriptor, Any]]) -> tuple[Any, Any]:
    """The upb message and the struct holding ``values``, each (field, value) in number order."""
    upb_message = message_factory.GetMessageClass(descriptor)()
    fields: dict[str, Any] = {}
    extensions = []
    for field, value in values:
        if _empty_message_extension(field, value):
            continue  # set in upb by CopyFrom, in a struct only once something is set in it
        _set_upb(upb_message, field, value)
        if field.is_extension:
            extensions.append((field, value))
        elif is_map(field):
            fields[field.name] = {key: _struct(item) for key, item in value.items()}
        elif field.is_repeated:
            fields[field.name] = [_struct(item) for item in value]
        else:
            fields[field.name] = _struct(value)
    struct = struct_of(descriptor)(**fields)
    for field, value in extensions:
        _set_extension(struct, field, value)
    return upb_message, struct


@functools.cache
def pairs(descriptor: Descriptor, depth: int = DEPTH) -> st.SearchStrategy[tuple[Any, Any]]:
    """Random content of ``descriptor``, as (upb message, struct)."""
    required, units, oneofs = choices(descriptor)
    if depth <= 0:
        units = [unit for unit in units if unit.type not in MESSAGE_TYPES]
    budget = NESTED_FIELDS if depth < DEPTH else TOP_FIELDS

    @st.composite
    def build(draw: Callable[..., Any]) -> tuple[Any, Any]:
        chosen = list(required)
        if units:
            chosen += draw(st.lists(st.sampled_from(units), max_size=budget, unique=True))
        for oneof in oneofs:
            members = [f for f in oneof.fields if depth > 0 or f.type not in MESSAGE_TYPES]
            if (descriptor.full_name, oneof.name) in ONEOF_SET:
                chosen.append(draw(st.sampled_from(members)))
            elif members:
                member = draw(st.sampled_from([None, *members]))
                if member is not None:
                    chosen.append(member)
        chosen.sort(key=lambda field: field.number)
        return assemble(descriptor, [(field, draw_value(draw, field, depth)) for field in chosen])

    return build()


# --- every field, set once: fixed values --------------------------------------------------------


def fixed_scalar(field: FieldDescriptor) -> Any:
    """A value of a scalar field: the extremes of its range, a negative zero, a NaN, and so on,
    chosen by the parity of the field's number so that neighbours differ."""
    odd = field.number % 2 == 1
    kind = field.type
    if kind in INT_RANGES:
        low, high = INT_RANGES[kind]
        return (low if low else high) if odd else 300
    if kind == FD.TYPE_FLOAT:
        return -0.0 if odd else 3.25
    if kind == FD.TYPE_DOUBLE:
        return float("nan") if odd else -1e300
    if kind == FD.TYPE_BOOL:
        return True
    if kind == FD.TYPE_STRING:
        return "\u00e9\x00\U0001f600" if odd else "a"
    if kind == FD.TYPE_BYTES:
        return b"\x00\xff" if odd else b"a"
    if kind == FD.TYPE_ENUM:
        return field.enum_type.values[-1].number
    raise AssertionError(f"not a scalar field: {field.full_name}")


def fixed_value(field: FieldDescriptor, depth: int) -> Any:
    """A value of ``field``: two elements of a repeated one, one entry of a map, and a
    sub-message with only its required fields set."""

    def one(of: FieldDescriptor) -> Any:
        if of.type in MESSAGE_TYPES:
            return fixed_pair(of.message_type, 0, depth - 1)
        return fixed_scalar(of)

    if is_map(field):
        entry = field.message_type
        return {fixed_scalar(entry.fields_by_name["key"]): one(entry.fields_by_name["value"])}
    if field.is_repeated:
        return [one(field), one(field)]
    return one(field)


def fixed_pair(descriptor: Descriptor, member: int, depth: int = 1) -> tuple[Any, Any]:
    """A message of ``descriptor`` with every field and extension set (but its required ones
    only, below the top), and the ``member``-th member of each oneof (cycling)."""
    required, units, oneofs = choices(descriptor)
    chosen = list(required)
    if depth > 0:
        chosen += units
        chosen += [oneof.fields[member % len(oneof.fields)] for oneof in oneofs]
    chosen.sort(key=lambda field: field.number)
    return assemble(descriptor, [(field, fixed_value(field, depth)) for field in chosen])


# --- the comparison ---------------------------------------------------------------------------


def same_scalar(field: FieldDescriptor, mine: Any, theirs: Any, where: str) -> None:
    if field.type in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE):
        assert type(mine) is float, f"{where}: {mine!r} is no float"
        bits = pystruct.pack("<d", mine), pystruct.pack("<d", theirs)
        assert bits[0] == bits[1], f"{where}: {mine!r} != upb's {theirs!r}"
        return
    if field.type == FD.TYPE_ENUM:
        assert isinstance(mine, int), f"{where}: {mine!r} is no int"
    else:
        assert type(mine) is type(theirs), f"{where}: {mine!r} is no {type(theirs).__name__}"
    assert mine == theirs, f"{where}: {mine!r} != upb's {theirs!r}"


def same_value(field: FieldDescriptor, mine: Any, theirs: Any, where: str) -> None:
    if field.type in MESSAGE_TYPES:
        assert_same_content(theirs, mine, where)
    else:
        same_scalar(field, mine, theirs, where)


def same_field(field: FieldDescriptor, mine: Any, theirs: Any, where: str) -> None:
    """A repeated, map or singular field's values (read from a struct and from upb) agree."""
    if is_map(field):
        value_field = field.message_type.fields_by_name["value"]
        assert set(mine) == set(theirs), f"{where}: keys {sorted(mine)} != {sorted(theirs)}"
        for key in theirs:
            same_value(value_field, mine[key], theirs[key], f"{where}[{key!r}]")
    elif field.is_repeated:
        assert len(mine) == len(theirs), f"{where}: {len(mine)} elements, upb {len(theirs)}"
        for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            same_value(field, a, b, f"{where}[{i}]")
    else:
        same_value(field, mine, theirs, where)


def assert_same_content(expected: Any, actual: Any, where: str = "") -> None:
    """The struct ``actual`` holds what the upb message ``expected`` holds, field by field."""
    descriptor = expected.DESCRIPTOR
    where = where or descriptor.full_name
    assert type(actual) is struct_of(descriptor), f"{where}: {type(actual)!r}"
    for oneof in descriptor.oneofs:
        set_member = actual.WhichOneof(oneof.name)
        assert set_member == expected.WhichOneof(oneof.name), f"{where}: oneof {oneof.name}"
    for field in descriptor.fields:
        at = f"{where}.{field.name}"
        if field.has_presence:
            present = expected.HasField(field.name)
            assert actual.HasField(field.name) == present, f"{at}: HasField is not {present}"
            if not present:
                continue
        same_field(field, getattr(actual, field.name), getattr(expected, field.name), at)
    for extension in known_extensions(descriptor):
        at = f"{where}.[{extension.full_name}]"
        if not extension.is_repeated:
            present = expected.HasExtension(extension)
            assert actual.HasExtension(extension) == present, f"{at}: HasExtension"
            if not present:
                continue
        same_field(extension, actual.Extensions[extension], expected.Extensions[extension], at)
    assert codec.unknown_fields(actual) == b"", f"{where}: unknown fields"


def json_of(convert: Callable[..., str], message: Any, options: dict[str, Any]) -> str:
    """The JSON text of ``message``, or the error it raises, as text."""
    try:
        return convert(message, **options)
    except (ValueError, TypeError) as error:  # e.g. an Any whose type the pool lacks
        return f"error: {type(error).__name__}: {error}"


def parsed(text: str) -> Any:
    return text if text.startswith("error: ") else json.loads(text)


def check(upb_message: Any, value: Any, json_options: dict[str, Any]) -> None:
    name = upb_message.DESCRIPTOR.full_name
    expected = upb_message.SerializeToString(deterministic=True)
    assert codec.encode(value, deterministic=True) == expected, f"{name}: encode differs from upb"
    assert codec.encoded_size(value) == len(expected), f"{name}: encoded_size"
    assert_same_content(upb_message, value)  # what the constructor and setters stored
    wire = upb_message.SerializeToString()
    decoded = codec.decode(type(value), wire)
    assert_same_content(upb_message, decoded)
    if not has_nan(upb_message):
        assert decoded == value, f"{name}: the decoded struct != the constructed one"
    # json_format writes a map in the order of upb's hash table, which hangs on the order
    # the entries went in: the text is compared with upb's for the entries put in in the
    # wire's order (as codec's decode keeps them), the content with the original's.
    mine = json_of(codec.to_json, decoded, json_options)
    in_wire_order = type(upb_message).FromString(wire)
    assert mine == json_of(json_format.MessageToJson, in_wire_order, json_options), name
    theirs = json_of(json_format.MessageToJson, upb_message, json_options)
    assert parsed(mine) == parsed(theirs), f"{name}: to_json"


SWEEP = settings(
    max_examples=EXAMPLES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("names", list(_chunks()))
@SWEEP
@given(data=st.data())
def test_structs_agree_with_upb(names: list[str], data: st.DataObject) -> None:
    json_options = data.draw(st.sampled_from(JSON_OPTIONS), label="json options")
    for name in names:
        upb_message, value = data.draw(pairs(BY_NAME[name]), label=name)
        note(f"{name}: {upb_message.SerializeToString(deterministic=True).hex(' ')}")
        check(upb_message, value, json_options)


@pytest.mark.parametrize("names", list(_chunks()))
def test_every_field_agrees_with_upb(names: list[str]) -> None:
    """Each type with all its fields set, once for each member of its largest oneof."""
    for name in names:
        descriptor = BY_NAME[name]
        _, _, oneofs = choices(descriptor)
        for member in range(max([1, *(len(oneof.fields) for oneof in oneofs)])):
            check(*fixed_pair(descriptor, member), JSON_OPTIONS[member % len(JSON_OPTIONS)])
