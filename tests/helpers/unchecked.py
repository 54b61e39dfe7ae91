"""Values stored in a struct around the checks of assignment.

Assignment checks a value and converts a number to an ``int`` or ``float``
at once, as pb2 does; the encoder must still cope with anything a slot can
hold, since a slot's member descriptor stores any value and a list holds
whatever was appended. Tests that feed the encoder odd values (numbers that
read differently each time, wrong types) store them with :func:`put`.
"""

from __future__ import annotations

from typing import Any


def put(message: Any, name: str, value: Any) -> None:
    """Store ``value`` in field ``name`` through its slot's descriptor, unchecked.

    A field with presence is first set (to its default) so that it is written.
    """
    field = message.__plan__.by_name[name]
    if field.has_bit >= 0:
        setattr(message, name, getattr(message, name))
    field.member.__set__(message, value)


def unchecked(cls: Any, **fields: Any) -> Any:
    """A struct of ``cls`` holding ``fields`` as given (see :func:`put`)."""
    message = cls()
    for name, value in fields.items():
        put(message, name, value)
    return message
