"""The report's pieces without a workflow run: the overview reads each probe's own figures (and
nothing else), tables keep their intervals, runtimes come from the benchmark files, the provenance
flags stand-ins, and every probe has its place in the report (categories, tables, headlines,
captions), so that adding a probe cannot silently leave it out."""
import hashlib
import json
import re
from pathlib import Path

import polars as pl
import pytest

from workflow_scripts.report import overview as O
from workflow_scripts.report import pages as P
from workflow_scripts.report.provenance import provenance

from helpers import write_table as write

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tables(tmp_path):
    csc = write(tmp_path / "csc_overlap.csv", [
        dict(corpus="c1", model="m", condition="negation", overlap=0.25, overlap_ci_low=0.2, overlap_ci_high=0.3,
             within_auc=0.75, within_auc_ci_low=0.7, within_auc_ci_high=0.8),
        dict(corpus="c1", model="h", condition="negation", overlap=float("nan"), overlap_ci_low=None, overlap_ci_high=None,
             within_auc=float("nan"), within_auc_ci_low=None, within_auc_ci_high=None)])
    trip = write(tmp_path / "triplets_accuracy.csv", [
        dict(dataset="d", model="m", accuracy=0.75, accuracy_ci_low=0.5, accuracy_ci_high=0.9)])
    ret = write(tmp_path / "retrieval_accuracy.csv", [
        dict(set="s", model="m", k=k, accuracy_full=k / 100, accuracy_full_ci_low=k / 200, accuracy_full_ci_high=k / 50,
             ndcg_full=0.5, ndcg_full_ci_low=0.4, ndcg_full_ci_high=0.6, n_queries=40) for k in (5, 10)])
    return [csc, trip, ret]


def test_overview_takes_each_figure_from_its_table(tables, tmp_path):
    models = {"m": {"family": "tfidf"}, "h": {"family": "hashing"}, "unused": {"family": "tfidf"}}
    frame = O.build(tables, models, {"retrieval_k": 10}, str(tmp_path / "ov.csv"), str(tmp_path / "ov.png"))
    assert frame["model"].to_list() == ["m", "h"]  # config order; a model with no figure has no row
    m = frame.row(0, named=True)
    assert (m["csc_c1_negation"], m["csc_c1_negation_ci_low"], m["csc_c1_negation_ci_high"]) == (0.75, 0.7, 0.8)
    assert (m["triplets_d"], m["triplets_d_ci_low"], m["triplets_d_ci_high"]) == (0.75, 0.5, 0.9)
    assert m["retrieval_s_acc@10"] == 0.1 and m["retrieval_s_acc@10_ci_high"] == 0.2  # the table's k, not 5
    assert "retrieval_s_acc@5" not in frame.columns
    h = frame.row(1, named=True)
    assert h["stand_in"] is True and m["stand_in"] is False
    assert h["csc_c1_negation"] is None and h["triplets_d"] is None  # undefined or not run: empty
    assert pl.read_csv(tmp_path / "ov.csv").equals(frame, null_equal=True)
    assert (tmp_path / "ov.png").stat().st_size > 1000


def test_headline_extractors_read_the_probe_columns():
    single = pl.DataFrame([dict(dataset="w", model="m", key="intersective", kind=k, consistency=c, ci_low=c - 0.1,
                                ci_high=c + 0.1) for k, c in (("AN", 0.9), ("AAN", 0.4))])
    from workflow_scripts.montague.probe import consistency_headlines
    from workflow_scripts.settheory.probe import share_headlines
    rows = consistency_headlines("single", "intersective", kind="AN")(single, {})
    assert [(r["column"], r["value"]) for r in rows] == [("montague_w_single_intersective", 0.9)]
    shares = pl.DataFrame([dict(sampleset="s", model="m", criterion=c, measure=me, case=ca, share=v, ci_low=0.0,
                                ci_high=1.0) for c in ("c1", "c2", "c3") for me in ("cosine", "l2")
                           for ca, v in (("T,T", 0.6), ("F,F", 0.1))])
    rows = share_headlines(shares, {"settheory_measure": "cosine"})
    assert sorted(r["column"] for r in rows) == ["settheory_s_c1_TT", "settheory_s_c3_TT"]
    assert all(r["value"] == 0.6 for r in rows)


def test_table_pages_keep_intervals(tmp_path):
    csv = write(tmp_path / "t.csv", [dict(model="m", overlap=0.25, overlap_ci_low=0.2, overlap_ci_high=0.3,
                                         key="a", consistency=0.5, ci_low=0.4, ci_high=0.6, note="x<y")])
    P.table_page(csv, str(tmp_path / "t.html"))
    html = (tmp_path / "t.html").read_text()
    assert "0.2500 [0.2000, 0.3000]" in html and "0.5000 [0.4000, 0.6000]" in html
    assert "overlap [95% CI]" in html and "overlap_ci_low" not in html and "x&lt;y" in html


def test_runtimes_come_from_the_benchmark_files(tmp_path):
    b = tmp_path / "benchmarks"
    (b / "embed" / "m").mkdir(parents=True)
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    (b / "embed" / "m" / "part-000.tsv").write_text(header + "1.5\t0:00:01\t100.0\t200\t-\t-\t0\t0\t50\t0.7\n"
                                                    + "2.5\t0:00:02\t120.0\t210\t-\t-\t0\t0\t60\t1.0\n")
    (b / "ingest").mkdir()
    (b / "ingest" / "src.tsv").write_text(header + "0.5\t0:00:00\t-\t-\t-\t-\t-\t-\t-\t-\n")
    frame = P.runtimes(str(b), str(b / "jobs.html"), str(b / "jobs.csv"))
    rows = {r["rule"]: r for r in frame.iter_rows(named=True)}
    assert rows["embed"]["job"] == "m/part-000" and rows["embed"]["seconds"] == 2.5  # the last attempt
    assert rows["embed"]["max_rss_mb"] == 120.0 and rows["ingest"]["max_rss_mb"] is None
    assert "Jobs with a benchmark file: 2, 3.0 s" in (b / "jobs.html").read_text()


def test_provenance_flags_stand_ins_and_hashes_the_data(tmp_path):
    data = tmp_path / "d.txt"
    data.write_text("x\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a").write_text("a")
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"model": "st", "origin": "package gt-x 0.1 (/p)", "device": "cpu", "revision": None}))
    models = {"st": {"family": "sentence_transformers", "name": "org/model"}, "h": {"family": "hashing", "dim": 8},
              "mine": {"family": "transformers", "path": "models/mine", "pooling": "last_token", "model_sha256": "ab" * 32,
                       "templates": {"query": "query: {text}"}}}
    out = tmp_path / "p.rst"
    provenance([str(manifest)], models, {"d": str(data), "f": str(folder)}, {"seed": 7, "results": "r"}, [], str(out))
    text = out.read_text()
    assert "Stand-in results: h" in text and "h (STAND-IN)" in text
    assert "package gt-x 0.1 (/p); hub id org/model" in text
    # a local model: its files' digest, pooling and per-role template are listed
    assert "ab" * 32 in text and "pooling last\\_token" in text and "query: template 'query: {text}'" in text
    assert hashlib.sha256(b"x\n").hexdigest() in text and "tree:" in text and "**Seed** 7" in text
    from docutils.core import publish_parts
    html = publish_parts(text, writer="html", settings_overrides={"halt_level": 2})["body"]
    assert "<table" in html


def test_every_probe_has_its_place_in_the_report():
    """Every declared probe (workflow_scripts/probes.py) has a category, a summary, tables shown as
    pages, headline figures in the overview, report() marks under its category in its rule file, and
    caption files that exist; stages have none of these."""
    from workflow_scripts.probes import declarations, get
    for probe in declarations():
        hint = f"probe {probe.name}: see docs/adding-a-probe.md (what a probe declares: its report pages and overview columns)"
        if probe.is_stage:
            assert not probe.tables and not probe.headlines and probe.name not in P.CATEGORIES, hint
            continue
        assert P.CATEGORIES[probe.name] == probe.title and probe.summary, hint
        assert probe.tables and probe.headlines, hint
        assert all(h.table.endswith(".csv") and callable(h.extract) for h in probe.headlines), hint
        assert f'REPORT_CATEGORY["{probe.name}"]' in (ROOT / "rules" / f"{probe.name}.smk").read_text(), hint
    captions = set()  # paths relative to the checkout, or absolute
    for path in (ROOT / "rules").glob("*.smk"):
        text = path.read_text()
        assert set(re.findall(r'REPORT_CATEGORY\["(\w+)"\]', text)) <= set(P.CATEGORIES), path.name
        captions |= {c for c in re.findall(r'caption=f?"\.\./(resources/[^"]+)"', text) if "{" not in c}
    # a probe's own captions lie in its folder (resources/<probe>/report/), found through the registry
    captions |= {probe.caption_file(c) for probe in declarations() for _, _, c in probe.tables}
    captions |= {probe.caption_file(c) for probe in declarations() for _, c in probe.dataset_tables}
    captions |= {get("retrieval").caption_file(f"{n}.rst") for n in ("accuracy_vs_k", "similarities")}
    captions |= {"resources/report/overview_table.rst"}
    for caption in captions:
        text = (ROOT / caption).read_text()
        assert text.strip() and len(text.strip().splitlines()) <= 3, caption


def test_inputs_page_counts_every_report_without_timings(tmp_path):
    (tmp_path / "ingest").mkdir()
    (tmp_path / "triplets").mkdir()
    (tmp_path / "ingest" / "src.json").write_text(json.dumps(
        {"source": "src", "records": 406, "skipped": {"empty": 2}, "skipped_examples": {"empty": [3, 9]}}))
    (tmp_path / "triplets" / "d.json").write_text(json.dumps(
        {"dataset": "d", "size": 79, "seconds": 10.3, "texts": {"unique_texts": 226}, "examples": ["x"]}))
    out = tmp_path / "inputs.html"
    P.inputs_page([str(tmp_path / "ingest" / "src.json"), str(tmp_path / "triplets" / "d.json")], None, str(out))
    html = out.read_text()
    for shown in ("<h2>ingest</h2>", "<h2>triplets</h2>", "skipped.empty", ">2<", "texts.unique_texts", ">226<"):
        assert shown in html, shown
    assert "seconds" not in html and "10.3" not in html and "examples" not in html


def test_a_page_caption_is_the_probe_s_own_else_a_shared_one():
    """rules/report.smk reads each page's caption from the path the report plan gives (relative to the
    checkout): the probe's folder first (resources/<probe>/report/), then resources/report/."""
    from workflow_scripts.probes import get
    from workflow_scripts.report.plan import caption_path
    assert caption_path(get("csc"), "table3.rst") == "resources/csc/report/table3.rst"
    assert caption_path(get("csc"), "differences.rst") == "resources/report/differences.rst"
    assert caption_path(None, "overview_table.rst") == "resources/report/overview_table.rst"
    assert not (ROOT / "resources" / "report" / "table3.rst").exists()
