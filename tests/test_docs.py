"""The documentation's structure: a short README that links one page per probe and per topic, and links that
resolve (a moved section must leave no dangling link behind)."""
import re
from pathlib import Path

import pytest

from workflow_scripts import probes

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "workflow_scripts").glob("*/README.md"))]
TOPICS = ["models", "corpora", "results", "verdicts", "architecture", "adding-a-probe", "clusters", "recovery",
          "reproducibility", "testing", "timings"]
PENDING: set[str] = set()  # files a page may link before they exist (none now)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (hyphens kept), spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text))


def anchors(path: Path) -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", path.read_text(encoding="utf-8"), re.M)}


def test_slug_matches_github():
    assert slug("Deviations from the paper") == "deviations-from-the-paper"
    assert slug("Vectors made elsewhere (`precomputed`)") == "vectors-made-elsewhere-precomputed"
    assert slug("Config, phrases and tests") == "config-phrases-and-tests"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    bad = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+://", target) or target.startswith("mailto:"):
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if str(dest.relative_to(ROOT)) in PENDING if dest.is_relative_to(ROOT) else False:
            continue
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading with anchor #{anchor}")
    assert not bad, f"{page.relative_to(ROOT)}: " + "; ".join(bad)


def test_readme_is_a_starting_guide():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300, "the README is the starting guide; reference material goes to docs/"
    for name in probes.probe_names() + [p.name for p in probes.declarations() if p.is_stage]:
        assert f"workflow_scripts/{name}/README.md" in text, f"README does not link the page of {name}"
    for topic in TOPICS:
        assert f"docs/{topic}.md" in text, f"README does not link docs/{topic}.md"
    assert text.index("make run") < text.index("## Contents"), "the two commands come first"


@pytest.mark.parametrize("name", sorted({p.name for p in probes.declarations()}))
def test_probe_page_has_the_sections(name):
    page = ROOT / "workflow_scripts" / name / "README.md"
    assert page.exists(), f"probe {name} has no page {page.relative_to(ROOT)}"
    have = anchors(page)
    for section in ("method", "outputs", "deviations-from-the-paper", "published-figures"):
        assert any(a.startswith(section) for a in have), f"{page.relative_to(ROOT)} lacks a `{section}` section"


def test_the_readme_legend_names_every_mark_and_links_how_to_read_a_verdict():
    """The README's legend of the first screen's marks names each one (B too, the verdict itself) and
    links the page that explains verdicts; that page explains every mark and the verdicts' words."""
    from workflow_scripts.report_overview import MARKS
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    legend = text[text.index("`make run` ends by printing the overview"):]
    legend = legend[:legend.index("\n\n")]
    assert all(f"**{mark}**" in legend for mark in MARKS), "the README's legend omits a mark"
    assert "(docs/verdicts.md)" in legend
    page = (ROOT / "docs" / "verdicts.md").read_text(encoding="utf-8")
    assert all(f"| **{mark}** |" in page for mark in MARKS)
    for words in ("better", "no difference", "worse", "wrong direction", "Holm", "Benjamini", "2/(B + 1)",
                  "McNemar", "Clopper", "What n counts"):
        assert words in page, words
    results = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert "(verdicts.md)" in results
    # the verdict words of the first screen, in the legend and on the page
    from workflow_scripts.report_overview import VERDICT_MEANINGS
    assert all(f"**{verdict}**" in legend and f"| **{verdict}**" in page for verdict in VERDICT_MEANINGS)
