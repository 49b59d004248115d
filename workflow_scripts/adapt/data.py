"""Training data of the adapt stage: sentences for PT, (question, answer) pairs for FT, and digests.

PT reads the sentences of a configured corpus (`<results>/corpora/<corpus>/*.parquet`, column
`text`) or the documents of a retrieval set (`<results>/retrieval/sets/<set>/`, BEIR layout); FT
reads a retrieval set's questions and their relevant documents for one qrels split. Every list is
in a stable order (sorted by text, duplicates dropped), so the same inputs give the same batches.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import polars as pl

from workflow_scripts.common import stable_id


def digest(obj) -> str:
    """sha256 of the JSON of the training examples: the manifest's data digest."""
    return hashlib.sha256(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")).hexdigest()


def pt_sentences(data: dict, max_texts: int | None, seed: int) -> list[str]:
    if data["kind"] == "corpus":
        files = sorted(Path(data["path"]).glob("*.parquet"))
        if not files:
            raise FileNotFoundError(f"corpus {data['name']}: no Parquet files in {data['path']}")
        texts = pl.concat([pl.read_parquet(f, columns=["text"]) for f in files])["text"].to_list()
    else:
        from workflow_scripts.retrieval.beir import document_texts, read_set
        corpus, _, _ = read_set(data["path"])
        texts = document_texts(corpus)
    texts = sorted({t.strip() for t in texts if t and t.strip()})
    if max_texts is not None and len(texts) > max_texts:
        keys = np.array([stable_id("adapt-pt", seed, t) for t in texts], dtype=np.uint64)
        texts = sorted(np.asarray(texts, dtype=object)[np.argsort(keys, kind="stable")[:max_texts]].tolist())
    return texts


def ft_pairs(data: dict, split: str) -> tuple[list[tuple[str, str]], list[str], dict]:
    """(question, relevant document) pairs of the split, every document text (the corpus negatives
    are mined from), and counts. A qrels line with score <= 0 is not a positive."""
    from workflow_scripts.retrieval.beir import document_texts, read_set
    corpus, queries, qrels = read_set(data["path"])
    if split not in qrels:
        raise ValueError(f"retrieval set {data['name']}: no qrels split {split!r} (has {sorted(qrels)})")
    rel = qrels[split].filter(pl.col("score") > 0)
    q = dict(zip(queries["_id"].to_list(), queries["text"].to_list()))
    d = dict(zip(corpus["_id"].to_list(), document_texts(corpus)))
    pairs = sorted({(q[a], d[b]) for a, b in zip(rel["query-id"].to_list(), rel["corpus-id"].to_list())
                    if q.get(a) and d.get(b)})
    docs = sorted(set(d.values()))
    counts = {"qrels": rel.height, "pairs": len(pairs), "questions": len({a for a, _ in pairs}), "documents": len(docs)}
    return pairs, docs, counts
