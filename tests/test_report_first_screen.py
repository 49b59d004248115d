"""The report's first screen on hand-made tables (no workflow run): every overview row says which
direction is better and its n; cells with a zero-width interval, an n below report.min_n, or a value
at the ceiling or floor of the statistic's range are marked and the legend says why; the demo banner
is there exactly when every input is one of the shipped samples under resources/; retrieval's
headline has an interval with width where the paper's draws cover the whole question set; the
console summary that `make run` prints ends with where the report is."""
import json
from pathlib import Path

import polars as pl
import pytest

from workflow_scripts.report import markdown as M
from workflow_scripts.report import console as C
from workflow_scripts.report import overview as O
from workflow_scripts.report import pages as P
from workflow_scripts.report.plan import shipped_only

from helpers import write_table as write

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def screen(tmp_path):
    """Three probes' tables: CSC (its within-sentence AUC, higher = better; n = the sentences with both
    kinds of variant), triplets (one model at the ceiling with a zero-width interval on 23 triplets),
    retrieval (the full-data figures over 36 questions)."""
    csc = write(tmp_path / "csc_overlap.csv", [
        dict(corpus="c", model="m", condition="negation", overlap=0.25, overlap_ci_low=0.2, overlap_ci_high=0.3,
             within_auc=0.75, within_auc_ci_low=0.7, within_auc_ci_high=0.8,
             n_fuzzed=1210, n_negated=262, n_units=120, n_within=120, unit="sentences", separation="right"),
        dict(corpus="c", model="t", condition="negation", overlap=0.0, overlap_ci_low=0.0, overlap_ci_high=0.04,
             within_auc=0.0, within_auc_ci_low=0.0, within_auc_ci_high=0.04,
             n_fuzzed=1210, n_negated=250, n_units=110, n_within=110, unit="sentences", separation="wrong")])
    trip = write(tmp_path / "triplets_accuracy.csv", [
        dict(dataset="d", model="m", n=23, accuracy=1.0, accuracy_ci_low=1.0, accuracy_ci_high=1.0),
        dict(dataset="d", model="t", n=23, accuracy=0.5, accuracy_ci_low=0.3, accuracy_ci_high=0.7)])
    # the paper's draws: 100 questions from a set of 36, without replacement: each draw is the whole
    # set, so the draws' interval has zero width; the full-data bootstrap interval has width
    ret = write(tmp_path / "retrieval_accuracy.csv", [
        dict(set="qa", model=m, k=5, accuracy=0.971, accuracy_ci_low=0.971, accuracy_ci_high=0.971,
             ndcg=0.9, ndcg_ci_low=0.9, ndcg_ci_high=0.9, accuracy_full=0.971, accuracy_full_ci_low=0.914,
             accuracy_full_ci_high=1.0, ndcg_full=0.9, ndcg_full_ci_low=0.85, ndcg_full_ci_high=0.95,
             n_queries=36, draws=100, draw_size=100, draw_replace=False) for m in ("m", "t")])
    models = {"m": {"family": "tfidf"}, "t": {"family": "hashing"}}
    O.build([csc, trip, ret], models, {"retrieval_k": 5}, str(tmp_path / "ov.csv"), None,
            str(tmp_path / "overview.json"), min_n=100, demo=False)
    return json.loads((tmp_path / "overview.json").read_text())


def rows_of(screen: dict) -> dict:
    return {r["column"]: r for r in screen["rows"]}


def test_every_row_says_its_direction_and_n(screen):
    rows = rows_of(screen)
    assert [r["column"] for r in screen["rows"]] == ["csc_c_negation", "triplets_d", "retrieval_qa_acc@5",
                                                      "retrieval_qa_ndcg@5"]
    assert all(r["better"] in ("lower", "higher") and r["n"] for r in screen["rows"])
    assert rows["csc_c_negation"]["better"] == "higher" and rows["triplets_d"]["better"] == "higher"
    # n per row: the units the figure's bootstrap resamples, named (CSC: sentences, not the variants
    # nested in them); different per model: the range
    assert rows["csc_c_negation"]["n"] == "110-120" and rows["triplets_d"]["n"] == "23"
    assert rows["retrieval_qa_acc@5"]["n"] == "36"
    assert [rows[c]["unit"] for c in ("csc_c_negation", "triplets_d", "retrieval_qa_acc@5")] == [
        "sentences", "triplets", "questions"]
    assert [m["stand_in"] for m in screen["models"]] == [False, True]


def test_marks_zero_width_low_n_and_ceiling(screen):
    rows = rows_of(screen)
    cell = lambda column, model: rows[column]["cells"][model]["marks"]  # noqa: E731
    assert cell("csc_c_negation", "m") == ""           # n 120, interval with width, inside (0, 1)
    assert cell("csc_c_negation", "t") == "CW"         # 0.0: at the floor of the AUC's range, the wrong way
    assert cell("triplets_d", "m") == "ZNC"            # 1.0 [1.0, 1.0] on 23 triplets
    assert cell("triplets_d", "t") == "N"              # 23 < min_n 100
    assert screen["marks_used"] == ["Z", "N", "C", "W"]
    assert "zero width" in screen["legend"]["Z"] and "report.min_n (100)" in screen["legend"]["N"]
    assert "ceiling or floor" in screen["legend"]["C"]
    # the marks on their own: the threshold decides N; a bound of the range decides C
    assert O.marks(0.5, 0.4, 0.6, 99, [0.0, 1.0], 100) == "N"
    assert O.marks(0.5, 0.4, 0.6, 100, [0.0, 1.0], 100) == ""
    assert O.marks(0.5, 0.5, 0.5, None, [0.0, 1.0], 100) == "Z"
    assert O.marks(2.0, 1.0, 3.0, None, [0.0, 2.0], 100) == "C"
    assert O.marks(None, None, None, 1, [0.0, 1.0], 100) == ""


def test_retrieval_shows_the_full_data_figure_the_comparisons_test(screen):
    """Issue 43, point 7: the first screen's value is the full-data figure with its interval, the one
    the paired difference beside it is computed on, so the two subtract on one row; the mean over the
    paper's draws stays in the retrieval tables."""
    rows = rows_of(screen)
    acc = rows["retrieval_qa_acc@5"]["cells"]["m"]
    assert (acc["value"], acc["ci_low"], acc["ci_high"]) == (0.971, 0.914, 1.0)  # the full-data interval
    assert "Z" not in acc["marks"] and acc["ci_high"] - acc["ci_low"] > 0
    assert rows["retrieval_qa_ndcg@5"]["cells"]["m"]["ci_low"] == 0.85
    from workflow_scripts.retrieval.probe import accuracy_headlines
    frame = pl.DataFrame([dict(set="qa", model="m", k=5, accuracy=0.8, accuracy_ci_low=0.7, accuracy_ci_high=0.9,
                               ndcg=0.6, ndcg_ci_low=0.5, ndcg_ci_high=0.7, accuracy_full=0.81,
                               accuracy_full_ci_low=0.6, accuracy_full_ci_high=0.95, ndcg_full=0.6,
                               ndcg_full_ci_low=0.4, ndcg_full_ci_high=0.8, n_queries=36, draw_size=20,
                               draw_replace=False)])
    acc = accuracy_headlines(frame, {"retrieval_k": 5})[0]
    assert (acc["value"], acc["ci_low"], acc["n"], acc["statistic"]) == (0.81, 0.6, 36, "accuracy@5")


def test_markdown_and_html_first_screen(screen, tmp_path):
    md = "\n".join(M.first_screen_section(screen))
    assert md.startswith("# Overview: every model against the surface-form baseline") and "Demo inputs" not in md
    assert "| figure | better | n | m | t (stand-in) |" in md
    assert "| triplets_d | \u2191 higher | 23 triplets | 1.000 [1.000, 1.000] ZNC | 0.500 [0.300, 0.700] N |" in md
    assert "| csc_c_negation | \u2191 higher | 110-120 sentences |" in md and "**Z**: interval of zero width" in md
    demo = {**screen, "demo": True, "banner": O.DEMO_BANNER}
    md = "\n".join(M.first_screen_section(demo))
    assert md.index("Demo inputs") < md.index("| figure |")  # the banner before the numbers
    (tmp_path / "demo.json").write_text(json.dumps(demo))
    P.first_screen(str(tmp_path / "demo.json"), str(tmp_path / "first_screen.rst"))
    from docutils.core import publish_parts
    html = publish_parts((tmp_path / "first_screen.rst").read_text(), writer="html",
                         settings_overrides={"halt_level": 2})["body"]
    assert "Demo inputs" in html and "<th>better</th>" in html and "\u2191 higher" in html
    assert 'title="interval of zero width' in html and "1.000 [1.000, 1.000] ZNC" in html


def test_demo_banner_only_for_the_shipped_samples(tmp_path):
    shipped = [ROOT / "resources" / "corpora" / "en_nl_sample.txt", ROOT / "resources" / "retrieval" / "telecom_qa"]
    assert shipped_only(map(str, shipped))
    own = tmp_path / "mine.tsv"
    own.write_text("x\n")
    assert not shipped_only([*map(str, shipped), str(own)])  # one input of the researcher's: no banner
    assert not shipped_only([])
    # a link into resources/ from elsewhere counts as shipped; a file beside resources/ does not
    (tmp_path / "link").symlink_to(shipped[0])
    assert shipped_only([str(tmp_path / "link")]) and not shipped_only([str(ROOT / "config.yaml")])


def test_demo_banner_follows_the_default_config(tmp_path, monkeypatch):
    """The default config's sources are shipped samples: its report carries the banner. A model the
    workflow trained (under results/) is an output, not an input; a source of the researcher's own
    takes the banner away. (The full plan of the default config gives the demo banner too.)"""
    import yaml
    from workflow_scripts.config import validate
    from workflow_scripts.report.plan import ReportPlan
    from workflow_scripts.study import Study
    config = validate(yaml.safe_load((ROOT / "config.yaml").read_text()), check_paths=False)
    config["models"]["trained"] = {"family": "sentence_transformers", "path": "results/models/trained",
                                   "adapted": {"recipe": "r", "base": "minilm", "steps": ["ft"]}}
    monkeypatch.chdir(ROOT)  # config paths are relative to the working directory, as in a run

    def plan_of(config: dict) -> ReportPlan:
        plan = object.__new__(ReportPlan)
        plan.study, plan.config, plan.plans, plan.stores = Study(config, "results"), config, [], {"trained": "s"}
        return plan
    plan = plan_of(config)
    assert "model trained" in plan.data_sources()
    assert plan.demo_inputs() and plan.first_screen_settings() == {"min_n": 100, "demo": True}
    own = tmp_path / "mine.txt"
    own.write_text("A sentence.\n")
    config["sources"]["mine"] = {"format": "lines", "path": str(own), "languages": ["en"]}
    config["report"] = {"min_n": 50}
    assert not plan_of(config).demo_inputs() and plan_of(config).first_screen_settings() == {"min_n": 50, "demo": False}


def test_console_summary(screen, tmp_path):
    text = C.summary(screen, "results/my_study")
    lines = text.splitlines()
    assert "Demo inputs" not in text
    # long, not wide: per figure a row per model, so no model is off-screen however many there are
    assert "  triplets d: accuracy (\u2191 higher)" in lines
    header = next(line for line in lines if line.strip().startswith("model"))
    assert [h.strip() for h in header.split("  ") if h.strip()] == ["model", "value [95% interval]", "n", "rank",
        "verdict vs baseline", "difference [adj. interval]", "margin \u03b4", "p adjusted", "marks"]
    assert any(line.split() == ["t", "(stand-in)", "0.500", "[0.300,", "0.700]", "23", "triplets", "no", "verdict",
                                "(no", "baseline)", "N"] for line in lines)
    # the legend of the marks shown comes before the tables
    assert text.index("Z: interval of zero width") < text.index("triplets d: accuracy")
    assert "N: n below report.min_n (100)" in text
    assert lines[-1].startswith("Report: results/my_study/report.md") and "report.html" in lines[-1]
    demo = C.summary({**screen, "demo": True, "banner": O.DEMO_BANNER}, "r")
    assert "!! Demo inputs" in demo and len(demo.splitlines()) < 50
    # the module: the results folder from the config files (the later one's `results` wins)
    (tmp_path / "r" / "report").mkdir(parents=True)
    (tmp_path / "r" / "report" / "overview.json").write_text(json.dumps(screen))
    (tmp_path / "a.yaml").write_text("seed: 1\n")
    (tmp_path / "b.yaml").write_text(f"results: {tmp_path / 'r'}\n")
    # a config without `results`: the study's own folder, results/<config name>/ (studies.results_folder)
    assert C.results_of([str(tmp_path / "a.yaml")]) == "results/a"
    assert C.results_of([str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")]) == str(tmp_path / "r")
    assert C.main(["--configfile", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")]) == 0
    assert C.main([str(tmp_path / "missing")]) == 1


def difference_row(model: str, value: float, significant, ahead: str | None, family: str = "confirmatory",
                   p_adjusted: float | None = 0.01, base: str = "form", base_value: float = 0.5,
                   verdict: str | None = None, reason: str | None = None) -> dict:
    """One hand-made row of a differences table: `model` (A) against the baseline (B) on triplets `d`,
    with the verdict word the differences job would have written (given or from `significant`)."""
    d = value - base_value
    if verdict is None and family == "confirmatory" and significant is not None:
        verdict = ("better" if d > 0 else "worse") if significant else "inconclusive"
    return dict(probe="triplets", dataset="d", statistic="accuracy", model_a=model, model_b=base, value_a=value,
                value_b=base_value, difference=d, ci_low=d - 0.05, ci_high=d + 0.05, p_value=p_adjusted,
                test="mcnemar", family=family, p_adjusted=p_adjusted, method="holm", significant=significant,
                ahead=ahead, replicates=1000, margin=0.05, signed_difference=d, adjusted_low=d - 0.06,
                adjusted_high=d + 0.06, verdict=verdict, reason=reason, mde=0.04, units_needed=400)


def test_cells_not_shown_better_than_the_form_only_baseline_are_marked_b(tmp_path):
    """A model whose verdict against the surface-form baseline is not `better` gets B on its cell in
    the first screen and its HTML; one better does not; the baseline's own cell never does."""
    trip = write(tmp_path / "triplets_accuracy.csv", [
        dict(dataset="d", model=m, n=500, accuracy=a, accuracy_ci_low=a - 0.05, accuracy_ci_high=a + 0.05)
        for m, a in (("form", 0.5), ("good", 0.8), ("same", 0.52))])
    diff = write(tmp_path / "triplets_differences.csv", [
        difference_row("good", 0.8, True, "good"), difference_row("same", 0.52, False, "same", p_adjusted=0.4)])
    models = {"form": {"family": "surface_form"}, "good": {"family": "tfidf"}, "same": {"family": "tfidf"}}
    O.build([trip], models, {}, str(tmp_path / "ov.csv"), None, str(tmp_path / "overview.json"),
            min_n=100, demo=False, differences=[diff])
    screen = json.loads((tmp_path / "overview.json").read_text())
    cells = screen["rows"][0]["cells"]
    assert {m: c["marks"] for m, c in cells.items()} == {"form": "", "good": "", "same": "B"}
    assert screen["marks_used"] == ["B"] and "surface-form baseline" in screen["legend"]["B"]
    P.first_screen(str(tmp_path / "overview.json"), str(tmp_path / "first_screen.rst"))
    text = (tmp_path / "first_screen.rst").read_text()
    assert "0.520 [0.470, 0.570] B" in text and "background:#e5e7eb" in text


def test_csc_that_separates_the_wrong_way_is_marked_w_and_never_better_than_the_baseline(tmp_path):
    """`wrong` has a within-sentence AUC below 1/2 by the margin (its separation `wrong`): W, B and the
    verdict `wrong direction` whatever its difference says; `right` is better."""
    csc = write(tmp_path / "csc_overlap.csv", [
        dict(corpus="c", model=m, condition="negation", overlap=0.5, overlap_ci_low=0.45, overlap_ci_high=0.55,
             within_auc=a, within_auc_ci_low=a - 0.05, within_auc_ci_high=a + 0.05, n_within=300,
             n_units=300, unit="sentences", separation=sep)
        for m, a, sep in (("form", 0.55, "unclear"), ("wrong", 0.31, "wrong"), ("right", 0.8, "right"))])
    diff = write(tmp_path / "csc_differences.csv", [
        {**difference_row(a, v, True, a, base_value=0.55, verdict=w), "probe": "csc", "dataset": "c",
         "statistic": "negation/within_auc"}
        for a, v, w in (("wrong", 0.31, "wrong direction"), ("right", 0.8, "better"))])
    models = {"form": {"family": "surface_form"}, "wrong": {"family": "tfidf"}, "right": {"family": "sentence_transformers"}}
    O.build([csc], models, {}, str(tmp_path / "ov.csv"), None, str(tmp_path / "overview.json"),
            min_n=100, demo=False, differences=[diff])
    screen = json.loads((tmp_path / "overview.json").read_text())
    cells = screen["rows"][0]["cells"]
    assert {m: c["marks"] for m, c in cells.items()} == {"form": "", "wrong": "WB", "right": ""}
    assert cells["wrong"]["verdict"]["verdict"] == "wrong direction"
    assert screen["marks_used"] == ["W", "B"] and "wrong way" in screen["legend"]["W"]
    text = C.summary(screen, "results")
    assert any(line.split()[:5] == ["wrong", "0.310", "[0.260,", "0.360]", "300"] and line.endswith("WB")
               for line in text.splitlines())
    assert "W: separates the wrong way" in text
    P.first_screen(str(tmp_path / "overview.json"), str(tmp_path / "first_screen.rst"))
    assert "0.310 [0.260, 0.360] WB" in (tmp_path / "first_screen.rst").read_text()
    # without a differences table (or a comparison) the wrong-way cell is still never better
    O.build([csc], models, {}, str(tmp_path / "ov2.csv"), None, str(tmp_path / "overview2.json"), min_n=100)
    cells = json.loads((tmp_path / "overview2.json").read_text())["rows"][0]["cells"]
    assert cells["wrong"]["marks"] == "WB" and cells["right"]["marks"] == ""


def test_the_differences_block_says_what_is_adjusted(tmp_path):
    """The intervals beside the differences are the unadjusted paired intervals; the verdict rests on
    the family-adjusted interval and the margin, which the block names."""
    diff = write(tmp_path / "csc_differences.csv", [
        dict(probe="csc", dataset="c", statistic="negation/within_auc", model_a="m", model_b="form", value_a=0.8,
             value_b=0.5, difference=0.3, ci_low=0.2, ci_high=0.4, p_value=0.03, family="confirmatory",
             p_adjusted=0.09, method="holm", significant=False, ahead="m", replicates=1000, verdict="inconclusive",
             margin=0.05)])
    text = "\n".join(M.differences_block(diff, [{"dataset": "c", "statistic": "negation/within_auc"}]))
    assert "Holm's correction of their p-values" in text and "family-adjusted interval" in text
    assert "| A - B [95% interval, unadjusted] |" in text and "| inconclusive | 0.05 |" in text
    assert "does not depend on B" in text


def headline(model: str, value: float, **extra) -> dict:
    return dict(model=model, column="triplets_d", label="triplets d accuracy", value=value, ci_low=value - 0.05,
                ci_high=value + 0.05, n=500, unit="triplets", probe="triplets", dataset="d", statistic="accuracy",
                lower_is_better=False, bounds=[0.0, 1.0], **extra)


FOUR = {"form": {"family": "surface_form"}, "good": {"family": "tfidf"}, "bad": {"family": "tfidf"},
        "same": {"family": "tfidf"}, "wrong": {"family": "tfidf"}}


def test_verdicts_are_read_from_the_differences_table():
    """The verdict in words is the differences table's (one verdict, written once): the first screen
    reads the confirmatory row's word, the difference model - baseline with its family-adjusted
    interval, the margin and the power; a cell that separates the wrong way (W) says so whatever
    its row says."""
    rows = [headline("form", 0.5), headline("good", 0.8), headline("bad", 0.3), headline("same", 0.52),
            headline("wrong", 0.9, wrong_direction=True)]
    diffs = pl.DataFrame([difference_row("good", 0.8, True, "good"),
                          difference_row("same", 0.52, False, "same", p_adjusted=0.4, verdict="equivalent"),
                          difference_row("bad", 0.3, True, "form"), difference_row("wrong", 0.9, True, "wrong")])
    verdicts = O.baseline_verdicts(rows, diffs, FOUR)
    words = {m: verdicts[(m, "triplets_d")]["verdict"] for m in FOUR}
    assert words == {"form": "no verdict", "good": "better", "bad": "worse", "same": "equivalent",
                     "wrong": "wrong direction"}
    bad = verdicts[("bad", "triplets_d")]
    assert bad["baseline"] == "form" and bad["difference"] == pytest.approx(-0.2)
    assert (bad["ci_low"], bad["ci_high"]) == (pytest.approx(-0.26), pytest.approx(-0.14)) and bad["margin"] == 0.05
    assert verdicts[("form", "triplets_d")]["reason"] == "baseline"
    marked = O.not_better_than_baseline(rows, verdicts, FOUR)
    assert {m for m, _ in marked} == {"bad", "same", "wrong"}
    inconclusive = O.verdict_text({**verdicts[("good", "triplets_d")], "verdict": "inconclusive"})
    assert inconclusive == "inconclusive (MDE 0.040, n\u2248400 for \u03b4)"


def test_no_verdict_where_there_is_none():
    """No baseline in the run, a figure without direction, only exploratory rows, a row without p: no
    verdict, with the reason."""
    row = headline("good", 0.8)

    def verdict(rows: list[dict], diffs: list[dict], models: dict = FOUR) -> dict:
        return O.baseline_verdicts(rows, pl.DataFrame(diffs), models)[("good", "triplets_d")]
    significant = [difference_row("good", 0.8, True, "good")]
    assert verdict([row], significant)["verdict"] == "better"
    cases = {"no baseline": verdict([row], significant, {"good": {"family": "tfidf"}}),
             "no direction": verdict([{**row, "lower_is_better": None}], significant),
             "not compared": verdict([row], [difference_row("good", 0.8, None, "good", family="exploratory")]),
             "no p": verdict([row], [difference_row("good", 0.8, None, None, p_adjusted=None, verdict="no verdict",
                                                    reason="no p")])}
    for reason, got in cases.items():
        assert (got["verdict"], got["reason"]) == ("no verdict", reason)
        assert O.verdict_text(got) == f"no verdict ({reason})"


def test_a_degenerate_baseline_shows_the_comparison_with_chance():
    row = headline("good", 0.8)
    ref = {**difference_row("good", 0.8, True, "good", base="chance"), "value_b": 0.5}
    diffs = pl.DataFrame([{**difference_row("good", 0.8, None, "good", family="exploratory"),
                           "reason": "baseline degenerate", "baseline_degenerate": True}, ref])
    got = O.baseline_verdicts([row], diffs, FOUR)[("good", "triplets_d")]
    assert (got["verdict"], got["reason"]) == ("no verdict", "baseline degenerate")
    assert got["reference"]["verdict"] == "better" and got["reference"]["level"] == 0.5
    assert O.verdict_text(got) == "vs chance: better"
    base = O.baseline_verdicts([headline("form", 0.5)], diffs, FOUR)[("form", "triplets_d")]
    assert O.verdict_text(base) == "no verdict (baseline, degenerate)"
    assert O.difference_text(got).startswith("+0.300")


@pytest.fixture
def verdict_screen(tmp_path):
    """The first screen of a run with a baseline and three verdicts on triplets."""
    trip = write(tmp_path / "triplets_accuracy.csv", [
        dict(dataset="d", model=m, n=500, accuracy=a, accuracy_ci_low=a - 0.05, accuracy_ci_high=a + 0.05)
        for m, a in (("form", 0.5), ("good", 0.8), ("bad", 0.3), ("same", 0.52))])
    diff = write(tmp_path / "triplets_differences.csv", [
        {**difference_row("good", 0.8, True, "good", p_adjusted=2 ** -22), "rank_a": "1 of 4", "rank_b": "3 of 4"},
        difference_row("bad", 0.3, True, "form"),
        difference_row("same", 0.52, False, "same", p_adjusted=0.4, verdict="equivalent")])
    O.build([trip], FOUR, {}, str(tmp_path / "ov.csv"), None, str(tmp_path / "overview.json"),
            min_n=100, demo=False, differences=[diff])
    return json.loads((tmp_path / "overview.json").read_text())


def test_the_first_screen_opens_with_one_line_per_model(verdict_screen):
    assert verdict_screen["summaries"] == ["good vs the baseline: 1 better (1 by at least the margin), of 1 figures",
                                           "bad vs the baseline: 0 better \u00b7 1 worse, of 1 figures",
                                           "same vs the baseline: 0 better \u00b7 1 equivalent, of 1 figures"]


def test_markdown_first_screen_has_a_row_per_model_and_figure_with_its_verdict(verdict_screen):
    md = "\n".join(M.first_screen_section(verdict_screen))
    head = ("| figure | model | value [95% interval] | n | rank | verdict vs baseline | difference "
            "[adj. interval] | margin \u03b4 | p adjusted | marks |")
    assert head in md and md.index(head) < md.index("| figure | better | n |")  # the verdicts before the wide table
    assert md.index("- good vs the baseline: 1 better") < md.index("- **better**:") < md.index(head)
    table = md[md.index(head):].split("\n\n")[0].splitlines()[2:]
    assert [line.split(" | ")[1] for line in table] == ["form", "good", "bad", "same"]  # one row per model and figure
    assert "| triplets d: accuracy (\u2191 higher) | good | 0.800 [0.750, 0.850] | 500 triplets | 1 of 4 | better | " \
           "+0.300 [+0.240, +0.360] | 0.05 | 2.4e-07 |  |" in table
    assert "| bad | 0.300 [0.250, 0.350] | 500 triplets |  | worse | -0.200 [-0.260, -0.140] | 0.05 | 0.010 | B |" in table[2]
    assert "| same | 0.520 [0.470, 0.570] | 500 triplets |  | equivalent | +0.020 [-0.040, +0.080] | 0.05 | 0.400 | B |" \
        in table[3]
    assert "| form | 0.500 [0.450, 0.550] | 500 triplets | 3 of 4 | no verdict (baseline) |" in table[0]


def test_console_and_html_say_the_same_verdicts(verdict_screen, tmp_path):
    text = C.summary(verdict_screen, "results")
    verdict_of = {line.split()[0]: line for line in text.splitlines() if line.startswith("    ")}
    assert "better" in verdict_of["good"] and "+0.300 [+0.240, +0.360]" in verdict_of["good"]
    assert "worse" in verdict_of["bad"] and "equivalent" in verdict_of["same"]
    assert "no verdict (baseline)" in verdict_of["form"]
    assert all(len(line) <= C.TABLE_WIDTH for line in text.splitlines())
    (tmp_path / "screen.json").write_text(json.dumps(verdict_screen))
    P.first_screen(str(tmp_path / "screen.json"), str(tmp_path / "first_screen.rst"))
    from docutils.core import publish_parts
    html = publish_parts((tmp_path / "first_screen.rst").read_text(), writer="html",
                         settings_overrides={"halt_level": 2})["body"]
    assert "<th>verdict vs baseline</th>" in html and html.index("verdict vs baseline") < html.index("<th>better</th>")
    assert html.index("good vs the baseline: 1 better") < html.index("verdict vs baseline")
    for words in ("better</td>", "worse</td>", "equivalent</td>", "no verdict (baseline)</td>"):
        assert words in html, words


def test_read_differences_keeps_false_false_beside_a_table_without_verdicts(tmp_path):
    """A probe without directions (domain shift) writes its differences with empty `significant` and
    `verdict` columns; read beside another probe's table, "false" must stay False and the verdict text."""
    from workflow_scripts.report.overview import baseline_verdicts, read_differences

    header = ("probe,dataset,statistic,model_a,model_b,difference,ci_low,ci_high,p_adjusted,family,significant,better,"
              "verdict\n")
    (tmp_path / "triplets.csv").write_text(header + "triplets,d,accuracy,tfidf,form_only,0.05,0.01,0.1,0.75,"
                                                    "confirmatory,false,tfidf,inconclusive\n")
    (tmp_path / "domain.csv").write_text(header + "domain_shift,t,overlap,tfidf,form_only,0.1,0.0,0.2,0.3,"
                                                  "exploratory,,,\n")
    frame = read_differences([str(tmp_path / "domain.csv"), str(tmp_path / "triplets.csv")])
    assert frame.schema["significant"] == pl.Boolean and frame.schema["verdict"] == pl.String
    assert frame.filter(pl.col("probe") == "triplets")["significant"].to_list() == [False]
    row = {"model": "tfidf", "column": "triplets_d", "probe": "triplets", "dataset": "d", "statistic": "accuracy",
           "lower_is_better": False}
    models = {"form_only": {"family": "surface_form"}, "tfidf": {"family": "tfidf"}}
    assert baseline_verdicts([row], frame, models)[("tfidf", "triplets_d")]["verdict"] == "inconclusive"
