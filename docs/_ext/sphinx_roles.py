"""A griffe extension: the docstrings' reST markup, read as Markdown by the API pages.

codec's docstrings are written for ``help()`` and Sphinx: roles name what a
sentence refers to (``:class:`FrameDecoder```, ``:meth:`clear```,
``:class:`~codec.errors.TruncatedError```), a paragraph ending in ``::``
introduces a literal block, and ``\\ `` joins a plural ``s`` to a literal.
mkdocstrings renders docstrings as Markdown, where each role would show as
its raw text. This extension rewrites every docstring once, before it is
parsed: a role becomes a code span of the name it shows (the last component
after ``~``, and ``()`` after a function or method, as Sphinx writes them),
``::`` a plain colon, and the escaped space goes.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(class|meth|func|mod|attr|exc|data|obj|const):`(~?)([^`]+)`")
_CALLABLE = {"meth", "func"}


def _role(match: re.Match[str]) -> str:
    kind, short, target = match.groups()
    name = target.rsplit(".", 1)[-1] if short else target
    if kind in _CALLABLE and not name.endswith(")"):
        name += "()"
    return f"`{name}`"


def markdown(text: str) -> str:
    """The docstring ``text`` with its reST markup rewritten for Markdown."""
    text = _ROLE.sub(_role, text)
    text = re.sub(r"``\\ ", "``", text)
    return re.sub(r"(\S)::$", r"\1:", text, flags=re.MULTILINE)


class SphinxRoles(griffe.Extension):
    """Rewrites the docstring of every object loaded, statically or by inspection."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        # A package's own docstring (``codec``'s) is not an on_object event.
        self.on_object(obj=pkg)
