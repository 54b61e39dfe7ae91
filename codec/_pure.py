"""Switch between the compiled core and its uncompiled source.

The modules in ``COMPILED_MODULES`` exist twice once built: as an extension
module and as the ``.py`` it was compiled from. Python's importer prefers the
extension. With ``CODEC_PURE_PYTHON=1`` in the environment at import time, a
finder placed first on ``sys.meta_path`` loads the ``.py`` source instead, so
one installation can run the whole test suite in both builds.

:func:`fields_as_allocated` gives an uncompiled class the start a compiled
object has before its ``__init__`` runs, so an object made with
``cls.__new__(cls)`` meets the same checks in both builds.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

COMPILED_MODULES = (
    "codec._varint",
    "codec._wire",
    "codec._buffer",
    "codec.wire",
    "codec._struct",
    "codec._encode",
    "codec._decode",
    "codec.framing",
    "codec.profiler._recorder",
)

PURE_REQUESTED = os.environ.get("CODEC_PURE_PYTHON", "") not in ("", "0")


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Finds the ``.py`` source of the compiled modules, ignoring their extensions."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in COMPILED_MODULES:
            return None
        # codec.wire -> <package dir>/wire.py, codec.profiler._recorder -> profiler/_recorder.py
        source = Path(__file__).parent.joinpath(*fullname.split(".")[1:]).with_suffix(".py")
        return importlib.util.spec_from_file_location(fullname, source)


def install() -> None:
    """Make later imports of the compiled modules load their source, if requested."""
    if PURE_REQUESTED and not any(isinstance(f, _SourceFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceFinder())


def fields_as_allocated(cls: type, **fields: object) -> None:
    """Uncompiled: start the fields of ``cls`` as Cython starts a compiled object's.

    Compiled, an object made with ``cls.__new__(cls)``, whose ``__init__``
    never ran, has every C field 0 and every object field ``None``. As class
    attributes, the same values stand in until ``__init__`` sets the
    object's own, so such an object meets the same checks in both builds.
    """
    for name, value in fields.items():
        setattr(cls, name, value)
