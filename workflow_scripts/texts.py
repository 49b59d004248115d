"""Texts to embed: how every probe hands its texts to the embedding stage.

A probe writes the texts of one *text set* (a corpus's originals and variants, a probe dataset's
sentences) into `texts/<text set>/part-NNN.parquet`, hash-partitioned by text key so that the
embedding job of partition NNN reads only its file. Each file holds unique (text_key, text) rows.
The embedding stage turns each file into a vector-store partition; probes read the vectors back
through `vector_store.VectorStore` with the same keys (`common.text_key`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from workflow_scripts.common import atomic_path, partition_of, text_key

TEXT_SCHEMA = pa.schema([("text_key", pa.uint64()), ("text", pa.string())])


def text_keys(texts) -> np.ndarray:
    """uint64 store key of each text."""
    return np.fromiter((text_key(t) for t in texts), dtype=np.uint64, count=len(texts))


def write_text_partitions(texts, out_files: list) -> dict:
    """Write the unique texts among `texts` into one Parquet file per partition (len(out_files)
    partitions), first occurrence order kept; each file appears atomically. Returns counts."""
    unique = list(dict.fromkeys(t for t in texts if t is not None))
    keys = text_keys(unique)
    which = partition_of(keys, len(out_files)) if len(keys) else np.zeros(0, dtype=np.int64)
    for part, path in enumerate(out_files):
        sel = np.flatnonzero(which == part)
        table = pa.table({"text_key": pa.array(keys[sel], pa.uint64()),
                          "text": pa.array([unique[i] for i in sel], pa.string())}, schema=TEXT_SCHEMA)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp, compression="zstd")
    return {"texts": len(texts), "unique_texts": len(unique), "partitions": len(out_files)}
