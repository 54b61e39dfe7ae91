"""Modules written by ``python -m codec generate`` and imported as a program would import them."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from codec.cli import main


@contextmanager
def generated_on_path(where: Path, data: bytes, package: str, *options: str) -> Iterator[Path]:
    """The modules ``generate`` writes for the descriptor set ``data``, on ``sys.path`` meanwhile.

    ``data`` is written to ``where/schema.pb`` and the modules into ``where/out``
    (``options``, such as ``--grpc``, go to ``generate`` too). After the block
    ``where/out`` leaves ``sys.path`` and the imported modules of the top-level
    ``package`` leave ``sys.modules``; their classes stay in the shared pool, as
    they would in a program.
    """
    (where / "schema.pb").write_bytes(data)
    out = where / "out"
    assert main(["generate", *options, "-d", str(where / "schema.pb"), "-o", str(out)]) == 0
    sys.path.insert(0, str(out))
    try:
        yield out
    finally:
        sys.path.remove(str(out))
        for name in [name for name in sys.modules if name.split(".")[0] == package]:
            del sys.modules[name]
