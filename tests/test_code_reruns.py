"""Code that changes results reruns them (workflow_scripts/code_digest.py, docs/reproducibility.md):
on a copy of a finished study, a fresh clone with the results copied in plans nothing, nor does an
edit of comments, docstrings and formatting of the scoring module; a changed scoring constant plans
exactly the jobs that run that module and what reads their outputs, from Snakemake's own reasons."""
import shutil

from workflow_runner import copy_checkout, planned_jobs, snakemake

STUDY = "resources/csc/study.yaml"  # CSC of TF-IDF on the EN-NL sample: its code is csc/curves.py
SCORING = "workflow_scripts/csc/curves.py"
LINE = "        cos = np.where(denom > 0, dots / denom, np.nan)\n"


def plan(checkout):
    return planned_jobs(checkout, checkout / STUDY, snakefile=checkout / "Snakefile", reasons=True)


def edit(checkout, old: str, new: str) -> None:
    path = checkout / SCORING
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

    # a scoring constant: csc/curves.py runs the score, plot and tables of CSC, nothing else; the
    # score reruns for its code, the rest for its new outputs (the differences, the report, all)
    edit(clone, "(dots / denom)", "dots / denom * 0.5")
    planned = plan(clone)
    pair = {"corpus": "pc_en", "model": "tfidf"}
    assert sorted((rule, wildcards) for rule, wildcards, _ in planned) == sorted([
        ("csc_score", pair), ("csc_plot", pair), ("csc_aggregate", {}), ("probe_differences", {"probe": "csc"}),
        ("report", {}), ("all", {})]), planned
    reasons = {rule: reason for rule, _, reason in planned}
    assert reasons["csc_score"].startswith("Params have changed since last execution"), reasons
    assert all(reason.startswith("Input files updated by another job")
               for rule, reason in reasons.items() if rule != "csc_score"), reasons
