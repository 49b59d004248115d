"""The TF-IDF fit of the embedding stage (`python -m workflow_scripts.embed fit-tfidf`): vocabulary
and idf of a text set, fitted in one streaming pass over its Parquet files.

Only term counts are kept (count_terms: polars tokenises the texts both engines read alike,
scikit-learn's analyzer the rest), so memory follows the vocabulary, not the corpus; the
vocabulary and idf are computed from the counts as TfidfVectorizer.fit computes them
(tfidf_from_counts, bit for bit). A perturbed corpus's insertion variants are counted from their
originals (count_insertion_terms). The fitted file is read back by encoders/tfidf.py: tfidf_transform.
"""
from __future__ import annotations

import json
from collections import Counter
from numbers import Integral
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from workflow_scripts.common import atomic_path, read_json
from workflow_scripts.encoders import DEFAULT_TOKEN_PATTERN
from workflow_scripts.encoders.tfidf import tfidf_settings, tfidf_vectorizer
from workflow_scripts.shards import reading
from workflow_scripts.texts import iter_chunks, unique_rows
from workflow_scripts.variants import INSERTION_KINDS


class LazyAnalyzer:
    """tfidf_vectorizer(spec)'s analyzer, for the texts polars cannot tokenise alike (RustTokens).
    With the settings RustTokens handles (one of its token patterns, lowercase or not, nothing
    else) it is what scikit-learn's build_analyzer() does with them, pattern.findall(text.lower()),
    without the 2.8 s import (a test compares the two); otherwise scikit-learn's own, built when
    first called."""

    def __init__(self, spec: dict):
        self.spec, self._analyze = spec, None
        vec = tfidf_settings(spec)
        if RustTokens.usable(vec):
            import re
            findall = re.compile(vec.token_pattern).findall
            self._analyze = (lambda text: findall(text.lower())) if vec.lowercase else findall

    def __call__(self, text: str) -> list[str]:
        if self._analyze is None:
            self._analyze = tfidf_vectorizer(self.spec).build_analyzer()
        return self._analyze(text)


def count_terms(spec: dict, batches, fast: bool = True) -> tuple[Counter, Counter, int]:
    """Per term: documents it occurs in and total occurrences, over batches of texts, tokenised as
    the fitted vectorizer's own analyzer does. Memory follows the vocabulary, not the corpus.

    fast: texts the vectorizer's regex provably tokenises the same way in Rust are tokenised and
    counted in polars (3x faster), the others by the analyzer (see RustTokens); the counts are the
    same either way."""
    vec = tfidf_settings(spec)
    analyze = LazyAnalyzer(spec)
    rust = RustTokens(vec) if fast and RustTokens.usable(vec) else None
    df: Counter = Counter()
    tf: Counter = Counter()
    n_docs = 0
    for texts in batches:
        n_docs += len(texts)
        if rust is not None:
            texts = rust.count(texts)  # what it leaves: texts with a character Rust and Python read differently
        elif hasattr(texts, "to_pylist"):
            texts = texts.to_pylist()
        for text in texts:
            tokens = analyze(text)
            tf.update(tokens)
            df.update(set(tokens))
    if rust is not None:
        rust.add_to(df, tf)
    return df, tf, n_docs


class RustTokens:
    """Term counts of texts tokenised by polars (Rust's regex crate), for the two token patterns
    of the presets, where the result is scikit-learn's analyzer's (Python `re`, `str.lower`).

    The patterns are made of \\w and \\b only, so tokens agree when both engines agree on which
    characters are word characters, and on the lowercase of each: true for ASCII, and checked for
    every other character met (once: Python's `re` against polars itself). A text holding a
    character where they differ (combining marks such as the dot `İ` lowercases to, circled
    letters, superscript digits, final-sigma context) is handed back to the analyzer."""

    PATTERNS = (DEFAULT_TOKEN_PATTERN, r"(?u)\b\w\w+\b")
    REBUILD_EVERY = 16  # batches between merges of the per-batch counts

    @classmethod
    def usable(cls, vec) -> bool:
        """Whether `vec` (a TfidfVectorizer) tokenises by one of PATTERNS and nothing else."""
        return (vec.token_pattern in cls.PATTERNS and vec.analyzer == "word" and vec.ngram_range == (1, 1)
                and vec.preprocessor is None and vec.tokenizer is None and vec.strip_accents is None
                and vec.stop_words is None and vec.input == "content")

    def __init__(self, vec):
        import re
        self.pattern, self.lowercase = vec.token_pattern, vec.lowercase
        self._python_word = re.compile(r"\w")
        self._safe: dict[str, bool] = {}
        self._df: list[pl.DataFrame] = []
        self._tf: list[pl.DataFrame] = []

    def _rust_word(self, chars: list[str]) -> list[bool]:
        return pl.Series(chars, dtype=pl.String).str.contains(r"^\w$").to_list()

    def _check(self, chars: list[str]) -> None:
        """Decide for characters not seen before whether both engines read them alike."""
        if self.lowercase:
            lowered = pl.Series(chars, dtype=pl.String).str.to_lowercase().to_list()
            same_lower = [low == c.lower() for c, low in zip(chars, lowered)]
            parts = sorted({d for c in chars for d in c.lower()})
        else:
            same_lower, parts = [True] * len(chars), chars
        word_alike = dict(zip(parts, (bool(self._python_word.fullmatch(d)) == rw
                                      for d, rw in zip(parts, self._rust_word(parts)))))
        for c, same in zip(chars, same_lower):
            low = c.lower() if self.lowercase else c
            # Σ lowercases by context (final sigma): decided per text, so leave it to Python
            final_sigma = self.lowercase and c == "\u03a3"
            self._safe[c] = same and not final_sigma and all(word_alike[d] for d in low)

    def _python_rows(self, series: pl.Series) -> pl.Series | None:
        """Mask of the texts holding a character the engines read differently (None: no such text)."""
        special = series.str.len_bytes() != series.str.len_chars()
        if not special.any():
            return None
        chars = series.filter(special).str.split("").explode().unique().drop_nulls().to_list()
        new = [c for c in chars if c not in self._safe]
        if new:
            self._check(new)
        unsafe = [c for c in chars if not self._safe[c]]
        return series.str.contains_any(unsafe) if unsafe else None

    def _tokens(self, series: pl.Series) -> pl.Series:
        if self.lowercase:
            series = series.str.to_lowercase()
        return series.str.extract_all(self.pattern)

    def count(self, texts) -> list[str]:
        """Count the texts both engines tokenise alike; return the others (for the analyzer)."""
        series = pl.Series("term", texts, dtype=pl.String)
        leftover: list[str] = []
        python_rows = self._python_rows(series)
        if python_rows is not None:
            leftover = series.filter(python_rows).to_list()
            series = series.filter(~python_rows)
        tokens = self._tokens(series)
        self._tf.append(tokens.explode().drop_nulls().value_counts(name="n"))
        self._df.append(tokens.list.unique().explode().drop_nulls().value_counts(name="n"))
        if len(self._tf) >= self.REBUILD_EVERY:
            self._tf, self._df = [self._merge(self._tf)], [self._merge(self._df)]
        return leftover

    def token_lists(self, keys: np.ndarray, texts, analyze) -> pl.DataFrame:
        """(key, term: the text's tokens) per text, tokenised by polars, or by `analyze` where the
        engines differ (those rows last)."""
        frame = pl.DataFrame({"key": pl.Series(keys, dtype=pl.UInt64), "text": pl.Series(texts, dtype=pl.String)})
        python_rows = self._python_rows(frame["text"])
        python = None
        if python_rows is not None:
            python = frame.filter(python_rows)
            python = python.select("key", term=pl.Series([analyze(t) for t in python["text"].to_list()],
                                                         dtype=pl.List(pl.String)))
            frame = frame.filter(~python_rows)
        frame = frame.select("key", term=self._tokens(frame["text"]))
        return frame if python is None else pl.concat([frame, python])

    @staticmethod
    def _merge(frames: list[pl.DataFrame]) -> pl.DataFrame:
        return pl.concat(frames).group_by("term").agg(pl.col("n").sum())

    def add_to(self, df: Counter, tf: Counter) -> None:
        for counts, frames in ((df, self._df), (tf, self._tf)):
            if frames:
                merged = self._merge(frames)
                counts.update(dict(zip(merged["term"].to_list(), merged["n"].to_list())))
        self._df, self._tf = [], []


def tfidf_from_counts(spec: dict, df: Counter, tf: Counter, n_docs: int) -> tuple[list[str], np.ndarray]:
    """The vocabulary and idf that TfidfVectorizer.fit learns on the same texts, from term counts.

    The steps of scikit-learn 1.9's CountVectorizer.fit_transform (sorted terms; _limit_features:
    min_df/max_df, then the max_features most frequent by the same unstable argsort of the same
    float32 totals, exact below 2**24 occurrences) and TfidfTransformer.fit (smoothed idf in
    float32). Only these counts are needed, not the document-term matrix; tests compare the result
    bit for bit with TfidfVectorizer for several option sets."""
    vec = tfidf_settings(spec)
    if not df:
        raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
    terms = sorted(df)
    dfs = np.fromiter((df[t] for t in terms), dtype=np.int64, count=len(terms))
    high = vec.max_df if isinstance(vec.max_df, Integral) else vec.max_df * n_docs
    low = vec.min_df if isinstance(vec.min_df, Integral) else vec.min_df * n_docs
    if high < low:
        raise ValueError("max_df corresponds to < documents than min_df")
    mask = (dfs <= high) & (dfs >= low)
    if vec.max_features is not None and mask.sum() > vec.max_features:
        tfs = np.fromiter((tf[t] for t in terms), dtype=np.int64, count=len(terms)).astype(vec.dtype)
        mask_inds = (-tfs[mask]).argsort()[:vec.max_features]
        limited = np.zeros(len(dfs), dtype=bool)
        limited[np.where(mask)[0][mask_inds]] = True
        mask = limited
    kept = np.flatnonzero(mask)
    if not len(kept):
        raise ValueError("After pruning, no terms remain. Try a lower min_df or a higher max_df.")
    dtype = vec.dtype if vec.dtype in (np.float64, np.float32) else np.float64
    smoothed = dfs[kept].astype(dtype)
    smoothed += float(vec.smooth_idf)
    idf = np.full_like(smoothed, fill_value=n_docs + int(vec.smooth_idf), dtype=dtype)
    idf /= smoothed
    np.log(idf, out=idf)
    idf += 1.0
    return [terms[i] for i in kept], idf


def iter_texts(files: list[str], masks: list[np.ndarray] | None, batch_rows: int):
    """Arrow arrays of texts, one Parquet batch at a time; with `masks`, only the rows they select."""
    for f, path in enumerate(files):
        offset = 0
        with reading(path), pq.ParquetFile(path) as pf:
            for batch in pf.iter_batches(batch_size=batch_rows, columns=["text"]):
                if masks is not None:
                    sel = masks[f][offset:offset + batch.num_rows]
                    offset += batch.num_rows
                    batch = batch.filter(pa.array(sel))
                yield batch.column("text")


def _column(path: str, name: str) -> np.ndarray:
    with reading(path):
        return pq.read_table(path, columns=[name])[name].to_numpy()


def _in_slice(keys: np.ndarray, part: int, parts: int) -> np.ndarray:
    """Which keys are in slice `part` of `parts` of the key space (key % parts): every copy of a text
    is in the slice of its key."""
    return keys % np.uint64(parts) == np.uint64(part)


def _insertion_columns(path: str, insertion_kinds: tuple[str, ...], part: int = 0, parts: int = 1,
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """A variants file's text keys, original keys, and per row the index of its term in the file's
    own term list for an insertion variant, -1 for another kind (from the dictionary encoding of
    the columns: no string per row); the rows whose text key is in slice `part` of `parts`."""
    with reading(path):
        table = pq.read_table(path, columns=["text_key", "original_key", "kind", "term"], read_dictionary=["kind", "term"])
    if parts > 1:
        table = table.filter(pa.array(_in_slice(table["text_key"].to_numpy(), part, parts)))
    if not table.num_rows:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64), np.zeros(0, np.int16), []
    kind, term = table["kind"].combine_chunks(), table["term"].combine_chunks()
    insertion = np.isin(np.asarray(kind.indices), [i for i, k in enumerate(kind.dictionary.to_pylist())
                                                   if k in insertion_kinds])
    codes = np.where(insertion, np.asarray(term.indices), -1).astype(np.int16)
    return table["text_key"].to_numpy(), table["original_key"].to_numpy(), codes, term.dictionary.to_pylist()


def _texts_of(files: list[str], wanted: np.ndarray):
    """The texts of the sorted unique keys `wanted`, each once, file by file."""
    taken = np.zeros(len(wanted), dtype=bool)
    for path in files:
        with reading(path):
            table = pq.read_table(path, columns=["text_key", "text"])
        keys = table["text_key"].to_numpy()
        at = np.searchsorted(wanted, keys).clip(max=len(wanted) - 1)
        rows = np.flatnonzero((wanted[at] == keys) & ~taken[at])
        rows = rows[np.unique(keys[rows], return_index=True)[1]]
        taken[at[rows]] = True
        yield table["text"].take(rows)


def _key_set_digest(unique_keys: np.ndarray) -> tuple[int, int, int]:
    """Size, sum and sum of squares (mod 2**64) of a set of distinct keys: two sets with the same
    digest are the same set but with a chance as small as the keys' own collisions, at the cost
    of one pass instead of a sort."""
    with np.errstate(over="ignore"):
        return len(unique_keys), int(unique_keys.sum(dtype=np.uint64)), int((unique_keys * unique_keys).sum(dtype=np.uint64))


def _digest_union(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
    """_key_set_digest of the union of two disjoint sets of keys."""
    return a[0] + b[0], (a[1] + b[1]) % 2 ** 64, (a[2] + b[2]) % 2 ** 64


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique(values) by sorting (numpy's hash-based unique is several times slower on keys)."""
    values = np.sort(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))] if len(values) else values


def _sorted_isin(values: np.ndarray, sorted_unique: np.ndarray) -> np.ndarray:
    """np.isin for a sorted array of unique values, by binary search (no sort, no copies)."""
    if not len(sorted_unique):
        return np.zeros(len(values), dtype=bool)
    at = np.searchsorted(sorted_unique, values).clip(max=len(sorted_unique) - 1)
    return sorted_unique[at] == values


# Variant rows deduplicated at once in count_insertion_terms (about 60 bytes each with the sort's
# copies): more variants are taken in slices of the key space, one pass each, so that the fit's
# memory follows this number and the number of originals, not the corpus's variants.
VARIANTS_PER_PASS = 4_000_000


def count_insertion_terms(spec: dict, corpus_files: list[str], variants_dir: str, text_files: list[str],
                          batch_rows: int = 200_000, variants_per_pass: int = VARIANTS_PER_PASS,
                          ) -> tuple[Counter, Counter, int] | None:
    """count_terms over a perturbed corpus's unique texts (originals and variants, each text once),
    tokenising only the originals and the variants that are not insertions (7x fewer texts).

    An insertion variant is its original's whitespace words joined by single spaces with one term
    inserted (variants.INSERTION_KINDS); the token patterns RustTokens knows match word characters
    only, never whitespace, so its tokens are its original's plus its term's. With m_o the unique
    insertion variants of unique original o (m_o,t those with term t): df(w) = sum_o [w in o](1 + m_o)
    + sum_t [w in t] sum_o [w not in o] m_o,t; tf(w) = sum_o tf_o(w)(1 + m_o) + sum_t tf_t(w) sum_o m_o,t.
    A variant text equal to an original's counts as that original. The variants are deduplicated
    slice by slice of the key space (`variants_per_pass`). None where this does not apply (another
    token pattern, text partitions that do not hold exactly the originals and the variants, or a
    variant whose original is not in the corpus): then the texts are counted one by one."""
    vec = tfidf_settings(spec)
    if not RustTokens.usable(vec):
        return None
    analyze, rust = LazyAnalyzer(spec), RustTokens(vec)
    variant_files = sorted(str(p) for p in Path(variants_dir).glob("part-*.parquet"))
    original_keys = _sorted_unique(np.concatenate([_column(f, "text_key") for f in corpus_files] or [np.zeros(0, np.uint64)]))
    with reading(variant_files):
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in variant_files)
    passes = max(1, -(-rows // max(1, variants_per_pass)))
    n_insertions = np.zeros(len(original_keys), np.int64)  # m_o
    per_term: dict[str, np.ndarray] = {}  # m_o,t of each term that has an insertion variant
    others = []  # unique variants of other kinds (grammatical negation rewrites words)
    variants_digest = _key_set_digest(np.zeros(0, np.uint64))
    for part in range(passes):
        # numpy arrays of keys and small codes, not a frame of strings: 18 bytes per variant
        columns = [_insertion_columns(f, INSERTION_KINDS, part, passes) for f in variant_files]
        terms = sorted({t for *_, names in columns for t in names})
        keys = np.concatenate([c[0] for c in columns] or [np.zeros(0, np.uint64)])
        of_original = np.concatenate([c[1] for c in columns] or [np.zeros(0, np.uint64)])
        # per variant: its term's index in `terms` (insertions), -1 (other kinds)
        term_of = np.concatenate([np.append(np.array([terms.index(t) for t in names], np.int16), -1)[codes]
                                  for _, _, codes, names in columns] or [np.zeros(0, np.int16)])
        del columns
        keys, first = np.unique(keys, return_index=True)  # a text made twice counts once (its first row's)
        new = ~_sorted_isin(keys, original_keys)  # a variant text equal to an original counts as the original
        keys, first = keys[new], first[new]
        of_original, term_of = of_original[first], term_of[first]
        del first, new
        variants_digest = _digest_union(variants_digest, _key_set_digest(keys))
        others.append(keys[term_of < 0])
        inserted = term_of >= 0
        of_original, term_of = of_original[inserted], term_of[inserted]
        del keys, inserted
        if not _sorted_isin(of_original, original_keys).all():  # a variant of a text the corpus lacks
            return None
        at = np.searchsorted(original_keys, of_original)
        n_insertions += np.bincount(at, minlength=len(original_keys))
        for i, t in enumerate(terms):
            of_term = at[term_of == i]
            if len(of_term):
                per_term.setdefault(t, np.zeros(len(original_keys), np.int64))
                per_term[t] += np.bincount(of_term, minlength=len(original_keys))
        del at, of_original, term_of
    # the text set the direct count would read: exactly the originals and the variants
    texts_digest = _key_set_digest(np.zeros(0, np.uint64))
    for part in range(passes):
        keys = np.concatenate([k[_in_slice(k, part, passes)] if passes > 1 else k
                               for k in (_column(f, "text_key") for f in text_files)])
        texts_digest = _digest_union(texts_digest, _key_set_digest(_sorted_unique(keys)))
        del keys
    if texts_digest != _digest_union(_key_set_digest(original_keys), variants_digest):
        return None
    n_docs = texts_digest[0]
    others = np.sort(np.concatenate(others))  # disjoint slices: still each key once
    weighted = n_insertions > 0
    weights = pl.DataFrame({"original_key": pl.Series(original_keys[weighted], dtype=pl.UInt64),
                            "w": n_insertions[weighted] + 1})
    del n_insertions, weighted
    used = sorted(per_term)
    term_tokens = dict(zip(used, rust.token_lists(np.arange(len(used), dtype=np.uint64), used, analyze)
                           .sort("key")["term"].to_list()))
    probes = sorted({w for tokens in term_tokens.values() for w in tokens})
    having: dict[str, list[np.ndarray]] = {w: [] for w in probes}  # originals holding each term's token
    tf_parts, df_parts = [], []
    masks, _ = unique_rows(corpus_files)
    for keys, texts in iter_chunks(corpus_files, masks, batch_rows):
        frame = rust.token_lists(keys, texts, analyze).join(weights, left_on="key", right_on="original_key", how="left")
        frame = frame.with_columns(pl.col("w").fill_null(1))
        tf_parts.append(frame.explode("term").drop_nulls("term").group_by("term").agg(pl.col("w").sum()))
        df_parts.append(frame.with_columns(pl.col("term").list.unique()).explode("term").drop_nulls("term")
                        .group_by("term").agg(pl.col("w").sum()))
        for w in probes:
            having[w].append(frame.filter(pl.col("term").list.contains(w))["key"].to_numpy())
    df: Counter = Counter()
    tf: Counter = Counter()
    for counts, parts in ((tf, tf_parts), (df, df_parts)):
        if parts:
            merged = pl.concat(parts).group_by("term").agg(pl.col("w").sum())
            counts.update(dict(zip(merged["term"].to_list(), merged["w"].to_list())))
    for term, tokens in term_tokens.items():
        for w in set(tokens):
            held = np.sort(np.concatenate(having[w])) if having[w] else np.zeros(0, np.uint64)  # unique originals
            df[w] += int(per_term[term][~_sorted_isin(original_keys, held)].sum())
            tf[w] += tokens.count(w) * int(per_term[term].sum())
    # the other variants (grammatical negation rewrites words): tokenised as they are, each once
    if len(others):
        more_df, more_tf, _ = count_terms(spec, _texts_of(variant_files, others))
        df.update(more_df)
        tf.update(more_tf)
    return +df, +tf, n_docs


def fit_tfidf(spec: dict, corpus_dir: str | None, out: str, log, text_files: list[str] | None = None,
              batch_rows: int = 200_000, scope: str | None = None, variants_dir: str | None = None) -> None:
    """Fit vocabulary and idf on a text set. A corpus: its original sentences, plus their variants
    when `fit_on` is `originals_and_variants` (the default: fitted on originals alone, an inserted
    word the corpus never uses gets no dimension, and the insertion is invisible to TF-IDF). A probe
    dataset (no `corpus_dir`): all of its texts, whatever `fit_on` says (it has no originals apart
    from what it compares); the fitted file says so in `fit_on`.

    One streaming pass: the texts are read batch by batch and only term counts are kept, so memory
    follows the vocabulary (plus 8 bytes of key per text to count each unique text once), and the
    result is the in-memory TfidfVectorizer fit's. Given the corpus's variants (`variants_dir`),
    insertion variants are counted from their originals instead of tokenised one by one
    (count_insertion_terms: the same counts, 3x faster at 2.5M pairs)."""
    if corpus_dir is None:
        name, fit_on = scope, "dataset_texts"
    else:
        name, fit_on = read_json(Path(corpus_dir) / "manifest.json")["corpus"], spec.get("fit_on", "originals_and_variants")
    originals = sorted(str(p) for p in Path(corpus_dir).glob("part-*.parquet")) if corpus_dir else []
    counts = None
    if fit_on in ("originals_and_variants", "dataset_texts"):
        if not text_files:
            raise ValueError(f"fit_on: {fit_on} needs the text partitions of {name}")
        if variants_dir is not None and fit_on == "originals_and_variants":
            counts = count_insertion_terms(spec, originals, variants_dir, text_files, batch_rows)
            log.info("terms of the insertion variants %s", "counted from their originals" if counts else
                     "counted text by text (another token pattern, or texts other than originals and variants)")
        if counts is None:
            files, (masks, _) = list(text_files), unique_rows(text_files)  # a text shared by variants counts once
    else:
        files, masks = originals, None
    df, tf, n_docs = counts or count_terms(spec, iter_texts(files, masks, batch_rows))
    vocab, idf = tfidf_from_counts(spec, df, tf, n_docs)
    with atomic_path(out) as tmp:
        tmp.write_text(json.dumps({"corpus": name, "fit_on": fit_on, "documents": n_docs,
                                   "vocabulary": vocab, "idf": idf.tolist(), "spec": spec}))
    log.info("tf-idf fitted on %d texts of %s (%s): %d terms", n_docs, name, fit_on, len(vocab))
