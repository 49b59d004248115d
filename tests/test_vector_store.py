import json

import numpy as np
import pytest
import scipy.sparse as sp

from workflow_scripts.common import partition_of
from workflow_scripts.vector_store import (MissingKeys, PartitionWriter, StoreMismatch, VectorStore, spec_digest,
                                           write_partition)


def make_store(tmp_path, keys, vectors, partitions=2, model="m", sparse=False, dtype=np.float32):
    dirs = []
    part_of = partition_of(keys, partitions)
    for p in range(partitions):
        sel = np.flatnonzero(part_of == p)
        order = sel[np.argsort(keys[sel])]
        d = tmp_path / f"{model}-part-{p}"
        d.mkdir()
        rows = vectors[order]
        manifest = {"model": model, "scope": "shared", "partition": p, "partitions": partitions, "family": "x"}
        write_partition(d, keys[order], manifest,
                        vectors=sp.csr_matrix(rows) if sparse else rows.astype(dtype))
        dirs.append(d)
    return dirs


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    keys = np.unique(rng.integers(0, 2 ** 63, size=400, dtype=np.int64).astype(np.uint64) * np.uint64(2))[:200]
    rng.shuffle(keys)
    vectors = rng.normal(size=(200, 8)).astype(np.float32)
    vectors[7] = 0.0  # a zero-norm vector
    return keys, vectors


@pytest.mark.parametrize("sparse", [False, True])
def test_lookup_returns_rows_in_requested_order(tmp_path, data, sparse):
    keys, vectors = data
    store = VectorStore(make_store(tmp_path, keys, vectors, sparse=sparse))
    want = np.array([5, 199, 0, 5, 42])
    got, norms = store.lookup(keys[want])
    got = got.toarray() if sparse else got
    assert np.allclose(got, vectors[want])
    assert np.allclose(norms, np.linalg.norm(vectors[want], axis=1), rtol=1e-6)


@pytest.mark.parametrize("sparse", [False, True])
def test_paired_cosine_matches_numpy_and_gives_nan_for_zero_norm(tmp_path, data, sparse):
    keys, vectors = data
    store = VectorStore(make_store(tmp_path, keys, vectors, sparse=sparse))
    a, b = np.arange(0, 20), np.arange(20, 40)
    cos = store.paired_cosine(keys[a], keys[b])
    va, vb = vectors[a].astype(float), vectors[b].astype(float)
    with np.errstate(invalid="ignore"):  # row 7 is the zero vector: 0/0 is the NaN we expect
        expected = (va * vb).sum(1) / (np.linalg.norm(va, axis=1) * np.linalg.norm(vb, axis=1))
    finite = a != 7
    assert np.allclose(cos[finite], expected[finite], atol=1e-6)
    assert np.isnan(cos[a == 7]).all()


def test_float16_store(tmp_path, data):
    keys, vectors = data
    store = VectorStore(make_store(tmp_path, keys, vectors, dtype=np.float16))
    assert store.manifest["dtype"] == "float16"
    cos = store.paired_cosine(keys[:10], keys[10:20])
    ref = VectorStore(make_store(tmp_path, keys, vectors, model="m32")).paired_cosine(keys[:10], keys[10:20])
    ok = np.isfinite(ref)
    assert np.allclose(cos[ok], ref[ok], atol=2e-3)


def test_missing_key_is_a_clear_error(tmp_path, data):
    keys, vectors = data
    store = VectorStore(make_store(tmp_path, keys, vectors))
    with pytest.raises(MissingKeys, match="not in the store"):
        store.lookup(np.array([keys[0], np.uint64(12345)], dtype=np.uint64))


def test_mismatches_are_detected(tmp_path, data):
    keys, vectors = data
    dirs = make_store(tmp_path, keys, vectors)
    with pytest.raises(StoreMismatch, match="expected 'other'"):
        VectorStore(dirs, model="other")
    with pytest.raises(StoreMismatch, match="partitions 0..1"):
        VectorStore(dirs[:1])
    # rows in the manifest disagreeing with the files
    manifest = json.loads((dirs[0] / "manifest.json").read_text())
    manifest["rows"] += 1
    (dirs[0] / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(StoreMismatch, match="rows"):
        VectorStore(dirs)


def test_partition_of_wrong_store_is_detected(tmp_path, data):
    keys, vectors = data
    dirs = make_store(tmp_path, keys, vectors)
    swapped = [dirs[1], dirs[0]]
    for d, p in zip(swapped, (0, 1)):
        m = json.loads((d / "manifest.json").read_text())
        m["partition"] = p
        (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(StoreMismatch, match="do not belong"):
        VectorStore(dirs)


def test_duplicate_keys_are_refused(tmp_path):
    with pytest.raises(StoreMismatch, match="unique"):
        write_partition(tmp_path, np.array([3, 1, 3], dtype=np.uint64), {}, vectors=np.zeros((3, 2), np.float32))


@pytest.mark.parametrize("sparse", [False, True])
def test_chunked_writer_in_any_row_order_equals_one_shot(tmp_path, data, sparse):
    """Rows stored in arrival order, chunk by chunk, with rows.npy mapping sorted keys to them."""
    keys, vectors = data
    manifest = {"model": "m", "scope": "shared", "partition": 0, "partitions": 1, "family": "x"}
    writer = PartitionWriter(tmp_path / "chunked", manifest, sparse=sparse, dim=8)
    for lo in range(0, 200, 64):  # uneven chunks, keys unsorted
        block = vectors[lo:lo + 64]
        writer.add(keys[lo:lo + 64], sp.csr_matrix(block) if sparse else block)
    writer.close()
    assert (tmp_path / "chunked" / "rows.npy").exists()
    order = np.argsort(keys)
    write_partition(tmp_path / "sorted", keys[order], manifest,
                    vectors=sp.csr_matrix(vectors[order]) if sparse else vectors[order])
    assert not (tmp_path / "sorted" / "rows.npy").exists()
    a, b = VectorStore([tmp_path / "chunked"]), VectorStore([tmp_path / "sorted"])
    probe = keys[[3, 150, 7, 64, 199]]
    va, na = a.lookup(probe)
    vb, nb = b.lookup(probe)
    va, vb = (va.toarray(), vb.toarray()) if sparse else (va, vb)
    assert np.array_equal(va, vb) and np.array_equal(na, nb)
    assert np.allclose(va, vectors[[3, 150, 7, 64, 199]])


def one_partition(tmp_path, data, **manifest):
    keys, vectors = data
    d = tmp_path / "p"
    write_partition(d, keys, {"model": "m", "scope": "shared", "partition": 0, "partitions": 1, "family": "x",
                              **manifest}, vectors=vectors)
    return d


def test_truncated_vectors_file_is_a_clear_error(tmp_path, data):
    d = one_partition(tmp_path, data)
    raw = (d / "vectors.npy").read_bytes()
    (d / "vectors.npy").write_bytes(raw[: len(raw) // 2])  # a writer killed half-way
    with pytest.raises(StoreMismatch, match="cannot read vectors.npy"):
        VectorStore([d])


def test_dimension_and_dtype_disagreeing_with_manifest_are_detected(tmp_path, data):
    keys, vectors = data
    d = one_partition(tmp_path, data)
    np.save(d / "vectors.npy", vectors[:, :4])
    with pytest.raises(StoreMismatch, match="x 8, files hold .* 200 x 4"):
        VectorStore([d])
    np.save(d / "vectors.npy", vectors.astype(np.float16))
    with pytest.raises(StoreMismatch, match="float16, manifest says float32"):
        VectorStore([d])


def test_keys_of_another_store_are_detected(tmp_path, data):
    keys, vectors = data
    d = one_partition(tmp_path, data)
    other = np.sort(keys + np.uint64(1))  # same count, sorted, but not the keys these rows belong to
    np.save(d / "keys.npy", other)
    with pytest.raises(StoreMismatch, match="not the ones this store was written with"):
        VectorStore([d])


def test_store_of_another_model_configuration_is_detected(tmp_path, data):
    d = one_partition(tmp_path, data, spec_digest=spec_digest({"family": "x", "precision": "fp32"}))
    VectorStore([d], model="m", spec_digest=spec_digest({"family": "x", "precision": "fp32", "batch_size": 8}))
    with pytest.raises(StoreMismatch, match="another configuration of model 'm'"):
        VectorStore([d], model="m", spec_digest=spec_digest({"family": "x", "precision": "bf16"}))


def test_release_pages_keeps_lookups_correct(tmp_path, data):
    keys, vectors = data
    store = VectorStore(make_store(tmp_path, keys, vectors))
    before = store.lookup(keys[:50])[0]
    store.release_pages()
    assert np.array_equal(store.lookup(keys[:50])[0], before)
