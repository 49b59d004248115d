"""NLTK's tagger and WordNet verb files for the English grammatical negation (negation.py).

Where nltk.data.find finds the averaged perceptron tagger's and WordNet's files, found and read
without importing nltk (seconds per process); their identity (package name and a digest of each
file's size and CRC-32, never a path), which the negation's results depend on; and _Perceptron,
nltk's PerceptronTagger.tag one position at a time or in batches of sentences, with the same tags,
so that a sentence is tagged only as far as the negation's decision reads (_Tags, _SpanTags).
The names with a leading underscore are the csc package's own: negation.py uses them.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import sys
import zipfile
import zlib
from types import SimpleNamespace

import numpy as np

from workflow_scripts.digests import crc_digest


# --- NLTK resources: what the tagger mode reads, and their identity ------------------------------
# The results depend on these files (and on nltk's tagging code), so their identity is part of what
# decides a rerun (Snakemake params) and of the perturbation report. Identity = package name and a
# digest of the CRC-32 and size of each file read, never a path, which differs between machines.
TAGGER_PACKAGE = "averaged_perceptron_tagger_eng"
TAGGER_FILES = tuple(f"{TAGGER_PACKAGE}.{part}.json" for part in ("weights", "tagdict", "classes"))
WORDNET_PACKAGE = "wordnet"
WORDNET_FILES = ("index.verb", "verb.exc")  # verb lemmas and irregular verb forms: all it reads
NLTK_DATA_HINT = ("install them with `python -m nltk.downloader averaged_perceptron_tagger_eng wordnet` "
                  "(or copy an nltk_data folder) and point NLTK_DATA at that folder; `make` uses "
                  "../shared/data/nltk_data when it exists")


def _digest(sizes_crcs: dict[str, tuple[int, int]]) -> str:
    return crc_digest((name, size, crc) for name, (size, crc) in sizes_crcs.items())


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


# nltk versions whose PerceptronTagger the fast path is tested against (tests/csc/test_negation.py
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


def _crc_of(pointer) -> tuple[int, int]:
    """(size, CRC-32) of a file behind an nltk path pointer (folder or zip member)."""
    with pointer.open() as f:
        data = f.read()
    return len(data), zlib.crc32(data)


# --- tagging ---------------------------------------------------------------------------------
CACHE_MAX = 200_000  # words whose feature rows (or normal form) a _Perceptron keeps: bounded memory


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
