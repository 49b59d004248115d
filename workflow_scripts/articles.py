"""Shared stage, articles: news-article releases -> Parquet shards of articles with their sentences.

A collection is named under the config's top-level `articles:` section, e.g.
  articles:
    cnn_dm: {format: hf, path: ../shared/data/cnn_dailymail/cnn_dailymail_sample.jsonl}
    cnn_stories: {format: story, url: https://…/cnn_stories.tgz, sha256: <64 hex>}
Formats (the release formats users have of CNN/DailyMail):
- `story`: the original release, one `<id>.story` file per article: the article's paragraphs, one
  per line, then `@highlight` blocks (the line after each `@highlight` is one highlight). The input is
  a directory (searched recursively for *.story), one .story file, or a tar archive of them (the
  release's cnn_stories.tgz / dailymail_stories.tgz; gzip/bzip2/xz detected from content). The id is
  the file name without `.story` (the SHA1 of the URL: the Hugging Face `id` of the same article).
- `hf`: the Hugging Face `cnn_dailymail` 3.0.0 layout, columns `id`, `article`, `highlights`, as
  Parquet, CSV (header line, quoted cells) or JSON Lines (one object a line). Which of the three is
  decided from the content (Parquet's `PAR1` magic; a first `{` means JSON Lines; else CSV), or set by
  `file_type`. Gzip is detected from the content, whatever the file name.
Output: `<out>/part-NNNNN.parquet` shards of at most `shard_rows` articles (default 10,000), columns
  article_id  uint64, common.stable_id("article", id): the same article gets the same id from the
              story files and from the Hugging Face release, on every machine
  doc_id      the release's id string
  article     the article text, whitespace-normalised per paragraph, paragraphs joined by "\\n"
  highlights  the highlights, one per line
  sentences   list<string>: the article's sentences, NLTK punkt (`language`, default english) per
              paragraph (a sentence never spans two paragraphs), whitespace-normalised
  n_sentences int32
and `report.json` (also written to `report_path`): records read, articles written, sentences, and the
records skipped per reason with the first five examples: `undecodable` (not UTF-8), `malformed`
(a JSON line that is not an object, a CSV record with another number of fields than the header),
`missing_field` (no id or no article), `empty` (no text after whitespace normalisation),
`control_char` (NUL, ESC or another non-whitespace control character), `too_long` (over
`max_chars`, default 100,000 characters), `duplicate_id` (an id seen before: the first is kept).
Articles without highlights are kept and counted (`without_highlights`). A file that ends early or is
corrupt stops the job with an error naming it; nothing is written. A Parquet file without the three
columns stops it too (a file problem, not a record problem).

The job of rules/articles.smk: run_articles.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import lzma
import re
import tarfile
import zlib
from collections import Counter
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from workflow_scripts.common import atomic_path, setup_logging, stable_id, write_json
from workflow_scripts.ingest import BadRecord, checked_text, normalise, open_binary
from workflow_scripts.shards import reading

FORMATS = ("story", "hf")
FILE_TYPES = ("parquet", "csv", "jsonl")
DEFAULT_SHARD_ROWS = 10_000
DEFAULT_MAX_CHARS = 100_000  # the longest CNN/DM article is about 50,000 characters
HF_COLUMNS = ("id", "article", "highlights")
EXAMPLES_PER_REASON = 5
SCHEMA = pa.schema([
    ("article_id", pa.uint64()),
    ("doc_id", pa.string()),
    ("article", pa.string()),
    ("highlights", pa.string()),
    ("sentences", pa.list_(pa.string())),
    ("n_sentences", pa.int32()),
])
# unreadable compressed input (gzip, bzip2, xz inside tar archives too)
READ_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile, OSError, lzma.LZMAError, tarfile.TarError)
CSV_FIELD_LIMIT = 1 << 26  # csv's default 131,072 characters is shorter than some articles


def article_id(doc_id: str) -> int:
    return stable_id("article", doc_id)


# ---- sentence splitting ------------------------------------------------------------------------

class SentenceSplitter:
    """NLTK punkt (the `punkt_tab` package) per paragraph."""

    def __init__(self, language: str = "english"):
        from nltk.tokenize import PunktTokenizer
        try:
            self.punkt = PunktTokenizer(language)
        except LookupError as err:
            raise LookupError(f"NLTK's punkt_tab data for {language!r} was not found (NLTK_DATA="
                              f"{__import__('os').environ.get('NLTK_DATA', '')!r}); the workflow fetches it "
                              "when `nltk_download: auto` and the NLTK server answers, or point NLTK_DATA at a "
                              "folder that holds tokenizers/punkt_tab") from err

    def __call__(self, paragraphs: list[str]) -> list[str]:
        out = []
        for paragraph in paragraphs:
            out += [s for s in (normalise(t) for t in self.punkt.tokenize(paragraph)) if s]
        return out


# ---- readers: each yields (position, record dict | BadRecord) ----------------------------------

def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadRecord("undecodable", f"byte {err.start}") from None


def parse_story(text: str) -> tuple[list[str], list[str]]:
    """(paragraphs, highlights) of a .story file: paragraphs until the first `@highlight`, then the
    first non-empty line after each `@highlight`."""
    paragraphs, highlights = [], []
    lines = iter(text.splitlines())
    for line in lines:
        if line.strip() == "@highlight":
            break
        if line.strip():
            paragraphs.append(line)
    else:
        return paragraphs, highlights
    expecting = True
    for line in lines:
        if line.strip() == "@highlight":
            expecting = True
        elif line.strip() and expecting:
            highlights.append(line)
            expecting = False
    return paragraphs, highlights


def read_stories(path: str) -> Iterator[tuple[str, dict | BadRecord]]:
    """A directory of .story files, one .story file, or a tar archive of them."""
    p = Path(path)

    def one(name: str, raw: bytes):
        try:
            paragraphs, highlights = parse_story(_decode(raw))
        except BadRecord as bad:
            return name, bad
        return name, {"id": Path(name).name.removesuffix(".story"), "paragraphs": paragraphs,
                      "highlights": highlights}

    if p.is_dir():
        for f in sorted(p.rglob("*.story")):
            yield one(str(f.relative_to(p)), f.read_bytes())
    elif tarfile.is_tarfile(p):
        with tarfile.open(p, mode="r:*") as tar:  # compression detected from the content
            for member in tar:
                if member.isfile() and member.name.endswith(".story"):
                    yield one(member.name, tar.extractfile(member).read())
    else:
        with open_binary(p) as f:
            yield one(p.name, f.read())


def detect_file_type(path: str) -> str:
    with open_binary(path) as f:
        head = f.read(4096)
    if head.startswith(b"PAR1"):
        return "parquet"
    return "jsonl" if head.lstrip().startswith(b"{") else "csv"


def _hf_record(obj: dict) -> dict | BadRecord:
    article = obj.get("article")
    doc_id = obj.get("id")
    if doc_id is None or article is None or (isinstance(doc_id, str) and not doc_id.strip()):
        missing = [k for k in ("id", "article") if obj.get(k) is None or not str(obj.get(k)).strip()]
        return BadRecord("missing_field", ", ".join(missing))
    if not isinstance(article, str):
        return BadRecord("malformed", f"article is {type(article).__name__}, not text")
    highlights = obj.get("highlights") or ""
    return {"id": str(doc_id).strip(), "paragraphs": article.splitlines(),
            "highlights": [h for h in str(highlights).splitlines() if h.strip()]}


def read_jsonl(path: str) -> Iterator[tuple[str, dict | BadRecord]]:
    with open_binary(path) as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(_decode(raw))
            except BadRecord as bad:
                yield f"line {lineno}", bad
                continue
            except json.JSONDecodeError as err:
                yield f"line {lineno}", BadRecord("malformed", f"not JSON: {err.msg} at column {err.colno}")
                continue
            if not isinstance(obj, dict):
                yield f"line {lineno}", BadRecord("malformed", f"a JSON {type(obj).__name__}, not an object")
                continue
            yield f"line {lineno}", _hf_record(obj)


def read_csv(path: str) -> Iterator[tuple[str, dict | BadRecord]]:
    csv.field_size_limit(CSV_FIELD_LIMIT)
    with open_binary(path) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline="")
        reader = csv.reader(text)
        header = next(reader, None)
        if header is None:
            return
        header = [h.strip().lstrip("\ufeff") for h in header]
        missing = [c for c in ("id", "article") if c not in header]
        if missing:
            raise ValueError(f"{path}: the CSV header {header} lacks column(s) {missing}; expected the Hugging Face "
                             f"cnn_dailymail layout {list(HF_COLUMNS)}")
        for row in reader:
            where = f"record {reader.line_num}"
            if len(row) != len(header):
                yield where, BadRecord("malformed", f"{len(row)} fields, the header has {len(header)}")
                continue
            if any("\udc80" <= ch <= "\udcff" for cell in row for ch in cell):
                yield where, BadRecord("undecodable", "not UTF-8")
                continue
            yield where, _hf_record(dict(zip(header, row)))


def read_parquet(path: str) -> Iterator[tuple[str, dict | BadRecord]]:
    with open_binary(path) as f:
        source = f if isinstance(f, io.BufferedReader) else pa.BufferReader(f.read())
        pf = pq.ParquetFile(source)
        names = pf.schema_arrow.names
        missing = [c for c in ("id", "article") if c not in names]
        if missing:
            raise ValueError(f"{path}: the Parquet file lacks column(s) {missing} (has {names}); expected the "
                             f"Hugging Face cnn_dailymail layout {list(HF_COLUMNS)}")
        columns = [c for c in HF_COLUMNS if c in names]
        row = 0
        for batch in pf.iter_batches(columns=columns, batch_size=2000):
            for obj in batch.to_pylist():
                row += 1
                yield f"row {row}", _hf_record(obj)


def records(spec: dict, path: str) -> Iterator[tuple[str, dict | BadRecord]]:
    if spec["format"] == "story":
        return read_stories(path)
    if spec["format"] != "hf":
        raise ValueError(f"unknown articles format {spec['format']!r}; expected one of {', '.join(FORMATS)}")
    file_type = spec.get("file_type") or detect_file_type(path)
    return {"parquet": read_parquet, "csv": read_csv, "jsonl": read_jsonl}[file_type](path)


# ---- the stage ---------------------------------------------------------------------------------

def checked_article(rec: dict, max_chars: int) -> tuple[list[str], str]:
    """(paragraphs, text) whitespace-normalised, or BadRecord raised."""
    paragraphs = [p for p in (normalise(x) for x in rec["paragraphs"]) if p]
    return paragraphs, checked_text("\n".join(paragraphs), max_chars)


class ShardWriter:
    def __init__(self, out_dir: Path, shard_rows: int):
        self.out_dir, self.shard_rows = out_dir, shard_rows
        self.rows: list[dict] = []
        self.shards: list[dict] = []

    def add(self, row: dict) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.shard_rows:
            self.flush()

    def flush(self) -> None:
        if not self.rows and self.shards:
            return
        name = f"part-{len(self.shards):05d}.parquet"
        table = pa.Table.from_pylist(self.rows, schema=SCHEMA)
        pq.write_table(table, self.out_dir / name, compression="zstd")
        self.shards.append({"file": name, "rows": len(self.rows)})
        self.rows = []


def build(name: str, spec: dict, path: str, out_dir: str, log, report_path: str | None = None,
          splitter: SentenceSplitter | None = None) -> dict:
    """Read one article collection into shards under `out_dir` (atomically) and return its report."""
    splitter = splitter or SentenceSplitter(spec.get("language", "english"))
    max_chars = spec.get("max_chars", DEFAULT_MAX_CHARS)
    bad, examples, seen = Counter(), {}, set()
    n_records = n_articles = n_sentences = without_highlights = 0
    where = "the start"
    with atomic_path(out_dir, is_dir=True) as tmp:
        writer = ShardWriter(tmp, spec.get("shard_rows", DEFAULT_SHARD_ROWS))
        try:
            for where, rec in records(spec, path):
                n_records += 1
                try:
                    if isinstance(rec, BadRecord):
                        raise rec
                    paragraphs, text = checked_article(rec, max_chars)
                    if rec["id"] in seen:
                        raise BadRecord("duplicate_id", rec["id"])
                except BadRecord as err:
                    bad[err.reason] += 1
                    ex = examples.setdefault(err.reason, [])
                    if len(ex) < EXAMPLES_PER_REASON:
                        ex.append({"record": where, "detail": err.detail})
                    continue
                seen.add(rec["id"])
                highlights = [normalise(h) for h in rec["highlights"] if normalise(h)]
                without_highlights += not highlights
                sentences = splitter(paragraphs)
                writer.add({"article_id": article_id(rec["id"]), "doc_id": rec["id"], "article": text,
                            "highlights": "\n".join(highlights), "sentences": sentences,
                            "n_sentences": len(sentences)})
                n_articles += 1
                n_sentences += len(sentences)
                if n_articles % 20_000 == 0:
                    log.info("%s: %d articles, %d sentences, %d records skipped", name, n_articles, n_sentences,
                             sum(bad.values()))
        except READ_ERRORS as err:
            raise ValueError(f"{path}: input ends early or is corrupt after {where} ({type(err).__name__}: {err}); "
                             "no output written") from err
        writer.flush()
        report = {"name": name, "input": str(path), "format": spec["format"],
                  "file_type": (spec.get("file_type") or detect_file_type(path)) if spec["format"] == "hf" else None,
                  "records": n_records, "articles": n_articles, "sentences": n_sentences,
                  "without_highlights": without_highlights, "skipped": dict(bad), "skipped_total": sum(bad.values()),
                  "skipped_examples": examples, "shards": writer.shards,
                  "sentence_splitter": f"nltk punkt_tab ({spec.get('language', 'english')})"}
        write_json(tmp / "report.json", report)
        if report_path:
            write_json(report_path, report)
    log.info("%s: %d records -> %d articles, %d sentences in %d shards; skipped %s", name, n_records, n_articles,
             n_sentences, len(writer.shards), dict(bad) or "none")
    return report


# ---- cleaning news sentences (the set-theoretic probe's windows) ------------------------------

# A sentence ending in one of these before its full stop was cut short ("... have lowered his ."):
# articles, possessives, subject pronouns, conjunctions and a few prepositions. Not object pronouns
# or "that" ("We named her.", "I understand that." are whole), nor prepositions that end sentences
# ("paid for.", "came in.").
DANGLING = frozenset("""a an the of his my your its our their he she they we i and or but nor if because although
though whose than with from into onto""".split())
METADATA = re.compile(r"^(?:By|PUBLISHED|UPDATED|Last updated|Follow)\b.{0,20}[:.|]|^\W*\|", re.I)
TERMINAL = tuple(".!?'\"’”)")


def clean_news_sentences(sentences: list[str]) -> tuple[list[str | None], Counter]:
    """An article's sentences with DailyMail's line-break artefacts repaired, fragments as None.

    DailyMail text has " . " where the page had a line break, often inside a sentence ("... have
    lowered his . sex drive ..."); punkt splits there. Repairs: a sentence ending in " ." whose next
    sentence starts with a lower-case letter is joined to it (`joined`); " . " inside a sentence before
    a lower-case word becomes " " (`repaired`); a remaining " ." at the end becomes "." (`repaired`).
    Fragments (None, counted per reason, `fragment_*`): a sentence that starts with a lower-case letter
    (the rest of a sentence that could not be joined: `lowercase_start`), ends in a dangling word before
    its full stop ("... when he.", `dangling_end`), ends without terminal punctuation (`no_terminal`),
    has fewer than three words (`short`), or is byline or page metadata ("By . Associated Press",
    "PUBLISHED: ...", `metadata`). Each sentence is one window sentence at most: None breaks windows."""
    counts: Counter = Counter()
    merged: list[str] = []
    for sent in sentences:
        sent = re.sub(r"(?: \.){3}", "...", sent)  # a spaced ellipsis ". . ." is no artefact
        if merged and merged[-1].endswith(" .") and sent[:1].islower():
            merged[-1] = merged[-1][:-2] + " " + sent
            counts["sentences_joined"] += 1
        else:
            merged.append(sent)
    out: list[str | None] = []
    for sent in merged:
        fixed = re.sub(r" \. (?=[a-z])", " ", sent)
        if fixed.endswith(" ."):
            fixed = fixed[:-2] + "."
        counts["sentences_repaired"] += fixed != sent
        last = re.findall(r"[^\W_]+", fixed.lower())[-1:] or [""]
        if METADATA.search(sent):
            reason = "metadata"
        elif fixed[:1].islower():
            reason = "lowercase_start"
        elif not fixed.endswith(TERMINAL):
            reason = "no_terminal"
        elif len(fixed.split()) < 3:
            reason = "short"
        elif last[0] in DANGLING and fixed.endswith("."):
            reason = "dangling_end"
        else:
            reason = None
        if reason:
            counts[f"sentences_fragment_{reason}"] += 1
        out.append(None if reason else fixed)
    return out, counts


def read_articles(directory: str, columns: list[str] | None = None) -> Iterator[dict]:
    """The rows of a collection's shards, in shard order (a batch of rows at a time)."""
    for shard in sorted(Path(directory).glob("part-*.parquet")):
        with reading(shard):  # an unreadable shard: an error naming it and rule articles
            pf = pq.ParquetFile(shard)
            for batch in pf.iter_batches(columns=columns, batch_size=1000):
                yield from batch.to_pylist()


# ---- the jobs of rules/articles.smk (workflow_scripts/jobs.py) ----
def run_articles(job) -> None:
    from workflow_scripts.nltk_data import prepend_nltk_data

    prepend_nltk_data(job.params.nltk_dir)  # the workflow's punkt, where it downloaded it
    build(job.wildcards.collection, job.params.spec, job.input.release, job.output.shards,
          setup_logging(name="articles"), job.output.report)
