"""Adding a probe is its package, its rule file and one `include:` (docs/adding-a-probe.md): a toy probe in a
temporary copy of the workflow is planned, scored and shown in the report (Markdown section, overview
column, table page, HTML report category) with no other file of the workflow edited."""
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from workflow_runner import write_config

ROOT = Path(__file__).resolve().parents[1]

DECLARATION = '''"""A toy probe: the mean cosine similarity of configured sentence pairs."""
from workflow_scripts.probes import Headline, Probe, Resources, headline_rows


def check(config):
    return [f"config key `toy.datasets.{name}.pairs`: needs at least one pair"
            for name, d in (config.get("toy") or {}).get("datasets", {}).items() if not d["pairs"]]


def mean_headlines(frame, options):
    """Mean cosine of the pairs per dataset."""
    return headline_rows(frame, lambda r: f"toy_{r['dataset']}", lambda r: f"toy {r['dataset']} mean cosine",
                         "mean_cosine", "ci_low", "ci_high")


PROBE = Probe(
    name="toy",
    title="Toy pairs",
    order=70,
    plan="workflow_scripts.toy.plan:ToyPlan",
    summary="Mean cosine similarity of configured sentence pairs, with a bootstrapped 95% interval.",
    rules={"toy_texts": Resources(), "toy_score": Resources(heavy=True), "toy_aggregate": Resources()},
    check=check,
    tables=(("toy_scores.csv", "Tables", "overview_table.rst"),),
    headlines=(Headline("toy_scores.csv", mean_headlines),),
)
'''

PLAN = '''from workflow_scripts.study import ProbePlan, as_json


class ToyPlan(ProbePlan):
    def pairs_of(self, wildcards):
        return as_json(self.config["toy"]["datasets"][wildcards.dataset]["pairs"])

    def scores(self):
        return [f"{self.R}/toy/{p.dataset}/{p.model}/score.json" for p in self.pairs]

    def targets(self):
        return [f"{self.R}/tables/toy_scores.csv"] if self.ran else []

    def report_jsons(self):
        return []
'''

SCHEMA = '''type: object
additionalProperties: false
required: [datasets]
properties:
  bootstrap_b: {type: integer, minimum: 1, default: 200}
  datasets:
    type: object
    minProperties: 1
    additionalProperties:
      type: object
      additionalProperties: false
      required: [pairs]
      properties:
        pairs: {type: array, items: {type: array, items: {type: string}, minItems: 2, maxItems: 2}}
'''

SCORE = '''"""Toy probe jobs: texts, scores through the vector-store API, the table."""
import argparse
import json
import sys

import numpy as np
import polars as pl

from workflow_scripts.bootstrap import bootstrap_mean
from workflow_scripts.common import write_json
from workflow_scripts.texts import text_keys, write_text_partitions
from workflow_scripts.vector_store import VectorStore, spec_digest


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("step")
    ap.add_argument("--pairs")
    ap.add_argument("--texts", nargs="*")
    ap.add_argument("--stores", nargs="*")
    ap.add_argument("--model")
    ap.add_argument("--spec")
    ap.add_argument("--dataset")
    ap.add_argument("--scores", nargs="*")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--bootstrap-b", type=int)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    if a.step == "texts":
        pairs = json.loads(a.pairs)
        write_text_partitions([t for p in pairs for t in p], a.texts)
    elif a.step == "score":
        pairs = json.loads(a.pairs)
        store = VectorStore(a.stores, model=a.model, spec_digest=spec_digest(json.loads(a.spec)))
        cos = store.paired_cosine(text_keys([p[0] for p in pairs]), text_keys([p[1] for p in pairs]))
        write_json(a.out, {"dataset": a.dataset, "model": a.model, "cosines": [float(c) for c in cos]})
    else:
        rows = []
        for path in a.scores:
            s = json.load(open(path))
            lo, hi, _ = bootstrap_mean(np.array(s["cosines"]), a.bootstrap_b, a.seed, "toy", s["dataset"], s["model"])
            rows.append({"dataset": s["dataset"], "model": s["model"], "mean_cosine": float(np.mean(s["cosines"])),
                         "ci_low": lo, "ci_high": hi})
        pl.DataFrame(rows).write_csv(a.out)


if __name__ == "__main__":
    main(sys.argv[1:])
'''

RULES = '''# The toy probe: code in workflow_scripts/toy/.
TOY = PLANS["toy"]


rule toy_texts:
    output: expand(f"{R}/texts/toy.{{{{dataset}}}}/part-{{part}}.parquet", part=PART_IDS)
    params: pairs=TOY.pairs_of
    log: log_path("toy_texts", "{dataset}")
    threads: res("toy_texts", "threads")
    resources: mem_mb=res("toy_texts", "mem_mb"), runtime=res("toy_texts", "runtime")
    conda: "../envs/workflow.yaml"
    shell: "python -m workflow_scripts.toy.score texts --pairs {params.pairs:q} --texts {output:q} > {log:q} 2>&1"


rule toy_score:
    input: TOY.stores
    output: f"{R}/toy/{{dataset}}/{{model}}/score.json"
    params: pairs=TOY.pairs_of, spec=TOY.spec
    log: log_path("toy_score", "{dataset}", "{model}")
    benchmark: bench_path("toy_score", "{dataset}", "{model}")
    threads: res("toy_score", "threads")
    resources: mem_mb=res("toy_score", "mem_mb"), runtime=res("toy_score", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.toy.score score --pairs {params.pairs:q} --stores {input:q} --model {wildcards.model:q}"
        " --spec {params.spec:q} --dataset {wildcards.dataset:q} --out {output:q} > {log:q} 2>&1"


rule toy_aggregate:
    input: TOY.scores()
    output:
        report(f"{R}/tables/toy_scores.csv", category=REPORT_CATEGORY["toy"], subcategory="Data", caption="../resources/report/overview_table.rst"),
    params: seed=SEED, bootstrap_b=lambda wc: config["toy"]["bootstrap_b"]
    localrule: True
    log: log_path("toy_aggregate", "all")
    threads: res("toy_aggregate", "threads")
    resources: mem_mb=res("toy_aggregate", "mem_mb"), runtime=res("toy_aggregate", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.toy.score aggregate --scores {input:q} --seed {params.seed:q}"
        " --bootstrap-b {params.bootstrap_b:q} --out {output:q} > {log:q} 2>&1"
'''

PAIRS = [["the cat sat on the mat", "a cat sat on a mat"], ["the dog ran home", "the dog did not run home"],
         ["it rains today", "today it rains"], ["she reads a book", "she does not read a book"]]


@pytest.fixture(scope="module")
def toy_copy(tmp_path_factory):
    """A copy of the workflow with the toy probe added: its package, its rule file, one include."""
    copy = tmp_path_factory.mktemp("workflow")
    for name in ("Snakefile", "rules", "workflow_scripts", "resources", "envs"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, copy / name,
                                                            **({"ignore": shutil.ignore_patterns("__pycache__")}
                                                               if src.is_dir() else {}))
    package = copy / "workflow_scripts" / "toy"
    package.mkdir()
    for name, text in {"__init__.py": "", "probe.py": DECLARATION, "plan.py": PLAN, "schema.yaml": SCHEMA,
                       "score.py": SCORE}.items():
        (package / name).write_text(text)
    (copy / "rules" / "toy.smk").write_text(RULES)
    snakefile = copy / "Snakefile"
    text = snakefile.read_text()
    assert 'include: "rules/report.smk"' in text
    snakefile.write_text(text.replace('include: "rules/report.smk"', 'include: "rules/toy.smk"\ninclude: "rules/report.smk"'))
    # the only edit outside the toy's own files: one line of the Snakefile
    changed = [p.relative_to(copy) for p in copy.rglob("*") if p.is_file() and "__pycache__" not in p.parts
               and not (ROOT / p.relative_to(copy)).exists()]
    assert sorted(map(str, changed)) == sorted(["rules/toy.smk"] + [f"workflow_scripts/toy/{n}" for n in
                                                                    ("__init__.py", "probe.py", "plan.py", "schema.yaml", "score.py")])
    return copy


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
