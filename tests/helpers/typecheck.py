"""mypy on programs a user would write: ``mypy --strict`` in a directory of their own.

codec is found in this checkout (its own errors are its own checks' business,
so mypy follows it silently); other packages come from ``paths``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path

import codec

ROOT = Path(codec.__file__).resolve().parent.parent


def program_dir(where: Path, programs: dict[str, str], paths: Iterable[Path] = ()) -> Path:
    """Write ``programs`` (file name: source) and a strict ``mypy.ini`` into ``where``."""
    search = os.pathsep.join(map(str, (ROOT, *paths)))
    (where / "mypy.ini").write_text(
        textwrap.dedent(
            f"""\
            [mypy]
            strict = True
            explicit_package_bases = True
            cache_dir = {where / ".mypy_cache"}
            mypy_path = {search}

            [mypy-codec,codec.*]
            follow_imports = silent
            """
        )
    )
    for name, source in programs.items():
        (where / name).write_text(source)
    return where


def mypy(where: Path, *files: str) -> subprocess.CompletedProcess[str]:
    """mypy run on ``files`` of a :func:`program_dir`."""
    command = [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", *files]
    return subprocess.run(command, cwd=where, capture_output=True, text=True, timeout=300)


def errors(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The errors of a failed :func:`mypy` run, without their codes: ``bad.py:4: error: ...``."""
    assert done.returncode == 1, done.stdout + done.stderr
    return [line.split("  [")[0] for line in done.stdout.splitlines() if ": error: " in line]
