"""The documentation cannot drift: the support lists in docs/layers.md are what ``tf2torch layers``
prints, every relative link in README.md and docs/*.md reaches a file (and a heading, when it names one),
and the README stays a landing page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import docs_tables

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("args", docs_tables.COMMANDS, ids=lambda a: " ".join(("layers", *a)))
def test_the_support_lists_are_what_tf2torch_layers_prints(args: tuple[str, ...]) -> None:
    blocks = docs_tables.blocks(docs_tables.LAYERS_MD.read_text())
    assert args in blocks, f"docs/layers.md has no generated block for `tf2torch layers {' '.join(args)}`"
    assert blocks[args] == docs_tables.output(args), (
        f"docs/layers.md is stale for `tf2torch layers {' '.join(args)}`; regenerate it with "
        "`PYTHONPATH=. python -m tests.docs_tables`")


def _anchor(heading: str) -> str:
    """GitHub's id for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text())
    return {_anchor(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def _links(page: Path) -> list[str]:
    return _LINK.findall(_FENCE.sub("", page.read_text()))


def test_every_relative_link_points_to_an_existing_file() -> None:
    broken = []
    for page in PAGES:
        for target in _links(page):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)}: {target}"
            if not dest.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{where} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)
    assert sum(len(_links(p)) for p in PAGES) > 20  # the pattern found the links at all


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in _links(ROOT / "README.md")}
    unlinked = [p.name for p in PAGES[1:] if p.resolve() not in linked]
    assert not unlinked, f"docs pages the README does not link: {unlinked}"


def test_the_readme_stays_a_landing_page() -> None:
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= 150, f"README.md has {lines} lines; move reference text into docs/ (see docs/contributing.md)"
