"""Training data of the adapt stage: sentences for PT, (question, answer) pairs for FT, and digests.

PT reads the sentences of a configured corpus (`<results>/corpora/<corpus>/*.parquet`, column
`text`) or the documents of a retrieval set (`<results>/retrieval/sets/<set>/`, BEIR layout); FT
reads a retrieval set's questions and their relevant documents for one qrels split, and, when it
trains on them, the questions' wrong answers (the set's questions.parquet). Every list is
in a stable order (sorted by text, duplicates dropped), so the same inputs give the same batches.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import polars as pl

from workflow_scripts.common import stable_id
from workflow_scripts.shards import read_parquet


def digest(obj) -> str:
    """sha256 of the JSON of the training examples: the manifest's data digest."""
    return hashlib.sha256(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")).hexdigest()


def pt_sentences(data: dict, max_texts: int | None, seed: int) -> list[str]:
    if data["kind"] == "corpus":
        files = sorted(Path(data["path"]).glob("*.parquet"))
        if not files:
            raise FileNotFoundError(f"corpus {data['name']}: no Parquet files in {data['path']}")
        texts = pl.concat([read_parquet(f, columns=["text"]) for f in files])["text"].to_list()
    else:
        from workflow_scripts.beir import document_texts, read_set
        corpus, _, _ = read_set(data["path"])
        texts = document_texts(corpus)
    texts = sorted({t.strip() for t in texts if t and t.strip()})
    if max_texts is not None and len(texts) > max_texts:
        keys = np.array([stable_id("adapt-pt", seed, t) for t in texts], dtype=np.uint64)
        texts = sorted(np.asarray(texts, dtype=object)[np.argsort(keys, kind="stable")[:max_texts]].tolist())
    return texts


def ft_pairs(data: dict, split: str, negatives: str = "mined"):
    """(question, relevant document) pairs of the split, every document text (the corpus negatives
    are mined from), the wrong answers of each pair's question (None when `negatives` is `mined`:
    the set's questions.parquet is then not read), and counts. A qrels line with score <= 0 is not
    a positive. Questions with the same text share a pair, and their wrong answers (first seen first)."""
    from workflow_scripts.beir import document_texts, read_set
    corpus, queries, qrels = read_set(data["path"])
    if split not in qrels:
        raise ValueError(f"retrieval set {data['name']}: no qrels split {split!r} (has {sorted(qrels)})")
    rel = qrels[split].filter(pl.col("score") > 0)
    q = dict(zip(queries["_id"].to_list(), queries["text"].to_list()))
    d = dict(zip(corpus["_id"].to_list(), document_texts(corpus)))
    links = sorted((a, b) for a, b in zip(rel["query-id"].to_list(), rel["corpus-id"].to_list()) if q.get(a) and d.get(b))
    pairs = sorted({(q[a], d[b]) for a, b in links})
    docs = sorted(set(d.values()))
    counts = {"qrels": rel.height, "pairs": len(pairs), "questions": len({a for a, _ in pairs}), "documents": len(docs)}
    if negatives == "mined":
        return pairs, docs, None, counts
    wrong_of_question = question_wrong_answers(data, negatives)
    wrong_of_pair: dict[tuple[str, str], list[str]] = {pair: [] for pair in pairs}
    for a, b in links:
        merged = wrong_of_pair[(q[a], d[b])]
        merged += [w for w in wrong_of_question.get(a, []) if w not in merged]
    wrong = [wrong_of_pair[pair] for pair in pairs]
    counts["pairs_with_wrong_answers"] = sum(1 for w in wrong if w)
    counts["wrong_answers"] = sum(len(w) for w in wrong)
    return pairs, docs, wrong, counts


def question_wrong_answers(data: dict, negatives: str) -> dict[str, list[str]]:
    """question id -> its wrong answers, from the set's questions.parquet (sets.py writes the column)."""
    path = Path(data["path"]) / "questions.parquet"
    needs = (f"retrieval set {data['name']}: `ft.negatives: {negatives}` trains on the questions' wrong answers, "
             f"but {path}")
    if not path.exists():
        raise ValueError(f"{needs} does not exist (only 3gpp sets write it; TeleQnA questions have wrong answers). "
                         "Use `ft.negatives: mined` for this set")
    frame = pl.read_parquet(path)
    if "wrong_answers" not in frame.columns or "_id" not in frame.columns:
        raise ValueError(f"{needs} has no `wrong_answers` column (a set built before the column existed: rebuild it), "
                         "or use `ft.negatives: mined`")
    return {qid: [w for w in (wrong or []) if w] for qid, wrong in zip(frame["_id"].to_list(),
                                                                       frame["wrong_answers"].to_list())}
