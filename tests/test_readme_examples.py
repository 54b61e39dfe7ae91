"""The ``dump`` and ``encode`` examples of the command-line page, run as written on ``examples/``.

Each ``console`` block of ``docs/cli.md`` whose commands read ``schema.pb`` is
parsed into commands (``$ ...``) and the lines they print, then run with bash
in a copy of ``examples/`` after the page's own ``grpc_tools.protoc`` line
made ``schema.pb``. A page that drifts from what the commands print, or an
example file that drifts from the page, fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("grpc_tools", reason="the examples' schema is compiled with grpcio-tools")

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "cli.md").read_text()
PROTOC = (
    "python -m grpc_tools.protoc --include_imports --descriptor_set_out=schema.pb"
    " -I. peerbench.proto"
)
ENCODE = "python -m codec encode -d schema.pb -t peerbench.Sample samples.jsonl > samples.bin"
# The examples run outside the checkout: the package is found as the tests found it.
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _console_blocks() -> list[list[tuple[str, list[str]]]]:
    """Each console block reading schema.pb, as (command, the lines it prints) pairs."""
    blocks = []
    for body in re.findall(r"```console\n(.*?)```", PAGE, re.DOTALL):
        if "schema.pb" not in body:
            continue
        steps: list[tuple[str, list[str]]] = []
        for line in body.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        blocks.append(steps)
    return blocks


BLOCKS = _console_blocks()


def _run(command: str, cwd: Path) -> list[str]:
    shell = command.replace("python -m", f"{sys.executable} -m")
    done = subprocess.run(
        ["bash", "-c", f"{{ {shell}; }} 2>&1"],  # what the command prints, stderr too
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout.splitlines()


def test_the_page_shows_the_dump_and_encode_examples() -> None:
    assert len(BLOCKS) == 2
    assert f"# or: {PROTOC}" in PAGE


@pytest.mark.parametrize("block", range(len(BLOCKS)))
def test_an_example_prints_what_the_page_says(tmp_path: Path, block: int) -> None:
    for name in ("peerbench.proto", "samples.jsonl"):
        shutil.copy(ROOT / "examples" / name, tmp_path)
    assert _run(PROTOC, tmp_path) == []
    assert _run(ENCODE, tmp_path) == []  # the page's first example makes samples.bin
    for command, expected in BLOCKS[block]:
        assert _run(command, tmp_path) == expected, command
