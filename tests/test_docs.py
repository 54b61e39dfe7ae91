"""The documentation's relative links: each names a file that exists, and no anchor.

The README and the pages under ``docs/`` link to each other with relative
links to the ``.md`` files, so the links work on the built site (MkDocs
rewrites them) and when the files are read as they are. A link to a file that
moved or was renamed fails here, without building the site; so does a link
with an ``#anchor``, whose heading's id differs between renderers. Code blocks
and code spans are left out: what they hold is not a link. The pages that
include a file of the repository root (``--8<-- "SECURITY.md"``) must name one
that exists, and the included files must hold no relative link, since they are
read from two places.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
INCLUDED = [ROOT / "SECURITY.md", ROOT / "CHANGELOG.md"]

FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
# [text](target) and ![alt](target), then reference definitions: [name]: target
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
SNIPPET = re.compile(r"^--8<--\s+\"([^\"]+)\"", re.MULTILINE)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # https:, mailto:, ...


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks and code spans."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def relative_links(path: Path) -> list[str]:
    """The targets of the relative links of a Markdown file, in order."""
    prose = _prose(path.read_text(encoding="utf-8"))
    targets = INLINE_LINK.findall(prose) + REFERENCE.findall(prose)
    return [target for target in targets if not EXTERNAL.match(target)]


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_pages_are_found() -> None:
    names = {_name(page) for page in PAGES}
    assert {"README.md", "docs/index.md", "docs/api/index.md", "docs/bad-inputs.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_relative_link_names_a_file_that_exists(page: Path) -> None:
    broken = [t for t in relative_links(page) if "#" not in t and not (page.parent / t).is_file()]
    assert not broken, f"{_name(page)} links to missing files: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_no_relative_link_has_an_anchor(page: Path) -> None:
    anchored = [target for target in relative_links(page) if "#" in target]
    assert not anchored, f"{_name(page)} links with anchors: {anchored}"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_included_file_exists(page: Path) -> None:
    included = SNIPPET.findall(page.read_text(encoding="utf-8"))
    assert all((ROOT / name).is_file() for name in included), included


@pytest.mark.parametrize("path", INCLUDED, ids=_name)
def test_an_included_file_holds_no_relative_link(path: Path) -> None:
    assert relative_links(path) == []


def test_a_broken_link_an_anchor_and_code_are_told_apart(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](page.md) [gone](gone.md) [part](page.md#part) [web](https://example.org)\n"
        "`[not a link](nowhere.md)`\n\n```\n[nor this](nowhere.md)\n```\n\n[ref]: other.md\n",
        encoding="utf-8",
    )
    assert relative_links(page) == ["page.md", "gone.md", "page.md#part", "other.md"]
