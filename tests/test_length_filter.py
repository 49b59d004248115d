import numpy as np
import polars as pl
import pytest

from workflow_scripts.ingest import ingest
from workflow_scripts.length_filter import bucket_counts, derive_corpus, length_table, match_quotas


def test_bucket_edges_follow_table_2():
    counts = bucket_counts(np.array([0, 9, 10, 19, 20, 49, 50, 120]))
    assert counts == {"0-10": 2, "10-20": 2, "20-30": 1, "30-40": 0, "40-50": 1, ">=50": 2}


def test_match_quotas_hand_computed():
    # reference: 50% length 2, 25% length 3, 25% length 5; available 10, 10, 1
    quotas, distance = match_quotas({2: 10, 3: 10, 5: 1}, {2: 2, 3: 1, 5: 1}, tolerance=0)
    assert quotas == {2: 2, 3: 1, 5: 1} and distance == 0
    # no sentence of length 5: the rest keeps its 2:1 ratio and the distance says what is missing
    quotas, distance = match_quotas({2: 10, 3: 10}, {2: 2, 3: 1, 5: 1})
    assert quotas == {2: 10, 3: 5, 5: 0} and distance == pytest.approx(0.25)
    # a tolerance lets the subset grow past the scarcest length: 3+2+1 of 50/30/20% is 1/30 away
    quotas, distance = match_quotas({2: 1000, 3: 1000, 5: 1}, {2: 50, 3: 30, 5: 20}, tolerance=0.05)
    assert quotas == {2: 3, 3: 2, 5: 1} and distance == pytest.approx(1 / 30)
    # plenty everywhere: the cap decides the size, the proportions stay exact
    quotas, distance = match_quotas({2: 1000, 3: 1000, 5: 1000}, {2: 50, 3: 30, 5: 20}, max_total=100)
    assert quotas == {2: 50, 3: 30, 5: 20} and distance == pytest.approx(0)


@pytest.fixture
def source(tmp_path, log):
    rng = np.random.default_rng(0)
    lines = []
    for i in range(600):
        n = int(rng.integers(1, 60))
        en = " ".join(f"w{i}_{j}" for j in range(n))
        lines.append(f"{en}\tnl{i} " + "x " * 3)
    lines.append(lines[0])  # a duplicate pair
    path = tmp_path / "bitext.txt"
    path.write_text("\n".join(lines) + "\n")
    ingest({"format": "bitext", "languages": ["en", "nl"]}, "src", str(path), str(tmp_path / "ingest"), 128, log)
    short = tmp_path / "short.txt"
    short.write_text("\n".join(" ".join(["k"] * (1 + i % 6)) + f" {i}" for i in range(90)) + "\n")
    ingest({"format": "lines", "languages": ["en"]}, "short", str(short), str(tmp_path / "ingest_short"), 128, log)
    return tmp_path


def test_token_range_and_dedup(source, log):
    m = derive_corpus({"source": "src", "language": "en", "min_tokens": 5, "max_tokens": 20}, "c",
                      str(source / "ingest"), str(source / "c"), 1, 100, None, log)
    frame = pl.read_parquet(source / "c" / "part-*.parquet")
    assert frame["n_tokens"].min() >= 5 and frame["n_tokens"].max() <= 20
    assert frame["sentence_id"].n_unique() == frame.height == m["rows"]
    assert m["duplicates_removed"] == 1
    assert sum(s["rows"] for s in m["shards"]) == m["rows"]


def test_capped_length_matched_subset_keeps_the_distribution(source, log):
    derive_corpus({"source": "short", "language": "en"}, "short", str(source / "ingest_short"),
                  str(source / "short"), 1, 100, None, log)
    spec = {"source": "src", "language": "en", "match_lengths_of": "short", "max_sentences": 20,
            "length_match_tolerance": 0.2}
    m = derive_corpus(spec, "m", str(source / "ingest"), str(source / "mc"), 7, 100, str(source / "short"), log)
    assert m["rows"] <= 20 and m["length_distribution_distance"] <= 0.2


def test_length_matched_subset_follows_reference_and_is_seeded(source, log):
    ref = derive_corpus({"source": "short", "language": "en"}, "short", str(source / "ingest_short"),
                        str(source / "short"), 1, 100, None, log)
    spec = {"source": "src", "language": "en", "match_lengths_of": "short"}
    a = derive_corpus(spec, "m", str(source / "ingest"), str(source / "m1"), 7, 100, str(source / "short"), log)
    b = derive_corpus(spec, "m", str(source / "ingest"), str(source / "m2"), 7, 100, str(source / "short"), log)
    c = derive_corpus(spec, "m", str(source / "ingest"), str(source / "m3"), 8, 100, str(source / "short"), log)
    ids = lambda d: pl.read_parquet(source / d / "part-*.parquet")["sentence_id"].to_list()
    assert ids("m1") == ids("m2") and ids("m1") != ids("m3")
    ref_share = {k: v / ref["rows"] for k, v in ref["length_counts"].items()}
    got_share = {k: v / a["rows"] for k, v in a["length_counts"].items()}
    assert set(got_share) == set(ref_share)
    for k in ref_share:
        assert got_share[k] == pytest.approx(ref_share[k], abs=0.1)
    table = length_table({"short": ref, "m": a})
    assert table.columns == ["tokens", "short", "m"] and table["tokens"][-1] == "sentences"
    assert table["m"][-1] == str(a["rows"])
