"""Entry point shared by the fuzz targets added with the hardening work (never imported by tests).

:func:`run` is ``_atheris_support.instrument`` (the target script and the
uncompiled core modules it lists) plus the two core modules that list leaves
out, ``codec.wire`` and ``codec._struct``, when they are loaded from source
(``CODEC_PURE_PYTHON=1``), and the modules a target names (Python in
both builds, e.g. ``codec.profiler.packets``) unless atheris' import hook
instrumented them already; then it hands ``check`` to libFuzzer.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType

try:
    from fuzz import _atheris_support
except ImportError:  # run as ``python fuzz/<target>.py``: fuzz/ is sys.path[0]
    import _atheris_support  # type: ignore[no-redef]

EXTRA_MODULES = ("codec.wire", "codec._struct")


def run(atheris: ModuleType, check: Callable[[bytes], None], modules: tuple[str, ...] = ()) -> None:
    _atheris_support.instrument(atheris)
    done = []
    for name in (*EXTRA_MODULES, *modules):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None) or ""
        loader = type(getattr(getattr(module, "__spec__", None), "loader", None)).__name__
        if module is None or not path.endswith(".py") or "Atheris" in loader:
            continue
        done.append(f"{name} ({_atheris_support._instrument_module(atheris, module)} functions)")
    if done:
        sys.stderr.write(f"INFO: also instrumented {', '.join(done)}\n")
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()
