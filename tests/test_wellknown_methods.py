"""pb2's methods of the well-known types on struct classes (``structs._wellknown``), against pb2.

Every test is differential: the same call is made on a pb2 message and on a
struct of the same content, and both must give equal results (normalized
by :func:`helpers.idioms.normalize`: messages by their deterministic
encoding, ``1`` and ``1.0`` apart) and leave equal messages behind, or both
must raise, the struct an instance of the class pb2 raised (so pb2's
``except`` clauses catch it).

Structs are checked in the classes of both pools: the generated modules'
(``codec.wellknown``) and ``codec.struct`` of the ``_pb2`` classes, so that
the classes a method makes (``Value`` for ``Struct``) are of the right pool.

What is covered: Timestamp and Duration conversions (hypothesis, in and
beyond the valid ranges, nanosecond rounding, negative durations), their JSON
forms (valid, odd and bad strings), ``datetime``/``timedelta`` conversions and
arithmetic; Any's Pack, Unpack, Is and TypeName for struct and pb2 messages;
Struct and ListValue as mapping and sequence of JSON-like values (hypothesis),
their errors and what a failed call leaves behind; FieldMask's JSON form, set
operations (hypothesis) and MergeMessage on proto3 and proto2 messages
(hypothesis over masks and messages, errors included). Wrapper types have no
methods in pb2, which is checked too.
"""

from __future__ import annotations

import collections.abc
import datetime
import inspect
import itertools
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from google.protobuf import (
    any_pb2,
    duration_pb2,
    field_mask_pb2,
    struct_pb2,
    timestamp_pb2,
    wrappers_pb2,
)
from google.protobuf.internal import well_known_types
from helpers.idioms import normalize
from hypothesis import given, settings
from hypothesis import strategies as st
from schemas import everything_pb2, legacy_pb2

import codec
from codec.wellknown import (
    any_structs,
    duration_structs,
    field_mask_structs,
    struct_structs,
    timestamp_structs,
)

EXAMPLES = settings(max_examples=40)

_PB2 = {
    "Timestamp": timestamp_pb2.Timestamp,
    "Duration": duration_pb2.Duration,
    "Any": any_pb2.Any,
    "Struct": struct_pb2.Struct,
    "ListValue": struct_pb2.ListValue,
    "Value": struct_pb2.Value,
    "FieldMask": field_mask_pb2.FieldMask,
}
_GENERATED = {
    "Timestamp": timestamp_structs.Timestamp,
    "Duration": duration_structs.Duration,
    "Any": any_structs.Any,
    "Struct": struct_structs.Struct,
    "ListValue": struct_structs.ListValue,
    "Value": struct_structs.Value,
    "FieldMask": field_mask_structs.FieldMask,
}
_FROM_PB2 = {name: codec.struct(cls) for name, cls in _PB2.items()}
POOLS = {"generated": _GENERATED, "pb2_pool": _FROM_PB2}


@pytest.fixture(params=sorted(POOLS))
def wkt(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The struct classes of the well-known types, of one pool."""
    return POOLS[request.param]


def _struct_of(message: Any, cls: Any) -> Any:
    """A struct of class ``cls`` with ``message``'s content."""
    return cls.FromString(message.SerializePartialToString())


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        result = call()
    except Exception as error:
        return "raises", error
    if isinstance(result, collections.abc.Iterator):
        result = list(result)
    return "gives", normalize(result)


def _assert_same(pb2: tuple[str, Any], struct: tuple[str, Any]) -> None:
    if pb2[0] == "raises":
        assert struct[0] == "raises", f"pb2 raised {pb2[1]!r}, the struct gave {struct[1]!r}"
        assert isinstance(struct[1], type(pb2[1])), f"pb2 raised {pb2[1]!r}, struct {struct[1]!r}"
    else:
        assert struct == pb2


def _encoding(message: Any) -> bytes:
    encoded: bytes = message.SerializePartialToString(deterministic=True)
    return encoded


def differ(pb2_message: Any, struct_message: Any, call: Callable[[Any], Any]) -> None:
    """Call ``call`` on both messages: the same outcome, and the same messages after."""
    _assert_same(_outcome(lambda: call(pb2_message)), _outcome(lambda: call(struct_message)))
    assert _encoding(struct_message) == _encoding(pb2_message)


def differ_new(wkt: dict[str, Any], name: str, call: Callable[[Any], Any], **fields: Any) -> None:
    """:func:`differ` on a new message of well-known type ``name`` made from ``fields``."""
    differ(_PB2[name](**fields), wkt[name](**fields), call)


# --- Timestamp -----------------------------------------------------------------------

_TS_MIN, _TS_MAX = -62_135_596_800, 253_402_300_799
_DURATION_MAX = 315_576_000_000
_NANOS = 10**9

_around_timestamps = st.one_of(
    st.integers(_TS_MIN - 2, _TS_MAX + 2),
    st.sampled_from([_TS_MIN, _TS_MAX, 0, -1, _TS_MIN - 1, _TS_MAX + 1]),
)
_nanos = st.one_of(st.integers(-1, _NANOS), st.sampled_from([0, 1, 999_999_999, 10**6, 10**3]))
_ZONES = [
    None,
    datetime.UTC,
    datetime.timezone(datetime.timedelta(hours=5, minutes=30)),
    datetime.timezone(-datetime.timedelta(hours=8)),
]

_TIMESTAMP_READS: dict[str, Callable[[Any], Any]] = {
    "ToJsonString": lambda m: m.ToJsonString(),
    "ToNanoseconds": lambda m: m.ToNanoseconds(),
    "ToMicroseconds": lambda m: m.ToMicroseconds(),
    "ToMilliseconds": lambda m: m.ToMilliseconds(),
    "ToSeconds": lambda m: m.ToSeconds(),
    **{f"ToDatetime({zone})": lambda m, z=zone: m.ToDatetime(z) for zone in _ZONES},
    "ToDatetime(tzinfo=)": lambda m: m.ToDatetime(tzinfo=datetime.UTC),
}


@EXAMPLES
@given(seconds=_around_timestamps, nanos=_nanos)
def test_timestamp_reads(seconds: int, nanos: int) -> None:
    for pool in POOLS.values():
        for call in _TIMESTAMP_READS.values():
            differ_new(pool, "Timestamp", call, seconds=seconds, nanos=nanos)


_NUMBERS = st.one_of(
    st.integers(),
    st.integers(_TS_MIN * 10**9 - 10, (_TS_MAX + 1) * 10**9 + 10),
    st.integers(-(10**15), 10**15),
    st.sampled_from([0, -1, 1, 999, -999, 1000, -1000, 10**9 - 1, -(10**9) + 1]),
)
_FROM_NUMBER = ["FromNanoseconds", "FromMicroseconds", "FromMilliseconds", "FromSeconds"]


@EXAMPLES
@given(number=_NUMBERS)
def test_timestamp_from_numbers(number: int) -> None:
    for pool in POOLS.values():
        for method in _FROM_NUMBER:
            differ_new(pool, "Timestamp", lambda m, f=method: getattr(m, f)(number))


@pytest.mark.parametrize("method", _FROM_NUMBER)
@pytest.mark.parametrize("number", [1.5, 0.0, True, "1", None, 2**70, -(2**70)])
def test_timestamp_from_odd_numbers(wkt: dict[str, Any], method: str, number: Any) -> None:
    differ_new(wkt, "Timestamp", lambda m: getattr(m, method)(number), seconds=5, nanos=6)


@EXAMPLES
@given(seconds=st.integers(_TS_MIN, _TS_MAX), nanos=st.integers(0, _NANOS - 1))
def test_timestamp_json_round_trip(seconds: int, nanos: int) -> None:
    pb2 = timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)
    text = pb2.ToJsonString()
    for pool in POOLS.values():
        struct = pool["Timestamp"](seconds=seconds, nanos=nanos)
        assert struct.ToJsonString() == text
        differ(timestamp_pb2.Timestamp(), pool["Timestamp"](), lambda m: m.FromJsonString(text))


_BAD_OR_ODD_TIMESTAMPS = [
    "1970-01-01T00:00:00Z",
    "1972-01-01T10:00:20.021-05:00",
    "1972-01-01T10:00:20.021+05:30",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999999999Z",
    "0001-01-01T00:00:00+00:01",  # before year 1 in UTC
    "9999-12-31T23:59:59-00:01",  # after year 9999 in UTC
    "1970-01-01T00:00:00.1Z",
    "1970-01-01T00:00:00.123456789Z",
    "1970-01-01T00:00:00.1234567891Z",  # 10 digits
    "1970-01-01T00:00:00.Z",
    "1970-01-01T00:00:00.1_2Z",
    "1970-01-01T00:00:00.1e-5Z",
    "1970-01-01T00:00:00.1e400Z",
    "1970-01-01T00:00:00.abcZ",
    "1970-01-01T00:00:00",
    "1970-01-01",
    "1970-01-01t00:00:00Z",
    "1970-01-01 00:00:00Z",
    "1970-01-01T00:00:00Zjunk",
    "1970-01-01T00:00:00zz",
    "1970-01-01T00:00:00+0800",
    "1970-01-01T00:00:00+08:0x",
    "1970-01-01T00:00:00-24:00",
    "1970-1-1T0:0:0Z",
    "10000-01-01T00:00:00Z",
    "0000-01-01T00:00:00Z",
    "1970-02-30T00:00:00Z",
    "yesterday",
    "",
    "Z",
    "+",
    "-",
    5,
    None,
    b"1970-01-01T00:00:00Z",
]


@pytest.mark.parametrize("text", _BAD_OR_ODD_TIMESTAMPS)
def test_timestamp_from_json_string(wkt: dict[str, Any], text: Any) -> None:
    differ_new(wkt, "Timestamp", lambda m: m.FromJsonString(text), seconds=7, nanos=8)


@EXAMPLES
@given(text=st.text(alphabet="0123456789-+:.TZtz ", max_size=30))
def test_timestamp_from_any_json_text(text: str) -> None:
    for pool in POOLS.values():
        differ_new(pool, "Timestamp", lambda m: m.FromJsonString(text))


_zones = st.one_of(
    st.none(),
    st.builds(
        datetime.timezone,
        st.timedeltas(-datetime.timedelta(hours=23), datetime.timedelta(hours=23)).map(
            lambda offset: datetime.timedelta(minutes=offset // datetime.timedelta(minutes=1))
        ),
    ),
)


@EXAMPLES
@given(when=st.datetimes(timezones=_zones))
def test_timestamp_from_datetime(when: datetime.datetime) -> None:
    for pool in POOLS.values():
        differ_new(pool, "Timestamp", lambda m: m.FromDatetime(when))
        differ_new(pool, "Timestamp", lambda m: (m.FromDatetime(when), m.ToDatetime())[1])


class _NamedDatetime:
    """Not a datetime, but named as one: pb2 takes it and fails on its attributes."""


_NamedDatetime.__name__ = "datetime"


@pytest.mark.parametrize(
    "when",
    [
        datetime.datetime.min,
        datetime.datetime.max,
        datetime.datetime.min.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=1))),
        datetime.datetime.max.replace(tzinfo=datetime.timezone(-datetime.timedelta(hours=1))),
        datetime.date(2020, 1, 1),
        "2020-01-01",
        1577836800,
        None,
        _NamedDatetime(),
    ],
    ids=repr,
)
def test_timestamp_from_odd_datetimes(wkt: dict[str, Any], when: Any) -> None:
    differ_new(wkt, "Timestamp", lambda m: m.FromDatetime(when), seconds=1)


def test_timestamp_get_current_time(wkt: dict[str, Any]) -> None:
    before = time.time_ns() // 1000 * 1000  # the datetime it is read from has microseconds
    stamp = wkt["Timestamp"]()
    stamp.GetCurrentTime()
    after = time.time_ns()
    assert before <= stamp.ToNanoseconds() <= after
    assert stamp.nanos % 1000 == 0


# --- Duration ------------------------------------------------------------------------

_around_durations = st.one_of(
    st.integers(-_DURATION_MAX - 2, _DURATION_MAX + 2),
    st.integers(-5, 5),
    st.sampled_from([_DURATION_MAX, -_DURATION_MAX, _DURATION_MAX + 1, -_DURATION_MAX - 1]),
)
_signed_nanos = st.one_of(
    st.integers(-_NANOS, _NANOS),
    st.sampled_from([0, 1, -1, 999_999_999, -999_999_999, 1000, -1000, 10**6, -(10**6), 1500]),
)
_DURATION_READS: dict[str, Callable[[Any], Any]] = {
    "ToJsonString": lambda m: m.ToJsonString(),
    "ToNanoseconds": lambda m: m.ToNanoseconds(),
    "ToMicroseconds": lambda m: m.ToMicroseconds(),
    "ToMilliseconds": lambda m: m.ToMilliseconds(),
    "ToSeconds": lambda m: m.ToSeconds(),
    "ToTimedelta": lambda m: m.ToTimedelta(),
}


@EXAMPLES
@given(seconds=_around_durations, nanos=_signed_nanos)
def test_duration_reads(seconds: int, nanos: int) -> None:
    for pool in POOLS.values():
        for call in _DURATION_READS.values():
            differ_new(pool, "Duration", call, seconds=seconds, nanos=nanos)


@EXAMPLES
@given(number=_NUMBERS)
def test_duration_from_numbers(number: int) -> None:
    for pool in POOLS.values():
        for method in _FROM_NUMBER:
            differ_new(pool, "Duration", lambda m, f=method: getattr(m, f)(number))


@pytest.mark.parametrize("method", _FROM_NUMBER)
@pytest.mark.parametrize("number", [1.5, -0.5, True, "1", None, 2**70, -(2**70), -1, -1001])
def test_duration_from_odd_numbers(wkt: dict[str, Any], method: str, number: Any) -> None:
    differ_new(wkt, "Duration", lambda m: getattr(m, method)(number), seconds=5, nanos=6)


@EXAMPLES
@given(seconds=st.integers(-_DURATION_MAX, _DURATION_MAX), nanos=st.integers(0, _NANOS - 1))
def test_duration_json_round_trip(seconds: int, nanos: int) -> None:
    nanos = -nanos if seconds < 0 else nanos
    pb2 = duration_pb2.Duration(seconds=seconds, nanos=nanos)
    text = pb2.ToJsonString()
    for pool in POOLS.values():
        assert pool["Duration"](seconds=seconds, nanos=nanos).ToJsonString() == text
        differ(duration_pb2.Duration(), pool["Duration"](), lambda m: m.FromJsonString(text))


_BAD_OR_ODD_DURATIONS = [
    "1s",
    "-1s",
    "0s",
    "-0.5s",
    "1.5s",
    "1.010s",
    "1.000000100s",
    "-3.100s",
    "1.1234567891s",  # 10 digits, rounded
    "0.0000000005s",
    "-0.0000000005s",
    "315576000000s",
    "315576000001s",
    "-315576000001s",
    "315576000000.999999999s",
    "+1s",
    " 1s",
    "1_000s",
    "1.s",
    ".5s",
    "-.5s",
    "1.5e3s",
    "1.5e-3s",
    "1.1e400s",
    "1.-5s",
    "1.5",
    "s",
    "",
    "1S",
    "1.5ss",
    "one s",
    5,
    None,
]


@pytest.mark.parametrize("text", _BAD_OR_ODD_DURATIONS)
def test_duration_from_json_string(wkt: dict[str, Any], text: Any) -> None:
    differ_new(wkt, "Duration", lambda m: m.FromJsonString(text), seconds=7, nanos=8)


@pytest.mark.parametrize(
    ("seconds", "nanos"),
    [(1, -1), (-1, 1), (0, -5), (0, 10**9), (0, -(10**9)), (_DURATION_MAX + 1, 0), (-1, 0)],
)
def test_duration_invalid_json(wkt: dict[str, Any], seconds: int, nanos: int) -> None:
    differ_new(wkt, "Duration", lambda m: m.ToJsonString(), seconds=seconds, nanos=nanos)


@EXAMPLES
@given(span=st.timedeltas())
def test_duration_from_timedelta(span: datetime.timedelta) -> None:
    for pool in POOLS.values():
        differ_new(pool, "Duration", lambda m: m.FromTimedelta(span))
        differ_new(pool, "Duration", lambda m: (m.FromTimedelta(span), m.ToTimedelta())[1])


class _NamedTimedelta:
    """Not a timedelta, but named as one."""


_NamedTimedelta.__name__ = "timedelta"


@pytest.mark.parametrize("span", [5, "1s", None, datetime.datetime(2020, 1, 1), _NamedTimedelta()])
def test_duration_from_odd_timedeltas(wkt: dict[str, Any], span: Any) -> None:
    differ_new(wkt, "Duration", lambda m: m.FromTimedelta(span), seconds=1)


# --- Timestamp and Duration arithmetic ---------------------------------------------


def _arithmetic(ns: dict[str, Any]) -> list[tuple[str, Any]]:
    """Sums and differences of Timestamps, Durations, datetimes and timedeltas."""
    stamp = ns["Timestamp"](seconds=1_700_000_000, nanos=123_456_789)
    other = ns["Timestamp"](seconds=1_600_000_000, nanos=999_999_999)
    span = ns["Duration"](seconds=-90, nanos=-500_000_001)
    when = datetime.datetime(2001, 2, 3, 4, 5, 6, 7)
    delta = datetime.timedelta(days=1, microseconds=3)
    cases: dict[str, Callable[[], Any]] = {
        "ts + d": lambda: stamp + span,
        "d + ts": lambda: span + stamp,
        "ts - d": lambda: stamp - span,
        "ts - ts": lambda: stamp - other,
        "ts + td": lambda: stamp + delta,
        "td + ts": lambda: delta + stamp,
        "ts - td": lambda: stamp - delta,
        "dt - ts": lambda: when - stamp,
        "ts - dt": lambda: stamp - when,
        "d + td": lambda: span + delta,
        "td + d": lambda: delta + span,
        "d - td": lambda: span - delta,
        "td - d": lambda: delta - span,
        "d + d": lambda: span + span,
        "d - d": lambda: span - span,
        "dt + d": lambda: when + span,
        "dt - d": lambda: when - span,
        "ts + pb2 d": lambda: stamp + duration_pb2.Duration(seconds=3),
        "pb2 ts - ts": lambda: timestamp_pb2.Timestamp(seconds=3) - stamp,
        "ts + 1": lambda: stamp + 1,
        "d - 1": lambda: span - 1,
        "ts + ts": lambda: stamp + other,
        "bad ts + d": lambda: ns["Timestamp"](seconds=_TS_MAX) + ns["Duration"](seconds=5),
    }
    return [(name, _outcome(case)) for name, case in cases.items()]


def test_timestamp_and_duration_arithmetic(wkt: dict[str, Any]) -> None:
    for (name, pb2), (_, struct) in zip(_arithmetic(_PB2), _arithmetic(wkt), strict=True):
        try:
            _assert_same(pb2, struct)
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}") from None


# --- Any -----------------------------------------------------------------------------


def _packable(ns: dict[str, Any]) -> list[Any]:
    stamp = ns["Timestamp"](seconds=5, nanos=6)
    mapping = ns["Struct"]()
    mapping.update({"z": 1, "a": [True, None], "m": {"k": "v"}})
    return [stamp, mapping, ns["Duration"](), ns["FieldMask"](paths=["a.b", "c"])]


@pytest.mark.parametrize("prefix", ["type.googleapis.com/", "example.com", "a/b/", "", "/"])
@pytest.mark.parametrize("deterministic", [None, True, False])
def test_any_pack(wkt: dict[str, Any], prefix: str, deterministic: bool | None) -> None:
    for pb2_message, struct_message in zip(_packable(_PB2), _packable(wkt), strict=True):
        pack = lambda m, p=prefix, d=deterministic, s=struct_message, b=pb2_message: m.Pack(  # noqa: E731
            s if isinstance(m, codec.Message) else b,
            type_url_prefix=p,
            deterministic=d,
        )
        if deterministic or struct_message.DESCRIPTOR.full_name != "google.protobuf.Struct":
            differ_new(wkt, "Any", pack)  # pb2 packs a map in any order unless deterministic
        else:  # a map in the struct's own order: the same message to upb, in other bytes
            packed = wkt["Any"]()
            pack(packed)
            assert type(pb2_message).FromString(packed.value) == pb2_message
            assert packed.value == struct_message.SerializeToString()


def test_any_pack_takes_pb2_messages(wkt: dict[str, Any]) -> None:
    for pb2_message in _packable(_PB2):
        pb2_any, struct_any = any_pb2.Any(), wkt["Any"]()
        pb2_any.Pack(pb2_message, deterministic=True)
        struct_any.Pack(pb2_message, deterministic=True)
        assert _encoding(struct_any) == _encoding(pb2_any)


def test_any_pack_unset_required_field(wkt: dict[str, Any]) -> None:
    record = legacy_pb2.Record(id=1)
    struct_record = _struct_of(record, codec.struct(legacy_pb2.Record))
    for message in (record, struct_record):
        pb2_call = _outcome(lambda: any_pb2.Any().Pack(record))
        _assert_same(pb2_call, _outcome(lambda m=message: wkt["Any"]().Pack(m)))


def test_any_unpack_and_is(wkt: dict[str, Any]) -> None:
    for pb2_message, struct_message in zip(_packable(_PB2), _packable(wkt), strict=True):
        packed = any_pb2.Any()
        packed.Pack(pb2_message, deterministic=True)
        struct_packed = _struct_of(packed, wkt["Any"])
        for target_type in (*_PB2.values(), *wkt.values()):
            descriptor = target_type.DESCRIPTOR
            assert struct_packed.Is(descriptor) == packed.Is(descriptor)
            pb2_target, struct_target = _PB2[descriptor.name](), target_type()
            ok = packed.Unpack(pb2_target)
            assert struct_packed.Unpack(struct_target) == ok
            assert _encoding(struct_target) == _encoding(pb2_target)
            if ok:
                assert _encoding(struct_target) == _encoding(struct_message)
        assert struct_packed.TypeName() == packed.TypeName()
        pb2_target = type(pb2_message)()  # a struct Any unpacks into a pb2 message too
        assert struct_packed.Unpack(pb2_target)
        assert _encoding(pb2_target) == _encoding(pb2_message)


@pytest.mark.parametrize(
    "type_url",
    [
        "",
        "google.protobuf.Timestamp",
        "/google.protobuf.Timestamp",
        "a/b/google.protobuf.Timestamp",
        "type.googleapis.com/google.protobuf.Timestamp/",
        "type.googleapis.com/google.protobuf.Duration",
    ],
)
def test_any_type_names(wkt: dict[str, Any], type_url: str) -> None:
    def reads(m: Any) -> Any:
        target = _PB2["Timestamp"]() if isinstance(m, any_pb2.Any) else wkt["Timestamp"]()
        unpacked = m.Unpack(target)
        return m.TypeName(), m.Is(timestamp_pb2.Timestamp.DESCRIPTOR), unpacked, target

    differ_new(wkt, "Any", reads, type_url=type_url, value=b"\x08\x05")


def test_any_unpack_bad_bytes(wkt: dict[str, Any]) -> None:
    url = "type.googleapis.com/google.protobuf.Timestamp"
    pb2_any = any_pb2.Any(type_url=url, value=b"\x08")
    struct_any = wkt["Any"](type_url=url, value=b"\x08")
    _assert_same(
        _outcome(lambda: pb2_any.Unpack(timestamp_pb2.Timestamp())),
        _outcome(lambda: struct_any.Unpack(wkt["Timestamp"]())),
    )


# --- Struct and ListValue ----------------------------------------------------------

_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False),
    st.text(max_size=5),
)
_json = st.recursive(
    _json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=3), inner, max_size=4),
    ),
    max_leaves=12,
)
_json_objects = st.dictionaries(st.text(max_size=3), _json, max_size=5)


def _plain(value: Any) -> Any:
    """A value read from a Struct or ListValue as plain dicts and lists."""
    if isinstance(value, collections.abc.Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, str):
        return value
    if isinstance(value, collections.abc.Sequence):
        return [_plain(item) for item in value]
    return value


def _canonical(value: Any) -> str:
    """A value read from a Struct or ListValue as JSON text, keys sorted."""
    return json.dumps(_plain(value), sort_keys=True)


def _jsonish(value: Any) -> Any:
    """What a Struct gives back for ``value``: numbers as floats, tuples as lists."""
    if isinstance(value, dict):
        return {key: _jsonish(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonish(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


@EXAMPLES
@given(content=_json_objects)
def test_struct_update_and_read(content: dict[str, Any]) -> None:
    for pool in POOLS.values():
        pb2, struct = struct_pb2.Struct(), pool["Struct"]()
        differ(pb2, struct, lambda m: m.update(content))
        assert _plain(struct) == _plain(pb2) == _jsonish(content)
        assert struct == _jsonish(content)
        # pb2's != of a Struct and a dict is its ==; a struct's is its opposite
        assert not struct != _jsonish(content)  # noqa: SIM202
        assert len(struct) == len(pb2)
        assert sorted(struct) == sorted(pb2) == sorted(struct.keys())
        assert dict(_plain(struct.items())) == dict(_plain(pb2.items()))
        assert sorted(map(_canonical, struct.values())) == sorted(map(_canonical, pb2.values()))
        for key in content:
            assert key in struct
            differ(pb2, struct, lambda m, k=key: m[k])
        differ(pb2, struct, lambda m: "not a key" in m)


@EXAMPLES
@given(items=st.lists(_json, max_size=6), more=st.lists(_json, max_size=3))
def test_list_value_append_and_read(items: list[Any], more: list[Any]) -> None:
    for pool in POOLS.values():
        pb2, struct = struct_pb2.ListValue(), pool["ListValue"]()
        for item in items:
            differ(pb2, struct, lambda m, i=item: m.append(i))
        differ(pb2, struct, lambda m: m.extend(more))
        assert _plain(list(struct)) == _plain(list(pb2)) == _jsonish(items + more)
        assert struct == _jsonish(items + more)
        assert len(struct) == len(pb2)
        differ(pb2, struct, lambda m: m.items())
        for index in range(-len(pb2) - 1, len(pb2) + 1):
            differ(pb2, struct, lambda m, i=index: m[i])
        for probe in [None, True, 1, 1.0, "", "a", 5.5]:
            differ(pb2, struct, lambda m, p=probe: p in m)


@pytest.mark.parametrize(
    "item",
    [
        None,
        True,
        0,
        -1.5,
        2**1100,  # too big for a double: an OverflowError
        float("inf"),
        "text",
        b"bytes",
        {"a": [1, {"b": None}]},
        {},
        [],
        (1, "x"),
        {1: 2},  # a key that is not a str
        {"a": object()},
        object(),
        {1, 2},
    ],
    ids=repr,
)
def test_struct_set_item(wkt: dict[str, Any], item: Any) -> None:
    content = {"k": "old", "other": [1]}
    pb2, struct = struct_pb2.Struct(), wkt["Struct"]()
    pb2.update(content)
    struct.update(content)
    differ(pb2, struct, lambda m: m.__setitem__("k", item))
    differ(pb2, struct, lambda m: m.__setitem__("new", item))  # a failure leaves an empty value
    lists, struct_lists = struct_pb2.ListValue(), wkt["ListValue"]()
    differ(lists, struct_lists, lambda m: m.append(item))
    differ(lists, struct_lists, lambda m: m.__setitem__(0, item))
    differ(lists, struct_lists, lambda m: m.extend([1, item, 2]))


@pytest.mark.parametrize("key", ["k", "missing", b"k", b"\xff", 1, None, ("k",)], ids=repr)
def test_struct_keys(wkt: dict[str, Any], key: Any) -> None:
    def fresh() -> tuple[Any, Any]:
        pb2, struct = struct_pb2.Struct(), wkt["Struct"]()
        pb2["k"] = 1
        struct["k"] = 1
        return pb2, struct

    differ(*fresh(), lambda m: m[key])  # a missing key is added, then a ValueError
    differ(*fresh(), lambda m: key in m)
    differ(*fresh(), lambda m: m.__delitem__(key))
    differ(*fresh(), lambda m: m.__setitem__(key, 2))
    differ(*fresh(), lambda m: m.get_or_create_struct(key))
    differ(*fresh(), lambda m: m.get_or_create_list(key))


@pytest.mark.parametrize("existing", [None, 5, "x", {"a": 1}, [1, 2]], ids=repr)
def test_struct_get_or_create(wkt: dict[str, Any], existing: Any) -> None:
    for create in ("get_or_create_struct", "get_or_create_list"):
        pb2, struct = struct_pb2.Struct(), wkt["Struct"]()
        pb2["k"] = existing
        struct["k"] = existing
        got_pb2, got_struct = getattr(pb2, create)("k"), getattr(struct, create)("k")
        assert _encoding(got_struct) == _encoding(got_pb2)
        if create == "get_or_create_struct":  # the live message: writes go to the Struct
            got_pb2["w"], got_struct["w"] = 1, 1
        else:
            got_pb2.append("w")
            got_struct.append("w")
        assert _encoding(struct) == _encoding(pb2)


def test_struct_values_are_live(wkt: dict[str, Any]) -> None:
    content = {"n": {"m": [1, {"x": 2}]}, "l": [[1], {}]}

    def edit(m: Any) -> Any:
        m.update(content)
        held = m["n"]
        m["n"]["m"][1]["y"] = 3  # through nested reads
        m["n"]["m"].append(None)
        m["l"][0].extend([2, 3])
        m["l"][1]["z"] = True
        del m["l"][0][0]
        m["n"] = {"replaced": 1}  # in place, as pb2: the held Struct sees it
        return held

    differ(struct_pb2.Struct(), wkt["Struct"](), edit)


def test_struct_assigns_itself(wkt: dict[str, Any]) -> None:
    def edit(m: Any) -> Any:
        m.update({"a": {"b": 1}, "l": [1, 2]})
        m["a"] = m["a"]  # cleared, then filled from itself: empty, as in pb2
        m["l"] = m["l"]
        return m

    differ(struct_pb2.Struct(), wkt["Struct"](), edit)


def test_struct_takes_pb2_values(wkt: dict[str, Any]) -> None:
    nested = struct_pb2.Struct()
    nested.update({"a": [1, {"b": "c"}]})
    items = struct_pb2.ListValue()
    items.extend([True, None])

    def edit(m: Any) -> None:
        m["s"] = nested
        m["l"] = items

    differ(struct_pb2.Struct(), wkt["Struct"](), edit)


def test_list_value_edits(wkt: dict[str, Any]) -> None:
    def fresh() -> tuple[Any, Any]:
        pb2, struct = struct_pb2.ListValue(), wkt["ListValue"]()
        pb2.extend([1, "a", None, {"x": 1}, [2]])
        struct.extend([1, "a", None, {"x": 1}, [2]])
        return pb2, struct

    for index in (0, -1, 4, 5, -6):
        differ(*fresh(), lambda m, i=index: m.__delitem__(i))
        differ(*fresh(), lambda m, i=index: m.__setitem__(i, {"y": [None]}))
    differ(*fresh(), lambda m: m.__delitem__(slice(1, 3)))
    differ(*fresh(), lambda m: m[1:2])
    differ(*fresh(), lambda m: (m.add_struct(), m.add_list(), m)[:2])
    differ(*fresh(), lambda m: m.add_struct().update({"k": [1]}))
    differ(*fresh(), lambda m: m.add_list().extend([{}, []]))
    differ(*fresh(), lambda m: m.insert(0, 1))  # pb2 has no insert
    differ(*fresh(), lambda m: m.extend(5))
    differ(*fresh(), lambda m: (m == [1, "a", None, {"x": 1}, [2]], m == [1], m == (1,)))
    differ(*fresh(), lambda m: ({"x": 1} in m, [2] in m))


def test_struct_compares_as_pb2(wkt: dict[str, Any]) -> None:
    def compares(m: Any) -> Any:
        m.update({"a": 1, "n": {"l": [1, None, {"b": "c"}]}})
        return (
            m == {"a": 1, "n": {"l": [1, None, {"b": "c"}]}},
            m == {"a": 1.0, "n": {"l": [True, None, {"b": "c"}]}},
            m == {"a": 1, "n": {"l": [1, None]}},
            m == {"a": 1},
            m == {"a": 1, "x": 2},
            m == [1],
            m == 1,
            {"a": 1, "n": {"l": [1, None, {"b": "c"}]}} == m,  # noqa: SIM300  # reflected
        )

    differ(struct_pb2.Struct(), wkt["Struct"](), compares)
    one, two = wkt["Struct"](), wkt["Struct"]()
    one["a"], two["a"] = 1, 1
    assert one == two
    two["b"] = 2
    assert one != two


def test_struct_in_an_unset_field_is_set_by_a_write(wkt: dict[str, Any]) -> None:
    differ_new(wkt, "Value", lambda m: m.struct_value.__setitem__("a", 1))
    differ_new(wkt, "Value", lambda m: m.struct_value.update({"a": [1]}))
    differ_new(wkt, "Value", lambda m: m.struct_value.get_or_create_list("l"))
    differ_new(wkt, "Value", lambda m: m.list_value.append(1))
    differ_new(wkt, "Value", lambda m: m.list_value.add_struct())
    differ_new(wkt, "Value", lambda m: (m.list_value.extend([]), m.WhichOneof("kind"))[1])
    differ_new(wkt, "Value", lambda m: (m.struct_value.update({}), m.WhichOneof("kind"))[1])


def test_struct_classes_are_of_their_pool(wkt: dict[str, Any]) -> None:
    mapping = wkt["Struct"]()
    mapping.update({"s": {"a": 1}, "l": [[1]]})
    assert type(mapping.fields["s"]) is wkt["Value"]
    assert type(mapping["s"]) is wkt["Struct"]
    assert type(mapping["l"]) is wkt["ListValue"]
    assert type(mapping["l"][0]) is wkt["ListValue"]
    assert type(mapping["l"].values[0]) is wkt["Value"]


def test_struct_and_list_value_are_abcs(wkt: dict[str, Any]) -> None:
    assert isinstance(wkt["Struct"](), collections.abc.MutableMapping)
    assert isinstance(wkt["ListValue"](), collections.abc.MutableSequence)
    assert not isinstance(wkt["Value"](), collections.abc.Mapping | collections.abc.Sequence)


# --- FieldMask -----------------------------------------------------------------------

_names = st.sampled_from(["a", "b", "c", "foo_bar", "x1", ""])
_paths = st.lists(_names, min_size=1, max_size=3).map(".".join)
_masks = st.lists(_paths, max_size=5)


@EXAMPLES
@given(text=st.text(alphabet="abAB_1.,é", max_size=12))
def test_field_mask_json(text: str) -> None:
    for pool in POOLS.values():
        differ_new(pool, "FieldMask", lambda m: m.FromJsonString(text), paths=["old"])
        paths = [path for path in text.split(",") if path]
        differ_new(pool, "FieldMask", lambda m: m.ToJsonString(), paths=paths)


@pytest.mark.parametrize("value", [5, None, b"a", ["a"]])
def test_field_mask_json_not_a_string(wkt: dict[str, Any], value: Any) -> None:
    differ_new(wkt, "FieldMask", lambda m: m.FromJsonString(value), paths=["old"])


@EXAMPLES
@given(first=_masks, second=_masks)
def test_field_mask_set_operations(first: list[str], second: list[str]) -> None:
    for pool in POOLS.values():
        for how in ("CanonicalFormFromMask", "Union", "Intersect"):
            args_pb2 = [field_mask_pb2.FieldMask(paths=first)]
            args_struct = [pool["FieldMask"](paths=first)]
            if how != "CanonicalFormFromMask":
                args_pb2.append(field_mask_pb2.FieldMask(paths=second))
                args_struct.append(pool["FieldMask"](paths=second))
            pb2, struct = field_mask_pb2.FieldMask(paths=["old"]), pool["FieldMask"](paths=["old"])
            differ(
                pb2,
                struct,
                lambda m, h=how, b=args_pb2, s=args_struct: getattr(m, h)(
                    *(s if isinstance(m, codec.Message) else b)
                ),
            )


def test_field_mask_set_operations_check_their_arguments(wkt: dict[str, Any]) -> None:
    not_a_mask = wkt["Timestamp"]()
    mask = wkt["FieldMask"](paths=["a"])
    for how in ("Union", "Intersect"):
        pb2_mask = field_mask_pb2.FieldMask(paths=["a"])
        for args_pb2, args in [
            ((pb2_mask, timestamp_pb2.Timestamp()), (mask, not_a_mask)),
            ((timestamp_pb2.Timestamp(), pb2_mask), (not_a_mask, mask)),
        ]:
            differ(
                field_mask_pb2.FieldMask(),
                wkt["FieldMask"](),
                lambda m, h=how, a=args_pb2, s=args: getattr(m, h)(
                    *(s if isinstance(m, codec.Message) else a)
                ),
            )
    in_place = wkt["FieldMask"](paths=["b", "a.c"])  # a mask may be its own argument
    in_place.Union(in_place, wkt["FieldMask"](paths=["a"]))
    assert list(in_place.paths) == ["a", "b"]


_ALL_TYPES_PATHS = [
    "f_int32",
    "f_inner",
    "f_inner.a",
    "f_inner.again",
    "f_inner.again.a",
    "f_inner.tags",
    "recursive.f_inner.leaf",
    "r_inner",
    "m_string_inner",
    "c_string",
    "c_inner.a",
    "r_inner.a",
    "f_int32.x",
    "nope",
    "",
    "f_inner.",
]


@pytest.mark.parametrize("descriptor_of", ["pb2", "struct"])
def test_field_mask_descriptors(wkt: dict[str, Any], descriptor_of: str) -> None:
    all_types = everything_pb2.AllTypes
    if descriptor_of == "struct":
        all_types = codec.struct(all_types)
    for path in _ALL_TYPES_PATHS:
        differ_new(
            wkt,
            "FieldMask",
            lambda m, p=path: m.IsValidForDescriptor(all_types.DESCRIPTOR),
            paths=["f_int32", path],
        )
    differ_new(wkt, "FieldMask", lambda m: m.AllFieldsFromDescriptor(all_types.DESCRIPTOR))
    differ_new(wkt, "FieldMask", lambda m: m.AllFieldsFromDescriptor(wkt["Value"].DESCRIPTOR))


def _all_types_messages() -> list[Any]:
    all_types = everything_pb2.AllTypes
    inner = all_types.Inner
    leaf = everything_pb2.Leaf
    return [
        all_types(),
        all_types(f_int32=5, o_int32=0, r_string=["x", "y"], c_string="c"),
        all_types(
            f_inner=inner(a=1, tags=["t"], again=inner(a=2, leaf=leaf(id=3))),
            r_inner=[inner(a=4), inner(tags=["u"])],
            m_string_inner={"k": inner(a=5), "j": inner()},
            m_int32_int32={1: 2, 3: 4},
            c_inner=inner(a=6),
        ),
        all_types(
            f_inner=inner(),
            o_leaf=leaf(label="l"),
            m_string_inner={"k": inner(tags=["v"])},
            recursive=all_types(f_inner=inner(leaf=leaf(id=7)), r_string=["z"]),
            c_uint32=0,
        ),
    ]


_MERGE_PATHS = [
    "f_int32",
    "o_int32",
    "o_leaf",
    "o_leaf.label",
    "f_inner",
    "f_inner.a",
    "f_inner.again",
    "f_inner.again.a",
    "f_inner.again.leaf.id",
    "f_inner.tags",
    "f_inner.leaf",
    "r_inner",
    "r_string",
    "m_string_inner",
    "m_int32_int32",
    "c_string",
    "c_uint32",
    "c_inner",
    "c_inner.a",
    "recursive.f_inner.leaf.id",
    "recursive.r_string",
    "recursive.f_inner",
    "nope",
    "f_int32.x",
    "r_inner.a",
]


@EXAMPLES
@given(
    source=st.integers(0, 3),
    destination=st.integers(0, 3),
    paths=st.lists(st.sampled_from(_MERGE_PATHS), max_size=4),
    replace_message=st.booleans(),
    replace_repeated=st.booleans(),
)
def test_field_mask_merge_message(
    source: int, destination: int, paths: list[str], replace_message: bool, replace_repeated: bool
) -> None:
    messages = _all_types_messages()
    struct_class = codec.struct(everything_pb2.AllTypes)
    for pool in POOLS.values():
        pb2_destination = messages[destination]
        pb2_destination = type(pb2_destination).FromString(pb2_destination.SerializeToString())
        struct_destination = _struct_of(pb2_destination, struct_class)
        struct_source = _struct_of(messages[source], struct_class)
        differ(
            field_mask_pb2.FieldMask(paths=paths),
            pool["FieldMask"](paths=paths),
            lambda m, s=struct_source, d=struct_destination, b=pb2_destination: m.MergeMessage(
                *((s, d) if isinstance(m, codec.Message) else (messages[source], b)),
                replace_message_field=replace_message,
                replace_repeated_field=replace_repeated,
            ),
        )
        assert _encoding(struct_destination) == _encoding(pb2_destination)
    # a struct mask merges pb2 messages too
    merged_by_pb2, merged_by_struct = (
        type(messages[destination]).FromString(_encoding(messages[destination])) for _ in range(2)
    )
    _assert_same(
        _outcome(
            lambda: field_mask_pb2.FieldMask(paths=paths).MergeMessage(
                messages[source], merged_by_pb2, replace_message, replace_repeated
            )
        ),
        _outcome(
            lambda: _GENERATED["FieldMask"](paths=paths).MergeMessage(
                messages[source], merged_by_struct, replace_message, replace_repeated
            )
        ),
    )
    assert _encoding(merged_by_struct) == _encoding(merged_by_pb2)


def _merged(mask_class: Any, path: str, source: Any, destination: Any, flags: Any) -> Any:
    """The outcome of merging ``path`` from ``source`` into ``destination``."""
    return _outcome(lambda: mask_class(paths=[path]).MergeMessage(source, destination, *flags))


def test_field_mask_merge_message_each_path() -> None:
    """Every path alone, from every message into every message, with every flag."""
    messages = _all_types_messages()
    struct_class = codec.struct(everything_pb2.AllTypes)
    for path in _MERGE_PATHS:
        for source, destination in itertools.product(messages, repeat=2):
            for flags in itertools.product([False, True], repeat=2):
                pb2_destination = type(destination).FromString(_encoding(destination))
                struct_destination = _struct_of(destination, struct_class)
                struct_source = _struct_of(source, struct_class)
                _assert_same(
                    _merged(field_mask_pb2.FieldMask, path, source, pb2_destination, flags),
                    _merged(
                        _GENERATED["FieldMask"], path, struct_source, struct_destination, flags
                    ),
                )
                assert _encoding(struct_destination) == _encoding(pb2_destination), (path, flags)


def test_field_mask_merge_message_copies(wkt: dict[str, Any]) -> None:
    struct_class = codec.struct(everything_pb2.AllTypes)
    source = _struct_of(_all_types_messages()[2], struct_class)
    destination = struct_class()
    mask = wkt["FieldMask"](paths=["r_inner", "m_string_inner", "f_inner", "c_inner.a"])
    mask.MergeMessage(source, destination)
    assert destination.r_inner[0] is not source.r_inner[0]
    assert destination.m_string_inner["k"] is not source.m_string_inner["k"]
    assert destination.f_inner is not source.f_inner
    destination.r_inner[0].a = 99
    destination.m_string_inner["k"].a = 99
    destination.f_inner.again.a = 99
    assert source == _struct_of(_all_types_messages()[2], struct_class)


_RECORD_PATHS = ["count", "note", "child", "child.count", "child.note", "id", "name", "child.child"]


def _records() -> list[Any]:
    record = legacy_pb2.Record
    return [
        record(),
        record(id=1, count=0, note="x"),
        record(child=record(id=2, count=3)),
        record(count=4, child=record(note="y", child=record(name="z"))),
    ]


@pytest.mark.parametrize("source", range(4))
@pytest.mark.parametrize("destination", range(4))
@pytest.mark.parametrize("replace_message", [False, True])
def test_field_mask_merge_message_proto2(
    wkt: dict[str, Any], source: int, destination: int, replace_message: bool
) -> None:
    struct_class = codec.struct(legacy_pb2.Record)
    pb2_source, pb2_destination = _records()[source], _records()[destination]
    struct_source = _struct_of(pb2_source, struct_class)
    struct_destination = _struct_of(pb2_destination, struct_class)
    for paths in ([path] for path in _RECORD_PATHS):
        pb2_mask, struct_mask = field_mask_pb2.FieldMask(paths=paths), wkt["FieldMask"](paths=paths)
        _assert_same(
            _outcome(
                lambda m=pb2_mask: m.MergeMessage(pb2_source, pb2_destination, replace_message)
            ),
            _outcome(
                lambda m=struct_mask: m.MergeMessage(
                    struct_source, struct_destination, replace_message
                )
            ),
        )
        assert _encoding(struct_destination) == _encoding(pb2_destination)


def test_field_mask_merge_into_an_unset_sub_message(wkt: dict[str, Any]) -> None:
    """A destination read from an unset field is set in its parent by the first write."""
    all_types = everything_pb2.AllTypes
    struct_class = codec.struct(all_types)
    source = all_types(f_inner=all_types.Inner(a=3))
    for paths in (["f_inner.a"], ["f_inner.again"], ["f_inner.tags"]):
        pb2_parent, struct_parent = all_types(), struct_class()
        field_mask_pb2.FieldMask(paths=paths).MergeMessage(source, pb2_parent.recursive)
        wkt["FieldMask"](paths=paths).MergeMessage(
            _struct_of(source, struct_class), struct_parent.recursive
        )
        assert _encoding(struct_parent) == _encoding(pb2_parent)


# --- the same methods, by the same names ----------------------------------------------


_WITH_METHODS = ["Any", "Duration", "FieldMask", "ListValue", "Struct", "Timestamp"]


@pytest.mark.parametrize("name", _WITH_METHODS)
def test_methods_and_parameters_are_pb2s(wkt: dict[str, Any], name: str) -> None:
    """Each of pb2's methods is there: a named one with its parameters named as pb2's (for
    keyword calls), an operator the type's own. pb2's private helpers
    (``_internal_assign``...) are its own."""
    for method, function in vars(well_known_types.WKTBASES[f"google.protobuf.{name}"]).items():
        if not callable(function) or (method.startswith("_") and not method.endswith("__")):
            continue
        ours = getattr(wkt[name], method)
        if method.startswith("__"):
            assert ours is not getattr(codec.Message, method, None), method
        else:
            assert list(inspect.signature(ours).parameters) == list(
                inspect.signature(function).parameters
            ), method


# --- the types without methods -------------------------------------------------------


_WRAPPERS = [
    "DoubleValue",
    "FloatValue",
    "Int64Value",
    "UInt64Value",
    "Int32Value",
    "UInt32Value",
    "BoolValue",
    "StringValue",
    "BytesValue",
]


@pytest.mark.parametrize("name", _WRAPPERS)
def test_wrappers_have_no_methods(name: str) -> None:
    """pb2 gives the wrapper types no methods of their own, so their structs have no mixin."""
    pb2_class = getattr(wrappers_pb2, name)
    assert not any("well_known_types" in base.__module__ for base in pb2_class.__mro__)
    assert codec.struct(pb2_class).__mro__[1] is codec.Message
    assert codec.struct(struct_pb2.Value).__mro__[1] is codec.Message
