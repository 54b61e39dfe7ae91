"""N1, objects whose ``__init__`` never ran: each probe call, crashed, refused clearly, or done.

Usage: ``python fuzz/figures/uninitialised.py``

Every public method and property of the classes of the compiled modules that
the public API hands out (and of the compiled bases their methods come from)
is called on an object made with ``cls.__new__(cls)``, plus the calls that
reach such an object through another class; each call in a process of its
own (``_uninitialised_probe.py``), so that a crash is counted, not fatal.
Prints how many calls crashed, raised a clear error (``RuntimeError`` saying
the object is not initialised or not open, ``TypeError``, ``ValueError``,
``EncodeError``), raised something unclear, or worked.

The calls are those of ``tests/test_hostile.py`` (``UNINITIALISED_CALLS``,
one plausible call per method name, and ``UNINITIALISED_VIA``), read from its
source: the figure probes what the test probes, and a test module cannot be
imported from here (it needs ``tests/`` on ``sys.path``).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import _common

import codec
import codec.profiler

HOSTILE = _common.ROOT / "tests" / "test_hostile.py"
PROBE = Path(__file__).resolve().with_name("_uninitialised_probe.py")


def test_table(name: str) -> dict[str, str]:
    """The literal table ``name: dict[str, str] = {...}`` of ``tests/test_hostile.py``."""
    for node in ast.parse(HOSTILE.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == name and node.value:
            table = ast.literal_eval(node.value)
            assert isinstance(table, dict), name
            return table
    raise LookupError(f"no table {name} in {HOSTILE}")


def compiled_public_classes() -> dict[str, type]:
    """The classes of the compiled modules that the public API hands out, by name."""
    found: dict[str, type] = {}
    for module in (codec, codec.wire, codec.framing, codec.profiler):
        for name in getattr(module, "__all__", ()):
            cls = getattr(module, name)
            if isinstance(cls, type) and cls.__module__ in codec._pure.COMPILED_MODULES:
                for base in cls.__mro__[:-1]:  # and the compiled bases their methods come from
                    if base.__module__ in codec._pure.COMPILED_MODULES:
                        found[base.__name__] = base
    found["Delimited"] = type(codec.wire.WireWriter().message(1))  # made by message() and frame()
    return found


def public_names(cls: type, calls: dict[str, str]) -> list[str]:
    """The names a class's compiled code defines: public ones, and those with a probe call."""
    return sorted(
        {
            name
            for klass in cls.__mro__[:-1]
            if klass.__module__ in codec._pure.COMPILED_MODULES  # not list's or dict's own
            for name in vars(klass)
            if not name.startswith("_") or name in calls
        }
    )


def clear(kind: str, message: str) -> bool:
    """Whether an outcome works, or says clearly what is wrong."""
    if kind == "RuntimeError":
        return "not initialised" in message or "is not open" in message
    return kind in ("ok", "TypeError", "ValueError", "EncodeError")


def main() -> None:
    _common.arguments(__doc__)
    calls = test_table("UNINITIALISED_CALLS")
    cases = [
        (f"{name}.{method}", name, calls[method])
        for name, cls in compiled_public_classes().items()
        for method in public_names(cls, calls)
    ]
    cases += [(label, "", call) for label, call in test_table("UNINITIALISED_VIA").items()]
    env = dict(os.environ, PYTHONPATH=str(Path(codec.__file__).resolve().parent.parent))
    outcomes: Counter[str] = Counter()
    crashed = []
    for case in cases:
        run = subprocess.run(
            [sys.executable, str(PROBE), json.dumps([case])],
            capture_output=True,
            text=True,
            env=env,
        )
        if run.returncode:
            crashed.append(case[0])
            outcomes[f"crash (exit {run.returncode})"] += 1
            continue
        done = [json.loads(line) for line in run.stdout.splitlines()][-1]
        outcomes[done[2] if clear(done[2], done[3]) else f"unclear {done[2]}"] += 1
    classes = len({name for _, name, _ in cases if name})
    print(f"\n## objects whose __init__ never ran: {len(cases)} calls, {classes} classes")
    for outcome, count in sorted(outcomes.items()):
        print(f"  {outcome:<28} {count:>4}")
    if crashed:
        print("  crashed:", ", ".join(crashed))


if __name__ == "__main__":
    main()
