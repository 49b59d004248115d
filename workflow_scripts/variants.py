"""The variants file format shared by CSC's perturbation (csc/perturb.py writes it) and the TF-IDF
fit (tfidf_fit.py reads it): one row per variant of an original sentence, with the text keys the
vector stores are indexed by.
"""
from __future__ import annotations

import pyarrow as pa

KINDS = ("fuzz", "negation", "grammatical_negation")
# a variant of these kinds is its original's whitespace words, joined by single spaces, with one term
# inserted (csc.perturb.insertion_variants); the TF-IDF fit counts their terms from that
# (tfidf_fit.count_insertion_terms)
INSERTION_KINDS = KINDS[:2]
VARIANT_SCHEMA = pa.schema([
    ("original_id", pa.uint64()),
    ("variant_id", pa.uint64()),
    ("kind", pa.string()),
    ("position", pa.int32()),
    ("term", pa.string()),
    ("text", pa.string()),
    ("original_key", pa.uint64()),
    ("text_key", pa.uint64()),
])
