"""PROJECTION (not a measurement): wall time of the full ParaCrawl study on 1, 4 and 16 GPUs.

Usage: python tests/benchmarks/project_full_study.py [--rehearsal WORKDIR] [--measured GPU.json ...]
           [--config resources/configs/full_paracrawl.yaml] [--json OUT]

Combines (1) the CPU side: what the SLURM dress rehearsal measured on this machine
(tests/slurm/rehearse_slurm.sh, read from WORKDIR/rehearsal.json and its benchmark files: the
job-seconds of every stage other than embedding, the unique texts each model embeds per text set,
the per-job start-up cost), scaled linearly from the rehearsal's pairs to 2,560,472, or without
--rehearsal the documented full-size figures (docs/timings.md: 327 job-seconds of non-embedding
stages at 2,560,472 pairs, measured outside Snakemake); (2) the GPU models' embedding jobs as the
config plans them (workflow_scripts/study.py: one job, so one model load, per store partition of
each text set a model encodes; a derived corpus copies its parent's vectors and loads nothing);
and (3) each assumption of encoding speed and load time, one table each:
  measured   texts/s of the BERT-base-size model per precision and its load seconds in the embed
             job, from tests/benchmarks/bench_gpu_embedding.py --json (its `job_texts_per_s_without_load`
             and `job_load_s`; the GPU named in the file), for each file given with --measured;
  published  the sentence-transformers table's 2,800 sentences/s for all-mpnet-base-v2 on a V100,
             scaled to an A100 and an H100 by 60% of their peak fp16 ratio, 20 s per load.
The GPU jobs are placed on the GPUs longest first (each on the GPU that frees first), so a wall
time counts jobs that do not divide evenly; the CPU jobs run beside them on 8 cores per GPU.
Every assumption is printed with its table.
"""
from __future__ import annotations

import argparse
import heapq
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
from stage_times import stage_stats  # noqa: E402

FULL_CONFIG = ROOT / "resources" / "configs" / "full_paracrawl.yaml"
FULL_PAIRS = 2_560_472
# Published encoding speed of all-mpnet-base-v2: 2,800 sentences/s on one V100 GPU (the sentence-
# transformers table of pretrained models, column "Speed": https://www.sbert.net/docs/
# sentence_transformer/pretrained_models.html; all-MiniLM-L6-v2 14,200/s on the same table).
MPNET_V100_PER_S = 2800
SOURCES = {
    "mpnet": "all-mpnet-base-v2 (12 layers, 768 wide)",
    "gronlp": "BERT-base (12 layers, 768 wide, model card GroNLP/bert-base-dutch-cased)",
    "robbert": "RoBERTa-base (12 layers, 768 wide, model card pdelobelle/robbert-v2-dutch-base)",
    "labse": "BERT-base encoder (12 layers, 768 wide; its 501k-token vocabulary is a lookup, model card "
             "sentence-transformers/LaBSE)",
}
FASTTEXT_PER_CORE_S = 50_000  # ASSUMED sentences/s per CPU core (no published figure: Joulin et al. 2017 report training only)
# peak dense fp16 tensor throughput (NVIDIA datasheets: V100 SXM2 125, A100 SXM 312, H100 SXM 989 TFLOP/s)
PEAK_TFLOPS = {"V100": 125, "A100": 312, "H100": 989}
ASSUMED_UTILISATION_VS_V100 = 0.6  # a newer GPU reaches this share of its peak ratio on BERT-base inference
ASSUMED_LOAD_S = 20    # per GPU job: import torch, load the model to the GPU
CPU_CORES_PER_GPU = 8  # the CPU jobs (perturbation, scoring, TF-IDF, fastText) run beside the GPU jobs
# unique texts per corpus at 20,000 pairs (the rehearsal: originals and variants), scaled by pairs;
# the ESCO skill labels do not grow with the pairs (ASSUMED a few thousand with their variants)
TEXTS_AT_20K = {"pc_en": 148_944, "pc_nl": 138_640}
SKILLS_TEXTS = {"skills_nl": 4_000}


def load_config(path: Path) -> dict:
    import yaml
    return yaml.safe_load(path.read_text())


def gpu_models(config: dict) -> list[str]:
    return [m for m, spec in config["models"].items() if spec.get("device") == "cuda"]


def rehearsal_inputs(work: Path) -> dict:
    summary = json.loads((work / "rehearsal.json").read_text())
    stages = stage_stats(work / "slurm")
    scale = FULL_PAIRS / summary["pairs"]
    texts: dict[str, dict[str, float]] = {}
    for manifest in (work / "slurm" / "embeddings").glob("*/*/*/manifest.json"):
        m = json.loads(manifest.read_text())
        model, scope = manifest.parts[-4], manifest.parts[-3]
        per = texts.setdefault(model, {})
        per[scope] = per.get(scope, 0) + m.get("encoded", m.get("rows", 0)) * scale
    return {
        "source": f"rehearsal at {summary['pairs']:,} pairs ({work}), scaled x{scale:.2f}",
        "non_embed_job_s": sum(s["s"] for r, s in stages.items() if r != "embed") * scale,
        "tfidf_embed_job_s": _model_embed_s(work / "slurm", "tfidf") * scale,
        "texts": texts,
        "overhead_per_job_s": summary.get("startup_per_job_s", summary["overhead_per_job_s"]),
        "jobs": summary["submitted"],
    }


def _model_embed_s(results: Path, model: str) -> float:
    import csv
    total = 0.0
    for path in (results / "benchmarks" / "embed" / model).rglob("*.tsv"):
        with open(path) as f:
            total += float(list(csv.DictReader(f, delimiter="\t"))[-1]["s"])
    return total


def documented_inputs(config: dict) -> dict:
    # docs/timings.md, "Scale": 327.0 non-embedding job-seconds at 2,560,472 pairs (TF-IDF fit included);
    # unique texts per corpus from the rehearsal at 20,000 pairs, encoded; the length-matched corpora copy them
    per_scope = {c: n * FULL_PAIRS / 20_000 for c, n in TEXTS_AT_20K.items() if c in config["corpora"]}
    per_scope.update({c: n for c, n in SKILLS_TEXTS.items() if c in config["corpora"]})
    models = [m for m, s in config["models"].items() if s["family"] in ("transformers", "sentence_transformers", "fasttext")]
    return {"source": "docs/timings.md (2,560,472 pairs, outside Snakemake; texts per pair from the rehearsal)",
            "non_embed_job_s": 327.0, "tfidf_embed_job_s": 0.0, "texts": {m: dict(per_scope) for m in models},
            "overhead_per_job_s": 15.0, "jobs": 950}  # rehearsal: 14.8 s start-up per job


def gpu_jobs(config: dict, texts: dict) -> dict[str, list[float]]:
    """Per GPU model, the texts of each embedding job that loads it: one per store partition of each
    text set it encodes (Study.store_parts; a derived corpus copies its parent's vectors: no load)."""
    from workflow_scripts.study import Study
    study = Study(config, "results", parts=config["embedding_partitions"])
    jobs = {}
    for model in gpu_models(config):
        parts = study.store_parts(model)
        jobs[model] = [texts.get(model, {}).get(scope, 0.0) / parts
                       for scope in study.model_corpora(model) if study.reuse_scope(model, scope) is None
                       for _ in range(parts)]
    return jobs


def makespan(durations: list[float], gpus: int) -> float:
    """Longest first, each job on the GPU that frees first."""
    free = [0.0] * gpus
    for d in sorted(durations, reverse=True):
        heapq.heappush(free, heapq.heappop(free) + d)
    return max(free)


def published_rate(gpu: str) -> float:
    """Sentences/s of a BERT-base encoder on `gpu`, from the V100 figure (assumptions printed)."""
    return MPNET_V100_PER_S * (1 + (PEAK_TFLOPS[gpu] / PEAK_TFLOPS["V100"] - 1) * ASSUMED_UTILISATION_VS_V100)


def assumptions(measured: list[Path]) -> list[dict]:
    """(label, texts/s of a base-size model, load seconds) of each assumption."""
    out = [{"label": f"published, {gpu}", "rate": published_rate(gpu), "load_s": ASSUMED_LOAD_S,
            "note": f"V100 table figure x (1 + (peak ratio - 1) x {ASSUMED_UTILISATION_VS_V100}), {ASSUMED_LOAD_S} s per load"}
           for gpu in ("A100", "H100")]
    for path in measured:
        figures = json.loads(Path(path).read_text())
        for row in figures["embedding"]:
            if row["model"] != "base":
                continue
            out.append({"label": f"measured, {figures.get('gpu', '?')}, {row['precision']}, batch {row['batch']}",
                        "rate": row["job_texts_per_s_without_load"], "load_s": row["job_load_s"],
                        "note": f"{path}: the base-size model's embed job without its load "
                                f"({row['job_texts_per_s_without_load']:,.0f} texts/s; with it "
                                f"{row['job_texts_per_s']:,.0f}; encode {row['encode_texts_per_s']:,.0f}), "
                                f"load {row['job_load_s']:.1f} s measured in the job"})
    return out


def project(inputs: dict, jobs: dict[str, list[float]], assumption: dict, gpus: int) -> dict:
    durations = [n / assumption["rate"] + assumption["load_s"] for texts in jobs.values() for n in texts]
    encode_s = sum(n / assumption["rate"] for texts in jobs.values() for n in texts)
    load_s = assumption["load_s"] * sum(len(t) for t in jobs.values())
    fasttext_s = sum(n for m, per in inputs["texts"].items() if m.startswith("fasttext") for n in per.values()) \
        / FASTTEXT_PER_CORE_S
    cpu_s = inputs["non_embed_job_s"] + inputs["tfidf_embed_job_s"] + fasttext_s \
        + inputs["jobs"] * inputs["overhead_per_job_s"]
    gpu_wall = makespan(durations, gpus) if durations else 0.0
    wall = max(gpu_wall, cpu_s / (gpus * CPU_CORES_PER_GPU))
    return {"assumption": assumption["label"], "gpus": gpus, "texts_per_s_per_gpu": assumption["rate"],
            "encode_gpu_h": encode_s / 3600, "load_gpu_h": load_s / 3600, "load_share": load_s / max(encode_s + load_s, 1e-9),
            "cpu_core_hours": cpu_s / 3600, "gpu_wall_h": gpu_wall / 3600, "wall_h": wall / 3600}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rehearsal", type=Path, help="a finished rehearsal's WORKDIR (with rehearsal.json)")
    ap.add_argument("--measured", type=Path, nargs="*", default=[],
                    help="bench_gpu_embedding.py --json outputs (one per GPU or run)")
    ap.add_argument("--config", type=Path, default=FULL_CONFIG)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    config = load_config(args.config)
    inputs = rehearsal_inputs(args.rehearsal) if args.rehearsal else documented_inputs(config)
    jobs = gpu_jobs(config, inputs["texts"])
    print("PROJECTION, not a measurement. Assumptions:")
    if args.rehearsal and FULL_PAIRS / json.loads((args.rehearsal / "rehearsal.json").read_text())["pairs"] > 4:
        print("  WARNING: CPU costs scaled linearly from a run of fewer than a quarter of the pairs: its jobs' fixed"
              " costs (imports, start-up) are scaled too and inflate them; rehearse at >= 640,118 pairs, or run"
              " without --rehearsal for the full-size figures measured outside Snakemake")
    print(f"  non-embedding stages and CPU costs: {inputs['source']}: {inputs['non_embed_job_s']:.0f} job-s, "
          f"TF-IDF embedding {inputs['tfidf_embed_job_s']:.0f} job-s, {inputs['jobs']} SLURM jobs at "
          f"{inputs['overhead_per_job_s']:.1f} s scheduling + start-up each; fastText ASSUMED "
          f"{FASTTEXT_PER_CORE_S:,} sentences/s per core; {CPU_CORES_PER_GPU} CPU cores per GPU beside the GPU jobs")
    for model in jobs:
        print(f"  {model}: {SOURCES.get(model, 'a GPU model')}: taken at the base-size model's speed")
    print(f"  config {args.config.relative_to(ROOT) if args.config.is_relative_to(ROOT) else args.config}: "
          f"{config['embedding_partitions']} text partitions, store partitions per device "
          f"{config.get('embedding_partitions_per_device') or 'as many'}")
    print("\nModel loads (one per GPU embedding job; derived corpora copy their parent's vectors):")
    for model, texts in jobs.items():
        print(f"  {model}: {len(texts)} loads, {sum(texts) / 1e6:.1f}M texts ({max(texts) / 1e6:.2f}M in the largest job)")
    fine = {**config, "embedding_partitions_per_device": {}}
    print(f"  (with a store partition per text partition: {sum(map(len, gpu_jobs(fine, inputs['texts']).values()))} "
          f"loads in all instead of {sum(map(len, jobs.values()))})")
    rows = []
    for assumption in assumptions(args.measured):
        print(f"\n{assumption['label']}: {assumption['rate']:,.0f} texts/s per GPU for every GPU model, "
              f"{assumption['load_s']:.1f} s per load ({assumption['note']})")
        print(f"{'GPUs':>5}{'encode GPU h':>14}{'load GPU h':>12}{'load share':>12}{'CPU core h':>12}{'GPU wall h':>12}"
              f"{'wall h':>10}")
        for n in (1, 4, 16):
            r = project(inputs, jobs, assumption, n)
            rows.append(r)
            print(f"{n:>5}{r['encode_gpu_h']:>14.2f}{r['load_gpu_h']:>12.2f}{r['load_share']:>12.1%}"
                  f"{r['cpu_core_hours']:>12.1f}{r['gpu_wall_h']:>12.2f}{r['wall_h']:>10.2f}")
    total = sum(n for t in jobs.values() for n in t)
    print(f"\nThe two-hour goal on 4 GPUs needs {total / (4 * 2 * 3600):,.0f} texts/s per GPU for these "
          f"{len(jobs)} models ({total / 1e6:.0f}M texts), before loads.")
    if args.json:
        args.json.write_text(json.dumps({"inputs": inputs, "jobs": jobs, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
