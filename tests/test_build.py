"""Tests of the build switch: which core ``import codec`` loads, and what it says.

Checks that ``codec.COMPILED`` follows ``CODEC_PURE_PYTHON`` (set and not
``"0"`` means the uncompiled source), that the loaded ``codec._varint`` is the
``.py`` file exactly in the pure build, and, in child processes, that the pure
build imports and decodes without Cython installed and that each value of the
variable selects the expected build, without a warning.

The fallback, in child processes importing a copy of the package made in a
temporary directory: with no extension modules, with extensions that have no
record of their sources or a record of other sources (stale), and with
extensions that fail to load (a file that is no shared library, under a true
record), ``import codec`` runs the uncompiled source, every module of it, and
warns once, at the line of the import, with a ``PurePythonWarning`` (a
``RuntimeWarning``) naming the cause and the cost;
``CODEC_REQUIRE_COMPILED=1`` makes that an ``ImportError`` and
``CODEC_PURE_PYTHON=1`` silences it. Where the core is built: the records
``setup.py`` wrote match the sources, a copy of the build loads compiled
and quietly, a copy whose ``.py`` or ``.pxd`` was edited since falls back,
and so does one whose ``framing`` extension fails to load after the modules
before it loaded compiled (no mix of the two builds is left).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import json
import os
import runpy
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

import codec
from codec._pure import COMPILED_MODULES, RECORD_SUFFIX, record_path, source_digest, source_path

REPO_ROOT = Path(codec.__file__).resolve().parent.parent
PURE_REQUESTED = os.environ.get("CODEC_PURE_PYTHON", "") not in ("", "0")
EXTENSION_BUILT = any(
    (REPO_ROOT / "codec" / f"_varint{suffix}").exists()
    for suffix in importlib.machinery.EXTENSION_SUFFIXES
)


def run_child(
    code: str, env: dict[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with ``env`` in ``cwd``; its output as text."""
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_python(code: str, pure: str | None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that imports codec from this checkout."""
    env = dict(os.environ)
    env.pop("CODEC_PURE_PYTHON", None)
    if pure is not None:
        env["CODEC_PURE_PYTHON"] = pure
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return run_child(code, env, REPO_ROOT, timeout=60)


def test_the_compiled_modules_are_listed_once() -> None:
    """``COMPILED_MODULES`` is the one list: the modules with a ``.pxd`` beside them, the lint
    exceptions for their C names, and what ``codec.COMPILED`` covers all follow it."""
    package = REPO_ROOT / "codec"
    with_pxd = {
        ".".join(("codec", *path.relative_to(package).with_suffix("").parts))
        for path in package.rglob("*.pxd")
    }
    assert with_pxd == set(COMPILED_MODULES)
    lint = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    c_names = {path for path, codes in lint["per-file-ignores"].items() if "F821" in codes}
    assert c_names == {name.replace(".", "/") + ".py" for name in COMPILED_MODULES}
    core = codec._pure.CORE_MODULES  # loaded with codec; the others with their packages
    later = ("codec.profiler.", "codec.arrow.")
    assert set(core) == {name for name in COMPILED_MODULES if not name.startswith(later)}
    assert [sys.modules[name].COMPILED for name in core] == [codec.COMPILED] * len(core)
    for name in set(COMPILED_MODULES) - set(core):
        assert importlib.import_module(name).COMPILED is codec.COMPILED, name


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
    assert "PurePythonWarning" not in result.stderr
    compiled, path = result.stdout.split()
    assert compiled == str(not pure)
    assert path.endswith(".py") is pure


# --- the fallback and its warning ------------------------------------------------------

EXTENSION_PATTERNS = [f"*{suffix}" for suffix in importlib.machinery.EXTENSION_SUFFIXES]
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]

# Imports codec and reports, as JSON, the build it loaded and the warnings it gave.
REPORT = """
import json, sys, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import codec
decoder = codec.FrameDecoder()
decoder.feed(b"\\x02hi")
ours = [w for w in caught if issubclass(w.category, codec.PurePythonWarning)]
print(json.dumps({
    "compiled": codec.COMPILED,
    "files": [sys.modules[name].__file__ for name in codec._pure.COMPILED_MODULES
              if name in sys.modules],
    "warnings": [str(w.message) for w in ours],
    "lines": [[w.filename, w.lineno] for w in ours],
    "runtime_warning": issubclass(codec.PurePythonWarning, RuntimeWarning),
    "frames": [bytes(frame).decode() for frame in decoder],
}))
"""
IMPORT_LINE = REPORT.splitlines().index("    import codec") + 1


def package_copy(tmp_path: Path, *, extensions: bool) -> Path:
    """A copy of the package under ``tmp_path``, with its built extensions and records or not."""
    ignored = ["__pycache__", "*.c", "*.html"]
    if not extensions:
        ignored += [*EXTENSION_PATTERNS, f"*{RECORD_SUFFIX}"]
    shutil.copytree(
        REPO_ROOT / "codec", tmp_path / "codec", ignore=shutil.ignore_patterns(*ignored)
    )
    return tmp_path


def stand_in_extensions(root: Path, record: str | None, names: tuple[str, ...]) -> None:
    """Put a file that is no shared library where each module's extension goes.

    ``record``: ``"true"`` records the digest of the copy's sources next to it,
    ``"other"`` the digest of other sources, ``None`` nothing.
    """
    digest = runpy.run_path(str(root / "codec" / "_pure.py"))["source_digest"]
    for name in names:
        source = root.joinpath(*name.split(".")).with_suffix(".py")
        extension = source.with_name(source.stem + SUFFIX)
        extension.write_bytes(b"not a shared library\n")
        if record is not None:
            recorded = digest(name) if record == "true" else "0" * 64
            record_path(extension).write_text(recorded + "\n")


def import_copy(root: Path, **env: str) -> Any:
    """Run ``REPORT`` in a child importing codec from ``root``; its report, or the process."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("CODEC_PURE_PYTHON", "CODEC_REQUIRE_COMPILED", "PYTHONPATH")
    }
    environment.update(env, PYTHONPATH=str(root))
    result = run_child(REPORT, environment, root, timeout=120)
    if result.returncode:
        return result
    report = json.loads(result.stdout)
    assert report["frames"] == ["hi"]
    return report


def assert_fell_back(report: Any, cause: str) -> None:
    """The copy runs the uncompiled source, all of it, and said why once, at the import."""
    assert report["compiled"] is False
    assert len(report["files"]) >= 6
    assert all(path.endswith(".py") for path in report["files"]), report["files"]
    assert report["runtime_warning"]
    assert report["lines"] == [["<string>", IMPORT_LINE]], "the warning points at the import"
    (message,) = report["warnings"]
    assert message.startswith("codec runs its uncompiled source, about 50x slower")
    assert f"because ImportError: {cause}" in message
    assert "CODEC_PURE_PYTHON=1" in message


def test_no_extensions_warns_and_runs_the_source(tmp_path: Path) -> None:
    report = import_copy(package_copy(tmp_path, extensions=False))
    assert_fell_back(report, f"codec._varint is not compiled: no _varint{SUFFIX} beside _varint.py")


def test_pure_python_asked_for_is_quiet(tmp_path: Path) -> None:
    report = import_copy(package_copy(tmp_path, extensions=False), CODEC_PURE_PYTHON="1")
    assert (report["compiled"], report["warnings"]) == (False, [])


def test_compiled_core_required_makes_the_fallback_an_import_error(tmp_path: Path) -> None:
    result = import_copy(package_copy(tmp_path, extensions=False), CODEC_REQUIRE_COMPILED="1")
    assert result.returncode == 1
    assert (
        "ImportError: codec: CODEC_REQUIRE_COMPILED=1, but the compiled core cannot be loaded:"
        f" ImportError: codec._varint is not compiled: no _varint{SUFFIX}"
    ) in result.stderr


@pytest.mark.parametrize(
    ("record", "cause"),
    [
        pytest.param(
            None,
            f"_varint{SUFFIX} has no record of the source it was compiled from"
            f" (_varint{SUFFIX}{RECORD_SUFFIX}), so it may be older than _varint.py",
            id="no-record",
        ),
        pytest.param(
            "other",
            f"_varint{SUFFIX} was compiled from an older _varint.py or _varint.pxd:"
            " they changed since the build",
            id="stale",
        ),
        # The loader's own ImportError, which names the file it could not load.
        pytest.param("true", "{root}/codec/_varint" + SUFFIX, id="does-not-load"),
    ],
)
def test_extensions_that_cannot_be_used_warn_and_run_the_source(
    tmp_path: Path, record: str | None, cause: str
) -> None:
    root = package_copy(tmp_path, extensions=False)
    stand_in_extensions(root, record, COMPILED_MODULES)
    assert_fell_back(import_copy(root), cause.format(root=root))


needs_build = pytest.mark.skipif(not EXTENSION_BUILT, reason="the compiled core is not built")


@needs_build
@pytest.mark.parametrize("name", COMPILED_MODULES)
def test_the_build_records_the_sources_of_each_extension(name: str) -> None:
    source = source_path(name)
    (extension,) = (
        source.with_name(source.stem + suffix)
        for suffix in importlib.machinery.EXTENSION_SUFFIXES
        if source.with_name(source.stem + suffix).exists()
    )
    assert record_path(extension).read_text().strip() == source_digest(name)


@needs_build
def test_a_current_build_loads_compiled_and_quietly(tmp_path: Path) -> None:
    report = import_copy(package_copy(tmp_path, extensions=True))
    assert (report["compiled"], report["warnings"]) == (True, [])
    assert len(report["files"]) >= 6
    assert all(path.endswith(SUFFIX) for path in report["files"])


@needs_build
@pytest.mark.parametrize("suffix", [".py", ".pxd"])
def test_a_source_edited_since_the_build_is_not_run_compiled(tmp_path: Path, suffix: str) -> None:
    root = package_copy(tmp_path, extensions=True)
    with (root / "codec" / f"framing{suffix}").open("a") as source:
        source.write("\n# edited after the build\n")
    assert_fell_back(
        import_copy(root),
        f"framing{SUFFIX} was compiled from an older framing.py or framing.pxd",
    )


@needs_build
def test_an_extension_failing_to_load_leaves_no_mix_of_builds(tmp_path: Path) -> None:
    """framing loads after _varint, _wire, _buffer, wire and _struct have loaded compiled."""
    root = package_copy(tmp_path, extensions=True)
    stand_in_extensions(root, "true", ("codec.framing",))
    report = import_copy(root)
    assert_fell_back(report, f"{root / 'codec' / 'framing'}{SUFFIX}")
