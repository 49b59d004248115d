"""Independent units of the triplet datasets (issue 43, point 4): triplets built from SICK or MSRP
pairs are clustered by the connected components of the pair graph, and n, the interval and the
exact test follow the clusters."""
import numpy as np
import polars as pl
import pytest

from workflow_scripts.triplets import scores as ts
from workflow_scripts.triplets import sources as S

SICK_HEADER = "pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\n"


def sick_file(path, pairs):
    path.write_text(SICK_HEADER + "".join(f"{i}\t{a}\t{b}\tNEUTRAL\t3.0\n" for i, (a, b) in enumerate(pairs, 1)))
    return {"format": "sick", "file": str(path)}


def test_pair_graph_components_by_hand(tmp_path):
    """Pairs A-B, B-C (a chain), D-E, and F-F: {A, B, C}, {D, E}, {F}. The labels are the same for
    every text of a component, differ between components and do not depend on the file's order."""
    pairs = [("A man walks", "A man is walking"), ("A man is walking", "A person walks"),
             ("A dog runs", "A dog is running"), ("A cat sleeps", "A cat sleeps")]
    labels = S.pair_components([sick_file(tmp_path / "s.txt", pairs)])
    assert labels["A man walks"] == labels["A man is walking"] == labels["A person walks"]
    assert labels["A dog runs"] == labels["A dog is running"] != labels["A man walks"]
    assert len(set(labels.values())) == 3 and all(v.startswith("pairs:") for v in labels.values())
    reordered = S.pair_components([sick_file(tmp_path / "r.txt", pairs[::-1])])
    assert reordered == labels
    # an MSRP file joins the same graph: a paraphrase of "A dog runs" joins its component
    msrp = tmp_path / "m.txt"
    msrp.write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tA dog runs\tThe dog is running fast\n")
    both = S.pair_components([sick_file(tmp_path / "s.txt", pairs), {"format": "msrp", "file": str(msrp)}])
    assert both["The dog is running fast"] == both["A dog is running"]


def test_the_two_sentences_of_a_pair_are_one_unit_for_n_the_interval_and_the_test(tmp_path, log):
    """Fails on e572c58, where every original sentence was its own unit: 8 triplets from 4 SICK pairs
    (both sentences of each pair an original) count 4 units; the accuracy's interval is Wilson over
    4, and two models differing on a pair's two triplets together are tested by the sign flip over
    the pairs (d = 2 on one cluster: p = 1), not by McNemar over 8 independent triplets."""
    from workflow_scripts import differences
    from workflow_scripts.bootstrap import write_replicates
    from workflow_scripts.paired_statistics import wilson_interval
    clusters = [f"pairs:{i // 2}" for i in range(8)]
    right_a = [True, True, False, False, True, False, True, True]
    right_b = [False, False, False, False, True, False, True, True]
    paths, parts, outcomes = {}, [], []
    for model, right in (("a", right_a), ("b", right_b)):
        sims = np.where(np.array(right)[:, None], [0.9, 0.5, 0.6], [0.5, 0.9, 0.4])
        path = tmp_path / f"{model}.parquet"
        pl.DataFrame({"id": pl.Series(range(8), dtype=pl.UInt64), "sim_s_splus": sims[:, 0],
                      "sim_s_sstar": sims[:, 1], "sim_splus_sstar": sims[:, 2],
                      "correct": pl.Series(right, dtype=pl.Boolean), "subject": [None] * 8, "verb": [None] * 8,
                      "cluster": clusters}, schema_overrides={"subject": pl.String, "verb": pl.String}).write_parquet(path)
        paths[model] = str(path)
        outcomes.append({"dataset": "d", "statistic": "accuracy", "model": model, "path": str(path),
                         "cluster": "cluster"})
    table = ts.aggregate([{"dataset": "d", "model": m, "scores": p, "scoring": "strict"} for m, p in paths.items()],
                         200, 1, log, parts)
    row = table.filter(pl.col("model") == "a").row(0, named=True)
    assert (row["unit"], row["n_units"], row["n"]) == ("pair clusters", 4, 8)
    assert (row["accuracy_ci_low"], row["accuracy_ci_high"]) == pytest.approx(wilson_interval(5 / 8, 4))
    write_replicates(tmp_path / "r.parquet", parts)
    diffs = differences.build("triplets", [str(tmp_path / "r.parquet")], {"a": {"family": "tfidf"},
                              "b": {"family": "surface_form"}}, {}, str(tmp_path / "d.csv"), outcomes=outcomes)
    test = diffs.filter(pl.col("statistic") == "accuracy").row(0, named=True)
    assert (test["test"], test["discordant_b"], test["discordant_c"]) == ("sign_flip_exact", 2, 0)
    assert test["p_value"] == 1.0  # one cluster of +2: the signs +-2 reach |2| always; McNemar would say 0.5
    assert test["units"] == 4
