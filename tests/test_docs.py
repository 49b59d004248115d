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
    # the probe pages it links are declared probes' pages (each declared probe's page is checked below,
    # found through the registry: a new probe's page needs no line in this shared file, nor in the README)
    linked = set(re.findall(r"\(workflow_scripts/(\w+)/README\.md\)", text))
    assert linked, "the README links no probe page"
    assert linked <= {p.name for p in probes.declarations()}, linked - {p.name for p in probes.declarations()}
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
    from workflow_scripts.report.overview import MARKS
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    legend = text[text.index("`make run` ends by printing the overview"):]
    legend = legend[:legend.index("\n\n")]
    assert all(f"**{mark}**" in legend for mark in MARKS), "the README's legend omits a mark"
    assert "(docs/verdicts.md)" in legend
    page = (ROOT / "docs" / "verdicts.md").read_text(encoding="utf-8")
    assert all(f"| **{mark}** |" in page for mark in MARKS)
    for words in ("better", "equivalent", "inconclusive", "worse", "wrong direction", "Holm", "Benjamini", "2/(B + 1)",
                  "McNemar", "Wilson", "What n counts", "margin", "TOST", "Mogstad", "MDE"):
        assert words in page, words
    results = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert "(verdicts.md)" in results
    # the verdict words of the first screen, in the legend and on the page
    from workflow_scripts.report.overview import verdict_meanings
    assert all(f"**{verdict}**" in legend and f"| **{verdict}**" in page for verdict in verdict_meanings())
    # every probe page states the margins of its headline statistics
    from workflow_scripts.probes import declarations
    for probe in declarations(stages=False):
        readme = (ROOT / "workflow_scripts" / probe.name / "README.md").read_text(encoding="utf-8")
        for _, delta, _ in probe.margins:
            assert f"{delta:g}" in readme and ("margin" in readme or "δ" in readme), (probe.name, delta)


# Pages a user who clones the repository reads. `../shared` (the developers' and CI's data beside the
# checkout) is absent from a clone, so only docs/testing.md, which says where the tests find their data,
# may name it.
USER_PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "testing.md"),
              *sorted((ROOT / "workflow_scripts").glob("*/README.md")), *sorted((ROOT / "resources").rglob("README.md"))]
USER_CONFIGS = [ROOT / "config.yaml", *sorted((ROOT / "resources" / "configs").glob("*.yaml")),
                *sorted((ROOT / "resources").glob("*/study*.yaml"))]  # each probe's studies


@pytest.mark.parametrize("page", USER_PAGES + USER_CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_pages_do_not_point_into_shared(page):
    text = page.read_text(encoding="utf-8")
    bad = [line for line in text.splitlines() if re.search(r"\.\./shared|/work/shared|(?<![\w/.-])shared/(data|notes|seeds)", line)]
    for target in LINK.findall(text) if page.suffix == ".md" else []:
        if re.match(r"^[a-z]+://", target) or target.startswith("mailto:"):
            continue
        dest = (page.parent / target.partition("#")[0]).resolve()
        if not dest.is_relative_to(ROOT):
            bad.append(f"link {target} leaves the repository")
    assert not bad, f"{page.relative_to(ROOT)} points where a clone has nothing: " + "; ".join(bad)


def test_user_pages_cover_every_page():
    """A new README under resources/ or a new docs page is checked too (the lists are globs)."""
    assert ROOT / "docs" / "testing.md" not in USER_PAGES
    assert (ROOT / "workflow_scripts" / "csc" / "README.md") in USER_PAGES
    assert any(p.parent.parent == ROOT / "resources" for p in USER_PAGES)


@pytest.mark.parametrize("name", sorted({p.name for p in probes.declarations()}))
def test_probe_page_carries_its_citation_and_method_notes(name):
    """Each probe page holds its paper's full citation (with an arXiv id or URL) and its method notes."""
    page = ROOT / "workflow_scripts" / name / "README.md"
    text = page.read_text(encoding="utf-8")
    assert "paper-and-method-notes" in anchors(page), f"{page.relative_to(ROOT)} lacks `## Paper and method notes`"
    notes = text[text.index("## Paper and method notes"):]
    notes = notes[:notes.index("\n## ", 1)]
    assert "**Citation.**" in notes and re.search(r"arXiv:\d{4}\.\d{4,5}|https://aclanthology\.org/", notes), name
    assert re.search(r"\b(19|20)\d\d\b", notes), f"{name}: the citation has no year"


def test_license_and_citation_files():
    import yaml
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in license_text and "Version 2.0" in license_text
    assert "END OF TERMS AND CONDITIONS" in license_text, "LICENSE holds the full text"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "## License" in readme and "Apache" in readme[readme.index("## License"):]
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0"
    assert cff["type"] == "software" and cff["title"] and cff["message"]
    assert cff["authors"] == [{"name": "Sentence-embedding probing workflow contributors"}]
    assert str(cff["date-released"]) == "2026-11-27"
    assert cff["license"] == "Apache-2.0"
    refs = cff["references"]
    assert len(refs) == 5
    for ref in refs:
        assert ref["title"] and ref["authors"] and ref["year"], ref.get("title")
        assert all(a.get("family-names") for a in ref["authors"]), ref["title"]
