"""Code that changes results reruns them (workflow_scripts/code_digest.py, docs/reproducibility.md):
on a copy of a finished study, a fresh clone with the results copied in plans nothing, nor does an
edit of comments, docstrings and formatting of the scoring module; a changed plotting constant plans
the plot job alone and what reads the plot, a changed scoring constant exactly the jobs that run
that module and what reads their outputs, from Snakemake's own reasons."""
import shutil

from workflow_runner import copy_checkout, planned_jobs, snakemake

STUDY = "resources/csc/study.yaml"  # CSC of TF-IDF and form_only on the EN-NL sample: scores' code csc/curves.py
MODELS = ("form_only", "tfidf")
SCORING = "workflow_scripts/csc/curves.py"
PLOTTING = "workflow_scripts/csc/plots.py"
LINE = "        cos = np.where(denom > 0, dots / denom, np.nan)\n"


def plan(checkout):
    return planned_jobs(checkout, checkout / STUDY, snakefile=checkout / "Snakefile", reasons=True)


def jobs(planned) -> set:
    """The planned (rule, wildcards) pairs, wildcards as sorted items (dicts do not order)."""
    return {(rule, tuple(sorted(wildcards.items()))) for rule, wildcards, _ in planned}


def edit(checkout, old: str, new: str, module: str = SCORING) -> None:
    path = checkout / module
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def test_a_scoring_edit_reruns_its_jobs_and_what_follows_a_clone_or_a_comment_nothing(tmp_path):
    first = copy_checkout(tmp_path / "first", keep_mtimes=True)
    snakemake(first, first / STUDY, snakefile=first / "Snakefile")
    assert plan(first) == []

    # a fresh clone: every file of the checkout new, the results and .snakemake/ copied in
    clone = copy_checkout(tmp_path / "clone", keep_mtimes=False)
    for kept in ("results", ".snakemake"):
        shutil.copytree(first / kept, clone / kept, symlinks=True, copy_function=shutil.copy2)
    assert plan(clone) == []

    # comments, a docstring and the line breaks of the scoring line: the same code
    edit(clone, '"""Probe: Concept Separation Curves', '"""Edited, the docstring of Concept Separation Curves')
    edit(clone, LINE, "        # why: a zero norm has no cosine\n"
                      "        cos = np.where(denom > 0,\n                       (dots / denom), np.nan)  # edited\n")
    assert plan(clone) == []

    # the plotting code: csc/plots.py is the plot job's code alone (one job per module), so the plot
    # reruns for its code and what reads it for its new output, never the scores or the tables
    edit(clone, "dpi=120", "dpi=121", PLOTTING)
    planned = plan(clone)
    assert jobs(planned) == {*(("csc_plot", (("corpus", "pc_en"), ("model", m))) for m in MODELS),
                             ("report", ()), ("all", ())}, planned
    assert {rule: reason for rule, _, reason in planned}["csc_plot"].startswith("Params have changed"), planned
    edit(clone, "dpi=121", "dpi=120", PLOTTING)
    assert plan(clone) == []

    # a scoring constant: csc/curves.py is the score job's code; the score reruns for its code, the
    # plot and tables of CSC for its new outputs, and what reads theirs (the differences, the report)
    edit(clone, "(dots / denom)", "dots / denom * 0.5")
    planned = plan(clone)
    pairs = [(("corpus", "pc_en"), ("model", m)) for m in MODELS]
    assert jobs(planned) == {*(("csc_score", p) for p in pairs), *(("csc_plot", p) for p in pairs),
                             ("csc_aggregate", ()), ("probe_differences", (("probe", "csc"),)),
                             # the pages of items the model and the baseline disagree on read the scores
                             ("disagreements", (("dataset", "pc_en"), ("probe", "csc"))), ("report", ()),
                             ("all", ())}, planned
    reasons = {rule: reason for rule, _, reason in planned}
    assert reasons["csc_score"].startswith("Params have changed since last execution"), reasons
    assert all(reason.startswith("Input files updated by another job")
               for rule, reason in reasons.items() if rule != "csc_score"), reasons
