"""The home of struct and enum classes made at run time whose file has no generated module.

``codec.struct(span_pb2.Span)`` and ``codec.load_structs(...)`` make
classes whose ``__module__`` is this module and whose ``__qualname__`` is
the type's full name, so the dotted path ``codec.structs.`` + full name
finds the class again (``codec.structs.opentelemetry.proto.trace.v1.Span``),
for ``pickle`` of a class, ``pydoc`` and ``inspect``. Nothing is made by
looking: a name is found once its class has been made in this process
(the default descriptor pool's first, when several pools have one).
A file with a generated module (``python -m codec generate``) has its
classes there instead.
"""

from __future__ import annotations

from typing import Any

from codec.structs._schema import made_class

__all__: list[str] = []


class _Package:
    """The classes under a package prefix of full names: ``codec.structs.opentelemetry``."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        return _found(f"{self._prefix}.{name}")

    def __repr__(self) -> str:
        return f"<package {self._prefix} of codec.structs>"


def _found(full_name: str) -> Any:
    found = made_class(full_name)
    if found is not None:
        return found
    if made_class(full_name, prefix=True) is not None:
        return _Package(full_name)
    raise AttributeError(f"no struct or enum class of {full_name!r} has been made")


def __getattr__(name: str) -> Any:
    if name.startswith("__"):  # module protocol lookups (__path__, __file__...)
        raise AttributeError(name)
    return _found(name)
