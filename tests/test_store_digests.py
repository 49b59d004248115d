"""A vector store's manifest holds a digest of every stored file, checked when the store is opened:
a file overwritten in place, even with one of the same size, is refused with the file and the fix,
instead of being read as the vectors the embedding job wrote. Small stores: sha256 of each whole
file (`digest_mode: full`); large ones: sha256 of the size and of sampled blocks (`sampled`). Stores
written before digests open unchecked."""
import hashlib
import json

import numpy as np
import pytest
import scipy.sparse as sp

from workflow_scripts import vector_store as V
from workflow_scripts.vector_store import Partition, StoreMismatch, VectorStore, write_partition

FIX = r"rerun its embedding job \(snakemake --forcerun embed \.\.\."


def store(tmp_path, rows=300, dim=16, sparse=False, name="p"):
    rng = np.random.default_rng(0)
    keys = np.unique(rng.integers(0, 2 ** 62, size=2 * rows, dtype=np.int64).astype(np.uint64))[:rows]
    vectors = rng.normal(size=(rows, dim)).astype(np.float32)
    d = tmp_path / name
    write_partition(d, keys, {"model": "m", "scope": "s", "partition": 0, "partitions": 1, "family": "x"},
                    vectors=sp.csr_matrix(np.where(vectors > 1, vectors, 0)) if sparse else vectors)
    return d, keys, vectors


def overwrite_in_place(path, offset, data: bytes):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


@pytest.mark.parametrize("sparse", [False, True])
def test_manifest_holds_a_sha256_of_every_stored_file(tmp_path, sparse):
    d, _, _ = store(tmp_path, sparse=sparse)
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["digest_mode"] == "full"
    files = sorted(p.name for p in d.glob("*.npy"))
    assert sorted(manifest["file_digests"]) == files and ("data.npy" in files) == sparse
    for name, entry in manifest["file_digests"].items():
        raw = (d / name).read_bytes()
        assert entry == {"bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
    VectorStore([d])


def test_vectors_overwritten_in_place_with_the_same_size_are_refused(tmp_path):
    d, keys, vectors = store(tmp_path)
    size = (d / "vectors.npy").stat().st_size
    header = size - vectors.nbytes
    # another model's vectors, same rows and dimension: same shape, dtype, size; only the numbers differ
    other = np.random.default_rng(1).normal(size=vectors.shape).astype(np.float32)
    overwrite_in_place(d / "vectors.npy", header, other.tobytes())
    assert (d / "vectors.npy").stat().st_size == size
    with pytest.raises(StoreMismatch, match=rf"^{d / 'vectors.npy'}: contents changed since the store was written "
                                            rf"\(full sha256 [0-9a-f]{{16}}, manifest [0-9a-f]{{16}}\); {FIX}"):
        VectorStore([d])
    with pytest.raises(StoreMismatch, match=FIX):
        Partition.open(d)
    Partition.open(d, verify=False)  # an explicit no-check open still reads it


def test_norms_changed_by_one_value_are_refused(tmp_path):
    d, _, _ = store(tmp_path)
    size = (d / "norms.npy").stat().st_size
    overwrite_in_place(d / "norms.npy", size - 4, np.float32(123.0).tobytes())
    with pytest.raises(StoreMismatch, match=rf"{d / 'norms.npy'}: contents changed"):
        VectorStore([d])


def test_a_file_of_another_size_or_an_extra_file_is_refused(tmp_path):
    d, _, vectors = store(tmp_path)
    np.save(d / "extra.npy", np.zeros(3))
    with pytest.raises(StoreMismatch, match=rf"{d / 'extra.npy'}: a file the store was not written with; {FIX}"):
        VectorStore([d])
    (d / "extra.npy").unlink()
    with open(d / "norms.npy", "ab") as f:  # a few bytes appended: numpy still reads the array
        f.write(b"\0" * 8)
    with pytest.raises(StoreMismatch, match=rf"{d / 'norms.npy'}: \d+ bytes, the store was written with \d+; {FIX}"):
        VectorStore([d])


def test_large_stores_get_a_sampled_digest(tmp_path, monkeypatch):
    monkeypatch.setattr(V, "FULL_DIGEST_MAX_BYTES", 10_000)
    monkeypatch.setattr(V, "SAMPLE_BLOCKS", 4)
    monkeypatch.setattr(V, "SAMPLE_BYTES", 1024)
    d, _, vectors = store(tmp_path, rows=2000, dim=32)  # 256 kB of vectors: above the (patched) threshold
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["digest_mode"] == "sampled"
    raw = (d / "vectors.npy").read_bytes()
    expected = hashlib.sha256(f"{len(raw)}\n".encode())
    for offset in V.sample_offsets(len(raw)):
        expected.update(raw[offset:offset + 1024])
    assert V.sample_offsets(len(raw)) == [0, (len(raw) - 1024) // 3, 2 * (len(raw) - 1024) // 3, len(raw) - 1024]
    assert manifest["file_digests"]["vectors.npy"] == {"bytes": len(raw), "sha256": expected.hexdigest()}
    VectorStore([d])
    # a whole file rewritten (re-embedded by another model) touches every sampled block
    header = len(raw) - vectors.nbytes
    overwrite_in_place(d / "vectors.npy", header, np.ones_like(vectors).tobytes())
    with pytest.raises(StoreMismatch, match=rf"{d / 'vectors.npy'}: contents changed .*\(sampled sha256 .*{FIX}"):
        VectorStore([d])


def test_stores_written_before_digests_open_unchecked(tmp_path):
    d, _, vectors = store(tmp_path)
    manifest = json.loads((d / "manifest.json").read_text())
    for key in ("digest_mode", "file_digests"):
        del manifest[key]
    (d / "manifest.json").write_text(json.dumps(manifest))
    overwrite_in_place(d / "vectors.npy", (d / "vectors.npy").stat().st_size - 4, b"\0\0\0\0")
    VectorStore([d])  # no digests to check: opens as before


def test_digests_change_the_manifest_not_the_vectors(tmp_path, monkeypatch):
    """The stored arrays are those written without digests: only manifest.json gains two keys."""
    d, _, _ = store(tmp_path, name="with")
    monkeypatch.setattr(V, "file_digests", lambda directory, mode=None: ("none", {}))
    plain, _, _ = store(tmp_path, name="without")
    for name in ("vectors.npy", "norms.npy", "keys.npy"):
        assert (d / name).read_bytes() == (plain / name).read_bytes()
    with_digests = json.loads((d / "manifest.json").read_text())
    without = json.loads((plain / "manifest.json").read_text())
    assert {k: v for k, v in with_digests.items() if k not in ("digest_mode", "file_digests")} == \
        {k: v for k, v in without.items() if k not in ("digest_mode", "file_digests")}
