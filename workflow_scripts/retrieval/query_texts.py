"""The questions of a retrieval set as a text set of their own (`retrieval.<dataset>.query`), for a
model that embeds questions apart from documents (a query template or prompt: the `query` role,
workflow_scripts/model_settings.py). Only such models' plans ask for it; the set's own texts
(`retrieval.<dataset>`, documents and questions) are unchanged.

  python -m workflow_scripts.retrieval.query_texts --set DIR --texts T0.parquet T1.parquet ...
"""
from __future__ import annotations

import argparse
import sys

from workflow_scripts import beir
from workflow_scripts.common import setup_logging
from workflow_scripts.texts import write_text_partitions


def write_query_texts(set_dir: str, out_files: list[str], log) -> dict:
    """Every question of the set (all splits: the search picks the evaluated ones by key)."""
    _, queries, _ = beir.read_set(set_dir)
    counts = write_text_partitions(queries["text"].to_list(), out_files)
    log.info("%s: %d questions written as their own text set (%s)", set_dir, queries.height, counts)
    return counts


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", required=True, help="the retrieval set's directory (BEIR layout)")
    ap.add_argument("--texts", nargs="+", required=True, help="text partition files, one per partition")
    ap.add_argument("--log")
    args = ap.parse_args(argv)
    write_query_texts(args.set, args.texts, setup_logging(args.log, "retrieval"))


if __name__ == "__main__":
    main(sys.argv[1:])
