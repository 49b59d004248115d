"""Word lists and phrases of the Montague modifier probe (seed 004; methods.md §5).

Word lists. A dataset (`montague.datasets.<name>`) is either given in the config, as adjective
types (type name -> adjectives, in order) and nouns, or as `file`: a CSV in the layout of the
published `adjectives.csv` (one column per adjective type, a `SYN <type>` column beside each, a
`Nouns` and a `SYN Nouns` column; empty cells end a column). The published type headers get short
names (PUBLISHED_TYPES); another header becomes its lower-case slug. `SYN` columns are read past:
the published tests do not use the synonyms. The default config carries the published English
lists as config values; `resources/montague/adjectives_nl.csv` is a Dutch list of our own.

Problems are counted and reported, never fatal (the first five examples kept per reason): a CSV
line with more cells than the header (`extra_field`, the line is skipped), a cell that is not
UTF-8 (`undecodable`) or holds a control character (`control_char`), an adjective listed twice
(`duplicate_adjective`, the first kept), a noun listed twice (`duplicate_noun`), an adjective that
is also a noun (`adjective_is_noun`, dropped from the adjectives). Words are whitespace-normalised;
a word with a space inside ("North American") is one unit of the phrase.

Phrases: the regular language (A)+N up to three words, with two different adjectives in an AAN
(the reference generates it with an NLTK grammar and drops repeated words, so "wild wild dog" is
"wild dog"):
    AN   a n        for every noun n and adjective a                    N x A
    AAN  a1 a2 n    for every noun n and ordered pair a1 != a2          N x A x (A - 1)
With the published 61 adjectives and 12 nouns: 732 AN + 43,920 AAN = 44,652 phrases. (12 x 61^2
is the same number, so the count alone cannot tell this language from, e.g., all AAN with repeats;
tests check the composition.) In `a1 a2 n`, a1 is the outer and a2 the inner adjective; the AAN
key of the tests is (type of a1, type of a2).

Texts to embed (text set `montague.<dataset>`): every phrase, every single word, and the
sub-phrases `a1 a2` the AAN test compares (`a2 n` and `a1 n` are AN phrases already):
44,652 + 61 + 12 + 3,660 = 48,385 distinct strings for the published lists. Every string goes
through the same encoder.

Rows of phrases.parquet, AN first, then AAN, each in noun, a1, a2 list order: phrase_id (uint64,
common.stable_id("montague", dataset, phrase)), phrase, kind (AN | AAN), noun, noun_idx, adj1,
adj1_idx, type1, adj2, adj2_idx, type2 (null for AN), key (type1 for AN, "type1|type2" for AAN).
The *_idx columns are positions in the report's word lists (the bootstrap resamples them).

Job: run_montague_phrases (rules/montague.smk), which writes phrases.parquet, the texts and the report.
"""
from __future__ import annotations

import csv
import io
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from workflow_scripts.common import setup_logging, stable_id

# the published adjectives.csv headers -> the type names used in keys, tables and plots
PUBLISHED_TYPES = {
    "Subsective (Intersective)": "intersective",
    "Subsective (Non-Intersective)": "subsective",
    "Plain Non-Subsective": "plain",
    "Privative Non-Subsective": "privative",
    "Ambiguous": "ambiguous",
}
NOUN_HEADER = "nouns"
SYNONYM_PREFIX = "syn "
KEY_SEP = "|"  # AAN keys: "outer|inner"
N_EXAMPLES = 5
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
SCHEMA = {"phrase_id": pl.UInt64, "phrase": pl.String, "kind": pl.String, "noun": pl.String, "noun_idx": pl.Int32,
          "adj1": pl.String, "adj1_idx": pl.Int32, "type1": pl.String, "adj2": pl.String, "adj2_idx": pl.Int32,
          "type2": pl.String, "key": pl.String}


def join_words(*words: str) -> str:
    """A (sub-)phrase as encoded: its words in order, one space apart. The scores look strings up
    by this same function, so phrases and sub-phrases always match what was embedded."""
    return " ".join(words)


def aan_key(outer: str, inner: str) -> str:
    return f"{outer}{KEY_SEP}{inner}"


def type_name(header: str) -> str:
    """Short name of a type column: the published ones by PUBLISHED_TYPES, others slugged."""
    header = " ".join(header.split())
    if header in PUBLISHED_TYPES:
        return PUBLISHED_TYPES[header]
    slug = re.sub(r"[^0-9a-z]+", "_", header.lower()).strip("_")
    if not slug:
        raise ValueError(f"adjective type column {header!r} has no letters or digits to name it by")
    return slug


@dataclass
class WordLists:
    """Adjectives (in type order, each type's words in list order) with their types, and nouns."""
    types: list[str]
    adjectives: list[str]
    adjective_types: list[str]
    nouns: list[str]
    problems: dict = field(default_factory=dict)  # reason -> {"count", "examples"}

    def as_dict(self) -> dict:
        by_type = {t: [a for a, at in zip(self.adjectives, self.adjective_types) if at == t] for t in self.types}
        return {"adjectives": by_type, "nouns": list(self.nouns)}


class _Problems:
    def __init__(self):
        self.counts: Counter = Counter()
        self.examples: dict[str, list] = {}

    def add(self, reason: str, example) -> None:
        self.counts[reason] += 1
        self.examples.setdefault(reason, [])
        if len(self.examples[reason]) < N_EXAMPLES:
            self.examples[reason].append(example)

    def as_dict(self) -> dict:
        return {r: {"count": n, "examples": self.examples[r]} for r, n in sorted(self.counts.items())}


def _clean(word, where: str, problems: _Problems) -> str | None:
    """A whitespace-normalised word, or None (empty, or a counted problem)."""
    if word is None:
        return None
    text = " ".join(str(word).split())
    if not text:
        return None
    if "\ufffd" in text:
        problems.add("undecodable", where)
        return None
    if CONTROL.search(text):
        problems.add("control_char", where)
        return None
    return text


def build_word_lists(adjectives: dict[str, list], nouns: list, problems: _Problems | None = None,
                     where: str = "config") -> WordLists:
    """Word lists from type -> adjectives and nouns, with duplicates counted and dropped."""
    problems = problems or _Problems()
    noun_list: list[str] = []
    for i, raw in enumerate(nouns):
        noun = _clean(raw, f"{where}: nouns[{i}]", problems)
        if noun is None:
            continue
        if noun in noun_list:
            problems.add("duplicate_noun", noun)
            continue
        noun_list.append(noun)
    types, adjs, adj_types = [], [], []
    for type_, words in adjectives.items():
        for i, raw in enumerate(words):
            adj = _clean(raw, f"{where}: {type_}[{i}]", problems)
            if adj is None:
                continue
            if adj in noun_list:
                problems.add("adjective_is_noun", adj)
                continue
            if adj in adjs:
                problems.add("duplicate_adjective", f"{adj} ({type_}; first under {adj_types[adjs.index(adj)]})")
                continue
            adjs.append(adj)
            adj_types.append(type_)
        if type_ in adj_types and type_ not in types:
            types.append(type_)
    return WordLists(types, adjs, adj_types, noun_list, problems.as_dict())


def read_word_csv(path: str | Path) -> WordLists:
    """Word lists from a CSV in the published adjectives.csv layout (see the module docstring)."""
    path = Path(path)
    text = path.read_bytes().decode("utf-8-sig", errors="replace")
    problems = _Problems()
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header:
        raise ValueError(f"{path}: empty file; expected a header line with adjective type columns and `Nouns`")
    header = [" ".join(h.split()) for h in header]
    noun_col = next((i for i, h in enumerate(header) if h.lower() == NOUN_HEADER), None)
    if noun_col is None:
        raise ValueError(f"{path}: no `Nouns` column (header: {header})")
    type_cols = [(i, h) for i, h in enumerate(header)
                 if i != noun_col and h and not h.lower().startswith(SYNONYM_PREFIX)]
    if not type_cols:
        raise ValueError(f"{path}: no adjective type column (header: {header})")
    names = [type_name(h) for _, h in type_cols]
    if len(set(names)) < len(names):
        raise ValueError(f"{path}: two adjective type columns get the same name ({names})")
    columns: dict[str, list] = {n: [] for n in names}
    nouns: list = []
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if len(row) > len(header):
            problems.add("extra_field", f"line {line}: {len(row)} cells, header has {len(header)}")
            continue
        for (i, _), name in zip(type_cols, names):
            cell = row[i] if i < len(row) else ""
            columns[name].append(cell if cell.strip() else None)
        nouns.append(row[noun_col] if noun_col < len(row) and row[noun_col].strip() else None)
    return build_word_lists({n: [w for w in ws if w is not None] for n, ws in columns.items()},
                            [n for n in nouns if n is not None], problems, where=str(path))


def word_lists(spec: dict) -> WordLists:
    """A dataset's word lists from its config entry: `file`, or `adjectives` (type -> words, the
    types in the tables' column order) and `nouns`."""
    if "file" in spec:
        return read_word_csv(spec["file"])
    return build_word_lists(spec["adjectives"], spec["nouns"])


def generate_phrases(dataset: str, words: WordLists) -> pl.DataFrame:
    """Every AN and AAN phrase (two different adjectives, both orders), AN first."""
    adjs, types, nouns = words.adjectives, words.adjective_types, words.nouns
    cols: dict[str, list] = {c: [] for c in SCHEMA}

    def add(kind, n, i, j):
        parts = [adjs[i]] + ([adjs[j]] if j is not None else []) + [nouns[n]]
        phrase = join_words(*parts)
        cols["phrase_id"].append(stable_id("montague", dataset, phrase))
        cols["phrase"].append(phrase)
        cols["kind"].append(kind)
        cols["noun"].append(nouns[n])
        cols["noun_idx"].append(n)
        cols["adj1"].append(adjs[i])
        cols["adj1_idx"].append(i)
        cols["type1"].append(types[i])
        cols["adj2"].append(adjs[j] if j is not None else None)
        cols["adj2_idx"].append(j)
        cols["type2"].append(types[j] if j is not None else None)
        cols["key"].append(types[i] if j is None else aan_key(types[i], types[j]))

    for n in range(len(nouns)):
        for i in range(len(adjs)):
            add("AN", n, i, None)
    for n in range(len(nouns)):
        for i in range(len(adjs)):
            for j in range(len(adjs)):
                if i != j:
                    add("AAN", n, i, j)
    frame = pl.DataFrame(cols, schema=SCHEMA)
    if frame["phrase"].n_unique() != frame.height:
        dup = frame.filter(pl.col("phrase").is_duplicated())["phrase"][0]
        raise ValueError(f"{dataset}: phrase {dup!r} is generated twice (a word that is also a run of two others?)")
    if frame["phrase_id"].n_unique() != frame.height:
        raise RuntimeError(f"{dataset}: phrase id collision among {frame.height} phrases")
    return frame


def strings_to_embed(words: WordLists, phrases: pl.DataFrame) -> list[str]:
    """Every string the three tests compare: phrases, single words, and the sub-phrases `a1 a2`."""
    adjs = words.adjectives
    pairs = [join_words(a1, a2) for a1 in adjs for a2 in adjs if a1 != a2]
    return phrases["phrase"].to_list() + list(adjs) + list(words.nouns) + pairs


def build(dataset: str, spec: dict, log) -> tuple[WordLists, pl.DataFrame, list[str], dict]:
    started = time.monotonic()
    words = word_lists(spec)
    if not words.nouns or not words.adjectives:
        raise ValueError(f"dataset {dataset}: no {'nouns' if not words.nouns else 'adjectives'} left after reading "
                         f"{spec.get('file', 'the config lists')} (problems: {words.problems})")
    phrases = generate_phrases(dataset, words)
    strings = strings_to_embed(words, phrases)
    kinds = Counter(phrases["kind"].to_list())
    report = {
        "dataset": dataset, "source": spec.get("file", "config"),
        "types": {t: words.adjective_types.count(t) for t in words.types},
        "adjectives": len(words.adjectives), "nouns": len(words.nouns),
        "phrases": {"AN": kinds.get("AN", 0), "AAN": kinds.get("AAN", 0), "total": phrases.height},
        "problems": words.problems, "word_lists": words.as_dict(),
        "examples": phrases.filter(pl.col("kind") == "AAN").head(N_EXAMPLES)["phrase"].to_list(),
    }
    if words.problems:
        log.warning("%s: word list problems (counted, first examples kept): %s", dataset,
                    {r: p["count"] for r, p in words.problems.items()})
    log.info("%s: %d adjectives in %d types, %d nouns -> %d AN + %d AAN phrases, %d strings to embed (%.1f s)",
             dataset, len(words.adjectives), len(words.types), len(words.nouns), report["phrases"]["AN"],
             report["phrases"]["AAN"], len(set(strings)), time.monotonic() - started)
    return words, phrases, strings, report


def write_outputs(phrases: pl.DataFrame, strings: list[str], report: dict, out: str, texts_out: list[str],
                  report_out: str) -> dict:
    from workflow_scripts.texts import write_dataset
    return write_dataset(phrases, out, strings, texts_out, report, report_out)


# ---- the jobs of rules/montague.smk (workflow_scripts/jobs.py) ----
def run_montague_phrases(job) -> None:
    log = setup_logging(name="montague")
    dataset = job.wildcards.dataset
    _, phrases, strings, report = build(dataset, job.params.spec, log)
    report = write_outputs(phrases, strings, report, job.output.phrases, list(job.output.texts), job.output.report)
    log.info("%s: %d phrases -> %s; texts %s", dataset, phrases.height, job.output.phrases, report["texts"])
