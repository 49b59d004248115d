"""Exact retrieval throughput: queries/s of the workflow's search (FAISS IndexFlatIP candidates +
float64 rescoring + certification, corpus in shards), of FAISS alone, and of a plain numpy search
(matrix product + argsort, as the reference code does), against the machine's float32 matmul limit
measured in the same run. Random unit vectors (384-d, like all-MiniLM-L6-v2), top 100.

    .venv/bin/python tests/benchmarks/bench_faiss.py                     # 1e5 and 1e6 sentences
    .venv/bin/python tests/benchmarks/bench_faiss.py --sizes 100000 --queries 500

Each figure is the best of `--repeats` runs; the machine is noisy, compare the ratios."""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from workflow_scripts.retrieval.search import FlatIndexFactory, SearchStats, Shard, search_dense  # noqa: E402


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


def matmul_gflops(d, repeats, threads):
    """float32 GEMM rates (numpy's BLAS, torch) on the search's own shape (queries x dims x documents);
    the machine's limit is the faster of the two."""
    rng = np.random.default_rng(0)
    a, b = unit(rng, 1000, d), unit(rng, 50_000, d)
    flop = 2 * 1000 * d * 50_000
    rates = {"numpy": flop / best(lambda: a @ b.T, repeats)[0] / 1e9}
    try:
        import torch
        torch.set_num_threads(threads)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        rates["torch"] = flop / best(lambda: ta @ tb.T, repeats)[0] / 1e9
    except ImportError:
        pass
    return rates


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
    rates = matmul_gflops(args.dim, args.repeats, args.threads)
    gflops = max(rates.values())
    print(f"faiss {faiss.__version__}, numpy {np.__version__}, {args.threads} threads; float32 matmul "
          f"(1000 x {args.dim} x 50000): " + ", ".join(f"{k} {v:.0f}" for k, v in rates.items())
          + f" GFLOP/s; limit {gflops:.0f}")
    print(f"{'sentences':>10} {'engine':<34} {'queries/s':>10} {'GFLOP/s':>8} {'of limit':>8} {'exhaustive':>10}")
    rng = np.random.default_rng(1)
    for n in args.sizes:
        docs = unit(rng, n, args.dim)
        queries = unit(rng, args.queries, args.dim)
        flop_per_query = 2.0 * n * args.dim
        valid = np.ones(n, bool)

        def shards():
            for start in range(0, n, args.shard_rows):
                yield Shard(start, docs[start:start + args.shard_rows], valid[start:start + args.shard_rows])

        rows = {}

        def faiss_only():
            index = faiss.IndexFlatIP(args.dim)
            index.add(docs)
            return index.search(queries, args.k)

        def workflow():
            stats = SearchStats()
            out = search_dense(queries, shards, lambda r: docs[r], args.k, factory=FlatIndexFactory("cpu"), stats=stats)
            rows["stats"] = stats
            return out

        secs, (_, faiss_ids) = best(faiss_only, args.repeats)
        rate = args.queries / secs
        print(f"{n:>10} {'faiss IndexFlatIP (float32 only)':<34} {rate:>10.0f} {rate * flop_per_query / 1e9:>8.0f} "
              f"{rate * flop_per_query / 1e9 / gflops:>8.0%} {'':>10}")
        secs, (ids, _) = best(workflow, args.repeats)
        rate = args.queries / secs
        print(f"{n:>10} {'workflow (exact, shards of %d)' % args.shard_rows:<34} {rate:>10.0f} "
              f"{rate * flop_per_query / 1e9:>8.0f} {rate * flop_per_query / 1e9 / gflops:>8.0%} "
              f"{rows['stats'].exhaustive:>10}")
        m = min(args.numpy_queries, args.queries)
        secs, np_ids = best(lambda: numpy_argsort_search(queries[:m], docs, args.k), 1)
        rate = m / secs
        print(f"{n:>10} {'numpy matmul + argsort':<34} {rate:>10.0f} {rate * flop_per_query / 1e9:>8.0f} "
              f"{rate * flop_per_query / 1e9 / gflops:>8.0%} {'':>10}")
        agree = float(np.mean(ids[:m] == np_ids))
        print(f"{'':>10} rankings equal to numpy's (ids per rank, first {m} queries): {agree:.4%}; "
              f"top-1 equal to FAISS's: {np.mean(ids[:, 0] == faiss_ids[:, 0]):.2%}")
        del docs
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main(sys.argv[1:])
