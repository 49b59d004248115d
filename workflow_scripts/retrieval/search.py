"""Exact retrieval: every query against the whole (deduplicated) sentence set (methods.md §4).

Ranking: by inner product of unit vectors (cosine), ties broken by (score desc, id asc); the corpus
is ordered by `_id`, so a row's position is its rank among ids. The reference code instead searches
the list of answers aligned to its questions and scores by row index, so a copy of the right
sentence counts as a miss; here each question is judged against its own qrels.

How the search is exact, whatever the device and the summation order of its BLAS:
1. FAISS `IndexFlatIP` (float32; on the GPU when the model's device is cuda and faiss has GPU
   support) finds candidates: the top k + `extra` of each query, corpus shard by corpus shard, so
   memory follows the shard and the query batch, not the corpus. Shards are merged by float32 score.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import polars as pl
import scipy.sparse as sp

from workflow_scripts.bootstrap import bootstrap_rng
from workflow_scripts.common import atomic_path, setup_logging, write_json
from workflow_scripts.texts import text_keys
from workflow_scripts.model_settings import scope_role
from workflow_scripts.vector_store import StoreMismatch, VectorStore, spec_digest

TOPK_SCHEMA = {"query_id": pl.String, "rank": pl.Int32, "corpus_id": pl.String, "score": pl.Float64}
SIMILARITY_SCHEMA = {"query_id": pl.String, "corpus_id": pl.String, "kind": pl.String, "similarity": pl.Float64}
DEFAULT_SEARCH = {"shard_rows": 200_000, "query_batch": 1024, "extra_candidates": 32}
RESCORE_QUERIES = 32  # queries whose candidates are rescored together
GPU_TOLERANCE = 2.0 ** -9  # TF32 keeps 10 mantissa bits: |error| <= 2**-10 for unit vectors, with margin


# ---- exact scores and ranking ------------------------------------------------------------------

def dot64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise inner products in float64: the float32 products are exact in float64 and each row
    is summed pairwise on its own, so a pair's score is the same bits in any batch or shard."""
    return np.multiply(a, b, dtype=np.float64).sum(axis=-1)


def rank_order(scores: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per query (last axis), the order by (score desc, row asc); -inf scores (padding) go last."""
    return np.lexsort((rows, -scores), axis=-1)


def cpu_tolerance(dim: int) -> float:
    """Bound on |float32 inner product - exact| for unit vectors of `dim` dimensions: the classic
    dim * u * sum|x_i y_i| with u = 2**-24 and sum|x_i y_i| <= 1, doubled twice for margin."""
    return dim * 2.0 ** -22


def unit_rows(vectors: np.ndarray, norms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unit float32 rows, nonzero mask): each row divided by its stored norm; zero rows stay 0."""
    norms = np.asarray(norms, dtype=np.float32)
    nonzero = norms > 0
    out = np.zeros_like(vectors, dtype=np.float32)
    out[nonzero] = vectors[nonzero] / norms[nonzero, None]
    return out, nonzero


def unit_sparse(matrix, norms: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """Sparse rows divided by their norms, in float64."""
    norms = np.asarray(norms, dtype=np.float64)
    nonzero = norms > 0
    scale = np.where(nonzero, 1.0 / np.where(nonzero, norms, 1.0), 0.0)
    return sp.csr_matrix(sp.diags(scale) @ sp.csr_matrix(matrix, dtype=np.float64)), nonzero


@dataclass
class Shard:
    """Corpus rows [start, start + len) (positions in id order) and their unit vectors; `valid`
    marks rows with a nonzero vector (only those can be retrieved)."""
    start: int
    vectors: object  # float32 ndarray (dense) or float64 CSR (sparse)
    valid: np.ndarray


@dataclass
class SearchStats:
    queries: int = 0
    shards: int = 0
    exhaustive: int = 0  # queries searched again in float64 (uncertified boundary)
    device: str = "cpu"
    engine: str = ""
    tolerance: float = 0.0
    seconds: float = 0.0
    notes: list = field(default_factory=list)


# ---- the FAISS index -------------------------------------------------------------------------

def faiss_gpu_available() -> bool:
    import faiss
    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


class FlatIndexFactory:
    """IndexFlatIP on the CPU, or on GPU 0 (`device` cuda with faiss-gpu installed). Asked for cuda
    without faiss GPU support, it searches on the CPU and says so: the results are identical."""

    def __init__(self, device: str = "cpu", threads: int | None = None, log=None):
        import faiss
        self.faiss = faiss
        self.threads = threads
        if threads:
            faiss.omp_set_num_threads(threads)
        self.device = "cpu"
        if device == "cuda":
            if faiss_gpu_available():
                self.resources = faiss.StandardGpuResources()
                self.device = "cuda"
            elif log is not None:
                log.warning("device cuda asked for, but faiss %s has no GPU support here (install faiss-gpu: "
                            "`make setup-gpu`); searching on the CPU, with identical results", faiss.__version__)

    def build(self, vectors: np.ndarray):
        index = self.faiss.IndexFlatIP(vectors.shape[1])
        if self.device == "cuda":
            index = self.faiss.index_cpu_to_gpu(self.resources, 0, index)
        index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        return index

    def tolerance(self, dim: int) -> float:
        return max(cpu_tolerance(dim), GPU_TOLERANCE) if self.device == "cuda" else cpu_tolerance(dim)

    @property
    def engine(self) -> str:
        return "faiss IndexFlatIP" + (" (GPU)" if self.device == "cuda" else "")

    def candidates(self, queries: np.ndarray, shards, kk: int, query_batch: int, stats: SearchStats, log=None):
        """(rows, float32 scores), n x kk: each query's top kk by float32 score (-1 / -inf past the
        valid rows), from an IndexFlatIP per shard, merged shard by shard."""
        n = len(queries)
        cand_rows = np.full((n, kk), -1, np.int64)
        cand_f32 = np.full((n, kk), -np.inf, np.float32)
        for shard in shards():
            valid = np.flatnonzero(shard.valid)
            stats.shards += 1
            if not len(valid) or not n:
                continue
            index = self.build(shard.vectors[valid])
            take = min(kk, len(valid))
            for a in range(0, n, query_batch):
                b = min(n, a + query_batch)
                scores, local = index.search(np.ascontiguousarray(queries[a:b]), take)
                rows = np.where(local >= 0, shard.start + valid[np.maximum(local, 0)], -1)
                scores = np.where(local >= 0, scores, -np.inf).astype(np.float32)
                merged_rows = np.concatenate([cand_rows[a:b], rows], axis=1)
                merged_scores = np.concatenate([cand_f32[a:b], scores], axis=1)
                # keep the top kk by float32 score (ties by row: any order is fine, they are rescored)
                order = rank_order(merged_scores.astype(np.float64), merged_rows)[:, :kk]
                cand_rows[a:b] = np.take_along_axis(merged_rows, order, 1)
                cand_f32[a:b] = np.take_along_axis(merged_scores, order, 1)
            del index
            _searched(log, stats, shard, len(valid), n)
        return cand_rows, cand_f32


def _searched(log, stats: SearchStats, shard: Shard, valid: int, n: int) -> None:
    if log is not None:
        log.info("searched shard %d (rows %d..%d, %d with a vector) for %d queries", stats.shards, shard.start,
                 shard.start + len(shard.valid) - 1, valid, n)


# ---- exact float32 candidates by matrix products in torch (no FAISS needed) --------------------

TORCH_BLOCK_ROWS = {"cpu": 4096, "cuda": 131_072}  # corpus rows per matrix product (CPU: scores stay in cache)
GROUP = 16  # CPU: scores are screened in groups of this many columns by their maximum
PENDING = 64  # CPU: scores above a query's kk-th kept aside before they are merged into its top kk


class TorchFlatSearch:
    """The candidates FAISS's IndexFlatIP would give, computed with torch's float32 matrix
    products on `device` (the model's: cpu or cuda): per query batch and block of corpus rows, one
    product, whose scores are merged into each query's running top kk. On a GPU the merge is a
    top-k of the block (`_TopK`). On the CPU, where a top-k over every score would cost half the
    product, the scores are screened first (`_ScreenedTopK`). Either way every row left out scores
    at most the last candidate's float32 score, which is what the certification needs."""

    def __init__(self, device: str = "cpu", threads: int | None = None, block_rows: int | None = None):
        import torch
        self.torch = torch
        self.device = device
        self.threads = threads
        if threads and device == "cpu":
            torch.set_num_threads(threads)
        self.block_rows = block_rows or TORCH_BLOCK_ROWS["cuda" if device.startswith("cuda") else "cpu"]

    @property
    def engine(self) -> str:
        return f"torch blocked matmul + top-k ({self.device})"

    def tolerance(self, dim: int) -> float:
        # cuBLAS may use TF32 where a caller allowed it: the GPU bound covers it
        return max(cpu_tolerance(dim), GPU_TOLERANCE) if self.device != "cpu" else cpu_tolerance(dim)

    def candidates(self, queries: np.ndarray, shards, kk: int, query_batch: int, stats: SearchStats, log=None):
        torch = self.torch
        n = len(queries)
        top = _ScreenedTopK(n, kk) if self.device == "cpu" else _TopK(torch, n, kk, self.device)
        q_all = torch.from_numpy(np.ascontiguousarray(queries, dtype=np.float32)).to(self.device)
        buffer = torch.empty(min(n, query_batch) * self.block_rows, dtype=torch.float32, device=self.device)
        with torch.inference_mode():
            for shard in shards():
                valid = np.flatnonzero(shard.valid)
                stats.shards += 1
                if not len(valid) or not n:
                    continue
                vectors = shard.vectors if len(valid) == len(shard.valid) else shard.vectors[valid]
                docs = torch.from_numpy(np.ascontiguousarray(vectors, dtype=np.float32)).to(self.device)
                rows = shard.start + valid
                for a in range(0, n, query_batch):
                    b = min(n, a + query_batch)
                    for lo in range(0, len(valid), self.block_rows):
                        hi = min(len(valid), lo + self.block_rows)
                        # into one buffer: a fresh tensor per block costs its page faults (CPU)
                        out = buffer[:(b - a) * (hi - lo)].view(b - a, hi - lo)
                        top.add(torch.mm(q_all[a:b], docs[lo:hi].T, out=out), rows[lo:hi], a)
                del docs
                _searched(log, stats, shard, len(valid), n)
            return top.result()


class _TopK:
    """Each query's top kk (scores, rows) on the device, merged block by block with a top-k."""

    def __init__(self, torch, n: int, kk: int, device: str):
        self.torch, self.kk, self.device = torch, kk, device
        self.best_s = torch.full((n, kk), -torch.inf, dtype=torch.float32, device=device)
        self.best_r = torch.full((n, kk), -1, dtype=torch.int64, device=device)
        self.rows = None

    def add(self, scores, rows: np.ndarray, a: int) -> None:
        torch = self.torch
        if self.rows is None or self.rows[0] is not rows:  # each shard's rows once to the device
            self.rows = (rows, torch.from_numpy(rows).to(self.device))
        top_s, top_i = scores.topk(min(self.kk, scores.shape[1]), dim=1)
        sl = slice(a, a + len(scores))
        keep_s, at = torch.cat([self.best_s[sl], top_s], dim=1).topk(self.kk, dim=1)
        self.best_r[sl] = torch.cat([self.best_r[sl], self.rows[1][top_i]], dim=1).gather(1, at)
        self.best_s[sl] = keep_s

    def result(self):
        return self.best_r.cpu().numpy(), self.best_s.cpu().numpy()


class _ScreenedTopK:
    """Each query's top kk, block by block, on the CPU in numpy (small operations: one thread, no
    parallel region to wait on). A block's scores are screened: the elementwise maximum of GROUP
    strided slices of its columns (one vectorised pass over scores still in cache) says which
    groups hold a score above the query's current kk-th (`floor`); only their scores are read,
    those above it set aside (PENDING per query) and merged into the top kk when the space runs
    out. Where a quarter of the groups or more pass (the first blocks), the block's own top kk
    is merged instead."""

    def __init__(self, n: int, kk: int):
        self.kk = kk
        self.best_s = np.full((n, kk), -np.inf, np.float32)
        self.best_r = np.full((n, kk), -1, np.int64)
        self.floor = np.full(n, -np.inf, np.float32)  # the kk-th score of each query's best
        self.pend_s = np.full((n, PENDING), -np.inf, np.float32)
        self.pend_r = np.full((n, PENDING), -1, np.int64)
        self.pend_n = np.zeros(n, np.int64)

    def _merge(self, sl: slice, new_s: np.ndarray, new_r: np.ndarray) -> None:
        merged_s = np.concatenate([self.best_s[sl], new_s], axis=1)
        merged_r = np.concatenate([self.best_r[sl], new_r], axis=1)
        at = np.argpartition(-merged_s, self.kk - 1, axis=1)[:, :self.kk]
        self.best_s[sl] = np.take_along_axis(merged_s, at, 1)
        self.best_r[sl] = np.take_along_axis(merged_r, at, 1)
        self.floor[sl] = self.best_s[sl].min(axis=1)

    def _flush(self, sl: slice) -> None:
        if self.pend_n[sl].max(initial=0) == 0:
            return
        self._merge(sl, self.pend_s[sl], self.pend_r[sl])
        self.pend_s[sl] = -np.inf
        self.pend_r[sl] = -1
        self.pend_n[sl] = 0

    def add(self, scores_t, rows: np.ndarray, a: int) -> None:
        s = scores_t.numpy()
        nb, m = s.shape
        sl = slice(a, a + nb)
        floor = self.floor[sl]
        if m % GROUP:  # a shard's last block: padded to whole groups with scores that never win
            s = np.pad(s, ((0, 0), (0, GROUP - m % GROUP)), constant_values=-np.inf)
            rows = np.pad(rows, (0, GROUP - m % GROUP), constant_values=-1)
        width = s.shape[1] // GROUP
        qi, gj = np.nonzero(s.reshape(nb, GROUP, width).max(axis=1) > floor[:, None])
        if len(qi) * 4 > nb * width:
            self._flush(sl)
            top = np.argpartition(-s, min(self.kk, s.shape[1]) - 1, axis=1)[:, :self.kk]
            self._merge(sl, np.take_along_axis(s, top, 1), rows[top])
            return
        if not len(qi):
            return
        # the scores of the groups hit (h x GROUP), and those above the floor; nonzero is
        # row-major, so they come sorted by query
        cols = gj[:, None] + np.arange(GROUP) * width
        vals = s[qi[:, None], cols]
        h, g = np.nonzero(vals > floor[qi][:, None])
        if not len(h):
            return
        qrow, cols, vals = qi[h], cols[h, g], vals[h, g]
        counts = np.bincount(qrow, minlength=nb)
        rank = np.arange(len(qrow)) - (np.cumsum(counts) - counts)[qrow]
        if (self.pend_n[sl] + counts).max() > PENDING:
            self._flush(sl)
            if counts.max() > PENDING:  # more than the space: merged at once
                new_s = np.full((nb, counts.max()), -np.inf, np.float32)
                new_r = np.full(new_s.shape, -1, np.int64)
                new_s[qrow, rank], new_r[qrow, rank] = vals, rows[cols]
                self._merge(sl, new_s, new_r)
                return
        at = self.pend_n[sl][qrow] + rank
        self.pend_s[sl][qrow, at] = vals
        self.pend_r[sl][qrow, at] = rows[cols]
        self.pend_n[sl] += counts

    def result(self):
        """(rows, scores), each query's sorted by score, best first (padding, -1 / -inf, last)."""
        self._flush(slice(0, len(self.best_s)))
        order = np.argsort(-self.best_s, axis=1, kind="stable")
        return np.take_along_axis(self.best_r, order, 1), np.take_along_axis(self.best_s, order, 1)


# the CPU search takes torch's matrix products from this many query x row products up (below it,
# FAISS, which needs no torch import: a second or two of a small job's start-up)
TORCH_MIN_PRODUCTS = 50_000_000


def search_engine(device: str, threads: int | None, log, queries: int, rows: int):
    """The candidate search for a job: on a GPU, FAISS's own GPU index where faiss-gpu is
    installed, else torch on the GPU; on the CPU, torch's blocked matrix products for a large
    search, FAISS's IndexFlatIP for a small one. Every engine gives the same final results."""
    if device == "cuda":
        if faiss_gpu_available():
            return FlatIndexFactory("cuda", threads, log)
        import torch
        if torch.cuda.is_available():
            return TorchFlatSearch("cuda", threads)
        if log is not None:
            log.warning("device cuda asked for, but torch %s sees no GPU here; searching on the CPU, with identical "
                        "results", torch.__version__)
    if queries * rows >= TORCH_MIN_PRODUCTS:
        return TorchFlatSearch("cpu", threads)
    return FlatIndexFactory("cpu", threads, log)


# ---- dense search ------------------------------------------------------------------------------

def _merge(rows_a, scores_a, rows_b, scores_b, k):
    rows = np.concatenate([rows_a, rows_b], axis=1)
    scores = np.concatenate([scores_a, scores_b], axis=1)
    order = rank_order(scores, rows)[:, :k]
    return np.take_along_axis(rows, order, 1), np.take_along_axis(scores, order, 1)


def search_dense(queries: np.ndarray, shards: Callable[[], Iterator[Shard]], fetch: Callable[[np.ndarray], np.ndarray],
                 k: int, extra: int = 32, query_batch: int = 1024, factory=None,
                 log=None, stats: SearchStats | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of unit `queries` (n x d float32) over the corpus.

    `shards()` yields the corpus shard by shard (it is called again if some query needs the exact
    pass); `fetch(rows)` returns the unit float32 vectors of corpus rows. Returns (rows, scores),
    each n x k: corpus rows ranked by (score desc, row asc), -1 / -inf past the valid rows."""
    factory = factory or FlatIndexFactory()
    stats = stats if stats is not None else SearchStats()
    n, dim = queries.shape
    started = time.perf_counter()
    cand_rows, cand_f32 = factory.candidates(queries, shards, k + extra, query_batch, stats, log)
    tol = factory.tolerance(dim)
    stats.device, stats.tolerance, stats.engine = factory.device, tol, factory.engine
    out_rows = np.full((n, k), -1, np.int64)
    out_scores = np.full((n, k), -np.inf, np.float64)
    unsure = np.zeros(n, bool)

    def rescore(a: int) -> None:
        """Queries a.. a + RESCORE_QUERIES: their candidates rescored exactly and ranked."""
        b = min(n, a + RESCORE_QUERIES)
        rows = cand_rows[a:b]
        have = rows >= 0
        if have.all():  # the usual case: no padding, the query broadcast (same products, same sums)
            exact = dot64(queries[a:b, None, :], fetch(rows.reshape(-1)).reshape(b - a, rows.shape[1], dim))
        else:
            exact = np.full(rows.shape, -np.inf, np.float64)
            if have.any():
                exact[have] = dot64(np.repeat(queries[a:b], have.sum(axis=1), axis=0), fetch(rows[have]))
        order = rank_order(exact, np.where(have, rows, np.iinfo(np.int64).max))[:, :k]
        out_rows[a:b] = np.where(np.take_along_axis(have, order, 1), np.take_along_axis(rows, order, 1), -1)
        out_scores[a:b] = np.take_along_axis(exact, order, 1)
        # certified when the list is not full (every valid row is a candidate) or the float32 bound
        # of every non-candidate stays below the k-th exact score
        full = have[:, -1]
        unsure[a:b] = full & ~(cand_f32[a:b, -1].astype(np.float64) + tol < out_scores[a:b, k - 1])

    # a few dozen queries at a time (their float64 products stay in cache), on the job's threads:
    # each query's scores and ranking are its own, whichever thread computes them
    threads = max(1, getattr(factory, "threads", None) or 1)
    if threads > 1 and n > RESCORE_QUERIES:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(rescore, range(0, n, RESCORE_QUERIES)))
    else:
        for a in range(0, n, RESCORE_QUERIES):
            rescore(a)
    uncertain = np.flatnonzero(unsure).tolist()
    if uncertain:
        stats.exhaustive += len(uncertain)
        if log is not None:
            log.info("%d of %d queries have near ties at the candidate boundary: searched exhaustively in float64",
                     len(uncertain), n)
        sel = np.asarray(uncertain)
        rows, scores = exhaustive_dense(queries[sel], shards, k)
        out_rows[sel], out_scores[sel] = rows, scores
    stats.queries += n
    stats.seconds += time.perf_counter() - started
    return out_rows, out_scores


def exhaustive_dense(queries: np.ndarray, shards: Callable[[], Iterator[Shard]], k: int,
                     chunk: int = 16384) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k by float64 scores over every valid row (for the few queries that need it): a
    float64 matrix product proposes every row within 1e-9 of the k-th score, and those are
    rescored with dot64, so ranking and scores are the ones the candidate path gives."""
    n = len(queries)
    q64 = queries.astype(np.float64)
    best_rows = np.full((n, k), -1, np.int64)
    best_scores = np.full((n, k), -np.inf, np.float64)
    for shard in shards():
        valid = np.flatnonzero(shard.valid)
        for a in range(0, len(valid), chunk):
            idx = valid[a:a + chunk]
            vecs = np.asarray(shard.vectors[idx], dtype=np.float32)
            approx = q64 @ vecs.astype(np.float64).T  # n x m
            for i in range(n):
                floor = best_scores[i, k - 1]
                if len(idx) > k:
                    floor = max(floor, np.partition(approx[i], -k)[-k])
                near = np.flatnonzero(approx[i] >= floor - 1e-9)
                exact = dot64(np.broadcast_to(queries[i], (len(near), queries.shape[1])).copy(), vecs[near])
                rows = shard.start + idx[near]
                merged_rows, merged_scores = _merge(best_rows[i:i + 1], best_scores[i:i + 1], rows[None, :],
                                                    exact[None, :], k)
                best_rows[i], best_scores[i] = merged_rows[0], merged_scores[0]
    best_rows[~np.isfinite(best_scores)] = -1
    return best_rows, best_scores


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
                r, s = _merge(best_rows[a + i:a + i + 1], best_scores[a + i:a + i + 1], rows[None, :], scores[None, :], k)
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
