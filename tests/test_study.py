"""Shared planning without Snakemake (workflow_scripts/study.py, probes.py): which model runs which
probe and dataset, derived corpora and reuse, quoted command-line options, the probe registry."""
import hashlib
import json
import os
import shlex
import shutil
from pathlib import Path

import pytest

from workflow_scripts import probes
from workflow_scripts.config import validate
from workflow_scripts.study import DatasetPair, Study


def study(**extra) -> Study:
    config = {"seed": 1, "embedding_partitions": 2,
              "sources": {"s": {"format": "lines", "path": "s.txt", "languages": ["en"]}},
              "corpora": {"c": {"source": "s", "language": "en"}, "short": {"source": "s", "language": "en", "max_tokens": 9}},
              "models": {"a": {"family": "hashing", "dim": 8}, "t": {"family": "tfidf", "probes": ["triplets"]},
                         "b": {"family": "hashing", "dim": 8, "datasets": ["two"], "corpora": ["short"]}},
              "triplets": {"datasets": {"one": {"file": "one.tsv"}, "two": {"file": "two.tsv"}}}}
    config.update(extra)
    return Study(validate(config), "res")


def test_pairs_follow_probes_datasets_and_config_order():
    s = study()
    assert s.dataset_pairs("triplets") == [DatasetPair("one", "a"), DatasetPair("two", "a"), DatasetPair("one", "t"),
                                           DatasetPair("two", "t"), DatasetPair("two", "b")]
    assert s.dataset_pairs("montague") == []  # not configured
    assert not s.runs_probe("t", "csc") and s.runs_probe("a", "csc")
    assert s.model_corpora("a") == ["c", "short"] and s.model_corpora("b") == ["short"]
    assert s.stores("a", "triplets.one") == ["res/embeddings/a/triplets.one/part-000", "res/embeddings/a/triplets.one/part-001"]


def test_a_derived_corpus_reuses_its_parents_vectors_except_for_tfidf_and_absent_parents():
    s = study()
    assert s.parent_corpus("short") == "c" and s.parent_corpus("c") is None
    assert s.reuse_scope("a", "short") == "c"
    assert s.reuse_scope("b", "short") is None  # b does not embed the parent corpus
    assert s.reuse_scope("a", "triplets.one") is None


def test_every_probe_plans_from_its_declaration():
    s = study()
    plans = {p.name: p.planner()(s, p) for p in probes.declarations()}
    assert list(plans) == [p.name for p in probes.declarations()]
    assert plans["csc"].pairs and {p.corpus for p in plans["csc"].pairs} == {"c", "short"}
    assert plans["triplets"].datasets == ["one", "two"] and plans["triplets"].ran
    assert not plans["montague"].ran and plans["montague"].targets() == []
    assert plans["triplets"].targets() == ["res/tables/triplets_accuracy.csv"]
    # per-dataset table pages follow the datasets that some model scores
    assert ("res/tables/triplets_two.csv", "two", "dataset.rst") in plans["triplets"].report_pages()


def test_registry_names_what_is_declared():
    with pytest.raises(KeyError, match="no probe or stage named 'nope'"):
        probes.get("nope")
    assert "adapt" not in probes.probe_names() and probes.get("adapt").is_stage
    assert set(probes.declared_rules()) == {r for p in probes.declarations() for r in p.rules}
    assert list(probes.categories())[0] == "overview" and list(probes.categories())[-2:] == ["inputs", "runtime"]


def test_lineage_of_trained_models_matches_the_adapt_stage():
    """Domain shift reads a trained model's root base and steps from its registered entry (no import
    of the adapt stage): the same answers as the stage's own recipes on the adapt study's config."""
    from pathlib import Path

    import yaml

    from workflow_scripts.adapt import models as adapt_models
    config = validate(yaml.safe_load((Path(__file__).resolve().parents[1] / "resources" / "adapt"
                                      / "study.yaml").read_text()))
    adapt_models.register(config, "res")
    s = Study(config, "res")
    recipes = adapt_models.order(config)
    assert recipes and {m for m in config["models"] if s.trained(m)} == set(recipes)
    for m in config["models"]:
        assert s.root_base(m) == adapt_models.root_base(config, m), m
        assert s.adaptation(m) == adapt_models.adaptation(config, m), m
    assert {s.adaptation(m) for m in recipes} >= {"PT", "FT", "PT-FT"}


def test_a_local_folder_is_judged_by_its_content_not_its_mtime(tmp_path, monkeypatch):
    """A fresh clone or a copy gives the data new mtimes: the folder's content stamp keeps its own
    mtime then; an edit rewrites it (rules/common.smk `by_content`, Study.content_stamp). A small
    file too: Snakemake judged it by its sha256 only where `.snakemake/` recorded one, so a results
    folder copied without it reran what read the file."""
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data" / "qa"
    (data / "qrels").mkdir(parents=True)
    (data / "corpus.jsonl").write_text('{"_id": "d1", "text": "a"}\n')
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    (tmp_path / "small.txt").write_text("one line\n")
    s = study()
    (tmp_path / "large.txt").write_text("more than twenty bytes\n")
    assert s.judged_by_content("data/qa") and s.judged_by_content("large.txt") and s.judged_by_content("small.txt")
    assert not s.judged_by_content("missing.txt")  # Snakemake refuses a missing input itself
    (tmp_path / "res" / "texts").mkdir(parents=True)
    assert not s.judged_by_content("res/texts")  # the workflow's own outputs keep Snakemake's rules
    small = json.loads((tmp_path / s.content_stamp("small.txt")).read_text())
    assert small == {"path": "small.txt", "sha256": hashlib.sha256(b"one line\n").hexdigest()}  # a file: its sha256

    stamp = tmp_path / s.content_stamp("data/qa")
    assert stamp.parent == tmp_path / "res" / ".cache" / "content"
    record = json.loads(stamp.read_text())
    # the path as the working directory sees it; the digest over the files' names and sha256s, in order
    files = ["corpus.jsonl", "qrels/test.tsv"]
    expected = hashlib.sha256("".join(f"{f}\0{hashlib.sha256((data / f).read_bytes()).hexdigest()}\n"
                                      for f in files).encode()).hexdigest()
    assert record == {"path": "data/qa", "sha256": expected}
    os.utime(stamp, (1_000_000, 1_000_000))
    for f in files:  # what a clone does: the same bytes, new mtimes
        os.utime(data / f, (2_000_000_000, 2_000_000_000))
    assert study().content_stamp("data/qa") == str(stamp.relative_to(tmp_path))
    assert stamp.stat().st_mtime == 1_000_000 and json.loads(stamp.read_text()) == record
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t0\n")  # an edit
    study().content_stamp("data/qa")
    assert stamp.stat().st_mtime > 1_000_000 and json.loads(stamp.read_text())["sha256"] != expected


def test_digest_cache_keys_are_relative_so_a_moved_checkout_keeps_them(tmp_path, monkeypatch):
    from workflow_scripts.model_settings import ModelDigests

    (tmp_path / "a" / "m").mkdir(parents=True)
    (tmp_path / "a" / "m" / "weights.bin").write_bytes(b"\x00" * 64)
    monkeypatch.chdir(tmp_path / "a")
    first = ModelDigests("cache.json")
    digest = first.digest([Path("m")])
    first.save()
    assert list(json.loads(Path("cache.json").read_text())) == ["m/weights.bin"]
    shutil.copytree(tmp_path / "a", tmp_path / "b", copy_function=shutil.copy2)  # mtimes kept, as `cp -a`
    monkeypatch.chdir(tmp_path / "b")
    moved = ModelDigests("cache.json")
    assert moved.digest([Path("m")]) == digest and moved.reads == 0
