"""Tests of the build switch: which core ``import codec`` loads.

Checks that ``codec.COMPILED`` follows ``CODEC_PURE_PYTHON`` (set and not
``"0"`` means the uncompiled source), that the loaded ``codec._varint`` is the
``.py`` file exactly in the pure build, and, in child processes, that the pure
build imports and decodes without Cython installed and that each value of the
variable selects the expected build.
"""

from __future__ import annotations

import importlib.machinery
import os
import subprocess
import sys
from pathlib import Path

import pytest

import codec

REPO_ROOT = Path(codec.__file__).resolve().parent.parent
PURE_REQUESTED = os.environ.get("CODEC_PURE_PYTHON", "") not in ("", "0")
EXTENSION_BUILT = any(
    (REPO_ROOT / "codec" / f"_varint{suffix}").exists()
    for suffix in importlib.machinery.EXTENSION_SUFFIXES
)


def run_python(code: str, pure: str | None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that imports codec from this checkout."""
    env = dict(os.environ)
    env.pop("CODEC_PURE_PYTHON", None)
    if pure is not None:
        env["CODEC_PURE_PYTHON"] = pure
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_compiled_flag_follows_environment() -> None:
    assert codec.COMPILED is (not PURE_REQUESTED)


def test_loaded_varint_module_matches_build() -> None:
    path = codec._varint.__file__
    assert path is not None
    assert path.endswith(".py") is PURE_REQUESTED
    if not PURE_REQUESTED:
        assert any(path.endswith(suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES)


BLOCK_CYTHON = {
    "sys-modules-none": "import sys\nsys.modules['cython'] = None\n",
    "meta-path-blocker": (
        "import sys\n"
        "class Blocker:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] in ('cython', 'Cython'):\n"
        "            raise ModuleNotFoundError(f'blocked: {name}', name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Blocker())\n"
    ),
}


@pytest.mark.parametrize("blocker", list(BLOCK_CYTHON), ids=list(BLOCK_CYTHON))
def test_pure_build_imports_without_cython(blocker: str) -> None:
    code = BLOCK_CYTHON[blocker] + (
        "import codec\n"
        "from codec import varint\n"
        "assert not codec.COMPILED\n"
        "assert codec._varint.__file__.endswith('.py')\n"
        "assert codec._varint.cython.__name__ == 'codec._cython_shim'\n"
        "print(varint.decode(b'\\x05\\x96\\x01', 1))\n"
    )
    result = run_python(code, "1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(150, 3)"


@pytest.mark.parametrize(
    ("value", "pure"),
    [
        pytest.param(None, False, id="unset"),
        pytest.param("", False, id="empty"),
        pytest.param("0", False, id="zero"),
        pytest.param("1", True, id="one"),
        pytest.param("yes", True, id="yes"),
    ],
)
def test_environment_variable_selects_build(value: str | None, pure: bool) -> None:
    if not pure and not EXTENSION_BUILT:
        pytest.skip("the compiled extension is not built")
    result = run_python("import codec\nprint(codec.COMPILED, codec._varint.__file__)", value)
    assert result.returncode == 0, result.stderr
    compiled, path = result.stdout.split()
    assert compiled == str(not pure)
    assert path.endswith(".py") is pure
