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


def read_items(files: dict) -> pl.DataFrame:
    scores = pl.read_parquet(files["scores"], columns=["original_id", "variant_id", "kind", "similarity"])
    variants = pl.read_parquet(f"{files['variants']}/*.parquet", columns=["variant_id", "term", "text"])
    originals = pl.read_parquet(f"{files['originals']}/*.parquet", columns=["sentence_id", "text"])
    return (scores.join(variants.rename({"text": "variant"}), on="variant_id", how="left")
            .join(originals.rename({"sentence_id": "original_id", "text": "original"}), on="original_id", how="left")
            .select(pl.col("variant_id").cast(pl.Utf8).alias("item_id"), "kind", "term", "original", "variant",
                    pl.col("similarity").alias("score")))
