"""The test suite's layout: what test modules share lives in ``helpers``, not in test modules.

A test module imports what it shares with others from ``tests/helpers``
(``from helpers.heap import measure``), never from another ``test_*``
module, so that changing, moving or deleting one test module never breaks
another; a helper imports no test module either. Every import statement is
checked, at the top of a module or inside a function.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imports_of_test_modules(path: Path) -> list[str]:
    """``line: module`` for each import statement of ``path`` naming a ``test_*`` module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        found += [f"{node.lineno}: {name}" for name in names if name.startswith("test_")]
    return found


def test_no_test_module_or_helper_imports_a_test_module() -> None:
    modules = sorted(TESTS.glob("test_*.py")) + sorted((TESTS / "helpers").glob("*.py"))
    assert TESTS / "test_layout.py" in modules
    offending = {
        str(path.relative_to(TESTS)): found
        for path in modules
        if (found := imports_of_test_modules(path))
    }
    assert not offending, f"import shared helpers from tests/helpers instead: {offending}"


# The package's rooms. The framing core carries frames of any payload; the
# struct engine (codec/structs/) and the profiler (codec/profiler/) are
# products built on it, and Arrow columns (codec/arrow/) one built on the
# struct engine. The rest of the package reaches the struct engine only
# through the modules named here, each with the rooms that use it.
CODEC = TESTS.parent / "codec"
FRAMING_CORE = {
    "codec._buffer",
    "codec._cython_shim",
    "codec._generic",
    "codec._introspection",
    "codec._pure",
    "codec._varint",
    "codec._wire",
    "codec.aio",
    "codec.errors",
    "codec.framing",
    "codec.io",
    "codec.varint",
    "codec.wire",
}
STRUCT_PORTS = {
    # what a message is, for framing: a staged payload it sizes, writes and releases
    "codec.structs._dispatch": {"codec.framing"},
    # the public API, re-exported; Arrow columns: a message kept encoded is checked by it
    "codec.structs._decode": {"codec", "codec.arrow"},
    # Arrow columns: the plan a struct class is read by
    "codec.structs._plan": {"codec.arrow"},
    "codec.structs._encode": {"codec"},
    "codec.structs._json": {"codec"},
    "codec.structs._message": {"codec", "codec._generic"},
    "codec.structs._schema": {"codec"},
    "codec.structs._struct": {"codec"},
    # the generated modules' runtime, and the generate and dump commands
    "codec.structs._generated": {"codec.wellknown"},
    "codec.structs._wellknown": {"codec.wellknown"},
    "codec.structs._descriptor_set": {"codec.cli"},
    "codec.structs._generate": {"codec.cli"},
    "codec.structs._generate_grpc": {"codec.cli"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(CODEC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def codec_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of each codec module ``path`` imports, cimports included.

    ``from codec.x import y`` names the module ``codec.x.y`` when there is
    one, else ``codec.x:y``, a name taken from ``codec.x``.
    """
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".pxd":  # cimports: the same statements, read by line
        return [
            (number, match.group(1))
            for number, line in enumerate(text.splitlines(), 1)
            if (match := re.match(r"\s*from (codec[\w.]*) cimport", line))
        ]
    found = []
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                where = CODEC.parent / child.replace(".", "/")
                is_module = where.with_suffix(".py").exists() or (where / "__init__.py").exists()
                found.append((node.lineno, child if is_module else f"{node.module}:{alias.name}"))
    return [(line, name) for line, name in found if name.partition(":")[0].startswith("codec")]


def package_modules() -> list[Path]:
    return sorted(path for suffix in ("*.py", "*.pxd", "*.pyi") for path in CODEC.rglob(suffix))


def in_room(module: str, room: str) -> bool:
    """Whether ``module`` (or the module a name is taken from) is ``room`` or inside it."""
    module = module.partition(":")[0]
    return module == room or (room != "codec" and module.startswith(f"{room}."))


def test_the_profiler_imports_only_the_framing_core() -> None:
    allowed = FRAMING_CORE | {"codec.profiler"}
    offending = [
        f"{path.relative_to(CODEC.parent)}:{line}: {name}"
        for path in package_modules()
        if in_room(module_name(path), "codec.profiler")
        for line, name in codec_imports(path)
        if name != "codec:__version__" and not any(in_room(name, room) for room in allowed)
    ]
    assert offending == [], offending


def test_the_struct_engine_is_reached_only_through_its_ports() -> None:
    offending = [
        f"{path.relative_to(CODEC.parent)}:{line}: {name}"
        for path in package_modules()
        if not in_room(module_name(path), "codec.structs")
        for line, name in codec_imports(path)
        if in_room(name, "codec.structs")
        and name.partition(":")[0] != "codec.structs"  # the public lookup of made classes
        and not any(
            in_room(module_name(path), room)
            for room in STRUCT_PORTS.get(name.partition(":")[0], ())
        )
    ]
    assert offending == [], offending


def test_the_ports_are_used() -> None:
    """Each port is imported by each room it names: an unused entry is not a port."""
    used = {
        (name.partition(":")[0], room)
        for path in package_modules()
        for _, name in codec_imports(path)
        for room in STRUCT_PORTS.get(name.partition(":")[0], ())
        if in_room(module_name(path), room)
    }
    unused = {(name, room) for name, rooms in STRUCT_PORTS.items() for room in rooms} - used
    assert unused == set(), unused
