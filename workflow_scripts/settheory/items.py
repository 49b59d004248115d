"""The items behind the set-theoretic criteria, for the disagreement pages
(workflow_scripts/disagreements.py): one item per kept operator sample (A, B, target T), its score
the model's mean cosine of T with its inputs, (cos(A, T) + cos(B, T)) / 2, from
settheory/<dataset>/<model>/measures.parquet, joined by op_id to the texts in
settheory/<dataset>/operators.parquet."""
from __future__ import annotations

import polars as pl

SCORE = "(cos(A, T) + cos(B, T)) / 2"


def item_files(results: str, config: dict, dataset: str, model: str) -> dict:
    return {"scores": f"{results}/settheory/{dataset}/{model}/measures.parquet",
            "operators": f"{results}/settheory/{dataset}/operators.parquet"}


def read_items(files: dict) -> pl.DataFrame:
    scores = pl.read_parquet(files["scores"], columns=["op_id", "cosine_at", "cosine_bt"])
    texts = pl.read_parquet(files["operators"], columns=["op_id", "operator", "variant", "a", "b", "t"])
    return (scores.join(texts, on="op_id", how="left")
            .select(pl.col("op_id").cast(pl.Utf8).alias("item_id"), "operator", "a", "b", "t",
                    ((pl.col("cosine_at") + pl.col("cosine_bt")) / 2).alias("score")))
