"""CSC's direction within sentences (issue 43, points 1-2): per sentence the AUC and gap of its own
fuzzed against its own negated variants, averaged over the sentences that have both, resampled by
sentence; both curves of a condition over the same sentences; the verdict's statistic does not ride
on the KDE bandwidth as the overlap does."""
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workflow_scripts.csc.curves import SIM_SCHEMA, analyse
from workflow_scripts.csc.tables import with_separation
from workflow_scripts.verdicts import separation


def write_rows(path, rows):
    """rows: (original_id, kind, similarity)."""
    table = pa.table({"original_id": pa.array([r[0] for r in rows], pa.uint64()),
                      "variant_id": pa.array(range(len(rows)), pa.uint64()),
                      "kind": pa.array([r[1] for r in rows], pa.string()),
                      "similarity": pa.array([r[2] for r in rows], pa.float64())}, schema=SIM_SCHEMA)
    pq.write_table(table, path)
    return str(path)


def ochiai(words: int) -> float:
    """The surface-form baseline's cosine after inserting one new word into a sentence of n words:
    |A & B| / sqrt(|A| |B|) = n / sqrt(n (n + 1)) = sqrt(n / (n + 1)), whether the word is an
    article or a negation."""
    return math.sqrt(words / (words + 1))


def baseline_corpus(short: int = 30, long: int = 30):
    """A sentence of 1 word has 2 fuzzing candidates (a, the) and 1 negation candidate; one of 6
    words 3 of each (the paper's X = 3). The surface-form baseline gives every variant of a sentence
    the same cosine, so its within-sentence gap is 0 in every sentence, while pooled over variants
    the short sentences' low cosines weigh twice in the fuzzed curve and once in the negated one."""
    rows = []
    for i in range(short):
        rows += [(i, "fuzz", ochiai(1))] * 2 + [(i, "negation", ochiai(1))]
    for i in range(short, short + long):
        rows += [(i, "fuzz", ochiai(6))] * 3 + [(i, "negation", ochiai(6))] * 3
    return rows


def test_a_baseline_equal_within_every_sentence_has_no_within_gap_but_a_pooled_one(tmp_path, log):
    """Fails on e572c58: there the only gap and AUC were pooled over the variants, and the baseline
    was 'wrong direction' on a corpus where it is, sentence by sentence, exactly indifferent."""
    (row,), _, _ = analyse(write_rows(tmp_path / "s.parquet", baseline_corpus()), "c", "form_only", log,
                           bootstrap_b=200)
    # pooled by hand: fuzzed 60 x 0.7071 and 90 x 0.9258, negated 30 x 0.7071 and 90 x 0.9258
    pooled_fuzz = (60 * ochiai(1) + 90 * ochiai(6)) / 150
    pooled_neg = (30 * ochiai(1) + 90 * ochiai(6)) / 120
    assert row["gap"] == pytest.approx(pooled_fuzz - pooled_neg, abs=1e-12) and row["gap"] < -0.02
    assert row["gap_ci_high"] < 0 and row["auc"] < 0.5  # pooled: "significantly" the wrong way
    assert row["within_gap"] == 0.0 and row["within_auc"] == 0.5  # every pair within a sentence ties
    assert (row["within_auc_ci_low"], row["within_auc_ci_high"]) == (0.5, 0.5)
    assert row["n_within"] == 60
    assert separation(row["within_auc"], row["within_auc_ci_low"], row["within_auc_ci_high"], 0.5, 0.05) == "none"


def test_within_sentence_auc_and_gap_by_hand_and_each_replicate_is_that_of_its_resample(tmp_path, log):
    """Sentence 1: fuzzed 0.9, 0.8 against negated 0.8, 0.6: 0.9 beats both (2), 0.8 ties 0.8 (1/2)
    and beats 0.6 (1): AUC 3.5/4, gap 0.85 - 0.7 = 0.15. Sentence 2: fuzzed 0.5 against negated 0.7:
    AUC 0, gap -0.2. Sentence 3 has no negated variant: not counted. Means over the 2 sentences:
    AUC 0.4375, gap -0.025. Pooled over the variants the AUC would be 3.5/9 + ... (other numbers)."""
    rows = [(1, "fuzz", 0.9), (1, "fuzz", 0.8), (1, "negation", 0.8), (1, "negation", 0.6),
            (2, "fuzz", 0.5), (2, "negation", 0.7), (3, "fuzz", 0.95), (3, "fuzz", 0.4)]
    reps: dict = {}
    (row,), _, _ = analyse(write_rows(tmp_path / "s.parquet", rows), "c", "m", log, bootstrap_b=6, seed=3,
                           replicates_out=reps)
    assert row["within_auc"] == pytest.approx((3.5 / 4 + 0.0) / 2, abs=1e-12)
    assert row["within_gap"] == pytest.approx((0.15 - 0.2) / 2, abs=1e-12)
    assert row["n_within"] == 2
    from workflow_scripts.bootstrap import paired_rng, resample_counts
    weights = resample_counts(paired_rng(3, "csc", "c", "negation/overlap"), 6, 3)  # groups: ids 1, 2, 3
    auc_s, gap_s = np.array([3.5 / 4, 0.0, np.nan]), np.array([0.15, -0.2, np.nan])
    for b in range(6):
        w = weights[b, :2]
        expected = (w @ auc_s[:2]) / w.sum() if w.sum() else np.nan
        got = reps["negation/within_auc"][1][b]
        assert (np.isnan(got) and np.isnan(expected)) or got == pytest.approx(expected, abs=1e-12)
        if w.sum():
            assert reps["negation/within_gap"][1][b] == pytest.approx((w @ gap_s[:2]) / w.sum(), abs=1e-12)
    assert reps["negation/within_auc"][2] == 2  # the units behind it


def test_grammatical_negation_curves_compare_the_same_sentences(tmp_path, log):
    """Fails on e572c58: there the grammatical negation's fuzzed curve held every sentence, its
    negated curve only those with a grammatical negation. Sentences 1-20 have one, 21-60 only the
    inserted negation: the grammatical condition's fuzzed curve holds sentences 1-20 alone."""
    rng = np.random.default_rng(4)
    rows = []
    for i in range(1, 61):
        centre = 0.95 if i <= 20 else 0.75  # the sentences with a grammatical negation are the long ones
        rows += [(i, "fuzz", float(x)) for x in rng.normal(centre, 0.01, 3)]
        rows += [(i, "negation", float(x)) for x in rng.normal(centre - 0.02, 0.01, 3)]
        if i <= 20:
            rows += [(i, "grammatical_negation", float(rng.normal(centre - 0.03, 0.01)))]
    (neg, gram), curves, details = analyse(write_rows(tmp_path / "s.parquet", rows), "c", "m", log, bootstrap_b=20)
    assert (neg["condition"], gram["condition"]) == ("negation", "grammatical_negation")
    assert neg["n_fuzzed"] == 180 and gram["n_fuzzed"] == 60 and gram["n_negated"] == 20
    assert details["units"]["fuzz@grammatical_negation"] == 20 and gram["n_units"] == gram["n_within"] == 20
    fuzzed_of_gram = np.mean([r[2] for r in rows if r[1] == "fuzz" and r[0] <= 20])
    assert gram["mean_fuzzed"] == pytest.approx(fuzzed_of_gram, abs=1e-12)
    assert not np.allclose(curves["fuzz@negation"], curves["fuzz@grammatical_negation"])


def test_the_overlap_rides_on_the_bandwidth_the_within_auc_does_not(tmp_path, log):
    """A baseline whose cosines take a few discrete values: its overlap is a smoothing artefact that
    moves with the covariance factor, while the within-sentence AUC, the verdict's statistic, is
    the same at every factor (issue 43, point 2); the table states the factor and the bandwidths."""
    rows, i = [], 0
    for words in range(1, 13):  # 5 sentences of each length 1..12: twelve close discrete cosines
        for _ in range(5):
            rows += [(i, "fuzz", ochiai(words))] * min(3, 2 * words) + [(i, "negation", ochiai(words))] * min(3, words)
            i += 1
    rng = np.random.default_rng(8)  # a model that pushes negations 0.03 away, with noise
    model = [(i, k, float(s - (0.03 if k == "negation" else 0.0) + rng.normal(0, 0.02))) for i, k, s in rows]
    base_path, model_path = write_rows(tmp_path / "b.parquet", rows), write_rows(tmp_path / "m.parquet", model)
    found = {}
    for factor in (0.1, 0.2, 0.3):
        (b,), _, _ = analyse(base_path, "c", "form_only", log, bootstrap_b=0, covariance_factor=factor)
        (m,), _, _ = analyse(model_path, "c", "m", log, bootstrap_b=0, covariance_factor=factor)
        assert b["kde_covariance_factor"] == factor and b["bandwidth_fuzzed"] > 0
        found[factor] = (m["overlap"] - b["overlap"], m["within_auc"] - b["within_auc"])
    overlaps = [found[f][0] for f in (0.1, 0.2, 0.3)]
    assert max(overlaps) - min(overlaps) > 0.05  # the overlap difference moves with the smoothing
    assert len({found[f][1] for f in found}) == 1  # the AUC difference does not


def test_separation_needs_the_margin_and_the_interval(tmp_path):
    import polars as pl
    rows = [{"corpus": "c", "model": m, "condition": "negation", "within_auc": a, "within_auc_ci_low": lo,
             "within_auc_ci_high": hi} for m, a, lo, hi in (("wrong", 0.40, 0.35, 0.45), ("near", 0.48, 0.46, 0.499),
                                                            ("none", 0.50, 0.47, 0.53), ("right", 0.70, 0.65, 0.75),
                                                            ("unclear", 0.52, 0.44, 0.60))]
    table = with_separation(pl.DataFrame(rows), {"negation": 0.05})
    # "near": below 1/2 but by less than the margin -- no direction at all, not the wrong one
    assert dict(zip(table["model"], table["separation"])) == {"wrong": "wrong", "near": "none", "none": "none",
                                                              "right": "right", "unclear": "unclear"}


WITHIN_BITS = """
import hashlib, sys
import numpy as np
from workflow_scripts.csc.curves import Groups, within_sentence
ids = np.arange(int(sys.argv[2]), dtype=np.uint64)
out = within_sentence(sys.argv[1], "negation", Groups(ids, 1000),
                      np.random.default_rng(0).integers(0, 3, size=(50, min(1000, len(ids)))))
print(hashlib.sha256(np.r_[out["gap"], out["auc"], out["gap_replicates"], out["auc_replicates"]].tobytes()).hexdigest())
"""


def test_within_sentence_figures_do_not_depend_on_the_number_of_threads(tmp_path):
    """The gaps' float sums run in a fixed order: polars' grouped sums split the rows by thread,
    and on main before this test 8 and 16 threads gave other bits of the same gaps (a rerun under
    load then differed from the first run)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    rng = np.random.default_rng(7)
    sentences = 3000
    rows = []
    for i in range(sentences):
        rows += [(i, "fuzz", float(v)) for v in rng.uniform(0.5, 1, 3)]
        rows += [(i, "negation", float(v)) for v in rng.uniform(0.4, 1, 3)]
    order = rng.permutation(len(rows))  # a file's rows in no particular order
    path = write_rows(tmp_path / "s.parquet", [rows[i] for i in order])
    root = Path(__file__).resolve().parents[2]
    digests = {subprocess.run([sys.executable, "-c", WITHIN_BITS, path, str(sentences)], check=True, text=True,
                              capture_output=True, cwd=root,
                              env={**os.environ, "POLARS_MAX_THREADS": str(threads), "PYTHONPATH": str(root)}
                              ).stdout.strip() for threads in (1, 3, 8, 16)}
    assert len(digests) == 1, digests
