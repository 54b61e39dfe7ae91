"""Detectors of known, reported, not yet fixed findings (see ``SECURITY.md`` "Findings").

A target's property stays strict by default: a known bug fails the run, as it
should in CI. Long fuzzing sessions set ``CODEC_FUZZ_TOLERATE_KNOWN=1`` so that
an input showing only a known finding is counted and skipped instead of
stopping the session; :func:`tolerated` says whether to skip, and
:data:`SEEN` counts how often each finding was skipped (printed at exit).

Each finding has an id (``K1``, ...), the reproducer under ``fuzz/crashes/``
named after it, and a detector that recognises it from the decoded struct.
"""

from __future__ import annotations

import atexit
import collections
import os
import sys
from typing import Any

TOLERATE = os.environ.get("CODEC_FUZZ_TOLERATE_KNOWN", "") not in ("", "0")
SEEN: collections.Counter[str] = collections.Counter()

FINDINGS = {
    "K1": "fixed in 35071d9 and cd16172: a packed run of a proto2 (closed) enum kept "
    "undeclared values in the field (upb moves each to the unknown fields), so decode -> "
    "encode was not a fixed point; the first fix missed numpy=True and wrote the moved values "
    "truncated to int32 (K1b)",
    "K2": "fixed: a LEN size of 6 to 10 bytes inside a message was accepted by codec and "
    "rejected by upb (which reads sizes of at most 5 bytes); codec now refuses it as upb does",
    "K3": "fixed in 96652bd: a proto2 map entry without its key (or scalar value) decoded to "
    "a None key (value) where upb uses the zero value; the struct could not be encoded",
}


def _structs(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [v for v in value.values() if hasattr(type(v), "__plan__")]
    if isinstance(value, list):
        return [v for v in value if hasattr(type(v), "__plan__")]
    return [value] if hasattr(type(value), "__plan__") else []


def _held(message: Any, field: Any) -> Any:
    """The value of ``field`` in ``message``; None for an unset sub-message, which is not
    read (reading makes its default, and a recursive type would be walked forever)."""
    if field.message is not None and not field.repeated and not message.HasField(field.name):
        return None
    return getattr(message, field.name)


def undeclared_closed_enum(message: Any) -> bool:
    """K1: a repeated closed-enum field of ``message`` or a sub-message has an undeclared value."""
    pending = [message]
    while pending:
        current = pending.pop()
        plan = type(current).__plan__
        for field in plan.fields_by_slot:
            value = _held(current, field)
            if value is None:
                continue
            closed = field.closed_enum
            if closed is not None and field.repeated and field.map_key is None:  # noqa: SIM102
                if any(int(v) not in closed for v in value):
                    return True
            if field.message is not None:
                pending.extend(_structs(value))
    return False


def map_none_entries(message: Any) -> bool:
    """K3: a map of ``message`` (or of a sub-message) has a None key or a None scalar value."""
    pending = [message]
    while pending:
        current = pending.pop()
        plan = type(current).__plan__
        for field in plan.fields_by_slot:
            value = _held(current, field)
            if field.map_key is not None and isinstance(value, dict):
                if None in value:
                    return True
                if field.map_value.message is None and None in value.values():
                    return True
            if value is not None and field.message is not None:
                pending.extend(_structs(value))
    return False


def closed_enum_in_unknown(message: Any) -> bool:
    """K1b: the unknown fields of ``message`` (or a sub-message) hold a closed-enum varint."""
    import codec

    pending = [message]
    while pending:
        current = pending.pop()
        plan = type(current).__plan__
        unknown = codec.unknown_fields(current)
        if unknown:
            try:
                for number, wire_type, _ in codec.WireReader(unknown):
                    field = plan.by_number.get(number)
                    if wire_type == 0 and field is not None and field.closed_enum is not None:
                        return True
            except codec.DecodeError:
                pass
        for field in plan.fields_by_slot:
            value = _held(current, field)
            if value is not None and field.message is not None:
                pending.extend(_structs(value))
    return False


def tolerated(finding: str) -> bool:
    """Count ``finding`` and say whether the caller may skip the input (tolerant mode only)."""
    SEEN[finding] += 1
    return TOLERATE


@atexit.register
def _report() -> None:
    if SEEN and TOLERATE:
        counts = ", ".join(f"{k}: {n}" for k, n in sorted(SEEN.items()))
        sys.stderr.write(f"INFO: known findings skipped ({counts})\n")
