"""Family `precomputed`: vectors made outside the workflow, looked up by their text."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from workflow_scripts.encoders import Family, ModelUnavailable

if TYPE_CHECKING:  # annotations only: numpy is imported where it is used
    import numpy as np


class PrecomputedEncoder:
    """Vectors made outside the workflow (API models such as OpenAI's, or models that cannot run in
    its environment), looked up by the text they belong to. `vectors`: a .npy matrix (memory-mapped;
    `rows` names its rows: a .txt with one per line, or a .jsonl/.parquet with a `text` or `id`
    column) or a .parquet file with a list column `vector` beside `text` or `id`. `key: id` matches
    ids through `id_texts` (BEIR folders, or .jsonl files with `_id` and `text`). Texts match after
    whitespace normalisation. Checked: one dimension (and `dim` when given), finite values, the
    file's `sha256` when given, and coverage: a text of the partition without a vector stops the job
    with the count and an example (never a made-up vector)."""

    def __init__(self, spec: dict):
        import numpy as np
        import pyarrow.parquet as pq
        from workflow_scripts.common import text_key
        self._text_key = text_key
        path = Path(spec["vectors"])
        if spec.get("sha256") and spec["sha256"] != "unpinned":
            from workflow_scripts.digests import file_sha256
            digest = file_sha256(path)
            if digest != spec["sha256"].lower():
                raise ValueError(f"precomputed vectors {path}: sha256 {digest}, the config says {spec['sha256']}")
        key = spec.get("key", "text")
        if path.suffix == ".npy":
            self.vectors = np.load(path, mmap_mode="r")
            if self.vectors.ndim != 2:
                raise ValueError(f"precomputed vectors {path}: a matrix (rows x dims) is expected, not shape "
                                 f"{self.vectors.shape}")
            if not spec.get("rows"):
                raise ValueError(f"precomputed vectors {path}: a .npy file needs `rows` (the text or id of each row)")
            names = self._read_rows(Path(spec["rows"]), key)
        elif path.suffix == ".parquet":
            table = pq.read_table(path, columns=["vector", key])
            column = table.column("vector").combine_chunks()
            lengths = np.asarray(column.value_lengths())
            if len(lengths) and (lengths != lengths[0]).any():
                bad = int(np.flatnonzero(lengths != lengths[0])[0])
                raise ValueError(f"precomputed vectors {path}: row {bad} has {lengths[bad]} values, row 0 {lengths[0]}")
            flat = np.asarray(column.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
            self.vectors = flat.reshape(len(lengths), int(lengths[0]) if len(lengths) else 0)
            names = table.column(key).to_pylist()
        else:
            raise ValueError(f"precomputed vectors {path}: expected a .npy or .parquet file")
        if len(names) != len(self.vectors):
            raise ValueError(f"precomputed vectors {path}: {len(self.vectors)} vectors but {len(names)} row names")
        if key == "id":
            id_text = self._id_texts(spec.get("id_texts") or [])
            unknown = [n for n in names if str(n) not in id_text]
            if unknown:
                raise ValueError(f"precomputed vectors {path}: {len(unknown)} id(s) not found in id_texts, e.g. {unknown[0]!r}")
            names = [id_text[str(n)] for n in names]
        keys = np.fromiter((text_key(" ".join(str(t).split())) for t in names), dtype=np.uint64, count=len(names))
        order = np.argsort(keys, kind="stable")
        self.keys, self.rows = keys[order], order
        self.duplicates = int(len(keys) - len(np.unique(keys)))
        self.dim = int(self.vectors.shape[1])
        if spec.get("dim") and spec["dim"] != self.dim:
            raise ValueError(f"precomputed vectors {path}: {self.dim} dimensions, the config says dim {spec['dim']}")
        self.origin = (f"precomputed vectors {path} ({len(self.vectors)} rows x {self.dim}, keyed by {key}"
                       + (f", {self.duplicates} repeated" if self.duplicates else "") + ")")
        self.path = path

    @staticmethod
    def _read_rows(path: Path, key: str) -> list:
        if path.suffix == ".txt":
            return path.read_text(encoding="utf-8").splitlines()
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq
            return pq.read_table(path, columns=[key])[key].to_pylist()
        if path.suffix == ".jsonl":
            return [json.loads(line)[key] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        raise ValueError(f"precomputed rows {path}: expected .txt, .jsonl or .parquet")

    @staticmethod
    def _id_texts(sources: list) -> dict:
        """id -> text from BEIR folders (corpus.jsonl, queries.jsonl) or .jsonl files; an id naming
        two different texts is refused (corpus and query ids may collide in BEIR sets)."""
        files = []
        for src in map(Path, sources):
            files += [src / "corpus.jsonl", src / "queries.jsonl"] if src.is_dir() else [src]
        out: dict = {}
        for f in files:
            for line in f.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                obj = json.loads(line)
                ident, text = str(obj["_id"]), obj["text"]
                if out.setdefault(ident, text) != text:
                    raise ValueError(f"id_texts: id {ident!r} names two different texts ({f}); give each its own id")
        return out

    def _rows_of(self, texts: list[str]) -> np.ndarray:
        import numpy as np
        keys = np.fromiter((self._text_key(" ".join(t.split())) for t in texts), dtype=np.uint64, count=len(texts))
        idx = np.minimum(np.searchsorted(self.keys, keys), max(len(self.keys) - 1, 0))
        found = (self.keys[idx] == keys) if len(self.keys) else np.zeros(len(keys), bool)
        if not found.all():
            missing = [texts[i] for i in np.flatnonzero(~found)]
            raise ModelUnavailable(f"precomputed vectors {self.path}: {len(missing)} of {len(texts)} texts have no vector "
                                   f"(coverage), e.g. {missing[0]!r}; add them to the file or drop them from the set")
        return self.rows[idx]

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        import numpy as np
        self._rows_of(texts)  # the chunk's coverage, before any batch
        return np.zeros(len(texts), dtype=np.int64)

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        import numpy as np
        out = np.asarray(self.vectors[self._rows_of(texts)], dtype=np.float32)
        if not np.isfinite(out).all():
            raise ValueError(f"precomputed vectors {self.path}: non-finite values in the vector of "
                             f"{texts[int(np.flatnonzero(~np.isfinite(out).all(axis=1))[0])]!r}")
        return out



def load(spec: dict, device: str, model_file, job) -> PrecomputedEncoder:
    return PrecomputedEncoder(spec)


def local_files(spec: dict) -> list[Path] | None:
    paths = [Path(spec[k]) for k in ("vectors", "rows") if spec.get(k) and Path(spec[k]).is_file()]
    paths += [Path(p) for p in spec.get("id_texts") or [] if Path(p).exists()]
    return paths or None


FAMILY = Family(
    name="precomputed", load=load, modules=("pyarrow",), local_files=local_files,
    # nothing to time: its vectors are read, not computed
    estimable=False,
    requires={"required": ["vectors"],
              "x-expected": "`vectors`: a .npy (with `rows`) or .parquet file of vectors computed elsewhere"})
