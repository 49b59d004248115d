"""3GPP specifications as Markdown -> paragraphs -> sentences (deduplicated, stable ids).

Input: clauses of 3GPP specifications converted to Markdown (pandoc's output, as in
`../shared/data/3gpp_specs_rel18_md/`): JSON Lines records (`text`, and where known `spec`,
`version`, `section`, `title`, `source_file`), a .jsonl or .jsonl.gz file or a folder of them, or a
folder of `.md` files (one clause a file, `<spec>/<spec>_<clause>_<title>.md` as in the mdspc
repository). The real release is one .docx per specification: reading those is a later step (a
folder holding .docx files is refused with that message).

Steps, each counted in the report per reason:
1. Records: a line that is not JSON or has no `text` string is skipped (`bad_json`,
   `missing_field`, `undecodable`); with `skip_unnumbered` (default) clauses whose `section` is
   empty or `0` (in this conversion: the title page, Contents and Foreword boilerplate) are skipped; `specs` keeps only the named specifications.
2. Blocks: ASN.1 (`-- ASN1START` .. `-- ASN1STOP`, whatever sits between), pandoc grid tables
   (`+---+`, `|`), simple and multiline tables (dash rules), fenced code, headings (`#`, pandoc's
   `[]{#_Toc .anchor}` titles), table/figure captions (`Table 5.3.2-1: ...`) and reference entries
   (`[12] 3GPP TS ...`) are dropped as whole blocks; the rest are paragraphs (blank-line separated).
3. Inline markup is removed: emphasis `*x*`, links and spans, pandoc attributes, super/subscripts
   `^x^`/`~x~`, struck-out `~~text~~` (deleted), HTML tags, backslash escapes; block-quote `>`,
   list/step markers (`-`, `1>`, `3.`) and `NOTE n:` labels are stripped; whitespace is normalised.
4. Sentences: NLTK's punkt (`punkt_tab`, English), with `abbreviations` added to its abbreviation
   list (by default e.g, i.e, cf, vs, approx, resp, incl: plain punkt cuts "e.g. the timer" in two).
5. Filters: `formula` (the sentence holds LaTeX, `$` or `\\command`, or an image: a formula the
   conversion lost; `drop_formulas`), `too_short`/`too_long` (whitespace tokens outside
   [min_tokens, max_tokens]),
   `no_end_punctuation` (the last character is not in `end_punctuation`; list items ending in `;`
   and lead-ins ending in `:` are fragments).
6. Deduplication: one row per distinct sentence text, id = 16 hex digits of
   `common.stable_id("sentence", text)` (the same sentence gets the same id in every set and run);
   the row keeps its first occurrence (spec, version, section, title, source_file, paragraph,
   sentence) and counts its `occurrences`.
"""
from __future__ import annotations

import functools
import gzip
import io
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Iterator

import polars as pl

from workflow_scripts.common import stable_id

DEFAULT_ABBREVIATIONS = ("e.g", "i.e", "cf", "vs", "approx", "resp", "incl")
DEFAULT_SETTINGS = {
    "min_tokens": 5,
    "max_tokens": 100,
    "end_punctuation": ".?!",
    "drop_formulas": True,
    "skip_unnumbered": True,
    "abbreviations": list(DEFAULT_ABBREVIATIONS),
}
SENTENCE_COLUMNS = {"id": pl.String, "text": pl.String, "n_tokens": pl.Int32, "spec": pl.String,
                    "version": pl.String, "section": pl.String, "title": pl.String,
                    "source_file": pl.String, "paragraph": pl.Int32, "sentence": pl.Int32,
                    "occurrences": pl.Int32}
N_EXAMPLES = 5


def sentence_id(text: str) -> str:
    return f"{stable_id('sentence', text):016x}"


# --- reading records ------------------------------------------------------------------------------
def _open_text(path: Path):
    raw = open(path, "rb")
    magic = raw.read(2)
    raw.seek(0)
    stream = gzip.GzipFile(fileobj=raw) if magic == b"\x1f\x8b" else raw
    return io.TextIOWrapper(stream, encoding="utf-8", errors="strict")


def _count(stats: dict, reason: str, where: str | None = None) -> None:
    entry = stats.setdefault(reason, {"count": 0, "first": []})
    entry["count"] += 1
    if where is not None and len(entry["first"]) < N_EXAMPLES:
        entry["first"].append(where)


def source_files(path: str | os.PathLike) -> list[Path]:
    """The input files: the file itself, or a folder's .jsonl/.jsonl.gz files, or else its .md files
    (recursive, sorted)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: not found")
    if path.is_file():
        if path.suffix.lower() == ".docx":
            raise ValueError(f"{path}: .docx specifications are not read yet; convert them to Markdown "
                             "(pandoc) and give the .md files or JSON Lines records")
        return [path]
    # JSON Lines records when the folder has any (a README.md beside them is not a clause), else
    # the .md clause files (README*.md excepted)
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith((".jsonl", ".jsonl.gz")))
    if not files:
        files = sorted(p for p in path.rglob("*.md") if p.is_file() and not p.name.upper().startswith("README"))
    docx = [p for p in path.rglob("*.docx")]
    if docx and not files:
        raise ValueError(f"{path}: holds .docx specifications ({len(docx)}), which are not read yet; convert "
                         "them to Markdown (pandoc) and give the .md files or JSON Lines records")
    if not files:
        raise FileNotFoundError(f"{path}: no .jsonl, .jsonl.gz or .md files")
    return files




def _md_record(path: Path, root: Path) -> dict:
    """A clause file of the mdspc layout: `38331/38331_5_3_5_RRC_reconfiguration.md`."""
    text = path.read_text(encoding="utf-8")
    record = {"text": text, "source_file": str(path.relative_to(root)) if root != path else path.name}
    stem = path.stem
    m = re.match(r"^(\d{5})_((?:[0-9]+[A-Za-z]?_)*[0-9]+[A-Za-z]?)_(.*)$", stem)
    if m:
        spec = m.group(1)
        record.update(spec=f"TS {spec[:2]}.{spec[2:]}", section=m.group(2).replace("_", "."),
                      title=m.group(3).replace("_", " "))
    return record


def read_records(path: str | os.PathLike, stats: dict) -> Iterator[tuple[str, dict]]:
    """(where, record) for each clause; bad lines counted in `stats`, never fatal."""
    root = Path(path)
    for file in source_files(root):
        if file.suffix.lower() == ".md":
            try:
                yield str(file), _md_record(file, root)
            except UnicodeDecodeError:
                _count(stats, "undecodable", str(file))
            continue
        with _open_text(file) as f:
            number = 0
            while True:
                number += 1
                where = f"{file.name}:{number}"
                try:
                    line = f.readline()
                except UnicodeDecodeError:
                    _count(stats, "undecodable", where)
                    break
                except (EOFError, OSError) as err:  # a truncated gzip stream
                    raise ValueError(f"{file}: the file ends early or is corrupt after line {number - 1} ({err})") from err
                if not line:
                    break
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    _count(stats, "bad_json", where)
                    continue
                if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                    _count(stats, "missing_field", where)
                    continue
                yield where, record


# --- Markdown -> paragraphs -----------------------------------------------------------------------
ASN1_START = re.compile(r"^\\?-\\?-\s*(?:/[\w ]+/\s*)?ASN1START\b")  # `\-- ASN1START`, `-- /example/ ASN1START`
ASN1_STOP = re.compile(r"^\\?-\\?-\s*(?:/[\w ]+/\s*)?ASN1STOP\b")
DASH_RULE = re.compile(r"^\s*-{3,}\s*$")             # a multiline table's top and bottom rule
SIMPLE_RULE = re.compile(r"^\s*-{2,}(?: +-{2,})+\s*$")  # a simple table's column rule
GRID = re.compile(r"^\s*(?:\+[-=:+]|\|)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^\s*(?:#{1,6}\s|#{1,6}$|\[\]\{#[^}]*\.anchor\})")
CAPTION = re.compile(r"^\s*(?:Table|Figure)\s+[\w.\-]+\s*:", re.I)
REFERENCE = re.compile(r"^\s*\\?\[\d+\\?\]\s")


def blocks(markdown: str) -> Iterator[tuple[str, str]]:
    """(kind, text) for each block of a clause: kind "paragraph" for text to keep, else the reason
    it is dropped ("asn1", "table", "code", "heading", "caption", "reference")."""
    lines = markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    # multiline tables: a dash rule opens one, the next dash rule closes it (an unpaired rule is a
    # horizontal rule and drops alone)
    rules = [i for i, line in enumerate(lines) if DASH_RULE.match(line)]
    in_table = [False] * len(lines)
    for start, end in zip(rules[0::2], rules[1::2]):
        for i in range(start, end + 1):
            in_table[i] = True
    for i in rules:
        in_table[i] = True
    current: list[str] = []
    i = 0
    n = len(lines)

    def flush():
        nonlocal current
        if current:
            text = "\n".join(current)
            current = []
            return (_classify(text), text)
        return None

    while i < n:
        line = lines[i]
        stripped = line.strip().lstrip(">").strip()
        if ASN1_START.match(stripped):
            out = flush()
            if out:
                yield out
            body = [line]
            i += 1
            while i < n and not ASN1_STOP.match(lines[i].strip().lstrip(">").strip()):
                body.append(lines[i])
                i += 1
            if i < n:
                body.append(lines[i])
            i += 1
            yield "asn1", "\n".join(body)
            continue
        if FENCE.match(line):
            out = flush()
            if out:
                yield out
            body = [line]
            i += 1
            while i < n and not FENCE.match(lines[i]):
                body.append(lines[i])
                i += 1
            if i < n:
                body.append(lines[i])
            i += 1
            yield "code", "\n".join(body)
            continue
        if in_table[i]:
            out = flush()
            if out:
                yield out
            body = []
            while i < n and in_table[i]:
                body.append(lines[i])
                i += 1
            yield "table", "\n".join(body)
            continue
        if not line.strip():
            out = flush()
            if out:
                yield out
            i += 1
            continue
        if HEADING.match(line):
            out = flush()
            if out:
                yield out
            yield "heading", line
            i += 1
            continue
        current.append(line)
        i += 1
    out = flush()
    if out:
        yield out


def _classify(text: str) -> str:
    lines = text.split("\n")
    if any(GRID.match(line) for line in lines) and GRID.match(lines[0]):
        return "table"
    if any(SIMPLE_RULE.match(line) for line in lines):
        return "table"
    first = lines[0].lstrip("> ")
    if CAPTION.match(first):
        return "caption"
    if REFERENCE.match(first):
        return "reference"
    return "paragraph"


IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)(?:\{[^}]*\})?")
LINK = re.compile(r"(?<!\\)\[([^\]]*)\]\((?:[^()]|\([^)]*\))*\)")
SPAN = re.compile(r"(?<!\\)\[([^\]]*)\]\{[^}]*\}")
ATTRIBUTES = re.compile(r"\{[#.][^}]*\}|\{width=[^}]*\}")
HTML = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>")
SUPER = re.compile(r"\^([^\s^]+)\^")
STRIKE = re.compile(r"~~[^~]*~~")
SUB = re.compile(r"(?<!~)~([^\s~]+)~(?!~)")
ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!'\"<>|~^$&%=:;,/@])")
MARKERS = re.compile(r"^(?:\s*(?:>\s*)+)?\s*(?:\\?-\s+|\*\s+|\d{1,2}\\?>\s*|\\?>\s*|[a-z]\)\s+|\(\d{1,2}\)\s+"
                     r"|\d{1,2}\\?\.\s+(?=[A-Za-z]))+")
NOTE = re.compile(r"^(?:NOTE|EXAMPLE|Editor'?s? ?[Nn]ote)(?:\s+\d+)?\s*:\s*")
FORMULA_MARK = "\u2063"  # an invisible separator standing for an image: the sentence had a formula
HARD_BREAK = re.compile(r"\\\n")
ESCAPED_SPACE = "\x01"


def clean_paragraph(text: str) -> str:
    """Plain text of a Markdown paragraph (see the module docstring, step 3); images become
    FORMULA_MARK, LaTeX `$` stays, so that `has_formula` can tell."""
    text = HARD_BREAK.sub(" ", text).replace("\\ ", ESCAPED_SPACE)  # pandoc's `\ ` (inside sub/superscripts)
    lines = [MARKERS.sub("", line) if k == 0 else re.sub(r"^\s*(?:>\s*)+", "", line)
             for k, line in enumerate(text.split("\n"))]
    text = " ".join(line.strip() for line in lines)
    text = IMAGE.sub(FORMULA_MARK, text)
    text = ATTRIBUTES.sub("", text)
    text = SPAN.sub(r"\1", text)
    text = LINK.sub(r"\1", text)
    text = HTML.sub("", text)
    text = text.replace("\\*", "\x00")  # an escaped asterisk is text; the others are emphasis
    text = text.replace("*", "")
    text = STRIKE.sub("", text)  # pandoc's ~~deleted text~~
    text = SUPER.sub(r"\1", text)
    text = SUB.sub(r"\1", text)
    text = ESCAPE.sub(r"\1", text).replace("\x00", "*").replace(ESCAPED_SPACE, " ")
    text = " ".join(text.split())
    text = MARKERS.sub("", text)
    text = NOTE.sub("", text)
    return text.strip()


LATEX = re.compile(r"\\[A-Za-z]")  # what the escapes leave with a backslash: a LaTeX command


def has_formula(sentence: str) -> bool:
    return FORMULA_MARK in sentence or "$" in sentence or LATEX.search(sentence) is not None


# --- sentences ------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4)
def _punkt(abbreviations: tuple[str, ...]):
    from nltk.tokenize import PunktTokenizer

    try:
        tokenizer = PunktTokenizer("english")
    except LookupError as err:
        raise LookupError("NLTK's punkt_tab (English) is needed to split 3GPP paragraphs into sentences: "
                          "set NLTK_DATA to a folder that has tokenizers/punkt_tab (e.g. ../shared/data/nltk_data) "
                          "or run python -m nltk.downloader punkt_tab") from err
    tokenizer._params.abbrev_types.update(a.lower().rstrip(".") for a in abbreviations)
    return tokenizer


def split_sentences(paragraph: str, abbreviations=DEFAULT_ABBREVIATIONS) -> list[str]:
    return [" ".join(s.split()) for s in _punkt(tuple(abbreviations)).tokenize(paragraph) if s.strip()]


def punkt_provenance() -> dict:
    """nltk's version and a digest of the punkt_tab files used (content, not paths)."""
    import nltk

    from workflow_scripts import nltk_data

    found = nltk_data.find_package(nltk_data.PUNKT, [str(p) for p in nltk.data.path])
    return {"nltk": nltk.__version__,
            "punkt_tab": nltk_data.package_digest(found) if found else None}


def merge_settings(settings: dict | None) -> dict:
    out = dict(DEFAULT_SETTINGS)
    for key, value in (settings or {}).items():
        if key in out:
            out[key] = value
    if not (isinstance(out["min_tokens"], int) and isinstance(out["max_tokens"], int)
            and 1 <= out["min_tokens"] <= out["max_tokens"]):
        raise ValueError("min_tokens and max_tokens must be integers with 1 <= min_tokens <= max_tokens")
    return out


def sentence_reason(sentence: str, settings: dict) -> str | None:
    """Why a sentence is dropped (None: kept)."""
    if settings["drop_formulas"] and has_formula(sentence):
        return "formula"
    n = len(sentence.split())
    if n < settings["min_tokens"]:
        return "too_short"
    if n > settings["max_tokens"]:
        return "too_long"
    ends = settings["end_punctuation"]
    if ends and sentence[-1] not in ends:
        return "no_end_punctuation"
    return None


def ingest(path: str | os.PathLike, settings: dict | None, log, specs: list[str] | None = None
           ) -> tuple[pl.DataFrame, dict]:
    """Distinct sentences of the specifications under `path` and the counts of every step."""
    settings = merge_settings(settings)
    record_stats: dict = {}
    counts = {"records": 0, "records_used": 0, "records_skipped": Counter(), "blocks": Counter(),
              "paragraphs": 0, "sentences": 0, "sentences_dropped": Counter(), "sentences_kept": 0,
              "duplicates": 0}
    rows: dict[str, dict] = {}
    abbreviations = tuple(settings["abbreviations"])
    wanted = set(specs) if specs else None
    for where, record in read_records(path, record_stats):
        counts["records"] += 1
        if settings["skip_unnumbered"] and "section" in record and \
                str(record.get("section") or "").strip() in ("", "0"):
            counts["records_skipped"]["unnumbered_section"] += 1
            continue
        if wanted is not None and record.get("spec") not in wanted:
            counts["records_skipped"]["other_spec"] += 1
            continue
        counts["records_used"] += 1
        meta = {k: (str(record[k]) if record.get(k) is not None else None)
                for k in ("spec", "version", "section", "title", "source_file")}
        if meta["source_file"] is None:
            meta["source_file"] = where
        paragraph_no = 0
        for kind, block in blocks(record["text"]):
            counts["blocks"][kind] += 1
            if kind != "paragraph":
                continue
            text = clean_paragraph(block)
            if not text:
                counts["blocks"]["empty_after_markup"] += 1
                continue
            counts["paragraphs"] += 1
            for k, sentence in enumerate(split_sentences(text, abbreviations)):
                counts["sentences"] += 1
                reason = sentence_reason(sentence, settings)
                if reason:
                    counts["sentences_dropped"][reason] += 1
                    continue
                counts["sentences_kept"] += 1
                ident = sentence_id(sentence)
                row = rows.get(ident)
                if row is not None:
                    if row["text"] != sentence:
                        raise RuntimeError(f"64-bit id collision between {row['text']!r} and {sentence!r}")
                    row["occurrences"] += 1
                    counts["duplicates"] += 1
                    continue
                rows[ident] = {"id": ident, "text": sentence, "n_tokens": len(sentence.split()), **meta,
                               "paragraph": paragraph_no, "sentence": k, "occurrences": 1}
            paragraph_no += 1
        if counts["records"] % 200 == 0:
            log.info("3gpp: %d records, %d paragraphs, %d distinct sentences", counts["records"],
                     counts["paragraphs"], len(rows))
    frame = pl.DataFrame(list(rows.values()), schema=SENTENCE_COLUMNS)
    report = {
        "records": counts["records"], "records_used": counts["records_used"],
        "records_skipped": dict(counts["records_skipped"]),
        "bad_lines": record_stats,
        "blocks": dict(counts["blocks"]), "paragraphs": counts["paragraphs"],
        "sentences_split": counts["sentences"], "sentences_dropped": dict(counts["sentences_dropped"]),
        "sentences_kept": counts["sentences_kept"], "duplicates_collapsed": counts["duplicates"],
        "distinct_sentences": frame.height, "settings": settings,
    }
    log.info("3gpp: %d records (%d used), %d paragraphs, %d sentences, %d kept, %d distinct; dropped %s",
             counts["records"], counts["records_used"], counts["paragraphs"], counts["sentences"],
             counts["sentences_kept"], frame.height, dict(counts["sentences_dropped"]))
    return frame, report


def write_shards(frame: pl.DataFrame, directory: Path, shard_rows: int) -> list[str]:
    """The sentences as Parquet shards part-00000.parquet, ... of `shard_rows` rows (in the order of
    first occurrence). Called inside the set's atomic folder."""
    directory.mkdir(parents=True, exist_ok=True)
    names = []
    for k, start in enumerate(range(0, max(frame.height, 1), shard_rows)):
        name = f"part-{k:05d}.parquet"
        frame.slice(start, shard_rows).write_parquet(directory / name, compression="zstd")
        names.append(name)
    return names
