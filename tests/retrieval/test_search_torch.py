"""Exact search without FAISS: torch's blocked matrix products and top-k (TorchFlatSearch), on the
CPU here, give the candidates IndexFlatIP gives and the same final ids and scores as the FAISS path
and a float64 brute force, ties by (score desc, id asc)."""
import numpy as np
import pytest

from tests.retrieval.test_search import brute_force, check_same, in_memory, unit
from workflow_scripts.retrieval.search import (FlatIndexFactory, SearchStats, TorchFlatSearch, search_dense,
                                               search_engine)

# blocks of 64 rows screen in groups of 16; 50 and 999 leave a ragged last group; 1 << 20: one block
ENGINES = [pytest.param(lambda b=b: TorchFlatSearch("cpu", block_rows=b), id=f"torch-block-{b}") for b in (64, 50, 999, 1 << 20)]
# two threads: the candidates rescored 32 queries at a time in two threads
ENGINES.append(pytest.param(lambda: TorchFlatSearch("cpu", threads=2, block_rows=128), id="torch-2-threads"))
# the GPU's merge (a top-k per block), here on the CPU
ENGINES += [pytest.param(lambda b=b: TorchFlatSearch("cpu", block_rows=b, screen=False), id=f"torch-topk-{b}") for b in (50, 4096)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("shard_rows,extra", [(10_000, 32), (700, 4), (333, 0)])
def test_torch_search_equals_faiss_and_brute_force(engine, shard_rows, extra):
    rng = np.random.default_rng(0)
    docs, valid = unit(rng.standard_normal((3000, 48)))
    queries, _ = unit(rng.standard_normal((60, 48)))
    shards, fetch = in_memory(docs, valid, shard_rows)
    stats = SearchStats()
    got = search_dense(queries, shards, fetch, k=25, extra=extra, query_batch=17, factory=engine(), stats=stats)
    faiss = search_dense(queries, shards, fetch, k=25, extra=extra, query_batch=17, factory=FlatIndexFactory("cpu"))
    assert np.array_equal(got[0], faiss[0]) and np.array_equal(got[1], faiss[1])
    check_same(got, brute_force(queries, docs, valid, 25))
    assert stats.engine.startswith("torch") and stats.device == "cpu"


@pytest.mark.parametrize("engine", ENGINES)
def test_torch_candidates_are_indexflatips_up_to_ties(engine):
    import faiss
    rng = np.random.default_rng(7)
    docs, valid = unit(rng.standard_normal((5000, 32)))
    queries, _ = unit(rng.standard_normal((40, 32)))
    shards, _ = in_memory(docs, valid, 1200)
    rows, scores = engine().candidates(queries, shards, 30, 16, SearchStats())
    index = faiss.IndexFlatIP(32)
    index.add(docs)
    want_scores, want_rows = index.search(queries, 30)
    np.testing.assert_allclose(scores, want_scores, rtol=0, atol=1e-5)
    # the same rows where FAISS's scores are apart by more than float32 rounding
    apart = np.diff(want_scores, axis=1, prepend=np.inf, append=-np.inf)
    clear = (np.abs(apart[:, :-1]) > 1e-5) & (np.abs(apart[:, 1:]) > 1e-5)
    assert clear.mean() > 0.9 and np.array_equal(rows[clear], want_rows[clear])
    assert (np.diff(scores, axis=1) <= 0).all()  # sorted, best first: the last is the kk-th


@pytest.mark.parametrize("engine", ENGINES)
def test_torch_search_ties_zero_vectors_and_short_corpora(engine):
    rng = np.random.default_rng(1)
    base = rng.standard_normal((40, 16))
    docs = np.concatenate([base] * 5)[rng.permutation(200)]
    docs[[3, 77, 150]] = 0.0
    docs, valid = unit(docs)
    queries, _ = unit(np.concatenate([base[:10], rng.standard_normal((5, 16))]))
    for shard_rows, extra in ((64, 0), (64, 3), (1000, 32)):
        stats = SearchStats()
        shards, fetch = in_memory(docs, valid, shard_rows)
        rows, scores = search_dense(queries, shards, fetch, k=7, extra=extra, stats=stats, factory=engine())
        check_same((rows, scores), brute_force(queries, docs, valid, 7))
        assert not np.isin(rows, [3, 77, 150]).any()
        copies = np.flatnonzero(np.all(docs == docs[rows[0, 0]], axis=1))
        assert rows[0, :5].tolist() == sorted(copies.tolist())[:5]
        if extra == 0:
            assert stats.exhaustive > 0
    few, few_valid = unit(np.eye(4, 8))
    shards, fetch = in_memory(few, few_valid, 3)
    rows, scores = search_dense(unit(np.ones((2, 8)))[0], shards, fetch, k=6, factory=engine())
    assert rows[0].tolist() == [0, 1, 2, 3, -1, -1] and np.isneginf(scores[:, 4:]).all()


def test_engine_choice(log):
    assert isinstance(search_engine("cpu", 1, log, 1000, 1_000_000), TorchFlatSearch)
    assert isinstance(search_engine("cpu", 1, log, 36, 45), FlatIndexFactory)  # a small search imports no torch
    import torch
    chosen = search_engine("cuda", 1, log, 36, 45)
    if torch.cuda.is_available():
        assert chosen.device == "cuda"
    else:
        assert chosen.device == "cpu"


def test_torch_search_on_a_gpu_equals_the_cpu():
    import torch
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here")
    rng = np.random.default_rng(2)
    docs, valid = unit(np.concatenate([rng.standard_normal((3000, 64))] * 2))
    queries, _ = unit(rng.standard_normal((50, 64)))
    shards, fetch = in_memory(docs, valid, 2500)
    gpu = search_dense(queries, shards, fetch, k=20, extra=8, factory=TorchFlatSearch("cuda", block_rows=1000))
    cpu = search_dense(queries, shards, fetch, k=20, extra=8, factory=FlatIndexFactory("cpu"))
    assert np.array_equal(gpu[0], cpu[0]) and np.array_equal(gpu[1], cpu[1])


def test_the_dense_search_imports_neither_polars_nor_faiss():
    """What the GPU benchmark needs where only torch is installed (the lent machine has no polars
    or faiss): dense.py, with FAISS looked for only when asked."""
    import subprocess
    import sys
    code = ("import sys; import workflow_scripts.retrieval.dense as d; "
            "assert 'polars' not in sys.modules and 'faiss' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)
