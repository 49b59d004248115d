"""Every stage at ParaCrawl size on this machine, and the projected cost of real embeddings.

Usage: python tests/benchmarks/bench_scale.py [--pairs 2560472] [--workdir /tmp/bench-scale]
                                              [--minilm-fraction 0.01] [--skip-minilm | --minilm-only]
                                              [--old-commit COMMIT]

1. Writes a ParaCrawl-sized EN–NL corpus (tests/benchmarks/make_paracrawl_like.py) in the OPUS
   moses format of the release the paper used, unless it exists.
2. Runs the workflow on it with `--cores 2`: ingest -> derive corpora (PC EN, PC NL, both
   length-matched to the short Dutch skill texts) -> perturb -> embed -> CSC score/KDE -> tables,
   plots, report. Embeddings for the whole corpus come from the `hashing` stand-in encoder (declared
   in the config; not a language model), so every stage runs at full size; TF-IDF (fitted in one
   streaming pass) runs on PC NL and its length-matched subset.
3. Prints per stage: jobs, wall seconds (summed over jobs), peak RSS (max over jobs) from
   Snakemake's `benchmark:` files, and rows per second.
4. Embeds a random `--minilm-fraction` of the unique texts with the real all-MiniLM-L6-v2 (fp32 and
   bf16, in the workflow's batching) and projects CPU hours for all texts, per model of the paper,
   by their cost per token relative to MiniLM (stated, not measured, for the other models).
Run it at two corpus sizes to see that a job's peak memory follows the shard size, not the corpus.
5. With --old-commit: first runs that commit's own bench_scale.py (from a temporary git worktree, on
   the same corpus, with --skip-minilm), then this one, and prints both per stage with their ratio
   and the total of the stages other than embedding. Job-seconds depend on the machine (2x between
   machines of the same kind has been seen): a target in job-seconds is checked against old code
   measured beside the new, not against a figure from another machine.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from stage_times import stage_stats  # noqa: E402

# matmul weights per token of each encoder (layers x (4 d^2 + 2 d ff)); embedding tables are lookups
WEIGHTS_PER_TOKEN = {
    "all-MiniLM-L6-v2 (measured)": 6 * (4 * 384 ** 2 + 2 * 384 * 1536),
    "GroNLP/bert-base-dutch-cased": 12 * (4 * 768 ** 2 + 2 * 768 * 3072),
    "sentence-transformers/all-mpnet-base-v2": 12 * (4 * 768 ** 2 + 2 * 768 * 3072),
    "pdelobelle/robbert-v2-dutch-base": 12 * (4 * 768 ** 2 + 2 * 768 * 3072),
    "sentence-transformers/LaBSE": 12 * (4 * 768 ** 2 + 2 * 768 * 3072),
}


def bench_config(corpus: Path, workdir: Path) -> Path:
    config = {
        "seed": 13,
        "shard_rows": 100_000,
        "embedding_partitions": 8,
        "results": "results",
        "sources": {
            "paracrawl_like": {"format": "moses", "path": str(corpus), "languages": ["en", "nl"],
                               "files": {"en": "ParaCrawl.en-nl.en", "nl": "ParaCrawl.en-nl.nl"}},
            "skills_nl": {"format": "csv", "path": str(ROOT / "resources/corpora/skills_nl.csv"),
                          "languages": ["nl"], "columns": {"nl": "label"}},
        },
        "corpora": {
            "skills_nl": {"source": "skills_nl", "language": "nl"},
            "pc_en": {"source": "paracrawl_like", "language": "en"},
            "pc_nl": {"source": "paracrawl_like", "language": "nl"},
            "pc_en_filtered": {"source": "paracrawl_like", "language": "en", "match_lengths_of": "skills_nl"},
            "pc_nl_filtered": {"source": "paracrawl_like", "language": "nl", "match_lengths_of": "skills_nl"},
        },
        "csc": {"perturb": {"variants_per_sentence": 3,
                            "grammatical_negation": {"enabled": True, "languages": ["en"], "use_tagger": True}}},
        "models": {"hashing": {"family": "hashing", "dim": 64, "store_dtype": "float16", "batch_size": 8192,
                               "threads": 1},
                   # a real model at full size: its fit streams over every text of PC NL
                   "tfidf": {"family": "tfidf", "corpora": ["pc_nl", "pc_nl_filtered"]}},
        "resources": {"perturb": {"threads": 2}},
    }
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def stage_rows(results: Path) -> dict[str, int]:
    """Rows each stage handles: input lines, sentences of the language, sentences perturbed,
    unique texts embedded, (original, variant) pairs scored."""
    rows = {}
    rows["ingest"] = sum(r["records"] + r["skipped_total"] for r in
                         (json.loads(p.read_text()) for p in (results / "reports/ingest").glob("*.json")))
    rows["derive_corpus"] = sum(json.loads((d / "manifest.json").read_text())["rows_read"]
                                for d in (results / "corpora").iterdir() if d.is_dir())
    perturb = [json.loads(p.read_text()) for p in (results / "reports/perturb").glob("*.json")]
    rows["perturb"] = sum(r["sentences"] for r in perturb)
    rows["embed"] = sum(json.loads(p.read_text())["rows"] for p in (results / "embeddings").glob("*/*/*/manifest.json"))
    rows["csc_score"] = sum(sum(r["variants"].values()) for r in perturb)
    return rows


def project_minilm(results: Path, fraction: float, seed: int = 0) -> dict:
    from workflow_scripts.embed import embed_sorted
    from workflow_scripts.encoders.sentence_transformers import SentenceTransformerEncoder
    files = sorted((results / "texts").glob("*/part-*.parquet"))
    total = sum(json.loads(p.read_text())["rows"] for p in (results / "embeddings").glob("*/*/*/manifest.json"))
    rng = np.random.default_rng(seed)
    picked = []
    for f in files:  # file by file: the texts of a full-size run do not fit in memory at once
        frame = pl.read_parquet(f)
        picked.append(frame.filter(pl.Series(rng.random(frame.height) < fraction)))
    sample = pl.concat(picked).unique("text_key").sort("text_key")["text"].to_list()
    log = logging.getLogger("bench")
    out = {"unique_texts": total, "sample": len(sample)}
    import torch
    torch.set_num_threads(2)
    for precision in ("fp32", "bf16"):
        enc = SentenceTransformerEncoder({"family": "sentence_transformers", "precision": precision,
                                          "name": "sentence-transformers/all-MiniLM-L6-v2"}, "cpu")
        tokens = int(enc.token_lengths(sample).sum())
        vectors = np.empty((len(sample), enc.dim), np.float32)
        started = time.perf_counter()
        embed_sorted(enc, sample, vectors, 32, log, f"minilm-{precision}")
        elapsed = time.perf_counter() - started
        out[precision] = {"seconds": elapsed, "texts_per_s": len(sample) / elapsed, "tokens_per_s": tokens / elapsed,
                          "tokens_per_text": tokens / len(sample)}
    return out


def run_old_commit(commit: str, pairs: int, corpus: Path, workroot: Path, env: dict) -> dict:
    """That commit's own bench_scale.py on the same corpus, in a temporary worktree: its stages."""
    old_root = workroot / f"old-{commit}"
    old_workdir = old_root / f"pairs-{pairs}"
    if old_workdir.exists():  # a fresh run: the old code's results must not be reused
        shutil.rmtree(old_workdir)
    old_workdir.mkdir(parents=True)
    (old_workdir / corpus.name).symlink_to(corpus)
    tree = Path(tempfile.mkdtemp(prefix="bench-scale-old-"))
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force", str(tree), commit], check=True,
                   stdout=subprocess.DEVNULL)
    try:
        bench = tree / "tests" / "benchmarks" / "bench_scale.py"
        if not bench.exists():
            raise SystemExit(f"commit {commit} has no tests/benchmarks/bench_scale.py")
        print(f"running bench_scale.py of {commit} ...", flush=True)
        subprocess.run([sys.executable, str(bench), "--pairs", str(pairs), "--skip-minilm", "--workdir", str(old_root)],
                       check=True, env=env, cwd=tree)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    return json.loads((old_workdir / "bench_scale.json").read_text())["stages"]


def print_side_by_side(commit: str, old: dict, new: dict) -> None:
    def cell(stage: dict | None, key: str, digits: int) -> str:
        return f"{stage[key]:.{digits}f}" if stage else "-"

    print(f"\nside by side, this machine: {commit} vs the working tree (summed job-seconds)")
    print(f"{'stage':<16}{commit[:12]:>14}{'now':>10}{'now/old':>9}{'old peak MB':>13}{'now peak MB':>13}")
    for rule in sorted(set(old) | set(new), key=lambda r: -max(old.get(r, {}).get("s", 0), new.get(r, {}).get("s", 0))):
        o, n = old.get(rule), new.get(rule)
        ratio = f"{n['s'] / o['s']:.2f}" if o and n and o["s"] else "-"
        print(f"{rule:<16}{cell(o, 's', 1):>14}{cell(n, 's', 1):>10}{ratio:>9}{cell(o, 'rss', 0):>13}{cell(n, 'rss', 0):>13}")
    totals = [sum(st["s"] for rule, st in stages.items() if rule != "embed") for stages in (old, new)]
    print(f"{'not embedding':<16}{totals[0]:>14.1f}{totals[1]:>10.1f}{totals[1] / totals[0]:>9.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=2_560_472)
    ap.add_argument("--workdir", default="/tmp/bench-scale")
    ap.add_argument("--minilm-fraction", type=float, default=0.01)
    ap.add_argument("--skip-minilm", action="store_true")
    ap.add_argument("--minilm-only", action="store_true", help="only the MiniLM projection, on an existing run")
    ap.add_argument("--old-commit", help="also run this commit's bench_scale.py first and print both side by side")
    args = ap.parse_args()
    workdir = Path(args.workdir).resolve() / f"pairs-{args.pairs}"
    workdir.mkdir(parents=True, exist_ok=True)
    corpus = workdir / "en-nl.txt.zip"
    if not corpus.exists():
        t = time.perf_counter()
        subprocess.run([sys.executable, str(Path(__file__).with_name("make_paracrawl_like.py")), str(corpus),
                        "--pairs", str(args.pairs)], check=True)
        print(f"corpus of {args.pairs} pairs written in {time.perf_counter() - t:.0f} s "
              f"({corpus.stat().st_size / 2 ** 20:.0f} MiB)", flush=True)
    config = bench_config(corpus, workdir)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    old_stages = run_old_commit(args.old_commit, args.pairs, corpus, Path(args.workdir).resolve(), env) \
        if args.old_commit else None
    results = workdir / "results"
    saved = workdir / "bench_scale.json"
    if args.minilm_only and saved.exists():
        wall = json.loads(saved.read_text())["wall_s"]
    else:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir),
                        "--cores", "2", "--configfile", str(config), "--quiet", "rules"], check=True, env=env)
        wall = time.perf_counter() - started
    stages, rows = stage_stats(results), stage_rows(results)
    print(f"\nworkflow on {args.pairs} pairs: {wall:.0f} s wall, {sum(s['jobs'] for s in stages.values())} jobs")
    print(f"{'stage':<16}{'jobs':>5}{'sum s':>9}{'max s':>8}{'peak RSS MB':>13}{'rows':>12}{'rows/s':>10}")
    for rule, st in sorted(stages.items(), key=lambda kv: -kv[1]["s"]):
        n = rows.get(rule)
        rate = f"{n / st['s']:,.0f}" if n and st["s"] else "-"
        print(f"{rule:<16}{st['jobs']:>5}{st['s']:>9.1f}{st['max_s']:>8.1f}{st['rss']:>13.0f}"
              f"{(f'{n:,}' if n else '-'):>12}{rate:>10}")
    summary = {"pairs": args.pairs, "wall_s": wall, "stages": stages, "rows": rows}
    if not args.skip_minilm:
        proj = project_minilm(results, args.minilm_fraction)
        summary["minilm"] = proj
        print(f"\nMiniLM on a {args.minilm_fraction:.1%} sample ({proj['sample']:,} of {proj['unique_texts']:,} unique texts):")
        for precision in ("fp32", "bf16"):
            p = proj[precision]
            print(f"  {precision}: {p['texts_per_s']:.0f} texts/s, {p['tokens_per_text']:.1f} tokens/text")
        print("projected CPU hours to embed every unique text on this 2-core machine "
              "(other models scaled by weights per token, not measured):")
        base = WEIGHTS_PER_TOKEN["all-MiniLM-L6-v2 (measured)"]
        for name, weights in WEIGHTS_PER_TOKEN.items():
            hours = {prec: proj["unique_texts"] / proj[prec]["texts_per_s"] * weights / base / 3600
                     for prec in ("fp32", "bf16")}
            print(f"  {name:<42} fp32 {hours['fp32']:8.1f} h   bf16 {hours['bf16']:8.1f} h")
    if old_stages is not None:
        summary["old"] = {"commit": args.old_commit, "stages": old_stages}
        print_side_by_side(args.old_commit, old_stages, stages)
    saved.write_text(json.dumps(summary, indent=2, default=float))
    print(f"\nfigures saved to {saved}")


if __name__ == "__main__":
    main()
