"""Exact retrieval throughput: queries/s of the workflow's search (float32 candidates from FAISS's
IndexFlatIP or from torch's blocked matrix products, then float64 rescoring and certification,
corpus in shards), of FAISS alone, and of a plain numpy search (matrix product + argsort, as the
reference code does), against the machine's float32 matmul limit (numpy's and torch's GEMM on the
search's shape) measured in the same run. Random unit vectors (384-d, like all-MiniLM-L6-v2), top 100.

    .venv/bin/python tests/benchmarks/bench_faiss.py                     # 1e5 and 1e6 sentences
    .venv/bin/python tests/benchmarks/bench_faiss.py --sizes 100000 --queries 500

Each figure is the best of `--repeats` runs, the searches and the GEMM measured in turn; the machine
is noisy, compare the ratios."""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from workflow_scripts.retrieval.search import (FlatIndexFactory, SearchStats, Shard, TorchFlatSearch,  # noqa: E402
                                               search_dense)


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def unit(rng, n, d):
    x = rng.standard_normal((n, d), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


class Gemm:
    """float32 GEMM of the search's own shape (queries x dims x 50,000 documents, into a buffer made
    once) by numpy's BLAS and by torch: the machine's matmul limit is the faster of the two, best of
    every measurement, taken between the searches so that both see the same machine."""

    def __init__(self, d: int, threads: int, queries: int):
        rng = np.random.default_rng(0)
        self.a, self.b = unit(rng, queries, d), unit(rng, 50_000, d)
        self.out = np.empty((queries, 50_000), np.float32)
        self.flop = 2 * queries * d * 50_000
        self.rates: dict[str, float] = {}
        try:
            import torch
            torch.set_num_threads(threads)
            self.torch = (torch, torch.from_numpy(self.a), torch.from_numpy(self.b), torch.from_numpy(self.out))
        except ImportError:
            self.torch = None

    def measure(self) -> float:
        """Both GEMMs now (best of two each); returns the faster rate, GFLOP/s."""
        runs = {"numpy": lambda: np.matmul(self.a, self.b.T, out=self.out)}
        if self.torch:
            torch, ta, tb, tout = self.torch
            runs["torch"] = lambda: torch.mm(ta, tb.T, out=tout)
        now = 0.0
        for name, fn in runs.items():
            rate = self.flop / best(fn, 2)[0] / 1e9
            self.rates[name] = max(self.rates.get(name, 0.0), rate)
            now = max(now, rate)
        return now

    @property
    def limit(self) -> float:
        return max(self.rates.values())


def numpy_argsort_search(queries, docs, k, batch=50):
    """The plain way: all scores, a full argsort per query (score desc), then the first k."""
    out = np.empty((len(queries), k), np.int64)
    for a in range(0, len(queries), batch):
        scores = queries[a:a + batch] @ docs.T
        out[a:a + batch] = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--numpy-queries", type=int, default=200, help="queries for the slow numpy baseline")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--shard-rows", type=int, default=200_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    import faiss
    faiss.omp_set_num_threads(args.threads)
    gemm = Gemm(args.dim, args.threads, args.queries)
    rng = np.random.default_rng(1)
    lines = []
    for n in args.sizes:
        docs = unit(rng, n, args.dim)
        queries = unit(rng, args.queries, args.dim)
        flop_per_query = 2.0 * n * args.dim
        valid = np.ones(n, bool)

        def shards():
            for start in range(0, n, args.shard_rows):
                yield Shard(start, docs[start:start + args.shard_rows], valid[start:start + args.shard_rows])

        stats = {}

        def faiss_only():
            index = faiss.IndexFlatIP(args.dim)
            index.add(docs)
            return index.search(queries, args.k)

        def workflow(name, engine):
            stats[name] = SearchStats()
            return search_dense(queries, shards, lambda r: docs[r], args.k, factory=engine, stats=stats[name])

        runs = {"faiss IndexFlatIP (float32 only)": faiss_only,
                "workflow, faiss candidates (exact)": lambda: workflow("faiss", FlatIndexFactory("cpu", args.threads)),
                "workflow, torch candidates (exact)": lambda: workflow("torch", TorchFlatSearch("cpu", args.threads))}
        seconds, results, ratios = {}, {}, {}
        for _ in range(args.repeats):  # interleaved with the GEMM: the same machine for each
            for name, fn in runs.items():
                before = gemm.measure()
                secs, results[name] = best(fn, 1)
                seconds[name] = min(seconds.get(name, np.inf), secs)
                # this run's rate over the faster GEMM just before and just after it
                adjacent = max(before, gemm.measure())
                ratios.setdefault(name, []).append(args.queries / secs * flop_per_query / 1e9 / adjacent)
        m = min(args.numpy_queries, args.queries)
        seconds["numpy matmul + argsort"], np_ids = best(lambda: numpy_argsort_search(queries[:m], docs, args.k), 1)
        for name, secs in seconds.items():
            rate = (m if name.startswith("numpy") else args.queries) / secs
            engine = name.split(", ")[1].split(" ")[0] if name.startswith("workflow") else None
            lines.append((n, name, rate, rate * flop_per_query / 1e9, stats[engine].exhaustive if engine else "",
                          ratios.get(name)))
        faiss_ids = results["faiss IndexFlatIP (float32 only)"][1]
        torch_out, faiss_out = results["workflow, torch candidates (exact)"], results["workflow, faiss candidates (exact)"]
        same = all(np.array_equal(a, b) for a, b in zip(torch_out, faiss_out))
        lines.append((n, f"torch and FAISS candidates give identical ids and scores: {same}; rankings equal to "
                      f"numpy's (first {m} queries): {np.mean(torch_out[0][:m] == np_ids):.4%}; top-1 equal to "
                      f"IndexFlatIP's: {np.mean(torch_out[0][:, 0] == faiss_ids[:, 0]):.2%}", None, None, None, None))
        del docs
    print(f"faiss {faiss.__version__}, numpy {np.__version__}, {args.threads} threads; float32 matmul "
          f"({args.queries} x {args.dim} x 50000, best of {4 * len(runs) * args.repeats}): "
          + ", ".join(f"{k} {v:.0f}" for k, v in gemm.rates.items()) + f" GFLOP/s; limit {gemm.limit:.0f}")
    print(f"{'sentences':>10} {'engine':<36} {'queries/s':>10} {'GFLOP/s':>8} {'of limit':>8} {'exhaustive':>10}"
          f"  of the GEMM beside each run: median (each run)")
    for n, name, rate, gflops, exhaustive, adjacent in lines:
        if rate is None:
            print(f"{'':>10} {name}")
        else:
            each = f"  {np.median(adjacent):.0%} ({', '.join(f'{r:.0%}' for r in adjacent)})" if adjacent else ""
            print(f"{n:>10} {name:<36} {rate:>10.0f} {gflops:>8.0f} {gflops / gemm.limit:>8.0%} {exhaustive:>10}{each}")
    print("of limit: the best rate over the best GEMM of the whole run; of the GEMM beside each run: a run's rate over "
          "the faster of the GEMMs measured just before and just after it (the machine's load moves between runs)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main(sys.argv[1:])
