"""The items behind the triplet accuracies, for the disagreement pages
(workflow_scripts/disagreements.py): one item per triplet (S, S+, S*), its score the model's margin
cos(S, S+) - cos(S, S*) and its `correct` flag from triplets/<dataset>/<model>/scores.parquet,
joined by `id` to the texts in triplets/<dataset>/triplets.parquet."""
from __future__ import annotations

import polars as pl

SCORE = "cos(S, S+) - cos(S, S*)"


def item_files(results: str, config: dict, dataset: str, model: str) -> dict:
    return {"scores": f"{results}/triplets/{dataset}/{model}/scores.parquet",
            "triplets": f"{results}/triplets/{dataset}/triplets.parquet"}


def read_items(files: dict) -> pl.DataFrame:
    scores = pl.read_parquet(files["scores"], columns=["id", "sim_s_splus", "sim_s_sstar", "correct"])
    texts = pl.read_parquet(files["triplets"], columns=["id", "s", "s_plus", "s_star"])
    return (scores.join(texts, on="id", how="left")
            .select(pl.col("id").cast(pl.Utf8).alias("item_id"), "s", "s_plus", "s_star",
                    (pl.col("sim_s_splus") - pl.col("sim_s_sstar")).alias("score"), "correct"))
