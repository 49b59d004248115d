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


# Small literal vectors with cosines worked out by hand (norms 5, 3, 1, ...):
#   (3,4,0).(4,3,0) = 24, norms 5 and 5            -> 24/25 = 0.96
#   (1,2,2).(2,-2,1) = 2-4+2 = 0                   -> 0
#   (1,0,0).(-2,0,0) = -2, norms 1 and 2           -> -1
#   (1,1,0).(1,0,0) = 1, norms sqrt(2) and 1       -> 1/sqrt(2)
#   (0,0,0) with anything: zero norm               -> NaN (counted downstream, never a number)
#   (2,2,1).(1,2,2) = 2+4+2 = 8, norms 3 and 3     -> 8/9
# Every entry is exact in float16 too, so all three store kinds must give these values.
LITERAL = np.array([[3, 4, 0], [4, 3, 0], [1, 2, 2], [2, -2, 1], [1, 0, 0], [-2, 0, 0], [1, 1, 0], [0, 0, 0],
                    [2, 2, 1]], dtype=np.float32)
PAIRS = [(0, 1), (2, 3), (4, 5), (6, 4), (7, 0), (8, 2)]
EXPECTED = [0.96, 0.0, -1.0, 0.7071067811865476, np.nan, 8 / 9]


@pytest.mark.parametrize("sparse, dtype", [(False, np.float32), (True, np.float32), (False, np.float16)])
def test_paired_cosine_of_literal_vectors_equals_hand_computed_values(tmp_path, sparse, dtype):
    keys = np.array([11, 22, 33, 44, 55, 66, 77, 88, 99], dtype=np.uint64)
    store = VectorStore(make_store(tmp_path, keys, LITERAL, sparse=sparse, dtype=dtype))
    a, b = zip(*PAIRS)
    cos = store.paired_cosine(keys[list(a)], keys[list(b)])
    assert np.allclose(cos, EXPECTED, rtol=0, atol=1e-7, equal_nan=True)
    assert np.isnan(cos[4]) and not np.isnan(np.delete(cos, 4)).any()


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


def test_missing_manifest_is_a_clear_error(tmp_path, data):
    d = one_partition(tmp_path, data)
    (d / "manifest.json").unlink()  # a store whose writer was killed before the manifest
    with pytest.raises(StoreMismatch, match=r"/p: no readable manifest.json .*rerun its embedding job"):
        VectorStore([d])


def test_csr_arrays_disagreeing_are_detected(tmp_path, data):
    keys, vectors = data
    d = tmp_path / "csr"
    write_partition(d, keys, {"model": "m", "scope": "pc_en", "partition": 0, "partitions": 1, "family": "tfidf"},
                    vectors=sp.csr_matrix(vectors))
    nnz = len(np.load(d / "data.npy"))
    indices = np.load(d / "indices.npy")
    np.save(d / "indices.npy", indices[:-1])  # one index fewer than values
    with pytest.raises(StoreMismatch, match=rf"CSR arrays disagree \(indptr ends at {nnz}, {nnz} values, {nnz - 1} indices\)"):
        VectorStore([d])
    np.save(d / "indices.npy", indices)
    indptr = np.load(d / "indptr.npy")
    np.save(d / "indptr.npy", np.append(indptr[:-1], indptr[-1] - 1))  # last row loses a value
    with pytest.raises(StoreMismatch, match=rf"indptr ends at {nnz - 1}, {nnz} values, {nnz} indices"):
        VectorStore([d])


def test_no_partitions_and_empty_partitions(tmp_path):
    with pytest.raises(StoreMismatch, match="no store partitions given"):
        VectorStore([])
    d = tmp_path / "empty"
    with PartitionWriter(d, {"model": "m", "scope": "shared", "partition": 0, "partitions": 1, "family": "x"},
                         dim=4) as writer:
        manifest = writer.close()
    assert manifest["rows"] == 0 and np.load(d / "vectors.npy").shape == (0, 4)
    store = VectorStore([d])
    vectors, norms = store.lookup(np.empty(0, np.uint64))  # nothing asked of an empty store: fine
    assert vectors.shape == (0, 4) and norms.shape == (0,)
    with pytest.raises(MissingKeys, match="the store is empty: 2 text key"):
        store.lookup(np.array([1, 2], dtype=np.uint64))
    with pytest.raises(StoreMismatch, match="an empty dense partition needs its dimension"):
        PartitionWriter(tmp_path / "nodim", {}).close()


def _set_manifest(directory, **changes):
    m = json.loads((directory / "manifest.json").read_text())
    m.update(changes)
    (directory / "manifest.json").write_text(json.dumps(m))


@pytest.mark.parametrize("key, value, shown", [
    ("scope", "pc_en", "scope 'pc_en' differs from .*m-part-0: 'shared'"),
    ("spec_digest", "0123456789abcdef", "spec_digest '0123456789abcdef' differs from .*m-part-0: 'aaaabbbbccccdddd'"),
    ("model", "other", "model 'other' differs from .*m-part-0: 'm'"),
])
def test_partitions_written_differently_are_refused(tmp_path, data, key, value, shown):
    keys, vectors = data
    dirs = make_store(tmp_path, keys, vectors)
    for d in dirs:
        _set_manifest(d, spec_digest="aaaabbbbccccdddd")
    _set_manifest(dirs[1], **{key: value})
    with pytest.raises(StoreMismatch, match=r"m-part-1: " + shown):
        VectorStore(dirs)


def test_partitions_of_different_format_are_refused(tmp_path, data):
    keys, vectors = data
    (tmp_path / "s").mkdir()
    dense, sparse = make_store(tmp_path, keys, vectors), make_store(tmp_path / "s", keys, vectors, sparse=True)
    with pytest.raises(StoreMismatch, match=r"s/m-part-1: format 'csr' differs from .*m-part-0: 'dense'"):
        VectorStore([dense[0], sparse[1]])


def test_partitions_of_different_dimension_or_count_are_refused(tmp_path, data):
    keys, vectors = data
    (tmp_path / "n").mkdir()
    dirs, narrow = make_store(tmp_path, keys, vectors), make_store(tmp_path / "n", keys, vectors[:, :5])
    with pytest.raises(StoreMismatch, match=r"n/m-part-1: dim 5 differs from .*m-part-0: 8"):
        VectorStore([dirs[0], narrow[1]])
    _set_manifest(dirs[1], partitions=3)
    with pytest.raises(StoreMismatch, match=r"m-part-1: partitions 3 differs from .*m-part-0: 2"):
        VectorStore(dirs)


def test_npy_header_has_room_for_any_row_count_and_numpy_reads_the_file(tmp_path):
    import io
    from workflow_scripts.vector_store import NpyAppender
    sizes = set()
    for rows in (0, 1, 10 ** 6, 10 ** 12):
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": (rows, 384)})
        sizes.add(buf.tell())
    assert sizes == {128}  # the header is rewritten in place on close: its length must not grow
    blocks = [np.arange(12, dtype=np.float32).reshape(4, 3), np.full((2, 3), -1.5, np.float32)]
    appender = NpyAppender(tmp_path / "v.npy", np.float32, (3,))
    for block in blocks:
        appender.append(block)
    appender.close()
    expected = np.concatenate(blocks)
    np.save(tmp_path / "ref.npy", expected)  # numpy's own writer: the same bytes, header included
    assert (tmp_path / "v.npy").read_bytes() == (tmp_path / "ref.npy").read_bytes()
    assert np.array_equal(np.load(tmp_path / "v.npy"), expected)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    assert isinstance(mapped, np.memmap) and mapped.shape == (6, 3) and np.array_equal(mapped[4:], blocks[1])
    with open(tmp_path / "v.npy", "rb") as f:
        assert np.lib.format.read_magic(f) == (1, 0)
        assert np.lib.format.read_array_header_1_0(f) == ((6, 3), False, np.dtype(np.float32))
        assert f.tell() % 64 == 0  # the data start where numpy's alignment puts them
    empty = NpyAppender(tmp_path / "e.npy", np.float16)
    empty.close()
    np.save(tmp_path / "e_ref.npy", np.empty(0, np.float16))
    assert (tmp_path / "e.npy").read_bytes() == (tmp_path / "e_ref.npy").read_bytes()


def test_writer_closes_its_files_on_error(tmp_path):
    writer = PartitionWriter(tmp_path / "p", {"model": "m"}, dim=3)
    with pytest.raises(ValueError, match="expected \\(3,\\)"):
        with writer:
            writer.add(np.array([1], np.uint64), np.zeros((1, 3), np.float32))
            writer.add(np.array([2], np.uint64), np.zeros((1, 4), np.float32))  # wrong width
    assert writer.norms.out.closed and writer.vectors.out.closed
