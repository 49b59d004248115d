"""PROJECTION (not a measurement): wall time of the full ParaCrawl study on 1, 4 and 16 GPUs.

Usage: python tests/benchmarks/project_full_study.py [--rehearsal WORKDIR] [--json OUT]

Combines (1) what the SLURM dress rehearsal measured on this machine (tests/slurm/rehearse_slurm.sh,
read from WORKDIR/rehearsal.json and its benchmark files): the job-seconds of every stage other than
embedding, the unique texts each model embeds and the per-job scheduling and start-up cost, scaled
linearly from the rehearsal's pairs to 2,560,472; with (2) published encoding throughputs of the
study's real models (sources below) and stated GPU speed ratios. Every assumption is printed with
the table. Without --rehearsal, the documented full-size figures are used (docs/timings.md: 327
job-seconds of non-embedding stages at 2,560,472 pairs, measured outside Snakemake).

Then the moonshot: the seed paper's own scale (7 models x 34.6M texts) on 4 GPUs in 2 hours, and
what would have to be true for it.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stage_times import stage_stats  # noqa: E402

FULL_PAIRS = 2_560_472
# Published encoding speed of all-mpnet-base-v2: 2,800 sentences/s on one V100 GPU (the sentence-
# transformers table of pretrained models, column "Speed": https://www.sbert.net/docs/
# sentence_transformer/pretrained_models.html; all-MiniLM-L6-v2 14,200/s on the same table).
MPNET_V100_PER_S = 2800
SOURCES = {
    "mpnet": "sbert.net pretrained models table: all-mpnet-base-v2 2,800 sentences/s on V100",
    "gronlp": "no published speed; BERT-base (12 layers, 768 wide, model card GroNLP/bert-base-dutch-cased): "
              "assumed equal to all-mpnet-base-v2's per sentence",
    "robbert": "no published speed; RoBERTa-base (12 layers, 768 wide, model card pdelobelle/robbert-v2-dutch-base): "
               "assumed equal to all-mpnet-base-v2's per sentence",
    "labse": "no published speed; BERT-base encoder (12 layers, 768 wide; its 501k-token vocabulary is a lookup, "
             "model card sentence-transformers/LaBSE): assumed equal to all-mpnet-base-v2's per sentence",
    "fasttext": "no published sentence throughput (fastText: Joulin et al. 2017, 'Bag of Tricks', report training "
                "speed only); ASSUMED 50,000 sentences/s per CPU core (averaging word/subword lookups)",
    "tfidf": "measured here (rehearsal, CPU)",
}
GPU_MODELS = ("gronlp", "mpnet", "robbert", "labse")
# peak dense fp16 tensor throughput (NVIDIA datasheets: V100 SXM2 125, A100 SXM 312, H100 SXM 989 TFLOP/s)
PEAK_TFLOPS = {"V100": 125, "A100": 312, "H100": 989}
ASSUMED_UTILISATION_VS_V100 = 0.6  # a newer GPU reaches this share of its peak ratio on BERT-base inference
MODEL_LOAD_S = 20      # per GPU job: import torch, load the model to the GPU
CPU_CORES_PER_GPU = 8  # the CPU jobs (perturbation, scoring, TF-IDF, fastText) run beside the GPU jobs


def rehearsal_inputs(work: Path) -> dict:
    summary = json.loads((work / "rehearsal.json").read_text())
    stages = stage_stats(work / "slurm")
    pairs = summary["pairs"]
    scale = FULL_PAIRS / pairs
    texts = {}
    for manifest in (work / "slurm" / "embeddings").glob("*/*/*/manifest.json"):
        m = json.loads(manifest.read_text())
        model = manifest.parts[-4]
        texts[model] = texts.get(model, 0) + m.get("encoded", m.get("rows", 0))
    return {
        "source": f"rehearsal at {pairs:,} pairs ({work}), scaled x{scale:.2f}",
        "non_embed_job_s": sum(s["s"] for r, s in stages.items() if r != "embed") * scale,
        "tfidf_embed_job_s": _model_embed_s(work / "slurm", "tfidf") * scale,
        "texts": {m: n * scale for m, n in texts.items()},
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


def documented_inputs() -> dict:
    # docs/timings.md, "Scale": 327.0 non-embedding job-seconds at 2,560,472 pairs (TF-IDF fit included);
    # unique texts per model: PC EN 148,944 and PC NL 138,640 at 20,000 pairs in the rehearsal (originals
    # and their variants), encoded; the length-matched corpora copy them
    texts = FULL_PAIRS * (148_944 + 138_640) / 20_000
    return {"source": "docs/timings.md (2,560,472 pairs, outside Snakemake; texts per pair from the rehearsal)",
            "non_embed_job_s": 327.0,
            "tfidf_embed_job_s": 0.0, "texts": {m: texts for m in (*GPU_MODELS, "fasttext_en", "fasttext_nl")},
            "overhead_per_job_s": 15.0, "jobs": 950}  # rehearsal: 14.8 s start-up per job; 950 after grouping


def gpu_speed(gpu: str) -> float:
    """Sentences/s of a BERT-base encoder on `gpu`, from the V100 figure (assumptions printed)."""
    return MPNET_V100_PER_S * (1 + (PEAK_TFLOPS[gpu] / PEAK_TFLOPS["V100"] - 1) * ASSUMED_UTILISATION_VS_V100)


def project(inputs: dict, gpus: int, gpu: str) -> dict:
    speed = gpu_speed(gpu)
    gpu_texts = sum(n for m, n in inputs["texts"].items() if m in GPU_MODELS)
    gpu_jobs = 32 * 5 * len(GPU_MODELS)
    encode_s, load_s = gpu_texts / speed, gpu_jobs * MODEL_LOAD_S
    gpu_s = encode_s + load_s
    cpu_cores = gpus * CPU_CORES_PER_GPU
    fasttext_s = sum(n for m, n in inputs["texts"].items() if m.startswith("fasttext")) / 50_000
    cpu_s = inputs["non_embed_job_s"] + inputs["tfidf_embed_job_s"] + fasttext_s \
        + inputs["jobs"] * inputs["overhead_per_job_s"]
    wall = max(gpu_s / gpus, cpu_s / cpu_cores)
    return {"gpu": gpu, "gpus": gpus, "texts_per_s_per_gpu": speed, "encode_gpu_h": encode_s / 3600,
            "load_gpu_h": load_s / 3600, "cpu_core_hours": cpu_s / 3600, "wall_h": wall / 3600}


def moonshot(gpu: str) -> dict:
    """The seed's scale on 4 GPUs: every model on every text, 32 x 5 jobs per model loading it."""
    texts, models, gpus, hours = 34.6e6, 7, 4, 2.0
    needed = texts * models / (gpus * hours * 3600)
    speed = gpu_speed(gpu)
    wall = (texts * models / speed + models * 32 * 5 * MODEL_LOAD_S) / gpus
    return {"needed_texts_per_s_per_gpu": needed, "projected_texts_per_s_per_gpu": speed, "wall_h": wall / 3600}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rehearsal", type=Path, help="a finished rehearsal's WORKDIR (with rehearsal.json)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    inputs = rehearsal_inputs(args.rehearsal) if args.rehearsal else documented_inputs()
    print("PROJECTION, not a measurement. Assumptions:")
    if args.rehearsal and FULL_PAIRS / json.loads((args.rehearsal / "rehearsal.json").read_text())["pairs"] > 4:
        print("  WARNING: CPU costs scaled linearly from a run of fewer than a quarter of the pairs: its jobs' fixed"
              " costs (imports, start-up) are scaled too and inflate them; rehearse at >= 640,118 pairs, or run"
              " without --rehearsal for the full-size figures measured outside Snakemake")
    print(f"  non-embedding stages and CPU costs: {inputs['source']}: {inputs['non_embed_job_s']:.0f} job-s, "
          f"TF-IDF embedding {inputs['tfidf_embed_job_s']:.0f} job-s, {inputs['jobs']} SLURM jobs at "
          f"{inputs['overhead_per_job_s']:.1f} s scheduling + start-up each")
    for model, source in SOURCES.items():
        print(f"  {model}: {source}")
    print(f"  GPU speed: V100 figure x (1 + (peak ratio - 1) x {ASSUMED_UTILISATION_VS_V100}); peaks (fp16 dense "
          f"TFLOP/s, NVIDIA datasheets) {PEAK_TFLOPS}; the V100 figure is taken as fp16-equivalent")
    print(f"  {MODEL_LOAD_S} s model load per GPU job (32 partitions x 5 corpora per model), "
          f"{CPU_CORES_PER_GPU} CPU cores per GPU for the CPU jobs, which overlap the GPU jobs")
    print(f"  texts embedded per model: " + ", ".join(f"{m} {n / 1e6:.1f}M" for m, n in sorted(inputs["texts"].items())))
    rows = [project(inputs, n, gpu) for gpu in ("A100", "H100") for n in (1, 4, 16)]
    print(f"\n{'GPU':<6}{'GPUs':>5}{'texts/s/GPU':>13}{'encode GPU h':>14}{'load GPU h':>12}{'CPU core h':>12}"
          f"{'wall h':>8}")
    for r in rows:
        print(f"{r['gpu']:<6}{r['gpus']:>5}{r['texts_per_s_per_gpu']:>13,.0f}{r['encode_gpu_h']:>14.1f}"
              f"{r['load_gpu_h']:>12.1f}{r['cpu_core_hours']:>12.1f}{r['wall_h']:>8.2f}")
    print("\nMoonshot: the seed's scale, 7 models x 34.6M texts, on 4 GPUs in 2 hours:")
    for gpu in ("A100", "H100"):
        m = moonshot(gpu)
        print(f"  {gpu}: needs {m['needed_texts_per_s_per_gpu']:,.0f} texts/s per GPU for every model; projected "
              f"{m['projected_texts_per_s_per_gpu']:,.0f}/s and {m['wall_h']:.1f} h with a model load per job")
    need = moonshot("H100")["needed_texts_per_s_per_gpu"]
    share = (need / MPNET_V100_PER_S - 1) / (PEAK_TFLOPS["H100"] / PEAK_TFLOPS["V100"] - 1)
    load_h = 7 * 32 * 5 * MODEL_LOAD_S / 3600
    print(f"  What would have to be true: every encoder at >= {need:,.0f} texts/s per GPU sustained"
          f" ({need / MPNET_V100_PER_S:.1f}x the V100 table figure: fp16, length-sorted batches without padding waste,"
          f" tokenisation off the GPU's critical path), which an H100 reaches if it keeps >= {share:.0%} of its peak"
          f" ratio over a V100 (an A100 would need {(need / MPNET_V100_PER_S - 1) / (PEAK_TFLOPS['A100'] / 125 - 1):.0%},"
          f" above its peak ratio's reach); each model loaded once per GPU, not once per job ({7 * 32 * 5} jobs x"
          f" {MODEL_LOAD_S} s = {load_h:.1f} GPU h, {load_h / 8:.0%} of the 8 GPU h), i.e. a few large GPU jobs per model;"
          " the CPU stages (perturbation, scoring, TF-IDF, fastText) on enough cores beside the GPUs to finish"
          " within the GPUs' time; and no GPU job waiting on the scheduler. Writing the stores is not the limit"
          " (about 52 MB/s in float16 at 768 dimensions).")
    if args.json:
        args.json.write_text(json.dumps({"inputs": inputs, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
