"""The seed papers' published figures (resources/<probe>/published.csv): every file parses and every value is a
number; every paper and table named is in the seed texts, and every row's numbers are printed there, in order,
on the model's line of that table; the tables that repeat each other agree; the keys name our datasets and
types; the Markdown report shows the rows labelled, after our tables, which they leave unchanged."""
from __future__ import annotations

import csv
import re
from pathlib import Path

import polars as pl
import pytest
import yaml

from workflow_scripts import published
from workflow_scripts.report import markdown, pages

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT.parent / "shared" / "seeds"
FILES = published.files()
NUM = re.compile(r"-?\d+(?:\.\d+)?")


def rows_of(probe: str) -> list[dict]:
    return published.load(probe)


def seed_text(paper: str) -> str:
    if not SEEDS.exists():
        pytest.skip("../shared/seeds is absent")
    prefix = published.PAPERS[paper][0]
    files = sorted(SEEDS.glob(f"{prefix}_*.txt"))
    assert files, f"no seed text {prefix}_*.txt for {paper}"
    return files[0].read_text(encoding="utf-8")


def test_there_are_files_for_the_probes_whose_papers_kept_their_tables():
    assert {published.probe_of(f) for f in FILES} == {"csc", "triplets", "retrieval", "montague"}


@pytest.mark.parametrize("file", FILES, ids=published.probe_of)
def test_file_parses_with_numeric_values_and_known_papers(file):
    rows = published.load(published.probe_of(file))
    assert rows and all(c in rows[0] for c in published.REQUIRED)
    assert all(isinstance(float(r["value"]), float) for r in rows)
    assert {r["paper"] for r in rows} <= set(published.PAPERS)
    keys = [tuple(v for k, v in r.items() if k not in ("value", "data", "note", "unit")) for r in rows]
    assert len(keys) == len(set(keys)), "a row is given twice"


def test_validate_names_the_bad_row(tmp_path):
    good = {"paper": "Zhu, Li & de Melo (2018)", "table": "Table 2", "model": "m", "statistic": "s", "value": "1.5",
            "data": "d"}
    assert published.validate([good], "f.csv") == [good]
    with pytest.raises(ValueError, match=r"f\.csv, line 3: value '97\.4%' is not a number"):
        published.validate([good, {**good, "value": "97.4%"}], "f.csv")
    with pytest.raises(ValueError, match="unknown paper"):
        published.validate([{**good, "paper": "Someone (2020)"}], "f.csv")
    with pytest.raises(ValueError, match="`data` is empty"):
        published.validate([{**good, "data": " "}], "f.csv")
    with pytest.raises(ValueError, match="missing column"):
        published.validate([{k: v for k, v in good.items() if k != "statistic"}], "f.csv")


@pytest.mark.parametrize("file", FILES, ids=published.probe_of)
def test_every_paper_and_table_is_in_the_seeds(file):
    for paper, table in {(r["paper"], r["table"]) for r in published.load(published.probe_of(file))}:
        text = seed_text(paper)
        number = table.removeprefix("Table ")
        # "Table 3", or one of a list: "Tables 6 and 7"
        assert re.search(rf"\bTables?\s+(?:\w+\s*(?:,|and)\s*)*{number}\b", text), f"{paper}: no {table} in the seed"


@pytest.mark.parametrize("file", FILES, ids=published.probe_of)
def test_every_row_is_printed_in_the_seed_on_its_models_line(file):
    """The values of each (paper, table, model), in file order, are exactly the numbers the seed prints on one
    line of that model, or on consecutive lines of it (a table the text split into blocks)."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for r in published.load(published.probe_of(file)):
        groups.setdefault((r["paper"], r["table"], r["model"]), []).append(r["value"])
    for (paper, table, model), values in groups.items():
        lines = seed_text(paper).splitlines()
        label = model or "Telecom"  # Table I's one row is named by its data set
        found = [NUM.findall(line.replace(label, " ", 1)) for line in lines
                 if re.match(rf"^\|?\s*{re.escape(label)}\s*(\||\t| )", line)]
        ok = any(sum(found[i:j], []) == values for i in range(len(found)) for j in range(i + 1, min(i + 4, len(found) + 1)))
        assert ok, f"{file.name}: {paper} {table} {model!r}: {values} is not printed on the model's line(s)"


def by_key(rows, **match) -> dict[str, float]:
    return {r["key"]: float(r["value"]) for r in rows if all(r[k] == v for k, v in match.items())}


def test_the_main_text_tables_are_the_appendix_tables_to_two_decimals():
    """Montague: Tables 3, 4, 5 print the first columns of Tables 6, 7, 8 to two decimals, rounded (or, in five
    cells, cut), so the keys inferred for the appendix tables are the main text's too. Five cells of Table 3
    print 1.0 where Table 6 has less: the paper's own disagreement, kept as printed and noted in the file."""
    rows = rows_of("montague")
    disagree = {("TE3-small", k) for k in ("intersective|intersective", "intersective|subsective",
                                           "intersective|plain", "intersective|ambiguous")}
    disagree.add(("stella_en_1.5B_v5", "intersective|subsective"))
    seen = set()
    for short, full in (("Table 3", "Table 6"), ("Table 4", "Table 7"), ("Table 5", "Table 8")):
        for m in {r["model"] for r in rows}:
            a, b = by_key(rows, table=short, model=m), by_key(rows, table=full, model=m)
            assert len(a) == 5 and set(a) <= set(b), (short, m)
            for k, v in a.items():
                if abs(v - round(b[k], 2)) > 1e-9 and abs(v - int(b[k] * 100) / 100) > 1e-9:
                    seen.add((m, k))
    assert seen == disagree
    noted = {(r["model"], r["key"]) for r in rows if r["table"] == "Table 3" and "though Table 6" in r["note"]}
    assert noted == disagree


def test_pair_table_gives_one_half_on_every_same_type_key():
    """Test 2 is 0.5 by symmetry on same-type keys (ties fail): where the inferred keys put them."""
    for r in rows_of("montague"):
        t1, _, t2 = r["key"].partition("|")
        if r["test"] == "pair" and t1 == t2:
            assert float(r["value"]) == 0.5, r


def test_retrieval_table_iii_baseline_is_table_ii_accuracy():
    rows = rows_of("retrieval")
    t2 = {r["model"]: r["value"] for r in rows if r["table"] == "Table II" and r["statistic"] == "Acc"}
    t3 = {r["model"]: r["value"] for r in rows if r["table"] == "Table III" and r["statistic"] == "Acc"
          and r["transform"] == "baseline"}
    assert t2 == t3 and len(t2) == 8


def test_keys_line_up_with_our_tables():
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    assert {r["dataset"] for r in rows_of("triplets")} == set(config["triplets"]["datasets"])
    types = set(config["montague"]["datasets"]["modifiers_en"]["adjectives"])
    for r in rows_of("montague"):
        assert set(r["key"].split("|")) <= types and r["test"] in ("single", "pair", "nonsubsective"), r
    transforms = set(config["retrieval"]["isotropy"]["transforms"]) | {"baseline", ""}
    assert {r["transform"] for r in rows_of("retrieval")} <= transforms
    assert {r["k"] for r in rows_of("retrieval")} == {str(config["retrieval"]["table_k"])}


def test_blocks_pivot_each_paper_table_with_every_value():
    rows = rows_of("triplets")
    blocks = published.blocks(rows)
    assert [(b["paper"], b["table"]) for b in blocks] == list(dict.fromkeys((r["paper"], r["table"]) for r in rows))
    b = blocks[0]
    assert b["columns"] == ["S^S+", "S^S*", "S+^S*", "Accuracy"] and b["fixed"]["dataset"] == "negation_detection"
    assert b["rows"][0] == ["Glove Avg", "97.42", "98.80", "96.53", "13.06"]
    assert sum(len(b["rows"]) * len(b["columns"]) for b in blocks) == len(rows)


def test_markdown_report_shows_published_rows_labelled_after_our_tables(tmp_path):
    ours = tmp_path / "tables" / "triplets_accuracy.csv"
    ours.parent.mkdir()
    pl.DataFrame({"dataset": ["negation_detection"], "model": ["minilm"], "accuracy": [0.784]}).write_csv(ours)
    section = {"title": "Sentence triplets", "summary": "S, S+, S*.", "plots": [],
               "tables": [{"path": str(ours), "caption": "Accuracy per dataset."}]}
    plain, labelled = tmp_path / "plain.md", tmp_path / "labelled.md"
    markdown.build(str(plain), [section])
    markdown.build(str(labelled), [{**section, "probe": "triplets"}])
    before, after = plain.read_text(), labelled.read_text()
    assert after.startswith(before.rstrip("\n")), "the published block changed our section"
    block = after[len(before.rstrip("\n")):]
    assert "Published figures" in block and "not part of this run's tables" in block
    for table in ("Table 2", "Table 3", "Table 4", "Table 5", "Table 6"):
        assert f"### Published: Zhu, Li & de Melo (2018), {table}" in block
    assert "| Glove Avg | 97.42 | 98.80 | 96.53 | 13.06 |" in block
    assert "| minilm |" not in block and "0.784" in before


def test_probe_without_published_figures_gets_no_block(tmp_path):
    assert published.markdown("settheory") == [] and published.load("settheory") == []


def test_published_page_labels_every_table(tmp_path):
    out = tmp_path / "published_csc.html"
    pages.published_page(str(published.path("csc")), str(out))
    html = out.read_text()
    assert html.count("<table>") == 1 and "Keuren, Ponsen &amp; Bagheri (2026), Table 3" in html
    assert "not this run's results" in html and ">0.0221<" in html
    with open(published.path("csc"), newline="", encoding="utf-8") as f:
        assert all(f">{r['value']}<" in html for r in csv.DictReader(f))
