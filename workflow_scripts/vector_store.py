"""Memory-mapped vector stores: one directory per (model, scope, partition).

Layout of a partition directory:
  keys.npy      uint64 text keys, sorted ascending (lookup is a binary search)
  norms.npy     float32 L2 norm of each stored row (cosine = dot / (norm_a * norm_b))
  vectors.npy   rows x dim, float32 or float16 (dense stores), or
  data.npy, indices.npy, indptr.npy   CSR arrays (sparse stores, e.g. TF-IDF)
  manifest.json model, scope, partition, partitions, family, revision/path, dim, dtype, rows, format
Every file is opened with memory mapping: a lookup reads only the rows it needs.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from workflow_scripts.common import partition_of


class StoreMismatch(ValueError):
    """A store that does not match what the caller expects (rows, ids, dimension, model)."""


class MissingKeys(KeyError):
    pass


def write_partition(directory: Path, keys: np.ndarray, manifest: dict, vectors=None, norms=None) -> dict:
    """Write keys/norms/manifest; dense vectors must already be in `directory/vectors.npy` when
    `vectors` is None (the embedding stage fills it batch by batch through open_memmap)."""
    directory = Path(directory)
    keys = np.asarray(keys, dtype=np.uint64)
    if len(keys) > 1 and not np.all(keys[1:] > keys[:-1]):
        raise StoreMismatch("store keys must be unique and sorted ascending")
    if isinstance(vectors, sp.spmatrix) or sp.issparse(vectors):
        csr = sp.csr_matrix(vectors, dtype=np.float32)
        np.save(directory / "data.npy", csr.data)
        np.save(directory / "indices.npy", csr.indices.astype(np.int32))
        np.save(directory / "indptr.npy", csr.indptr.astype(np.int64))
        norms = np.sqrt(np.asarray(csr.multiply(csr).sum(axis=1)).ravel()).astype(np.float32)
        manifest = {**manifest, "format": "csr", "dtype": "float32", "dim": int(csr.shape[1])}
    else:
        if vectors is not None:
            np.save(directory / "vectors.npy", vectors)
        stored = np.load(directory / "vectors.npy", mmap_mode="r")
        if norms is None:
            norms = np.sqrt(np.einsum("ij,ij->i", stored, stored, dtype=np.float64)).astype(np.float32)
        manifest = {**manifest, "format": "dense", "dtype": str(stored.dtype), "dim": int(stored.shape[1])}
    np.save(directory / "keys.npy", keys)
    np.save(directory / "norms.npy", np.asarray(norms, dtype=np.float32))
    manifest["rows"] = int(len(keys))
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


@dataclass
class Partition:
    directory: Path
    manifest: dict
    keys: np.ndarray
    norms: np.ndarray
    vectors: np.ndarray | None = None
    csr: sp.csr_matrix | None = None

    @classmethod
    def open(cls, directory) -> "Partition":
        directory = Path(directory)
        manifest = json.loads((directory / "manifest.json").read_text())
        keys = np.load(directory / "keys.npy", mmap_mode="r")
        norms = np.load(directory / "norms.npy", mmap_mode="r")
        part = cls(directory, manifest, keys, norms)
        if manifest["format"] == "dense":
            part.vectors = np.load(directory / "vectors.npy", mmap_mode="r")
            shape = part.vectors.shape
        else:
            data = np.load(directory / "data.npy", mmap_mode="r")
            indices = np.load(directory / "indices.npy", mmap_mode="r")
            indptr = np.load(directory / "indptr.npy", mmap_mode="r")
            part.csr = sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, manifest["dim"]), copy=False)
            shape = part.csr.shape
        rows = manifest["rows"]
        if not (len(keys) == len(norms) == shape[0] == rows) or shape[1] != manifest["dim"]:
            raise StoreMismatch(
                f"{directory}: manifest says {rows} rows x {manifest['dim']}, files hold keys {len(keys)}, "
                f"norms {len(norms)}, vectors {shape[0]} x {shape[1]}")
        return part

    def rows_of(self, keys: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(self.keys, keys)
        idx_clipped = np.minimum(idx, len(self.keys) - 1) if len(self.keys) else idx
        found = (idx < len(self.keys)) & (self.keys[idx_clipped] == keys) if len(self.keys) else np.zeros(len(keys), bool)
        if not np.all(found):
            missing = np.asarray(keys)[~found]
            raise MissingKeys(f"{self.directory}: {len(missing)} text key(s) not in the store, e.g. {int(missing[0])}; "
                              "the store does not match the shard it is used with (rerun its embedding job)")
        return idx_clipped


class VectorStore:
    """All partitions of one (model, scope): rows for any list of text keys, without loading the store."""

    def __init__(self, directories: list, model: str | None = None):
        parts = [Partition.open(d) for d in directories]
        if not parts:
            raise StoreMismatch("no store partitions given")
        n = parts[0].manifest["partitions"]
        by_index = {p.manifest["partition"]: p for p in parts}
        if sorted(by_index) != list(range(n)):
            raise StoreMismatch(f"expected partitions 0..{n - 1}, got {sorted(by_index)}")
        for p in parts:
            m = p.manifest
            for field in ("model", "dim", "partitions", "format", "scope"):
                if m[field] != parts[0].manifest[field]:
                    raise StoreMismatch(f"{p.directory}: {field} {m[field]!r} differs from "
                                        f"{parts[0].directory}: {parts[0].manifest[field]!r}")
            if model is not None and m["model"] != model:
                raise StoreMismatch(f"{p.directory}: store is for model {m['model']!r}, expected {model!r}")
            # every key must sit in the partition its hash assigns, or lookups would miss it
            if len(p.keys) and np.any(partition_of(p.keys[:1000], n) != m["partition"]):
                raise StoreMismatch(f"{p.directory}: keys do not belong to partition {m['partition']} of {n}")
        self.parts = [by_index[i] for i in range(n)]
        self.manifest = parts[0].manifest
        self.dim = self.manifest["dim"]
        self.sparse = self.manifest["format"] == "csr"

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
            norms[sel] = part.norms[rows]
            if self.sparse:
                blocks.append(part.csr[rows])
                order.append(sel)
            else:
                # sorted row order reads the memory map sequentially
                perm = np.argsort(rows, kind="stable")
                out[sel[perm]] = part.vectors[rows[perm]]
        if self.sparse:
            if not blocks:
                return sp.csr_matrix((0, self.dim), dtype=np.float32), norms
            stacked = sp.vstack(blocks, format="csr")
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
