"""The dress-rehearsal config: resources/configs/full_paracrawl.yaml with its downloads replaced.

Usage: python tests/benchmarks/rehearsal_config.py CORPUS.zip OUT.yaml [--results DIR]
           [--node-cpus 2] [--node-mem-mb 20000] [--partitions N]

Same corpora, sizes, conditions, model names, shard size, embedding partitions and resources as the
full study, so the job graph is the full study's less its four downloads (two models, two sources).
Replaced, each declared as such:
- the ParaCrawl source: a generated ParaCrawl-like moses zip (make_paracrawl_like.py), same format;
- the ESCO skill labels: the shipped Dutch skill texts (resources/corpora/skills_nl.csv);
- every model but TF-IDF: the `hashing` stand-in (CPU, not a language model) at the model's vector
  width (fastText 300, the BERT-base encoders and LaBSE 768), keeping its memory, runtime and store
  dtype, with one thread (what the stand-in uses). TF-IDF stays real (fitted per corpus).
Threads above the node's and memory above half of it are capped (a job asking for more than a node
has is never scheduled; 16 GB stand-ins would run one at a time); rehearsal_report.py prints each
rule's peak RSS against what its jobs asked for.
"""
from __future__ import annotations

import argparse
import copy
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
FULL_CONFIG = ROOT / "resources" / "configs" / "full_paracrawl.yaml"
SKILLS_CSV = ROOT / "resources" / "corpora" / "skills_nl.csv"
# vector width of each family of the full study's models; LaBSE and the BERT-base models are 768-d
STAND_IN_DIM = {"fasttext": 300, "transformers": 768, "sentence_transformers": 768}
KEPT_MODEL_KEYS = ("threads", "mem_mb", "runtime", "store_dtype", "corpora", "probes", "datasets")


def stand_in(spec: dict, seed: int, dim: int | None = None) -> dict:
    """A model of the full study as the rehearsal runs it: TF-IDF and the surface-form yardstick as
    they are (no model to load), any other as `hashing` at the model's width, or at `dim` for all."""
    if spec["family"] in ("tfidf", "surface_form"):
        return copy.deepcopy(spec)
    out = {"family": "hashing", "dim": dim or STAND_IN_DIM[spec["family"]], "projection_seed": seed}
    out.update({k: spec[k] for k in KEPT_MODEL_KEYS if k in spec})
    # the stand-in runs on one core (scikit-learn's hashing, a sparse product): the model's own
    # threads (a GPU job's tokenisers) would leave cores of the rehearsal's node idle
    out["threads"] = 1
    return out


def capped(value: int | None, cap: int) -> int | None:
    return None if value is None else min(value, cap)


def rehearsal_config(full: dict, corpus: Path, results: str, node_cpus: int, node_mem_mb: int,
                     partitions: int | None = None, slurm_partitions: dict | None = None,
                     stand_in_dim: int | None = None) -> dict:
    config = copy.deepcopy(full)
    config["results"] = results
    if slurm_partitions:
        config.setdefault("slurm", {})["partitions"] = slurm_partitions
    if partitions:
        config["embedding_partitions"] = partitions
    sources = config["sources"]
    (paracrawl,) = [name for name, s in sources.items() if s["format"] == "moses"]
    (skills,) = [name for name, s in sources.items() if s["format"] == "csv"]
    sources[paracrawl] = {"format": "moses", "path": str(corpus), "languages": sources[paracrawl]["languages"],
                          "files": sources[paracrawl]["files"]}
    sources[skills] = {"format": "csv", "path": str(SKILLS_CSV), "languages": ["nl"], "columns": {"nl": "label"}}
    models = {}
    for i, (name, spec) in enumerate(full["models"].items()):
        models[name] = stand_in(spec, seed=i, dim=stand_in_dim)
        for key, cap in (("threads", node_cpus), ("mem_mb", node_mem_mb)):
            if key in models[name]:
                models[name][key] = capped(models[name][key], cap)
    config["models"] = models
    for rule_resources in config.get("resources", {}).values():
        for key, cap in (("threads", node_cpus), ("mem_mb", node_mem_mb)):
            if key in rule_resources:
                rule_resources[key] = capped(rule_resources[key], cap)
    return config


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--results", default="results/rehearse_paracrawl")
    ap.add_argument("--node-cpus", type=int, default=2)
    ap.add_argument("--node-mem-mb", type=int, default=10000,
                    help="the largest memory request (default: half of a 2-core 24 GB node, so that two jobs fit)")
    ap.add_argument("--stand-in-dim", type=int,
                    help="one width for every stand-in (default: each model's own); the stores of the real "
                         "widths take about 100 GB per million pairs")
    ap.add_argument("--partitions", type=int, help="embedding partitions (default: the full study's)")
    ap.add_argument("--slurm-partitions", nargs=2, metavar=("CPU", "GPU"), default=("debug", "gpu"),
                    help="the cluster's partitions for CPU and GPU models' embedding jobs")
    args = ap.parse_args()
    full = yaml.safe_load(FULL_CONFIG.read_text())
    config = rehearsal_config(full, args.corpus.resolve(), args.results, args.node_cpus, args.node_mem_mb,
                              args.partitions, dict(zip(("cpu", "gpu"), args.slurm_partitions)), args.stand_in_dim)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    header = ("# Generated by tests/benchmarks/rehearsal_config.py from resources/configs/full_paracrawl.yaml:\n"
              "# the full study's job graph with a generated corpus and stand-in models (hashing, not\n"
              "# language models). A dress rehearsal of the cluster path, not a study.\n")
    args.out.write_text(header + yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    print(args.out)


if __name__ == "__main__":
    main()
