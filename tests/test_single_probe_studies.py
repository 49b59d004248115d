"""A researcher's study is usually one probe: resources/<probe>/study.yaml holds only that
probe's section (and only the sources, corpora, articles or recipes it reads: no `sources` or
`corpora` at all for triplets, montague, retrieval and settheory, whose articles are their own
section). Each is run to the end with its results in a scratch folder, then:

- Snakemake plans no job of another probe (the rules each probe declares, workflow_scripts/probes.py);
- report.md has a section heading for the probe and none for the others;
- tables/overview.csv has a headline column of the probe (with a value) and none of the others;
- `snakemake --report report.html` succeeds and its menu has the probe's report category and no
  other probe's;
- a study without `sources`/`corpora` ingests and perturbs nothing (no results/ingest, no
  results/perturbations).

The configs' relative paths (resources/...) are read through a `resources` link in the scratch
working directory, as they are from the repository root. The settheory study's SmolLM2 fusions are
replayed from tests/data/generations/study_settheory.jsonl (tests/recorded_generations.py): the
generator is never loaded, and test_runs_to_the_end fails when a fusion had to be generated. About
3-4 minutes for the six on 2 cores."""
import json
import re
import subprocess

import polars as pl
import pytest
import yaml

import recorded_generations
from workflow_runner import ROOT, SNAKEMAKE, snakemake, write_config
from workflow_scripts.probes import declarations

# slow tier (make test-slow): six whole studies, each with its HTML report, about 4 minutes on 2 cores
pytestmark = pytest.mark.slow

# the probes' report titles: report.md's section headings and the HTML report's categories, and
# their one-probe studies: every declared probe's, none listed here (a new probe needs no line)
DECLARED = {p.name: p for p in declarations(stages=False)}
TITLES = {name: p.title for name, p in DECLARED.items()}
PROBES = list(TITLES)
SETTHEORY_RECORDING = "study_settheory"  # tests/data/generations/<name>.jsonl
SHARED_SECTIONS = ("sources", "corpora", "models", "resources", "articles", "adapt", "seed", "shard_rows",
                   "embedding_partitions", "study", "results", "nltk_download")


def study_config(probe: str) -> dict:
    path = DECLARED[probe].study_config
    assert path.is_file(), f"probe {probe} has no one-probe study {path.relative_to(ROOT)} (docs/adding-a-probe.md)"
    return yaml.safe_load(path.read_text())


def without_corpora(probe: str) -> bool:
    """A study that reads no corpus: no ingest, no length filter, no perturbation."""
    return "corpora" not in study_config(probe)


def probe_rules() -> dict[str, set[str]]:
    """Each probe's rules, from its declaration."""
    return {p.name: set(p.rules) for p in declarations(stages=False)}


def heading(title: str) -> re.Pattern:
    """A level-1 or level-2 Markdown heading that starts with the probe's title."""
    return re.compile(rf"^#{{1,2}} {re.escape(title)}(?![\w-])", re.M)


@pytest.fixture(scope="module", params=PROBES)
def study(request, tmp_path_factory):
    probe = request.param
    config = study_config(probe)
    run = tmp_path_factory.mktemp(f"study_{probe}")
    (run / "resources").symlink_to(ROOT / "resources")
    config["results"] = str(run / "results")
    generation_cache = None
    if probe == "settheory":
        generation_cache = settheory_generation_cache(config, run / "generations")
        recorded_generations.replay(SETTHEORY_RECORDING, generation_cache)
    cfg = write_config(run, config)
    dry = snakemake(run, cfg, "--dry-run", check=False)
    # the planned rules, as workflow_runner.planned_jobs reads them
    jobs = re.findall(r"^(?:local)?rule (\w+):", dry.stdout + dry.stderr, re.M) if dry.returncode == 0 else None
    proc = snakemake(run, cfg, check=False)
    html = run / "report.html"
    report = (subprocess.run([*SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "--directory", str(run), "--cores", "1",
                              "--report", str(html), "--configfile", str(cfg)], capture_output=True, text=True)
              if proc.returncode == 0 else None)
    return {"probe": probe, "config": config, "run": run, "results": run / "results", "dry": dry, "jobs": jobs,
            "proc": proc, "report_proc": report, "html": html, "generation_cache": generation_cache}


def settheory_generation_cache(config: dict, folder):
    """The cache file of the study's one built sample set, in `folder` (settheory.generation_cache)."""
    (dataset,) = config["settheory"]["datasets"].values()
    name = dataset["generator"]
    config["settheory"]["generation_cache"] = str(folder)
    return recorded_generations.cache_file(folder, name, config["settheory"]["generators"][name])


def failure(proc: subprocess.CompletedProcess) -> str:
    text = proc.stdout + proc.stderr
    errors = re.findall(r"^(?:Error in rule \w+:|\w*Error.*|.*is a required property.*)$", text, re.M)
    return f"exit {proc.returncode}; {sorted(set(errors))[:8]}\n{proc.stderr[-3000:]}"


def needs_run(study):
    if study["proc"].returncode != 0:
        pytest.fail(f"the {study['probe']} study did not run to the end: {failure(study['proc'])}")


def test_config_holds_only_its_probe(study):
    probe, config = study["probe"], study["config"]
    sections = set(config) - set(SHARED_SECTIONS)
    assert sections == {probe}, sections
    if DECLARED[probe].needs_corpora:
        assert "corpora" in config
    if without_corpora(probe):  # no sources without a corpus to read them
        assert "sources" not in config


@pytest.mark.parametrize("probe", PROBES)
def test_config_is_valid_with_a_corpus_added(probe, monkeypatch):
    """Each config's own sections pass the schema and the reference checks: with a stand-in source
    and corpus where it has none (what the schema required before `sources`/`corpora` became
    optional), so that a mistake in the probe's section shows here, apart from the run."""
    from workflow_scripts.config import validate
    monkeypatch.chdir(ROOT)  # the configs' paths are relative to the repository root
    config = study_config(probe)
    config.setdefault("sources", {"standin": {"format": "lines", "path": "resources/triplets/reported_speech.txt",
                                              "languages": ["en"]}})
    config.setdefault("corpora", {"standin_en": {"source": "standin", "language": "en"}})
    validated = validate(config)
    assert probe in validated and validated["embedding_partitions"] == 1


def test_plans_no_job_of_another_probe(study):
    assert study["dry"].returncode == 0, f"dry run: {failure(study['dry'])}"
    rules = set(study["jobs"])
    others = set().union(*(r for p, r in probe_rules().items() if p != study["probe"]))
    assert not rules & others, f"jobs of other probes planned: {sorted(rules & others)}"
    assert rules & probe_rules()[study["probe"]], f"no job of the probe itself: {sorted(rules)}"
    if without_corpora(study["probe"]):
        assert not rules & {"ingest", "derive_corpus", "length_buckets", "perturb"}, sorted(rules)


def test_runs_to_the_end(study):
    """... and the settheory study without loading SmolLM2: every fusion from the recording."""
    needs_run(study)
    if study["generation_cache"]:
        (dataset,) = study["config"]["settheory"]["datasets"]
        report = json.loads((study["results"] / "reports" / "settheory" / f"{dataset}.json").read_text())
        recorded_generations.assert_all_replayed(SETTHEORY_RECORDING, report, study["generation_cache"])


def test_report_md_has_only_its_probe_section(study):
    needs_run(study)
    text = (study["results"] / "report.md").read_text()
    assert heading(TITLES[study["probe"]]).search(text), f"no section for {study['probe']}:\n{text[:2000]}"
    others = [t for p, t in TITLES.items() if p != study["probe"] and heading(t).search(text)]
    assert not others, f"sections of probes that did not run: {others}"


def test_overview_has_its_headline_columns(study):
    needs_run(study)
    frame = pl.read_csv(study["results"] / "tables" / "overview.csv", infer_schema_length=None)
    figures = [c for c in frame.columns if c not in ("model", "family", "stand_in")
               and not c.endswith(("_ci_low", "_ci_high"))]
    mine = [c for c in figures if c.startswith(study["probe"] + "_")]
    assert mine, f"no headline column of {study['probe']}: {figures}"
    assert not set(figures) - set(mine), f"headline columns of other probes: {sorted(set(figures) - set(mine))}"
    assert any(frame[c].drop_nulls().len() for c in mine), f"every {study['probe']} headline is empty:\n{frame}"


def test_html_report_names_its_category(study):
    needs_run(study)
    proc = study["report_proc"]
    assert proc.returncode == 0, f"snakemake --report: {failure(proc)}"
    html = study["html"].read_text(errors="replace")
    assert TITLES[study["probe"]] in html
    # Snakemake's report holds its menu as `categories = {category: {subcategory: [files]}}`: the
    # probe's category and no other probe's (the first screen's text names every probe anyway)
    found = re.search(r"\bcategories = (?=\{)", html)
    assert found, "no categories object in the HTML report"
    categories, _ = json.JSONDecoder().raw_decode(html, found.end())
    assert TITLES[study["probe"]] in categories, list(categories)
    others = [t for p, t in TITLES.items() if p != study["probe"] and t in categories]
    assert not others, f"report categories of probes that did not run: {others}"


def test_nothing_ingested_without_corpora(study):
    needs_run(study)
    res = study["results"]
    if without_corpora(study["probe"]):
        assert not (res / "ingest").exists() and not (res / "perturbations").exists()
        assert not (res / "corpora").exists()
    else:
        assert (res / "ingest").is_dir()  # its study reads a corpus


def test_replicate_files_are_the_ones_the_rules_write(study):
    """ProbePlan.replicate_files (what the differences tables read) names exactly the replicates
    files the dry run plans as outputs and the run writes, each in bootstrap.write_replicates' schema."""
    from workflow_scripts.bootstrap import REPLICATE_COLUMNS
    from workflow_scripts.config import validate
    from workflow_scripts.study import Study

    assert study["dry"].returncode == 0, f"dry run: {failure(study['dry'])}"
    config = validate(json.loads(json.dumps(study["config"])), check_paths=False)
    results = config["results"]
    for declared in declarations():
        if declared.prepare:
            declared.prepare(config, results)
    probe = {p.name: p for p in declarations()}[study["probe"]]
    listed = sorted(probe.planner()(Study(config, results), probe).replicate_files())
    text = study["dry"].stdout + study["dry"].stderr
    planned = sorted({p for line in re.findall(r"^\s*output: (.*)$", text, re.M) for p in line.split(", ")
                      if re.search(r"replicates[^/]*\.parquet$", p)})
    assert listed == planned
    needs_run(study)
    written = sorted(str(p) for p in study["results"].rglob("*replicates*.parquet"))
    assert listed == written
    for path in written:
        frame = pl.read_parquet(path)
        assert frame.columns == list(REPLICATE_COLUMNS) and frame.height > 0
        assert set(frame["probe"].unique().to_list()) == {study["probe"]}
