"""The entry point of every fuzz target under atheris (never imported by tests).

:func:`run` adds the coverage instrumentation that
``atheris.instrument_imports()`` cannot add, then hands ``check`` to libFuzzer:

* the target script itself (``__main__``): its property checks branch on the
  outcome classes, which is the only Python-level feedback the compiled build
  gives;
* the core modules when loaded from source (``CODEC_PURE_PYTHON=1``):
  ``import codec`` installs codec's own import finder in front of atheris'
  import hook, so the ``.py`` core arrives uninstrumented;
* the modules a target names (Python in both builds, e.g.
  ``codec.profiler.packets``) unless atheris' import hook instrumented them.

The compiled extension modules have no bytecode to instrument; their edge
coverage needs a clang build with ``-fsanitize=fuzzer-no-link``
(``fuzz/sanitizers.sh``).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from types import ModuleType

CORE_MODULES = (
    "codec._varint",
    "codec._buffer",
    "codec.framing",
    "codec.wire",
    "codec.structs._struct",
)


def _instrument_module(atheris: ModuleType, module: ModuleType) -> int:
    """Instrument the functions, methods and properties defined in ``module``."""
    count = 0
    for obj in list(vars(module).values()):
        members = list(vars(obj).values()) if inspect.isclass(obj) else [obj]
        for member in members:
            func = member.fget if isinstance(member, property) else member
            if inspect.isfunction(func) and func.__module__ == module.__name__:
                atheris.instrument_func(func)
                count += 1
    return count


def run(atheris: ModuleType, check: Callable[[bytes], None], modules: tuple[str, ...] = ()) -> None:
    """Instrument what atheris' import hook left out, then fuzz ``check``."""
    done = [f"__main__ ({_instrument_module(atheris, sys.modules['__main__'])} functions)"]
    for name in (*CORE_MODULES, *modules):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None) or ""
        loader = type(getattr(getattr(module, "__spec__", None), "loader", None)).__name__
        if module is None or not path.endswith(".py") or "Atheris" in loader:
            continue  # not loaded, compiled, or instrumented already
        done.append(f"{name} ({_instrument_module(atheris, module)} functions)")
    sys.stderr.write(f"INFO: instrumented {', '.join(done)}\n")
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()
