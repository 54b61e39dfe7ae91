"""N1, objects whose ``__init__`` never ran: each probe call, crashed, refused clearly, or done.

Usage: ``python fuzz/figures/uninitialised.py``

Every public method and property of the classes of the compiled modules that
the public API hands out (and of the compiled bases their methods come from)
is called on an object made with ``cls.__new__(cls)``, plus the calls that
reach such an object through another class; each call in a child process of
its own, so that a crash is counted, not fatal.
Prints how many calls crashed, raised a clear error (``RuntimeError`` saying
the object is not initialised or not open, ``TypeError``, ``ValueError``,
``EncodeError``), raised something unclear, or worked.

The calls, and the child process that makes them, are those of
``tests/test_hostile.py``, from ``tests/helpers/uninitialised.py``
(``UNINITIALISED_CALLS``, one plausible call per method name, and
``UNINITIALISED_VIA``): the figure probes what the test probes.
"""

from __future__ import annotations

import json
from collections import Counter

import _common

from tests.helpers.uninitialised import acceptable, probe, uninitialised_cases


def main() -> None:
    _common.arguments(__doc__)
    cases = uninitialised_cases()
    outcomes: Counter[str] = Counter()
    crashed = []
    for case in cases:
        run = probe([case])
        if run.returncode:
            crashed.append(case[0])
            outcomes[f"crash (exit {run.returncode})"] += 1
            continue
        done = [json.loads(line) for line in run.stdout.splitlines()][-1]
        outcomes[done[2] if acceptable(done[2], done[3]) else f"unclear {done[2]}"] += 1
    classes = len({name for _, name, _ in cases if name})
    print(f"\n## objects whose __init__ never ran: {len(cases)} calls, {classes} classes")
    for outcome, count in sorted(outcomes.items()):
        print(f"  {outcome:<28} {count:>4}")
    if crashed:
        print("  crashed:", ", ".join(crashed))


if __name__ == "__main__":
    main()
