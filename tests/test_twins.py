"""The rules written twice, as C in a ``.pxd`` and as Python, give the same results.

The compiled build's table of results (``tests/helpers/twins.py``) is
compared, line by line, with the uncompiled build's, made by a child process
with ``CODEC_PURE_PYTHON=1``: a twin that drifts from its C body (a range, a
rounding, an error text) fails here, in the compiled run of the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import twins

import codec

TESTS = Path(__file__).resolve().parent

pytestmark = pytest.mark.skipif(
    not codec.COMPILED, reason="compares the compiled build with the uncompiled one"
)


def test_the_compiled_and_uncompiled_builds_give_the_same_table() -> None:
    env = {**os.environ, "CODEC_PURE_PYTHON": "1"}
    child = subprocess.run(
        [sys.executable, "-m", "helpers.twins"],
        cwd=TESTS,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    uncompiled = json.loads(child.stdout)
    assert uncompiled["compiled"] is False
    compiled = twins.table()
    assert len(compiled) > 600
    differing = [
        (mine, theirs)
        for mine, theirs in zip(compiled, uncompiled["table"], strict=True)
        if mine != theirs
    ]
    assert differing == []


def test_the_table_sees_the_rules_it_pins() -> None:
    """Each rule's edge shows in the table: a refused int32, a rounded float32, bad UTF-8."""
    table = "\n".join(twins.table())
    assert "WireWriter.int32(2147483648) = EncodeError" in table or "ValueError" in table
    assert "zigzag_encode32(-1) = 1" in table
    assert "Scalars(string='\\ud800') = EncodeError" in table
