"""The items behind CSC's numbers, for the disagreement pages (workflow_scripts/disagreements.py):
one item per variant, its score the model's cosine(original, variant) from
csc/<corpus>/<model>/similarities.parquet, joined to the variant's text (perturbations/<corpus>/)
and its original's (corpora/<corpus>/) by variant_id and original_id = sentence_id."""
from __future__ import annotations

import polars as pl

SCORE = "cosine(original, variant)"


def item_files(results: str, config: dict, dataset: str, model: str) -> dict:
    return {"scores": f"{results}/csc/{dataset}/{model}/similarities.parquet",
            "variants": f"{results}/perturbations/{dataset}", "originals": f"{results}/corpora/{dataset}"}


def read_scores(files: dict) -> pl.DataFrame:
    """item_id (the variant id, an integer: 8 bytes, not a string) and score of every variant, no
    texts (disagreements.read_scores)."""
    return (pl.scan_parquet(files["scores"])
            .select(pl.col("variant_id").alias("item_id"), pl.col("similarity").alias("score"))
            .collect())


def read_items_of(files: dict, ids: list[str] | None) -> pl.DataFrame:
    """The items `ids` (all where None) with their texts; the texts of the others are never read
    whole: the scans are filtered before they are collected."""
    scores = pl.scan_parquet(files["scores"]).select("original_id", "variant_id", "kind", "similarity")
    variants = pl.scan_parquet(f"{files['variants']}/*.parquet").select("variant_id", "term", "text")
    if ids is not None:
        wanted = pl.Series([int(i) for i in ids], dtype=pl.UInt64)
        scores = scores.filter(pl.col("variant_id").cast(pl.UInt64).is_in(wanted.implode()))
        variants = variants.filter(pl.col("variant_id").cast(pl.UInt64).is_in(wanted.implode()))
    scores = scores.collect()
    originals = pl.scan_parquet(f"{files['originals']}/*.parquet").select("sentence_id", "text")
    if ids is not None:
        originals = originals.filter(pl.col("sentence_id").is_in(scores["original_id"].implode()))
    return (scores.join(variants.collect().rename({"text": "variant"}), on="variant_id", how="left")
            .join(originals.collect().rename({"sentence_id": "original_id", "text": "original"}),
                  on="original_id", how="left")
            .select(pl.col("variant_id").cast(pl.Utf8).alias("item_id"), "kind", "term", "original", "variant",
                    pl.col("similarity").alias("score")))


def read_items(files: dict) -> pl.DataFrame:
    return read_items_of(files, None)
