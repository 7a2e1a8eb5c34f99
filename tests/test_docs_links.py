"""The docs hold together: every link between them (docs/, README.md, bench/results/) lands on
a file that exists and, for a page's section, on a heading that page has, so a section moved
to another page takes its links along; and no page of docs/ grows past 500 lines, the length
past which a guide has become a lab notebook (measured logs go to bench/results/)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = (sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
         + sorted((ROOT / "bench" / "results").glob("*.md")))
MOST_LINES = 500


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation but - and _ dropped,
    spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading's anchor outside code blocks; a repeated heading gets -1, -2 ..."""
    found, seen, fenced = set(), {}, False
    for line in page.read_text().split("\n"):
        if line.startswith("```"):
            fenced = not fenced
            continue
        heading = None if fenced else re.match(r"#{1,6} (.*)", line)
        if heading:
            name = slug(heading.group(1))
            found.add(f"{name}-{seen[name]}" if name in seen else name)
            seen[name] = seen.get(name, 0) + 1
    return found


def broken_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue                                    # https:, mailto:
        path, _, anchor = target.partition("#")
        landing = (page.parent / path).resolve() if path else page
        if not landing.exists():
            broken.append(f"{target}: no such file")
        elif anchor and landing.suffix == ".md" and anchor not in anchors(landing):
            broken.append(f"{target}: no such section")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_lands(page):
    assert not broken_links(page)


def test_no_page_of_the_docs_is_over_500_lines():
    long = {p.name: n for p in (ROOT / "docs").glob("*.md")
            if (n := len(p.read_text().splitlines())) > MOST_LINES}
    assert not long, long


def test_a_moved_section_is_a_broken_link(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\n## Which CPU a sweep measures on\n\n"
                                   "```\n## not one\n```\n")
    (tmp_path / "b.md").write_text("[x](a.md#which-cpu-a-sweep-measures-on) [y](a.md#not-one) "
                                   "[z](c.md) [w](https://example.org/#x)\n")
    assert broken_links(tmp_path / "b.md") == ["a.md#not-one: no such section",
                                               "c.md: no such file"]
    assert slug("Run length: `--input-size auto`") == "run-length---input-size-auto"
