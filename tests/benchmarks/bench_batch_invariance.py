"""Do stored vectors depend on batch size, padding or torch threads? (decides what reruns embedding)

Embeds the same unique texts with all-MiniLM-L6-v2 (the bundled package) in fp32 and bf16:
batch 1 (no padding at all: the reference), the workflow's length-sorted batches of 32 and 128,
unsorted batches of 128 (much padding), and fp32 with 1 vs 2 torch threads. For each run vs the
reference of its precision it prints the largest absolute difference of a vector entry, the
smallest cosine between the two vectors of one text, and the largest change of a pairwise cosine
(what the Concept Separation Curves are made of), over 20,000 random pairs.
Texts: real EN and NL sentences from ../shared/data/en_nl_parallel, else the sample corpus.
Usage: python tests/benchmarks/bench_batch_invariance.py [N_TEXTS] [PRECISION ...]   (default 1000 fp32 bf16)
"""
import logging
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench_embedding import load_texts  # noqa: E402
from workflow_scripts.embed import embed_sorted  # noqa: E402
from workflow_scripts.encoders.sentence_transformers import SentenceTransformerEncoder  # noqa: E402

SPEC = {"family": "sentence_transformers", "name": "sentence-transformers/all-MiniLM-L6-v2"}
LOG = logging.getLogger("bench")


def sorted_batches(enc, texts, batch_size):
    out = np.zeros((len(texts), enc.dim), np.float32)
    embed_sorted(enc, texts, out, batch_size, LOG, "bench")
    return out


def unsorted_batches(enc, texts, batch_size):
    out = np.zeros((len(texts), enc.dim), np.float32)
    for lo in range(0, len(texts), batch_size):  # texts are in random order: long and short mixed
        out[lo:lo + batch_size] = enc.encode_batch(texts[lo:lo + batch_size])
    return out


def compare(ref: np.ndarray, other: np.ndarray, a: np.ndarray, b: np.ndarray) -> str:
    unit = lambda m: m.astype(np.float64) / np.linalg.norm(m.astype(np.float64), axis=1, keepdims=True)
    r, o = unit(ref), unit(other)
    same = np.einsum("ij,ij->i", r, o)
    pair_err = np.abs(np.einsum("ij,ij->i", r[a], r[b]) - np.einsum("ij,ij->i", o[a], o[b]))
    return (f"max |dv| {np.abs(ref - other).max():.2e}  min cos(same text) {same.min():.9f} "
            f"(1-cos {1 - same.min():.1e})  max |d pairwise cos| {pair_err.max():.2e}  "
            f"identical rows {np.mean(np.all(ref == other, axis=1)):.1%}")


def main() -> None:
    import torch
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    precisions = sys.argv[2:] or ["fp32", "bf16"]
    texts = load_texts(n)
    words = np.array([len(t.split()) for t in texts])
    print(f"{len(texts)} unique texts, words per text: mean {words.mean():.1f}, max {words.max()}; "
          f"torch {torch.__version__}, {torch.backends.cpu.get_cpu_capability()}")
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, len(texts), 20000), rng.integers(0, len(texts), 20000)
    refs = {}
    for precision in precisions:
        enc = SentenceTransformerEncoder({**SPEC, "precision": precision}, "cpu")
        torch.set_num_threads(2)
        ref = sorted_batches(enc, texts, 1)
        runs = {"sorted batch 32": lambda: sorted_batches(enc, texts, 32),
                "sorted batch 128": lambda: sorted_batches(enc, texts, 128),
                "unsorted batch 128": lambda: unsorted_batches(enc, texts, 128),
                "batch 1 again": lambda: sorted_batches(enc, texts, 1)}
        for name, fn in runs.items():
            print(f"{precision} {name:20s} vs batch 1: {compare(ref, fn(), a, b)}", flush=True)
        two = sorted_batches(enc, texts, 32)
        torch.set_num_threads(1)
        one = sorted_batches(enc, texts, 32)
        torch.set_num_threads(2)
        print(f"{precision} batch 32, 1 thread   vs 2 threads: {compare(two, one, a, b)}", flush=True)
        refs[precision] = ref
    if "fp32" in refs:
        for precision in set(refs) - {"fp32"}:
            print(f"for scale: {precision} vs fp32 (both batch 1):  {compare(refs['fp32'], refs[precision], a, b)}")


if __name__ == "__main__":
    main()
