"""What the figure scripts of ``fuzz/figures/`` share.

Each script measures one figure (or one family of figures) quoted in
SECURITY.md and prints it with what it measured; run it from anywhere with
``python fuzz/figures/<figure>.py``. Importing this module first puts the
repository root on ``sys.path``, appended, so that ``fuzz.*``, ``peerbench``
and ``tests.schemas`` import while the codec under test (an install,
``PYTHONPATH``) is still the one found first; ``tests/`` itself is never put
there. Then: the corpora of a fuzz target (``fuzz/corpus/<target>`` and the
directories given with ``--corpus``), one traced run of a code path
(tracemalloc), a field tag, and the command line with its header line.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

import codec  # noqa: E402

CORPUS = ROOT / "fuzz" / "corpus"
KiB = 1024
MiB = 1024 * KiB


def corpus_files(target: str, extra: list[Path]) -> list[Path]:
    """The files of ``fuzz/corpus/<target>`` and of the extra directories meant for it.

    An extra directory counts when it has a ``<target>`` subdirectory (a parent
    of several corpora) or when its own name contains the target's name. One
    file per distinct content, in the order found.
    """
    directories = [CORPUS / target]
    for directory in extra:
        if (directory / target).is_dir():
            directories.append(directory / target)
        elif target in directory.name:
            directories.append(directory)
    seen: dict[bytes, Path] = {}
    for directory in directories:
        if directory.is_dir():
            for path in sorted(directory.iterdir()):
                if path.is_file():
                    seen.setdefault(path.read_bytes(), path)
    return list(seen.values())


def inputs(target: str, extra: list[Path]) -> list[bytes]:
    """The contents of :func:`corpus_files`."""
    return [path.read_bytes() for path in corpus_files(target, extra)]


def traced(action: Callable[[], object]) -> tuple[int, int, Any]:
    """``(net, peak, result)`` of one run of ``action`` under tracemalloc, after a warm-up run.

    ``net`` is what the run left allocated (what its result keeps), ``peak``
    the highest point reached, both counted from the start of the run.
    """
    action()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = action()
        net, peak = tracemalloc.get_traced_memory()
        return net - before, peak - before, result
    finally:
        tracemalloc.stop()


def tag(number: int, wire: int) -> bytes:
    """The key of field ``number`` with wire type ``wire``, as a varint."""
    return codec.varint.encode(number << 3 | wire)


def arguments(
    doc: str | None, *, corpus: bool = False, inputs: int | None = None
) -> argparse.Namespace:
    """Parse the command line of a figure script, then print the header line.

    ``corpus`` adds ``--corpus DIR`` (repeatable: corpora grown by long fuzzing
    sessions); ``inputs`` adds ``--inputs N`` with that default.
    """
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    if corpus:
        parser.add_argument(
            "--corpus",
            action="append",
            type=Path,
            default=[],
            metavar="DIR",
            help="more corpus directories: a parent of <target>/ directories, or one named "
            "after the target",
        )
    if inputs is not None:
        parser.add_argument("--inputs", type=int, default=inputs, metavar="N")
    args = parser.parse_args()
    build = "compiled" if codec.COMPILED else "pure Python"
    print(f"# codec {codec.__version__}, {build} build, Python {sys.version.split()[0]}")
    return args
