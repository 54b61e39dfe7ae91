"""pb2's helper methods of the well-known types, as mixins of their struct classes.

Strategy: pb2 gives some well-known message types methods of their own
(``Timestamp.FromDatetime``, ``Any.Pack``, ``Struct.update``...). Each is
a mixin here, with no slots, named by the full name of its message type;
:mod:`codec.schema` puts it before :class:`codec.Message` among the bases
of that type's struct class, whatever pool the descriptor comes from.
"""

from __future__ import annotations

from typing import Any

__all__ = ["bases_of"]

_MIXINS: dict[str, type] = {}


def bases_of(full_name: str) -> tuple[type, ...]:
    """The mixins of the struct class of message type ``full_name`` (usually none)."""
    mixin: Any = _MIXINS.get(full_name)
    return () if mixin is None else (mixin,)
