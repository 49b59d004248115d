"""Results that travel: a finished study, its checkout moved to another folder or its results folder
(with or without `.snakemake/`) copied into a fresh clone (new mtimes for every file of the
checkout, NLTK data found elsewhere), plans nothing; an edit to the data it read still reruns what
read it.

What made such a copy rerun, and what the workflow does instead: the NLTK search path as a param (a
job puts the study's relative download folder before its own NLTK_DATA), an absolute path as an
input (the report's published figures: paths relative to the working directory), and a folder
under resources/ judged by its mtime, or a small file there judged by a sha256 that only
`.snakemake/` records (rules/common.smk `by_content`: its content stamp instead).
"""
import os
import shutil
from pathlib import Path

import pytest
import yaml

from workflow_runner import copy_checkout, planned_jobs, snakemake

# the smallest study with a folder under resources/ as an input (the BEIR set) and a job whose
# NLTK search path was a param (the retrieval set's build)
CONFIG = {
    "seed": 3, "embedding_partitions": 1, "results": "results/travel",
    "models": {"form_only": {"family": "surface_form"}},
    "retrieval": {"datasets": {"telecom_qa": {"kind": "beir", "path": "resources/retrieval/telecom_qa"}},
                  "top_k": 10, "k": {"min": 5, "max": 10, "step": 5}, "table_k": 5,
                  "draws": {"count": 5, "size": 10, "replace": False}, "bootstrap_b": 20,
                  "thresholds": {"draws": 10}, "isotropy": {"transforms": ["standardise"]}},
}


def nltk_env(folder: Path) -> dict:
    """This process's environment with NLTK_DATA at `folder` (another place for each checkout)."""
    folder.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "NLTK_DATA": str(folder)}


def jobs(checkout: Path, env: dict) -> list:
    return planned_jobs(checkout, checkout / "travel.yaml", snakefile=checkout / "Snakefile", env=env)


@pytest.mark.slow
def test_a_moved_or_cloned_study_plans_nothing_and_an_edit_reruns_its_readers(tmp_path):
    first = copy_checkout(tmp_path / "first" / "checkout", keep_mtimes=True)
    config = first / "travel.yaml"
    config.write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    snakemake(first, config, snakefile=first / "Snakefile", env=nltk_env(tmp_path / "first" / "nltk_data"))
    assert jobs(first, nltk_env(tmp_path / "first" / "nltk_data")) == []

    # the whole checkout moved (`cp -a`: mtimes kept), NLTK data elsewhere
    moved = tmp_path / "moved" / "renamed"
    shutil.copytree(first, moved, symlinks=True, copy_function=shutil.copy2)
    assert jobs(moved, nltk_env(tmp_path / "moved" / "nltk_data")) == []

    # a fresh clone (every file of the checkout new) with the results folder and .snakemake/ copied in
    clone = copy_checkout(tmp_path / "cluster" / "clone", keep_mtimes=False)
    shutil.copy(first / "travel.yaml", clone / "travel.yaml")
    for kept in ("results", ".snakemake"):
        shutil.copytree(first / kept, clone / kept, symlinks=True, copy_function=shutil.copy2)
    env = nltk_env(tmp_path / "cluster" / "nltk_data")
    assert jobs(clone, env) == []

    # the results folder alone copied into a fresh clone, without .snakemake/: no metadata holds the
    # sha256 of a small file of the checkout (the published figures the report reads), so its new
    # mtime reran the report; every local input is judged by its content stamp instead
    bare = copy_checkout(tmp_path / "bare" / "clone", keep_mtimes=False)
    shutil.copy(first / "travel.yaml", bare / "travel.yaml")
    shutil.copytree(first / "results", bare / "results", symlinks=True, copy_function=shutil.copy2)
    assert not (bare / ".snakemake").exists()
    assert jobs(bare, nltk_env(tmp_path / "bare" / "nltk_data")) == []

    # an edited question reruns the set's build and what reads it, not a copy's new mtimes
    queries = clone / "resources" / "retrieval" / "telecom_qa" / "queries.jsonl"
    queries.write_text(queries.read_text().replace("?", " ?", 1))
    planned = jobs(clone, env)
    assert ("retrieval_build", {"dataset": "telecom_qa"}) in planned
    assert {rule for rule, _ in planned} >= {"retrieval_build", "embed", "retrieval_search", "report"}
