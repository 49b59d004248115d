"""Domain-shift probe, build: a dataset's domain-specific and domain-agnostic texts (methods.md §4).

A dataset names sources for each group: `specific` (e.g. the 3GPP sentences and questions of a
retrieval set) and `agnostic` (e.g. the English side of a bitext, MSRP or Tatoeba sentences). A
source is one of
  {retrieval: <set>, parts: [documents, queries]}  a built retrieval set (BEIR layout)
  {corpus: <corpus>}                               a configured corpus's sentences
  {file: <path>, column: <n>}                      a text file: one text a line, or the n-th
                                                   tab-separated field (bitext, Tatoeba TSV)
Each group is whitespace-normalised, deduplicated, then capped at `max_texts` by a seeded sample
(stable ids of the texts, so the same config gives the same sample). A text found in both groups
is dropped from both (it would be a similarity of 1 between domains) and counted. Bad lines (no
such field, undecodable, empty) are counted, never fatal.

Outputs: texts.parquet (text_key, text, group, source) and the text set `domain_shift.<dataset>`
(text partitions for the embedding stage), and a report with the counts.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl

from workflow_scripts.common import setup_logging, stable_id
from workflow_scripts.texts import text_keys, write_dataset

GROUPS = ("specific", "agnostic")


def _norm(text) -> str:
    return " ".join(str(text).split()) if text is not None else ""


def source_label(src: dict) -> str:
    if "retrieval" in src:
        return f"retrieval:{src['retrieval']}:{'+'.join(src.get('parts', ['documents', 'queries']))}"
    if "corpus" in src:
        return f"corpus:{src['corpus']}"
    return f"file:{Path(src['file']).name}" + (f":{src['column']}" if src.get("column") is not None else "")


def read_source(src: dict, paths: dict, counts: Counter) -> list[str]:
    """The texts of one source; `paths` maps the source label to its local file or folder."""
    label = source_label(src)
    where = paths[label]
    if "retrieval" in src:
        from workflow_scripts.beir import document_texts, read_set
        corpus, queries, _ = read_set(where)
        texts = []
        if "documents" in src.get("parts", ["documents", "queries"]):
            texts += document_texts(corpus)
        if "queries" in src.get("parts", ["documents", "queries"]):
            texts += queries["text"].to_list()
        return texts
    if "corpus" in src:
        files = sorted(Path(where).glob("*.parquet"))
        return pl.concat([pl.read_parquet(f, columns=["text"]) for f in files])["text"].to_list() if files else []
    texts, column = [], src.get("column")
    with open(where, "rb") as f:
        for raw in f:
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                counts[f"{label}:undecodable"] += 1
                continue
            if column is not None:
                fields = line.split("\t")
                if len(fields) <= column:
                    counts[f"{label}:missing_field"] += 1
                    continue
                line = fields[column]
            texts.append(line)
    return texts


def build(dataset: str, spec: dict, paths: dict, seed: int) -> tuple[pl.DataFrame, dict]:
    counts: Counter = Counter()
    groups = {}
    for group in GROUPS:
        seen: dict[str, str] = {}
        for src in spec[group]:
            label = source_label(src)
            for text in read_source(src, paths, counts):
                text = _norm(text)
                if not text:
                    counts[f"{label}:empty"] += 1
                    continue
                if text in seen:
                    counts[f"{group}:duplicate"] += 1
                    continue
                seen[text] = label
        groups[group] = seen
    shared = set(groups["specific"]) & set(groups["agnostic"])
    counts["in_both_groups_dropped"] = len(shared)
    rows = []
    for group in GROUPS:
        texts = sorted(t for t in groups[group] if t not in shared)
        counts[f"{group}:available"] = len(texts)
        cap = spec.get("max_texts")
        if cap is not None and len(texts) > cap:
            order = np.argsort(np.array([stable_id("domain_shift", seed, dataset, group, t) for t in texts],
                                        dtype=np.uint64), kind="stable")
            texts = sorted(texts[i] for i in order[:cap])
        rows += [(t, group, groups[group][t]) for t in texts]
    frame = pl.DataFrame({"text_key": pl.Series(text_keys([r[0] for r in rows]), dtype=pl.UInt64),
                          "text": [r[0] for r in rows], "group": [r[1] for r in rows], "source": [r[2] for r in rows]})
    report = {"dataset": dataset, "texts": {g: int((frame["group"] == g).sum()) for g in GROUPS},
              "counts": dict(sorted(counts.items())), "max_texts": spec.get("max_texts"), "seed": seed,
              "sources": {g: [source_label(s) for s in spec[g]] for g in GROUPS}}
    for g in GROUPS:
        if report["texts"][g] < 2:
            raise ValueError(f"domain_shift dataset {dataset}: group {g!r} has {report['texts'][g]} text(s); "
                             "at least 2 are needed for a similarity distribution")
    return frame, report


# ---- the jobs of rules/domain_shift.smk (workflow_scripts/jobs.py) ----
def run_domain_shift_build(job) -> None:
    dataset = job.wildcards.dataset
    frame, report = build(dataset, job.params.spec, job.params.paths, job.params.seed)
    write_dataset(frame, job.output.texts, frame["text"].to_list(), list(job.output.parts), report, job.output.report,
                  counts_key="partitions")
    setup_logging(name="domain_shift").info("%s: %s texts (%s)", dataset, report["texts"], report["counts"])
