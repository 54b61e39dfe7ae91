"""The child process of ``uninitialised.py``: calls on objects whose ``__init__`` never ran.

Usage: ``python fuzz/figures/_uninitialised_probe.py CASES_JSON``

``CASES_JSON`` is a list of ``[label, class name, call]``: for each, an
object ``o`` is made with ``cls.__new__(cls)`` (none for an empty class
name), then ``call`` runs with ``codec``, ``numpy``, ``o`` and the benchmark
records (as ``_peerbench``, the name the calls of ``tests/test_hostile.py``
use). Prints one JSON line as it starts (the build), one before each call
and one with each call's outcome, flushed, so that a crash leaves the name of
the call that crashed as the last line started.
"""

from __future__ import annotations

import json
import sys

import _common  # noqa: F401  (the repository root on sys.path, for peerbench)
import numpy

import codec
import codec.profiler
import peerbench

MODULES = (codec, codec.wire, codec.framing, codec.profiler, codec._buffer)


def main(cases: str) -> None:
    print(json.dumps(["compiled", codec.COMPILED]), flush=True)
    for label, cls_name, call in json.loads(cases):
        print(json.dumps(["call", label]), flush=True)
        o = None
        if cls_name:
            cls = next(
                found
                for module in MODULES
                for found in [getattr(module, cls_name, None)]
                if isinstance(found, type)
            )
            o = cls.__new__(cls)
        try:
            exec(call, {"codec": codec, "numpy": numpy, "_peerbench": peerbench, "o": o})
        except StopIteration:
            outcome = ["ok", ""]
        except BaseException as exc:
            outcome = [type(exc).__name__, str(exc)]
        else:
            outcome = ["ok", ""]
        print(json.dumps(["done", label, *outcome]), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
