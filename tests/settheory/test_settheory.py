"""Set-theoretic probe (seed 001): hand-computed measures, projections with known angles, the
closed-form epsilon-grid shares against an explicit grid, the criteria's (flipped) inequalities, the
filter rules, the operator samples, the echo rule, window selection and imported samples."""
import json
import math
import re
from collections import Counter

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp

from conftest import requires_shared, shared_data

from workflow_scripts.settheory import criteria as C
from workflow_scripts.settheory import operators as O
from workflow_scripts.settheory import samples as S
from workflow_scripts.settheory.defaults import DEFAULT_PROMPTS
from workflow_scripts.settheory import tables as T


# ---- measures ------------------------------------------------------------------------------------
def test_measures_by_hand():
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    y = np.array([[2.0, 0.0, 3.0, 1.0]])
    m = C.pair_measures(x, y)
    # x.y = 2 + 0 + 9 + 4 = 15; |x| = sqrt(30), |y| = sqrt(14)
    assert m["dot"][0] == pytest.approx(15.0)
    assert m["cosine"][0] == pytest.approx(15 / math.sqrt(30 * 14))
    # x - y = (-1, 2, 0, 3): L1 = 6, L2 = sqrt(14)
    assert m["l1"][0] == pytest.approx(6.0)
    assert m["l2"][0] == pytest.approx(math.sqrt(14))
    # population variances: Var(x) = Var(y) = 1.25, Var(x - y) = mean(1,4,0,9) - 1 = 2.5
    assert m["ned"][0] == pytest.approx(0.5 * 2.5 / (1.25 + 1.25))
    m = C.pair_measures(x, np.array([[0.0, 0.0, 0.0, 2.0]]))  # Var(y) = 0.75; x - y = (1,2,3,2): Var 0.5
    assert m["ned"][0] == pytest.approx(0.5 * 0.5 / (1.25 + 0.75))


def test_sparse_and_dense_measures_agree():
    rng = np.random.default_rng(0)
    x = rng.random((5, 7)) * (rng.random((5, 7)) > 0.5)
    y = rng.random((5, 7)) * (rng.random((5, 7)) > 0.5)
    dense, sparse = C.pair_measures(x, y), C.pair_measures(sp.csr_matrix(x), sp.csr_matrix(y))
    for key in C.MEASURES:
        np.testing.assert_allclose(dense[key], sparse[key], rtol=1e-12, equal_nan=True)
    pd_, ps = C.projection(x, y, x + y), C.projection(sp.csr_matrix(x), sp.csr_matrix(y), sp.csr_matrix(x + y))
    for key in C.GEOMETRY:
        np.testing.assert_allclose(pd_[key], ps[key], rtol=1e-10, equal_nan=True)


def test_zero_vector_makes_cosine_and_ned_undefined():
    m = C.pair_measures(np.zeros((1, 3)), np.ones((1, 3)))
    assert np.isnan(m["cosine"][0]) and m["dot"][0] == 0 and m["l1"][0] == 3
    m = C.pair_measures(np.zeros((1, 3)), np.zeros((1, 3)))
    assert np.isnan(m["ned"][0])


# ---- projections -----------------------------------------------------------------------------------
def test_projection_with_known_angles():
    a, b = np.array([[1.0, 0, 0]]), np.array([[0.0, 1, 0]])
    p = C.projection(a, b, np.array([[1.0, 1.0, 5.0]]))  # p = (1, 1, 0): 45 degrees from both
    assert p["angle_ab"][0] == pytest.approx(90)
    assert p["angle_pa"][0] == pytest.approx(45) and p["angle_pb"][0] == pytest.approx(45)
    assert p["norm_p"][0] == pytest.approx(math.sqrt(2)) and p["norm_t"][0] == pytest.approx(math.sqrt(27))
    # p = (cos 30, sin 30, 0): 30 degrees from A, 60 from B
    t = np.array([[math.cos(math.radians(30)), math.sin(math.radians(30)), -2.0]])
    p = C.projection(a, b, t)
    assert p["angle_pa"][0] == pytest.approx(30) and p["angle_pb"][0] == pytest.approx(60)
    # outside the wedge: p = (1, -1, 0) is 45 from A and 135 from B: not "in the middle"
    p = C.projection(a, b, np.array([[1.0, -1.0, 0.0]]))
    assert p["angle_pa"][0] == pytest.approx(45) and p["angle_pb"][0] == pytest.approx(135)
    # A and B not orthogonal, longer than 1: A = (2, 2, 0) at 45 degrees from B = (0, 3, 0)
    p = C.projection(np.array([[2.0, 2, 0]]), np.array([[0.0, 3, 0]]), np.array([[0.0, 1, 1]]))
    assert p["angle_ab"][0] == pytest.approx(45) and p["angle_pb"][0] == pytest.approx(0, abs=1e-6)
    assert p["angle_pa"][0] == pytest.approx(45) and p["norm_ratio"][0] == pytest.approx(math.sqrt(8) / 3)


def test_projection_matches_explicit_gram_schmidt_with_b_first():
    rng = np.random.default_rng(1)
    a, b, t = rng.normal(size=(3, 1, 9))
    e_b = b[0] / np.linalg.norm(b[0])
    u = a[0] - (a[0] @ e_b) * e_b
    e_a = u / np.linalg.norm(u)
    proj = (t[0] @ e_a) * e_a + (t[0] @ e_b) * e_b
    angle = lambda x, y: math.degrees(math.acos(x @ y / np.linalg.norm(x) / np.linalg.norm(y)))
    p = C.projection(a, b, t)
    assert p["angle_pa"][0] == pytest.approx(angle(proj, a[0]))
    assert p["angle_pb"][0] == pytest.approx(angle(proj, b[0]))
    assert p["norm_p"][0] == pytest.approx(np.linalg.norm(proj))


def test_parallel_inputs_have_no_plane():
    p = C.projection(np.array([[1.0, 2, 3]]), np.array([[2.0, 4, 6]]), np.array([[1.0, 0, 0]]))
    assert np.isnan(p["angle_pa"][0]) and np.isnan(p["angle_ab"][0])
    p = C.projection(np.array([[1.0, 0, 0]]), np.array([[0.0, 1, 0]]), np.array([[0.0, 0, 1]]))  # p = 0
    assert np.isnan(p["angle_pa"][0]) and p["angle_ab"][0] == pytest.approx(90)


# ---- the epsilon grid ---------------------------------------------------------------------------------
def test_closed_form_equals_a_fine_explicit_grid():
    rng = np.random.default_rng(2)
    d1, d2 = rng.normal(0.1, 0.2, 300), rng.normal(-0.05, 0.1, 300)
    b1, b2 = (d1.min(), d1.max()), (d2.min(), d2.max())
    closed = {k: v.mean() for k, v in T.case_values(d1, d2, b1, b2).items()}
    fine = T.explicit_grid_shares(d1, d2, b1, b2, bins=10, points=201)
    coarse = T.explicit_grid_shares(d1, d2, b1, b2, bins=10, points=11)  # the reference code's 10 x 10 x 11
    for case in T.CASES:
        assert closed[case] == pytest.approx(fine[case], abs=2e-3)
        assert closed[case] == pytest.approx(coarse[case], abs=2e-2)
    assert sum(closed.values()) == pytest.approx(1.0)


def test_grid_share_by_hand():
    np.testing.assert_allclose(T.grid_share(np.array([-1, 0, 0.25, 1, 2]), 0.0, 1.0), [0, 0, 0.25, 1, 1])
    np.testing.assert_allclose(T.grid_share(np.array([0.4, 0.5, 0.6]), 0.5, 0.5), [0, 1, 1])  # degenerate bounds
    v = T.case_values(np.array([0.75]), np.array([0.5]), (0, 1), (0, 1))
    assert (v["T,T"][0], v["T,F"][0], v["F,T"][0], v["F,F"][0]) == pytest.approx((0.375, 0.375, 0.125, 0.125))


def frame(operator, rows, sample_ids=None, measures=("cosine", "l2")):
    """A measures frame with the given per-row values {column: [...]}."""
    n = len(next(iter(rows.values())))
    data = {"op_id": list(range(n)), "sample_id": sample_ids or list(range(n)), "operator": [operator] * n,
            "variant": ["v"] * n}
    for c in C.columns(measures):
        data[c] = rows.get(c, [float("nan")] * n)
    return pl.DataFrame(data, schema_overrides={"sample_id": pl.UInt64, "op_id": pl.UInt64})


def test_c1_and_c3_differences_and_flipped_inequalities():
    # overlap: sim(A,O) = 0.8, sim(B,O) = 0.7, sim(A,B) = 0.5 -> both differences positive (C1 met)
    f = frame("overlap", {"cosine_at": [0.8], "cosine_bt": [0.7], "cosine_ab": [0.5],
                          "l2_at": [0.2], "l2_bt": [0.3], "l2_ab": [0.9]})
    d1, d2 = T.differences(f, "c1", "cosine")
    assert (d1[0], d2[0]) == pytest.approx((0.3, 0.2))
    # distances: O closer to A and B than A to B is C1 met too: the differences are negated
    d1, d2 = T.differences(f, "c1", "l2")
    assert (d1[0], d2[0]) == pytest.approx((0.7, 0.6))
    # difference: sim(A,D) - sim(B,D) and sim(A,B) - sim(B,D)
    f = frame("difference", {"cosine_at": [0.6], "cosine_bt": [0.1], "cosine_ab": [0.4], "cosine_dt": [0.7],
                             "cosine_db": [-0.2], "l2_at": [1.0], "l2_bt": [3.0], "l2_ab": [2.0], "l2_dt": [1.0],
                             "l2_db": [4.0]})
    d1, d2 = T.differences(f, "c3", "cosine")
    assert (d1[0], d2[0]) == pytest.approx((0.5, 0.3))
    d1, d2 = T.differences(f, "c3", "l2")
    assert (d1[0], d2[0]) == pytest.approx((2.0, 1.0))  # -(1 - 3), -(2 - 3)
    (d,) = T.differences(f, "c4", "cosine")
    assert d[0] == pytest.approx(0.9)
    (d,) = T.differences(f, "c4", "l2")
    assert d[0] == pytest.approx(3.0)


def test_pooled_bounds_span_every_model_and_change_the_share():
    f1 = frame("overlap", {"cosine_at": [0.8, 0.6], "cosine_bt": [0.7, 0.6], "cosine_ab": [0.5, 0.5]})
    f2 = frame("overlap", {"cosine_at": [0.1, 0.9], "cosine_bt": [0.4, 0.2], "cosine_ab": [0.5, 0.1]})
    b = T.pooled_bounds({"m1": f1, "m2": f2}, "c1", "cosine")
    assert b[0] == pytest.approx((-0.4, 0.8)) and b[1] == pytest.approx((-0.1, 0.2))
    alone = T.pooled_bounds({"m1": f1}, "c1", "cosine")
    assert alone[0] == pytest.approx((0.1, 0.3))
    base = {"sampleset": "s", "model": "m1", "generator": "g", "prompt": "p", "filter": "f"}
    pooled = {r["case"]: r["share"] for r in T.epsilon_rows(base, f1, "c1", "cosine", b, "pooled", 0, 1)}
    own = {r["case"]: r["share"] for r in T.epsilon_rows(base, f1, "c1", "cosine", alone, "pooled", 0, 1)}
    assert pooled["T,T"] != pytest.approx(own["T,T"])  # a model's share depends on the study (methods.md)
    # by hand, pooled: sample 1: d = (0.3, 0.2), p1 = (0.3 + 0.4)/1.2, p2 = (0.2 + 0.1)/0.3 = 1;
    # sample 2: d = (0.1, 0.1), p1 = 0.5/1.2, p2 = 0.2/0.3
    assert pooled["T,T"] == pytest.approx(np.mean([0.7 / 1.2 * 1.0, 0.5 / 1.2 * (2 / 3)]))


def test_shares_have_intervals_and_rerun_identically():
    rng = np.random.default_rng(3)
    n = 60
    f = frame("overlap", {"cosine_at": list(rng.random(n)), "cosine_bt": list(rng.random(n)),
                          "cosine_ab": list(rng.random(n))})
    b = T.pooled_bounds({"m": f}, "c1", "cosine")
    base = {"sampleset": "s", "model": "m", "generator": "g", "prompt": "p", "filter": "f"}
    rows = T.epsilon_rows(base, f, "c1", "cosine", b, "pooled", 300, 7)
    again = T.epsilon_rows(base, f, "c1", "cosine", b, "pooled", 300, 7)
    assert rows == again
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)
    for r in rows:
        assert r["ci_low"] <= r["share"] <= r["ci_high"] and r["ci_high"] - r["ci_low"] > 0


def test_cluster_bootstrap_resamples_samples_not_rows():
    # two samples with 3 rows each: all of one sample's rows are 1, the other's 0. Resampling rows
    # would give intervals of shares like 1/6 steps; resampling samples gives 0, 0.5 or 1 only.
    values = {"x": np.array([1, 1, 1, 0, 0, 0], float)}
    groups = np.array([5, 5, 5, 9, 9, 9])
    est, low, high = T.cluster_shares(values, groups, 500, 1, "t")["x"]
    assert est == 0.5 and low == 0.0 and high == 1.0


def test_geometry_criteria_by_hand():
    # C2: a middle sample (45 + 45 = 90) and an outside one (45 + 135 != 90)
    f = frame("overlap", {"angle_ab": [90.0, 90.0], "angle_pa": [45.0, 45.0], "angle_pb": [45.0, 135.0]})
    np.testing.assert_array_equal(T.in_middle(f, 1.0), [1.0, 0.0])
    settings = {**T.DEFAULT_SETTINGS, "bootstrap_b": 0}
    base = {"sampleset": "s", "model": "m", "generator": "g", "prompt": "p", "filter": "f"}
    union = frame("union", {"angle_ab": [80.0, 80.0, 80.0, 80.0], "angle_pa": [10.0, 40.0, 70.0, 40.0],
                            "angle_pb": [70.0, 40.0, 10.0, 40.0], "norm_ratio": [2.0, 1.0, 0.5, 2.0]})
    diff = frame("difference", {"angle_ab": [40.0, 40.0], "angle_pa": [5.0, 30.0], "angle_pb": [35.0, 10.0]})
    rows = T.geometry_rows(base, pl.concat([f, union, diff]), settings, 0, 1)
    by = {(r["criterion"], r["case"]): r for r in rows}
    assert by[("c2", "middle")]["share"] == 0.5
    # C5: 5/40 = 0.125 <= 0.25 passes, 30/40 fails
    assert by[("c5", "near_a")]["share"] == 0.5
    # C6: ratio 2 -> near A expected: 10/80 passes, 40/80 fails; ratio 1 -> middle: passes; ratio 0.5 -> near B
    assert (by[("c6", "a_larger")]["share"], by[("c6", "a_larger")]["n"]) == (0.5, 2)
    assert (by[("c6", "comparable")]["share"], by[("c6", "b_larger")]["share"]) == (1.0, 1.0)
    assert by[("c6", "all")]["share"] == 0.75
    settings["c5"] = {"theta": 6.0, "unit": "degrees"}
    rows = T.geometry_rows(base, pl.concat([f, union, diff]), settings, 0, 1)
    assert {(r["criterion"], r["case"]): r for r in rows}[("c5", "near_a")]["share"] == 0.5


# ---- operator samples and the filter -----------------------------------------------------------------
SAMPLE = {"sample_id": 1, "previous": "P.", "S0": "Zero.", "next": "N.", "S1": "F12.", "S2": "F23."}


def test_operator_samples_follow_the_paper():
    rows = O.operator_rows(pl.DataFrame([SAMPLE], schema_overrides={"sample_id": pl.UInt64}))
    got = [(r["operator"], r["a"], r["b"], r["t"]) for r in rows.iter_rows(named=True)]
    assert got == [("overlap", "F12.", "F23.", "Zero."),
                   ("union", "P.", "Zero.", "F12."), ("union", "Zero.", "N.", "F23."),
                   ("difference", "F12.", "P.", "Zero."), ("difference", "F12.", "Zero.", "P."),
                   ("difference", "F12.", "F23.", "P."), ("difference", "F23.", "Zero.", "N."),
                   ("difference", "F23.", "N.", "Zero."), ("difference", "F23.", "F12.", "N.")]
    assert rows["op_id"].n_unique() == 9


def test_filter_rules():
    cos = np.array([[0.1, 0.3], [0.1, 0.2], [0.5, 0.6], [np.nan, 0.1]])
    np.testing.assert_array_equal(O.keep_mask(cos, 0.25, "all"), [False, True, False, False])
    np.testing.assert_array_equal(O.keep_mask(cos, 0.25, "any"), [True, True, False, True])
    np.testing.assert_array_equal(O.keep_mask(cos, 0.25, "mean"), [True, True, False, True])
    np.testing.assert_array_equal(O.keep_mask(np.zeros((3, 0)), 0.25, "all"), [True] * 3)  # no encoders: off


# ---- echoes ----------------------------------------------------------------------------------------
A = "Council officials said the ferry can carry 250 passengers on each trip."
B = "Its batteries are charged at the northern pier."


@pytest.mark.parametrize("fusion,reason", [
    ("", "empty"),
    ("...", "empty"),
    (A, "repeat"),
    ("The ferry can carry 250 passengers on each trip.", "repeat"),
    (A + " " + B, "concatenation"),
    (A[:-1] + ", and its batteries are charged at the northern pier.", "concatenation"),
    (B[:-1] + " while " + A[0].lower() + A[1:], "concatenation"),
    ("Carrying 250 passengers a trip, the ferry recharges its batteries at the northern pier.", None),
])
def test_echo_rule(fusion, reason):
    assert S.echo_reason(fusion, A, B) == reason


def test_prompt_copy():
    prompt = DEFAULT_PROMPTS["fuse_fewshot"]
    grams = S.prompt_trigrams(prompt)
    first, second = "Homes in the lower town were flooded twice.", "Insurers had stopped offering cover there."
    copied = "The city orchestra's lower town was flooded twice, so insurers stopped offering cover."
    assert S.echo_reason(copied, first, second, prompt_grams=grams) == "prompt_copy"
    fused = "After the lower town flooded twice, insurers stopped offering cover there."
    assert S.echo_reason(fused, first, second, prompt_grams=grams) is None
    # words of the prompt that an input has too are no copy
    assert S.echo_reason("Police who stopped a van found the stolen bikes", "Police stopped a van.",
                         "Police who stopped a van found the stolen bikes.", prompt_grams=grams) != "prompt_copy"


def test_unfinished_fusion_is_an_echo():
    assert S.echo_reason("The ferry, charged at the pier, carries", A, B, finished=False) == "unfinished"


# ---- windows ----------------------------------------------------------------------------------------
def test_windows_drop_equal_neighbours_and_lengths():
    from collections import Counter
    s = ["One two three four.", "One two three four!", "Five six seven eight.", "Nine ten eleven twelve.",
         "Short.", "Thirteen fourteen fifteen sixteen."]
    counts = Counter()
    assert S.candidate_windows(s, 3, 10, counts) == [2]
    # window 1 has equal neighbours (after keeping alphanumerics), 3 and 4 hold a one-word sentence
    assert counts == {"windows_dropped_equal_sentences": 1, "windows_dropped_length": 2}


def write_articles(tmp_path, n=12, sentences=8):
    from workflow_scripts import articles as art
    rows = []
    for i in range(n):
        sents = [f"Article {i} sentence {j} has some words in it." for j in range(sentences)]
        rows.append({"article_id": art.article_id(f"doc{i}"), "doc_id": f"doc{i}", "article": " ".join(sents),
                     "highlights": "", "sentences": sents, "n_sentences": sentences})
    d = tmp_path / "articles"
    d.mkdir()
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.Table.from_pylist(rows, schema=art.SCHEMA), d / "part-00000.parquet")
    return d


def test_window_choice_is_seeded_and_order_free(tmp_path, log):
    d = write_articles(tmp_path)
    spec = {**S.DEFAULT_SET, "max_articles": 5, "windows_per_article": 2}
    w1, counts = S.choose_windows(str(d), "news", spec, 13, log)
    w2, _ = S.choose_windows(str(d), "news", spec, 13, log)
    assert w1 == w2 and len(w1) == 10 and counts["articles_chosen"] == 5
    w3, _ = S.choose_windows(str(d), "news", spec, 14, log)
    assert w3 != w1
    # the same articles in another order give the same choice
    import pyarrow.parquet as pq
    t = pq.read_table(d / "part-00000.parquet")
    pq.write_table(t.take(list(reversed(range(t.num_rows)))), d / "part-00000.parquet")
    w4, _ = S.choose_windows(str(d), "news", spec, 13, log)
    assert sorted(map(json.dumps, w4)) == sorted(map(json.dumps, w1))
    assert all(1 <= w["window"] <= 6 for w in w1)


class FakeGenerator:
    """A generator that fuses by template: no model, for the sample builder's logic."""

    def __init__(self, echo_every=3):
        self.stats = {"generated": 0, "cached": 0, "seconds": 0.0}
        self.echo_every = echo_every

    def generate_records(self, prompt, items):
        out = []
        for i, it in enumerate(items):
            text = it["first"] + " " + it["second"] if i % self.echo_every == 0 else \
                f"Fused: {it['first'].split()[1]} with {it['second'].split()[3]} and more."
            out.append({"text": text, "raw": text, "finished": True, "cached": False})
        self.stats["generated"] += len(items)
        return out

    def describe(self):
        return {"fake": True}


def test_build_keeps_echoes_out_and_counts_them(tmp_path, log):
    d = write_articles(tmp_path, n=4)
    spec = {"articles": "x", "windows_per_article": 3, "gate": {"enabled": False}}  # the echo rule alone
    frame, report = S.build("news", spec, 13, str(d), "fake", {"name": "fake"}, {"user": "{first} {second}"}, "cpu",
                            None, log, generator=FakeGenerator())
    c = report["counts"]
    assert c["windows_chosen"] == 12 and c["fusions_requested"] == 24
    assert c["fusions_echo_concatenation"] == 8 and c["fusions_ok"] == 16
    assert frame.height == c["samples"] == 12 - c["windows_rejected_echo"]
    assert frame["s1_echo"].null_count() == frame.height
    assert set(frame["generator"]) == {S.generator_label("fake", {"name": "fake"})}
    assert json.loads(frame["prompt"][0]) == {"user": "{first} {second}"}
    kept, _ = S.build("news", {**spec, "keep_echoes": True}, 13, str(d), "fake", {"name": "fake"},
                      {"user": "{first} {second}"}, "cpu", None, log, generator=FakeGenerator())
    assert kept.height == 12 and kept["s1_echo"].null_count() + kept["s2_echo"].null_count() == 16


def test_import_samples(tmp_path, log):
    rows = [dict(previous="A b c d.", S0="E f g h.", next="I j k l.", S1="A b, e f.", S2="E f and i j."),
            dict(previous="A b c d.", S0="E f g h.", next="I j k l.", S1="A b, e f.", S2="E f and i j."),
            dict(previous="", S0="x", next="y", S1="z", S2="w")]
    path = tmp_path / "stab.csv"
    pl.DataFrame(rows).rename({"previous": "prev"}).write_csv(path)
    spec = {"file": str(path), "columns": {"previous": "prev"}, "generator": "gpt-3.5-turbo (paper)"}
    frame, report = S.import_samples("stab", spec, log)
    assert frame.height == 1 and report["counts"]["rows_duplicate"] == 1 and report["counts"]["rows_missing_text"] == 1
    assert frame["generator"][0] == "gpt-3.5-turbo (paper)" and frame["prompt"][0] == "unknown"
    with pytest.raises(ValueError, match="no column"):
        S.import_samples("stab", {"file": str(path)}, log)


def test_fixed_bounds_replace_the_pooled_ones_and_say_so():
    f = frame("overlap", {"cosine_at": [0.8, 0.6], "cosine_bt": [0.7, 0.6], "cosine_ab": [0.5, 0.5]})
    settings = {**T.DEFAULT_SETTINGS, "fixed_bounds": {"c1": {"cosine": [[-1.0, 1.0], [-1.0, 1.0]]},
                                                       "c4": {"l2": [0.0, 2.0]}}}
    assert T.bounds_for(settings, {"m": f}, "c1", "cosine", "m") == ([(-1.0, 1.0), (-1.0, 1.0)], "fixed")
    assert T.bounds_for(settings, {"m": f}, "c4", "l2", "m") == ([(0.0, 2.0)], "fixed")
    assert T.bounds_for(settings, {"m": f}, "c1", "l2", "m")[1] == "own"
    assert T.bounds_for({**settings, "bounds": "pooled"}, {"m": f}, "c1", "l2", "m")[1] == "pooled"
    base = {"sampleset": "s", "model": "m", "generator": "g", "prompt": "p", "filter": "f"}
    rows = T.epsilon_rows(base, f, "c1", "cosine", [(-1.0, 1.0), (-1.0, 1.0)], "fixed", 0, 1)
    tt = next(r for r in rows if r["case"] == "T,T")
    # d = (0.3, 0.2) and (0.1, 0.1): P = (d + 1) / 2
    assert tt["share"] == pytest.approx(np.mean([0.65 * 0.6, 0.55 * 0.55])) and tt["bounds"] == "fixed"
    assert (tt["bound1_low"], tt["bound2_high"]) == (-1.0, 1.0)


# ---- the quality gate and news-text cleaning (issue 27) ----

GATE_CASES = [
    # a real fusion (the prompt's own shot): keeps both inputs, adds nothing, restructures
    ("Police who stopped a lorry near Carlow on Friday found 300 stolen bicycles inside.",
     "Police stopped a lorry on the motorway near Carlow on Friday.", "Officers found 300 stolen bicycles inside it.", []),
    # a concatenation that escapes the echo rule by changing "we" to "you" and joining with "and":
    # 3 word edits (2 substitutions, 1 insertion) over 18 input words = 0.17 <= 0.25
    ("You will open the new bridge to traffic next week and you expect heavy queues on the first day.",
     "We will open the new bridge to traffic next week.", "We expect heavy queues on the first day.",
     ["near_concatenation"]),
    # the second input's information is gone: 1 of its 4 content words (queue) kept
    ("The new bridge opens to traffic next week amid queues.",
     "The new bridge opens to traffic next week.", "Drivers expect heavy queues on the first day.",
     ["source_dropped"]),
    # content words in neither input: wife, becki, sex, life of 8 content words (0.5 > 0.3)
    ("Wife Becki, who has a sex life, lowered the hormone injections in March.",
     "His hormone injections were lowered in March.", "The doctor lowered the injections again in May.",
     ["hallucination"]),
]


@pytest.mark.parametrize("fusion, first, second, expected", GATE_CASES)
def test_gate_rules(fusion, first, second, expected):
    assert S.echo_reason(fusion, first, second) is None  # past the echo rule
    measures = S.gate_measures(fusion, first, second)
    assert S.gate_reasons(measures, S.GATE_DEFAULTS) == expected


def test_gate_measures_by_hand():
    m = S.gate_measures("Ferry crews strike.", "Ferry crews will strike on Monday.", "Buses run.")
    # content words: first {ferry, crew, strike, monday}, second {bus, run}; the fusion {ferry, crew, strike}
    assert m["kept_first"] == 3 / 4 and m["kept_second"] == 0 and m["new_share"] == 0
    assert m["length_longer"] == 3 / 6 and m["length_both"] == 3 / 8
    assert S.gate_reasons(m, S.GATE_DEFAULTS) == ["source_dropped", "too_short"]
    assert S.word_edits("a b c".split(), "a x c d".split()) == 2
    long = S.gate_measures(" ".join(["ferry crews strike"] * 5), "Ferry crews strike.", "Crews strike.")
    assert "too_long" in S.gate_reasons(long, S.GATE_DEFAULTS)


def test_gate_rejects_like_an_echo_and_counts(tmp_path, log):
    d = write_articles(tmp_path, n=4)
    spec = {"articles": "x", "windows_per_article": 3}
    frame, report = S.build("news", spec, 13, str(d), "fake", {"name": "fake"}, {"user": "{first} {second}"}, "cpu",
                            None, log, generator=FakeGenerator())
    c = report["counts"]
    # the fake's non-echo fusions ("Fused: N with has and more.") drop an input and add words
    assert c["fusions_ok"] == 16 == c["fusions_rejected_gate"] and c.get("fusions_accepted", 0) == 0
    assert c["fusions_gate_source_dropped"] == 16 and report["gate_rejected"]["source_dropped"] == 16
    assert frame.height == 0 and c["windows_rejected_gate"] + c["windows_rejected_echo"] == 12
    page = report["fusion_page"]
    assert len(page) == 10 and all(r["status"] != "accepted" for r in page)
    again = S.build("news", spec, 13, str(d), "fake", {"name": "fake"}, {"user": "{first} {second}"}, "cpu",
                    None, log, generator=FakeGenerator())[1]["fusion_page"]
    assert again == page  # a seeded choice
    # the set is empty: its samples job stops, naming the set, the counts per rule and what to change
    with pytest.raises(S.EmptySampleSet) as err:
        S.require_samples("news", report)
    message = str(err.value)
    assert "sample set 'news' (settheory.datasets.news)" in message and "24 fusions" in message
    assert "'source_dropped': 16" in message and "'concatenation': 8" in message
    assert "keep_echoes: true" in message and "settheory.datasets.news.gate" in message and "generator" in message
    kept = S.build("news", {**spec, "keep_echoes": True}, 13, str(d), "fake", {"name": "fake"},
                   {"user": "{first} {second}"}, "cpu", None, log, generator=FakeGenerator())[1]
    S.require_samples("news", kept)  # flagged, not dropped: no stop


def test_clean_news_sentences_by_hand():
    from workflow_scripts.articles import clean_news_sentences
    sents = ["By .", "Daily Mail Reporter .", "His hormone injections have lowered his .", "sex drive, doctors say .",
             "The couple married in 2009 .", "She said the . treatment had worked.", "Pictured: the couple at home",
             "The drama began when he .", "Ok."]
    out, counts = clean_news_sentences(sents)
    assert out == [None, "Daily Mail Reporter.", "His hormone injections have lowered his sex drive, doctors say.",
                   "The couple married in 2009.", "She said the treatment had worked.", None, None, None]
    # repaired: every " ." made "." (By, Reporter, the joined one, 2009, when he) and the " . " inside
    assert counts["sentences_joined"] == 1 and counts["sentences_repaired"] == 6
    assert counts["sentences_fragment_metadata"] == 1 and counts["sentences_fragment_no_terminal"] == 1
    assert counts["sentences_fragment_dangling_end"] == 1 and counts["sentences_fragment_short"] == 1


@requires_shared("cnn_dailymail/cnn_dailymail_sample.jsonl", "nltk_data")
def test_clean_news_sentences_on_real_dailymail_articles():
    """The shared CNN/DM sample's DailyMail train articles (the Hugging Face export, with the line-break
    artefacts; its FRANK test copies have none): no " . " before a lower-case word survives, no " ." at
    an end, joins and byline fragments are found, and most sentences stay."""
    from workflow_scripts.articles import SentenceSplitter, clean_news_sentences
    splitter = SentenceSplitter()
    rows = [json.loads(line) for line in open(shared_data("cnn_dailymail", "cnn_dailymail_sample.jsonl"))]
    totals = {"dailymail": Counter(), "cnn": Counter()}
    for row in [r for r in rows if r["split"] == "train"]:
        sentences = splitter([p for p in row["article"].splitlines() if p.strip()])
        out, counts = clean_news_sentences(sentences)
        totals[row["source"]].update(counts)
        totals[row["source"]]["sentences"] += len(sentences)
        kept = [s for s in out if s]
        assert not [s for s in kept if re.search(r" \. [a-z]", s)]
        assert not [s for s in kept if s.endswith(" .")]
        assert len(out) == len(sentences) - counts["sentences_joined"]
    dm = totals["dailymail"]
    assert dm["sentences_joined"] > 100 and dm["sentences_fragment_metadata"] > 20
    fragments = lambda c: sum(v for k, v in c.items() if k.startswith("sentences_fragment_"))
    assert 0.02 < fragments(dm) / dm["sentences"] < 0.25  # some, but most sentences stay


def test_the_gate_survives_a_huge_fusion():
    """NLTK's edit distance is quadratic: a fusion of 300,000 words must not reach it."""
    huge = "The ferry left the harbour. " * 60_000
    measures = S.gate_measures(huge, "The ferry left.", "It was noon.")
    assert measures["edit_share"] > 2 and "too_long" in S.gate_reasons(measures, S.GATE_DEFAULTS)
    assert "near_concatenation" not in S.gate_reasons(measures, {**S.GATE_DEFAULTS, "max_edit_share": 2})


class OverLongGenerator(FakeGenerator):
    """Every other fusion past the generator's max_answer_chars (ChatAPIGenerator's `too_long`)."""

    def generate_records(self, prompt, items):
        out = super().generate_records(prompt, items)
        for i, rec in enumerate(out):
            if i % 2:
                rec.update(text="x " * 2000, raw="x " * 2000, too_long=True)
        return out


@pytest.mark.parametrize("gate", [{}, {"enabled": False}])
def test_an_over_long_fusion_is_a_gate_rejection(tmp_path, log, gate):
    d = write_articles(tmp_path, n=2)
    spec = {"articles": "x", "windows_per_article": 2, "gate": gate, "keep_echoes": True}
    frame, report = S.build("news", spec, 13, str(d), "fake", {"name": "fake"}, {"user": "{first} {second}"}, "cpu",
                            None, log, generator=OverLongGenerator(echo_every=1000))
    c = report["counts"]
    assert c["fusions_over_max_answer_chars"] == 4 == c["fusions_gate_too_long"] == report["gate_rejected"]["too_long"]
    assert c["fusions_rejected_gate"] >= 4
    flags = frame["s1_echo"].to_list() + frame["s2_echo"].to_list()
    assert flags.count("too_long") == 4


def test_the_gate_survives_long_imported_sentences():
    """Inputs of an imported table are not bounded by max_words: past NLTK's 2000-word limit too."""
    first, second = "ferry " * 1500, "harbour " * 1500
    measures = S.gate_measures(first + second + "noon", first, second)
    assert measures["edit_share"] < 0.01 and measures["length_both"] > 1


def test_a_models_c3_share_depends_on_no_other_model_with_its_own_bounds():
    """Issue 43, point 6: with the reference's pooled bounds a model's C3 (T,T) share moves when
    another model of another scale joins the study (here one whose differences span 10x the range);
    with `bounds: own` (the default) it does not, and it is unchanged by an affine rescaling of the
    model's own similarities (its ranks of the differences decide it)."""
    rng = np.random.default_rng(0)
    ad, bd, ab = rng.uniform(0.4, 0.9, 30), rng.uniform(0.1, 0.5, 30), rng.uniform(0.3, 0.8, 30)
    a = frame("difference", {"cosine_at": ad, "cosine_bt": bd, "cosine_ab": ab})
    wide = frame("difference", {"cosine_at": ad * 10, "cosine_bt": bd * 10, "cosine_ab": ab * 10})
    scaled = frame("difference", {"cosine_at": 2 * ad + 1, "cosine_bt": 2 * bd + 1, "cosine_ab": 2 * ab + 1})
    base = {"sampleset": "s", "model": "a", "generator": "g", "prompt": "p", "filter": "f"}

    def share(frames, settings, model_frame=a):
        bounds, kind = T.bounds_for({**T.DEFAULT_SETTINGS, **settings}, frames, "c3", "cosine", "a")
        rows = T.epsilon_rows(base, model_frame, "c3", "cosine", bounds, kind, 0, 1)
        return next(r["share"] for r in rows if r["case"] == "T,T"), kind
    alone, kind = share({"a": a}, {})
    assert kind == "own" and share({"a": a, "w": wide}, {}) == (alone, "own")
    assert share({"a": scaled}, {}, scaled)[0] == pytest.approx(alone)
    pooled_alone, _ = share({"a": a}, {"bounds": "pooled"})
    pooled_with_wide, kind = share({"a": a, "w": wide}, {"bounds": "pooled"})
    assert kind == "pooled" and pooled_alone == pytest.approx(alone) and abs(pooled_with_wide - alone) > 0.05


def test_the_filter_refuses_a_compared_model_or_its_copy():
    """Fails on e572c58, whose default filtered the samples by MiniLM's own cos(B, D) while comparing
    MiniLM: a filter encoder must be outside the comparison."""
    from workflow_scripts.settheory.probe import filter_problems
    st = {"filter": {"encoders": ["minilm"]}}
    models = {"minilm": {"family": "sentence_transformers", "name": "x"},
              "copy": {"family": "sentence_transformers", "name": "x", "probes": ["csc"], "batch_size": 8},
              "outside": {"family": "tfidf", "preset": "paper", "probes": ["csc"]}}
    assert "'minilm' is compared on settheory" in filter_problems({"models": models, "settheory": st})[0]
    copy = filter_problems({"models": models, "settheory": {"filter": {"encoders": ["copy"]}}})
    assert "'copy' gives the vectors of 'minilm', which is compared" in copy[0]
    assert filter_problems({"models": models, "settheory": {"filter": {"encoders": ["outside"]}}}) == []
    assert filter_problems({"models": models, "settheory": {"filter": {"encoders": []}}}) == []
