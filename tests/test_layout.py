"""The test suite's layout: what test modules share lives in ``helpers``, not in test modules.

A test module imports what it shares with others from ``tests/helpers``
(``from helpers.heap import measure``), never from another ``test_*``
module, so that changing, moving or deleting one test module never breaks
another; a helper imports no test module either. Every import statement is
checked, at the top of a module or inside a function.
"""

from __future__ import annotations

import ast
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
