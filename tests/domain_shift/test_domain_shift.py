"""The domain-shift probe: its texts, its three similarity distributions, densities and overlaps (the
CSC machinery), intervals by resampling texts, and the side-by-side and correlation tables."""
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from workflow_scripts.density import binned_density, exact_density, make_grid, normalise, overlap
from workflow_scripts.domain_shift import scores as S
from workflow_scripts.domain_shift.texts import build

SETTINGS = {"grid_step": 0.001, "exact_kde_max_n": 20000, "bootstrap_b": 50}


def test_pair_similarities_are_every_pair_once_with_hand_cosines():
    spec = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    agn = np.array([[1.0, 0.0], [-1.0, 0.0], [0.8, 0.6], [0.0, -1.0]])
    sims = S.pair_similarities(spec, agn)
    assert {k: len(v[0]) for k, v in sims.items()} == {"within_specific": 3, "within_agnostic": 6, "between": 12}
    values, i, j = sims["within_specific"]
    assert dict(zip(zip(i.tolist(), j.tolist()), values.round(6).tolist())) == {(0, 1): 0.0, (0, 2): 0.6, (1, 2): 0.8}
    values, i, j = sims["between"]  # agnostic texts are indexed after the specific ones
    assert set(j.tolist()) == {3, 4, 5, 6} and values[(i == 2) & (j == 5)][0] == pytest.approx(0.96)


def test_unweighted_replicate_is_the_binned_density_of_the_sample():
    rng = np.random.default_rng(0)
    values = rng.normal(0.3, 0.1, 500)
    rep = S.replicate_densities(values, np.ones((1, 500)), 0.001)[0]
    assert np.allclose(rep, normalise(binned_density(values, 0.001)), atol=1e-12)
    # and the binned estimator is the exact KDE to within what the CSC tests require (1e-4 in overlap)
    exact = normalise(exact_density(values, make_grid(0.001)))
    assert abs(overlap(rep, exact) - 1.0) < 1e-4


def _groups(n_spec, n_agn):
    return np.array(["specific"] * n_spec + ["agnostic"] * n_agn)


def test_separated_distributions_overlap_little_and_identical_ones_fully():
    rng = np.random.default_rng(1)
    spec = rng.normal(size=(30, 8)) + 4.0 * np.eye(8)[0]  # a shared direction: high cosines within
    agn = rng.normal(size=(30, 8))
    unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
    sims = S.pair_similarities(unit(spec), unit(agn))
    summary, curves = S.analyse(sims, 60, _groups(30, 30), SETTINGS, 7, "d", "m")
    comp = {(c["a"], c["b"]): c for c in summary["comparisons"]}
    sb = comp[("within_specific", "between")]
    assert sb["overlap"] < 0.2 and sb["mean_gap"] > 0.5
    assert sb["overlap_ci_low"] <= sb["overlap"] <= sb["overlap_ci_high"]
    assert sb["mean_gap_ci_low"] <= sb["mean_gap"] <= sb["mean_gap_ci_high"]
    d = summary["distributions"]["within_specific"]
    assert d["mean_ci_low"] <= d["mean"] <= d["mean_ci_high"] and d["kde"] == "exact" and d["n_pairs"] == 435
    assert curves.columns == ["grid", *S.DISTRIBUTIONS] and curves["within_specific"].sum() == pytest.approx(1.0)
    # the same vectors on both sides: the two within-distributions are the same sample
    same = S.pair_similarities(unit(agn), unit(agn))
    summary2, _ = S.analyse(same, 60, _groups(30, 30), SETTINGS, 7, "d", "m")
    c = {(x["a"], x["b"]): x for x in summary2["comparisons"]}[("within_specific", "within_agnostic")]
    assert c["overlap"] == pytest.approx(1.0, abs=1e-12)
    # seeded: the same call gives the same intervals
    again, _ = S.analyse(sims, 60, _groups(30, 30), SETTINGS, 7, "d", "m")
    assert again == summary


def test_undefined_curve_gives_nan_with_the_reason():
    spec = np.tile([[1.0, 0.0]], (3, 1))  # all identical: zero spread
    agn = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    summary, _ = S.analyse(S.pair_similarities(spec, agn), 6, _groups(3, 3), SETTINGS, 1, "d", "m")
    d = summary["distributions"]["within_specific"]
    assert d["kde"] == "undefined" and "zero spread" in d["note"]
    assert np.isnan(summary["comparisons"][0]["overlap"])


def test_build_counts_duplicates_shared_and_bad_lines_and_samples_reproducibly(tmp_path):
    specific = tmp_path / "spec.txt"
    specific.write_text("the gNB sends the RRC message\nthe UE measures the cell\nthe UE measures  the cell\n"
                        "a shared sentence\n\n" + "".join(f"clause {i} of the protocol\n" for i in range(20)))
    general = tmp_path / "general.tsv"
    general.write_text("a shared sentence\tx\nthe cat sleeps\tde kat slaapt\nno tab here\n"
                       + "".join(f"sentence {i} about the weather\tzin\n" for i in range(20)))
    spec = {"specific": [{"file": str(specific)}], "agnostic": [{"file": str(general), "column": 0}], "max_texts": 10}
    paths = {f"file:{specific.name}": str(specific), f"file:{general.name}:0": str(general)}
    frame, report = build("ds", spec, paths, 3)
    counts = report["counts"]
    assert counts["specific:duplicate"] == 1 and counts["in_both_groups_dropped"] == 1
    assert counts[f"file:{specific.name}:empty"] == 1
    assert counts["specific:available"] == 22 and counts["agnostic:available"] == 22  # 23 lines, the shared one dropped
    assert report["texts"] == {"specific": 10, "agnostic": 10}
    assert "a shared sentence" not in frame["text"].to_list()
    again, _ = build("ds", spec, paths, 3)
    assert again.equals(frame)
    other, _ = build("ds", spec, paths, 4)
    assert set(other["text"]) != set(frame["text"])  # the seed draws the sample
    # a missing field is counted, never fatal
    spec["agnostic"][0]["column"] = 1
    _, report = build("ds", spec, {**paths, f"file:{general.name}:1": str(general)}, 3)
    assert report["counts"][f"file:{general.name}:1:missing_field"] == 1


def test_build_job_writes_the_texts_their_partitions_and_the_report(tmp_path):
    """rules/domain_shift.smk's build job: spec and source paths as the objects the plan gives."""
    from workflow_scripts.domain_shift.texts import run_domain_shift_build
    from workflow_scripts.jobs import make_job
    specific, general = tmp_path / "spec.txt", tmp_path / "general.txt"
    specific.write_text("the UE measures the cell\nthe gNB sends a message\nshared line\n")
    general.write_text("the cat sleeps\nshared line\nit rains today\nthe cat sleeps\n")
    spec = {"specific": [{"file": str(specific)}], "agnostic": [{"file": str(general)}]}
    out = tmp_path / "out"
    parts = [str(out / f"part-{p}.parquet") for p in range(2)]
    run_domain_shift_build(make_job(
        input=[str(specific), str(general)], wildcards={"dataset": "ds"},
        output={"texts": str(out / "texts.parquet"), "parts": parts, "report": str(out / "report.json")},
        params={"spec": spec, "paths": {"file:spec.txt": str(specific), "file:general.txt": str(general)}, "seed": 3}))
    frame = pl.read_parquet(out / "texts.parquet")
    # 2 specific, 2 agnostic: "shared line" is in both groups, the second "the cat sleeps" a duplicate
    assert sorted(frame["text"]) == ["it rains today", "the UE measures the cell", "the cat sleeps",
                                     "the gNB sends a message"]
    report = json.loads((out / "report.json").read_text())
    assert report["dataset"] == "ds" and report["texts"] == {"specific": 2, "agnostic": 2}
    assert report["counts"]["in_both_groups_dropped"] == 1 and report["counts"]["agnostic:duplicate"] == 1
    partitioned = pl.concat([pl.read_parquet(p) for p in parts])
    assert sorted(partitioned["text"]) == sorted(frame["text"])
    assert report["partitions"] == {"partitions": 2, "texts": 4, "unique_texts": 4}


def _summary(tmp_path, model, overlap_value, gap):
    s = {"distributions": {d: {"mean": 0.5, "mean_ci_low": 0.4, "mean_ci_high": 0.6, "kde": "exact", "note": ""}
                           for d in S.DISTRIBUTIONS},
         "comparisons": [{"a": a, "b": b, "overlap": overlap_value, "overlap_ci_low": overlap_value - 0.1,
                          "overlap_ci_high": overlap_value + 0.1, "valid_replicates": 50, "mean_gap": gap,
                          "mean_gap_ci_low": gap - 0.1, "mean_gap_ci_high": gap + 0.1} for a, b in S.COMPARISONS],
         "n_specific": 10, "n_agnostic": 10, "bootstrap": {"replicates": 50}}
    path = tmp_path / f"{model}.json"
    path.write_text(json.dumps(s))
    return {"dataset": "ds", "model": model, "summary": str(path)}


def test_side_by_side_table_and_correlations_across_models(tmp_path):
    entries = [_summary(tmp_path, m, o, g) for m, o, g in (("base", 0.9, 0.1), ("pt", 0.7, 0.2), ("ft", 0.5, 0.4),
                                                          ("ptft", 0.3, 0.5))]
    entries[1].update(base="base", adaptation="PT")
    shift = S.table(entries)
    assert shift.height == 4 * len(S.COMPARISONS)
    assert shift.filter(pl.col("model") == "pt")["adaptation"].to_list()[0] == "PT"
    acc = [0.2, 0.4, 0.5, 0.9]
    retrieval = pl.DataFrame({"set": ["qa"] * 4, "model": ["base", "pt", "ft", "ptft"], "k": [5] * 4, "accuracy": acc,
                              "accuracy_ci_low": [a - 0.1 for a in acc], "accuracy_ci_high": [a + 0.1 for a in acc],
                              "ndcg": acc, "ndcg_ci_low": acc, "ndcg_ci_high": acc, "coe": [0.1, 0.2, 0.3, 0.5],
                              "roe": [0.3, 0.2, 0.1, 0.0]})
    models = [{"model": "base", "root": "base", "adaptation": "base"}, {"model": "pt", "root": "base", "adaptation": "PT"},
              {"model": "ft", "root": "base", "adaptation": "FT"}, {"model": "ptft", "root": "base", "adaptation": "PT-FT"}]
    side = S.adaptation_table(shift, retrieval, None, models, 5)
    assert side["Adaptation"].to_list() == ["base", "PT", "FT", "PT-FT"]
    assert side.filter(pl.col("Embedding Model") == "ft")["Acc@5"].item() == "50.0 [40.0, 60.0]"
    assert side.filter(pl.col("Embedding Model") == "ft")["Overlap spec/between (ds)"].item() == "0.500 [0.400, 0.600]"
    corr = S.correlations(shift, retrieval, None, 5, 200, 1)
    row = corr.filter((pl.col("x") == "overlap_spec_between") & (pl.col("y") == "accuracy")).row(0, named=True)
    assert row["pearson"] == pytest.approx(np.corrcoef([0.9, 0.7, 0.5, 0.3], acc)[0, 1])
    assert row["n_points"] == 4 and row["points"] == "base; ft; pt; ptft"
    iso_row = corr.filter(pl.col("y") == "i1").row(0, named=True)  # no isotropy table: undefined, said so
    assert np.isnan(iso_row["pearson"]) and iso_row["note"]


def test_aggregate_job_pairs_params_with_input_and_output_files_by_position(tmp_path):
    """The aggregate job's params name the pairs and plots; their files are the inputs
    `summary_<i>`, `curves_<i>` and the outputs `plots`, in the same order."""
    from workflow_scripts.domain_shift.scores import run_domain_shift_aggregate
    from workflow_scripts.jobs import make_job
    grid = np.linspace(-1, 1, 21)
    inputs = {}
    for i, (model, value) in enumerate((("base", 0.9), ("pt", 0.3))):
        inputs[f"summary_{i}"] = _summary(tmp_path, model, value, 0.1)["summary"]
        inputs[f"curves_{i}"] = str(tmp_path / f"{model}.parquet")
        density = np.exp(-((grid - 0.5) ** 2) / 0.02)
        pl.DataFrame({"grid": grid, **{d: density for d in S.DISTRIBUTIONS}}).write_parquet(inputs[f"curves_{i}"])
    out = tmp_path / "out"
    png = str(out / "plots" / "ds" / "pt.png")
    run_domain_shift_aggregate(make_job(
        input=inputs,
        output={"table": str(out / "t.csv"), "adaptation": str(out / "a.csv"), "correlations": str(out / "c.csv"),
                "plots": [png]},
        params={"entries": [{"dataset": "ds", "model": "base", "base": "base", "adaptation": "base"},
                            {"dataset": "ds", "model": "pt", "base": "base", "adaptation": "PT"}],
                "models": [{"model": "base", "root": "base", "adaptation": "base"},
                           {"model": "pt", "root": "base", "adaptation": "PT"}],
                "plots": [{"dataset": "ds", "model": "pt", "base": "base"}],
                "settings": {"bootstrap_b": 20, "grid_step": 0.1, "exact_kde_max_n": 100, "table_k": 5}, "seed": 1}))
    table = pl.read_csv(out / "t.csv")
    assert table.group_by("model").agg(pl.col("overlap").first()).sort("model").rows() == [("base", 0.9), ("pt", 0.3)]
    assert table.filter(pl.col("model") == "pt")["adaptation"].unique().to_list() == ["PT"]
    assert Path(png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    side = pl.read_csv(out / "a.csv")  # no retrieval tables: the domain-shift overlaps only
    assert side["Embedding Model"].to_list() == ["base", "pt"]


def test_the_overlap_has_no_declared_better_side_so_no_verdict_and_no_b_mark(tmp_path):
    """Issue 32, point 7: "lower is better" would be our choice, not the seed's claim. The headline
    declares no direction, is in no confirmatory family, and its first-screen row says `none` and
    marks no cell B, even where the paired difference with the surface-form baseline is not
    significant (old: `lower`, and B on `same`)."""
    from helpers import write_table
    from workflow_scripts.report import markdown as M
    from workflow_scripts.report import console as C
    from workflow_scripts.report import overview as O
    from workflow_scripts.probes import get, headline_statistics

    assert [h.lower_is_better for h in get("domain_shift").headlines] == [None]
    assert headline_statistics("domain_shift") == () and get("domain_shift").directions == ()
    table = write_table(tmp_path / "domain_shift.csv", [
        dict(dataset="d", model=m, a="within_specific", b="between", overlap=o, overlap_ci_low=o - 0.1,
             overlap_ci_high=o + 0.1, n_specific=150, n_agnostic=200)
        for m, o in (("form", 0.6), ("same", 0.55), ("apart", 0.2))])
    diff = write_table(tmp_path / "domain_shift_differences.csv", [
        dict(probe="domain_shift", dataset="d", statistic="overlap/within_specific/between", model_a=a,
             model_b="form", value_a=v, value_b=0.6, difference=v - 0.6, ci_low=v - 0.7, ci_high=v - 0.5,
             p_value=p, family=family, p_adjusted=p, method="holm", significant=sig, ahead="", replicates=1000)
        for a, v, p, family, sig in (("same", 0.55, 0.6, "confirmatory", False),
                                     ("apart", 0.2, 0.001, "exploratory", None))])
    models = {"form": {"family": "surface_form"}, "same": {"family": "tfidf"}, "apart": {"family": "tfidf"}}
    O.build([table], models, {}, str(tmp_path / "ov.csv"), str(tmp_path / "ov.png"), str(tmp_path / "overview.json"),
            min_n=100, differences=[diff])
    screen = json.loads((tmp_path / "overview.json").read_text())
    (row,) = screen["rows"]
    assert row["better"] == "none" and (row["n"], row["unit"]) == ("150", "texts")
    assert {m: c["marks"] for m, c in row["cells"].items()} == {"form": "", "same": "", "apart": ""}
    assert "| domain_shift_d_spec_between | no direction | 150 texts |" in "\n".join(M.first_screen_section(screen))
    assert "domain shift d overlap spec/between" in C.summary(screen, "results") and (tmp_path / "ov.png").exists()
