"""Message types shared by the struct fuzz targets (google.protobuf classes and their structs).

The schemas are the test suite's: ``tests/schemas/everything.proto`` (every proto3
field shape, recursion, maps, oneofs), ``tests/schemas/legacy.proto`` (proto2:
closed enums, required fields, groups), ``google/protobuf/descriptor.proto`` (a
large real-world schema) and the benchmark records of ``peerbench.py``.
``tests/schemas`` compiles the ``.proto`` files in-process with grpcio-tools
(a test extra), so no protoc binary or generated file is needed.

Both are found through the repository root, which this module appends to
``sys.path`` (a target run as ``python fuzz/<target>.py`` has only ``fuzz/``
there): ``peerbench`` and ``tests.schemas``, never ``tests/`` itself. Appended,
so the codec under test (an install, the sanitized build on ``PYTHONPATH``) is
still the one found first.

:data:`CLASSES` lists every message class (map entries left out) by full name,
sorted, so that a fuzz input can pick one by index and the choice is stable
across runs; :data:`ROOTS` is the short list whose random instances reach every
other type.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

import peerbench  # noqa: E402
from tests import schemas  # noqa: E402

_ALL: dict[str, Any] = {
    **schemas.all_classes(),
    **{f"peerbench.{name}": getattr(peerbench, name) for name in ("Sample", "Frame", "Blob")},
}

#: Every message class by full name, in a stable order.
CLASSES: list[tuple[str, Any]] = sorted(_ALL.items())

#: Types whose instances reach every other type of their schema (in this order).
ROOTS: list[str] = [
    "everything.AllTypes",
    "everything.Tree",
    "legacy.Record",
    "legacy.WithGroups",
    "legacy.Link",
    "google.protobuf.FileDescriptorSet",
    "peerbench.Frame",
    "peerbench.Sample",
]


def by_name(name: str) -> Any:
    """The google.protobuf class of a full name."""
    return _ALL[name]
