"""Embedding stage vs SentenceTransformer.encode (its defaults) on the same unique texts, in one run.

Prints throughput of: encode() with defaults; the workflow's token-count-sorted batches written
into a memory-mapped store, in fp32 and bf16, both in one process with all threads (1xT, the embed
job's default) and in T single-thread worker processes (Tx1, `cpu_workers: T`; workers are started
once, outside the timing, as a job starts them once); and the agreement of bf16 with fp32
(per-vector cosine, pairwise-cosine error).
Texts: real EN and NL sentences from ../shared/data/en_nl_parallel (mixed lengths), else the
project's sample corpus.  Usage: python tests/benchmarks/bench_embedding.py [N_TEXTS] [REPEATS]

Against another tree (e.g. main's, from `git archive main`): `... bench_embedding.py N_TEXTS
REPEATS --against DIR` runs DIR's embedding loop and encoder and this tree's on the same texts in one
process, every variant in turn, and prints each one's best texts/s, their ratio, each tree's ratio
to encode() and whether the two trees' vectors are byte-identical (fp32 and bf16, one process with
all threads: the embed job's default).
"""
import csv
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from workflow_scripts.embed import WorkerPool, embed_sorted  # noqa: E402
from workflow_scripts.encoders.sentence_transformers import SentenceTransformerEncoder  # noqa: E402

SPEC = {"family": "sentence_transformers", "name": "sentence-transformers/all-MiniLM-L6-v2", "batch_size": 32}


def load_texts(n: int) -> list[str]:
    tsv = ROOT.parent / "shared" / "data" / "en_nl_parallel" / "paracrawl_en_nl_human_eval.tsv"
    texts: list[str] = []
    if tsv.exists():
        with open(tsv, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                texts += [" ".join(row["en"].split()), " ".join(row["nl"].split())]
    else:
        for line in (ROOT / "resources" / "corpora" / "en_nl_sample.txt").read_text().splitlines():
            texts += line.split("\t")
    unique = list(dict.fromkeys(t for t in texts if t))
    rng = np.random.default_rng(0)
    return [unique[i] for i in rng.permutation(len(unique))[:n]]


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    import torch
    threads = torch.get_num_threads()
    texts = load_texts(n)
    words = np.array([len(t.split()) for t in texts])
    print(f"{len(texts)} unique texts, words per text: mean {words.mean():.1f}, median {np.median(words):.0f}, "
          f"max {words.max()}; torch threads {threads}")
    fp32 = SentenceTransformerEncoder(SPEC, "cpu")
    bf16 = SentenceTransformerEncoder({**SPEC, "precision": "bf16"}, "cpu")
    log = logging.getLogger("bench")

    scratch = Path(tempfile.mkdtemp())

    pools = {p: WorkerPool({**SPEC, "precision": p}, None, threads, 1, log, "bench") for p in ("fp32", "bf16")}

    def ours(enc, precision, workers):
        # as the embed job runs: output is a memory-mapped .npy; `workers` processes share the threads
        out = np.lib.format.open_memmap(scratch / "v.npy", mode="w+", dtype=np.float32, shape=(len(texts), enc.dim))
        embed_sorted(enc, texts, out, SPEC["batch_size"], log, "bench", pools[precision] if workers > 1 else None)
        return np.array(out)

    for pool in pools.values():  # start the workers (spawn, model load) before timing
        list(pool.map([["warm up"]] * (4 * threads)))
    runs = {"encode() defaults": lambda: fp32.model.encode(texts, convert_to_numpy=True),
            f"workflow fp32 1x{threads}": lambda: ours(fp32, "fp32", 1),
            f"workflow fp32 {threads}x1": lambda: ours(fp32, "fp32", threads),
            f"workflow bf16 1x{threads}": lambda: ours(bf16, "bf16", 1),
            f"workflow bf16 {threads}x1": lambda: ours(bf16, "bf16", threads)}
    best: dict[str, float] = {}
    outputs = {}
    for _ in range(repeats):  # interleaved, best of `repeats`: this machine is noisy
        for name, fn in runs.items():
            seconds, outputs[name] = timed(fn)
            best[name] = min(best.get(name, np.inf), seconds)
    base = len(texts) / best["encode() defaults"]
    for name, seconds in best.items():
        rate = len(texts) / seconds
        print(f"{name:22s} {rate:8.1f} texts/s  ratio to encode(): {rate / base:.2f}x")
    ref, low = outputs["encode() defaults"], outputs[f"workflow bf16 1x{threads}"]
    mine = outputs[f"workflow fp32 1x{threads}"]
    same = np.einsum("ij,ij->i", ref, mine) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(mine, axis=1))
    print(f"workflow fp32 vs encode(): min cosine {same.min():.7f}")
    cos = np.einsum("ij,ij->i", ref, low) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(low, axis=1))
    print(f"bf16 vs fp32, same text: cosine mean {cos.mean():.6f}, min {cos.min():.6f}")
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, len(texts), 20000), rng.integers(0, len(texts), 20000)
    unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)
    r, l = unit(ref), unit(low)
    err = np.abs(np.einsum("ij,ij->i", r[a], r[b]) - np.einsum("ij,ij->i", l[a], l[b]))
    print(f"bf16 pairwise-cosine error: mean {err.mean():.5f}, max {err.max():.5f}")
    print(f"CPU bf16 support (torch sees AVX512-BF16/AMX): {torch.backends.cpu.get_cpu_capability()}")
    for pool in pools.values():
        pool.__exit__(None, None, None)


def tree_functions(tree: Path):
    """(embed_sorted, SentenceTransformerEncoder) of another checkout, imported from its own files:
    its workflow_scripts modules are loaded, kept by these functions, and taken out of sys.modules
    again, so this tree's stay what `import workflow_scripts...` finds."""
    import importlib
    ours = {k: v for k, v in sys.modules.items() if k == "workflow_scripts" or k.startswith("workflow_scripts.")}
    for name in ours:
        del sys.modules[name]
    sys.path.insert(0, str(tree))
    try:
        embed = importlib.import_module("workflow_scripts.embed")
        encoders = importlib.import_module("workflow_scripts.encoders")
        assert Path(embed.__file__).resolve().is_relative_to(tree.resolve()), embed.__file__
        return embed.embed_sorted, SentenceTransformerEncoder
    finally:
        sys.path.remove(str(tree))
        for name in [k for k in sys.modules if k == "workflow_scripts" or k.startswith("workflow_scripts.")]:
            del sys.modules[name]
        sys.modules.update(ours)


def against(other: Path, n: int, repeats: int) -> None:
    """This tree's embedding loop beside `other`'s (e.g. main's), in one process: the same texts,
    each tree's own encoder class and loop, in one thread pool of T torch threads (the embed job's
    default, `cpu_workers: 1`), every variant in turn, `repeats` times, best of each."""
    import torch
    threads = torch.get_num_threads()
    other_sorted, OtherEncoder = tree_functions(other)
    texts = load_texts(n)
    log = logging.getLogger("bench")
    encoders = {(tree, p): cls({**SPEC, "precision": p}, "cpu")
                for tree, cls in (("other", OtherEncoder), ("this", SentenceTransformerEncoder)) for p in ("fp32", "bf16")}
    loops = {"other": other_sorted, "this": embed_sorted}

    def job(tree, precision):
        enc = encoders[tree, precision]
        out = np.empty((len(texts), enc.dim), np.float32)
        loops[tree](enc, texts, out, SPEC["batch_size"], log, "bench")
        return out

    runs = {"encode() defaults": lambda: encoders["this", "fp32"].model.encode(texts, convert_to_numpy=True)}
    for precision in ("fp32", "bf16"):
        for tree in ("other", "this"):
            runs[f"{tree} {precision} 1x{threads}"] = lambda tree=tree, precision=precision: job(tree, precision)
    best, outputs = {}, {}
    for _ in range(repeats):
        for name, fn in runs.items():
            seconds, outputs[name] = timed(fn)
            best[name] = min(best.get(name, np.inf), seconds)
    words = np.array([len(t.split()) for t in texts])
    print(f"{len(texts)} unique texts (words per text mean {words.mean():.1f}, max {words.max()}); torch threads "
          f"{threads}; best of {repeats}, every variant in turn in one process; other = {other.resolve()}, this = {ROOT}")
    encode_rate = len(texts) / best["encode() defaults"]
    print(f"encode() defaults      {encode_rate:8.1f} texts/s")
    print(f"{'precision':10s} {'other t/s':>10} {'this t/s':>10} {'this/other':>10} {'other/encode':>12} "
          f"{'this/encode':>11}  vectors")
    for precision in ("fp32", "bf16"):
        a, b = (len(texts) / best[f"{tree} {precision} 1x{threads}"] for tree in ("other", "this"))
        same = np.array_equal(outputs[f"other {precision} 1x{threads}"], outputs[f"this {precision} 1x{threads}"])
        print(f"{precision:10s} {a:10.1f} {b:10.1f} {b / a:10.2f} {a / encode_rate:12.2f} {b / encode_rate:11.2f}  "
              f"{'byte-identical' if same else 'DIFFER'}")


if __name__ == "__main__":
    if "--against" in sys.argv:
        i = sys.argv.index("--against")
        args = sys.argv[1:i] + sys.argv[i + 2:]
        against(Path(sys.argv[i + 1]), int(args[0]) if args else 2000, int(args[1]) if len(args) > 1 else 3)
    else:
        main()
