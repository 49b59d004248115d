"""Shared planning without Snakemake (workflow_scripts/study.py, probes.py): which model runs which
probe and dataset, derived corpora and reuse, quoted command-line options, the probe registry."""
import shlex

import pytest

from workflow_scripts import probes
from workflow_scripts.config import validate
from workflow_scripts.study import DatasetPair, Study, cli_options


def test_cli_options_quote_every_value_and_drop_empty_ones():
    text = cli_options(("--a", "x y"), ("--b", None), ("--c", ["p", "q r"]), ("--d", ""), ("--e", []),
                       ("--f", "$(touch m)"), ("--n", 3))
    assert text == "--a 'x y' --c p 'q r' --f '$(touch m)' --n 3"
    assert shlex.split(text) == ["--a", "x y", "--c", "p", "q r", "--f", "$(touch m)", "--n", "3"]
    assert cli_options() == "" and cli_options(("--x", None)) == ""


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
    assert ("res/tables/triplets_two.csv", "two", "triplets_dataset.rst") in plans["triplets"].report_pages()


def test_registry_names_what_is_declared():
    with pytest.raises(KeyError, match="no probe or stage named 'nope'"):
        probes.get("nope")
    assert "adapt" not in probes.probe_names() and probes.get("adapt").is_stage
    assert set(probes.default_resources()) == {r for p in probes.declarations() for r in p.rules}
    assert list(probes.categories())[0] == "overview" and list(probes.categories())[-2:] == ["inputs", "runtime"]


def test_lineage_of_trained_models_matches_the_adapt_stage():
    """Domain shift reads a trained model's root base and steps from its registered entry (no import
    of the adapt stage): the same answers as the stage's own recipes on the adapt study's config."""
    from pathlib import Path

    import yaml

    from workflow_scripts.adapt import models as adapt_models
    config = validate(yaml.safe_load((Path(__file__).resolve().parents[1] / "resources" / "configs"
                                      / "study_adapt.yaml").read_text()))
    adapt_models.register(config, "res")
    s = Study(config, "res")
    recipes = adapt_models.order(config)
    assert recipes and {m for m in config["models"] if s.trained(m)} == set(recipes)
    for m in config["models"]:
        assert s.root_base(m) == adapt_models.root_base(config, m), m
        assert s.adaptation(m) == adapt_models.adaptation(config, m), m
    assert {s.adaptation(m) for m in recipes} >= {"PT", "FT", "PT-FT"}
