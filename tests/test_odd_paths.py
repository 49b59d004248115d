"""Paths a user chooses reach the jobs as they are: the rules run functions (Snakemake's `script:`,
workflow_scripts/jobs.py), so no path or value goes through a shell command line. A small CSC study
whose `results` folder and word-vectors `path` hold a space and a command substitution
(`$(touch <tmp>/MARKER<n>)`) must run to the end, write its tables under that folder, and never run
the substitution. A length-matched corpus (`match_lengths_of`) reads its reference corpus there.

SHELL_QUOTING_PLAIN=1 runs the same study with plain folder names (no space, no `$(...)`): the check
that a failure of these tests is the odd paths, not the study or the harness."""
import os
import re
from pathlib import Path

import numpy as np
import pytest

from workflow_runner import ROOT, snakemake, write_config

PLAIN = os.environ.get("SHELL_QUOTING_PLAIN") == "1"
CORPUS_LINES = 40  # of the default EN-NL sample: the run stays well under a minute on 2 cores


def odd(name: str, marker: Path) -> str:
    """A folder name with a space and a command substitution that would create `marker`."""
    return name.replace(" ", "_") if PLAIN else f"{name} $(touch {marker})"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    base = tmp_path_factory.mktemp("quoting")
    markers = [base / "MARKER1", base / "MARKER2"]
    bitext = base / "bitext.txt"
    lines = (ROOT / "resources" / "corpora" / "en_nl_sample.txt").read_text().splitlines()[:CORPUS_LINES]
    bitext.write_text("\n".join(lines) + "\n")
    # word vectors for the English side: every word of the corpus and the inserted terms
    words = sorted({w for line in lines for w in line.split("\t")[0].split()} | {"a", "the", "not"})
    rng = np.random.default_rng(0)
    vec_dir = base / odd("word vectors", markers[1])
    vec_dir.mkdir(parents=True)
    vectors = vec_dir / "vectors.vec"
    vectors.write_text(f"{len(words)} 8\n" + "".join(
        w + " " + " ".join(f"{x:.5f}" for x in rng.standard_normal(8)) + "\n" for w in words))
    results = odd("odd results", markers[0])
    config = {
        "seed": 3, "embedding_partitions": 1, "results": results,
        "sources": {"sample": {"format": "bitext", "path": str(bitext), "languages": ["en", "nl"]}},
        "corpora": {"pc_en": {"source": "sample", "language": "en"},
                    # length-matched: derive_corpus reads <results>/corpora/pc_en as its reference; a subset
                    # of pc_en, so the word vectors' embed job copies pc_en's (--reuse <results>/...)
                    "pc_en_matched": {"source": "sample", "language": "en", "match_lengths_of": "pc_en"}},
        "models": {"tfidf": {"family": "tfidf", "corpora": ["pc_en_matched"]},  # a fitted model under the odd results folder
                   "wv": {"family": "word_vectors", "path": str(vectors)}},  # a model file under the odd folder
        "csc": {"bootstrap_b": 10, "perturb": {"grammatical_negation": {"enabled": False}}},
    }
    run = base / "run"
    run.mkdir()
    return {"base": base, "run": run, "cfg": write_config(run, config), "results": run / results,
            "results_value": results, "markers": markers, "vectors": vectors}


def markers_found(base: Path) -> list[Path]:
    """Files a command substitution created (folders named `MARKER1)` are the odd paths themselves)."""
    return [p for p in base.rglob("MARKER*") if p.is_file()]


def test_odd_results_and_model_paths_run_to_the_end(study):
    proc = snakemake(study["run"], study["cfg"], check=False)
    found = markers_found(study["base"])
    failed = re.findall(r"^Error in rule (\w+):", proc.stdout + proc.stderr, re.M)
    assert not found and proc.returncode == 0, (
        f"command substitutions run by the shell: {[p.name for p in found]}; snakemake exit {proc.returncode}, "
        f"failed rules {sorted(set(failed))}\n{proc.stderr[-3000:]}")
    res = study["results"]
    for table in ("csc_overlap.csv", "csc_table3.csv", "length_buckets.csv"):
        assert (res / "tables" / table).is_file(), table
    assert (res / "report.md").is_file()
    overlap = (res / "tables" / "csc_overlap.csv").read_text()
    assert "pc_en_matched,wv," in overlap and "pc_en_matched,tfidf," in overlap and "pc_en,wv," in overlap
    assert (res / "corpora" / "pc_en_matched").is_dir()
    assert not markers_found(study["base"])
