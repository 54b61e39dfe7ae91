"""Choose the build: the compiled core, or the uncompiled source of the same modules.

The modules in ``COMPILED_MODULES`` exist twice once built: as an extension
module and as the ``.py`` it was compiled from. A finder placed first on
``sys.meta_path`` loads every one of them from the build chosen at the first
import of codec, never a mix of the two (uncompiled, a module calls helpers
that are C functions in the compiled ones):

* ``CODEC_PURE_PYTHON=1`` in the environment: the source, quietly, so one
  installation can run the whole test suite in both builds.
* Otherwise the extensions, if every one is there and was compiled from the
  ``.py`` and ``.pxd`` now beside it: the build records their SHA-256 in a
  file next to each extension (``setup.py``), and the files must still hash
  to it, so an editable install never runs a module compiled from an older
  source. The core modules are then imported at once, so an extension that
  does not load is known before any of them is used.
* Failing that, the source, with a :class:`PurePythonWarning` that names the
  cause and what it costs; ``CODEC_REQUIRE_COMPILED=1`` makes it an
  ``ImportError`` instead.

:func:`fields_as_allocated` gives an uncompiled class the start a compiled
object has before its ``__init__`` runs, so an object made with
``cls.__new__(cls)`` meets the same checks in both builds.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

COMPILED_MODULES = (
    "codec._varint",
    "codec._wire",
    "codec._buffer",
    "codec._columns",
    "codec.wire",
    "codec.structs._plan",
    "codec.structs._struct",
    "codec.structs._encode",
    "codec.structs._decode",
    "codec.structs._dispatch",
    "codec.framing",
    "codec.profiler._recorder",
    "codec.arrow._builders",
    "codec.arrow._writers",
)

# Imported as soon as the build is chosen; the profiler's recorder and the Arrow
# builders are loaded with their packages, on first use.
CORE_MODULES = tuple(
    name for name in COMPILED_MODULES if not name.startswith(("codec.profiler.", "codec.arrow."))
)

# Next to an extension module, the file holding the SHA-256 of its sources.
RECORD_SUFFIX = ".source-sha256"

_PACKAGE = Path(__file__).resolve().parent


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


PURE_REQUESTED = _flag("CODEC_PURE_PYTHON")
REQUIRE_COMPILED = _flag("CODEC_REQUIRE_COMPILED")


class PurePythonWarning(RuntimeWarning):
    """codec runs its uncompiled source, though ``CODEC_PURE_PYTHON`` did not ask for it."""


def source_path(name: str) -> Path:
    """The ``.py`` of a compiled module: codec.profiler._recorder -> profiler/_recorder.py."""
    return _PACKAGE.joinpath(*name.split(".")[1:]).with_suffix(".py")


def source_digest(name: str) -> str:
    """The SHA-256 of the ``.py`` and the ``.pxd`` a compiled module is built from."""
    digest = hashlib.sha256()
    for suffix in (".py", ".pxd"):
        digest.update(source_path(name).with_suffix(suffix).read_bytes())
    return digest.hexdigest()


def record_path(extension: Path) -> Path:
    """Where the build records the :func:`source_digest` of ``extension``."""
    return extension.with_name(extension.name + RECORD_SUFFIX)


def _extension(name: str) -> Path:
    """The extension module of ``name``, checked to be compiled from its current source.

    Raises ``ImportError`` saying why there is none to load.
    """
    source = source_path(name)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        extension = source.with_name(source.stem + suffix)
        if extension.exists():
            break
    else:
        expected = source.stem + importlib.machinery.EXTENSION_SUFFIXES[0]
        raise ImportError(f"{name} is not compiled: no {expected} beside {source.name}", name=name)
    try:
        recorded = record_path(extension).read_text().strip()
    except OSError:
        raise ImportError(
            f"{extension.name} has no record of the source it was compiled from"
            f" ({record_path(extension).name}), so it may be older than {source.name}",
            name=name,
        ) from None
    if recorded != source_digest(name):
        raise ImportError(
            f"{extension.name} was compiled from an older {source.name} or"
            f" {source.with_suffix('.pxd').name}: they changed since the build",
            name=name,
        )
    return extension


class _BuildFinder(importlib.abc.MetaPathFinder):
    """Finds each compiled module in the file of the chosen build."""

    def __init__(self, files: Mapping[str, Path]) -> None:
        self.files = files

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        file = self.files.get(fullname)
        return None if file is None else importlib.util.spec_from_file_location(fullname, file)


def _use(files: Mapping[str, Path]) -> None:
    """Load the compiled modules from ``files`` from now on, forgetting any loaded."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _BuildFinder)]
    for name in COMPILED_MODULES:
        sys.modules.pop(name, None)
    sys.meta_path.insert(0, _BuildFinder(files))


def install() -> None:
    """Choose the build at the first import of codec, as the module docstring says."""
    if any(isinstance(finder, _BuildFinder) for finder in sys.meta_path):
        return  # chosen already (codec was reloaded)
    sources = {name: source_path(name) for name in COMPILED_MODULES}
    if PURE_REQUESTED:
        _use(sources)
        return
    try:
        _use({name: _extension(name) for name in COMPILED_MODULES})
        for name in CORE_MODULES:
            importlib.import_module(name)
        return
    except ImportError as exc:
        cause = f"{type(exc).__name__}: {exc}"
        _use(sources)
        if REQUIRE_COMPILED:
            raise ImportError(
                f"codec: CODEC_REQUIRE_COMPILED=1, but the compiled core cannot be loaded: {cause}"
            ) from exc
    # stacklevel: past codec/__init__.py (and the import system) to the first import of codec.
    warnings.warn(
        PurePythonWarning(
            "codec runs its uncompiled source, about 50x slower than the compiled core"
            " (structs, frame splitting; 5x with google.protobuf messages), because"
            f" {cause}. Rebuild it (pip install -e . or python setup.py build_ext"
            " --inplace, with CODEC_REQUIRE_COMPILED=1 to see why a build fails), or set"
            " CODEC_PURE_PYTHON=1 to choose the uncompiled source."
        ),
        stacklevel=3,
    )


def fields_as_allocated(cls: type, **fields: object) -> None:
    """Uncompiled: start the fields of ``cls`` as Cython starts a compiled object's.

    Compiled, an object made with ``cls.__new__(cls)``, whose ``__init__``
    never ran, has every C field 0 and every object field ``None``. As class
    attributes, the same values stand in until ``__init__`` sets the
    object's own, so such an object meets the same checks in both builds.
    """
    for name, value in fields.items():
        setattr(cls, name, value)
