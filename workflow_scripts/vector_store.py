"""Memory-mapped vector stores: one directory per (model, scope, partition).

Layout of a partition directory:
  vectors.npy   rows x dim, float32 or float16 (dense stores), or
  data.npy, indices.npy, indptr.npy   CSR arrays (sparse stores, e.g. TF-IDF)
  norms.npy     float32 L2 norm of each stored row (cosine = dot / (norm_a * norm_b))
  keys.npy      uint64 text keys, sorted ascending (lookup is a binary search)
  rows.npy      row of each sorted key (absent when the rows are already in key order)
  manifest.json model, scope, partition, partitions, family, origin, spec digest, dim, dtype, rows,
                format, a digest of keys and rows, and a digest of every stored file; the text
                role's template or prompt (`text_form`) and a local model's files' sha256
                (`model_sha256`) where there are
Rows are written in the order they are embedded, chunk by chunk, so a writer holds one chunk at a
time whatever the partition's size; `rows.npy` maps the sorted keys to them. Every file is opened
with memory mapping: a lookup reads only the rows it needs, and `release_pages` hands the mapped
pages back after each shard so a reader's resident memory does not grow with the store.

File digests (`file_digests`: name -> bytes and sha256, `digest_mode` says which): a store whose
files together hold at most FULL_DIGEST_MAX_BYTES has the sha256 of each whole file (`full`); a
larger one, the sha256 of each file's size and of SAMPLE_BLOCKS blocks of SAMPLE_BYTES at fixed
offsets, first and last included (`sampled`: constant cost, so opening a many-GB store stays cheap;
it sees a file replaced or rewritten, but may miss a change confined to a few rows between its
blocks). `Partition.open(verify=True)` checks them, after the manifest's shape, dtype and keys, so a
file overwritten in place, even with one of the same size, is refused rather than read. A store
written before digests (no `file_digests` in its manifest) opens as before, unchecked.
"""
from __future__ import annotations

import hashlib
import json
import mmap
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from workflow_scripts.common import partition_of, vector_settings
from workflow_scripts.digests import file_sha256


def _sparse():
    """scipy.sparse, imported where a sparse store is read or written: dense-store jobs skip its
    0.2 s import."""
    import scipy.sparse
    return scipy.sparse


def _is_sparse(x) -> bool:
    sparse = sys.modules.get("scipy.sparse")  # not imported: x cannot be a scipy sparse matrix
    return sparse is not None and sparse.issparse(x)


class StoreMismatch(ValueError):
    """A store that does not match what the caller expects (rows, ids, dimension, model)."""


class MissingKeys(KeyError):
    pass


class NpyAppender:
    """Build a .npy file from appended row blocks without holding them. The header (which needs the
    final row count) is written first for 0 rows and rewritten in place on close, so the rows are
    written once. numpy's header writer pads the row count to 21 digits for exactly this
    (np.lib.format.GROWTH_AXIS_MAX_DIGITS), so the header's length does not change."""

    def __init__(self, path: Path, dtype, row_shape: tuple = ()):
        self.path, self.dtype, self.row_shape = Path(path), np.dtype(dtype), tuple(row_shape)
        self.out = open(self.path, "wb")
        self.rows = 0
        self._write_header()
        self.header_bytes = self.out.tell()

    def _write_header(self) -> None:
        header = np.lib.format.header_data_from_array_1_0(np.empty((0, *self.row_shape), self.dtype))
        np.lib.format.write_array_header_1_0(self.out, {**header, "shape": (self.rows, *self.row_shape)})

    def append(self, block) -> None:
        block = np.ascontiguousarray(block, dtype=self.dtype)
        if block.shape[1:] != self.row_shape:
            raise ValueError(f"{self.path.name}: block rows have shape {block.shape[1:]}, expected {self.row_shape}")
        self.out.write(block.tobytes())
        self.rows += len(block)

    def close(self) -> None:
        self.out.seek(0)
        self._write_header()
        if self.out.tell() != self.header_bytes:  # would overwrite the first rows
            raise RuntimeError(f"{self.path}: .npy header grew from {self.header_bytes} to {self.out.tell()} bytes")
        self.out.close()

    def abort(self) -> None:
        self.out.close()


def keys_digest(sorted_keys: np.ndarray, rows: np.ndarray | None) -> str:
    h = hashlib.blake2b(np.ascontiguousarray(sorted_keys, dtype=np.uint64).tobytes(), digest_size=16)
    if rows is not None:
        h.update(np.ascontiguousarray(rows, dtype=np.int64).tobytes())
    return h.hexdigest()


# A store this large or smaller (all its files together) gets whole-file sha256s; a larger one sampled
# digests. 64 MiB: ~0.1 s of sha256 per open (tests/benchmarks/bench_store_digest.py has the figures).
FULL_DIGEST_MAX_BYTES = 64 * 2 ** 20
SAMPLE_BLOCKS = 64
SAMPLE_BYTES = 64 * 1024
DIGEST_MODES = ("full", "sampled")


def sample_offsets(size: int) -> list[int]:
    """Offsets of the blocks a sampled digest reads: SAMPLE_BLOCKS evenly spaced, the first at 0 and
    the last ending at the end of the file (every block of a file too small to sample)."""
    if size <= SAMPLE_BLOCKS * SAMPLE_BYTES:
        return list(range(0, size, SAMPLE_BYTES))
    last = size - SAMPLE_BYTES
    return sorted({k * last // (SAMPLE_BLOCKS - 1) for k in range(SAMPLE_BLOCKS)})


def file_digest(path: Path, mode: str) -> str:
    """sha256 of the whole file (`full`), or of its size and its sampled blocks (`sampled`)."""
    if mode == "full":
        return file_sha256(path)
    with open(path, "rb") as f:
        if mode != "sampled":
            raise ValueError(f"unknown digest mode {mode!r}; expected one of {DIGEST_MODES}")
        size = os.fstat(f.fileno()).st_size
        h = hashlib.sha256(f"{size}\n".encode())
        for offset in sample_offsets(size):
            h.update(os.pread(f.fileno(), SAMPLE_BYTES, offset))
        return h.hexdigest()


def store_files(directory: Path) -> list[str]:
    return sorted(p.name for p in Path(directory).glob("*.npy"))


def file_digests(directory: Path, mode: str | None = None) -> tuple[str, dict]:
    """(digest mode, {file: {"bytes", "sha256"}}) of a partition's .npy files; the mode by their
    total size unless given."""
    directory = Path(directory)
    sizes = {name: (directory / name).stat().st_size for name in store_files(directory)}
    mode = mode or ("full" if sum(sizes.values()) <= FULL_DIGEST_MAX_BYTES else "sampled")
    return mode, {name: {"bytes": size, "sha256": file_digest(directory / name, mode)} for name, size in sizes.items()}


def verify_files(directory: Path, manifest: dict) -> None:
    """Raise StoreMismatch naming the first file whose size or digest is not the manifest's. A
    manifest without digests (written before they were recorded) is not checked."""
    recorded = manifest.get("file_digests")
    if not recorded:
        return
    directory, mode = Path(directory), manifest.get("digest_mode", "full")
    fix = f"rerun its embedding job (snakemake --forcerun embed ..., or --forcerun {directory} for this partition)"
    extra = sorted(set(store_files(directory)) - set(recorded))
    if extra:
        raise StoreMismatch(f"{directory / extra[0]}: a file the store was not written with; {fix}")
    for name, want in sorted(recorded.items()):
        path = directory / name
        try:
            size = path.stat().st_size
        except OSError:
            raise StoreMismatch(f"{path}: missing, but the store was written with it; {fix}") from None
        if size != want["bytes"]:
            raise StoreMismatch(f"{path}: {size} bytes, the store was written with {want['bytes']}; {fix}")
        got = file_digest(path, mode)
        if got != want["sha256"]:
            raise StoreMismatch(f"{path}: contents changed since the store was written ({mode} sha256 {got[:16]}, "
                                f"manifest {want['sha256'][:16]}); {fix}")


class PartitionWriter:
    """Write a partition chunk by chunk: `add(keys, vectors)` with dense arrays or CSR matrices.

    Use it as a context manager: on an error its open files are closed (the caller's atomic_path
    then removes the directory)."""

    def __init__(self, directory: Path, manifest: dict, sparse: bool = False, dtype="float32", dim: int | None = None):
        self.directory, self.manifest, self.sparse = Path(directory), dict(manifest), sparse
        self.directory.mkdir(parents=True, exist_ok=True)
        self.keys: list[np.ndarray] = []
        self.norms = NpyAppender(self.directory / "norms.npy", np.float32)
        self.dim = dim
        if sparse:
            self.data = NpyAppender(self.directory / "data.npy", np.float32)
            self.indices = NpyAppender(self.directory / "indices.npy", np.int32)
            self.indptr = NpyAppender(self.directory / "indptr.npy", np.int64)
            self.indptr.append(np.zeros(1, np.int64))
            self.nnz = 0
            self.dtype = np.dtype(np.float32)
        else:
            self.dtype = np.dtype(dtype)
            self.vectors: NpyAppender | None = None

    def __enter__(self) -> "PartitionWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()

    def _appenders(self) -> list:
        found = [self.norms] + ([self.data, self.indices, self.indptr] if self.sparse else [self.vectors])
        return [a for a in found if a is not None]

    def abort(self) -> None:
        for appender in self._appenders():
            appender.abort()

    def add(self, keys: np.ndarray, vectors) -> None:
        keys = np.asarray(keys, dtype=np.uint64)
        if _is_sparse(vectors):
            csr = _sparse().csr_matrix(vectors, dtype=np.float32)
            if self.dim is None:
                self.dim = csr.shape[1]
            self.data.append(csr.data)
            self.indices.append(csr.indices.astype(np.int32))
            self.indptr.append(csr.indptr[1:].astype(np.int64) + self.nnz)
            self.nnz += csr.nnz
            norms = np.sqrt(np.asarray(csr.multiply(csr).sum(axis=1), dtype=np.float64).ravel())
        else:
            stored = np.asarray(vectors).astype(self.dtype, copy=False)
            if self.vectors is None:
                self.dim = stored.shape[1] if self.dim is None else self.dim
                self.vectors = NpyAppender(self.directory / "vectors.npy", self.dtype, (self.dim,))
            self.vectors.append(stored)
            # norms of what is stored (float16 rounding included), so cosine uses the same numbers
            norms = np.sqrt(np.einsum("ij,ij->i", stored, stored, dtype=np.float64))
        if len(keys) != len(norms):
            raise StoreMismatch(f"{len(keys)} keys for {len(norms)} vectors")
        self.keys.append(keys)
        self.norms.append(norms.astype(np.float32))

    def close(self) -> dict:
        keys_by_row = np.concatenate(self.keys) if self.keys else np.empty(0, np.uint64)
        if not self.sparse and self.vectors is None:
            if self.dim is None:
                raise StoreMismatch("an empty dense partition needs its dimension")
            self.vectors = NpyAppender(self.directory / "vectors.npy", self.dtype, (self.dim,))
        for appender in ((self.data, self.indices, self.indptr) if self.sparse else (self.vectors,)):
            appender.close()
        self.norms.close()
        order = np.argsort(keys_by_row, kind="stable")
        sorted_keys = keys_by_row[order]
        if len(sorted_keys) > 1 and not np.all(sorted_keys[1:] > sorted_keys[:-1]):
            raise StoreMismatch("store keys must be unique")
        rows = None if np.array_equal(order, np.arange(len(order))) else order.astype(np.int64)
        np.save(self.directory / "keys.npy", sorted_keys)
        if rows is not None:
            np.save(self.directory / "rows.npy", rows)
        mode, digests = file_digests(self.directory)
        manifest = {**self.manifest, "format": "csr" if self.sparse else "dense", "dtype": str(self.dtype),
                    "dim": int(self.dim or 0), "rows": int(len(sorted_keys)),
                    "keys_digest": keys_digest(sorted_keys, rows), "digest_mode": mode, "file_digests": digests}
        (self.directory / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        return manifest


def write_partition(directory: Path, keys: np.ndarray, manifest: dict, vectors) -> dict:
    """Write a whole partition at once (keys in any order; dense array or sparse matrix)."""
    sparse = _is_sparse(vectors)
    dtype = np.float32 if sparse else np.asarray(vectors).dtype
    with PartitionWriter(directory, manifest, sparse=sparse, dtype=dtype, dim=vectors.shape[1]) as writer:
        writer.add(keys, vectors)
        return writer.close()


def _load(directory: Path, name: str):
    try:
        return np.load(directory / name, mmap_mode="r")
    except (OSError, ValueError) as err:  # a missing or truncated file: a job killed while writing
        raise StoreMismatch(f"{directory}: cannot read {name} ({err}); rerun its embedding job") from None


@dataclass
class Partition:
    directory: Path
    manifest: dict
    keys: np.ndarray
    norms: np.ndarray
    rows: np.ndarray | None = None
    vectors: np.ndarray | None = None
    csr: "scipy.sparse.csr_matrix | None" = None
    maps: list = field(default_factory=list)

    @classmethod
    def open(cls, directory, verify: bool = True) -> "Partition":
        directory = Path(directory)
        try:
            manifest = json.loads((directory / "manifest.json").read_text())
        except (OSError, ValueError) as err:
            raise StoreMismatch(f"{directory}: no readable manifest.json ({err}); rerun its embedding job") from None
        keys, norms = _load(directory, "keys.npy"), _load(directory, "norms.npy")
        rows = _load(directory, "rows.npy") if (directory / "rows.npy").exists() else None
        part = cls(directory, manifest, keys, norms, rows)
        part.maps = [keys, norms] + ([rows] if rows is not None else [])
        if manifest["format"] == "dense":
            part.vectors = _load(directory, "vectors.npy")
            part.maps.append(part.vectors)
            shape, dtype = part.vectors.shape, str(part.vectors.dtype)
        else:
            data, indices, indptr = (_load(directory, n) for n in ("data.npy", "indices.npy", "indptr.npy"))
            part.maps += [data, indices, indptr]
            if len(indptr) < 1 or indptr[-1] != len(data) or len(indices) != len(data):
                raise StoreMismatch(f"{directory}: CSR arrays disagree (indptr ends at {indptr[-1] if len(indptr) else None}, "
                                    f"{len(data)} values, {len(indices)} indices)")
            part.csr = _sparse().csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, manifest["dim"]), copy=False)
            shape, dtype = part.csr.shape, "float32"
        n = manifest["rows"]
        if not (len(keys) == len(norms) == shape[0] == n) or shape[1] != manifest["dim"] or (
                rows is not None and len(rows) != n):
            raise StoreMismatch(
                f"{directory}: manifest says {n} rows x {manifest['dim']}, files hold keys {len(keys)}, "
                f"norms {len(norms)}, vectors {shape[0]} x {shape[1]}"
                + (f", rows {len(rows)}" if rows is not None else ""))
        if dtype != manifest["dtype"]:
            raise StoreMismatch(f"{directory}: vectors are {dtype}, manifest says {manifest['dtype']}")
        if verify and "keys_digest" in manifest and keys_digest(keys, rows) != manifest["keys_digest"]:
            raise StoreMismatch(f"{directory}: keys.npy/rows.npy are not the ones this store was written with")
        if verify:  # every file as written: one overwritten in place, same size or not, is refused
            verify_files(directory, manifest)
        part.release_pages()  # the digest read every key; keep none of them resident
        return part

    def find(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found, rows): which of `keys` the partition holds, and the rows of those found."""
        keys = np.asarray(keys, dtype=np.uint64)
        if not len(self.keys):
            return np.zeros(len(keys), dtype=bool), np.empty(0, np.int64)
        idx = self._positions(keys)
        found = self.keys[idx] == keys
        idx = idx[found]
        return found, (np.asarray(self.rows[idx]) if self.rows is not None else idx)

    def _positions(self, keys: np.ndarray) -> np.ndarray:
        """searchsorted(self.keys, keys), clipped to the last position. The keys are looked up in
        sorted order: each search then starts where the last one ended, and the memory-mapped keys
        are read front to back (7x faster than in random order on a 4M-key partition)."""
        order = np.argsort(keys, kind="stable")
        idx = np.empty(len(keys), dtype=np.int64)
        idx[order] = np.searchsorted(self.keys, keys[order])
        return np.minimum(idx, len(self.keys) - 1, out=idx)

    def rows_of(self, keys: np.ndarray) -> np.ndarray:
        if not len(self.keys):
            if len(keys):
                raise MissingKeys(f"{self.directory}: the store is empty: {len(keys)} text key(s) not in the store; "
                                  "the store does not match the shard it is used with (rerun its embedding job)")
            return np.empty(0, np.int64)
        idx = self._positions(keys)
        found = self.keys[idx] == keys
        if not np.all(found):
            missing = np.asarray(keys)[~found]
            raise MissingKeys(f"{self.directory}: {len(missing)} text key(s) not in the store, e.g. {int(missing[0])}; "
                              "the store does not match the shard it is used with (rerun its embedding job)")
        return np.asarray(self.rows[idx]) if self.rows is not None else idx

    def release_pages(self) -> None:
        for arr in self.maps:
            mm = getattr(arr, "_mmap", None)
            if mm is not None and hasattr(mmap, "MADV_DONTNEED"):
                mm.madvise(mmap.MADV_DONTNEED)


class VectorStore:
    """All partitions of one (model, scope): rows for any list of text keys, without loading the store.

    `model` and `spec_digest`, when given, must match what the partitions were written with."""

    def __init__(self, directories: list, model: str | None = None, spec_digest: str | None = None):
        parts = [Partition.open(d) for d in directories]
        if not parts:
            raise StoreMismatch("no store partitions given")
        n = parts[0].manifest["partitions"]
        by_index = {p.manifest["partition"]: p for p in parts}
        if sorted(by_index) != list(range(n)) or len(parts) != n:
            raise StoreMismatch(f"expected partitions 0..{n - 1}, got {sorted(p.manifest['partition'] for p in parts)}")
        for p in parts:
            m = p.manifest
            for key in ("model", "dim", "partitions", "format", "scope", "spec_digest"):
                if m.get(key) != parts[0].manifest.get(key):
                    raise StoreMismatch(f"{p.directory}: {key} {m.get(key)!r} differs from "
                                        f"{parts[0].directory}: {parts[0].manifest.get(key)!r}")
            if model is not None and m["model"] != model:
                raise StoreMismatch(f"{p.directory}: store is for model {m['model']!r}, expected {model!r}")
            if spec_digest is not None and m.get("spec_digest") != spec_digest:
                raise StoreMismatch(f"{p.directory}: store was embedded with another configuration of model "
                                    f"{m['model']!r} (spec digest {m.get('spec_digest')}, expected {spec_digest}); "
                                    "rerun its embedding job")
            # every key must sit in the partition its hash assigns, or lookups would miss it
            if len(p.keys) and np.any(partition_of(p.keys[:1000], n) != m["partition"]):
                raise StoreMismatch(f"{p.directory}: keys do not belong to partition {m['partition']} of {n}")
        self.parts = [by_index[i] for i in range(n)]
        self.manifest = parts[0].manifest
        self.dim = self.manifest["dim"]
        self.sparse = self.manifest["format"] == "csr"

    def release_pages(self) -> None:
        for part in self.parts:
            part.release_pages()

    def lookup(self, keys: np.ndarray):
        """(vectors, norms) for `keys`, in the given order: float32 ndarray, or CSR for sparse stores."""
        keys = np.asarray(keys, dtype=np.uint64)
        which = partition_of(keys, len(self.parts)).astype(np.int64)
        norms = np.empty(len(keys), dtype=np.float32)
        if self.sparse:
            blocks, order = [], []
        else:
            out = np.empty((len(keys), self.dim), dtype=np.float32)
        for p, part in enumerate(self.parts):
            sel = np.flatnonzero(which == p)
            if not len(sel):
                continue
            rows = part.rows_of(keys[sel])
            # sorted row order reads the memory map sequentially
            perm = np.argsort(rows, kind="stable")
            sel, rows = sel[perm], rows[perm]
            norms[sel] = part.norms[rows]
            if self.sparse:
                blocks.append(part.csr[rows])
                order.append(sel)
            else:
                out[sel] = part.vectors[rows]
            part.release_pages()  # resident memory: one partition's rows of one lookup at a time
        if self.sparse:
            if not blocks:
                return _sparse().csr_matrix((0, self.dim), dtype=np.float32), norms
            stacked = _sparse().vstack(blocks, format="csr")
            inverse = np.empty(len(keys), dtype=np.int64)
            inverse[np.concatenate(order)] = np.arange(len(keys))
            return stacked[inverse], norms
        return out, norms

    def paired_cosine(self, keys_a: np.ndarray, keys_b: np.ndarray) -> np.ndarray:
        """cos(a_i, b_i) for each pair; NaN where either vector has zero norm."""
        va, na = self.lookup(keys_a)
        vb, nb = self.lookup(keys_b)
        if self.sparse:
            dots = np.asarray(va.multiply(vb).sum(axis=1), dtype=np.float64).ravel()
        else:
            dots = np.einsum("ij,ij->i", va, vb, dtype=np.float64)
        denom = na.astype(np.float64) * nb.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = np.where(denom > 0, dots / denom, np.nan)
        # rounding can leave |cos| a hair above 1; the density grid is [-1, 1]
        return np.clip(cos, -1.0, 1.0)


def spec_digest(spec: dict, role: str = "text") -> str:
    """Digest of the model settings that change vectors (not threads, memory or batch size; not the
    device either: it is recorded in the manifest, and a change reruns the job through its params),
    as a store of `role` is embedded (its template or prompt: model_settings.role_spec)."""
    from workflow_scripts.model_settings import role_spec
    relevant = {k: v for k, v in vector_settings(role_spec(spec, role)).items() if k != "device"}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]
