"""W4: a real schema, OpenTelemetry's ``ExportTraceServiceRequest`` (``opentelemetry-proto``).

Strategy: :func:`requests` builds seeded batches shaped as a tracing SDK
sends them: 2 resources, each with 2 instrumentation scopes of 10 spans.
Each span has 6 attributes, one of each ``AnyValue`` kind (string, bool,
int, double, an array and a key-value list), 2 events with an attribute
each, a link and a status; a request is about 23 KB. :func:`read_request`
reads every field of a request, pb2 or struct alike (the struct classes are
drop-ins), so a decode + read row costs each peer its attribute access
too.
"""

from __future__ import annotations

import random
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

RESOURCES = 2
SCOPES = 2
SPANS = 10


def _attribute(key: str, value: AnyValue) -> KeyValue:
    return KeyValue(key=key, value=value)


def _attributes(rng: random.Random) -> list[KeyValue]:
    """One attribute of each AnyValue kind that an SDK writes."""
    route = f"/api/v1/items/{rng.randrange(10_000)}"
    return [
        _attribute("http.route", AnyValue(string_value=route)),
        _attribute("error", AnyValue(bool_value=rng.random() < 0.1)),
        _attribute("http.status_code", AnyValue(int_value=rng.choice([200, 201, 404, 500]))),
        _attribute("load", AnyValue(double_value=rng.random())),
        _attribute(
            "tags",
            AnyValue(
                array_value=ArrayValue(values=[AnyValue(string_value=f"t{i}") for i in range(3)])
            ),
        ),
        _attribute(
            "peer",
            AnyValue(
                kvlist_value=KeyValueList(
                    values=[
                        _attribute("host", AnyValue(string_value=f"10.0.0.{rng.randrange(255)}")),
                        _attribute("port", AnyValue(int_value=rng.randrange(1024, 65536))),
                    ]
                )
            ),
        ),
    ]


def _span(rng: random.Random, trace_id: bytes, start: int) -> Span:
    span = Span(
        trace_id=trace_id,
        span_id=rng.randbytes(8),
        parent_span_id=rng.randbytes(8),
        name=f"GET /api/v1/items/{rng.randrange(100)}",
        kind=Span.SPAN_KIND_SERVER,
        start_time_unix_nano=start,
        end_time_unix_nano=start + rng.randrange(1_000, 5_000_000),
        attributes=_attributes(rng),
        status=Status(code=Status.STATUS_CODE_OK, message="ok"),
    )
    for index in range(2):
        event = span.events.add(name=f"event-{index}", time_unix_nano=start + 100 * index)
        event.attributes.append(_attribute("seq", AnyValue(int_value=index)))
    span.links.add(trace_id=rng.randbytes(16), span_id=rng.randbytes(8), trace_state="k=v")
    return span


def requests(count: int = 100, seed: int = 2024) -> list[ExportTraceServiceRequest]:
    """``count`` seeded requests of 2 x 2 x 10 spans."""
    rng = random.Random(seed)
    batches = []
    for _ in range(count):
        request = ExportTraceServiceRequest()
        for resource_index in range(RESOURCES):
            resource_spans = request.resource_spans.add(
                schema_url="https://opentelemetry.io/schemas/1.24.0"
            )
            resource_spans.resource.attributes.append(
                _attribute("service.name", AnyValue(string_value=f"service-{resource_index}"))
            )
            for scope_index in range(SCOPES):
                scope_spans = resource_spans.scope_spans.add()
                scope_spans.scope.name = f"instrumentation-{scope_index}"
                scope_spans.scope.version = "1.0.0"
                trace_id = rng.randbytes(16)
                start = 1_700_000_000_000_000_000 + rng.randrange(10**12)
                scope_spans.spans.extend(_span(rng, trace_id, start) for _ in range(SPANS))
        batches.append(request)
    return batches


def _value(value: Any) -> Any:
    """An AnyValue's content, nested arrays and lists read in full."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return [(pair.key, _value(pair.value)) for pair in value.kvlist_value.values]
    return getattr(value, kind) if kind else None


def _read_attributes(attributes: Any) -> int:
    return sum(len(pair.key) + (_value(pair.value) is not None) for pair in attributes)


def read_request(request: Any) -> int:
    """Read every field of a request; a checksum keeps the reads from being skipped."""
    total = 0
    for resource_spans in request.resource_spans:
        total += len(resource_spans.schema_url) + _read_attributes(
            resource_spans.resource.attributes
        )
        for scope_spans in resource_spans.scope_spans:
            total += len(scope_spans.scope.name) + len(scope_spans.scope.version)
            for span in scope_spans.spans:
                total += len(span.trace_id) + len(span.span_id) + len(span.parent_span_id)
                total += len(span.name) + span.kind + span.flags
                total += span.end_time_unix_nano - span.start_time_unix_nano
                total += _read_attributes(span.attributes)
                for event in span.events:
                    total += event.time_unix_nano % 7 + len(event.name)
                    total += _read_attributes(event.attributes)
                for link in span.links:
                    total += len(link.trace_id) + len(link.span_id) + len(link.trace_state)
                total += span.status.code + len(span.status.message)
    return total


def read_requests(batch: list[Any]) -> int:
    return sum(read_request(request) for request in batch)
