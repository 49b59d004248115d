"""The questions of a retrieval set as a text set of their own (`retrieval.<dataset>.query`), for a
model that embeds questions apart from documents (a query template or prompt: the `query` role,
workflow_scripts/model_settings.py). Only such models' plans ask for it; the set's own texts
(`retrieval.<dataset>`, documents and questions) are unchanged.

The job of rules/retrieval.smk: `run_retrieval_query_texts` (retrieval_query_texts).
"""
from __future__ import annotations

from workflow_scripts import beir
from workflow_scripts.common import setup_logging
from workflow_scripts.texts import write_text_partitions


def write_query_texts(set_dir: str, out_files: list[str], log) -> dict:
    """Every question of the set (all splits: the search picks the evaluated ones by key)."""
    _, queries, _ = beir.read_set(set_dir)
    counts = write_text_partitions(queries["text"].to_list(), out_files)
    log.info("%s: %d questions written as their own text set (%s)", set_dir, queries.height, counts)
    return counts


# ---- the jobs of rules/retrieval.smk (workflow_scripts/jobs.py) ----
def run_retrieval_query_texts(job) -> None:
    write_query_texts(job.input.set, list(job.output.texts), setup_logging(name="retrieval"))
