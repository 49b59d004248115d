"""The four jobs of rules/settheory.smk as the rules run them (workflow_scripts/jobs.py's make_job):
an imported table of two samples, a store of hand-set vectors, and values derived by hand."""
import math

import numpy as np
import polars as pl
import pytest

from workflow_scripts.jobs import make_job
from workflow_scripts.settheory.criteria import run_settheory_measures
from workflow_scripts.settheory.operators import run_settheory_filter
from workflow_scripts.settheory.samples import run_settheory_samples
from workflow_scripts.settheory.tables import run_settheory_aggregate
from workflow_scripts.texts import text_keys
from workflow_scripts.vector_store import spec_digest, write_partition

SPEC = {"family": "hashing", "dim": 5}
E = np.eye(5)
# sample 1: five orthogonal texts, every cos(B, D) is 0 and all six difference samples are kept;
# sample 2: S0 = e1 + e2 lies at 45 degrees to previous = 3 e1 (cos 1/sqrt 2) and S2 = 2 e1 is
# parallel to previous, so (S1, previous -> S0), (S1, S0 -> previous) and (S1, S2 -> previous)
# fail cos(B, D) < 0.25; (S2, S0 -> next), (S2, next -> S0) and (S2, S1 -> next) pass: 9 of 12 kept.
SAMPLES = [
    {"previous": ("The ferry left the pier.", E[0]), "S0": ("Rain fell on the town.", E[1]),
     "next": ("Shops closed early.", E[2]), "S1": ("The ferry left as rain fell.", E[3]),
     "S2": ("Rain fell and shops closed.", E[4])},
    {"previous": ("A choir sang at noon.", E[0] * 3), "S0": ("The hall was full.", E[0] + E[1]),
     "next": ("Tickets sold out.", E[2]), "S1": ("A choir sang in a full hall.", E[3]),
     "S2": ("The full hall sold out.", 2 * E[0])},
]
VECTORS = {text: vector for sample in SAMPLES for text, vector in sample.values()}
COLUMNS = ("previous", "S0", "next", "S1", "S2")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("jobs")
    table = tmp_path / "samples.tsv"
    pl.DataFrame({c: [s[c][0] for s in SAMPLES] for c in COLUMNS}).write_csv(table, separator="\t")
    r = tmp_path / "results"
    run_settheory_samples(make_job(
        input={"file": str(table)},
        output={"samples": f"{r}/settheory/samples/tiny.parquet", "texts": [f"{r}/texts/settheory.tiny/part-000.parquet"],
                "report": f"{r}/reports/settheory/tiny.json", "fusions": f"{r}/tables/settheory_fusions_tiny.csv"},
        params={"spec": {"file": str(table)}, "seed": 3, "generation": {}}, wildcards={"dataset": "tiny"}))
    # the embed stage's store, with the hand-set vectors of the texts the job wrote
    texts = pl.read_parquet(f"{r}/texts/settheory.tiny/part-000.parquet")["text"].to_list()
    store = r / "store" / "hand-dense-0"
    write_partition(store, text_keys(texts), {"model": "hand", "scope": "shared", "partition": 0, "partitions": 1,
                                              "family": "hashing", "spec_digest": spec_digest(SPEC)},
                    np.array([VECTORS[t] for t in texts], dtype=np.float64))
    run_settheory_filter(make_job(
        input={"samples": f"{r}/settheory/samples/tiny.parquet", "stores": [str(store)]},
        output={"operators": f"{r}/settheory/tiny/operators.parquet", "report": f"{r}/reports/settheory_filter/tiny.json"},
        params={"filter": {"rule": "all", "threshold": 0.25, "encoders": [{"name": "hand", "spec": SPEC}]}},
        wildcards={"dataset": "tiny"}))
    run_settheory_measures(make_job(
        input={"operators": f"{r}/settheory/tiny/operators.parquet", "stores": [str(store)]},
        output=[f"{r}/settheory/tiny/hand/measures.parquet"],
        params={"spec": SPEC, "measures": ["cosine", "dot", "l1"]}, wildcards={"dataset": "tiny", "model": "hand"}))
    run_settheory_aggregate(make_job(
        input={"measures_0": f"{r}/settheory/tiny/hand/measures.parquet",
               "samples_0": f"{r}/settheory/samples/tiny.parquet", "filter_0": f"{r}/reports/settheory_filter/tiny.json"},
        output={"shares": f"{r}/tables/settheory_shares.csv",
                "tables": [f"{r}/tables/settheory_c{i}.csv" for i in range(1, 7)],
                "histograms": f"{r}/tables/settheory_histograms.csv",
                "replicates": [f"{r}/settheory/tiny/replicates.parquet"], "plots": [f"{r}/plots/settheory/tiny/hand.png"]},
        params={"pairs": [{"sampleset": "tiny", "model": "hand"}], "seed": 3,
                "settings": {"measures": ["cosine", "dot", "l1"], "bootstrap_b": 20}}))
    return r


def test_the_samples_job_imports_the_table_and_writes_its_texts(outputs):
    samples = pl.read_parquet(outputs / "settheory/samples/tiny.parquet")
    assert samples.height == 2 and sorted(samples["S0"].to_list()) == sorted(s["S0"][0] for s in SAMPLES)
    texts = pl.read_parquet(outputs / "texts/settheory.tiny/part-000.parquet")["text"].to_list()
    assert sorted(texts) == sorted(VECTORS)  # ten distinct sentences
    assert (outputs / "reports/settheory/tiny.json").exists() and (outputs / "tables/settheory_fusions_tiny.csv").exists()


def test_the_filter_job_keeps_the_difference_samples_derived_by_hand(outputs):
    ops = pl.read_parquet(outputs / "settheory/tiny/operators.parquet")
    diff = ops.filter(pl.col("operator") == "difference")
    assert diff.height == 12 and diff["kept"].sum() == 9
    dropped = diff.filter(~pl.col("kept")).join(
        pl.read_parquet(outputs / "settheory/samples/tiny.parquet").select("sample_id", "S0"), on="sample_id")
    assert set(dropped["S0"]) == {"The hall was full."}
    assert sorted(dropped["variant"]) == ["S1,S0->previous", "S1,S2->previous", "S1,previous->S0"]
    assert ops.filter(pl.col("operator") != "difference")["kept"].all()


def test_the_measures_job_measures_the_kept_samples_by_hand(outputs):
    measures = pl.read_parquet(outputs / "settheory/tiny/hand/measures.parquet")
    assert measures.height == 2 * 3 + 9  # per sample one overlap and two union samples, and the kept differences
    samples = pl.read_parquet(outputs / "settheory/samples/tiny.parquet")
    second = samples.filter(pl.col("S0") == "The hall was full.")["sample_id"][0]
    # overlap of sample 2: B = S2 = (2, 0, 0, 0, 0), T = S0 = (1, 1, 0, 0, 0)
    row = measures.filter((pl.col("sample_id") == second) & (pl.col("operator") == "overlap")).row(0, named=True)
    assert row["cosine_bt"] == pytest.approx(1 / math.sqrt(2))
    assert row["dot_bt"] == pytest.approx(2.0)
    assert row["l1_bt"] == pytest.approx(2.0)
    assert row["cosine_ab"] == pytest.approx(0.0)


def test_the_aggregate_job_writes_tables_replicates_and_plots_where_its_outputs_say(outputs):
    shares = pl.read_csv(outputs / "tables/settheory_shares.csv")
    c3 = shares.filter((pl.col("criterion") == "c3") & (pl.col("measure") == "cosine"))
    assert set(c3["n"]) == {9} and set(shares["model"]) == {"hand"} and set(shares["bootstrap_b"]) == {20}
    assert set(shares.filter(pl.col("criterion") == "c1")["n"]) == {2}
    for i in range(1, 7):
        assert (outputs / f"tables/settheory_c{i}.csv").exists()
    assert (outputs / "tables/settheory_histograms.csv").exists()
    assert pl.read_parquet(outputs / "settheory/tiny/replicates.parquet").height > 0
    assert (outputs / "plots/settheory/tiny/hand.png").stat().st_size > 0
