"""Sentence sources of the triplet datasets (Zhu, Li & de Melo, seed 002): SICK, MSRP, the NLTK Penn
Treebank WSJ sample and plain text files, read in place.

A source spec is {"format": "sick" | "msrp" | "treebank" | "lines", "file": path, list of paths, or
null (treebank: the NLTK sample found through NLTK_DATA / nltk.data.path)}. read_sentences() yields
(source_id, sentence, tags): tags are the gold tags, one per whitespace token, for the treebank and None
otherwise. sick_pairs() yields the sentence pairs of a SICK file (for the Fixed Point Reorder
partners). Sentences come whitespace-normalised ("a  b " -> "a b"), each text once per source: a
text seen before is skipped ("duplicate_sentence"). Lines that cannot be used (too few columns, an
undecodable line, an empty text, a relatedness that is no number) are counted by reason in
`stats["skipped"]`, never fatal; a missing file is (the config names it).

Formats:
- sick: SICK.txt's layout: tab-separated, CRLF or LF, a header row starting with pair_ID, columns
  pair_ID, sentence_A, sentence_B, entailment_label, relatedness_score, ... (the first five are
  enough). Sentences are the unique sentence_A / sentence_B texts, first occurrence first, id
  "<pair_ID>:A" or "<pair_ID>:B".
- msrp: msr_paraphrase_{train,test}.txt: UTF-8 with BOM, tab-separated, header Quality, #1 ID, #2 ID,
  #1 String, #2 String. Read without quote handling (strings contain '"'). Ids are MSRP's sentence
  ids (a sentence in several pairs comes once).
- treebank: tagged sentences of a Bracketed Penn Treebank reader: nltk.corpus.treebank when file is
  null, else a folder of .mrg files or a treebank.zip (its treebank/combined/ folder). -NONE- trace
  tokens (*, *T*-1, 0, *U*, ...) are dropped, bracket tokens -LRB- -RRB- -LCB- -RCB- -LSB- -RSB- map
  back to ( ) { } [ ] and their tags to ( and ) as nltk.pos_tag writes them. The text stays
  Treebank-tokenised (the gold tags are one per token). Id "<fileid>#<index>", index from 0.
- lines: UTF-8 text, one sentence per line; blank lines and lines starting with # are skipped. Id
  "<file name>:<line number>" (from 1).
"""
from __future__ import annotations

import functools
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

FORMATS = ("sick", "msrp", "treebank", "lines")
BRACKETS = {"-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}", "-LSB-": "[", "-RSB-": "]"}
BRACKET_TAGS = {"-LRB-": "(", "-LCB-": "(", "-LSB-": "(", "-RRB-": ")", "-RCB-": ")", "-RSB-": ")"}


@dataclass(frozen=True)
class SickPair:
    pair_id: str
    sentence_a: str  # whitespace-normalised
    sentence_b: str
    label: str  # upper case: ENTAILMENT, NEUTRAL, CONTRADICTION
    relatedness: float
    raw_a: str = ""  # the column text as in the file (the reference code splits it on " ")
    raw_b: str = ""


def new_stats() -> dict:
    """Reading counts of one source: records (lines or tree sentences) read, sentences yielded (pairs
    for sick_pairs()), and what was skipped by reason."""
    return {"records": 0, "sentences": 0, "skipped": Counter()}


def normalise(text: str) -> str:
    return " ".join(text.split())


def _files(spec: dict) -> list[Path]:
    file = spec.get("file")
    if not file:
        raise ValueError(f"source {spec!r} names no file")
    paths = [Path(f) for f in (file if isinstance(file, (list, tuple)) else [file])]
    for path in paths:
        if not path.exists():
            raise FileNotFoundError(f"source file {path} not found")
    return paths


def _lines(path: Path, stats: dict) -> Iterator[tuple[int, str]]:
    """(line number from 1, text without line end) of a UTF-8 file, decoded line by line so that one
    bad line is counted ("bad_encoding") instead of stopping the read; a leading BOM is dropped."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                stats["records"] += 1
                stats["skipped"]["bad_encoding"] += 1
                continue
            yield number, text.rstrip("\r\n")


def _sick_rows(path: Path, stats: dict) -> Iterator[tuple[str, str, str, str, str]]:
    """The first five columns of each data row of a SICK-layout file, unstripped."""
    for number, line in _lines(path, stats):
        if not line.strip():
            continue
        fields = line.split("\t")
        if number == 1 and fields[0].strip() == "pair_ID":
            continue
        stats["records"] += 1
        if len(fields) < 5:
            stats["skipped"]["short_line"] += 1
            continue
        yield tuple(fields[:5])


def read_sick(path: Path, stats: dict, seen: set) -> Iterator[tuple[str, str, None]]:
    for pair_id, a, b, _label, _score in _sick_rows(path, stats):
        pair_id = pair_id.strip()
        for side, text in (("A", a), ("B", b)):
            text = normalise(text)
            if not text:
                stats["skipped"]["empty_text"] += 1
            elif text in seen:
                stats["skipped"]["duplicate_sentence"] += 1
            else:
                seen.add(text)
                yield f"{pair_id}:{side}", text, None


def sick_pairs(spec: dict, stats: dict | None = None) -> Iterator[SickPair]:
    """Every usable pair of a SICK-format source, in file order (texts whitespace-normalised)."""
    stats = new_stats() if stats is None else stats
    if spec.get("format") != "sick":
        raise ValueError(f"sentence pairs need a source of format 'sick', not {spec.get('format')!r}")
    for path in _files(spec):
        for pair_id, raw_a, raw_b, label, score in _sick_rows(path, stats):
            a, b = normalise(raw_a), normalise(raw_b)
            try:
                relatedness = float(score)
            except ValueError:
                stats["skipped"]["bad_score"] += 1
                continue
            if not a or not b:
                stats["skipped"]["empty_text"] += 1
                continue
            stats["pairs"] = stats.get("pairs", 0) + 1
            yield SickPair(pair_id.strip(), a, b, label.strip().upper(), relatedness, raw_a, raw_b)


def read_msrp(path: Path, stats: dict, seen: set) -> Iterator[tuple[str, str, None]]:
    for number, line in _lines(path, stats):
        if not line.strip():
            continue
        fields = line.split("\t")
        if number == 1 and fields[0].strip() == "Quality":
            continue
        stats["records"] += 1
        if len(fields) < 5:
            stats["skipped"]["short_line"] += 1
            continue
        for sid, text in ((fields[1].strip(), fields[3]), (fields[2].strip(), fields[4])):
            text = normalise(text)
            if not sid or not text:
                stats["skipped"]["empty_text"] += 1
            elif ("id", sid) in seen or text in seen:
                stats["skipped"]["duplicate_sentence"] += 1
            else:
                seen.update((("id", sid), text))
                yield sid, text, None


def msrp_pairs(spec: dict) -> Iterator[tuple[str, str]]:
    """(string1, string2) of every record of an MSRP-format source (texts whitespace-normalised)."""
    stats = new_stats()
    for path in _files(spec):
        for number, line in _lines(path, stats):
            fields = line.split("\t")
            if not line.strip() or (number == 1 and fields[0].strip() == "Quality") or len(fields) < 5:
                continue
            a, b = normalise(fields[3]), normalise(fields[4])
            if a and b:
                yield a, b


def pair_components(specs: list[dict]) -> dict[str, str]:
    """The connected components of the pair graph of the paired sources among `specs` (SICK and
    MSRP: a sentence is a node, each record an edge between its two sentences): text -> a label of
    its component, the same for every text of one component and stable across runs (a digest of
    the component's smallest text). Two triplets whose originals are one pair's two near-identical
    sentences, or linked through a chain of pairs, are then one unit (issue 43, point 4); other
    sources' texts are in no component."""
    from workflow_scripts.common import stable_id

    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for spec in specs:
        fmt = spec.get("format")
        edges = ((p.sentence_a, p.sentence_b) for p in sick_pairs(spec)) if fmt == "sick" else (
            msrp_pairs(spec) if fmt == "msrp" else ())
        for a, b in edges:
            parent.setdefault(a, a)
            parent.setdefault(b, b)
            ra, rb = find(a), find(b)
            if ra != rb:  # the smaller text roots the merged component: the label does not depend on order
                parent[max(ra, rb)] = min(ra, rb)
    return {text: f"pairs:{stable_id('pair_component', find(text)):016x}" for text in parent}


def _treebank_reader(file):
    import nltk
    from nltk.corpus.reader import BracketParseCorpusReader
    if not file:
        return nltk.corpus.treebank
    path = Path(file)
    if not path.exists():
        raise FileNotFoundError(f"treebank {path} not found")
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as z:
            folders = sorted({n.rsplit("/", 1)[0] + "/" for n in z.namelist() if n.endswith(".mrg")})
        if not folders:
            raise ValueError(f"{path} holds no .mrg files")
        root = nltk.data.ZipFilePathPointer(str(path), next((f for f in folders if f.endswith("combined/")),
                                                            folders[0]))
        return BracketParseCorpusReader(root, r".*\.mrg", encoding="ascii")
    return BracketParseCorpusReader(str(path), r"(?:.*/)?[^/]*\.mrg", encoding="ascii")


@functools.lru_cache(maxsize=4)
def _tagged_sents(file) -> tuple:
    """(fileid, index, tagged sentence) of a treebank, read once per process (NLTK's reader takes
    seconds for the 3,914 sentences of the sample)."""
    reader = _treebank_reader(file)
    return tuple((fileid, index, tuple(sent)) for fileid in reader.fileids()
                 for index, sent in enumerate(reader.tagged_sents(fileid)))


def read_treebank(file, stats: dict, seen: set) -> Iterator[tuple[str, str, list[str]]]:
    for fileid, index, sent in _tagged_sents(str(Path(file).resolve()) if file else None):
        stats["records"] += 1
        words, tags = [], []
        for word, tag in sent:
            if tag == "-NONE-":
                continue  # traces and empty elements: *, *T*-1, 0, *U*, *?*, ...
            words.append(BRACKETS.get(word, word))
            tags.append(BRACKET_TAGS.get(tag, tag))
        text = " ".join(words)
        if not words or len(text.split()) != len(words):
            stats["skipped"]["empty_text" if not words else "bad_token"] += 1
        elif text in seen:
            stats["skipped"]["duplicate_sentence"] += 1
        else:
            seen.add(text)
            yield f"{fileid}#{index}", text, tags


def read_lines(path: Path, stats: dict, seen: set) -> Iterator[tuple[str, str, None]]:
    for number, line in _lines(path, stats):
        text = normalise(line)
        if not text or text.startswith("#"):
            continue
        stats["records"] += 1
        if text in seen:
            stats["skipped"]["duplicate_sentence"] += 1
            continue
        seen.add(text)
        yield f"{path.name}:{number}", text, None


def read_sentences(spec: dict, stats: dict | None = None) -> Iterator[tuple[str, str, list[str] | None]]:
    """(source_id, sentence, tags or None) of every usable sentence of a source, in file order."""
    stats = new_stats() if stats is None else stats
    fmt = spec.get("format")
    if fmt not in FORMATS:
        raise ValueError(f"unknown source format {fmt!r} (known: {', '.join(FORMATS)})")
    seen: set[str] = set()
    if fmt == "treebank":
        files = spec.get("file")
        gen = (item for f in (files if isinstance(files, (list, tuple)) else [files])
               for item in read_treebank(f, stats, seen))
    else:
        readers = {"sick": lambda p: read_sick(p, stats, seen), "msrp": lambda p: read_msrp(p, stats, seen),
                   "lines": lambda p: read_lines(p, stats, seen)}
        gen = (item for p in _files(spec) for item in readers[fmt](p))
    for item in gen:
        stats["sentences"] += 1
        yield item
