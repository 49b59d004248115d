"""The report rule's one job (report/build.py, run_report) on a hand-made results folder: every output
of the rule is written from the job's files and params alone (nothing on a command line), in the
order the rule needs (the runtimes read the benchmark files), and the params reach the steps: the
first screen's min_n and demo flag, the models' families, the data sources' sha256, the tables' code."""
import hashlib
import json

import polars as pl

from workflow_scripts.jobs import make_job
from workflow_scripts.report.build import run_report

from helpers import write_table as write


def test_run_report_writes_every_output_from_the_job(tmp_path):
    res = tmp_path / "results"
    tables = res / "tables"
    tables.mkdir(parents=True)
    accuracy = write(tables / "triplets_accuracy.csv", [
        dict(dataset="d", model="m", n=23, accuracy=0.75, accuracy_ci_low=0.5, accuracy_ci_high=0.9),
        dict(dataset="d", model="h", n=23, accuracy=0.5, accuracy_ci_low=0.3, accuracy_ci_high=0.7)])
    lengths = write(tables / "length_buckets.csv", [dict(corpus="c", bucket="1-10", percent=100.0)])
    ingest = res / "reports" / "ingest" / "src.json"
    ingest.parent.mkdir(parents=True)
    ingest.write_text(json.dumps({"source": "src", "records": 9, "skipped": {"empty": 1}, "skipped_total": 1}))
    store = res / "embeddings" / "m"
    store.mkdir(parents=True)
    (store / "manifest.json").write_text(json.dumps({"model": "m", "origin": "package gt-x 0.1", "device": "cpu"}))
    bench = res / "benchmarks" / "embed" / "m"
    bench.mkdir(parents=True)
    (bench / "part-000.tsv").write_text("s\tmax_rss\tmax_vms\tcpu_time\tmean_load\n4.5\t100.0\t200.0\t3.0\t60.0\n")
    data = tmp_path / "source.txt"
    data.write_text("A sentence.\n")
    out = {"md": res / "report.md", "overview": tables / "overview.csv", "overview_plot": res / "plots" / "overview.png",
           "pages": [res / "report" / "tables" / "overview.html", res / "report" / "tables" / "triplets_accuracy.html"],
           "inputs_page": res / "report" / "inputs.html", "provenance": res / "report" / "provenance.rst",
           "first_screen_json": res / "report" / "overview.json", "first_screen": res / "report" / "first_screen.rst",
           "runtimes": res / "benchmarks" / "jobs.html", "runtimes_csv": res / "benchmarks" / "jobs.csv"}
    section = {"probe": "triplets", "title": "Triplets", "summary": "S, S+, S*.",
               "tables": [{"path": accuracy, "caption": "Accuracy per model."}], "plots": [], "differences": None}
    job = make_job(
        input={"lengths": [lengths], "ingest": [str(ingest)], "plots": [], "tables": [accuracy],
               "page_tables": [accuracy], "differences": [], "reports": [str(ingest)], "generator_reports": [],
               "stores": [str(store)]},
        output={k: [str(p) for p in v] if isinstance(v, list) else str(v) for k, v in out.items()},
        params={"sections": [section], "models": {"m": {"family": "tfidf"}, "h": {"family": "hashing", "dim": 8}},
                "headline_options": {}, "first_screen_settings": {"min_n": 20, "demo": True},
                "data": {"src": str(data)}, "run": {"seed": 7, "embedding_partitions": 2},
                "table_code": {"tables/triplets_accuracy.csv": {"rule": "triplets_aggregate", "code": "c0de" * 16}}},
        function="report.build:run_report")
    run_report(job)

    assert all(p.is_file() for v in out.values() for p in (v if isinstance(v, list) else [v]))
    overview = pl.read_csv(out["overview"])
    assert overview["model"].to_list() == ["m", "h"] and overview["stand_in"].to_list() == [False, True]
    assert overview["triplets_d"].to_list() == [0.75, 0.5]
    screen = json.loads(out["first_screen_json"].read_text())
    # min_n 20 from the params: 23 triplets are enough, so no N; the demo banner from the params
    assert screen["min_n"] == 20 and screen["demo"] and "N" not in screen["marks_used"]
    md = out["md"].read_text()
    assert md.startswith("# Overview: every model against the surface-form baseline") and "Demo inputs" in md
    assert "# Triplets" in md and "Accuracy per model." in md and "| src | 9 | 1 | empty: 1 | none |" in md
    assert "2 rows" in out["pages"][1].read_text() and "0.7500 [0.5000, 0.9000]" in out["pages"][1].read_text()
    assert "<code>tables/overview.csv</code>" in out["pages"][0].read_text()
    assert "<h2>ingest</h2>" in out["inputs_page"].read_text()
    provenance = out["provenance"].read_text()
    assert "Stand-in results: h" in provenance and "**Seed** 7" in provenance and "partitions** 2" in provenance
    assert hashlib.sha256(b"A sentence.\n").hexdigest() in provenance and "scikit-learn TF-IDF" in provenance
    # each table's job and the digest of its code (rst escapes the underscores)
    code = provenance[provenance.index("**Code**"):]
    assert "   * - tables/triplets\\_accuracy.csv\n     - triplets\\_aggregate\n     - " + "c0de" * 16 in code
    assert "Demo inputs" in out["first_screen"].read_text() and "data:image/png;base64" in out["first_screen"].read_text()
    jobs = pl.read_csv(out["runtimes_csv"])
    assert jobs.rows() == [("embed", "m/part-000", 4.5, 100.0, 200.0, 3.0, 60.0)]
