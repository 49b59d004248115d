"""Config inputs that would otherwise be taken at their word: a key given twice in a config file, a
`results:` folder that is the filesystem root (or the working directory, or a folder of the
workflow's sources), a transformer model `path` that does not exist. Each is refused before any job,
with the key and the expected form; the workflow-level checks run Snakemake's dry run on a tiny config."""
import os
from pathlib import Path

import pytest
import yaml

from workflow_runner import ROOT, snakemake, write_config
from workflow_scripts.config import CHECKOUT, ConfigError, check_duplicate_keys, results_problems, validate

DEFAULT = yaml.safe_load((ROOT / "config.yaml").read_text())


def tiny_config(directory: Path) -> dict:
    (directory / "bitext.txt").write_text("the cat sleeps\tde kat slaapt\nprices are high\tde prijzen zijn hoog\n")
    return {"seed": 1, "embedding_partitions": 1, "results": "results",
            "sources": {"mini": {"format": "bitext", "path": "bitext.txt", "languages": ["en", "nl"]}},
            "corpora": {"mini_en": {"source": "mini", "language": "en"}},
            "models": {"hashing": {"family": "hashing", "dim": 16}},
            "csc": {"perturb": {"grammatical_negation": {"enabled": False}}, "bootstrap_b": 10}}


# ---- row 1: a key twice in a config file --------------------------------------------------------

def test_a_key_given_twice_is_refused_with_its_path_and_both_lines(tmp_path):
    path = tmp_path / "study.yaml"
    path.write_text("seed: 13\n"                       # 1
                    "models:\n"                         # 2
                    "  minilm:\n"                       # 3
                    "    family: sentence_transformers\n"
                    "    name: a\n"                     # 5
                    "  tfidf: {family: tfidf}\n"        # 6
                    "  minilm:\n"                       # 7
                    "    family: tfidf\n")
    with pytest.raises(ConfigError) as err:
        check_duplicate_keys(path)
    assert str(err.value).startswith(f"config file `{path}`: key `models.minilm` appears twice (lines 3 and 7)")
    path.write_text("seed: 13\nshard_rows: 5\nseed: 14\nseed: 15\n")
    with pytest.raises(ConfigError, match=r"key `seed` appears 3 times \(lines 1, 3 and 4\)"):
        check_duplicate_keys(path)
    # deeper: a flow mapping, inside a list
    path.write_text("domain_shift:\n  datasets:\n    d:\n      specific: [{corpus: a, corpus: b}]\n")
    with pytest.raises(ConfigError, match=r"key `domain_shift.datasets.d.specific.0.corpus` appears twice \(lines 4 and 4\)"):
        check_duplicate_keys(path)


def test_the_same_key_in_different_mappings_and_merge_keys_are_fine(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("base: &b {family: tfidf, probes: [csc]}\n"
                    "models:\n  a: {<<: *b, family: hashing}\n  b: {family: tfidf}\n"
                    "csc: {bootstrap_b: 10}\ntriplets: {bootstrap_b: 10}\n")
    check_duplicate_keys(path)
    check_duplicate_keys(ROOT / "config.yaml")
    for other in (ROOT / "resources" / "configs").glob("*.yaml"):
        check_duplicate_keys(other)


def test_workflow_refuses_a_duplicate_key_before_any_job(tmp_path):
    config = tiny_config(tmp_path)
    path = write_config(tmp_path, config)
    text = path.read_text()
    path.write_text(text + "seed: 2\n")
    lines = path.read_text().splitlines()
    out = snakemake(tmp_path, path, "--dry-run", check=False)
    assert out.returncode != 0
    assert (f"config file `{path}`: key `seed` appears twice (lines 1 and {len(lines)})") in out.stdout + out.stderr
    assert not (tmp_path / "results").exists()


# ---- row 2: results at the root, the working directory, a source folder -----------------------

@pytest.mark.parametrize("results, reason", [
    ("", "is empty"), ("  ", "is empty"), ("/", "is the filesystem root"), ("//", "is the filesystem root"),
    ("/..", "is the filesystem root"), (".", "is the working directory itself"),
    ("./", "is the working directory itself"),
])
def test_results_at_the_root_or_the_working_directory_is_refused(tmp_path, results, reason):
    assert results_problems(results, tmp_path) == [
        f"config key `results`: {results!r} {reason}; expected a folder of the study's own for its outputs: a path "
        "relative to the working directory, or absolute, that is not the filesystem root, the working directory "
        "itself, the workflow's checkout or one of its folders (workflow_scripts, rules, resources, envs, profiles, "
        "tests)"]


@pytest.mark.parametrize("results, reason", [
    ("workflow_scripts", "is the workflow's `workflow_scripts` folder"),
    ("rules/", "is the workflow's `rules` folder"),
    ("resources/out", "is inside the workflow's `resources` folder"),
    (str(CHECKOUT / "tests"), "is the workflow's `tests` folder"),
    (str(CHECKOUT), f"is the workflow's checkout `{CHECKOUT}`"),
    (str(CHECKOUT.parent), f"holds the workflow's checkout `{CHECKOUT}`"),
])
def test_results_in_the_workflow_sources_is_refused(results, reason, tmp_path):
    # relative paths from the checkout (make run), absolute ones from a scratch working directory
    problems = results_problems(results, tmp_path if os.path.isabs(results) else CHECKOUT)
    assert len(problems) == 1 and problems[0].startswith(f"config key `results`: {results!r} {reason}; expected")


@pytest.mark.parametrize("results", ["into/../rules", "into/../tests/out", "checkout/workflow_scripts/x",
                                     "into_tests"])
def test_results_reaching_the_workflow_sources_through_a_symlink_is_refused(tmp_path, results):
    """`results:` resolved through symlinks before `..` is applied, as the filesystem does: a link into
    the checkout followed by `..` lands in the checkout, not beside the link."""
    (tmp_path / "into").symlink_to(CHECKOUT / "workflow_scripts")
    (tmp_path / "checkout").symlink_to(CHECKOUT)
    (tmp_path / "into_tests").symlink_to(CHECKOUT / "tests")
    problems = results_problems(results, tmp_path)
    assert len(problems) == 1 and "the workflow's `" in problems[0], problems


def test_ordinary_results_folders_are_accepted(tmp_path):
    assert results_problems("results", CHECKOUT) == []  # the default, from the checkout (make run)
    assert results_problems("results/study_csc", CHECKOUT) == []
    assert results_problems("results", tmp_path) == []
    assert results_problems(str(tmp_path / "elsewhere"), CHECKOUT) == []
    assert results_problems("../sibling", tmp_path) == []


def test_validate_refuses_results_at_the_root():
    for bad in ("", "/"):
        with pytest.raises(ConfigError, match=r"config key `results`: .* expected a folder of the study's own"):
            validate({**DEFAULT, "results": bad})


def test_workflow_refuses_results_at_the_root_before_any_job(tmp_path):
    config = tiny_config(tmp_path)
    config["results"] = "/"
    out = snakemake(tmp_path, write_config(tmp_path, config), "--dry-run", check=False)
    assert out.returncode != 0 and "config key `results`: '/' is the filesystem root" in out.stdout + out.stderr


# ---- row 5: a transformer model's path that does not exist ------------------------------------

def test_missing_transformer_model_folder_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bert").mkdir()
    (tmp_path / "weights.bin").write_text("")
    base = DEFAULT
    models = {"here": {"family": "transformers", "path": "bert"},
              "gone": {"family": "sentence_transformers", "path": "no/such/model"},
              "file": {"family": "transformers", "path": "weights.bin"}}
    with pytest.raises(ConfigError) as err:
        validate({**base, "models": {**base["models"], **models}})
    lines = str(err.value).splitlines()[1:]
    assert [line.strip().split(" (from")[0] for line in lines] == [
        "config key `models.gone.path`: no such folder `no/such/model`",
        "config key `models.file.path`: a file, not a folder `weights.bin`"]
    assert f"(from the working directory `{tmp_path}`)" in lines[0]
    validate({**base, "models": {**base["models"], "here": models["here"]}})
    # the jobs' re-read of the Snakefile (check_paths=False) does not look
    validate({**base, "models": {**base["models"], **models}}, check_paths=False)


def test_adapted_models_and_the_default_config_validate(tmp_path, monkeypatch):
    """Adapted models are registered with their future path (results/models/<recipe>) after
    validation (the adapt stage's `prepare`): the check does not take them for user models. The
    recipes are the adapt study's (the default config has none)."""
    from workflow_scripts.adapt.models import register
    from workflow_scripts.config import model_path_problems
    monkeypatch.chdir(CHECKOUT)
    study = yaml.safe_load((CHECKOUT / "resources" / "adapt" / "study.yaml").read_text())
    config = register(validate(study), str(tmp_path / "results"))
    adapted = [name for name, spec in config["models"].items() if spec.get("adapted")]
    assert adapted and not any(os.path.exists(config["models"][name]["path"]) for name in adapted)
    assert model_path_problems(config) == []
    monkeypatch.chdir(tmp_path)  # from anywhere: the default config names no local model folder
    validate(DEFAULT)


def test_workflow_refuses_a_missing_model_folder_while_planning(tmp_path):
    config = tiny_config(tmp_path)
    config["models"]["bert"] = {"family": "transformers", "path": "models/bert", "device": "cpu"}
    out = snakemake(tmp_path, write_config(tmp_path, config), "--dry-run", check=False)
    assert out.returncode != 0
    assert "config key `models.bert.path`: no such folder `models/bert`" in out.stdout + out.stderr
    assert not os.path.exists(tmp_path / "results")
