"""English grammatical negation by addition, in the manner of SNCSE (Wang et al. 2022).

A sentence without a negation gets one: "not" after the first auxiliary, copula or modal, or
do-support ("does/did/do not" + base form of the first finite main verb). A sentence that cannot
be negated safely comes back as (None, reason, None); nothing is guessed.

Choices for the ambiguous cases:
- Tokens are whitespace words, kept verbatim except the verb replaced by its base form under
  do-support. Punctuation keeps its place in the word sequence: trailing punctuation of the token
  that "not" follows moves onto "not" ("It is." -> "It is not."), and leading punctuation of a
  replaced verb moves onto the first inserted word ('"Close' -> '"Do not close').
- Contracted auxiliaries 'm 're 'll 'd 've and verbal 's take "not" after the whole token ("it's
  not", "I'll not", "I'd not", "we've not"): grammatical for both readings of 's (is/has) and 'd
  (had/would), where "won't"-style rewrites would change a token. Without the tagger 's counts only
  after a pronoun ("John's" may be possessive). "Let's go." -> "Let's not go." (reason "auxiliary").
- Inversion (an auxiliary as first word, or in a sentence ending in "?"): "not" goes after a
  subject pronoun ("Is it raining?" -> "Is it not raining?"). With a noun-phrase subject the place is
  unclear -> reason "inverted".
- With the tagger the first verb-ish token decides, even inside a leading subordinate clause. Without
  it, the first be-form/modal decides; a have/do form first, or nothing found -> "needs_tagger".
- The perceptron tagger mis-tags many sentence-initial imperatives ("Close" -> RB). The first word is
  re-tagged, lowercased, after "Please"; it counts as an imperative if it then comes out VB/VBP, is
  a WordNet verb lemma and the next word is not a finite verb ("Work is hard." stays declarative).
- VBD/VBZ verbs WordNet does not know -> "unknown_verb" rather than a guessed base form.
- A sentence is tagged left to right only as far as its decision reads tags (the tagger's tag of
  word i depends on words up to i+2 only): the same results as tagging whole sentences, several times faster.
- The tagger mode's results depend on the NLTK data and version: nltk_resources() names them
  (package@digest, no paths); Snakemake reruns the perturbation when they change, and its report
  records them. Without the data it falls back to the rules, as if use_tagger were false.
Reasons: auxiliary, do_support, already_negated, no_verb, needs_tagger, empty, inverted, unknown_verb.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import importlib.metadata
import json
import os
import re
import sys
import zipfile
import zlib
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

BE = {"am", "is", "are", "was", "were"}
MODALS = {"can", "could", "will", "would", "shall", "should", "may", "might", "must"}
HAVE = {"have", "has", "had"}
DO = {"do", "does", "did"}
NEGATORS = {"not", "never", "no", "nobody", "nothing", "none", "nowhere", "neither", "nor", "cannot",
            # apostrophe-less n't forms that are not also ordinary words (unlike "cant", "wont")
            "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "hasnt", "havent", "hadnt",
            "couldnt", "wouldnt", "shouldnt", "aint"}
SUBJECT_PRONOUNS = {"i", "you", "he", "she", "it", "we", "they", "there"}
S_PRONOUNS = {"it", "he", "she", "that", "this", "there", "here", "what", "who", "where", "how"}
DETERMINERS = {"a", "an", "the", "this", "that", "these", "those", "my", "your", "his", "her", "its",
               "our", "their"}
NOT_IMPERATIVE = {"please", "welcome"}  # verb lemmas that open sentences as interjections
NP_TAGS = {"DT", "PDT", "PRP$", "CD", "JJ", "JJR", "JJS", "NN", "NNS", "NNP", "NNPS"}
FINITE = {"VBZ", "VBD", "VBP", "MD"}
ADVERBS = {"RB", "RBR", "RBS"}
DO_FORM = {"VBZ": "does", "VBD": "did", "VBP": "do", "VB": "do"}
EDGES = re.compile(r"^(\W*)(.*?)(\W*)$", re.S)
CLITIC = re.compile(r"^(.*[a-z0-9])('s|'m|'re|'ll|'ve|'d)$")


@dataclass(slots=True)
class _Sent:
    """A sentence's whitespace tokens and its units (the words the tagger reads: a token, or a
    stem and its clitic), one list per attribute of a unit."""
    toks: list[str]
    cores: list[str]  # tokens with leading/trailing punctuation stripped
    texts: list[str]  # each unit as fed to the tagger (case kept, apostrophes normalised)
    ws: list[str]  # lowercased, for matching
    kinds: list[str]  # "word", "stem" (followed by a clitic in the same token), "clitic" or "poss"
    at: list[int]  # index of the unit's whitespace token
    question: bool


_NEGATED = None  # _token() of a token that is a negation


def _token(tok: str) -> tuple | None:
    """A whitespace token's core (punctuation stripped) and its units' texts, lowercased forms
    and kinds, or _NEGATED. Depends on the token alone, so _parse caches it."""
    pre, core, post = EDGES.match(tok).groups()
    if not core:
        return core, (), (), ()
    norm = core.replace("\u2019", "'").replace("\u2018", "'")
    low = norm.lower()
    if low in NEGATORS or low.endswith("n't"):
        return _NEGATED
    m = CLITIC.match(low)
    if m:
        cut = len(m.group(1))
        return core, (norm[:cut], norm[cut:]), (low[:cut], low[cut:]), ("stem", "clitic")
    if low.endswith("s") and post[:1] in ("'", "\u2019"):
        return core, (norm, "'"), (low, "'"), ("word", "poss")  # "analysts'": tag as PTB does
    return core, (norm,), (low,), ("word",)


_TOKENS: dict[str, tuple] = {}  # _token() of frequent tokens (the first ones seen, bounded)
_WORDS: dict[str, tuple] = {}  # of those, the one-unit tokens as (core, text, w, kind)
_TOKENS_MAX = 100_000


def _token_cached(tok: str):
    found = _token(tok)
    if len(_TOKENS) < _TOKENS_MAX:
        _TOKENS[tok] = found
        if found is not _NEGATED and len(found[1]) == 1:
            _WORDS[tok] = (found[0], found[1][0], found[2][0], found[3][0])
    return found


def _parse(sentence: str) -> _Sent | tuple:
    toks = sentence.split()
    if not toks:
        return None, "empty", None
    question = sentence.rstrip().rstrip("\"')]\u201d\u2019\u00bb").endswith("?")
    words = list(map(_WORDS.get, toks))
    if None not in words:  # every token known, one unit each: the common case, without a loop
        cores, texts, ws, kinds = map(list, zip(*words))
        return _Sent(toks, cores, texts, ws, kinds, list(range(len(toks))), question)
    cores: list[str] = []
    texts: list[str] = []
    ws: list[str] = []
    kinds: list[str] = []
    at: list[int] = []
    for i, tok in enumerate(toks):
        found = _TOKENS.get(tok, False)
        if found is False:
            found = _token_cached(tok)
        if found is _NEGATED:
            return None, "already_negated", None
        core, t, w, k = found
        cores.append(core)
        texts += t
        ws += w
        kinds += k
        at += [i] * len(t)
    if not texts:
        return None, "empty", None
    return _Sent(toks, cores, texts, ws, kinds, at, question)


def _after(s: _Sent, i: int) -> tuple[str, str, int]:
    """Insert "not" after token i; the token's trailing punctuation moves onto "not"."""
    pre, core, post = EDGES.match(s.toks[i]).groups()
    out = s.toks[:i] + [pre + core, "not" + post] + s.toks[i + 1:]
    return " ".join(out), "auxiliary", i + 1


def _do_support(s: _Sent, i: int, aux: str, base: str) -> tuple[str, str, int]:
    """Replace token i by aux + "not" + base, keeping its punctuation and sentence-initial capital."""
    pre, core, post = EDGES.match(s.toks[i]).groups()
    if i == s.at[0] and core[:1].isupper():
        aux = aux.capitalize()
        base = base.lower() if core[1:].islower() or len(core) == 1 else base
    out = s.toks[:i] + [pre + aux, "not", base + post] + s.toks[i + 1:]
    return " ".join(out), "do_support", i


# --- NLTK resources: what the tagger mode reads, and their identity ------------------------------
# The results depend on these files (and on nltk's tagging code), so their identity is part of what
# decides a rerun (Snakemake params) and of the perturbation report. Identity = package name and a
# digest of the CRC-32 and size of each file read, never a path, which differs between machines.
TAGGER_PACKAGE = "averaged_perceptron_tagger_eng"
TAGGER_FILES = tuple(f"{TAGGER_PACKAGE}.{part}.json" for part in ("weights", "tagdict", "classes"))
WORDNET_PACKAGE = "wordnet"
WORDNET_FILES = ("index.verb", "verb.exc")  # verb lemmas and irregular verb forms: all it reads
RULES_ONLY = {"mode": "rules"}  # no tagger: reads no NLTK data, depends on no NLTK version
NLTK_DATA_HINT = ("install them with `python -m nltk.downloader averaged_perceptron_tagger_eng wordnet` "
                  "(or copy an nltk_data folder) and point NLTK_DATA at that folder; `make` uses "
                  "../shared/data/nltk_data when it exists")


def _digest(sizes_crcs: dict[str, tuple[int, int]]) -> str:
    text = ";".join(f"{name}:{size}:{crc:08x}" for name, (size, crc) in sorted(sizes_crcs.items()))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _fingerprint(version: str, tagger: dict, wordnet: dict) -> dict:
    return {"mode": "tagger", "nltk": version, "tagger": f"{TAGGER_PACKAGE}@{_digest(tagger)}",
            "wordnet": f"{WORDNET_PACKAGE}@{_digest(wordnet)}"}


def _search_paths() -> list[str]:
    """nltk.data.path as nltk sets it on import (nltk/data.py), without importing nltk: that takes
    3 s, too long for every Snakemake start. The job checks the result against nltk's own lookup."""
    paths = [os.path.expanduser(d) for d in os.environ.get("NLTK_DATA", "").split(os.pathsep) if d]
    if "APPENGINE_RUNTIME" not in os.environ and os.path.expanduser("~/") != "~/":
        paths.append(os.path.expanduser("~/nltk_data"))
    paths += [os.path.join(sys.prefix, "nltk_data"), os.path.join(sys.prefix, "share", "nltk_data"),
              os.path.join(sys.prefix, "lib", "nltk_data")]
    if os.name == "nt":
        paths += [os.path.join(os.environ.get("APPDATA", "C:\\"), "nltk_data"),
                  r"C:\nltk_data", r"D:\nltk_data", r"E:\nltk_data"]
    else:
        paths += ["/usr/share/nltk_data", "/usr/local/share/nltk_data", "/usr/lib/nltk_data",
                  "/usr/local/lib/nltk_data"]
    return paths


def _find_package(kind: str, package: str, files: tuple[str, ...], read: bool) -> dict | None:
    """The package's files where nltk.data.find finds the package (a folder on any search path
    first, then a zip of the same name): their bytes if `read`, else their (size, CRC-32), from
    the zip's directory without reading the members."""
    paths = _search_paths()
    for root in paths:
        folder = os.path.join(root, kind, package)
        if os.path.isdir(folder):
            out = {}
            for name in files:
                try:
                    with open(os.path.join(folder, name), "rb") as f:
                        out[name] = f.read()
                except OSError:
                    return None
            return out if read else _sizes_crcs(out)
    for root in paths:
        archive = os.path.join(root, kind, package + ".zip")
        if os.path.isfile(archive):
            try:
                with zipfile.ZipFile(archive) as z:
                    if read:
                        return {name: z.read(f"{package}/{name}") for name in files}
                    infos = [z.getinfo(f"{package}/{name}") for name in files]
            except (OSError, KeyError, zipfile.BadZipFile):
                continue
            return {name: (i.file_size, i.CRC) for name, i in zip(files, infos)}
    return None


def _package_files(kind: str, package: str, files: tuple[str, ...]) -> dict[str, tuple[int, int]] | None:
    """(size, CRC-32) of the package's files, as nltk.data.find finds them (_find_package)."""
    return _find_package(kind, package, files, read=False)


def _read_package(kind: str, package: str, files: tuple[str, ...]) -> dict[str, bytes] | None:
    """The package's files, as nltk.data.find finds them (_find_package)."""
    return _find_package(kind, package, files, read=True)


def _sizes_crcs(texts: dict[str, bytes]) -> dict[str, tuple[int, int]]:
    return {name: (len(data), zlib.crc32(data)) for name, data in texts.items()}


# nltk versions whose PerceptronTagger the fast path is tested against (tests/test_negation.py
# compares it with nltk's own tag()): with these, the tagger's and WordNet's files are read
# directly, without importing nltk (2 s per process: nltk imports scikit-learn, scipy.stats and
# pandas). Any other version is imported and checked against _SELF_CHECK before use.
VERIFIED_NLTK = ("3.10.4",)
# nltk.corpus.reader.wordnet.WordNetCorpusReader.MORPHOLOGICAL_SUBSTITUTIONS["v"] in those versions
VERB_SUBSTITUTIONS = (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
                      ("ing", "e"), ("ing", ""))


def _nltk_version() -> str | None:
    try:
        return importlib.metadata.version("nltk")
    except importlib.metadata.PackageNotFoundError:
        return None


class _TaggerFiles:
    """What _Perceptron reads of nltk's PerceptronTagger (weights, tag dictionary, classes,
    normalize), loaded from the tagger's JSON files as PerceptronTagger.load_from_json loads them."""

    def __init__(self, texts: dict[str, bytes]):
        weights, tagdict, classes = (json.loads(texts[name]) for name in TAGGER_FILES)
        self.model = SimpleNamespace(weights=weights)
        self.tagdict = tagdict
        self.classes = set(classes)

    @staticmethod
    def normalize(word: str) -> str:
        """PerceptronTagger.normalize of the VERIFIED_NLTK versions."""
        if "-" in word and word[0] != "-":
            return "!HYPHEN"
        if word.isdigit() and len(word) == 4:
            return "!YEAR"
        if word and word[0].isdigit():
            return "!DIGITS"
        return word.lower()


@functools.lru_cache(maxsize=8)
def _planned(use_tagger: bool, nltk_data: str | None, home: str | None) -> tuple[dict, tuple[str, ...]]:
    if not use_tagger:
        return RULES_ONLY, ()
    try:
        version = importlib.metadata.version("nltk")
    except importlib.metadata.PackageNotFoundError:
        return RULES_ONLY, ("nltk (Python package)",)
    tagger = _package_files("taggers", TAGGER_PACKAGE, TAGGER_FILES)
    wordnet = _package_files("corpora", WORDNET_PACKAGE, WORDNET_FILES)
    missing = tuple(name for name, found in ((TAGGER_PACKAGE, tagger), (WORDNET_PACKAGE, wordnet)) if not found)
    return (RULES_ONLY, missing) if missing else (_fingerprint(version, tagger, wordnet), ())


def nltk_resources(use_tagger: bool = True) -> tuple[dict, list[str]]:
    """(fingerprint, missing NLTK packages) of the grammatical negation on this machine, without
    loading anything: {"mode": "rules"}, or {"mode": "tagger", "nltk": version, "tagger": ...,
    "wordnet": ...} with each package's name@digest. GrammaticalNegator(use_tagger).fingerprint
    is the same, computed from what it loaded."""
    fingerprint, missing = _planned(bool(use_tagger), os.environ.get("NLTK_DATA"), os.environ.get("HOME"))
    return dict(fingerprint), list(missing)


def grammatical_negation_plan(perturb_settings: dict, language: str) -> dict | None:
    """What a corpus's grammatical negation depends on, for Snakemake params: None where the
    corpus gets none, else nltk_resources()'s fingerprint. Same defaults as perturb.py."""
    settings = perturb_settings.get("grammatical_negation", {})
    if not settings.get("enabled", True) or language not in settings.get("languages", ["en"]):
        return None
    return nltk_resources(settings.get("use_tagger", True))[0]


# --- tagging ---------------------------------------------------------------------------------
CACHE_MAX = 200_000  # words whose feature rows (or normal form) a _Perceptron keeps: bounded memory
PREFIX_TAGS = 8  # words per sentence negate_many tags in a batch (decisions read 6 on average)
PREFIX_BATCH = 10_000  # sentences per batch


class _Perceptron:
    """nltk's PerceptronTagger.tag, one position at a time, with the same tags.

    The tagger is greedy, left to right: the tag of word i is decided from the words i-2..i+2 and
    the two tags before it (PerceptronTagger._get_features), so tags 0..k depend on words 0..k+2
    only. The negation mostly decides at the first verb-ish word; tagging stops there.
    Scoring is nltk's AveragedPerceptron.predict on a dense weight matrix: each label's score adds
    the same weights in the same feature order (numpy sums along the slow axis one row after the
    other; an absent weight adds an exact 0.0), so the floats are identical, and the highest score
    wins with ties to the alphabetically last label, as nltk's max over (score, label) does.
    """

    def __init__(self, tagger):
        self.tagdict = tagger.tagdict
        self.normalize = tagger.normalize
        self.classes = sorted(tagger.classes)
        column = {label: j for j, label in enumerate(self.classes)}
        # a label outside `classes` would take part in nltk's sums but never win: not modelled here
        self.exact = all(label in column for w in tagger.model.weights.values() for label in w)
        self.row = {feature: r for r, feature in enumerate(tagger.model.weights)}
        # 75k x 45: 27 MB; the last row stays 0 (an absent feature, for tag_spans)
        self.zero = len(self.row)
        self.matrix = np.zeros((len(self.row) + 1, len(self.classes)))
        for feature, w in tagger.model.weights.items():
            r = self.row[feature]
            for label, weight in w.items():
                if label in column:
                    self.matrix[r, column[label]] = weight
        self.last = len(self.classes) - 1
        self.bias = self.row.get("bias")
        # feature rows per word, per raw word and per pair of previous tags; normalised words
        self._by_word: dict[str, tuple] = {}
        self._by_raw: dict[str, tuple] = {}
        self._by_tags: dict[tuple[str, str], tuple] = {}
        self._normalized: dict[str, str] = {}
        self._by_info: dict[str, tuple] = {}
        self._batch_tables = None  # tag_spans' row tables, built on first use
        self._tables()  # (and whether every tagdict tag is a label: else tag_spans is not used)

    def normalize_cached(self, word: str) -> str:
        out = self._normalized.get(word)
        if out is None:
            out = self.normalize(word)
            if len(self._normalized) < CACHE_MAX:
                self._normalized[word] = out
        return out

    def _word_rows(self, w: str) -> tuple:
        """Rows of the features a normalised word gives as word i, i-1, i-2, i+1, i+2 (None: no
        weights), looked up once per word instead of once per use."""
        rows = self._by_word.get(w)
        if rows is None:
            g = self.row.get
            rows = (g("i word " + w), g("i-1 word " + w), g("i-1 suffix " + w[-3:]), g("i-2 word " + w),
                    g("i+1 word " + w), g("i+1 suffix " + w[-3:]), g("i+2 word " + w))
            if len(self._by_word) < CACHE_MAX:
                self._by_word[w] = rows
        return rows

    def _own_rows(self, word: str) -> tuple:
        """Rows of the features of the word being tagged, as it is (suffix, first letter)."""
        own = self._by_raw.get(word)
        if own is None:
            g = self.row.get
            own = (g("i suffix " + word[-3:]), g("i pref1 " + (word[0] if word else "")))
            if len(self._by_raw) < CACHE_MAX:
                self._by_raw[word] = own
        return own

    def _info(self, word: str, marker: bool = False) -> tuple:
        """tag_spans' row of a word: the rows of its own features and of its normal form's as word
        i, i-1, i-2, i+1, i+2 (self.zero where absent), and its normal form's with_word id.
        A START/END marker is its own normal form."""
        info = self._by_info.get(word) if not marker else None
        if info is None:
            w_norm = word if marker else self.normalize_cached(word)
            info = (*[self.zero if r is None else r for r in (*self._own_rows(word), *self._word_rows(w_norm))],
                    self._tables()[5].get(w_norm, 0))
            if not marker and len(self._by_info) < CACHE_MAX:
                self._by_info[word] = info
        return info

    def tag_at(self, i: int, word: str, ctx: list[str], prev: str, prev2: str) -> str:
        """Tag of word i; ctx holds the normalised words padded by two START and two END markers."""
        tag = self.tagdict.get(word)
        if tag:
            return tag
        i += 2
        g = self.row.get
        own = self._own_rows(word)
        tags = self._by_tags.get((prev, prev2))
        if tags is None:  # 45 x 45 pairs at most
            tags = self._by_tags[prev, prev2] = (g("i-1 tag " + prev), g("i-2 tag " + prev2),
                                                g(f"i tag+i-2 tag {prev} {prev2}"))
        here, before, before2 = self._word_rows(ctx[i]), self._word_rows(ctx[i - 1]), self._word_rows(ctx[i - 2])
        after, after2 = self._word_rows(ctx[i + 1]), self._word_rows(ctx[i + 2])
        # the features of PerceptronTagger._get_features, in its order
        rows = [r for r in (
            self.bias, own[0], own[1], tags[0], tags[1], tags[2], here[0], g(f"i-1 tag+i word {prev} {ctx[i]}"),
            before[1], before[2], before2[3], after[4], after[5], after2[6]) if r is not None]
        if not rows:
            return self.classes[-1]
        scores = self.matrix[rows].sum(axis=0)
        return self.classes[self.last - int(scores[::-1].argmax())]  # the last of the highest


    def _tables(self):
        """Rows of the features that depend on the previous tags, as arrays indexed by tag id
        (the labels, then the two START markers): i-1 tag, i-2 tag, the pair of them, and per
        word that has any "i-1 tag+i word" feature (id > 0; 0: none) that feature per tag."""
        if self._batch_tables is None:
            labels = self.classes + ["-START-", "-START2-"]
            g = lambda f: self.row.get(f, self.zero)
            prev = np.array([g("i-1 tag " + t) for t in labels])
            prev2 = np.array([g("i-2 tag " + t) for t in labels])
            pair = np.array([[g(f"i tag+i-2 tag {a} {b}") for b in labels] for a in labels])
            column = {t: j for j, t in enumerate(labels)}
            by_word: dict[str, dict[int, int]] = {}
            for feature, r in self.row.items():
                if feature.startswith("i-1 tag+i word "):
                    tag, _, word = feature[len("i-1 tag+i word "):].partition(" ")
                    if tag in column:
                        by_word.setdefault(word, {})[column[tag]] = r
            word_ids = {w: i + 1 for i, w in enumerate(by_word)}
            with_word = np.full((len(word_ids) + 1, len(labels)), self.zero)
            for w, rows in by_word.items():
                for j, r in rows.items():
                    with_word[word_ids[w], j] = r
            self._batch_tables = (labels, column, prev, prev2, pair, word_ids, with_word)
            self.batchable = set(self.tagdict.values()) <= set(column)
        return self._batch_tables

    def tag_spans(self, sentences: list[list[str]], done: list[list[str]], k: int) -> None:
        """tag_at for the next k words of every word list at once, after the tags it already has
        (`done`, extended in place; all of them where fewer than k are left).

        Position by position over all lists: the features that depend on the words are looked up
        per word (cached), those on the previous tags from the arrays of _tables, and the scores
        summed in tag_at's feature order with an exact 0.0 for an absent feature, so the tags are
        tag_at's, float for float."""
        labels, column, prev_rows, prev2_rows, pair_rows, word_ids, with_word = self._tables()
        n, zero = len(sentences), self.zero
        start_list = [len(d) for d in done]
        starts = np.array(start_list, dtype=np.int64)
        sizes = np.array([len(w) for w in sentences], dtype=np.int64)
        lengths = np.clip(sizes - starts, 0, k)
        # the words as ids: 0-3 the START and END markers, then each distinct word of the batch;
        # context[s, j]: the word at position start - 2 + j (tag_at's ctx[start + j])
        bounds = [(max(st - 2, 0), min(len(w), st + k + 2)) for w, st in zip(sentences, start_list)]
        flat = [word for w, (lo, hi) in zip(sentences, bounds) for word in w[lo:hi]]
        ids = {w: j for j, w in enumerate(dict.fromkeys(flat), start=4)}
        counts = np.array([hi - lo for lo, hi in bounds], dtype=np.int64)
        first_col = np.array([lo for lo, _ in bounds], dtype=np.int64) - starts + 2
        offsets = np.cumsum(counts) - counts
        context = np.zeros((n, k + 4), dtype=np.int64)  # 0: -START-
        context[np.repeat(np.arange(n), counts),
                np.repeat(first_col - offsets, counts) + np.arange(len(flat))] = np.fromiter(
                    map(ids.__getitem__, flat), dtype=np.int64, count=len(flat))
        context[starts == 0, 1] = 1  # -START2-, before word 0
        context[starts == 1, 0] = 1
        end = sizes - starts + 2  # where -END- goes
        for marker, col in ((2, end), (3, end + 1)):  # -END-, -END2-, where in the window
            inside = np.flatnonzero(col < k + 4)
            context[inside, col[inside]] = marker
        # per id: its tagdict tag id (-1: none), and rows: of its own features, of its normal
        # form's features as word i, i-1, i-2, i+1, i+2, and its with_word id
        words = ["-START-", "-START2-", "-END-", "-END2-", *ids]
        known = np.array([-1] * 4 + [column[self.tagdict[w]] if self.tagdict.get(w) else -1 for w in words[4:]],
                         dtype=np.int64)
        info = np.array([self._info(w, i < 4) for i, w in enumerate(words)], dtype=np.int64).reshape(len(words), 10)
        bias = zero if self.bias is None else self.bias
        # the two tags before each span, as tag_at's prev and prev2
        before_span = [(d[-1], d[-2]) if len(d) >= 2 else (d[0], "-START-") if d else ("-START-", "-START2-")
                       for d in done]
        prev = np.array([column[a] for a, _ in before_span], dtype=np.int64)
        prev2 = np.array([column[b] for _, b in before_span], dtype=np.int64)
        tags = np.full((n, k), -1, dtype=np.int64)
        for i in range(k):
            active = np.flatnonzero(lengths > i)
            if not len(active):
                break
            out = known[context[active, i + 2]]
            scored = out < 0
            if scored.any():
                at = active[scored]
                p, p2 = prev[at], prev2[at]
                here, before, before2 = info[context[at, i + 2]], info[context[at, i + 1]], info[context[at, i]]
                after, after2 = info[context[at, i + 3]], info[context[at, i + 4]]
                # tag_at's feature order: bias, i suffix, i pref1, i-1 tag, i-2 tag, i tag+i-2 tag,
                # i word, i-1 tag+i word, i-1 word, i-1 suffix, i-2 word, i+1 word, i+1 suffix, i+2 word
                features = (here[:, 0], here[:, 1], prev_rows[p], prev2_rows[p2], pair_rows[p, p2], here[:, 2],
                            with_word[here[:, 9], p], before[:, 3], before[:, 4], before2[:, 5], after[:, 6],
                            after[:, 7], after2[:, 8])
                scores = np.repeat(self.matrix[bias][None, :], len(at), axis=0)
                gathered = np.empty_like(scores)
                for rows in features:  # one feature after the other, as tag_at sums
                    scores += np.take(self.matrix, rows, axis=0, out=gathered)
                out = out.copy()
                out[scored] = self.last - scores[:, ::-1].argmax(axis=1)
            tags[active, i] = out
            prev2[active] = prev[active]
            prev[active] = out
        for d, row, m in zip(done, tags.tolist(), lengths.tolist()):
            if m:
                d += [labels[t] for t in row[:m]]


class _Tags:
    """Tags of one word sequence, computed left to right only as far as they are read.

    `first` may replace the tag of word 0 (the imperative re-tagging) when it is read; the words
    after it are tagged from the tagger's own tag, as when the whole sentence was tagged first.
    Without a _Perceptron (nltk's tagger does not match it) the whole sequence is tagged by nltk's tag()."""
    __slots__ = ("_p", "_tagger", "_words", "_first", "_tags", "_ctx", "_prev", "_prev2", "_tag0")

    def __init__(self, perceptron: _Perceptron | None, tagger, words: list[str], first=None):
        self._p, self._tagger, self._words, self._first = perceptron, tagger, words, first
        self._tags: list[str] = []  # the tagger's own tags
        self._ctx = ["-START-", "-START2-"]
        self._prev, self._prev2 = "-START-", "-START2-"
        self._tag0 = None  # first(tags[0]), once read

    def __len__(self) -> int:
        return len(self._words)

    def __getitem__(self, k: int) -> str:
        tags = self._tags
        if not 0 <= k < len(tags):  # not read before (decisions look at a tag more than once)
            self._tag_to(k)
        if k == 0 and self._first is not None:
            if self._tag0 is None:
                self._tag0 = self._first(tags[0])
            return self._tag0
        return tags[k]

    def _tag_to(self, k: int) -> None:
        tags, words = self._tags, self._words
        if not 0 <= k < len(words):
            raise IndexError(k)
        if self._p is None:
            tags += [t for _, t in self._tagger.tag(words)]
            return
        ctx, n = self._ctx, len(words)
        while len(tags) <= k:
            i = len(tags)
            while len(ctx) < i + 5:  # the words up to i+2, then END markers
                j = len(ctx) - 2
                ctx.append(self._p.normalize_cached(words[j]) if j < n else ("-END-", "-END2-")[j - n])
            tag = self._p.tag_at(i, words[i], ctx, self._prev, self._prev2)
            self._prev2, self._prev = self._prev, tag
            tags.append(tag)


class _NeedTags(Exception):
    """A decision read a tag its sentence's batch has not computed yet. Raised as a new instance
    each time: a raised instance's traceback grows with every raise and keeps its frames alive."""


class _SpanTags:
    """_Tags' reading interface over the tags a batch computed so far (negate_many): a tag
    beyond them raises _NeedTags. `first`: the tag of word 0 after the imperative re-tagging."""
    __slots__ = ("_tags", "_n", "_first")

    def __init__(self, tags: list[str], n: int, first: str):
        self._tags, self._n, self._first = tags, n, first

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, k: int) -> str:
        if k == 0:
            return self._first
        if 0 < k < len(self._tags):
            return self._tags[k]
        if 0 < k < self._n:
            raise _NeedTags
        raise IndexError(k)


# sentences whose tags the _Perceptron must reproduce before it replaces nltk's tag() (a changed
# nltk would fail here and fall back to nltk's own, slower tagging)
_SELF_CHECK = [
    "The quick brown fox jumps over the lazy dog .",
    "In 1998 the well-known firm sold 3,000 shares to Smith & Co. for $ 12m",
    "Close the door , please !",
    "Had I known , I would have left earlier",
    "She doesn't like re-tagging 42 X-rays of 2024",
]


class GrammaticalNegator:
    def __init__(self, use_tagger: bool = True, lazy_tags: bool = True):
        """use_tagger: load NLTK's tagger and WordNet verbs (else rules only; see the module
        docstring). lazy_tags=False tags whole sentences with nltk's own tag() (the reference
        the tests compare the lazy tagging against)."""
        self.has_tagger = False
        self.tagger_error: str | None = None  # why the tagger could not be loaded, for logs
        self.missing: list[str] = []  # NLTK packages use_tagger asked for and not found
        self.fingerprint = dict(RULES_ONLY)  # what the results depend on (see nltk_resources)
        self._tagger = self._perceptron = None
        self._verb_lemmas: frozenset[str] = frozenset()
        self._verb_exceptions: dict[str, list[str]] = {}
        self._verb_rules: list[tuple[str, str]] = []
        if use_tagger:
            if not (lazy_tags and _nltk_version() in VERIFIED_NLTK and self._load_files()):
                self._load(lazy_tags)

    def _load_files(self) -> bool:
        """The fast path from the NLTK data files alone, without importing nltk (see
        VERIFIED_NLTK); False where they are missing or the tagger needs nltk's own code."""
        tagger_files = _read_package("taggers", TAGGER_PACKAGE, TAGGER_FILES)
        wordnet_files = _read_package("corpora", WORDNET_PACKAGE, WORDNET_FILES)
        if tagger_files is None or wordnet_files is None:
            return False  # nltk's loading reports what is missing
        tagger = _TaggerFiles(tagger_files)
        perceptron = _Perceptron(tagger)
        if not perceptron.exact:
            return False
        self._set_wordnet(wordnet_files, list(VERB_SUBSTITUTIONS))
        self._tagger, self._perceptron, self.has_tagger = tagger, perceptron, True
        self.fingerprint = _fingerprint(_nltk_version(), _sizes_crcs(tagger_files), _sizes_crcs(wordnet_files))
        return True

    def _load(self, lazy_tags: bool) -> None:
        try:
            import nltk
        except ImportError as e:
            self.missing, self.tagger_error = ["nltk (Python package)"], f"ImportError: {e}"
            return
        # nltk reads NLTK_DATA only when imported; honour it if it was set later
        for p in reversed(os.environ.get("NLTK_DATA", "").split(os.pathsep)):
            if p and p not in nltk.data.path:
                nltk.data.path.insert(0, p)
        errors = {}
        tagger = wordnet = None
        try:
            from nltk.tag.perceptron import PerceptronTagger
            loc = nltk.data.find(f"taggers/{TAGGER_PACKAGE}/")
            tagger = (PerceptronTagger(loc=loc), {n: _crc_of(loc.join(n)) for n in TAGGER_FILES})
        except (ImportError, LookupError, OSError, ValueError) as e:
            errors[TAGGER_PACKAGE] = e
        try:
            wordnet = self._load_wordnet(nltk)
        except (ImportError, LookupError, OSError, ValueError) as e:
            errors[WORDNET_PACKAGE] = e
        if errors:
            self.missing = list(errors)
            e = next(iter(errors.values()))
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip(" *")]
            self.tagger_error = f"{type(e).__name__}: {lines[0] if lines else ''}"
            self._verb_lemmas, self._verb_exceptions = frozenset(), {}
            return
        self._tagger = tagger[0]
        self.fingerprint = _fingerprint(nltk.__version__, tagger[1], wordnet)
        self.has_tagger = True
        if lazy_tags:
            perceptron = _Perceptron(self._tagger)
            words = [s.split() for s in _SELF_CHECK]
            if perceptron.exact and all(
                    [_Tags(perceptron, None, w)[i] for i in range(len(w))] == [t for _, t in self._tagger.tag(w)]
                    for w in words):
                self._perceptron = perceptron
            else:
                self.tagger_error = "nltk's tagger differs from the fast path: tagging whole sentences with nltk"

    def _load_wordnet(self, nltk) -> dict[str, tuple[int, int]]:
        """The verb lemmas and irregular verb forms of WordNet, found where nltk.corpus.wordnet
        finds them (a folder, else the zip). Read from the two files themselves (WordNet's WNDB
        format): nltk's WordNet reader takes seconds and 180 MB per process loading all of it."""
        from nltk.corpus.reader.wordnet import WordNetCorpusReader
        try:
            root = nltk.data.find(f"corpora/{WORDNET_PACKAGE}")
        except LookupError:
            root = nltk.data.find(f"corpora/{WORDNET_PACKAGE}.zip/{WORDNET_PACKAGE}/")
        texts = {}
        for name in WORDNET_FILES:
            with root.join(name).open() as f:
                texts[name] = f.read()
        self._set_wordnet(texts, list(WordNetCorpusReader.MORPHOLOGICAL_SUBSTITUTIONS["v"]))
        return _sizes_crcs(texts)

    def _set_wordnet(self, texts: dict[str, bytes], verb_rules: list[tuple[str, str]]) -> None:
        """Verb lemmas from index.verb and irregular forms from verb.exc (WordNet's WNDB format)."""
        lemmas = set()
        for line in texts["index.verb"].decode("utf-8").splitlines():
            if line and not line.startswith(" "):  # lines opening with spaces are the licence
                fields = line.split()
                if len(fields) > 1 and fields[1] == "v":
                    lemmas.add(fields[0])
        exceptions = {}
        for line in texts["verb.exc"].decode("utf-8").splitlines():
            terms = line.split()
            if terms:
                exceptions[terms[0]] = terms[1:]
        self._verb_lemmas, self._verb_exceptions = frozenset(lemmas), exceptions
        self._verb_rules = verb_rules

    def verb_lemmas(self, form: str) -> list[str]:
        """WordNet's base forms of a verb form, in WordNet's morphy order: the form itself if it
        is a verb lemma, then its listed irregular bases or else its regular suffix rewrites
        (what nltk's private wordnet._morphy(form, "v") returns)."""
        forms = self._verb_exceptions.get(form)
        if forms is None:
            forms = [form[:-len(old)] + new for old, new in self._verb_rules if form.endswith(old)]
        out: list[str] = []
        for f in [form, *forms]:
            if f in self._verb_lemmas and f not in out:
                out.append(f)
        return out

    def negate(self, sentence: str) -> tuple[str | None, str, int | None]:
        """Return (negated_text, reason, position); position indexes the first inserted word
        in the output's whitespace tokens. See the module docstring for the reasons."""
        s = _parse(sentence)
        if isinstance(s, tuple):
            return s
        if not self.has_tagger:
            return self._rules(s)
        # a sentence is tagged only as far as its decision reads tags
        return self._tagged(s, _Tags(self._perceptron, self._tagger, s.texts, lambda tag: self._first_tag(s, tag)))

    def negate_many(self, sentences: list[str]) -> list[tuple[str | None, str, int | None]]:
        """negate() of each sentence; with the fast tagger, the sentences are tagged together in
        spans (_Perceptron.tag_spans): the same tags, a fraction of the cost of one at a time."""
        if self._perceptron is None or not self._perceptron.batchable:
            return [self.negate(s) for s in sentences]
        with _no_gc():
            out = []
            for lo in range(0, len(sentences), PREFIX_BATCH):
                out += self._negate_batch(sentences[lo:lo + PREFIX_BATCH])
            return out

    def _negate_batch(self, sentences: list[str]) -> list[tuple[str | None, str, int | None]]:
        """Rounds: tag the next span of every sentence not yet decided (PREFIX_TAGS words, then
        twice as many each round), then decide each one again from its tags so far; a decision
        that reads a tag not yet computed raises _NeedTags and waits for the next round.
        Deciding is a function of the tags read, so the results are negate()'s."""
        out: list = [_parse(s) for s in sentences]
        todo = [i for i, s in enumerate(out) if not isinstance(s, tuple)]
        words = {i: out[i].texts for i in todo}
        tags: dict[int, list[str]] = {i: [] for i in todo}
        first: dict[int, str] = {}
        span = PREFIX_TAGS
        while todo:
            self._perceptron.tag_spans([words[i] for i in todo], [tags[i] for i in todo], span)
            if not first:  # every sentence has its first tag now: the imperative re-tagging, together
                retag = {i: w for i in todo if (w := self._retag_words(out[i], tags[i][0])) is not None}
                retagged = {i: [] for i in retag}
                self._perceptron.tag_spans(list(retag.values()), list(retagged.values()), 3)
                first = {i: self._first_from_retag(tags[i][0], retag[i], retagged[i]) if i in retag
                         else tags[i][0] for i in todo}
            waiting = []
            for i in todo:
                try:
                    out[i] = self._tagged(out[i], _SpanTags(tags[i], len(words[i]), first[i]))
                except _NeedTags:
                    waiting.append(i)
            todo, span = waiting, span * 2
        return out

    def _retag_words(self, s: _Sent, tag: str) -> list[str] | None:
        """The perceptron tagger mis-tags many sentence-initial imperatives ("Close" -> RB): a
        first word that is a WordNet verb lemma is re-tagged, lowercased, after "Please" (these
        words; None where the tagger's tag stands)."""
        w = s.ws[0]
        if (tag == "VB" or s.kinds[0] != "word" or not w.isalpha() or w in NOT_IMPERATIVE
                or w in BE or w in MODALS or w in HAVE or w in DO or w not in self._verb_lemmas):
            return None
        return ["Please", s.texts[0].lower(), *s.texts[1:]]

    @staticmethod
    def _first_from_retag(tag: str, words: list[str], retagged) -> str:
        """VB/VBP after "Please", not followed by a finite verb, makes the first word an imperative (VB)."""
        if retagged[1] not in ("VB", "VBP"):
            return tag
        if len(words) > 2 and (words[2].lower() in BE or retagged[2] in FINITE):
            return tag
        return "VB"

    def _first_tag(self, s: _Sent, tag: str) -> str:
        """The tag of the first word, after the imperative re-tagging (_retag_words)."""
        words = self._retag_words(s, tag)
        if words is None:
            return tag
        return self._first_from_retag(tag, words, _Tags(self._perceptron, self._tagger, words))

    def _inverted(self, s: _Sent, k: int, tags):
        """Place "not" for the auxiliary at unit k: after it, or after an inverted subject pronoun."""
        has_next = k + 1 < len(s.ws)
        if k > 0 and not s.question:
            return _after(s, s.at[k])
        if has_next and s.kinds[k + 1] == "word" and s.ws[k + 1] in SUBJECT_PRONOUNS:
            return _after(s, s.at[k + 1])
        if tags is None:  # no tags: cannot tell "Who is coming?" from "Why is the sky blue?"
            return (None, "inverted", None) if k == 0 else (None, "needs_tagger", None)
        if not has_next or tags[k + 1] in NP_TAGS:
            return None, "inverted", None
        return _after(s, s.at[k])  # e.g. "Who is coming?": the wh-word is the subject

    def _rules(self, s: _Sent):
        """Tagger-free mode: the first be-form or modal (or contracted auxiliary) decides."""
        ws, kinds, n = s.ws, s.kinds, len(s.ws)
        for k, (w, kind) in enumerate(zip(ws, kinds)):
            if kind == "stem" and w == "let":
                return _after(s, s.at[k])
            if kind == "clitic":
                if w != "'s" or ws[k - 1] in S_PRONOUNS:  # else maybe possessive
                    return _after(s, s.at[k])
                continue
            if kind != "word":  # a stem or a possessive '
                continue
            if w in MODALS:
                # a capitalised modal after the first word is a name ("In May ..."); after a
                # determiner it is a noun ("the can", "his will")
                if (k > 0 and (s.cores[s.at[k]][:1].isupper() or ws[k - 1] in DETERMINERS)):
                    continue
                if k == 0 and not (k + 1 < n and ws[k + 1] in SUBJECT_PRONOUNS):
                    continue  # "May is warm.", "Will Smith ...": may be a name
                return self._inverted(s, k, None)
            if w in BE:
                return self._inverted(s, k, None)
            if w in HAVE or w in DO:
                return None, "needs_tagger", None  # auxiliary or main verb: needs tags
        return None, "needs_tagger", None

    def _tagged(self, s: _Sent, tags: _Tags):
        """Tagger mode: the first verb-ish token decides. Tags are read only where a decision
        needs them (each read tags the sentence up to there)."""
        ws, kinds, at, n = s.ws, s.kinds, s.at, len(s.ws)
        for k, (w, kind) in enumerate(zip(ws, kinds)):
            if kind == "stem" and w == "let":
                return _after(s, at[k])
            if kind == "clitic":
                t = tags[k]
                if t in FINITE or t == "VB":  # 's tagged POS is a possessive
                    return _after(s, at[k])
                continue
            if kind != "word":  # a stem or a possessive '
                continue
            nxt_pronoun = k + 1 < n and kinds[k + 1] == "word" and ws[k + 1] in SUBJECT_PRONOUNS
            noun_modal = k > 0 and ws[k - 1] in DETERMINERS  # "The can is empty."
            if w in BE or (k == 0 and w in MODALS and nxt_pronoun) or (not noun_modal and tags[k] == "MD"):
                return self._inverted(s, k, tags)
            if w in HAVE or w in DO:
                # auxiliary if a participle (have) / base verb (do) follows, possibly after an
                # inverted subject pronoun and adverbs: "Have you ever seen it?", "I do like it."
                inv = (k == 0 or s.question) and nxt_pronoun
                j = k + 2 if inv else k + 1
                while j < n and tags[j] in ADVERBS:
                    j += 1
                if inv and s.question:  # "Do you like it?" (the tagger often misses that VB)
                    return _after(s, at[k + 1])
                # the tagger reads some participles as VBD ("has said") and "like" after "do"
                # as a preposition ("I do like it.")
                verb_follows = j < n and (tags[j] in ("VBN", "VBD") if w in HAVE
                                          else (tags[j] == "VB" or ws[j] == "like"))
                if verb_follows:
                    return _after(s, at[k + 1] if inv else at[k])
                if s.question and k + 1 < n and tags[k + 1] in NP_TAGS:
                    return None, "inverted", None  # "Does the cat sleep?"
            t = tags[k]
            if t == "VB":
                if (k > 0 and tags[k - 1] == "TO") or (k == 0 and w in NOT_IMPERATIVE):
                    continue  # infinitive ("To err is human."), or "Welcome to ...", "Please help."
                return _do_support(s, at[k], "do", s.cores[at[k]])  # imperative or mis-tagged VBP
            if t in ("VBZ", "VBD", "VBP"):
                base = self._base(w, t) if t != "VBP" else s.cores[at[k]]
                if base is None:
                    return None, "unknown_verb", None
                return _do_support(s, at[k], DO_FORM[t], base)
        return None, "no_verb", None

    def _base(self, w: str, tag: str) -> str | None:
        # the tag says the form is inflected, so prefer a lemma other than the word itself
        # ("saw" -> "see", "found" -> "find", "lay" -> "lie"); WordNetLemmatizer.lemmatize
        # would return the shortest candidate, often the word itself
        cands = self.verb_lemmas(w)
        other = [c for c in cands if c != w]
        return min(other or cands, key=len) if cands else None


@contextlib.contextmanager
def _no_gc():
    """The cyclic garbage collector off while a batch is negated: the batch makes millions of
    short-lived objects without cycles (refcounting frees them), and each collection they set off
    would traverse the tagger's 75,000 weight dictionaries (half of negate_many's time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _crc_of(pointer) -> tuple[int, int]:
    """(size, CRC-32) of a file behind an nltk path pointer (folder or zip member)."""
    with pointer.open() as f:
        data = f.read()
    return len(data), zlib.crc32(data)
