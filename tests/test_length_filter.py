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
    # reference: 15 sentences of each length 2..7. Exact sixths of 20 round down to 3 each (18);
    # the 2 left go to the lengths furthest below their share, ties to the shorter: 2 and 3
    assert m["rows"] == 20 and pl.read_parquet(source / "mc" / "part-*.parquet").height == 20
    assert m["length_counts"] == {"2": 4, "3": 4, "4": 3, "5": 3, "6": 3, "7": 3}
    assert m["length_distribution_distance"] == pytest.approx(0.5 * (2 * (4 / 20 - 1 / 6) + 4 * (1 / 6 - 3 / 20)), abs=1e-6)
    assert m["length_match_tolerance_met"] is True
    # with tolerance 0 the proportions stay exact: 18, not 20
    exact = derive_corpus({**spec, "length_match_tolerance": 0}, "m", str(source / "ingest"), str(source / "mc0"), 7,
                          100, str(source / "short"), log)
    assert exact["rows"] == 18 and exact["length_distribution_distance"] == 0


def test_match_quotas_top_up_to_the_cap_hand_computed():
    # shares 1/2, 1/4, 1/4 of a cap of 10: floors 5, 2, 2 (9); the 10th goes to the stratum
    # furthest below its share of 10 (3 and 5 tie at 2.5 - 2 = 0.5: the shorter, 3)
    quotas, distance = match_quotas({2: 100, 3: 100, 5: 100}, {2: 2, 3: 1, 5: 1}, tolerance=0.06, max_total=10)
    assert quotas == {2: 5, 3: 3, 5: 2} and distance == pytest.approx(0.05)
    # the same with tolerance 0.04: the 10th sentence would take the distance to 0.05, so 9
    quotas, distance = match_quotas({2: 100, 3: 100, 5: 100}, {2: 2, 3: 1, 5: 1}, tolerance=0.04, max_total=10)
    assert quotas == {2: 5, 3: 2, 5: 2} and distance == pytest.approx(0.5 * (2 * (1 / 4 - 2 / 9) + (5 / 9 - 1 / 2)))


def test_match_quotas_when_the_tolerance_cannot_be_met():
    # the reference has length 9, the source none: no subset is within 0.05 of the reference. The
    # result keeps the reference's 2:1 among lengths 2 and 3 (the scarcest, 3, decides: 4 -> 8 + 4)
    # and returns the distance reached, 0.5 * (|8/12 - 2/4| + |4/12 - 1/4| + |0 - 1/4|) = 0.25
    quotas, distance = match_quotas({2: 50, 3: 4}, {2: 2, 3: 1, 9: 1}, tolerance=0.05)
    assert quotas == {2: 8, 3: 4, 9: 0} and distance == pytest.approx(0.25)
    # nothing of the reference's lengths at all: nothing, distance 1
    assert match_quotas({4: 10}, {2: 1, 3: 1}, tolerance=0.05) == ({}, 1.0)


def test_unmet_tolerance_is_warned_and_recorded(source, log, caplog, tmp_path):
    """A reference length the source lacks (70 tokens; the source has 1..59): derive_corpus keeps
    the proportions among the lengths there are, warns, and records it in the manifest."""
    import logging
    long_ref = tmp_path / "long.txt"
    long_ref.write_text("\n".join([" ".join(["k"] * 70) + f" {i}" for i in range(5)]
                                  + [f"k {i}" for i in range(5)]) + "\n")  # 5 of 71 tokens, 5 of 2
    ingest({"format": "lines", "languages": ["en"]}, "long", str(long_ref), str(tmp_path / "ingest_long"), 128, log)
    derive_corpus({"source": "long", "language": "en"}, "long", str(tmp_path / "ingest_long"), str(tmp_path / "long"),
                  1, 100, None, log)
    spec = {"source": "src", "language": "en", "match_lengths_of": "long"}
    log.propagate = True
    with caplog.at_level(logging.WARNING, logger=log.name):
        m = derive_corpus(spec, "m", str(source / "ingest"), str(tmp_path / "m"), 7, 100, str(tmp_path / "long"), log)
    available_2 = pl.read_parquet(source / "ingest" / "part-*.parquet").filter(
        (pl.col("language") == "en") & (pl.col("n_tokens") == 2))["sentence_id"].n_unique()
    assert m["length_counts"] == {"2": available_2} and m["rows"] == available_2 > 0
    assert m["length_distribution_distance"] == 0.5 and m["length_match_tolerance_met"] is False
    assert "length_match_tolerance" in caplog.text and "m:" in caplog.text


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
