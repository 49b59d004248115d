"""The embed job on a GPU vs SentenceTransformer.encode on the same GPU, same texts, one run.

For each precision and batch size: (1) the workflow's embed job (`embed.embed_partition`, the
function the rule `embed` runs: token-count-sorted batches, a memory-mapped store written and
digested) with `device: cuda`; (2) `SentenceTransformer.encode` (its own length sorting) on the
same unique texts with the same batch size. Both after a warm-up (CUDA context, each padded shape's
kernels: `--warm full` encodes every text once first); the encode's model load is shown apart, the
job's is in its time. Prints texts/s of each, their ratio, and the agreement of the vectors
(per-text cosine, job vs encode, and each precision vs fp32).

Make the inputs first (on a machine with ../shared), then run where the GPU is:
    python tests/benchmarks/bench_gpu_embedding.py make-texts DIR [--texts 100000]
    python tests/benchmarks/bench_gpu_embedding.py run DIR --model MODEL_DIR [--device cuda]
        [--batch-sizes 32,256] [--precisions fp32,fp16]
`make-texts` writes DIR/texts.parquet (the text-set format of the embed stage): the English and
Dutch sides of a ParaCrawl-like bitext (make_paracrawl_like.py: real sentence lengths and words).
"""
from __future__ import annotations

import argparse
import gzip
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def make_texts(out: Path, n_texts: int) -> None:
    from workflow_scripts.texts import write_text_partitions
    out.mkdir(parents=True, exist_ok=True)
    bitext = out / "bitext.txt.gz"
    pairs = n_texts // 2 + n_texts // 10  # some sides repeat: more pairs than half the texts
    subprocess.run([sys.executable, str(ROOT / "tests/benchmarks/make_paracrawl_like.py"), str(bitext),
                    "--pairs", str(pairs)], check=True)
    texts: list[str] = []
    with gzip.open(bitext, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            texts += [side.strip() for side in line.rstrip("\n").split("\t") if side.strip()]
    unique = list(dict.fromkeys(texts))[:n_texts]
    counts = write_text_partitions(unique, [out / "texts.parquet"])
    bitext.unlink()
    print(f"{counts['unique_texts']} unique texts -> {out / 'texts.parquet'}")


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.einsum("ij,ij->i", a, b)


def run(directory: Path, model_dir: str, device: str, batch_sizes: list[int], precisions: list[str],
        warm: str = "full") -> None:
    import pyarrow.parquet as pq
    import torch
    from sentence_transformers import SentenceTransformer

    from workflow_scripts.embed import embed_partition
    from workflow_scripts.texts import text_keys
    from workflow_scripts.vector_store import Partition

    log = logging.getLogger("bench")
    # BENCH_LOG=INFO: the job's own progress lines (load, chunks, texts/s), with seconds since start
    logging.basicConfig(level=os.environ.get("BENCH_LOG", "WARNING"), format="%(relativeCreated)8.0f ms %(message)s")
    text_file = directory / "texts.parquet"
    texts = pq.read_table(text_file, columns=["text"])["text"].to_pylist()
    keys = text_keys(texts)
    words = np.array([len(t.split()) for t in texts])
    gpu = torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu"
    print(f"{len(texts)} unique texts, words per text: mean {words.mean():.1f}, median {np.median(words):.0f}, "
          f"max {words.max()}; device {device} ({gpu}); torch {torch.__version__}")
    print(f"{'precision':>9} {'batch':>5} | {'job texts/s':>11} {'encode texts/s':>14} {'job/encode':>10} | "
          f"{'ST load s':>9} | cos(job, encode) min | cos(vs fp32) min")
    reference: np.ndarray | None = None
    for precision in precisions:
        dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]
        start = time.perf_counter()
        model = SentenceTransformer(model_dir, device=device, model_kwargs={"dtype": dtype})
        st_load = time.perf_counter() - start
        for batch in batch_sizes:
            # warm-up over every text: the CUDA context, and the kernels of each padded shape (on a
            # GPU the first pass over new shapes is slower, whichever path meets them first)
            model.encode(texts if warm == "full" else texts[:2000], batch_size=batch)
            spec = {"family": "sentence_transformers", "name": model_dir, "device": device,
                    "precision": precision, "batch_size": batch}
            with tempfile.TemporaryDirectory() as tmp:
                if device.startswith("cuda"):
                    torch.cuda.synchronize()
                start = time.perf_counter()
                manifest = embed_partition("bench", spec, "bench", 0, 1, [str(text_file)], f"{tmp}/store",
                                           os.cpu_count() or 1, log, batch_size=batch)
                job_s = time.perf_counter() - start
                part = Partition.open(f"{tmp}/store")
                found, rows = part.find(keys)
                assert found.all(), "the store lacks texts it was given"
                job_vectors = np.asarray(part.vectors[rows], dtype=np.float32)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            start = time.perf_counter()
            encoded = model.encode(texts, batch_size=batch, convert_to_numpy=True, show_progress_bar=False)
            encode_s = time.perf_counter() - start
            # the job's time includes its model load (the first step of every embed job): shown apart
            job_rate, encode_rate = len(texts) / job_s, len(texts) / encode_s
            agreement = cosines(job_vectors, encoded.astype(np.float32)).min()
            if reference is None:
                reference = encoded.astype(np.float32)
            vs_fp32 = cosines(reference, encoded.astype(np.float32)).min()
            print(f"{precision:>9} {batch:>5} | {job_rate:>11.0f} {encode_rate:>14.0f} {job_rate / encode_rate:>10.2f} | "
                  f"{st_load:>9.1f} | {agreement:.6f} | {vs_fp32:.6f}   (job {job_s:.1f} s, encode {encode_s:.1f} s, "
                  f"manifest device {manifest.get('device')}, precision {manifest.get('precision')})")
        del model
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    print("job texts/s: the whole embed job (model load, sorting, encoding, store write and digest); "
          "encode texts/s: SentenceTransformer.encode alone, model loaded and warm.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make-texts")
    m.add_argument("dir", type=Path)
    m.add_argument("--texts", type=int, default=100_000)
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("--model", required=True)
    r.add_argument("--device", default="cuda")
    r.add_argument("--batch-sizes", default="32,256")
    r.add_argument("--precisions", default="fp32,fp16")
    r.add_argument("--warm", choices=["full", "short"], default="full",
                   help="warm-up before timing: every text once (default), or the first 2,000")
    args = ap.parse_args()
    if args.cmd == "make-texts":
        make_texts(args.dir, args.texts)
    else:
        run(args.dir, args.model, args.device, [int(b) for b in args.batch_sizes.split(",")],
            args.precisions.split(","), args.warm)


if __name__ == "__main__":
    main()
