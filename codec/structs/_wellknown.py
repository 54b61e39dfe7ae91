"""pb2's helper methods of the well-known types, as mixins of their struct classes.

Strategy: pb2 gives some well-known message types methods of their own
(``Timestamp.FromDatetime``, ``Any.Pack``, ``Struct.update``...). Each type's
methods are a mixin here, with empty ``__slots__``, named in :data:`_MIXINS`
by the full name of its message type; :mod:`codec.structs._schema` puts it before
:class:`codec.Message` among the bases of that type's struct class, whatever
pool the descriptor comes from (a ``_pb2`` module's, a generated module's or
``load_structs``' own). The wrapper types (``DoubleValue``...), ``Empty`` and
``Value`` have no methods of their own in pb2, so none here.

A field of type Timestamp, Duration, Struct or ListValue also takes, as
pb2's does, the Python value the type stands for: a ``datetime``, a
``timedelta``, a dict, a list (:func:`converter_of`, which
``MessagePlan.accept`` gives to the assignment checks).

The methods are written against the struct API only (field attributes,
``HasField``, ``WhichOneof``, ``ClearField``, ``Clear``, ``append`` on a
repeated field, assigning a struct to a message field), never against
``None`` for an unset sub-message, and each behaves as pb2's does: the same
results, the same exception classes, the same changes left behind by a call
that fails half way (``Struct["missing"]`` adds an empty value before its
ValueError, as pb2's does). Where pb2 computes with floats (the fractional
seconds of the JSON forms) the same computation is made, so that the same
strings are accepted. Error messages are codec's own. Struct and ListValue
mixins are registered as ``MutableMapping`` and ``MutableSequence``, as
pb2's classes are. For a type checker each mixin derives from
:class:`codec.Message` and declares its fields; at run time from ``object``.

Another type's class (``Value`` for ``Struct``, ``Struct`` for ``Value``) is
found from the descriptor of the field that holds it, taken from the
message's own class: ``codec.struct`` of that descriptor is the class of the
same pool, so a generated module's ``Struct`` makes that module's ``Value``
and the ``_pb2`` pool's makes the ``_pb2`` pool's (see :func:`_field_class`).

A struct whose content is changed in place through a map (``Struct.fields``,
a dict) is assigned its map again, so that a default sub-message read from an
unset field becomes set in its parent, as pb2's does once written to.

``FieldMask.MergeMessage`` walks the mask's tree of field names as pb2 does,
by the source's descriptor. A struct destination's unset sub-message is made
aside and set in its parent at the first write below it (pb2 sets it on the
same writes: any assignment, clearing or repeated merge; not a merge of an
unset message). Repeated fields and maps of a struct destination get copies
of the source's messages, never the messages themselves.
"""

from __future__ import annotations

import calendar
import collections.abc
import copy
import datetime
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from codec.structs._struct import Struct

if TYPE_CHECKING:
    from codec.structs._message import Message as _Base
else:
    _Base = object

__all__ = ["bases_of", "converter_of"]

_NANOS = 1_000_000_000  # per second
_NANOS_PER_MICRO = 1_000
_NANOS_PER_MILLI = 1_000_000
_SECONDS_PER_DAY = 86_400
_TIMESTAMP_MIN = -62_135_596_800  # 0001-01-01T00:00:00Z
_TIMESTAMP_MAX = 253_402_300_799  # 9999-12-31T23:59:59Z
_DURATION_MAX = 315_576_000_000  # 10,000 years of 365.25 days
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_UTC = _EPOCH.replace(tzinfo=datetime.UTC)
_CLOCK_FORMAT = "%Y-%m-%dT%H:%M:%S"


def _is_a(value: Any, full_name: str) -> bool:
    """Whether ``value`` is a message (struct or pb2) of type ``full_name``."""
    descriptor = getattr(type(value), "DESCRIPTOR", None)
    return isinstance(descriptor, Descriptor) and descriptor.full_name == full_name


_classes: dict[tuple[type, tuple[str, ...]], Any] = {}  # by owner class and path


def _field_class(owner: type, path: tuple[str, ...]) -> Any:
    """The struct class of the message type reached from ``owner``'s through fields ``path``.

    ``("fields", "value")`` from ``Struct`` goes through the map's entry type
    to ``Value``. The descriptors are ``owner``'s own, so the class is of its pool.
    """
    found = _classes.get((owner, path))
    if found is None:
        from codec.structs._schema import struct  # codec.structs._schema imports this module

        descriptor: Any = owner.DESCRIPTOR  # type: ignore[attr-defined]
        for name in path:
            descriptor = descriptor.fields_by_name[name].message_type
        found = _classes[owner, path] = struct(descriptor)
    return found


def _fraction(nanos: int) -> str:
    """The fractional seconds of the JSON forms: none, or 3, 6 or 9 digits, as few as exact."""
    if nanos == 0:
        return ""
    if nanos % _NANOS_PER_MILLI == 0:
        return f".{nanos // _NANOS_PER_MILLI:03d}"
    if nanos % _NANOS_PER_MICRO == 0:
        return f".{nanos // _NANOS_PER_MICRO:06d}"
    return f".{nanos:09d}"


def _toward_zero(value: int, divisor: int) -> int:
    """``value / divisor`` with the remainder dropped, whatever the sign."""
    quotient = abs(value) // divisor
    return quotient if value >= 0 else -quotient


# --- Timestamp and Duration --------------------------------------------------------


def _check_timestamp(seconds: int, nanos: int) -> None:
    if not _TIMESTAMP_MIN <= seconds <= _TIMESTAMP_MAX:
        raise ValueError(
            f"invalid Timestamp: seconds {seconds} outside "
            f"[{_TIMESTAMP_MIN}, {_TIMESTAMP_MAX}] (years 1 to 9999)"
        )
    if not 0 <= nanos < _NANOS:
        raise ValueError(f"invalid Timestamp: nanos {nanos} outside [0, 999999999]")


def _check_duration(seconds: int, nanos: int) -> None:
    if not -_DURATION_MAX <= seconds <= _DURATION_MAX:
        raise ValueError(
            f"invalid Duration: seconds {seconds} outside [-{_DURATION_MAX}, {_DURATION_MAX}]"
        )
    if not -_NANOS < nanos < _NANOS:
        raise ValueError(f"invalid Duration: nanos {nanos} outside [-999999999, 999999999]")
    if (seconds < 0 < nanos) or (nanos < 0 < seconds):
        raise ValueError(f"invalid Duration: seconds {seconds} and nanos {nanos} differ in sign")


class _SecondsAndNanos(_Base):
    """The From methods Timestamp and Duration share: a count of a unit, floor-divided into
    seconds and nanos, which the type's own ``_set`` checks or normalizes and sets."""

    __slots__ = ()

    if TYPE_CHECKING:

        def _set(self, seconds: int, nanos: int) -> None: ...

    def FromNanoseconds(self, nanos: int) -> None:
        """Set from nanoseconds (since the epoch, for a Timestamp)."""
        self._set(nanos // _NANOS, nanos % _NANOS)

    def FromMicroseconds(self, micros: int) -> None:
        """Set from microseconds (since the epoch, for a Timestamp)."""
        self._set(micros // 1_000_000, micros % 1_000_000 * _NANOS_PER_MICRO)

    def FromMilliseconds(self, millis: int) -> None:
        """Set from milliseconds (since the epoch, for a Timestamp)."""
        self._set(millis // 1_000, millis % 1_000 * _NANOS_PER_MILLI)


class TimestampMethods(_SecondsAndNanos):
    """pb2's methods of ``google.protobuf.Timestamp``: a point in UTC, seconds and nanos.

    Every conversion out of a Timestamp, and every conversion in, refuses a
    time outside years 1 to 9999 or nanos outside ``[0, 10**9)`` with a
    ValueError; conversions in compute both fields before setting either.
    ``+`` and ``-`` work on the ``datetime`` of the Timestamp (naive, UTC).
    """

    __slots__ = ()
    seconds: int
    nanos: int

    def _set(self, seconds: int, nanos: int) -> None:
        _check_timestamp(seconds, nanos)
        self.seconds = seconds
        self.nanos = nanos

    def ToJsonString(self) -> str:
        """RFC 3339 in UTC (``Z``), with 0, 3, 6 or 9 fractional digits, as few as exact."""
        _check_timestamp(self.seconds, self.nanos)
        days, seconds = divmod(self.seconds, _SECONDS_PER_DAY)
        moment = _EPOCH + datetime.timedelta(days=days, seconds=seconds)
        return f"{moment.isoformat()}{_fraction(self.nanos)}Z"

    def FromJsonString(self, value: str) -> None:
        """Set from RFC 3339 text: ``Z`` or a ``±hh:mm`` offset, up to 9 fractional digits.

        The offset starts at the first ``Z``, else the first ``+``, else the
        last ``-``; a ValueError for anything that does not parse.
        """
        if not isinstance(value, str):
            raise ValueError(f"a Timestamp's JSON form is a string, not {value!r}")
        zone_at = value.find("Z")
        if zone_at < 0:
            zone_at = value.find("+")
        if zone_at < 0:
            zone_at = value.rfind("-")
        if zone_at < 0:
            raise ValueError(f"Timestamp {value!r} has no time zone offset (Z or ±hh:mm)")
        clock, _, digits = value[:zone_at].partition(".")
        if "t" in clock:
            raise ValueError(f"Timestamp {value!r}: the date and time are separated by 'T'")
        since_epoch = datetime.datetime.strptime(clock, _CLOCK_FORMAT) - _EPOCH
        seconds = since_epoch.days * _SECONDS_PER_DAY + since_epoch.seconds
        if len(digits) > 9:
            raise ValueError(f"Timestamp {value!r} has more than 9 fractional digits")
        nanos = round(float("0." + digits) * 1e9) if digits else 0
        zone = value[zone_at:]
        if zone[0] == "Z":
            if len(zone) != 1:
                raise ValueError(f"Timestamp {value!r} has text after its 'Z'")
        else:
            colon = zone.find(":")
            if colon < 0:
                raise ValueError(f"Timestamp {value!r}: offset {zone!r} is not ±hh:mm")
            offset = (int(zone[1:colon]) * 60 + int(zone[colon + 1 :])) * 60
            seconds += -offset if zone[0] == "+" else offset
        self._set(int(seconds), int(nanos))

    def GetCurrentTime(self) -> None:
        """Set to the current time."""
        self.FromDatetime(datetime.datetime.now(tz=datetime.UTC))

    def ToNanoseconds(self) -> int:
        """Nanoseconds since the epoch."""
        _check_timestamp(self.seconds, self.nanos)
        return self.seconds * _NANOS + self.nanos

    def ToMicroseconds(self) -> int:
        """Microseconds since the epoch, rounded down."""
        _check_timestamp(self.seconds, self.nanos)
        return self.seconds * 1_000_000 + self.nanos // _NANOS_PER_MICRO

    def ToMilliseconds(self) -> int:
        """Milliseconds since the epoch, rounded down."""
        _check_timestamp(self.seconds, self.nanos)
        return self.seconds * 1_000 + self.nanos // _NANOS_PER_MILLI

    def ToSeconds(self) -> int:
        """Seconds since the epoch, rounded down (the ``seconds`` field)."""
        _check_timestamp(self.seconds, self.nanos)
        return self.seconds

    def FromSeconds(self, seconds: int) -> None:
        """Set from whole seconds since the epoch."""
        self._set(seconds, 0)

    def ToDatetime(self, tzinfo: datetime.tzinfo | None = None) -> datetime.datetime:
        """The ``datetime``, to the microsecond (rounded down).

        Naive (and in UTC) when ``tzinfo`` is None, else aware and in ``tzinfo``.
        """
        _check_timestamp(self.seconds, self.nanos)
        since_epoch = datetime.timedelta(
            seconds=self.seconds, microseconds=self.nanos // _NANOS_PER_MICRO
        )
        if tzinfo is None:
            return _EPOCH + since_epoch
        return (_EPOCH_UTC + since_epoch).astimezone(tzinfo)

    def FromDatetime(self, dt: datetime.datetime) -> None:
        """Set from a ``datetime``: an aware one's own time zone, a naive one taken as UTC.

        A TypeError for anything but a datetime (or a class named
        ``datetime``, whose missing attributes are an AttributeError).
        """
        if type(dt).__name__ != "datetime" and not isinstance(dt, datetime.datetime):
            raise TypeError(f"expected a datetime for a Timestamp, not {type(dt).__name__}")
        try:
            seconds = calendar.timegm(dt.utctimetuple())
            nanos = dt.microsecond * _NANOS_PER_MICRO
        except AttributeError as error:
            raise AttributeError(
                f"expected a datetime for a Timestamp, not {type(dt).__name__}: {error}"
            ) from error
        self._set(seconds, nanos)

    def __add__(self, other: Any) -> datetime.datetime:
        if _is_a(other, "google.protobuf.Duration"):
            other = other.ToTimedelta()
        return self.ToDatetime() + other  # type: ignore[no-any-return]

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        if _is_a(other, "google.protobuf.Timestamp"):
            other = other.ToDatetime()
        elif _is_a(other, "google.protobuf.Duration"):
            other = other.ToTimedelta()
        return self.ToDatetime() - other

    def __rsub__(self, other: Any) -> Any:
        return other - self.ToDatetime()


class DurationMethods(_SecondsAndNanos):
    """pb2's methods of ``google.protobuf.Duration``: a signed span, seconds and nanos.

    The two fields have one sign; the From methods normalize their input so,
    and do not check the range, as pb2's do (the JSON form and
    ``ToJsonString`` do). ``+`` and ``-`` work on the ``timedelta``.
    """

    __slots__ = ()
    seconds: int
    nanos: int

    def _set(self, seconds: int, nanos: int) -> None:
        """Set from a floor-divided pair (``nanos`` in ``[0, 10**9)``), giving nanos the sign."""
        if seconds < 0 < nanos:
            seconds, nanos = seconds + 1, nanos - _NANOS
        self.seconds = seconds
        self.nanos = nanos

    def ToJsonString(self) -> str:
        """Seconds with an ``s``, and 0, 3, 6 or 9 fractional digits: ``"-1.500s"``."""
        _check_duration(self.seconds, self.nanos)
        sign = "-" if self.seconds < 0 or self.nanos < 0 else ""
        return f"{sign}{abs(self.seconds)}{_fraction(abs(self.nanos))}s"

    def FromJsonString(self, value: str) -> None:
        """Set from the JSON form: a decimal number of seconds ending in ``s``.

        A ValueError for anything that does not parse or is out of range.
        """
        if not isinstance(value, str):
            raise ValueError(f"a Duration's JSON form is a string, not {value!r}")
        if not value.endswith("s"):
            raise ValueError(f"Duration {value!r} does not end with 's'")
        whole, dot, digits = value[:-1].partition(".")
        try:
            seconds = int(whole)
            nanos = 0
            if dot:
                fraction = float("0." + digits)
                nanos = round((-fraction if value[0] == "-" else fraction) * 1e9)
            _check_duration(seconds, nanos)
            self.seconds = seconds
            self.nanos = nanos
        except ValueError as error:
            raise ValueError(f"cannot parse Duration {value!r}: {error}") from error

    def ToNanoseconds(self) -> int:
        """The span in nanoseconds."""
        return self.seconds * _NANOS + self.nanos

    def ToMicroseconds(self) -> int:
        """The span in microseconds, rounded toward zero."""
        return self.seconds * 1_000_000 + _toward_zero(self.nanos, _NANOS_PER_MICRO)

    def ToMilliseconds(self) -> int:
        """The span in milliseconds, rounded toward zero."""
        return self.seconds * 1_000 + _toward_zero(self.nanos, _NANOS_PER_MILLI)

    def ToSeconds(self) -> int:
        """The whole seconds of the span (the ``seconds`` field)."""
        return self.seconds

    def FromSeconds(self, seconds: int) -> None:
        """Set from whole seconds."""
        self.seconds = seconds
        self.nanos = 0

    def ToTimedelta(self) -> datetime.timedelta:
        """The ``timedelta``, to the microsecond (rounded toward zero)."""
        micros = _toward_zero(self.nanos, _NANOS_PER_MICRO)
        return datetime.timedelta(seconds=self.seconds, microseconds=micros)

    def FromTimedelta(self, td: datetime.timedelta) -> None:
        """Set from a ``timedelta``; a TypeError for anything else (see FromDatetime)."""
        if type(td).__name__ != "timedelta" and not isinstance(td, datetime.timedelta):
            raise TypeError(f"expected a timedelta for a Duration, not {type(td).__name__}")
        try:
            seconds = td.days * _SECONDS_PER_DAY + td.seconds
            nanos = td.microseconds * _NANOS_PER_MICRO
        except AttributeError as error:
            raise AttributeError(
                f"expected a timedelta for a Duration, not {type(td).__name__}: {error}"
            ) from error
        self._set(seconds, nanos)

    def __add__(self, other: Any) -> Any:
        if _is_a(other, "google.protobuf.Timestamp"):
            other = other.ToDatetime()
        return self.ToTimedelta() + other

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        return self.ToTimedelta() - other

    def __rsub__(self, other: Any) -> Any:
        return other - self.ToTimedelta()


# --- Any -----------------------------------------------------------------------------


class AnyMethods(_Base):
    """pb2's methods of ``google.protobuf.Any``: a message packed with its type's URL.

    The packed message may be a struct or a pb2 message: either has
    ``DESCRIPTOR``, ``SerializeToString`` and ``ParseFromString``.
    """

    __slots__ = ()
    type_url: str
    value: bytes

    def Pack(
        self,
        msg: Any,
        type_url_prefix: str = "type.googleapis.com/",
        deterministic: bool | None = None,
    ) -> None:
        """Hold ``msg``'s encoding and the URL of its type (``prefix/full.Name``)."""
        separator = "" if type_url_prefix[-1:] == "/" else "/"
        self.type_url = f"{type_url_prefix}{separator}{msg.DESCRIPTOR.full_name}"
        self.value = msg.SerializeToString(deterministic=deterministic)

    def Unpack(self, msg: Any) -> bool:
        """Parse the held message into ``msg`` if it is of ``msg``'s type; whether it was."""
        if not self.Is(msg.DESCRIPTOR):
            return False
        msg.ParseFromString(self.value)
        return True

    def TypeName(self) -> str:
        """The full name of the held message's type: the URL after its last ``/``."""
        return self.type_url.rpartition("/")[2]

    def Is(self, descriptor: Descriptor) -> bool:
        """Whether the held message is of the type of ``descriptor``."""
        return "/" in self.type_url and self.TypeName() == descriptor.full_name


# --- Struct and ListValue --------------------------------------------------------------


def _set_value(value: Any, item: Any) -> None:
    """Make ``value`` (a ``google.protobuf.Value``) hold the Python value ``item``.

    None, bool, str, int and float become the scalar kinds; a dict or a Struct
    replaces the content of the Value's struct, a list, tuple or ListValue the
    content of its list, in place as pb2 does. Anything else is a ValueError.
    """
    if item is None:
        value.null_value = 0
    elif isinstance(item, bool):  # before the numbers: a bool is an int
        value.bool_value = item
    elif isinstance(item, str):
        value.string_value = item
    elif isinstance(item, (int, float)):
        value.number_value = float(item)  # an OverflowError for a huge int, as pb2's
    elif isinstance(item, dict) or _is_a(item, "google.protobuf.Struct"):
        _held(value, "struct_value").update(item)
    elif isinstance(item, (list, tuple)) or _is_a(item, "google.protobuf.ListValue"):
        _held(value, "list_value").extend(item)
    else:
        raise ValueError(
            f"a google.protobuf.Value holds None, bool, int, float, str, dict or list, "
            f"not {type(item).__name__}"
        )


def _held(value: Any, kind: str) -> Any:
    """``value``'s struct or list (``kind``), set and empty: the one it had, cleared, or new."""
    if value.HasField(kind):
        held = getattr(value, kind)
        held.Clear()
    else:
        held = _field_class(type(value), (kind,))()
        setattr(value, kind, held)
    return held


def _python_value(value: Any) -> Any:
    """What ``value`` (a ``google.protobuf.Value``) holds, as Python reads it.

    A struct or a list is the Value's own message (changes to it are the
    Value's); a Value that holds nothing is a ValueError.
    """
    kind = value.WhichOneof("kind")
    if kind is None:
        raise ValueError("the google.protobuf.Value holds no value")
    return None if kind == "null_value" else getattr(value, kind)


def _equals_python(held: Any, other: Any) -> bool:
    """Whether ``held`` (a Python value read from a Value) equals ``other``, as pb2 compares.

    A dict or list on the right is compared with the Struct or ListValue on
    the left item by item; anything else with ``==``.
    """
    if isinstance(other, dict):
        return isinstance(held, StructMethods) and held._equals_dict(other)
    if isinstance(other, list):
        return isinstance(held, ListValueMethods) and held._equals_list(other)
    return bool(held == other)


def _key(key: Any) -> str:
    """A Struct key: a str, or UTF-8 bytes; a TypeError for anything else, as pb2's."""
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return key.decode()
    raise TypeError(f"google.protobuf.Struct keys are str, not {type(key).__name__}")


class StructMethods(_Base):
    """pb2's mapping interface of ``google.protobuf.Struct``: str keys to Python values.

    Values are stored as ``Value`` structs in the ``fields`` map and read
    back as Python values (see :func:`_set_value`, :func:`_python_value`);
    a nested struct or list reads as the live message. Compares equal to a
    dict of the same content, as pb2's does; ``!=`` is the opposite of ``==``
    (pb2's ``!=`` of a Struct and a dict gives what its ``==`` gives).
    """

    __slots__ = ()
    fields: dict[str, Any]

    def _value_at(self, key: Any) -> Any:
        """The Value at ``key``, added empty if there is none (pb2's map reads add it)."""
        key = _key(key)
        fields = self.fields
        value = fields.get(key)
        if value is None:
            value = fields[key] = _field_class(type(self), ("fields", "value"))()
            self.fields = fields  # a write: sets a default sub-message in its parent
        return value

    def __getitem__(self, key: str) -> Any:
        return _python_value(self._value_at(key))

    def __setitem__(self, key: str, item: Any) -> None:
        _set_value(self._value_at(key), item)

    def __delitem__(self, key: str) -> None:
        del self.fields[_key(key)]

    def __contains__(self, key: object) -> bool:
        return _key(key) in self.fields

    def __len__(self) -> int:
        return len(self.fields)

    def __iter__(self) -> Iterator[str]:
        return iter(self.fields)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, dict):
            return self._equals_dict(other)
        return super().__eq__(other)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def _equals_dict(self, other: dict[Any, Any]) -> bool:
        return len(self) == len(other) and all(
            key in other and _equals_python(item, other[key]) for key, item in self.items()
        )

    def keys(self) -> collections.abc.KeysView[str]:
        """The keys, a view of the ``fields`` map's."""
        return self.fields.keys()

    def values(self) -> list[Any]:
        """The values, as Python reads them."""
        return [self[key] for key in self]

    def items(self) -> list[tuple[str, Any]]:
        """The (key, value) pairs, values as Python reads them."""
        return [(key, self[key]) for key in self]

    def update(self, dictionary: Any) -> None:
        """Set each key of ``dictionary`` (anything with ``items()``) to its value."""
        for key, item in dictionary.items():
            self[key] = item

    def get_or_create_struct(self, key: str) -> Any:
        """The Struct at ``key``, made empty there if the key holds anything else."""
        value = self._value_at(key)
        if not value.HasField("struct_value"):
            _held(value, "struct_value")
        return value.struct_value

    def get_or_create_list(self, key: str) -> Any:
        """The ListValue at ``key``, made empty there if the key holds anything else."""
        value = self._value_at(key)
        if not value.HasField("list_value"):
            _held(value, "list_value")
        return value.list_value


class ListValueMethods(_Base):
    """pb2's sequence interface of ``google.protobuf.ListValue``: a list of Python values.

    Items are stored as ``Value`` structs in the ``values`` field and read
    back as Python values, as a Struct's are. Compares equal to a list of the
    same content, as pb2's does. There is no ``insert``, as pb2 has none.
    """

    __slots__ = ()
    values: list[Any]

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index: int) -> Any:
        return _python_value(self.values[index])

    def __setitem__(self, index: int, item: Any) -> None:
        _set_value(self.values[index], item)

    def __delitem__(self, index: int | slice) -> None:
        del self.values[index]

    def __iter__(self) -> Iterator[Any]:
        return self.items()

    def __contains__(self, item: object) -> bool:
        return item in self.items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return self._equals_list(other)
        return super().__eq__(other)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def _equals_list(self, other: list[Any]) -> bool:
        return len(self) == len(other) and all(
            _equals_python(item, expected) for item, expected in zip(self, other, strict=True)
        )

    def _new_value(self) -> Any:
        """A new empty Value, appended."""
        value = _field_class(type(self), ("values",))()
        self.values.append(value)
        return value

    def append(self, value: Any) -> None:
        """Append ``value`` as a Value (an empty one stays appended if it cannot be held)."""
        _set_value(self._new_value(), value)

    def extend(self, elem_seq: Iterable[Any]) -> None:
        """Append each item of ``elem_seq``."""
        for item in elem_seq:
            self.append(item)

    def items(self) -> Iterator[Any]:
        """The items, as Python reads them."""
        for index in range(len(self)):
            yield self[index]

    def add_struct(self) -> Any:
        """Append an empty Struct and return it."""
        return _held(self._new_value(), "struct_value")

    def add_list(self) -> Any:
        """Append an empty ListValue and return it."""
        return _held(self._new_value(), "list_value")


collections.abc.MutableMapping.register(StructMethods)
collections.abc.MutableSequence.register(ListValueMethods)


# --- FieldMask ---------------------------------------------------------------------------

# A set of paths as a tree of field names: each node a dict from a name to
# the node below it, a leaf (an empty dict) standing for the whole field.
_Tree = dict[str, Any]


def _add_path(tree: _Tree, path: str) -> None:
    """Add ``path``: nothing if a path above it is there, else it replaces those below it."""
    node = tree
    for name in path.split("."):
        below = node.get(name)
        if below is None:
            below = node[name] = {}
        elif not below:
            return
        node = below
    node.clear()


def _tree(*masks: Any) -> _Tree:
    tree: _Tree = {}
    for mask in masks:
        for path in mask.paths:
            _add_path(tree, path)
    return tree


def _set_paths(mask: Any, tree: _Tree) -> None:
    """Make ``mask``'s paths the leaves of ``tree``, sorted (a path of no name is left out)."""
    mask.Clear()
    pending = [(tree, "")]
    while pending:
        node, prefix = pending.pop()
        if not node:
            if prefix:
                mask.paths.append(prefix)
            continue
        for name in sorted(node, reverse=True):  # popped in order
            pending.append((node[name], f"{prefix}.{name}" if prefix else name))


def _intersect_path(tree: _Tree, path: str, into: _Tree) -> None:
    """Add to ``into`` the part of ``path`` that ``tree`` covers."""
    node = tree
    for name in path.split("."):
        if name not in node:
            return
        node = node[name]
        if not node:  # a leaf: the whole of path is covered
            _add_path(into, path)
            return
    pending = [(path, node)]  # what tree has below path
    while pending:
        prefix, node = pending.pop()
        if not node:
            _add_path(into, prefix)
        pending += [(f"{prefix}.{name}", below) for name, below in node.items()]


def _check_field_mask(message: Any) -> None:
    descriptor = message.DESCRIPTOR
    if descriptor.name != "FieldMask" or descriptor.file.name != "google/protobuf/field_mask.proto":
        raise ValueError(f"{descriptor.full_name} is not google.protobuf.FieldMask")


def _is_valid_path(descriptor: Any, path: str) -> bool:
    *parents, last = path.split(".")
    for name in parents:
        field = descriptor.fields_by_name.get(name)
        if field is None or field.is_repeated or field.type != FieldDescriptor.TYPE_MESSAGE:
            return False
        descriptor = field.message_type
    return last in descriptor.fields_by_name


def _camel_case(path: str) -> str:
    """``foo_bar`` as ``fooBar``: a ValueError for an upper-case letter, or an ``_`` not
    followed by a lower-case letter."""
    out: list[str] = []
    after_underscore = False
    for char in path:
        if char.isupper():
            raise ValueError(f"FieldMask path {path!r} has an upper-case letter")
        if after_underscore:
            if not char.islower():
                raise ValueError(f"FieldMask path {path!r}: '_' before a non-lower-case letter")
            out.append(char.upper())
            after_underscore = False
        elif char == "_":
            after_underscore = True
        else:
            out.append(char)
    if after_underscore:
        raise ValueError(f"FieldMask path {path!r} ends with '_'")
    return "".join(out)


def _snake_case(path: str) -> str:
    """``fooBar`` as ``foo_bar``: a ValueError for an ``_`` (the JSON form has none)."""
    if "_" in path:
        raise ValueError(f"FieldMask JSON path {path!r} has a '_'")
    return "".join(f"_{char.lower()}" if char.isupper() else char for char in path)


def _no_write() -> None:
    """The destination given to MergeMessage is set already (or is its caller's)."""


def _part(
    destination: Any, name: str, written: Callable[[], None]
) -> tuple[Any, Callable[[], None]]:
    """Sub-message ``name`` of ``destination``, and what sets it there on a first write.

    A pb2 message's own stub sets itself; a struct's unset sub-message is
    made aside and set when ``written`` is called (after ``destination``'s
    own, up the path).
    """
    if not isinstance(destination, Struct) or destination.HasField(name):
        return getattr(destination, name), written
    part = _field_class(type(destination), (name,))()
    done = False

    def set_part() -> None:
        nonlocal done
        if not done:
            done = True
            written()
            setattr(destination, name, part)

    return part, set_part


def _copied(item: Any) -> Any:
    """``item`` of a source's repeated field or map, as a destination may hold it too."""
    return copy.copy(item) if isinstance(item, Struct) else item


def _merge_repeated(source: Any, destination: Any, field: FieldDescriptor, replace: bool) -> None:
    """Append repeated field ``field`` of ``source`` to ``destination``'s (map entries replace)."""
    name = field.name
    if replace:
        destination.ClearField(name)
    items = getattr(source, name)
    if not isinstance(destination, Struct):
        getattr(destination, name).MergeFrom(items)
        return
    own = getattr(destination, name)
    if isinstance(own, dict):
        own.update((key, _copied(item)) for key, item in items.items())
        setattr(destination, name, own)  # a write: sets a default sub-message in its parent
    elif isinstance(own, list):
        own.extend([_copied(item) for item in items])
    else:  # a numpy array, which a struct holds as it is
        setattr(destination, name, [*own, *(_copied(item) for item in items)])


def _merge_message(
    tree: _Tree, source: Any, destination: Any, replace_message: bool, replace_repeated: bool
) -> None:
    """Merge the fields of ``tree`` from ``source`` into ``destination``, as pb2 does.

    The tree is walked by ``source``'s descriptor, breadth first as pb2 walks
    it (so a failure leaves the same fields merged). A name that is not a
    field is a KeyError; a path below a field that is not a singular message
    a ValueError.
    """
    pending: list[tuple[_Tree, Any, Any, Callable[[], None]]] = [
        (tree, source, destination, _no_write)
    ]
    while pending:
        node, source, destination, written = pending.pop()
        descriptor = source.DESCRIPTOR
        for name, below in node.items():
            field = descriptor.fields_by_name[name]
            is_message = field.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE
            if below:
                if field.is_repeated or not is_message:
                    raise ValueError(
                        f"field {name} of {descriptor.full_name} is not a singular message "
                        "field, so a FieldMask path cannot go below it"
                    )
                if source.HasField(name):
                    pending.append(
                        (below, getattr(source, name), *_part(destination, name, written))
                    )
            elif field.is_repeated:
                written()
                _merge_repeated(source, destination, field, replace_repeated)
            elif is_message:
                if replace_message:
                    written()
                    destination.ClearField(name)
                if source.HasField(name):
                    part, set_part = _part(destination, name, written)
                    set_part()
                    part.MergeFrom(getattr(source, name))
            else:
                written()
                if not field.has_presence or source.HasField(name):
                    setattr(destination, name, getattr(source, name))
                else:
                    destination.ClearField(name)


class FieldMaskMethods(_Base):
    """pb2's methods of ``google.protobuf.FieldMask``: a set of dotted field paths.

    The set operations (``CanonicalFormFromMask``, ``Union``, ``Intersect``)
    go through a tree of field names and give paths sorted, none covered by
    another. ``MergeMessage`` takes structs or pb2 messages, source and
    destination of one type.
    """

    __slots__ = ()
    paths: list[str]

    def ToJsonString(self) -> str:
        """The paths in camelCase, comma-separated; a ValueError for a path JSON cannot name."""
        return ",".join(_camel_case(path) for path in self.paths)

    def FromJsonString(self, value: str) -> None:
        """Set from the JSON form: camelCase paths, comma-separated."""
        if not isinstance(value, str):
            raise ValueError(f"a FieldMask's JSON form is a string, not {value!r}")
        self.Clear()
        if value:
            for path in value.split(","):
                self.paths.append(_snake_case(path))

    def IsValidForDescriptor(self, message_descriptor: Descriptor) -> bool:
        """Whether every path names a field of ``message_descriptor``, through singular
        message fields."""
        return all(_is_valid_path(message_descriptor, path) for path in self.paths)

    def AllFieldsFromDescriptor(self, message_descriptor: Descriptor) -> None:
        """Set to the paths of every field of ``message_descriptor`` (not those below them)."""
        self.Clear()
        for field in message_descriptor.fields:
            self.paths.append(field.name)

    def CanonicalFormFromMask(self, mask: Any) -> None:
        """Set to ``mask``'s paths, sorted, without those another covers (``a.b`` by ``a``)."""
        _set_paths(self, _tree(mask))

    def Union(self, mask1: Any, mask2: Any) -> None:
        """Set to the paths of either mask, in canonical form."""
        _check_field_mask(mask1)
        _check_field_mask(mask2)
        _set_paths(self, _tree(mask1, mask2))

    def Intersect(self, mask1: Any, mask2: Any) -> None:
        """Set to the paths both masks cover, in canonical form."""
        _check_field_mask(mask1)
        _check_field_mask(mask2)
        tree = _tree(mask1)
        both: _Tree = {}
        for path in mask2.paths:
            _intersect_path(tree, path, both)
        _set_paths(self, both)

    def MergeMessage(
        self,
        source: Any,
        destination: Any,
        replace_message_field: bool = False,
        replace_repeated_field: bool = False,
    ) -> None:
        """Merge the fields the paths name from ``source`` into ``destination``.

        A singular field is copied, or cleared if unset in ``source`` (when it
        has presence); a message field is merged (replaced with
        ``replace_message_field``); a repeated field or map is appended to
        (replaced with ``replace_repeated_field``).
        """
        _merge_message(
            _tree(self), source, destination, replace_message_field, replace_repeated_field
        )


_MIXINS: dict[str, type] = {
    "google.protobuf.Any": AnyMethods,
    "google.protobuf.Duration": DurationMethods,
    "google.protobuf.FieldMask": FieldMaskMethods,
    "google.protobuf.ListValue": ListValueMethods,
    "google.protobuf.Struct": StructMethods,
    "google.protobuf.Timestamp": TimestampMethods,
}


def bases_of(full_name: str) -> tuple[type, ...]:
    """The mixins of the struct class of message type ``full_name`` (usually none)."""
    mixin: Any = _MIXINS.get(full_name)
    return () if mixin is None else (mixin,)


# What a field of these types takes besides a struct, as pb2's fields do, and the method
# that sets a new struct from it.
_TAKEN: dict[str, tuple[Any, str]] = {
    "google.protobuf.Duration": (datetime.timedelta, "FromTimedelta"),
    "google.protobuf.ListValue": ((list, tuple), "extend"),
    "google.protobuf.Struct": (collections.abc.Mapping, "update"),
    "google.protobuf.Timestamp": (datetime.datetime, "FromDatetime"),
}


def converter_of(full_name: str, cls: type) -> Callable[[Any], Any] | None:
    """How a field of message type ``full_name`` (struct class ``cls``) takes a Python value.

    A function of the value assigned, giving the struct it stands for (a
    Timestamp for a ``datetime``, a Duration for a ``timedelta``, a Struct
    for a dict, a ListValue for a list), or None for another value; None
    for the types whose fields take no such value.
    """
    taken = _TAKEN.get(full_name)
    if taken is None:
        return None
    kinds, method = taken
    fill = getattr(cls, method)

    def convert(value: Any) -> Any:
        if not isinstance(value, kinds):
            return None
        made = cls()
        fill(made, value)
        return made

    return convert
