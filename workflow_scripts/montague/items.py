"""The items behind the Montague shares, for the disagreement pages
(workflow_scripts/disagreements.py): one item per phrase (AN or AAN), its score the model's cosine
distance from the phrase to its noun, d(P, n), and its single-modifier test flag (`single_pass`,
null where undefined), from montague/<dataset>/<model>/distances.parquet, which holds the phrase."""
from __future__ import annotations

import polars as pl

SCORE = "d(phrase, noun)"


def item_files(results: str, config: dict, dataset: str, model: str) -> dict:
    return {"scores": f"{results}/montague/{dataset}/{model}/distances.parquet"}


def read_items(files: dict) -> pl.DataFrame:
    d = pl.read_parquet(files["scores"], columns=["phrase_id", "phrase", "kind", "key", "d_phrase_2", "d_phrase_3",
                                                 "single_pass"])
    # the noun is the last word: d_phrase_2 for AN, d_phrase_3 for AAN
    noun = pl.when(pl.col("kind") == "AN").then(pl.col("d_phrase_2")).otherwise(pl.col("d_phrase_3"))
    return d.select(pl.col("phrase_id").cast(pl.Utf8).alias("item_id"), "phrase", "kind", pl.col("key").alias("types"),
                    noun.alias("score"), pl.col("single_pass").alias("correct"))
