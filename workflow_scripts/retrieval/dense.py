"""Exact dense search, the part of the retrieval search (search.py) that needs only numpy, torch
or FAISS: float32 candidates from an engine (FAISS's IndexFlatIP, on the CPU or FAISS's GPU; or
torch's blocked matrix products, TorchFlatSearch, on the CPU or a GPU), rescored in float64 and
certified (search.py's docstring says how), so every engine gives the same ids and scores. It
imports no polars, so the GPU benchmark runs it where only torch is installed.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

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
    """Whether FAISS is importable with its GPU build and sees a GPU (the lent machine has no faiss)."""
    try:
        import faiss
    except ImportError:
        return False
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

    def __init__(self, device: str = "cpu", threads: int | None = None, block_rows: int | None = None,
                 screen: bool | None = None):
        """`screen`: merge by screening (default on the CPU) or by a top-k per block (default on a
        GPU; on the CPU too in the tests, which have no GPU)."""
        import torch
        self.torch = torch
        self.device = device
        self.screen = device == "cpu" if screen is None else screen
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
        top = _ScreenedTopK(n, kk) if self.screen else _TopK(torch, n, kk, self.device)
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
                        top.add(torch.mm(q_all[a:b], docs[lo:hi].T, out=out), rows, lo, a)
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

    def add(self, scores, rows: np.ndarray, lo: int, a: int) -> None:
        """Scores of queries a.. against the shard's rows lo.. (`rows`: the shard's, numpy)."""
        torch = self.torch
        if self.rows is None or self.rows[0] is not rows:  # each shard's rows once to the device
            self.rows = (rows, torch.from_numpy(rows).to(self.device))
        top_s, top_i = scores.topk(min(self.kk, scores.shape[1]), dim=1)
        sl = slice(a, a + len(scores))
        keep_s, at = torch.cat([self.best_s[sl], top_s], dim=1).topk(self.kk, dim=1)
        self.best_r[sl] = torch.cat([self.best_r[sl], self.rows[1][lo + top_i]], dim=1).gather(1, at)
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

    def add(self, scores_t, rows: np.ndarray, lo: int, a: int) -> None:
        """Scores of queries a.. against the shard's rows lo.. (`rows`: the shard's)."""
        import torch
        nb, m = scores_t.shape
        rows = rows[lo:lo + m]
        sl = slice(a, a + nb)
        floor = self.floor[sl]
        if m % GROUP:  # a shard's last block: padded to whole groups with scores that never win
            scores_t = torch.nn.functional.pad(scores_t, (0, GROUP - m % GROUP), value=-torch.inf)
            rows = np.pad(rows, (0, GROUP - m % GROUP), constant_values=-1)
        s = scores_t.numpy()
        width = s.shape[1] // GROUP
        # the one pass over every score, in torch: on the job's threads (3x numpy's one thread)
        group_max = torch.amax(scores_t.view(nb, GROUP, width), dim=1).numpy()
        qi, gj = np.nonzero(group_max > floor[:, None])
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

def merge_ranked(rows_a, scores_a, rows_b, scores_b, k):
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
                merged_rows, merged_scores = merge_ranked(best_rows[i:i + 1], best_scores[i:i + 1], rows[None, :],
                                                    exact[None, :], k)
                best_rows[i], best_scores[i] = merged_rows[0], merged_scores[0]
    best_rows[~np.isfinite(best_scores)] = -1
    return best_rows, best_scores
