"""Retrieval sets in BEIR's layout: how every retrieval set is read and written (the retrieval probe
builds and searches them; the adapt stage trains on them, the domain-shift probe takes texts from them).

A set is a folder (the layout of BEIR, Thakur et al. 2021, so users bring their own):
- `corpus.jsonl`: one JSON object a line, `_id`, `title`, `text` (other fields are kept out:
  BEIR's own `metadata` and ours are ignored on reading);
- `queries.jsonl`: `_id`, `text`;
- `qrels/{split}.tsv`: tab-separated with the header `query-id corpus-id score`; a pair is relevant
  when its score is > 0 (BEIR's TREC-COVID grades 0 as judged not relevant);
- `provenance.json` (ours): how the set was made (kind, inputs with sha256, settings, seed, counts).

What is embedded of a document is its `text` (`document_texts`; retrieval/search.py reads the same): a title
is kept in the set, not embedded.

`read_set` never stops on a bad line: a line that is not JSON, lacks `_id` or `text`, repeats an
id, or a qrels row that is malformed or names an unknown query or document is skipped and counted
in `stats` (reason -> {count, first line numbers}). `write_set` writes the whole folder beside its
final place and moves it there in one step (`common.atomic_path`): a folder that exists is complete.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import os
from pathlib import Path
from typing import Callable

import polars as pl

from workflow_scripts.common import atomic_path, write_json

CORPUS = "corpus.jsonl"
QUERIES = "queries.jsonl"
QRELS = "qrels"
PROVENANCE = "provenance.json"
QRELS_HEADER = ("query-id", "corpus-id", "score")
CORPUS_SCHEMA = {"_id": pl.String, "title": pl.String, "text": pl.String}
QUERY_SCHEMA = {"_id": pl.String, "text": pl.String}
QRELS_SCHEMA = {"query-id": pl.String, "corpus-id": pl.String, "score": pl.Int64}
N_EXAMPLES = 5


def _count(stats: dict | None, reason: str, where: str) -> None:
    if stats is None:
        return
    entry = stats.setdefault(reason, {"count": 0, "first": []})
    entry["count"] += 1
    if len(entry["first"]) < N_EXAMPLES:
        entry["first"].append(where)


def _open_text(path: Path):
    """A text file, gzip-compressed or not (detected from the content)."""
    raw = open(path, "rb")
    if raw.read(2) == b"\x1f\x8b":
        raw.seek(0)
        return io.TextIOWrapper(gzip.GzipFile(fileobj=raw), encoding="utf-8", errors="strict")
    raw.seek(0)
    return io.TextIOWrapper(raw, encoding="utf-8", errors="strict")


def _find(directory: Path, name: str) -> Path:
    """`name`, or `name.gz` (some BEIR mirrors compress the jsonl files)."""
    for candidate in (directory / name, directory / f"{name}.gz"):
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"{directory}: no {name} (a BEIR folder holds corpus.jsonl, queries.jsonl "
                            f"and qrels/<split>.tsv)")


def _as_id(value) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, str)):
        value = str(value).strip()
        return value or None
    return None


def read_jsonl(path: Path, fields: tuple[str, ...], stats: dict | None, label: str) -> list[dict]:
    """Rows of a BEIR jsonl file with the given fields; bad lines skipped and counted."""
    rows, seen = [], set()
    with _open_text(path) as f:
        number = 0
        while True:
            number += 1
            try:
                line = f.readline()
            except UnicodeDecodeError:
                _count(stats, f"{label}:undecodable", f"{path.name}:{number}")
                break  # the decoder's position is lost: the rest of the file cannot be read safely
            if not line:
                break
            if not line.strip():
                continue
            where = f"{path.name}:{number}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                _count(stats, f"{label}:bad_json", where)
                continue
            if not isinstance(obj, dict):
                _count(stats, f"{label}:bad_json", where)
                continue
            ident = _as_id(obj.get("_id"))
            text = obj.get("text")
            if ident is None or not isinstance(text, str):
                _count(stats, f"{label}:missing_field", where)
                continue
            if ident in seen:
                _count(stats, f"{label}:duplicate_id", where)
                continue
            seen.add(ident)
            row = {"_id": ident, "text": text}
            if "title" in fields:
                title = obj.get("title")
                row["title"] = title if isinstance(title, str) else ""
            rows.append(row)
    return rows


def read_qrels(path: Path, queries: set[str] | None, corpus: set[str] | None,
               stats: dict | None = None) -> pl.DataFrame:
    """One qrels file; rows naming unknown queries/documents (when the sets are given), malformed
    rows and repeated pairs are skipped and counted."""
    rows, seen = [], set()
    label = f"qrels/{path.stem}"
    with _open_text(path) as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        for number, row in enumerate(reader, 1):
            where = f"{path.name}:{number}"
            if not row or not any(cell.strip() for cell in row):
                continue
            if number == 1 and [c.strip() for c in row[:3]] == list(QRELS_HEADER):
                continue
            if len(row) != 3:
                _count(stats, f"{label}:bad_row", where)
                continue
            qid, cid, score = (c.strip() for c in row)
            try:
                value = int(score)
            except ValueError:
                try:
                    as_float = float(score)
                except ValueError:
                    as_float = None
                if as_float is None or not as_float.is_integer():
                    _count(stats, f"{label}:bad_score", where)
                    continue
                value = int(as_float)
            if not qid or not cid:
                _count(stats, f"{label}:bad_row", where)
                continue
            if queries is not None and qid not in queries:
                _count(stats, f"{label}:unknown_query", where)
                continue
            if corpus is not None and cid not in corpus:
                _count(stats, f"{label}:unknown_document", where)
                continue
            if (qid, cid) in seen:
                _count(stats, f"{label}:duplicate_pair", where)
                continue
            seen.add((qid, cid))
            rows.append({"query-id": qid, "corpus-id": cid, "score": value})
    return pl.DataFrame(rows, schema=QRELS_SCHEMA)


def find_set_root(directory: str | os.PathLike) -> Path:
    """The folder holding corpus.jsonl: `directory` itself, or its only sub-folder that has one
    (BEIR's zips unpack to `<name>/corpus.jsonl`)."""
    directory = Path(directory)
    if any((directory / n).exists() for n in (CORPUS, CORPUS + ".gz")):
        return directory
    found = sorted({p.parent for pattern in (CORPUS, CORPUS + ".gz") for p in directory.rglob(pattern)})
    if len(found) == 1:
        return found[0]
    if not found:
        raise FileNotFoundError(f"{directory}: no {CORPUS} in it or below it")
    raise ValueError(f"{directory}: several BEIR folders below it ({', '.join(map(str, found))}); point at one")


def read_set(directory: str | os.PathLike, stats: dict | None = None
             ) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, pl.DataFrame]]:
    """(corpus[_id, title, text], queries[_id, text], {split: qrels[query-id, corpus-id, score]}).

    Splits are the files under qrels/ (`train`, `dev`, `test`, ...). Bad lines are skipped and
    counted into `stats` when given (see the module docstring)."""
    root = find_set_root(directory)
    corpus_rows = read_jsonl(_find(root, CORPUS), ("_id", "title", "text"), stats, "corpus")
    query_rows = read_jsonl(_find(root, QUERIES), ("_id", "text"), stats, "queries")
    corpus = pl.DataFrame(corpus_rows, schema=CORPUS_SCHEMA).select("_id", "title", "text")
    queries = pl.DataFrame(query_rows, schema=QUERY_SCHEMA)
    qdir = root / QRELS
    if not qdir.is_dir():
        raise FileNotFoundError(f"{root}: no {QRELS}/ folder (BEIR: qrels/<split>.tsv)")
    files = sorted(p for p in qdir.iterdir() if p.name.endswith((".tsv", ".tsv.gz")))
    if not files:
        raise FileNotFoundError(f"{qdir}: no <split>.tsv file")
    qset, cset = set(queries["_id"].to_list()), set(corpus["_id"].to_list())
    qrels = {p.name.removesuffix(".gz").removesuffix(".tsv"): read_qrels(p, qset, cset, stats) for p in files}
    return corpus, queries, qrels


def read_provenance(directory: str | os.PathLike) -> dict:
    path = Path(directory) / PROVENANCE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def document_texts(corpus: pl.DataFrame) -> list[str]:
    """The text embedded for each document, in corpus order: its `text` (a title is kept in the
    set, not embedded; search.document_text reads the same). The probe looks the vectors up by
    `common.text_key` of these strings."""
    return corpus["text"].to_list()


def _write_jsonl(path: Path, frame: pl.DataFrame, columns: tuple[str, ...], extra: list[dict] | None = None) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        rows = frame.select(columns).iter_rows()
        for i, row in enumerate(rows):
            obj = dict(zip(columns, row))
            if extra is not None and extra[i]:
                obj["metadata"] = extra[i]
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")


def check_set(corpus: pl.DataFrame, queries: pl.DataFrame, qrels: dict[str, pl.DataFrame]) -> None:
    """Refuse a set that would read back differently: repeated or empty ids, qrels naming unknown
    ids, a split name that is not a plain file name."""
    for name, frame in (("corpus", corpus), ("queries", queries)):
        ids = frame["_id"]
        if ids.null_count() or (ids.str.len_chars() == 0).any():
            raise ValueError(f"{name}: empty _id")
        if ids.n_unique() != frame.height:
            raise ValueError(f"{name}: repeated _id")
        if ids.str.contains(r"[\t\r\n]").any():
            raise ValueError(f"{name}: an _id with a tab or line break (qrels are tab-separated lines)")
        if frame["text"].null_count():
            raise ValueError(f"{name}: missing text")
    qset, cset = set(queries["_id"].to_list()), set(corpus["_id"].to_list())
    for split, frame in qrels.items():
        if not split or "/" in split or split.startswith("."):
            raise ValueError(f"bad qrels split name {split!r}")
        if not set(frame["query-id"].to_list()) <= qset:
            raise ValueError(f"qrels/{split}: query ids that are not in queries")
        if not set(frame["corpus-id"].to_list()) <= cset:
            raise ValueError(f"qrels/{split}: corpus ids that are not in corpus")


def write_set(directory: str | os.PathLike, corpus: pl.DataFrame, queries: pl.DataFrame,
              qrels: dict[str, pl.DataFrame], provenance: dict,
              extras: Callable[[Path], None] | None = None,
              corpus_metadata: list[dict] | None = None) -> Path:
    """Write a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv, provenance.json) so
    that it appears at `directory` all at once. `extras(tmp_dir)` may add files of its own inside
    the same atomic step; `corpus_metadata` (one dict per document) goes into corpus.jsonl as each
    line's `metadata` (BEIR readers ignore it)."""
    check_set(corpus, queries, qrels)
    if "title" not in corpus.columns:
        corpus = corpus.with_columns(pl.lit("").alias("title"))
    corpus = corpus.with_columns(pl.col("title").fill_null(""))
    with atomic_path(directory, is_dir=True) as tmp:
        _write_jsonl(tmp / CORPUS, corpus, ("_id", "title", "text"), corpus_metadata)
        _write_jsonl(tmp / QUERIES, queries, ("_id", "text"))
        (tmp / QRELS).mkdir()
        for split, frame in sorted(qrels.items()):
            with open(tmp / QRELS / f"{split}.tsv", "w", encoding="utf-8", newline="\n") as f:
                f.write("\t".join(QRELS_HEADER) + "\n")
                for qid, cid, score in frame.select(QRELS_HEADER).iter_rows():
                    f.write(f"{qid}\t{cid}\t{int(score)}\n")
        write_json(tmp / PROVENANCE, provenance)
        if extras is not None:
            extras(tmp)
    return Path(directory)
