"""Exact retrieval: every query against the whole (deduplicated) sentence set (methods.md §4).

Ranking: by inner product of unit vectors (cosine), ties broken by (score desc, id asc); the corpus
is ordered by `_id`, so a row's position is its rank among ids. The reference code instead searches
the list of answers aligned to its questions and scores by row index, so a copy of the right
sentence counts as a miss; here each question is judged against its own qrels.

How the search is exact, whatever the device and the summation order of its BLAS:
1. A float32 engine finds candidates: the top k + `extra` of each query, corpus shard by corpus
   shard, so memory follows the shard and the query batch, not the corpus (dense.py,
   `search_engine`): on a GPU FAISS's `IndexFlatIP` where faiss has GPU support, else torch's
   blocked matrix products and top-k on the GPU (`TorchFlatSearch`); on the CPU the same torch
   products for a large search (from 5e7 query x row products: 75-78% of the machine's matmul limit
   at 1e6 x 384, FAISS alone 60%; docs/timings.md), FAISS's `IndexFlatIP` for a small one.
2. The candidates are rescored in float64 (`dot64`: float32 products are exact in float64, summed
   pairwise per row, so a score never depends on batch, shard or device) and ranked by
   (score desc, row asc).
3. The candidate set is certified: every non-candidate has float32 score <= the last candidate's,
   and the float32 error of a unit-vector inner product is at most `tolerance` (d * 2**-22 on the
   CPU, 2**-9 on a GPU, where cuBLAS may use TF32). If the last candidate's float32 score plus the
   tolerance reaches the k-th exact score, a non-candidate could still belong (a near tie at the
   boundary): that query is searched again exhaustively in float64.
So the CPU and GPU searches return identical ids and scores, and both equal a float64 brute force
ranked by (score desc, id asc) (tests/retrieval/test_search.py).

Sparse stores (TF-IDF) are searched by a sparse matrix product in float64 under the same ranking
rules; documents sharing no term with a query score exactly 0 and fill the ranking by id.

Zero vectors have no direction: a document with a zero vector is never retrieved, a query with one
retrieves nothing (it counts as a miss); both are counted in the summary.

The job of rules/retrieval.smk, one per (set, model): `run_retrieval_search` (retrieval_search).
The settings (eval_split, top_k, random_per_query) decide the results; shard rows, query batch and
extra candidates only say how the search runs (the rule passes them as resources: no rerun).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import polars as pl
import scipy.sparse as sp

from workflow_scripts.bootstrap import bootstrap_rng
from workflow_scripts.common import atomic_path, setup_logging, write_json
from workflow_scripts.texts import text_keys
from workflow_scripts.model_settings import scope_role
from workflow_scripts.retrieval.dense import (  # noqa: F401 - the search's names, as before
    GPU_TOLERANCE, RESCORE_QUERIES, FlatIndexFactory, SearchStats, Shard, TorchFlatSearch, cpu_tolerance, dot64,
    exhaustive_dense, faiss_gpu_available, merge_ranked, rank_order, search_dense, search_engine, unit_rows)
from workflow_scripts.vector_store import StoreMismatch, VectorStore, spec_digest

TOPK_SCHEMA = {"query_id": pl.String, "rank": pl.Int32, "corpus_id": pl.String, "score": pl.Float64}
SIMILARITY_SCHEMA = {"query_id": pl.String, "corpus_id": pl.String, "kind": pl.String, "similarity": pl.Float64}
DEFAULT_SEARCH = {"shard_rows": 200_000, "query_batch": 1024, "extra_candidates": 32}


# ---- exact scores and ranking: dense.py; sparse stores' unit rows ----

def unit_sparse(matrix, norms: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """Sparse rows divided by their norms, in float64."""
    norms = np.asarray(norms, dtype=np.float64)
    nonzero = norms > 0
    scale = np.where(nonzero, 1.0 / np.where(nonzero, norms, 1.0), 0.0)
    return sp.csr_matrix(sp.diags(scale) @ sp.csr_matrix(matrix, dtype=np.float64)), nonzero


# ---- sparse search ----------------------------------------------------------------------------

def search_sparse(queries: sp.csr_matrix, shards: Callable[[], Iterator[Shard]], k: int, query_batch: int = 1024,
                  stats: SearchStats | None = None, log=None, max_products: int = 20_000_000) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of unit sparse queries (float64 CSR) over sparse shards: scores by sparse
    matrix product; the rows a query shares no term with score 0 and are ranked by row among
    themselves (implicit zeros are candidates too, so a query with few matches still gets k rows).
    Queries go in batches small enough that a batch's product holds at most `max_products` scores."""
    stats = stats if stats is not None else SearchStats()
    started = time.perf_counter()
    n = queries.shape[0]
    best_rows = np.full((n, k), -1, np.int64)
    best_scores = np.full((n, k), -np.inf, np.float64)
    for shard in shards():
        stats.shards += 1
        valid = shard.valid
        valid_rows = np.flatnonzero(valid)
        docs_t = sp.csr_matrix(shard.vectors.T)  # terms x rows
        batch = max(1, min(query_batch, max_products // max(1, len(valid))))
        for a in range(0, n, batch):
            b = min(n, a + batch)
            prod = sp.csr_matrix(queries[a:b] @ docs_t)
            for i in range(b - a):
                lo, hi = prod.indptr[i], prod.indptr[i + 1]
                cols, vals = prod.indices[lo:hi], prod.data[lo:hi]
                keep = valid[cols]
                cols, vals = cols[keep], vals[keep]
                if len(vals) > k:  # the k best and every row tied with the k-th
                    kth = np.partition(vals, len(vals) - k)[len(vals) - k]
                    top = vals >= kth
                    cols, vals = cols[top], vals[top]
                # the first k valid rows without an explicit score: exact zeros
                first = valid_rows[:k + len(cols)]
                zeros = first[~np.isin(first, cols)][:k]
                rows = np.concatenate([cols, zeros]).astype(np.int64) + shard.start
                scores = np.concatenate([vals, np.zeros(len(zeros))])
                r, s = merge_ranked(best_rows[a + i:a + i + 1], best_scores[a + i:a + i + 1], rows[None, :], scores[None, :], k)
                best_rows[a + i], best_scores[a + i] = r[0], s[0]
        if log is not None:
            log.info("searched sparse shard %d (rows %d..%d) for %d queries", stats.shards, shard.start,
                     shard.start + len(valid) - 1, n)
    best_rows[~np.isfinite(best_scores)] = -1
    stats.queries += n
    stats.seconds += time.perf_counter() - started
    return best_rows, best_scores


# ---- a retrieval set's corpus and queries in a vector store --------------------------------------

def document_text(corpus: pl.DataFrame) -> list[str]:
    """The text embedded for each document: its `text` (a title is kept in the set, not embedded)."""
    return corpus["text"].to_list()


@dataclass
class EvalSet:
    """The corpus in id order, the evaluated queries, and their relevant documents (rows)."""
    corpus_ids: list
    corpus_keys: np.ndarray
    corpus_texts: list
    query_ids: list
    query_keys: np.ndarray
    relevant: list  # per query: sorted corpus rows with qrels score > 0
    counts: dict


def load_eval_set(set_dir: str, split, log=None) -> EvalSet:
    """Read a BEIR-layout set (beir.read_set) and keep the queries of `split` (a split name or a
    list of them) that have at least one relevant document in the corpus; the others are counted
    per reason, never fatal (so are the set's own bad lines: beir.read_set's stats)."""
    from workflow_scripts import beir
    read_stats: dict = {}
    corpus, queries, qrels = beir.read_set(set_dir, read_stats)
    splits = [split] if isinstance(split, str) else list(split)
    missing = [s for s in splits if s not in qrels]
    if missing:
        raise ValueError(f"{set_dir}: no qrels for split(s) {missing} (splits: {sorted(qrels)}); "
                         "set `retrieval.eval_split` (or the set's `eval_split`) to one of them")
    corpus = corpus.with_columns(pl.col("_id").cast(pl.String)).sort("_id")
    dup = corpus.filter(pl.col("_id").is_duplicated())
    if dup.height:
        raise ValueError(f"{set_dir}: corpus ids are not unique, e.g. {dup['_id'][0]!r}")
    ids = corpus["_id"].to_list()
    row_of = {cid: r for r, cid in enumerate(ids)}
    q = pl.concat([qrels[s] for s in splits]).with_columns(pl.col("query-id").cast(pl.String),
                                                          pl.col("corpus-id").cast(pl.String))
    q = q.filter(pl.col("score") > 0).unique(["query-id", "corpus-id"], keep="first", maintain_order=True)
    queries = queries.with_columns(pl.col("_id").cast(pl.String))
    text_of = dict(zip(queries["_id"].to_list(), queries["text"].to_list()))
    counts = {"corpus": len(ids), "qrels_positive": q.height, "queries_in_split": q["query-id"].n_unique(),
              "skipped_query_not_in_queries": 0, "skipped_no_relevant_in_corpus": 0, "relevant_not_in_corpus": 0}
    relevant: dict[str, set] = {}
    for qid, cid in zip(q["query-id"].to_list(), q["corpus-id"].to_list()):
        row = row_of.get(cid)
        if row is None:
            counts["relevant_not_in_corpus"] += 1
            relevant.setdefault(qid, set())
            continue
        relevant.setdefault(qid, set()).add(row)
    kept_ids, kept_rel = [], []
    for qid in sorted(relevant):
        if qid not in text_of:
            counts["skipped_query_not_in_queries"] += 1
        elif not relevant[qid]:
            counts["skipped_no_relevant_in_corpus"] += 1
        else:
            kept_ids.append(qid)
            kept_rel.append(np.array(sorted(relevant[qid]), np.int64))
    counts["queries"] = len(kept_ids)
    counts["set_lines_skipped"] = {reason: v["count"] for reason, v in sorted(read_stats.items())}
    texts = document_text(corpus)
    if log is not None:
        log.info("%s: %d documents, %d queries of split %s evaluated (%s)", set_dir, len(ids), len(kept_ids),
                 "+".join(splits), ", ".join(f"{k} {v}" for k, v in counts.items()
                                            if k.startswith(("skipped", "relevant", "set_lines")) and v))
    return EvalSet(ids, text_keys(texts), texts, kept_ids, text_keys([text_of[i] for i in kept_ids]), kept_rel, counts)


class StoreCorpus:
    """The corpus rows of a vector store, in id order, as unit vectors shard by shard."""

    def __init__(self, store: VectorStore, keys: np.ndarray, shard_rows: int, transform=None):
        self.store, self.keys, self.shard_rows, self.transform = store, keys, shard_rows, transform
        self.sparse = store.sparse
        self.on_shard = None  # called with each shard's unit vectors on the first pass (isotropy moments)
        self.zero_rows = 0  # rows with a zero vector, counted on the last full pass
        self.passes = 0

    def _unit(self, vectors, norms):
        if self.sparse:
            return unit_sparse(vectors, norms)
        unit, nonzero = unit_rows(vectors, norms)
        if self.transform is not None:
            unit, nonzero = self.transform(unit, nonzero)
        return unit, nonzero

    def shards(self) -> Iterator[Shard]:
        zero = 0
        self.passes += 1
        first = self.passes == 1
        for start in range(0, len(self.keys), self.shard_rows):
            vectors, norms = self.store.lookup(self.keys[start:start + self.shard_rows])
            unit, nonzero = self._unit(vectors, norms)
            zero += int((~nonzero).sum())
            if first and self.on_shard is not None:
                self.on_shard(unit, nonzero)
            yield Shard(start, unit, nonzero)
            self.store.release_pages()
        self.zero_rows = zero

    def fetch(self, rows: np.ndarray) -> np.ndarray:
        vectors, norms = self.store.lookup(self.keys[rows])
        return self._unit(vectors, norms)[0]


def query_vectors(store: VectorStore, keys: np.ndarray, transform=None):
    vectors, norms = store.lookup(keys)
    if store.sparse:
        return unit_sparse(vectors, norms)
    unit, nonzero = unit_rows(vectors, norms)
    return transform(unit, nonzero) if transform is not None else (unit, nonzero)


def run_search(store: VectorStore, ev: EvalSet, k: int, settings: dict, device: str = "cpu", threads: int | None = None,
               log=None, transform=None, on_shard=None, stats: SearchStats | None = None,
               query_store: VectorStore | None = None):
    """(rows, scores, query vectors, query nonzero mask, corpus) of every evaluated query (rows and
    scores n x k); a query with a zero vector gets no rows. `query_store`: where the queries'
    vectors are when the model embeds queries apart from documents (a query prompt); else `store`."""
    opts = {**DEFAULT_SEARCH, **settings}
    stats = stats if stats is not None else SearchStats()
    corpus = StoreCorpus(store, ev.corpus_keys, opts["shard_rows"], transform)
    corpus.on_shard = on_shard
    k = min(k, len(ev.corpus_ids))
    qvec, qnonzero = query_vectors(query_store or store, ev.query_keys, transform)
    sel = np.flatnonzero(qnonzero)
    rows = np.full((len(ev.query_ids), k), -1, np.int64)
    scores = np.full((len(ev.query_ids), k), -np.inf, np.float64)
    if store.sparse:
        r, s = search_sparse(qvec[sel], corpus.shards, k, opts["query_batch"], stats, log)
    else:
        factory = search_engine(device, threads, log, len(sel), len(ev.corpus_ids))
        r, s = search_dense(qvec[sel], corpus.shards, corpus.fetch, k, opts["extra_candidates"], opts["query_batch"],
                            factory, log, stats)
    rows[sel], scores[sel] = r, s
    stats.notes.append(f"{len(ev.query_ids) - len(sel)} queries with a zero vector retrieve nothing")
    return rows, scores, qvec, qnonzero, corpus


def topk_frame(ev: EvalSet, rows: np.ndarray, scores: np.ndarray) -> pl.DataFrame:
    n, k = rows.shape
    have = rows >= 0
    qi, rank = np.nonzero(have)
    ids = np.asarray(ev.corpus_ids, dtype=object)
    return pl.DataFrame({"query_id": pl.Series([ev.query_ids[i] for i in qi], dtype=pl.String),
                         "rank": pl.Series(rank + 1, dtype=pl.Int32),
                         "corpus_id": pl.Series(ids[rows[have]].tolist(), dtype=pl.String),
                         "score": pl.Series(scores[have], dtype=pl.Float64)}, schema=TOPK_SCHEMA)


def random_documents(ev: EvalSet, per_query: int, seed: int, dataset: str) -> np.ndarray:
    """n x per_query corpus rows, uniformly drawn, none with the text of one of the query's
    relevant documents (methods.md: "a random sentence other than its answer, by text"). Seeded by
    the config seed and the set only: every model is measured on the same random sentences."""
    rng = bootstrap_rng(seed, "retrieval", dataset, "random_sentences")
    n_docs = len(ev.corpus_ids)
    out = rng.integers(0, n_docs, size=(len(ev.query_ids), per_query))
    for i, rel in enumerate(ev.relevant):
        banned = {ev.corpus_texts[r] for r in rel}
        for j in range(per_query):
            tries = 0
            while ev.corpus_texts[out[i, j]] in banned:
                tries += 1
                if tries > 10_000:
                    raise ValueError(f"query {ev.query_ids[i]!r}: no document without the text of a relevant one")
                out[i, j] = rng.integers(0, n_docs)
    return out


def pair_similarities(store: VectorStore, ev: EvalSet, qvec, qnonzero, corpus: StoreCorpus,
                      random_rows: np.ndarray) -> pl.DataFrame:
    """C (each query with each relevant document) and R (with its random documents), by the same
    exact scores as the search; NaN where either vector is zero."""
    kinds, pairs_q, pairs_r = [], [], []
    for i, rel in enumerate(ev.relevant):
        pairs_q += [i] * len(rel)
        pairs_r += rel.tolist()
        kinds += ["correct"] * len(rel)
    for i in range(len(ev.query_ids)):
        pairs_q += [i] * random_rows.shape[1]
        pairs_r += random_rows[i].tolist()
        kinds += ["random"] * random_rows.shape[1]
    pq, pr = np.asarray(pairs_q, np.int64), np.asarray(pairs_r, np.int64)
    sims = np.full(len(pq), np.nan)
    for a in range(0, len(pq), 50_000):
        b = min(len(pq), a + 50_000)
        order = np.argsort(pr[a:b], kind="stable")
        docs_rows = pr[a:b][order]
        if store.sparse:
            vecs, norms = store.lookup(ev.corpus_keys[docs_rows])
            dvec, dnz = unit_sparse(vecs, norms)
            qv = qvec[pq[a:b][order]]
            s = np.asarray(qv.multiply(dvec).sum(axis=1), dtype=np.float64).ravel()
        else:
            vecs, norms = store.lookup(ev.corpus_keys[docs_rows])
            dvec, dnz = unit_rows(vecs, norms)
            if corpus.transform is not None:
                dvec, dnz = corpus.transform(dvec, dnz)
            s = dot64(qvec[pq[a:b][order]], dvec)
        s = np.where(dnz & qnonzero[pq[a:b][order]], s, np.nan)
        sims[a + order] = s
    ids = np.asarray(ev.corpus_ids, dtype=object)
    return pl.DataFrame({"query_id": pl.Series([ev.query_ids[i] for i in pq], dtype=pl.String),
                         "corpus_id": pl.Series(ids[pr].tolist(), dtype=pl.String),
                         "kind": pl.Series(kinds, dtype=pl.String),
                         "similarity": pl.Series(sims, dtype=pl.Float64)}, schema=SIMILARITY_SCHEMA)


def open_store(stores: list[str], model: str, spec: dict, role: str = "document") -> VectorStore:
    """The model's store of the set's texts (role document) or of its questions (role query): it
    must have been embedded with the spec's settings for that role (its template or prompt)."""
    return VectorStore(stores, model=model, spec_digest=spec_digest(spec, role))


def open_stores(stores: list[str], model: str, spec: dict) -> tuple[VectorStore, VectorStore | None]:
    """(the set's store, the questions' own store or None). The partitions given are told apart by
    their manifests' scope: `retrieval.<set>.query` holds the questions of a model that embeds them
    apart from documents (a query template or prompt); without one, the questions' vectors are in
    the set's store, which must then have been embedded as they would be."""
    query = [d for d in stores if scope_role(read_manifest(d)["scope"]) == "query"]
    documents = [d for d in stores if d not in query]
    if not query and spec_digest(spec, "query") != spec_digest(spec, "document"):
        raise StoreMismatch(f"model {model!r} embeds queries apart from documents (a query template or prompt), "
                            "but no store of its queries (scope retrieval.<set>.query) was given")
    return open_store(documents, model, spec), (open_store(query, model, spec, "query") if query else None)


def read_manifest(directory: str) -> dict:
    return json.loads((Path(directory) / "manifest.json").read_text())


def search_job(set_dir: str, stores: list[str], model: str, spec: dict, dataset: str, settings: dict, seed: int,
               device: str, threads: int, topk_out: str, sims_out: str, summary_out: str, log) -> dict:
    store, query_store = open_stores(stores, model, spec)
    ev = load_eval_set(set_dir, settings["eval_split"], log)
    if not ev.query_ids:
        raise ValueError(f"{set_dir}: no query of split {settings['eval_split']!r} has a relevant document in the corpus")
    stats = SearchStats()
    started = time.perf_counter()
    rows, scores, qvec, qnonzero, corpus = run_search(store, ev, settings["top_k"], settings.get("search", {}),
                                                      device, threads, log, stats=stats, query_store=query_store)
    elapsed = time.perf_counter() - started
    topk = topk_frame(ev, rows, scores)
    random_rows = random_documents(ev, settings["random_per_query"], seed, dataset)
    sims = pair_similarities(store, ev, qvec, qnonzero, corpus, random_rows)
    with atomic_path(topk_out) as tmp:
        topk.write_parquet(tmp)
    with atomic_path(sims_out) as tmp:
        sims.write_parquet(tmp)
    zero_docs = corpus.zero_rows
    summary = {"dataset": dataset, "model": model, "split": settings["eval_split"], "top_k": int(rows.shape[1]),
               **ev.counts, "zero_vector_queries": int((~qnonzero).sum()), "zero_vector_documents": zero_docs,
               "store": {k: store.manifest.get(k) for k in ("family", "origin", "dim", "format", "device", "precision")},
               **({"text_forms": {"query": query_store.manifest.get("text_form"),
                                  "document": store.manifest.get("text_form")}} if query_store else {}),
               "search": {"engine": "scipy sparse product (float64)" if store.sparse else f"{stats.engine} + float64 rescoring",
                          "device": stats.device, "tolerance": stats.tolerance, "shards": stats.shards,
                          "exhaustive_queries": stats.exhaustive,
                          **{k: v for k, v in {**DEFAULT_SEARCH, **settings.get("search", {})}.items()}},
               "random_per_query": settings["random_per_query"]}
    write_json(summary_out, summary)
    # timings go to the log only: same config and inputs, byte-identical results
    log.info("%s / %s: %d queries x %d documents, top %d in %.1f s (%.0f queries/s, %s, %d exhaustive)", dataset, model,
             len(ev.query_ids), len(ev.corpus_ids), rows.shape[1], elapsed, len(ev.query_ids) / max(elapsed, 1e-9),
             stats.device, stats.exhaustive)
    return summary


def search_options(resources) -> dict:
    """The search's own settings (how it runs, not what it finds): the job's resources of these
    names (rules/retrieval.smk), else the defaults."""
    return {key: int(resources.get(key, default)) for key, default in DEFAULT_SEARCH.items()}


# ---- the jobs of rules/retrieval.smk (workflow_scripts/jobs.py) ----
def run_retrieval_search(job) -> None:
    settings = {**job.params.settings, "search": search_options(job.resources)}
    search_job(job.input.set, list(job.input.stores), job.wildcards.model, job.params.spec, job.wildcards.dataset,
               settings, job.params.seed, job.params.device, job.threads, job.output.topk, job.output.similarities,
               job.output.summary, setup_logging(name="retrieval"))
