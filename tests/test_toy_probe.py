"""Adding a probe is one folder of its own in each of four top-level folders and one `include:`
(docs/adding-a-probe.md): the toy probe, every file of it read from that page and added to a
temporary copy of the repository's tracked files, lies in those folders, runs each job as a function
its rule names, is planned, scored and shown in the report (Markdown section, overview column,
table page, HTML report category), and the shared tests a new probe meets and its own tests pass on
that copy, with no other file edited."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from workflow_runner import write_config

ROOT = Path(__file__).resolve().parents[1]

PAIRS = [["the cat sat on the mat", "a cat sat on a mat"], ["the dog ran home", "the dog did not run home"],
         ["it rains today", "today it rains"], ["she reads a book", "she does not read a book"]]


def documented_files() -> dict[str, str]:
    """The files docs/adding-a-probe.md's worked example shows: `<!-- file: path -->` and a fenced block."""
    text = (ROOT / "docs" / "adding-a-probe.md").read_text(encoding="utf-8")
    return {path: body + "\n" for path, body in re.findall(r"^<!-- file: (\S+) -->\n```\w*\n(.*?)\n```$", text, re.M | re.S)}


# the toy, file by file as the page shows it: nothing of it is written here, so the page cannot drift
TOY_FILES = documented_files()
# where a probe lives: one folder of its own in each of four top-level folders (and one `include:`)
PROBE_FOLDERS = ("workflow_scripts/toy/", "rules/toy.smk", "resources/toy/", "tests/toy/")


def tracked_files() -> list[str]:
    return subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.split("\0")[:-1]


@pytest.fixture(scope="module")
def toy_copy(tmp_path_factory):
    """A copy of the repository's tracked files with the toy probe added as docs/adding-a-probe.md
    says: its package with its page, its rule file, its tests, its study, and one include. ../shared
    beside it is the checkout's, where there is one (the tests that read it then run on the copy too)."""
    assert sorted(TOY_FILES) == ["resources/toy/study.yaml", "rules/toy.smk", "tests/toy/test_toy_jobs.py",
                                 "workflow_scripts/toy/README.md", "workflow_scripts/toy/__init__.py",
                                 "workflow_scripts/toy/plan.py", "workflow_scripts/toy/probe.py",
                                 "workflow_scripts/toy/schema.yaml", "workflow_scripts/toy/score.py"]
    # every file of the toy lies in one of its four folders, and none of them exists yet
    assert all(name.startswith(PROBE_FOLDERS) and not (ROOT / name).exists() for name in TOY_FILES)
    copy = tmp_path_factory.mktemp("toy") / "repo"
    tracked = [name for name in tracked_files() if (ROOT / name).is_file()]
    for name in tracked:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    if (ROOT.parent / "shared").is_dir():
        (copy.parent / "shared").symlink_to(ROOT.parent / "shared")
    for name, text in TOY_FILES.items():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_text(text)
    snakefile = copy / "Snakefile"
    text = snakefile.read_text()
    assert 'include: "rules/report.smk"' in text
    snakefile.write_text(text.replace('include: "rules/report.smk"', 'include: "rules/toy.smk"\ninclude: "rules/report.smk"'))
    # nothing else edited: every tracked file but the Snakefile as it is, the Snakefile one line longer
    changed = [name for name in tracked if (copy / name).read_bytes() != (ROOT / name).read_bytes()]
    assert changed == ["Snakefile"]
    assert len(snakefile.read_text().splitlines()) == len((ROOT / "Snakefile").read_text().splitlines()) + 1
    return copy


def test_each_documented_rule_runs_the_function_it_names():
    """The page's rule file is of the convention: each rule's job is `run_<rule>` of the toy's module,
    run by the one script; files declared once, no shell, no resources of its own (the declaration's,
    through the directives); the module has no command line of its own."""
    rules = dict(re.findall(r"^rule (\w+):\n(.*?)(?=^rule |\Z)", TOY_FILES["rules/toy.smk"], re.M | re.S))
    score = TOY_FILES["workflow_scripts/toy/score.py"]
    assert sorted(rules) == ["toy_aggregate", "toy_score", "toy_texts"]
    for rule, body in rules.items():
        assert f'**job_params("toy.score:run_{rule}"),' in body, rule
        assert body.rstrip().endswith('script:\n        "../workflow_scripts/run_job.py"'), rule
        assert not re.search(r"^    (shell|run):", body, re.M), rule
        # threads, memory and runtime: the declaration's, by the rule's name (rules/common.smk)
        assert f'    threads: RESOURCES.threads("{rule}")\n    resources:\n        **RESOURCES.sized("{rule}"),\n' in body, rule
        assert re.search(rf"^def run_{rule}\(job\) -> None:", score, re.M), rule
    assert not re.search(r"argparse|__main__|sys\.argv|json\.loads", score)


def run(copy: Path, workdir: Path, config: dict, *args, check=True):
    path = write_config(workdir, config)
    cmd = [sys.executable, "-m", "snakemake", "-s", str(copy / "Snakefile"), "--directory", str(workdir), "--cores", "2",
           *args, "--configfile", str(path)]
    env = {**__import__("os").environ, "PYTHONPATH": str(copy)}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=copy)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stdout[-4000:] + proc.stderr[-6000:])
    return proc


def test_a_toy_probe_is_planned_scored_and_reported(toy_copy, tmp_path):
    config = {"seed": 7, "embedding_partitions": 1,
              "models": {"hash": {"family": "hashing", "dim": 64}, "tf": {"family": "tfidf"}},
              "toy": {"bootstrap_b": 100, "datasets": {"pairs4": {"pairs": PAIRS}}}}
    dry = run(toy_copy, tmp_path, config, "--dry-run")
    text = dry.stdout + dry.stderr
    for rule in ("toy_texts", "toy_score", "toy_aggregate", "report"):
        assert f"rule {rule}:" in text, rule
    assert "rule ingest:" not in text and "rule perturb:" not in text  # a study without corpora
    run(toy_copy, tmp_path, config)
    table = pl.read_csv(tmp_path / "results" / "tables" / "toy_scores.csv")
    assert sorted(table["model"]) == ["hash", "tf"]
    # scored through the stores: TF-IDF cosines of the pairs, recomputed here from the fitted texts
    assert ((table["ci_low"] <= table["mean_cosine"]) & (table["mean_cosine"] <= table["ci_high"])).all()
    assert table["mean_cosine"].is_between(-1, 1).all()
    report = (tmp_path / "results" / "report.md").read_text()
    assert "# Toy pairs" in report and "Mean cosine similarity of configured sentence pairs" in report
    assert "## toy_scores" in report
    for other in ("# Concept Separation Curves", "# Sentence triplets", "# Retrieval", "# Inputs"):
        assert other not in report, other
    overview = pl.read_csv(tmp_path / "results" / "tables" / "overview.csv")
    assert "toy_pairs4" in overview.columns and overview.height == 2
    assert (tmp_path / "results" / "report" / "tables" / "toy_scores.html").exists()
    run(toy_copy, tmp_path, config, "--report", str(tmp_path / "report.html"))
    assert "Toy pairs" in (tmp_path / "report.html").read_text()
    # a config error of the toy's own check names its key
    config["toy"]["datasets"]["pairs4"]["pairs"] = []
    bad = run(toy_copy, tmp_path, config, "--dry-run", check=False)
    assert bad.returncode != 0 and "config key `toy.datasets.pairs4.pairs`: needs at least one pair" in bad.stdout + bad.stderr


def shared_tests(copy: Path, *args: str) -> str:
    """pytest on the copy (its conftest puts the copy first on the path): the output, which must pass."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", *args], cwd=copy,
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.slow  # about 40 s on 2 cores: the shared tests below, run again on the copy
def test_the_shared_tests_a_new_probe_meets_pass_with_the_toy_in(toy_copy):
    """The shared tests a new probe meets (docs, conventions and snakefmt, layers, the config cases'
    coverage, the one-probe studies' collection and configs) pass on the copy and cover the toy:
    none of them lists probes by hand. Not rerun here: the generated config cases of the other probes,
    and the one-probe studies' runs (the slow tier runs them, the toy's run is tested above). The
    toy's own tests (tests/toy/, from the page) run there too."""
    out = shared_tests(toy_copy, "tests/test_docs.py", "tests/test_conventions.py", "tests/test_layers.py",
                       "tests/test_config.py::test_every_constraint_of_every_schema_has_a_case_whose_message_is_checked",
                       "tests/test_config.py::test_the_contexts_the_cases_are_made_in_are_a_valid_config",
                       "tests/test_single_probe_studies.py::test_config_is_valid_with_a_corpus_added",
                       "tests/toy")
    for test in ("test_probe_page_has_the_sections[toy]", "test_probe_page_carries_its_citation_and_method_notes[toy]",
                 "test_relative_links_resolve[workflow_scripts/toy/README.md]", "test_snakefmt_check_is_clean",
                 "test_one_rule_file_per_stage_and_probe", "test_config_is_valid_with_a_corpus_added[toy]",
                 "test_no_shared_module_names_a_probe",
                 # the toy's own tests, from the page: its jobs called as its rules call them
                 "test_each_text_is_written_once_into_the_partitions",
                 "test_the_table_holds_each_models_mean_cosine_and_its_interval"):
        assert re.search(rf"::{re.escape(test)} PASSED", out), test
    assert "toy_score" in out  # its heavy rule's declarations were checked
    # every constraint of the toy's schema broken by a generated case, with its message checked
    cases = shared_tests(toy_copy, "tests/test_config.py", "-k", "toy")
    assert len(re.findall(r"\[toy\.[^\]]*\] PASSED", cases)) >= 8, cases[-3000:]
