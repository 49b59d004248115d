"""Texts to embed: how every probe hands its texts to the embedding stage.

A probe writes the texts of one *text set* (a corpus's originals and variants, a probe dataset's
sentences) into `texts/<text set>/part-NNN.parquet`, hash-partitioned by text key so that the
embedding job of partition NNN reads only its file. Each file holds unique (text_key, text) rows.
The embedding stage turns each file into a vector-store partition; probes read the vectors back
through `vector_store.VectorStore` with the same keys (`common.text_key`). Reading them back
(`unique_rows`, `iter_chunks`): every text once, however many files hold it, chunk by chunk.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from workflow_scripts.common import atomic_path, partition_of, text_key
from workflow_scripts.shards import reading

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


def write_dataset(frame, out: str, texts: list[str], text_files: list[str], report: dict, report_out: str,
                  counts_key: str = "texts") -> dict:
    """A probe dataset's outputs, each atomic: its items (`frame`, Parquet), its text set (`texts`,
    write_text_partitions) and its build report (`report`, with the text set's counts under
    `counts_key`). Returns the report written."""
    from workflow_scripts.common import write_json
    with atomic_path(out) as tmp:
        frame.write_parquet(tmp, compression="zstd")
    report = {**report, counts_key: write_text_partitions(texts, text_files)}
    write_json(report_out, report)
    return report


def unique_rows(text_files: list[str]) -> tuple[list[np.ndarray], int]:
    """Per file, a mask of the rows that hold the first occurrence of their text key (the same text
    comes from several corpora and shards). Only the key column is read: 8 bytes per row."""
    keys = []
    for f in text_files:
        with reading(f):  # an unreadable file: an error naming it and the rule that wrote it
            keys.append(pq.read_table(f, columns=["text_key"])["text_key"].to_numpy())
    if not keys:
        return [], 0
    bounds = np.cumsum([0] + [len(k) for k in keys])
    all_keys = np.concatenate(keys)
    del keys  # one copy of the keys at a time
    _, first = np.unique(all_keys, return_index=True)
    mask = np.zeros(len(all_keys), dtype=bool)
    del all_keys
    mask[first] = True
    return [mask[a:b] for a, b in zip(bounds[:-1], bounds[1:])], len(first)


def iter_chunks(text_files: list[str], masks: list[np.ndarray], chunk_rows: int):
    """(keys, texts) of the unique rows, in file order, `chunk_rows` at a time."""
    keys_buf: list[np.ndarray] = []
    texts_buf: list[str] = []
    for path, mask in zip(text_files, masks):
        offset = 0
        with reading(path), pq.ParquetFile(path) as pf:
            for batch in pf.iter_batches(batch_size=chunk_rows, columns=["text_key", "text"]):
                sel = mask[offset:offset + batch.num_rows]
                offset += batch.num_rows
                if not sel.any():
                    continue
                batch = batch.filter(pa.array(sel))
                keys_buf.append(batch.column("text_key").to_numpy())
                texts_buf.extend(batch.column("text").to_pylist())
                while len(texts_buf) >= chunk_rows:
                    keys = np.concatenate(keys_buf)
                    yield keys[:chunk_rows], texts_buf[:chunk_rows]
                    keys_buf, texts_buf = [keys[chunk_rows:]], texts_buf[chunk_rows:]
    if texts_buf:
        yield np.concatenate(keys_buf), texts_buf
