"""Stage 4, embed: one interface over encoder families, writing memory-mapped vector stores.

Each model's family (workflow_scripts/encoders/, one module a family) loads its encoder; here is
only what every family shares. Every unique text of a partition is embedded once, in chunks of
`chunk_rows` texts; within a chunk, batches hold texts of similar token count (little padding).
"""
from __future__ import annotations

# the encoder families are in encoders/, the TF-IDF fit in tfidf_fit.py; here: the partition job,
# its worker processes and the jobs of rules/embed.smk

import contextlib
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from workflow_scripts import throughput
from workflow_scripts.common import atomic_path, setup_logging, sorted_keys, vector_settings
from workflow_scripts.embed_pipeline import (BackgroundWrites, Prefetch, embed_sorted, tokenize_or_none,  # noqa: F401
                                             tokenized)
from workflow_scripts.encoders import (EncoderJob, check_device, family_of, load_encoder, resolve_device, role_spec,
                                       run_settings_of, software_versions)
from workflow_scripts.model_settings import scope_role
from workflow_scripts.texts import iter_chunks, unique_rows
from workflow_scripts.vector_store import Partition, PartitionWriter, StoreMismatch, spec_digest


def open_encoder(spec: dict, device: str, model_file: str | None, job: EncoderJob | None = None):
    """The encoder of a model entry, as its family loads it (encoders.load_encoder)."""
    return load_encoder(spec, device, model_file, job)


_WORKER: dict = {}  # the encoder of a worker process


def _start_worker(spec: dict, model_file: str | None, threads: int) -> None:
    import torch
    torch.set_num_threads(threads)
    _WORKER["encoder"] = open_encoder(spec, "cpu", model_file)


def _encode_in_worker(batch) -> tuple[np.ndarray, int, int]:
    """A batch's vectors: `batch` is its padded inputs (numpy arrays: the texts tokenized once in
    the job's process) or its texts."""
    import torch
    encoder = _WORKER["encoder"]
    if isinstance(batch, dict):
        vectors = encoder.forward({k: torch.from_numpy(v) for k, v in batch.items()}).numpy()
    else:
        vectors = encoder.encode_batch(batch)
    return vectors, os.getpid(), torch.get_num_threads()


class WorkerPool:
    """`workers` CPU processes with `threads` torch threads each and their own copy of the model.

    Started with spawn, not fork: a process forked after torch has run GNU OpenMP threads hangs in
    its first multi-threaded operation (which is why forked workers could only use one thread).
    A worker that dies (e.g. out of memory) fails the job (BrokenProcessPool), never hangs it."""

    def __init__(self, spec: dict, model_file: str | None, workers: int, threads: int, log, label: str):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        self.executor = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_start_worker, initargs=(spec, model_file, threads))
        self.log, self.label, self.reported = log, label, set()

    def map(self, batches):
        """The vectors of each batch (its padded inputs, as host tensors, or its texts), in order."""
        batches = ({k: v.numpy() for k, v in b.items()} if isinstance(b, dict) else b for b in batches)
        for vectors, pid, threads in self.executor.map(_encode_in_worker, batches):
            if pid not in self.reported:  # what the process really runs with, from torch itself
                self.reported.add(pid)
                self.log.info("%s: worker process %d runs %d torch thread(s)", self.label, pid, threads)
            yield vectors

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


def embed_partition(model: str, spec: dict, scope: str, partition: int, partitions: int, text_files: list[str],
                    out_dir: str, threads: int, log, fitted: str | None = None, model_file: str | None = None,
                    chunk_rows: int = 100_000, batch_size: int | None = None, cpu_workers: int | None = None,
                    reuse: str | None = None, vocabulary_texts: list[str] | None = None,
                    cache: str | None = None, throughput_file: str | None = None,
                    run_settings: dict | None = None, timings: dict | None = None) -> dict:
    """Embed every unique text of the partition into a store, `chunk_rows` texts at a time, so the
    job's memory follows the chunk size (plus 8 bytes of key per text), not the partition size.

    `reuse`: the same partition of another store of this model (a derived corpus's parent): texts
    it holds are copied from it instead of encoded. The log and the manifest count both.

    `vocabulary_texts` (a family that needs the text set, e.g. surface form): every text file of
    the text set, whose features number the store's columns (default: `text_files`, right for a
    single partition).

    `cache` (a family that needs a vector cache, e.g. a served model): the model's vector cache,
    shared by its jobs; `run_settings`: how its requests run (encoders.run_settings_of the job's
    resources), apart from the spec for the same reason as the batch size: they change no vector.

    `batch_size` and `cpu_workers` default to the spec's. The workflow passes them apart from the
    spec, so that changing them reruns nothing where they change vectors by float rounding only
    (fp32); in bf16/fp16 the batch size is part of the spec (common.vector_settings).

    `throughput_file`: where the texts it encoded and the seconds they took are recorded for the
    plan summary's estimates (workflow_scripts/throughput.py); nothing decides results by it.
    `timings`: a dict given gets the job's seconds: `load` (the model), `encode` (in encode
    calls), `total` (benchmarks: tests/benchmarks/bench_gpu_embedding.py)."""
    spec = role_spec(spec, scope_role(scope))  # the workflow passes it resolved already (idempotent)
    family = family_of(spec)
    # the installed versions (a scan of every installed distribution, 0.4 s here) in a thread, while
    # the texts are read and the model loads; into the manifest when it is written
    versions = ThreadPoolExecutor(1, thread_name_prefix="versions")
    software = versions.submit(software_versions, spec["family"])
    versions.shutdown(wait=False)
    masks, n_unique = unique_rows(text_files)
    label = f"{model}/{scope}/part-{partition}"
    log.info("%s: %d unique texts from %d file(s)", label, n_unique, len(text_files))
    manifest = {"model": model, "family": spec["family"], "scope": scope, "partition": partition,
                "partitions": partitions, "name": spec.get("name"), "revision": spec.get("revision"),
                "spec_digest": spec_digest(spec),
                # the local model's files (Study.model_digest) and the role's template or prompt
                "model_sha256": spec.get("model_sha256"), "text_form": spec.get("text_form")}
    parent = open_reuse(reuse, manifest, partition) if reuse else None
    started = time.perf_counter()
    done = reused = 0
    workers = 1
    seconds = {"encode": 0.0, "load": 0.0}  # in encode calls; loading the model (inside them or before)
    tokenize_ahead = lambda texts: None  # noqa: E731 - a torch encoder's below
    with atomic_path(out_dir, is_dir=True) as tmp:
        if family.sparse:
            # built whole before the chunks: a fitted vocabulary, or columns numbered over the text set
            sparse = load_encoder(spec, "cpu", model_file, EncoderJob(
                model=model, log=log, label=label, fitted=fitted, text_set=tuple(vocabulary_texts or text_files),
                chunk_rows=chunk_rows))
            encode = lambda texts, pool, tokens=None: sparse.encode_batch(texts)  # noqa: E731
            manifest.update(sparse.manifest_fields())
            writer = PartitionWriter(tmp, manifest, sparse=True, dim=sparse.dim)
        else:
            loaded: dict = {}

            def load() -> None:
                """Import the model's library and load it (about 10 s for sentence-transformers):
                only once a text needs encoding, so a derived corpus whose every text is in its
                parent's store loads nothing."""
                load_started = time.perf_counter()
                device, worker_threads, workers = "cpu", threads, 1
                if family.uses_torch:
                    import torch
                    device = resolve_device(spec.get("device", "auto"))
                    check_device(device, model)
                    # CPU: `cpu_workers` processes sharing the job's threads; GPU: one process
                    workers = (cpu_workers or spec.get("cpu_workers", 1)) if device == "cpu" else 1
                    if parent is not None:  # loaded mid-job for the few texts its parent lacks: in this process
                        workers = 1
                    worker_threads = max(1, threads // workers)
                    torch.set_num_threads(threads)
                encoder = open_encoder(spec, device, model_file, EncoderJob(
                    model=model, log=log, label=label, cache=cache, run_settings=run_settings or {}))
                size = batch_size or spec.get("batch_size", 32)
                if hasattr(encoder, "batch_size"):  # a served encoder batches its requests itself
                    encoder.batch_size = size
                decided = vector_settings(spec).get("batch_size", size)
                if decided != size:  # the digest would name other vectors than these
                    raise ValueError(f"{label}: batch size {size}, but the spec's {decided} decides the "
                                     f"vectors at precision {spec['precision']}")
                if parent is not None and parent.manifest["dim"] != encoder.dim:
                    raise StoreMismatch(f"{reuse}: vectors of dimension {parent.manifest['dim']}, the model "
                                        f"gives {encoder.dim}")
                loaded.update(encoder=encoder, batch_size=size, workers=workers, worker_threads=worker_threads,
                              settings={"origin": encoder.origin, "device": device,
                                        "precision": spec.get("precision", "fp32"), "batch_size": size,
                                        "workers": workers, "threads_per_worker": worker_threads,
                                        # what the family's encoder adds (Family.manifest_keys: a
                                        # registry entry and its prompts, an endpoint)
                                        **(encoder.manifest_fields() if hasattr(encoder, "manifest_fields") else {})})
                seconds["load"] += time.perf_counter() - load_started

            def encode(texts, pool, tokens=None):
                if not loaded:
                    load()
                encoder = loaded["encoder"]
                if hasattr(encoder, "encode_texts"):  # a served encoder: its own batching and concurrency
                    return encoder.encode_texts(texts)
                out = np.empty((len(texts), encoder.dim), np.float32)
                embed_sorted(encoder, texts, out, loaded["batch_size"], log, label, pool, tokens)
                return out

            def tokenize_ahead(texts):
                """On a GPU, the next chunk's texts tokenized (in the chunk thread) while this one is
                encoded; on the CPU, whose cores the model uses, in turn (embed_sorted does it)."""
                encoder = loaded.get("encoder")
                if (not texts or encoder is None or loaded["settings"]["device"] == "cpu"
                        or not tokenized(encoder)):
                    return None
                return tokenize_or_none(encoder, texts, log, label)

            if parent is None:
                load()
                dim = loaded["encoder"].dim
            else:
                dim = parent.manifest["dim"]
            workers, worker_threads = loaded.get("workers", 1), loaded.get("worker_threads", threads)
            writer = PartitionWriter(tmp, manifest, dtype=spec.get("store_dtype", "float32"), dim=dim)
        with contextlib.ExitStack() as stack:
            stack.enter_context(writer)
            pool = stack.enter_context(WorkerPool(spec, model_file, workers, worker_threads, log, label)) \
                if workers > 1 else None
            # the store's appends in a second thread: the next chunk is encoded meanwhile
            writes = stack.enter_context(BackgroundWrites(f"{label} writer"))

            def timed_encode(texts, tokens=None):
                """encode(texts), its seconds counted apart from a model load it started"""
                loads, call_started = seconds["load"], time.perf_counter()
                vectors = encode(texts, pool, tokens)
                seconds["encode"] += time.perf_counter() - call_started - (seconds["load"] - loads)
                return vectors

            def read_chunk(chunk):
                """A chunk's keys and texts, which of them the parent holds, and the texts to
                encode (tokenized where tokenize_ahead does): read one chunk ahead, in a thread."""
                keys, texts = chunk
                found = rows = None
                todo = texts
                if parent is not None:
                    found, rows = parent.find(keys)
                    todo = [texts[i] for i in np.flatnonzero(~found)]
                return keys, texts, found, rows, todo, tokenize_ahead(todo)

            chunks = Prefetch(read_chunk, iter_chunks(text_files, masks, chunk_rows), depth=1, name=f"{label} chunks")
            for keys, texts, found, rows, todo, tokens in chunks:
                if parent is None:
                    writes.submit(writer.add, keys, timed_encode(texts, tokens))
                else:
                    out = np.empty((len(texts), parent.manifest["dim"]), np.float32)
                    out[found] = parent.vectors[np.sort(rows)][np.argsort(np.argsort(rows))] if len(rows) else 0
                    if todo:
                        out[~found] = timed_encode(todo, tokens)
                    writes.submit(writer.add, keys, out)
                    reused += int(found.sum())
                    parent.release_pages()
                done += len(texts)
                elapsed = time.perf_counter() - started
                log.info("%s: %d/%d texts stored (%d encoded, %d reused; %.0f texts/s)", label, done, n_unique,
                         done - reused, reused, done / max(elapsed, 1e-9))
            writes.wait()
            if not family.sparse:
                # how the vectors were made: this job's encoder, or (nothing encoded) the parent's
                writer.manifest.update(loaded["settings"] if loaded else {
                    k: parent.manifest.get(k) for k in ("origin", "device", "precision", "batch_size", "workers",
                                                        "threads_per_worker", *family.manifest_keys)
                    if k in parent.manifest})
            writer.manifest.update(software=software.result(), encoded=done - reused, reused=reused,
                                   reused_from=str(Path(reuse).parent.name) if reuse else None)
            manifest = writer.close()
    elapsed = time.perf_counter() - started
    if timings is not None:
        timings.update(seconds, total=elapsed)
    log.info("%s: %d texts in %.1f s (%.0f texts/s): %d encoded, %d reused%s", label, done, elapsed,
             done / max(elapsed, 1e-9), done - reused, reused, f" from {reuse}" if reuse else "")
    if throughput_file and done - reused > 0:
        record_throughput(throughput_file, spec, manifest.get("device") or "cpu", done - reused, seconds["encode"],
                          log, label)
    return manifest


def record_throughput(path: str, spec: dict, device: str, encoded: int, encode_s: float, log, label: str) -> None:
    """This job's texts and seconds for the plan summary's estimates; a cache, so a failure to
    write it is logged, never fatal."""
    try:
        job_s = throughput.process_seconds()
        throughput.record(path, throughput.model_key(spec, device), encoded, encode_s, job_s)
        log.info("%s: throughput recorded in %s (%d texts, %.2f s encoding, %.1f s since the job started)",
                 label, path, encoded, encode_s, job_s)
    except (OSError, ImportError) as err:
        log.warning("%s: throughput not recorded in %s: %s", label, path, err)


def open_reuse(directory: str, manifest: dict, partition: int) -> Partition:
    """The partition whose vectors a derived corpus reuses: it must be this model's, embedded with
    the same settings, for the same partition, so that its vectors are the ones this job would write."""
    parent = Partition.open(directory)
    m = parent.manifest
    for key in ("model", "spec_digest", "partitions", "partition"):
        expected = partition if key == "partition" else manifest[key]
        if m.get(key) != expected:
            raise StoreMismatch(f"{directory}: cannot reuse its vectors: {key} {m.get(key)!r}, expected {expected!r}")
    if m["format"] != "dense":
        raise StoreMismatch(f"{directory}: only dense stores are reused (tf-idf is fitted per text set)")
    return parent


def throughput_file_of(out_dir: str) -> str | None:
    """<results>/.cache/throughput.json for a store at <results>/embeddings/<model>/<text set>/part-NNN
    (rules/embed.smk's layout); None for a store elsewhere."""
    parents = Path(out_dir).parents
    if len(parents) > 3 and parents[2].name == "embeddings":
        return str(throughput.cache_path(parents[3]))
    return None


# ---- the jobs of rules/embed.smk (workflow_scripts/jobs.py) ----
def paths(files) -> list[str]:
    """A job's input entry as a list of paths (a named input of one file reads as that file)."""
    return [files] if isinstance(files, str) else list(files or [])


def run_fit_tfidf(job) -> None:
    from workflow_scripts.tfidf_fit import fit_tfidf  # polars' import only where a fit runs

    # keys sorted, as the JSON param gave them before: the fitted file stores the spec as it is
    spec = sorted_keys(job.params.spec)
    fit_tfidf(spec, job.input.get("corpus"), job.output[0], setup_logging(name="embed"),
              paths(job.input.get("texts")), scope=job.wildcards.scope, variants_dir=job.input.get("variants"))


def run_embed(job) -> None:
    # before the model's libraries are imported: no progress bars in the log; the hub is online
    # unless the caller's environment says otherwise
    os.environ["TQDM_DISABLE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = os.environ.get("HF_HUB_OFFLINE") or "0"
    out = job.output[0]
    embed_partition(job.wildcards.model, job.params.spec, job.wildcards.scope, int(job.wildcards.part),
                    job.params.partitions, paths(job.input.texts), out, job.threads, setup_logging(name="embed"),
                    fitted=job.input.get("fitted"), model_file=job.input.get("model_file"),
                    batch_size=job.resources.batch_size, cpu_workers=job.resources.cpu_workers,
                    reuse=job.input.get("reuse"), vocabulary_texts=paths(job.input.get("vocabulary_texts")),
                    cache=job.params.cache, throughput_file=throughput_file_of(out),
                    run_settings=run_settings_of(job.resources))
