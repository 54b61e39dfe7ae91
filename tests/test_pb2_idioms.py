"""pb2 idioms, run on pb2 classes and on structs: the same code must give the same result.

Each idiom below is a small function of the code pb2 users write, taking a
namespace of classes (``ns.Span``, ``ns.Timestamp``, ``ns.AllTypes``...: the
pb2 classes, or the struct classes of the same messages) and returning what
the code gives. The test runs it on both and asserts, idiom by idiom, equal
results or a struct exception that is an instance of the class pb2 raised
(see :mod:`helpers.idioms`). Adding an idiom is adding a function:

    @idiom(SUB)
    def read_unset_sub_message(ns):
        return ns.Span().status.code

or one line, ``expr(ENUMS, "name_of_a_number", lambda ns: ns.Span.SpanKind.Name(2))``.

Markers, per idiom: ``extension="why", struct=<documented result>`` for a
deliberate extension (structs accept what pb2 refuses); ``differs="what"``
for a known difference not fixed yet (a strict xfail: when it is fixed the
test fails until the marker goes). Run this module as a script to print the
behaviour table, computed by running the idioms, as Markdown.

Types: the OTLP messages (``opentelemetry-proto``), the well-known types, and
the test schemas standing in for the conformance protos (``AllTypes``,
proto3; ``Record``, ``Link``, proto2 with defaults and required fields;
``Extendable``, proto2 extensions): the installed protobuf package does not
ship ``test_messages_proto3_pb2``.
"""

from __future__ import annotations

import copy
import datetime
import enum
import functools
import pickle
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("grpc_tools", reason="the test schemas are compiled with grpcio-tools")
pytest.importorskip("opentelemetry.proto", reason="the OTLP messages come from opentelemetry-proto")

from google.protobuf import json_format, text_format, unknown_fields
from helpers.idioms import Idiom, Namespace, compare, markdown, namespaces

import codec
from codec.structs import _message as struct_methods

Code = Callable[[Namespace], Any]
IDIOMS: list[Idiom] = []

SUB = "1 sub-messages"
REPEATED = "2 repeated"
ONEOF = "3 oneofs"
ENUMS = "4 enums"
BUILD = "5 constructors"
ERRORS = "6 exceptions"
METHODS = "7 methods"
WKT = "8 well-known types"


def idiom(group: str, **marks: Any) -> Callable[[Code], Code]:
    """Add the decorated function to the table, under its own name."""

    def register(code: Code) -> Code:
        IDIOMS.append(Idiom(group, code.__name__, code, **marks))
        return code

    return register


def expr(group: str, name: str, code: Code, **marks: Any) -> None:
    """Add a one-expression idiom to the table."""
    IDIOMS.append(Idiom(group, name, code, **marks))


UTC = datetime.UTC
NAN = float("nan")
_SPAN = bytes.fromhex("2a03616263")  # a Span's encoding: name: "abc"


# Known differences, not fixed yet (each a strict xfail of the idioms that show it).
UNKNOWN_FIELD_SET = "google.protobuf.unknown_fields.UnknownFieldSet takes pb2 messages only"


# --- 1. sub-messages -----------------------------------------------------------------

expr(SUB, "read_field_of_unset_sub_message", lambda ns: ns.Span().status.code)
expr(SUB, "read_repeated_of_unset_sub_message", lambda ns: list(ns.Metric().gauge.data_points))
expr(SUB, "unset_sub_message_equals_empty", lambda ns: ns.Span().status == ns.Status())


@idiom(SUB)
def reading_does_not_set(ns: Namespace) -> Any:
    span = ns.Span()
    _ = span.status.message
    return span.HasField("status"), span


@idiom(SUB)
def write_through_unset_sub_message(ns: Namespace) -> Any:
    span = ns.Span()
    span.status.message = "x"
    return span.HasField("status"), span


@idiom(SUB)
def write_through_kept_reference(ns: Namespace) -> Any:
    span = ns.Span()
    status = span.status
    status.code = ns.Status.STATUS_CODE_ERROR
    return span.HasField("status"), span


@idiom(SUB)
def write_through_two_levels(ns: Namespace) -> Any:
    kv = ns.KeyValue(key="k")
    kv.value.array_value.values.add(int_value=3)
    return kv.value.WhichOneof("value"), kv


@idiom(SUB)
def set_in_parent(ns: Namespace) -> Any:
    span = ns.Span()
    span.status.SetInParent()
    return span.HasField("status"), span


@idiom(SUB)
def copy_from_into_sub_message(ns: Namespace) -> Any:
    span = ns.Span()
    span.status.CopyFrom(ns.Status(code=2))
    return span.HasField("status"), span


@idiom(SUB)
def merge_from_into_sub_message(ns: Namespace) -> Any:
    span = ns.Span(status={"message": "kept"})
    span.status.MergeFrom(ns.Status(code=1))
    return span


@idiom(SUB)
def clear_field_of_sub_message(ns: Namespace) -> Any:
    span = ns.Span(status={"code": 1})
    span.ClearField("status")
    return span.HasField("status"), span.status.code, span


@idiom(SUB)
def nested_chain_of_adds(ns: Namespace) -> Any:
    request = ns.ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.add(name="x")
    return request


@idiom(SUB)
def oneof_member_written_through(ns: Namespace) -> Any:
    metric = ns.Metric(name="m")
    metric.gauge.data_points.add(as_int=1)
    return metric.WhichOneof("data"), metric


@idiom(SUB)
def oneof_member_read_does_not_set(ns: Namespace) -> Any:
    metric = ns.Metric()
    monotonic = metric.sum.is_monotonic
    return monotonic, metric.WhichOneof("data")


@idiom(SUB)
def element_of_repeated_written_through(ns: Namespace) -> Any:
    span = ns.Span()
    span.events.add(name="e").attributes.add(key="k").value.string_value = "v"
    return span


@idiom(SUB)
def element_is_live(ns: Namespace) -> Any:
    span = ns.Span()
    span.events.add()
    span.events[0].name = "renamed"
    return span


@idiom(SUB)
def extension_copy_from_empty(ns: Namespace) -> Any:
    message = ns.Extendable()
    message.Extensions[ns.ext.self].CopyFrom(ns.Extendable())
    return message.HasExtension(ns.ext.self), message


@idiom(SUB)
def extension_written_through(ns: Namespace) -> Any:
    message = ns.Extendable()
    message.Extensions[ns.ext.self].a = 3
    return message.HasExtension(ns.ext.self), message


@idiom(SUB)
def scalar_extension(ns: Namespace) -> Any:
    message = ns.Extendable()
    message.Extensions[ns.ext.i32] = 5
    has = message.HasExtension(ns.ext.i32)
    message.ClearExtension(ns.ext.s64)
    return has, message.Extensions[ns.ext.s64], message


expr(
    SUB, "extension_wrong_type", lambda ns: ns.Extendable().Extensions.__setitem__(ns.ext.i32, "5")
)


@idiom(SUB)
def repeated_extension_append(ns: Namespace) -> Any:
    message = ns.Extendable()
    message.Extensions[ns.ext.numbers].append(1)
    message.Extensions[ns.ext.numbers].extend([2, 3])
    return message


@idiom(SUB)
def proto2_sub_message_chain(ns: Namespace) -> Any:
    link = ns.Link(a=1)
    link.next.next.a = 3
    return link.HasField("next"), link.next.HasField("a"), link.IsInitialized(), link


@idiom(SUB, extension="a sub-message may be assigned", struct=(True, 1))
def assign_sub_message(ns: Namespace) -> Any:
    span = ns.Span()
    span.status = ns.Status(code=1)
    return span.HasField("status"), span.status.code


@idiom(SUB, extension="a sub-message may be assigned None, which unsets it", struct=False)
def assign_none_to_sub_message(ns: Namespace) -> Any:
    span = ns.Span(status={"code": 1})
    span.status = None
    return span.HasField("status")


# --- 2. repeated containers ----------------------------------------------------------


LIST = "a repeated field is a list"


def _leaf(ns: Namespace, *samples: int) -> Any:
    return ns.Leaf(samples=list(samples))


@idiom(REPEATED)
def add_with_keywords(ns: Namespace) -> Any:
    span = ns.Span()
    span.attributes.add(key="k", value={"int_value": 1})
    return span


@idiom(REPEATED)
def add_then_set(ns: Namespace) -> Any:
    span = ns.Span()
    event = span.events.add()
    event.name = "e"
    return span


expr(REPEATED, "add_unknown_keyword", lambda ns: ns.Span().events.add(nope=1))
expr(REPEATED, "add_wrong_type", lambda ns: ns.Span().events.add(name=5))


@idiom(REPEATED)
def append_message(ns: Namespace) -> Any:
    span = ns.Span()
    span.events.append(ns.Span.Event(name="e"))
    return span


@idiom(REPEATED)
def append_message_of_wrong_type(ns: Namespace) -> Any:
    span = ns.Span()
    span.events.append(ns.Status())
    return len(span.events)


@idiom(REPEATED)
def append_scalar(ns: Namespace) -> Any:
    leaf = _leaf(ns, 1)
    leaf.samples.append(2)
    return leaf


@idiom(REPEATED)
def append_str_to_ints(ns: Namespace) -> Any:
    leaf = _leaf(ns)
    leaf.samples.append("1")
    return len(leaf.samples)


@idiom(REPEATED)
def append_float_to_ints(ns: Namespace) -> Any:
    leaf = _leaf(ns)
    leaf.samples.append(1.5)
    return len(leaf.samples)


@idiom(REPEATED)
def append_out_of_range(ns: Namespace) -> Any:
    values = ns.AllTypes().p_int32
    values.append(2**31)
    return len(values)


@idiom(REPEATED)
def extend_scalars(ns: Namespace) -> Any:
    leaf = _leaf(ns, 1)
    leaf.samples.extend([2, 3])
    return leaf


@idiom(REPEATED)
def extend_with_wrong_type(ns: Namespace) -> Any:
    leaf = _leaf(ns)
    leaf.samples.extend([1, "2"])
    return len(leaf.samples)


@idiom(REPEATED)
def extend_with_generator(ns: Namespace) -> Any:
    leaf = _leaf(ns)
    leaf.samples.extend(i * i for i in range(4))
    return leaf


@idiom(REPEATED)
def extend_messages(ns: Namespace) -> Any:
    span = ns.Span()
    span.events.extend([ns.Span.Event(name="a"), ns.Span.Event(name="b")])
    return span


@idiom(REPEATED)
def insert_scalar(ns: Namespace) -> Any:
    leaf = _leaf(ns, 1, 2)
    leaf.samples.insert(0, 5)
    return leaf


@idiom(REPEATED)
def insert_wrong_type(ns: Namespace) -> Any:
    leaf = _leaf(ns, 1)
    leaf.samples.insert(0, b"x")
    return len(leaf.samples)


@idiom(REPEATED)
def set_item(ns: Namespace) -> Any:
    leaf = _leaf(ns, 1, 2)
    leaf.samples[0] = 9
    return leaf


@idiom(REPEATED)
def set_item_wrong_type(ns: Namespace) -> Any:
    leaf = _leaf(ns, 1, 2)
    leaf.samples[0] = "9"
    return list(leaf.samples)


@idiom(
    REPEATED,
    extension=f"{LIST}: an element of repeated messages may be replaced",
    struct=bytes.fromhex("5a03120162"),
)
def set_item_of_messages(ns: Namespace) -> Any:
    span = ns.Span(events=[{"name": "a"}])
    span.events[0] = ns.Span.Event(name="b")
    return span.SerializeToString()


expr(REPEATED, "len", lambda ns: len(_leaf(ns, 1, 2, 3).samples))
expr(REPEATED, "slice", lambda ns: _leaf(ns, 1, 2, 3).samples[1:])
expr(REPEATED, "negative_index", lambda ns: _leaf(ns, 1, 2, 3).samples[-1])
expr(REPEATED, "index_out_of_range", lambda ns: _leaf(ns, 1).samples[5])
expr(
    REPEATED,
    "slice_of_messages",
    lambda ns: [e.name for e in ns.Span(events=[{"name": "a"}, {"name": "b"}]).events[::-1]],
)
expr(REPEATED, "equals_list", lambda ns: _leaf(ns, 1, 2).samples == [1, 2])
expr(REPEATED, "contains", lambda ns: 2 in _leaf(ns, 1, 2).samples)
expr(
    REPEATED,
    "index_and_count",
    lambda ns: (_leaf(ns, 4, 5, 5).samples.index(5), _leaf(ns, 5, 5).samples.count(5)),
    extension=f"{LIST}: list's index and count (pb2's containers have neither)",
    struct=[1, 2],
)


@idiom(REPEATED)
def delete_item(ns: Namespace) -> Any:
    leaf = _leaf(ns, 1, 2, 3)
    del leaf.samples[0]
    return leaf


@idiom(REPEATED)
def delete_slice(ns: Namespace) -> Any:
    span = ns.Span(events=[{"name": "a"}, {"name": "b"}, {"name": "c"}])
    del span.events[:2]
    return span


@idiom(REPEATED)
def pop_scalar(ns: Namespace) -> Any:
    leaf = _leaf(ns, 1, 2, 3)
    return leaf.samples.pop(), leaf


@idiom(REPEATED)
def pop_message(ns: Namespace) -> Any:
    span = ns.Span(events=[{"name": "a"}, {"name": "b"}])
    return span.events.pop(0), span


@idiom(REPEATED)
def remove_scalar(ns: Namespace) -> Any:
    leaf = _leaf(ns, 1, 2, 3)
    leaf.samples.remove(2)
    return leaf


expr(REPEATED, "remove_missing", lambda ns: _leaf(ns, 1).samples.remove(7))


@idiom(REPEATED)
def sort_scalars(ns: Namespace) -> Any:
    leaf = _leaf(ns, 3, 1, 2)
    leaf.samples.sort(reverse=True)
    return leaf


@idiom(REPEATED)
def sort_messages_by_key(ns: Namespace) -> Any:
    span = ns.Span(events=[{"name": "b"}, {"name": "a"}])
    span.events.sort(key=lambda event: event.name)
    return span


@idiom(REPEATED, extension=f"{LIST}: += extends it (pb2's containers have no +=)", struct=[1, 2])
def in_place_add_through_a_name(ns: Namespace) -> Any:
    leaf = _leaf(ns, 1)
    samples = leaf.samples
    samples += [2]
    return list(leaf.samples)


@idiom(REPEATED, extension="a repeated field may be assigned (+= assigns it back)", struct=[1, 2])
def in_place_add_on_the_field(ns: Namespace) -> Any:
    leaf = _leaf(ns, 1)
    leaf.samples += [2]
    return list(leaf.samples)


@idiom(REPEATED, extension="a repeated field may be assigned a sequence", struct=[4, 5])
def assign_list(ns: Namespace) -> Any:
    leaf = _leaf(ns, 1)
    leaf.samples = [4, 5]
    return list(leaf.samples)


@idiom(REPEATED)
def merge_from_of_containers(ns: Namespace) -> Any:
    leaf = _leaf(ns, 1)
    leaf.samples.MergeFrom(_leaf(ns, 2, 3).samples)
    return leaf


@idiom(REPEATED)
def clear_field_of_repeated(ns: Namespace) -> Any:
    leaf = _leaf(ns, 1, 2)
    leaf.ClearField("samples")
    return leaf


@idiom(REPEATED)
def map_message_value_made_on_read(ns: Namespace) -> Any:
    message = ns.AllTypes()
    message.m_string_inner["k"].a = 1
    return sorted(message.m_string_inner), message


@idiom(REPEATED)
def map_set_get_delete(ns: Namespace) -> Any:
    message = ns.AllTypes(m_int32_int32={1: 1})
    message.m_int32_int32[2] = 4
    del message.m_int32_int32[1]
    return (
        len(message.m_int32_int32),
        2 in message.m_int32_int32,
        message.m_int32_int32.get(9),
        message,
    )


expr(
    REPEATED,
    "map_missing_scalar_key_reads_default",
    lambda ns: ns.AllTypes().m_int32_int32[5],
)


@idiom(REPEATED)
def map_missing_key_read_makes_the_entry(ns: Namespace) -> Any:
    message = ns.AllTypes()
    _ = message.m_int64_string[3], message.m_uint32_bytes[4], message.m_sint32_color[5]
    return message


@idiom(REPEATED)
def map_get_does_not_make_the_entry(ns: Namespace) -> Any:
    message = ns.AllTypes()
    return message.m_int32_int32.get(1), message.m_string_inner.get("k"), message


@idiom(REPEATED)
def map_get_or_create(ns: Namespace) -> Any:
    message = ns.AllTypes()
    message.m_string_inner.get_or_create("k").a = 2
    return message.m_string_inner["k"].a, message


@idiom(REPEATED)
def map_update_and_setdefault(ns: Namespace) -> Any:
    message = ns.AllTypes()
    message.m_int32_int32.update({1: 2}, **{})
    message.m_int32_int32.setdefault(3, 4)
    return message.m_int32_int32.setdefault(1, 9), message


@idiom(REPEATED)
def map_merge_from(ns: Namespace) -> Any:
    message = ns.AllTypes(m_int32_int32={1: 1, 2: 2})
    message.m_int32_int32.MergeFrom(ns.AllTypes(m_int32_int32={2: 5, 3: 3}).m_int32_int32)
    return message


@idiom(REPEATED)
def map_of_messages_merge_from_copies(ns: Namespace) -> Any:
    source = ns.AllTypes()
    source.m_string_inner["k"].a = 1
    message = ns.AllTypes()
    message.m_string_inner.MergeFrom(source.m_string_inner)
    source.m_string_inner["k"].a = 2
    return message


@idiom(REPEATED)
def map_written_through_unset_sub_message(ns: Namespace) -> Any:
    message = ns.AllTypes()
    message.recursive.m_int32_int32[1] = 2
    return message.HasField("recursive"), message


@idiom(REPEATED)
def map_read_of_unset_sub_message_sets_nothing(ns: Namespace) -> Any:
    message = ns.AllTypes()
    _ = message.recursive.m_int32_int32.get(1), 1 in message.recursive.m_int32_int32
    return message.HasField("recursive"), message


expr(REPEATED, "map_wrong_key_type", lambda ns: ns.AllTypes().m_int32_int32.update({"a": 1}))
expr(REPEATED, "map_wrong_value_type", lambda ns: ns.AllTypes().m_int32_int32.update({1: "a"}))
expr(REPEATED, "map_bool_for_int_value", lambda ns: ns.AllTypes().m_int32_int32.update({1: True}))
expr(REPEATED, "map_value_out_of_range", lambda ns: ns.AllTypes(m_int32_int32={1: 2**40}))
expr(REPEATED, "map_key_out_of_range", lambda ns: ns.AllTypes(m_int32_int32={2**40: 1}))
expr(REPEATED, "map_wrong_key_read", lambda ns: ns.AllTypes().m_string_inner[1])
expr(
    REPEATED, "map_of_dicts_in_constructor", lambda ns: ns.AllTypes(m_string_inner={"a": {"a": 1}})
)
expr(REPEATED, "map_pairs_in_constructor", lambda ns: ns.AllTypes(m_int32_int32=[(1, 2)]))
expr(REPEATED, "map_bytes_for_string_value", lambda ns: ns.AllTypes(m_string_string={"a": b"b"}))
expr(
    REPEATED,
    "map_int_for_double_value",
    lambda ns: dict(ns.AllTypes(m_sint64_double={1: 1}).m_sint64_double),
)
expr(REPEATED, "map_invalid_utf8_value", lambda ns: ns.AllTypes(m_string_string={"a": b"\xff"}))


@idiom(REPEATED, extension="a map of messages may be assigned a value", struct=1)
def map_of_messages_assigned(ns: Namespace) -> Any:
    message = ns.AllTypes()
    message.m_string_inner["k"] = ns.AllTypes.Inner(a=1)
    return message.m_string_inner["k"].a


@idiom(REPEATED)
def proto2_group_written_through(ns: Namespace) -> Any:
    message = ns.WithGroups()
    message.header.version = 2
    return message.HasField("header"), message


# --- 3. oneofs -----------------------------------------------------------------------

expr(ONEOF, "which_oneof_unset", lambda ns: ns.AnyValue().WhichOneof("value"))
expr(ONEOF, "which_oneof_default_value", lambda ns: ns.AnyValue(int_value=0).WhichOneof("value"))
expr(ONEOF, "has_field_oneof_name", lambda ns: ns.AnyValue(bool_value=False).HasField("value"))
expr(ONEOF, "which_oneof_unknown_name", lambda ns: ns.AnyValue().WhichOneof("nope"))
expr(ONEOF, "has_field_unknown_name", lambda ns: ns.AnyValue().HasField("nope"))
expr(ONEOF, "has_field_implicit_scalar", lambda ns: ns.Span().HasField("name"))
expr(ONEOF, "has_field_repeated", lambda ns: ns.Span().HasField("events"))


@idiom(ONEOF)
def setting_a_member_clears_the_other(ns: Namespace) -> Any:
    value = ns.AnyValue(string_value="a")
    value.int_value = 3
    return value.WhichOneof("value"), value.HasField("string_value"), value.string_value


@idiom(ONEOF)
def clear_field_oneof_name(ns: Namespace) -> Any:
    metric = ns.Metric(name="m", sum={"is_monotonic": True})
    metric.ClearField("data")
    return metric.WhichOneof("data"), metric


@idiom(ONEOF)
def message_member_then_scalar_member(ns: Namespace) -> Any:
    message = ns.AllTypes()
    message.c_inner.a = 1
    message.c_string = "s"
    return message.WhichOneof("choice"), message.HasField("c_inner"), message


@idiom(ONEOF)
def default_member_written_after_a_sibling_was_set(ns: Namespace) -> Any:
    value = ns.AnyValue()
    items = value.array_value  # read while unset: its default sub-message
    value.string_value = "a"
    items.values.add().int_value = 3  # sets array_value again, clearing string_value
    return value.WhichOneof("value"), value.HasField("string_value"), value


@idiom(ONEOF)
def default_member_written_after_a_message_sibling_was_set(ns: Namespace) -> Any:
    value = ns.AnyValue()
    entries = value.kvlist_value
    value.array_value.values.add().int_value = 1
    entries.values.add().key = "k"
    return value.WhichOneof("value"), len(value.array_value.values), value


expr(ONEOF, "synthetic_oneof_unset", lambda ns: ns.HistogramDataPoint().WhichOneof("_sum"))
expr(ONEOF, "synthetic_oneof_set", lambda ns: ns.HistogramDataPoint(sum=0.0).WhichOneof("_sum"))
expr(ONEOF, "has_field_optional", lambda ns: ns.HistogramDataPoint(min=0.0).HasField("min"))
expr(ONEOF, "has_field_synthetic_oneof", lambda ns: ns.HistogramDataPoint(max=1.0).HasField("_max"))


@idiom(ONEOF)
def clear_field_synthetic_oneof(ns: Namespace) -> Any:
    point = ns.HistogramDataPoint(sum=2.0, count=1)
    point.ClearField("_sum")
    return point.HasField("sum"), point


# --- 4. enums ------------------------------------------------------------------------

expr(ENUMS, "name_of_number", lambda ns: ns.Span.SpanKind.Name(2))
expr(ENUMS, "value_of_name", lambda ns: ns.Span.SpanKind.Value("SPAN_KIND_SERVER"))
expr(ENUMS, "name_of_unknown_number", lambda ns: ns.Span.SpanKind.Name(99))
expr(ENUMS, "value_of_unknown_name", lambda ns: ns.Span.SpanKind.Value("NOPE"))
expr(ENUMS, "keys", lambda ns: list(ns.Status.StatusCode.keys()))
expr(ENUMS, "values", lambda ns: list(ns.Status.StatusCode.values()))
expr(ENUMS, "items", lambda ns: list(ns.Status.StatusCode.items()))
expr(ENUMS, "class_constant", lambda ns: ns.Span.SPAN_KIND_CLIENT)
expr(ENUMS, "enum_type_constant", lambda ns: ns.Span.SpanKind.SPAN_KIND_CLIENT)
expr(ENUMS, "top_level_enum_name", lambda ns: ns.AggregationTemporality.Name(1))
expr(ENUMS, "negative_value", lambda ns: ns.AllTypes.Shape.Value("SHAPE_INSIDE_OUT"))
expr(ENUMS, "descriptor_full_name", lambda ns: ns.Span.SpanKind.DESCRIPTOR.full_name)
expr(ENUMS, "constructor_takes_name", lambda ns: ns.Span(kind="SPAN_KIND_SERVER").kind)
expr(ENUMS, "constructor_unknown_name", lambda ns: ns.Span(kind="NOPE"))


@idiom(ENUMS)
def assign_unknown_number_open_enum(ns: Namespace) -> Any:
    span = ns.Span()
    span.kind = 99
    return span.kind, span


@idiom(ENUMS)
def assign_unknown_number_closed_enum(ns: Namespace) -> Any:
    record = ns.Record()
    record.level = 99
    return record.level


@idiom(ENUMS)
def assign_name(ns: Namespace) -> Any:
    span = ns.Span()
    span.kind = "SPAN_KIND_SERVER"
    return span.kind


@idiom(ENUMS)
def enum_default_of_proto2_field(ns: Namespace) -> Any:
    return ns.Record().level, ns.Record().HasField("level")


@idiom(
    ENUMS,
    extension="an enum field reads as an IntEnum member (== its number)",
    struct=(True, True, "SPAN_KIND_SERVER"),
)
def enum_field_reads_as_member(ns: Namespace) -> Any:
    kind = ns.Span(kind=2).kind
    is_member = isinstance(kind, enum.IntEnum)
    return is_member, kind == 2, kind.name if is_member else ns.Span.SpanKind.Name(kind)


# --- 5. constructors and assignment --------------------------------------------------

expr(BUILD, "dict_for_message_field", lambda ns: ns.Span(status={"code": 1, "message": "m"}))
expr(BUILD, "list_of_dicts_for_repeated", lambda ns: ns.Span(events=[{"name": "a"}, {"name": "b"}]))
expr(BUILD, "list_of_messages_for_repeated", lambda ns: ns.Span(events=[ns.Span.Event(name="a")]))
expr(
    BUILD,
    "nested_dicts",
    lambda ns: ns.KeyValue(key="k", value={"array_value": {"values": [{"int_value": 1}]}}),
)
expr(
    BUILD,
    "dict_for_map_field",
    lambda ns: ns.AllTypes(m_string_string={"a": "b"}, m_int32_int32={1: 2}),
)
expr(BUILD, "unknown_keyword", lambda ns: ns.Span(nope=1))
expr(BUILD, "positional_argument", lambda ns: ns.Span("x"))
expr(BUILD, "bytes_for_string_valid_utf8", lambda ns: ns.Span(name="é".encode()))
expr(BUILD, "bytes_for_string_invalid_utf8", lambda ns: ns.Span(name=b"\xff"))
expr(BUILD, "str_for_bytes_field", lambda ns: ns.Span(trace_id="ab"))
expr(
    BUILD,
    "none_in_constructor_is_unset",
    lambda ns: ns.NumberDataPoint(as_double=None).WhichOneof("value"),
)
expr(
    BUILD, "none_for_sub_message_in_constructor", lambda ns: ns.Span(status=None).HasField("status")
)
expr(BUILD, "wrong_type_in_constructor", lambda ns: ns.Span(name=5))
expr(BUILD, "out_of_range_in_constructor", lambda ns: ns.AllTypes(f_int32=2**31))
expr(BUILD, "float_for_int_in_constructor", lambda ns: ns.Span(dropped_events_count=1.0))
expr(BUILD, "int_for_double", lambda ns: ns.NumberDataPoint(as_double=1).as_double)
expr(BUILD, "proto2_defaults", lambda ns: (ns.Record().count, ns.Record().note, ns.Record().ratio))


expr(BUILD, "float_rounds_to_float32", lambda ns: ns.AllTypes(f_float=0.1).f_float)
expr(
    BUILD, "negative_zero_double", lambda ns: ns.NumberDataPoint(as_double=-0.0).SerializeToString()
)
expr(BUILD, "int64_out_of_range", lambda ns: ns.AllTypes(f_int64=2**63))
expr(BUILD, "bytearray_to_from_string", lambda ns: ns.Span.FromString(bytearray(_SPAN)))
expr(BUILD, "memoryview_to_from_string", lambda ns: ns.Span.FromString(memoryview(_SPAN)))


@idiom(BUILD)
def proto2_presence_and_default(ns: Namespace) -> Any:
    record = ns.Record(count=0)
    set_to_zero = record.HasField("count"), record.count
    record.ClearField("count")
    return set_to_zero, record.HasField("count"), record.count


@idiom(BUILD)
def numpy_scalars(ns: Namespace) -> Any:
    import numpy as np

    point = ns.NumberDataPoint(as_double=np.float64(0.5), time_unix_nano=np.uint64(7))
    point.start_time_unix_nano = np.int64(3)
    return point


def _assign(field: str, value: Any, type_name: str = "Span") -> Code:
    def code(ns: Namespace) -> Any:
        message = getattr(ns, type_name)()
        setattr(message, field, value)
        return getattr(message, field)

    return code


expr(BUILD, "assign_none_to_double", _assign("as_double", None, "NumberDataPoint"))
expr(BUILD, "assign_int_to_string", _assign("name", 5))
expr(BUILD, "assign_negative_to_uint32", _assign("dropped_attributes_count", -1))
expr(BUILD, "assign_2_32_to_uint32", _assign("dropped_attributes_count", 2**32))
expr(BUILD, "assign_2_64_to_fixed64", _assign("start_time_unix_nano", 2**64))
expr(BUILD, "assign_float_to_int", _assign("dropped_attributes_count", 1.0))
expr(BUILD, "assign_bool_to_int", _assign("dropped_attributes_count", True))
expr(BUILD, "assign_int_to_bool", _assign("is_monotonic", 1, "Sum"))
expr(BUILD, "assign_str_to_bytes", _assign("trace_id", "ab"))
expr(BUILD, "assign_unknown_attribute", _assign("nope", 1))
expr(BUILD, "read_unknown_attribute", lambda ns: ns.Span().nope)


@idiom(BUILD, extension="a bytes field also takes a bytearray", struct=b"ab")
def assign_bytearray_to_bytes(ns: Namespace) -> Any:
    span = ns.Span()
    span.trace_id = bytearray(b"ab")
    return span.trace_id


@idiom(BUILD)
def assign_to_map_entry_wrong_type(ns: Namespace) -> Any:
    message = ns.AllTypes()
    message.m_string_string["a"] = 1
    return len(message.m_string_string)


# --- 6. exceptions -------------------------------------------------------------------

expr(ERRORS, "from_string_garbage", lambda ns: ns.Span.FromString(b"\xff\xff\xff"))
expr(ERRORS, "from_string_truncated", lambda ns: ns.Span.FromString(_SPAN[:-1]))
expr(ERRORS, "from_string_invalid_utf8", lambda ns: ns.Span.FromString(b"\x2a\x01\xff"))
expr(ERRORS, "from_string_str", lambda ns: ns.Span.FromString("abc"))
expr(ERRORS, "from_string_wrong_wire_type", lambda ns: ns.Span.FromString(b"\x2a\x00\x08\x01"))
expr(ERRORS, "from_string_missing_required", lambda ns: ns.Link.FromString(b"\x1a\x01x"))


expr(
    ERRORS, "parse_from_string_invalid_utf8", lambda ns: ns.Span().ParseFromString(b"\x2a\x01\xff")
)
expr(ERRORS, "parse_from_string_garbage", lambda ns: ns.Span().ParseFromString(b"\x0a\x05ab"))


@idiom(ERRORS)
def merge_from_string_truncated(ns: Namespace) -> Any:
    return ns.Span().MergeFromString(_SPAN[:-2])


@idiom(ERRORS)
def caught_as_decode_error(ns: Namespace) -> Any:
    from google.protobuf.message import DecodeError

    try:
        ns.ExportTraceServiceRequest.FromString(b"\x0a\x10\x00")
    except DecodeError:
        return "caught"
    return "not raised"


expr(ERRORS, "serialize_missing_required", lambda ns: ns.Link().SerializeToString())
expr(
    ERRORS,
    "serialize_missing_nested_required",
    lambda ns: ns.Link(a=1, next={}).SerializeToString(),
)
expr(ERRORS, "serialize_partial_missing_required", lambda ns: ns.Link().SerializePartialToString())


@idiom(ERRORS)
def caught_as_encode_error(ns: Namespace) -> Any:
    from google.protobuf.message import EncodeError

    try:
        ns.Record(id=1).SerializeToString()
    except EncodeError:
        return "caught"
    return "not raised"


# --- 7. methods ----------------------------------------------------------------------

_UNKNOWN = _SPAN + bytes.fromhex("b83e07")  # field 999, varint 7


def _span(ns: Namespace) -> Any:
    return ns.Span(name="s", kind=2, status={"code": 1}, events=[{"name": "e"}])


@idiom(METHODS)
def discard_unknown_fields(ns: Namespace) -> Any:
    span = ns.Span.FromString(_UNKNOWN)
    kept = span.SerializeToString()
    span.DiscardUnknownFields()
    return kept, span.SerializeToString()


def _nested(tag: int, payload: bytes) -> bytes:
    """A length-delimited field of ``payload`` (under 128 bytes) with one-byte ``tag``."""
    return bytes([tag, len(payload)]) + payload


@idiom(METHODS)
def discard_unknown_fields_of_held_messages(ns: Namespace) -> Any:
    scope_spans = _nested(0x12, _UNKNOWN)  # ScopeSpans.spans: a span with an unknown field
    resource_spans = _nested(0x12, scope_spans)  # ResourceSpans.scope_spans
    message = ns.TracesData.FromString(_nested(0x0A, resource_spans) + _UNKNOWN[-3:])
    kept = message.SerializeToString()
    message.DiscardUnknownFields()
    return kept, message.SerializeToString()


expr(
    METHODS,
    "unknown_fields_method",
    lambda ns: len(ns.Span.FromString(_UNKNOWN).UnknownFields()),
)


@idiom(METHODS, differs=UNKNOWN_FIELD_SET)
def unknown_field_set(ns: Namespace) -> Any:
    fields = unknown_fields.UnknownFieldSet(ns.Span.FromString(_UNKNOWN))
    return [
        (field.field_number, field.wire_type, field.data)
        for field in (fields[i] for i in range(len(fields)))
    ]


expr(METHODS, "str_is_text_format", lambda ns: str(_span(ns)))
expr(METHODS, "text_format_message_to_string", lambda ns: text_format.MessageToString(_span(ns)))
expr(
    METHODS,
    "text_format_parse",
    lambda ns: text_format.Parse('name: "t" kind: SPAN_KIND_CLIENT', ns.Span()),
)
expr(METHODS, "json_format_message_to_dict", lambda ns: json_format.MessageToDict(_span(ns)))
expr(
    METHODS,
    "json_format_parse",
    lambda ns: json_format.Parse('{"name": "j", "kind": 3}', ns.Span()),
)
expr(
    METHODS,
    "equality_with_nan",
    lambda ns: ns.NumberDataPoint(as_double=NAN) == ns.NumberDataPoint(as_double=NAN),
)
expr(METHODS, "equality", lambda ns: (_span(ns) == _span(ns), _span(ns) != ns.Span()))
expr(METHODS, "equals_none", lambda ns: ns.Span() == None)  # noqa: E711 (the idiom)
expr(
    METHODS,
    "list_fields",
    lambda ns: [(field.name, value) for field, value in _span(ns).ListFields()],
)
expr(
    METHODS,
    "list_fields_skips_zero",
    lambda ns: [f.name for f, _ in ns.Span(name="", kind=0).ListFields()],
)
expr(METHODS, "byte_size", lambda ns: _span(ns).ByteSize())
expr(
    METHODS, "is_initialized", lambda ns: (ns.Link().IsInitialized(), ns.Link(a=1).IsInitialized())
)
expr(METHODS, "find_initialization_errors", lambda ns: ns.Link(next={}).FindInitializationErrors())
expr(METHODS, "descriptor", lambda ns: _span(ns).DESCRIPTOR.full_name)
expr(METHODS, "hash_is_refused", lambda ns: hash(ns.Span()))
expr(
    METHODS,
    "serialize_deterministic_map",
    lambda ns: ns.AllTypes(m_int32_int32={2: 1, 1: 2}).SerializeToString(deterministic=True),
)


@idiom(METHODS)
def clear(ns: Namespace) -> Any:
    span = _span(ns)
    span.Clear()
    return span, span.HasField("status")


@idiom(METHODS)
def copy_copy_is_independent(ns: Namespace) -> Any:
    span = _span(ns)
    copied = copy.copy(span)
    copied.name = "copy"
    return span.name, copied


@idiom(METHODS)
def copy_deepcopy(ns: Namespace) -> Any:
    span = _span(ns)
    copied = copy.deepcopy(span)
    copied.events[0].name = "changed"
    return span, copied


@idiom(METHODS)
def pickle_round_trip(ns: Namespace) -> Any:
    span = _span(ns)
    loaded = pickle.loads(pickle.dumps(span))
    return loaded == span, loaded


@idiom(METHODS)
def parse_from_string(ns: Namespace) -> Any:
    span = ns.Span(kind=1)
    size = span.ParseFromString(_SPAN)
    return size, span


@idiom(METHODS)
def merge_from_string(ns: Namespace) -> Any:
    span = _span(ns)
    size = span.MergeFromString(_span(ns).SerializeToString())
    return size, span


@idiom(METHODS)
def merge_from(ns: Namespace) -> Any:
    span = _span(ns)
    span.MergeFrom(ns.Span(name="other", events=[{"name": "f"}], status={"message": "m"}))
    return span


@idiom(METHODS)
def copy_from(ns: Namespace) -> Any:
    span = _span(ns)
    span.CopyFrom(ns.Span(name="other"))
    return span


expr(METHODS, "merge_from_wrong_type", lambda ns: ns.Span().MergeFrom(ns.Status()))
expr(METHODS, "copy_from_wrong_type", lambda ns: ns.Span().CopyFrom(ns.Status()))
expr(
    METHODS,
    "equals_pb2_message",
    lambda ns: (
        _span(ns) == _span(ns.pb2),
        _span(ns.pb2) == _span(ns),
        _span(ns) != _span(ns.pb2),
        _span(ns) == ns.pb2.Span(),
        _span(ns) != ns.pb2.Span(),
        ns.Span() == ns.pb2.Status(),
    ),
)
expr(
    METHODS, "copy_from_pb2_message_of_another_type", lambda ns: ns.Span().CopyFrom(ns.pb2.Status())
)
expr(METHODS, "str_of_nested_and_repeated", lambda ns: str(ns.TracesData(resource_spans=[{}])))
expr(METHODS, "float_in_repeated_rounds", lambda ns: list(ns.AllTypes(p_float=[0.1]).p_float))


@idiom(METHODS)
def merge_from_pb2_message(ns: Namespace) -> Any:
    span = ns.Span(name="s")
    span.MergeFrom(ns.pb2.Span(kind=2))
    return span


@idiom(METHODS)
def copy_from_pb2_message(ns: Namespace) -> Any:
    span = ns.Span(name="s")
    span.CopyFrom(ns.pb2.Span(kind=2))
    return span


@idiom(
    METHODS,
    extension="repr is Python's constructor form",
    struct="Span(name='s', kind=<SpanKind.SPAN_KIND_SERVER: 2>)",
)
def repr_(ns: Namespace) -> Any:
    return repr(ns.Span(name="s", kind=2))


# --- 8. well-known types -------------------------------------------------------------

_WHEN = datetime.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


expr(WKT, "datetime_for_timestamp_field", lambda ns: ns.Moments(at=_WHEN))
expr(
    WKT, "naive_datetime_for_timestamp_field", lambda ns: ns.Moments(at=_WHEN.replace(tzinfo=None))
)
expr(
    WKT, "timedelta_for_duration_field", lambda ns: ns.Moments(took=datetime.timedelta(hours=-1.5))
)
expr(WKT, "dict_for_struct_field", lambda ns: ns.Moments(data={"a": 1, "b": [True, None, "x"]}))
expr(WKT, "list_for_list_value_field", lambda ns: ns.Moments(items=[1, "a", {"k": None}]))
expr(WKT, "datetimes_for_repeated_timestamps", lambda ns: ns.Moments(times=[_WHEN, _WHEN]))
expr(WKT, "dicts_for_repeated_structs", lambda ns: ns.Moments(records=[{"a": 1}, {}]))
expr(WKT, "int_for_timestamp_field", lambda ns: ns.Moments(at=5))
expr(WKT, "date_for_timestamp_field", lambda ns: ns.Moments(at=datetime.date(2024, 1, 1)))
expr(WKT, "int_for_duration_field", lambda ns: ns.Moments(took=5))
expr(WKT, "number_for_value_field", lambda ns: ns.Moments(value=1.5))
expr(WKT, "bad_content_for_struct_field", lambda ns: ns.Moments(data={"a": object()}))
expr(
    WKT,
    "datetime_of_year_one_for_timestamp_field",
    lambda ns: ns.Moments(at=datetime.datetime(1, 1, 1)),
)


@idiom(WKT)
def assign_python_values_to_well_known_fields(ns: Namespace) -> Any:
    moments = ns.Moments()
    moments.at = _WHEN
    moments.took = datetime.timedelta(seconds=2, microseconds=5)
    moments.data = {"k": [1, 2]}
    moments.items = ["x"]
    return moments


@idiom(WKT)
def assign_datetime_to_unset_sub_message_field(ns: Namespace) -> Any:
    moments = ns.Moments()
    _ = moments.at.seconds
    moments.at = _WHEN
    return moments.HasField("at"), moments.at.ToDatetime()


@idiom(WKT)
def timestamp_from_datetime(ns: Namespace) -> Any:
    stamp = ns.Timestamp()
    stamp.FromDatetime(_WHEN)
    return stamp


expr(
    WKT,
    "timestamp_to_datetime",
    lambda ns: ns.Timestamp(seconds=1704164645, nanos=678000000).ToDatetime(),
)
expr(
    WKT,
    "timestamp_to_datetime_tz",
    lambda ns: ns.Timestamp(seconds=1704164645).ToDatetime(tzinfo=UTC),
)
expr(
    WKT,
    "timestamp_to_json_string",
    lambda ns: ns.Timestamp(seconds=1704164645, nanos=678000000).ToJsonString(),
)


@idiom(WKT)
def timestamp_from_json_string(ns: Namespace) -> Any:
    stamp = ns.Timestamp()
    stamp.FromJsonString("2024-01-02T03:04:05.678Z")
    return stamp


expr(
    WKT,
    "timestamp_from_bad_json_string",
    lambda ns: ns.Timestamp().FromJsonString("yesterday"),
)


@idiom(WKT)
def timestamp_get_current_time(ns: Namespace) -> Any:
    stamp = ns.Timestamp()
    stamp.GetCurrentTime()
    return stamp.seconds > 1_700_000_000, 0 <= stamp.nanos < 10**9


@idiom(WKT)
def timestamp_seconds_and_millis(ns: Namespace) -> Any:
    stamp = ns.Timestamp()
    stamp.FromMilliseconds(1500)
    return stamp.ToSeconds(), stamp.ToMilliseconds(), stamp.ToNanoseconds(), stamp


@idiom(WKT)
def duration_from_timedelta(ns: Namespace) -> Any:
    duration = ns.Duration()
    duration.FromTimedelta(datetime.timedelta(seconds=1, microseconds=500))
    return duration


expr(
    WKT,
    "duration_to_timedelta",
    lambda ns: ns.Duration(seconds=-1, nanos=-500000).ToTimedelta(),
)
expr(
    WKT,
    "duration_to_json_string",
    lambda ns: ns.Duration(seconds=1, nanos=500000000).ToJsonString(),
)


@idiom(WKT)
def duration_from_json_string(ns: Namespace) -> Any:
    duration = ns.Duration()
    duration.FromJsonString("-1.5s")
    return duration


@idiom(WKT)
def any_pack_unpack(ns: Namespace) -> Any:
    packed = ns.Any()
    packed.Pack(_span(ns))
    unpacked = ns.Span()
    return packed.Unpack(unpacked), unpacked, packed


@idiom(WKT)
def any_is_and_type_name(ns: Namespace) -> Any:
    packed = ns.Any()
    packed.Pack(ns.Status(code=1))
    return packed.Is(ns.Status.DESCRIPTOR), packed.Is(ns.Span.DESCRIPTOR), packed.TypeName()


@idiom(WKT)
def any_unpack_wrong_type(ns: Namespace) -> Any:
    packed = ns.Any()
    packed.Pack(ns.Status(code=1))
    return packed.Unpack(ns.Span())


@idiom(WKT)
def any_type_url(ns: Namespace) -> Any:
    packed = ns.Any()
    packed.Pack(ns.Status(), type_url_prefix="example.com/")
    return packed.type_url


@idiom(WKT)
def struct_mapping(ns: Namespace) -> Any:
    value = ns.Struct()
    value["n"] = 1
    value["s"] = "x"
    value["b"] = True
    value["z"] = None
    return value["n"], value["s"], sorted(value.keys()), len(value), "s" in value, value


@idiom(WKT)
def struct_update(ns: Namespace) -> Any:
    value = ns.Struct()
    value.update({"a": 1.5, "nested": {"k": [1, "two"]}})
    return value


@idiom(WKT)
def struct_nested_read(ns: Namespace) -> Any:
    value = ns.Struct()
    value.update({"nested": {"k": [1, "two"]}})
    return value["nested"]["k"][1], len(value["nested"]["k"])


@idiom(WKT)
def struct_get_or_create(ns: Namespace) -> Any:
    value = ns.Struct()
    value.get_or_create_struct("inner")["x"] = 2
    value.get_or_create_list("items").append("a")
    return value


@idiom(WKT)
def list_value_sequence(ns: Namespace) -> Any:
    items = ns.ListValue()
    items.append(1)
    items.extend(["a", False])
    return len(items), items[1], list(items), items


@idiom(WKT)
def value_kind(ns: Namespace) -> Any:
    return ns.Value(number_value=1.5).WhichOneof("kind"), ns.Value(null_value=0).WhichOneof("kind")


@idiom(WKT)
def field_mask_json(ns: Namespace) -> Any:
    mask = ns.FieldMask()
    mask.FromJsonString("name,status.code,startTimeUnixNano")
    return list(mask.paths), mask.ToJsonString()


@idiom(WKT)
def field_mask_all_fields(ns: Namespace) -> Any:
    mask = ns.FieldMask()
    mask.AllFieldsFromDescriptor(ns.Status.DESCRIPTOR)
    return list(mask.paths), mask.IsValidForDescriptor(ns.Status.DESCRIPTOR)


@idiom(WKT)
def field_mask_merge_message(ns: Namespace) -> Any:
    mask = ns.FieldMask(paths=["name"])
    target = ns.Span(kind=1)
    mask.MergeMessage(_span(ns), target)
    return target


expr(
    WKT,
    "wrapper_value",
    lambda ns: (ns.Int32Value(value=3).value, ns.StringValue().value, ns.BoolValue(value=True)),
)
expr(WKT, "wrapper_out_of_range", lambda ns: ns.Int32Value(value=2**31))
expr(
    WKT,
    "empty",
    lambda ns: (ns.Empty().SerializeToString(), ns.Empty() == ns.Empty(), ns.Empty().ByteSize()),
)


# --- the test ------------------------------------------------------------------------

BUILD_NAME = "compiled" if codec.COMPILED else "pure"
PB2, STRUCTS = namespaces()


def _param(entry: Idiom) -> Any:
    marks = []
    if entry.differs is not None and BUILD_NAME in entry.builds:
        marks.append(pytest.mark.xfail(strict=True, reason=entry.differs))
    return pytest.param(entry, id=f"{entry.group.split()[0]}-{entry.name}", marks=marks)


def test_the_table_is_well_formed() -> None:
    names = [entry.name for entry in IDIOMS]
    assert len(names) == len(set(names)), "two idioms of one name"
    assert len(IDIOMS) >= 100
    for entry in IDIOMS:
        assert (entry.extension is None) or (entry.differs is None), entry.name


@pytest.mark.parametrize("entry", [_param(entry) for entry in IDIOMS])
def test_idiom(entry: Idiom) -> None:
    verdict = compare(entry, PB2, STRUCTS)
    expected = "extension" if entry.extension is not None else "same"
    assert verdict.status == expected, verdict.why


@pytest.mark.parametrize("entry", [_param(entry) for entry in IDIOMS])
def test_idiom_with_lazy_parsing(entry: Idiom, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same, with every parse of a struct lazy: ``FromString``, ``ParseFromString``,
    ``MergeFromString``, ``CopyFrom``, copies and pickles (see "Lazy decoding" in
    docs/structs.md)."""
    monkeypatch.setattr(struct_methods, "decode", functools.partial(codec.decode, lazy=True))
    verdict = compare(entry, PB2, STRUCTS)
    expected = "extension" if entry.extension is not None else "same"
    assert verdict.status == expected, verdict.why


if __name__ == "__main__":
    print(markdown(IDIOMS))
