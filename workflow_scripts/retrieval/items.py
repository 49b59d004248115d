"""The items behind the retrieval figures, for the disagreement pages
(workflow_scripts/disagreements.py): one item per evaluated question, its score the model's
reciprocal rank of the first relevant document within the retrieved top k (0 when none is there)
and `correct` = a relevant document ranked first, from retrieval/<dataset>/<model>/topk.parquet and
the set's qrels (every split: a question is in one), with the question's text and the first
relevant document's text (retrieval/sets/<dataset>/: queries.jsonl, corpus.jsonl)."""
from __future__ import annotations

import glob
import json

import polars as pl

SCORE = "reciprocal rank of the first relevant document (0: none in the top k)"


def item_files(results: str, config: dict, dataset: str, model: str) -> dict:
    return {"topk": f"{results}/retrieval/{dataset}/{model}/topk.parquet", "set": f"{results}/retrieval/sets/{dataset}"}


def _jsonl(path: str) -> pl.DataFrame:
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return pl.DataFrame({"id": [str(r["_id"]) for r in rows], "text": [r["text"] for r in rows]},
                        schema={"id": pl.Utf8, "text": pl.Utf8})


def read_items(files: dict) -> pl.DataFrame:
    topk = pl.read_parquet(files["topk"], columns=["query_id", "rank", "corpus_id"])
    qrels = pl.concat([pl.read_csv(p, separator="\t", schema_overrides={"query-id": pl.Utf8, "corpus-id": pl.Utf8})
                       for p in sorted(glob.glob(f"{files['set']}/qrels/*.tsv"))])
    qrels = qrels.filter(pl.col("score") > 0).select(pl.col("query-id").alias("query_id"),
                                                      pl.col("corpus-id").alias("corpus_id"))
    first = (topk.join(qrels, on=["query_id", "corpus_id"], how="semi")
             .group_by("query_id").agg(pl.col("rank").min().alias("rank")))
    relevant = qrels.group_by("query_id").agg(pl.col("corpus_id").sort().first())
    docs = _jsonl(f"{files['set']}/corpus.jsonl").rename({"id": "corpus_id", "text": "relevant"})
    queries = _jsonl(f"{files['set']}/queries.jsonl").rename({"id": "query_id", "text": "question"})
    items = (topk.select("query_id").unique().join(first, on="query_id", how="left")
             .join(queries, on="query_id", how="left").join(relevant, on="query_id", how="left")
             .join(docs, on="corpus_id", how="left"))
    rr = pl.when(pl.col("rank").is_null()).then(0.0).otherwise(1.0 / pl.col("rank").cast(pl.Float64))
    return items.select(pl.col("query_id").alias("item_id"), "question", "relevant", rr.alias("score"),
                        (pl.col("rank") == 1).fill_null(False).alias("correct"))
