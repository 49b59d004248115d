"""Studies that do not trample each other (workflow_scripts/study_folders.py, rules/common.smk, Makefile), and
the same numbers however a study is started (NLTK data that chooses a method stops the plan unless
the config asks for the fallback: nltk_data.method_choices)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from workflow_runner import ROOT, snakemake, write_config
from workflow_scripts import nltk_data as nd
from workflow_scripts import study_folders

TAGGER, WORDNET = "averaged_perceptron_tagger_eng", "wordnet"


def tiny_config(directory: Path, **extra) -> dict:
    (directory / "bitext.txt").write_text("the cat sleeps\tde kat slaapt\nprices are high\tde prijzen zijn hoog\n")
    return {"seed": 1, "embedding_partitions": 1,
            "sources": {"mini": {"format": "bitext", "path": "bitext.txt", "languages": ["en", "nl"]}},
            "corpora": {"mini_en": {"source": "mini", "language": "en"}},
            "models": {"hashing": {"family": "hashing", "dim": 16, "probes": ["csc"]}},
            "csc": {"perturb": {"grammatical_negation": {"enabled": True, "use_tagger": False}}, "bootstrap_b": 10},
            **extra}


# ---- identity and default folder ------------------------------------------------------------------

def test_identity_default_folder_and_overlays(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mine = study_folders.identity({}, ["studies/my_study.yaml"])
    assert mine == {"study": "my_study", "key": "config:studies/my_study.yaml",
                    "configfiles": ["studies/my_study.yaml"]}
    assert study_folders.default_results(mine) == "results/my_study"
    # an overlay after it: same study, same folder
    both = study_folders.identity({}, ["studies/my_study.yaml", "/elsewhere/add_model.yaml"])
    assert both["key"] == mine["key"] and both["study"] == "my_study"
    assert study_folders.default_results(both) == "results/my_study"
    # the default config.yaml keeps results/; with no config file at all Snakemake reads config.yaml
    assert study_folders.default_results(study_folders.identity({}, ["config.yaml"])) == "results"
    assert study_folders.identity({}, [])["key"] == "config:config.yaml"
    # another folder's config.yaml is named by its folder, not taken for the default study
    pilot = study_folders.identity({}, ["studies/pilot/config.yaml"])
    assert (pilot["study"], study_folders.default_results(pilot)) == ("pilot", "results/pilot")
    # a config file outside the working directory is named by its absolute path
    assert study_folders.identity({}, ["/abs/a.yaml"])["key"] == "config:/abs/a.yaml"
    # `study:` names it, whatever its file
    named = study_folders.identity({"study": "pilot"}, ["x.yaml"])
    assert named["key"] == "study:pilot" and study_folders.default_results(named) == "results/pilot"
    # a name that is one of the folders a study writes (or a probe's) would nest into the default study's
    for name in ("tables", "csc"):
        with pytest.raises(study_folders.StudyConflict,
                           match=rf"`results/{name}` is a folder the default study writes"):
            study_folders.default_results(study_folders.identity({}, [f"{name}.yaml"]))


def test_results_folder_of_config_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("my_study.yaml").write_text("seed: 1\nmodels: {}\n")
    Path("own.yaml").write_text("seed: 1\nresults: /data/own\nmodels: {}\n")
    Path("overlay.yaml").write_text("models: {extra: {family: tfidf}}\n")
    Path("moves.yaml").write_text("results: elsewhere\n")
    assert study_folders.results_folder(["my_study.yaml"]) == "results/my_study"
    assert study_folders.results_folder(["my_study.yaml", "overlay.yaml"]) == "results/my_study"
    assert study_folders.results_folder(["own.yaml", "overlay.yaml"]) == "/data/own"
    assert study_folders.results_folder(["own.yaml", "moves.yaml"]) == "elsewhere"  # later files win, as in Snakemake
    assert study_folders.load_configs(["own.yaml", "overlay.yaml"])["models"] == {"extra": {"family": "tfidf"}}
    # the default study, from the repository root (where make runs)
    monkeypatch.chdir(ROOT)
    assert study_folders.results_folder([]) == study_folders.results_folder(["config.yaml"]) == "results"
    assert study_folders.results_folder([str(ROOT / "config.yaml")]) == "results"


# ---- ownership --------------------------------------------------------------------------------------

def test_a_folder_of_another_study_is_refused_naming_both(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "results"
    a = study_folders.identity({}, ["a.yaml"])
    study_folders.claim(folder, a)
    recorded = json.loads((folder / study_folders.MARKER).read_text())
    assert (recorded["study"], recorded["key"], recorded["configfiles"]) == ("a", "config:a.yaml", ["a.yaml"])
    study_folders.claim(folder, study_folders.identity({}, ["a.yaml", "overlay.yaml"]))  # the same study: fine
    assert json.loads((folder / study_folders.MARKER).read_text()) == recorded  # and the marker is left as it was
    b = study_folders.identity({}, ["b.yaml", "overlay.yaml"])
    with pytest.raises(study_folders.StudyConflict) as err:
        study_folders.claim(folder, b)
    assert str(err.value).startswith(
        f"results folder `{folder}` belongs to study `a` (config files: a.yaml); this run is study `b` "
        "(config files: b.yaml, overlay.yaml). ")
    assert "`results:`" in str(err.value) and str(folder / study_folders.MARKER) in str(err.value)
    # same stem in another folder: another study
    with pytest.raises(study_folders.StudyConflict):
        study_folders.check(folder, study_folders.identity({}, ["other/a.yaml"]))
    # a named study is compared by its name
    study_folders.claim(tmp_path / "named", study_folders.identity({"study": "pilot"}, ["one.yaml"]))
    study_folders.check(tmp_path / "named", study_folders.identity({"study": "pilot"}, ["two.yaml"]))
    # a folder without a marker (made before it existed) belongs to no one yet
    study_folders.check(tmp_path / "fresh", b)


def test_workflow_refuses_another_studys_folder_before_planning(tmp_path):
    """Raw snakemake, a dry run: the study of b.yaml may not plan into the folder a.yaml's study made."""
    config = tiny_config(tmp_path, results="shared")
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    for path in (a, b):
        path.write_text(yaml.safe_dump(config))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        study_folders.claim("shared", study_folders.identity(config, [str(a)]))
    finally:
        os.chdir(cwd)
    proc = snakemake(tmp_path, b, "--dry-run", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert ("results folder `shared` belongs to study `a` (config files: a.yaml); this run is study `b` "
            "(config files: b.yaml)") in out
    assert not (tmp_path / "shared" / "corpora").exists()


# ---- the Makefile -------------------------------------------------------------------------------------

def make_n(*args: str) -> list[str]:
    if shutil.which("make") is None:
        pytest.skip("no make")
    venv = Path(sys.executable).parent.parent
    # the Makefile's own defaults, whatever this shell exports
    env = {k: v for k, v in os.environ.items() if k not in ("CONFIG", "RESULTS", "CORES", "SNAKEMAKE_ARGS", "MAKEFLAGS")}
    proc = subprocess.run(["make", "-n", "-C", str(ROOT), f"VENV={venv}", f"PYTHON={sys.executable}", *args],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stdout.splitlines() if "snakemake " in line or line.startswith("echo \"Done")]


def test_make_expands_config_into_the_study_commands():
    venv = Path(sys.executable).parent.parent
    snake = f"{venv}/bin/snakemake"
    both = "config.yaml resources/configs/add_model.yaml"
    assert make_n("run", f"CONFIG={both}") == [
        f"{snake} --cores all --configfile {both} ",
        'echo "Done. Results are in "\'results\'"/: report.md, tables/, plots/."']
    assert make_n("report", f"CONFIG={both}") == [
        f"{snake} --report 'results/report.html' --configfile {both} ",
        'echo "Done. The report is "\'results\'"/report.html."']
    csc = "resources/configs/test_small.yaml"
    assert make_n("report", f"CONFIG={csc}") == [
        f"{snake} --report 'results/test_small/report.html' --configfile {csc} ",
        'echo "Done. The report is "\'results/test_small\'"/report.html."']
    # the dry run goes through the plan summary, which runs Snakemake's dry run after `--`
    assert make_n("dry-run", f"CONFIG={csc}", "CORES=2") == [f"\t-- {snake} --dry-run --cores 2 --configfile {csc} "]
    # the default study, and a folder moved with --config results=
    assert make_n("run") == [f"{snake} --cores all  ", 'echo "Done. Results are in "\'results\'"/: report.md, tables/, plots/."']
    assert make_n("report", f"CONFIG={csc}", "SNAKEMAKE_ARGS=--config results=/tmp/x")[0] == \
        f"{snake} --report '/tmp/x/report.html' --configfile {csc} --config results=/tmp/x"


def test_shipped_overlay_adds_one_model_to_the_default_study():
    base = yaml.safe_load((ROOT / "config.yaml").read_text())
    overlay = yaml.safe_load((ROOT / "resources" / "configs" / "add_model.yaml").read_text())
    assert set(overlay) == {"models"} and len(overlay["models"]) == 1
    (name, spec), = overlay["models"].items()
    assert name not in base["models"] and spec["family"] == "transformers" and len(spec["probes"]) <= 2
    from workflow_scripts.model_settings import BUNDLED_MODELS
    assert spec["name"] in BUNDLED_MODELS  # offline: from an installed package
    merged = study_folders.load_configs([ROOT / "config.yaml", ROOT / "resources" / "configs" / "add_model.yaml"])
    assert set(merged["models"]) == set(base["models"]) | {name}


# ---- NLTK data that chooses a method ----------------------------------------------------------------

def csc_config(**negation) -> dict:
    from workflow_scripts.config import validate
    return validate({"seed": 1, "models": {"tfidf": {"family": "tfidf"}},
                     "csc": {"perturb": {"grammatical_negation": negation}}})


def test_missing_method_data_stops_unless_the_fallback_is_explicit(tmp_path):
    empty = [tmp_path]
    # default (use_tagger true): missing data stops, naming the packages, the key and both ways on
    choices = nd.method_choices(csc_config(), empty, applies={"csc": True})
    assert [(c["probe"], c["uses"], c["missing"]) for c in choices] == [("csc", True, [TAGGER, WORDNET])]
    message = nd.method_message(choices)
    assert message.startswith(f"NLTK data missing for csc: {TAGGER}, {WORDNET}. Config key "
                              "`csc.perturb.grammatical_negation.use_tagger` asks for")
    assert "export NLTK_DATA=" in message and "`csc.perturb.grammatical_negation.use_tagger: false`" in message
    assert nd.method_lines(choices) == []
    # the fallback asked for: no stop, and the console says rules are used
    choices = nd.method_choices(csc_config(use_tagger=False), empty, applies={"csc": True})
    assert nd.method_message(choices) == ""
    assert nd.method_lines(choices) == [
        "csc: English grammatical negation by rules only (sentences that need tags are counted, not negated) "
        "(`csc.perturb.grammatical_negation.use_tagger`: false; the fallback, asked for explicitly)"]
    # the method does not apply: negation off, or no model scores a corpus it negates (CscPlan)
    assert nd.method_message(nd.method_choices(csc_config(enabled=False), empty, applies={"csc": True})) == ""
    assert nd.method_choices(csc_config(), empty, applies={"csc": False}) == []
    # the data present: the tagger, said so
    for category, package in (("taggers", TAGGER), ("corpora", WORDNET)):
        (tmp_path / category / package).mkdir(parents=True)
        (tmp_path / category / package / "x").write_text("x")
    choices = nd.method_choices(csc_config(use_tagger=True), empty, applies={"csc": True})
    assert nd.method_message(choices) == ""
    assert nd.method_lines(choices) == [
        "csc: English grammatical negation with NLTK's tagger and WordNet (`csc.perturb.grammatical_negation."
        f"use_tagger`: true; NLTK data found: {TAGGER}, {WORDNET})"]


def test_raw_snakemake_stops_without_the_taggers_data(tmp_path):
    """What `make run` would do, under raw snakemake too: the plan stops, and runs once the config
    asks for the rules explicitly (an overlay config is enough)."""
    config = tiny_config(tmp_path)
    config["csc"]["perturb"]["grammatical_negation"].pop("use_tagger")  # the default: the tagger
    cfg = write_config(tmp_path, config)
    empty = tmp_path / "no_nltk_data"
    empty.mkdir()
    env = {**os.environ, "NLTK_DATA": str(empty), "HOME": str(tmp_path)}
    if nd.missing_packages([TAGGER, WORDNET], nd.search_paths()[1:]) != [TAGGER, WORDNET]:
        pytest.skip("the tagger's data is installed in a system folder")
    base = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(tmp_path),
            "--cores", "1", "--dry-run", "--configfile", str(cfg)]
    proc = subprocess.run(base, capture_output=True, text=True, env=env)
    assert proc.returncode != 0
    assert f"NLTK data missing for csc: {TAGGER}, {WORDNET}" in proc.stderr + proc.stdout
    fallback = tmp_path / "rules.yaml"
    fallback.write_text("csc: {perturb: {grammatical_negation: {use_tagger: false}}}\n")
    proc = subprocess.run([*base, str(fallback)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "csc: English grammatical negation by rules only" in proc.stderr
