"""Montague modifier probe, the job of rule montague_score: one (dataset, model)'s distances, the
three consistency tests and their shares with intervals (methods.md §5; seed paper 004).

Distance d(x, y) = 1 - cos(x, y) between the vectors of two strings, read from one model's vector
store (keys: common.text_key of the strings phrases.py wrote). Tests, per phrase:
1. single-phrase intersectivity ("single"): pass iff every d(P, w) over the words w of P is <=
   (non-strict, as the reference) every d(S, P\\S) over the splits of P into two non-empty parts,
   each part encoded as a (sub-)phrase in word order. AN `a n`: max(d(P,a), d(P,n)) <= d(a,n).
   AAN `a1 a2 n`: max(d(P,a1), d(P,a2), d(P,n)) <= min(d(a1,"a2 n"), d(a2,"a1 n"), d(n,"a1 a2")).
   Keys: the adjective's type (AN), (outer type, inner type) = (type a1, type a2) (AAN, k^2 keys).
2. phrase-pair intersectivity ("pair"): for nouns n != n' (unordered pairs) and ordered adjective
   pairs a1 != a2, pass iff d(a1 n, a1 n') < d(a2 n, a2 n') (strict: a tie fails). Key (type a1,
   type a2). A same-type key holds (a1, a2) and (a2, a1) alike, exactly one of which passes unless
   they tie, so its share is 0.5 (less with ties): a property of the test, not of the model.
3. non-subsectivity ("nonsubsective"): AN only, pass iff d(AN, A) < d(AN, N) (strict). Key: type.

What the reference code does wrong and this module does not (methods.md §5):
- Its filter against batch padding drops every distance >= 1. That also drops real distances
  (cos <= 0), and every comparison with a zero vector (torch gives cos 0 for one), so it can only
  turn failures into passes, and a phrase whose distances are all dropped passes with nothing
  compared. Here every distance counts, whatever its size. `reference_padding_verdicts` repeats
  the defect for the one-off measurement in tests/benchmarks/bench_montague.py only.
- A zero-norm vector (a word a static model does not know; a TF-IDF string with no known term)
  has no cosine. A comparison that needs one is *undefined*: counted (n_undefined), never a pass
  or a fail. A word is unknown to the model when its own vector has norm 0; every comparison
  involving a (sub-)phrase with an unknown word is undefined too (a word-vector mean would
  otherwise silently drop the word), so a phrase never passes because nothing was compared.
- It averages per-noun means, which weights test 2's comparisons unequally (noun i is the first
  noun of 11 - i pairs). The estimate here is the pooled share of all defined comparisons of a key;
  the reference's mean of per-noun means (a comparison belongs to the noun that comes first in the
  list) is reported beside it for test 2, as `mean_of_noun_means`. (For tests 1 and 3 every noun has
  the same number of phrases per key, so the two agree unless some are undefined.)
- It gives no interval. Every share here has a 95% interval, and the paired replicates behind the
  model comparisons come from a bootstrap. Nouns and adjectives are crossed factors, so the default
  resamples both (`nouns_and_adjectives`: the two-way "pigeonhole" bootstrap; each replicate draws
  the nouns and the adjectives with replacement, and an item weighs the product of its words' draw
  counts); `nouns` or `adjectives` resample one factor only. The `resampled` column says which.
  Streams are paired across models (issue 26): seeded by the config seed and (dataset, test/kind)
  -- never the model -- over the dataset's word lists (model-independent positions), so replicate b
  draws the same nouns and adjectives for every model, an identical copy of a model gets identical
  replicates, and the replicates written to replicates.parquet subtract replicate by replicate
  (differences.py). All keys of a test share a replicate's draws. Test 2's 241,560 comparisons are
  summed type by type (`pair_shares`: same draws, same numbers as item by item, ~100x less work). A
  replicate in which a key has no defined item is NaN.
- Independent units (issue 43): the phrases of a key cross adjectives and nouns, so n is not the
  phrases but the fewest levels of a resampled factor among the key's defined items, per role
  (`n_units`; an AAN key's outer and inner adjectives, a pair key's two adjectives, counted apart),
  and a share's interval is Wilson's score interval over that n (`unit_interval`; `ci_method`
  wilson_min_factor): one method at every share, monotone in it, conservative for a crossed design
  (its variance is at most p(1 - p) / n_units). All 6 nouns x 15 adjectives passing: Wilson at 1 of
  n = 6, [0.610, 1]. The mean of noun means takes the same n.

Outputs of `score` (one job per dataset and model):
- distances.parquet, per phrase: phrase_id, phrase, kind, key, noun_idx, adj1_idx, adj2_idx,
  d_phrase_1..3 (d(P, word i) in word order; _3 null for AN), d_split_1..3 (d(word i, the rest),
  for AN only d_split_1 = d(a, n)), single_pass and nonsubsective_pass (null where undefined;
  nonsubsective only for AN).
- pair_distances.parquet: adj_idx, adjective, type, noun_idx_1 < noun_idx_2, noun_1, noun_2,
  distance = d(adj noun_1, adj noun_2): the distances test 2 compares.
- shares.parquet: a row per (test, key) (columns SHARE_SCHEMA); summary.json: counts, unknown
  words, zero-norm strings, bootstrap settings, store provenance.
The tables and heat maps of every (dataset, model) are the aggregate job's (tables.py).
"""
from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np
import polars as pl
import scipy.sparse as sp

from workflow_scripts.bootstrap import (LEVEL, bootstrap_rng, replicate_rows, resample_counts,
                                        write_replicates)
from workflow_scripts.common import atomic_path, setup_logging, text_key, write_json
from workflow_scripts.montague.columns import SHARE_SCHEMA
from workflow_scripts.montague.phrases import aan_key, join_words
from workflow_scripts.paired_statistics import wilson_interval
from workflow_scripts.vector_store import VectorStore, spec_digest

TESTS = ("single", "pair", "nonsubsective")
UNITS = ("nouns_and_adjectives", "nouns", "adjectives")
CHUNK = 20_000  # string pairs per store lookup
REPLICATE_CHUNK = 32  # bootstrap replicates per weight matrix (32 x items float64)
DIST_COLUMNS = ("d_phrase_1", "d_phrase_2", "d_phrase_3", "d_split_1", "d_split_2", "d_split_3")
DIST_SCHEMA = {"phrase_id": pl.UInt64, "phrase": pl.String, "kind": pl.String, "key": pl.String,
               "noun_idx": pl.Int32, "adj1_idx": pl.Int32, "adj2_idx": pl.Int32,
               **{c: pl.Float64 for c in DIST_COLUMNS}, "single_pass": pl.Boolean, "nonsubsective_pass": pl.Boolean}
PAIR_SCHEMA = {"adj_idx": pl.Int32, "adjective": pl.String, "type": pl.String, "noun_idx_1": pl.Int32,
               "noun_idx_2": pl.Int32, "noun_1": pl.String, "noun_2": pl.String, "distance": pl.Float64}


# ---- the tests, on distances ---------------------------------------------------------------------

def single_verdicts(d_phrase: np.ndarray, d_split: np.ndarray, n_words: np.ndarray,
                    known: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(passed, defined) of test 1 per phrase. d_phrase, d_split: (n, 3), columns past what a
    phrase has are ignored (AN: two phrase-word distances, one split). Defined: all its distances
    are numbers (and, with `known`, all its words are known). Non-strict, as the reference."""
    d_phrase, d_split = np.asarray(d_phrase, np.float64), np.asarray(d_split, np.float64)
    n_words = np.asarray(n_words)
    cols = np.arange(3)
    used_p = cols[None, :] < n_words[:, None]
    used_s = cols[None, :] < np.where(n_words == 2, 1, n_words)[:, None]
    finite = np.where(used_p, np.isfinite(d_phrase), True).all(1) & np.where(used_s, np.isfinite(d_split), True).all(1)
    defined = finite if known is None else finite & np.asarray(known, bool)
    with np.errstate(invalid="ignore"):
        worst = np.where(used_p, d_phrase, -np.inf).max(1)
        best = np.where(used_s, d_split, np.inf).min(1)
        passed = (worst <= best) & defined
    return passed, defined


def strict_less(a: np.ndarray, b: np.ndarray, known: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(passed, defined) of `a < b` (tests 2 and 3): a tie fails; NaN on either side is undefined."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    defined = np.isfinite(a) & np.isfinite(b)
    if known is not None:
        defined &= np.asarray(known, bool)
    with np.errstate(invalid="ignore"):
        return (a < b) & defined, defined


def reference_padding_verdicts(d_phrase: np.ndarray, d_split: np.ndarray, n_words: np.ndarray) -> np.ndarray:
    """Test 1 as the reference code decides it, padding filter included: every distance >= 1 is
    dropped (a zero vector's distance is 1 there: torch's cosine with a zero vector is 0), and the
    phrase passes when what is left satisfies the test, vacuously when a side is empty. Only for
    the one-off measurement of how many verdicts the defect changes (bench_montague.py)."""
    d_phrase = np.where(np.isnan(d_phrase), 1.0, np.asarray(d_phrase, np.float64))
    d_split = np.where(np.isnan(d_split), 1.0, np.asarray(d_split, np.float64))
    n_words = np.asarray(n_words)
    cols = np.arange(3)
    used_p = (cols[None, :] < n_words[:, None]) & (d_phrase < 1.0)
    used_s = (cols[None, :] < np.where(n_words == 2, 1, n_words)[:, None]) & (d_split < 1.0)
    worst = np.where(used_p, d_phrase, -np.inf).max(1)
    best = np.where(used_s, d_split, np.inf).min(1)
    return worst <= best  # -inf <= anything and anything <= inf: vacuous passes


# ---- shares with two-way bootstrap intervals ---------------------------------------------------

INTERVAL_METHOD = "wilson_min_factor"


def unit_interval(row: dict, levels: dict[str, int], unit: str) -> dict:
    """The row's independent units and its interval (issue 43, points 4-5). A key's phrases cross
    adjectives and nouns, so they are not independent; for a crossed design the variance of a share
    is at most p(1 - p) / (the fewest levels of a factor), so n counts the levels of the smallest
    factor the bootstrap resamples (`unit`), per role: an AAN key counts its outer and its inner
    adjectives apart (5 + 5 of one type pooled would be 10, not conservative), a pair key its first
    and its second adjective's type. `n_units` is that n and the interval Wilson's score interval
    of the share over it -- one method at every share, monotone in the share (0.992 never gets a
    narrower interval than 1.000). The mean of noun means (where the row has one) takes the same n.
    `levels`: distinct nouns and distinct adjectives per role ("adjectives_1", "adjectives_2")."""
    adjectives = [levels[k] for k in ("adjectives_1", "adjectives_2") if k in levels]
    factors = {"nouns_and_adjectives": [levels["nouns"], *adjectives], "nouns": [levels["nouns"]],
               "adjectives": adjectives}[unit]
    n = int(min(factors)) if factors and row["n"] > 0 else 0
    low, high = wilson_interval(row["consistency"], n) if n else (math.nan, math.nan)
    out = {**row, "n_units": n, "ci_low": low, "ci_high": high, "ci_method": INTERVAL_METHOD}
    if row.get("mean_of_noun_means") is not None:
        g_low, g_high = wilson_interval(row["mean_of_noun_means"], n) if n else (math.nan, math.nan)
        out.update(mean_of_noun_means_ci_low=g_low, mean_of_noun_means_ci_high=g_high)
    return out


def _levels(index: np.ndarray) -> int:
    """Distinct word indices (-1: no word) in an index array."""
    return int(len(np.unique(index[index >= 0])))

def _onehot(columns: np.ndarray, select: np.ndarray, n_columns: int) -> sp.csr_matrix:
    rows = np.flatnonzero(select)
    return sp.csr_matrix((np.ones(len(rows)), (rows, columns[rows])), shape=(len(select), n_columns))


def shares(noun_idx: np.ndarray, adj_idx: np.ndarray, key: np.ndarray, passed: np.ndarray, defined: np.ndarray,
           n_keys: int, n_nouns: int, n_adjs: int, bootstrap_b: int, seed: int, names: tuple,
           unit: str = "nouns_and_adjectives", group: np.ndarray | None = None,
           replicates_out: dict | None = None) -> list[dict]:
    """Per key: n (defined items), n_undefined, the pooled share of passes among defined items and
    its bootstrap interval; with `group` (a noun index per item), also the mean over groups of the
    per-group shares (the reference's mean of per-noun means) and its interval.

    noun_idx, adj_idx: (items, 1 or 2) word indices, -1 for none. In a replicate an item weighs
    the product of the draw counts of its nouns and adjectives (see the module docstring). The
    stream is bootstrap_rng(seed, *names). With `replicates_out`, fills it with "consistency" (and
    with `group` "mean_of_noun_means") -> the (replicates, keys) replicate values."""
    if unit not in UNITS:
        raise ValueError(f"unknown bootstrap unit {unit!r}; expected one of {', '.join(UNITS)}")
    noun_idx = np.atleast_2d(np.asarray(noun_idx, np.int64).T).T
    adj_idx = np.atleast_2d(np.asarray(adj_idx, np.int64).T).T
    key, passed, defined = np.asarray(key, np.int64), np.asarray(passed, bool), np.asarray(defined, bool)
    passed = passed & defined
    m_pass, m_def = _onehot(key, passed, n_keys), _onehot(key, defined, n_keys)
    n_def = np.asarray(m_def.sum(0)).ravel()
    n_all = np.bincount(key, minlength=n_keys)
    with np.errstate(invalid="ignore", divide="ignore"):
        point = np.asarray(m_pass.sum(0)).ravel() / n_def
    if group is not None:
        group = np.asarray(group, np.int64)
        gk = key * n_nouns + group
        g_pass, g_def = _onehot(gk, passed, n_keys * n_nouns), _onehot(gk, defined, n_keys * n_nouns)
        g_point = _mean_of_group_means(np.asarray(g_pass.sum(0)), np.asarray(g_def.sum(0)),
                                       np.ones((1, n_nouns)), n_keys, n_nouns)[0]
    reps = np.full((bootstrap_b, n_keys), np.nan)
    g_reps = np.full((bootstrap_b, n_keys), np.nan)
    if bootstrap_b > 0 and len(key):
        rng = bootstrap_rng(seed, *names)
        ones_n, ones_a = np.ones((bootstrap_b, n_nouns)), np.ones((bootstrap_b, n_adjs))
        cn = resample_counts(rng, bootstrap_b, n_nouns) if unit != "adjectives" else ones_n
        ca = resample_counts(rng, bootstrap_b, n_adjs) if unit != "nouns" else ones_a
        # a last column of ones: index -1 (no second noun / adjective) weighs 1
        cn = np.hstack([cn, np.ones((bootstrap_b, 1))]).astype(np.float64)
        ca = np.hstack([ca, np.ones((bootstrap_b, 1))]).astype(np.float64)
        for start in range(0, bootstrap_b, REPLICATE_CHUNK):
            sl = slice(start, min(start + REPLICATE_CHUNK, bootstrap_b))
            w = np.ones((sl.stop - sl.start, len(key)))
            for col in noun_idx.T:
                w *= cn[sl][:, col]
            for col in adj_idx.T:
                w *= ca[sl][:, col]
            num, den = (m_pass.T @ w.T).T, (m_def.T @ w.T).T
            with np.errstate(invalid="ignore", divide="ignore"):
                reps[sl] = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
            if group is not None:
                g_reps[sl] = _mean_of_group_means((g_pass.T @ w.T).T, (g_def.T @ w.T).T, cn[sl, :n_nouns],
                                                  n_keys, n_nouns)
    if replicates_out is not None:
        replicates_out["consistency"] = reps
        if group is not None:
            replicates_out["mean_of_noun_means"] = g_reps
    rows = []
    for k in range(n_keys):  # the intervals: Wilson's over the independent units (unit_interval)
        row = {"n": int(n_def[k]), "n_undefined": int(n_all[k] - n_def[k]), "consistency": float(point[k])}
        if group is not None:
            row.update(mean_of_noun_means=float(g_point[k]))
        used = defined & (key == k)
        levels = {"nouns": _levels(noun_idx[used]),
                  **{f"adjectives_{j + 1}": _levels(adj_idx[used][:, j]) for j in range(adj_idx.shape[1])}}
        rows.append(unit_interval(row, levels, unit))
    return rows


def pair_shares(passed: np.ndarray, defined: np.ndarray, adj_type: np.ndarray, n_types: int, noun_1: np.ndarray,
                noun_2: np.ndarray, n_nouns: int, bootstrap_b: int, seed: int, names: tuple,
                unit: str = "nouns_and_adjectives", replicates_out: dict | None = None) -> list[dict]:
    """`shares` for test 2, with the same draws and results, factorised: passed/defined are
    (a1, a2, noun pair) arrays, and a comparison's weight c(n1) c(n2) c(a1) c(a2) is summed type by
    type (a matrix product over a2, then over a1) instead of item by item: ~100x less work for the
    published lists' 241,560 comparisons. Keys are (type a1) * n_types + type a2; groups (the
    reference's per-noun means) are the pair's first noun."""
    if unit not in UNITS:
        raise ValueError(f"unknown bootstrap unit {unit!r}; expected one of {', '.join(UNITS)}")
    n_adjs, _, n_pairs = passed.shape
    defined = np.asarray(defined, bool)
    passed = np.asarray(passed, bool) & defined
    adj_type = np.asarray(adj_type, np.int64)
    masks = [adj_type == t for t in range(n_types)]
    group = np.zeros((n_pairs, n_nouns))
    group[np.arange(n_pairs), noun_1] = 1.0
    n_keys = n_types * n_types

    def sums(ca: np.ndarray, cp: np.ndarray):
        """(replicates, keys) and (replicates, keys, groups) weighted counts of passes and of
        defined comparisons, for adjective draw counts ca and noun-pair weights cp."""
        out = []
        for cube in (passed, defined):
            flat = cube.astype(np.float64).transpose(1, 0, 2).reshape(n_adjs, n_adjs * n_pairs)  # (a2, a1 * p)
            z = np.zeros((len(ca), n_pairs, n_types, n_types))
            for t2, m2 in enumerate(masks):
                y = ((ca * m2) @ flat).reshape(len(ca), n_adjs, n_pairs)  # sum over a2 of type t2
                for t1, m1 in enumerate(masks):
                    z[:, :, t1, t2] = np.einsum("bap,ba->bp", y[:, m1, :], ca[:, m1])
            z = z.reshape(len(ca), n_pairs, n_keys) * cp[:, :, None]
            out.append((z.sum(1), np.einsum("bpk,pg->bkg", z, group)))
        return out

    ones_a, ones_p = np.ones((1, n_adjs)), np.ones((1, n_pairs))
    (num, g_num), (den, g_den) = sums(ones_a, ones_p)
    n_all = np.zeros(n_keys)
    kk = adj_type[:, None] * n_types + adj_type[None, :]
    np.add.at(n_all, kk[~np.eye(n_adjs, dtype=bool)], n_pairs)
    with np.errstate(invalid="ignore", divide="ignore"):
        point = num[0] / den[0]
    g_point = _mean_of_group_means(g_num.reshape(1, -1), g_den.reshape(1, -1), np.ones((1, n_nouns)), n_keys, n_nouns)[0]
    reps = np.full((bootstrap_b, n_keys), np.nan)
    g_reps = np.full((bootstrap_b, n_keys), np.nan)
    if bootstrap_b > 0 and n_pairs and n_adjs > 1:
        rng = bootstrap_rng(seed, *names)
        cn = resample_counts(rng, bootstrap_b, n_nouns) if unit != "adjectives" else np.ones((bootstrap_b, n_nouns))
        ca = resample_counts(rng, bootstrap_b, n_adjs) if unit != "nouns" else np.ones((bootstrap_b, n_adjs))
        cn, ca = cn.astype(np.float64), ca.astype(np.float64)
        for start in range(0, bootstrap_b, 8 * REPLICATE_CHUNK):
            sl = slice(start, min(start + 8 * REPLICATE_CHUNK, bootstrap_b))
            (num_b, g_num_b), (den_b, g_den_b) = sums(ca[sl], cn[sl][:, noun_1] * cn[sl][:, noun_2])
            with np.errstate(invalid="ignore", divide="ignore"):
                reps[sl] = np.where(den_b > 0, num_b / np.where(den_b > 0, den_b, 1), np.nan)
            g_reps[sl] = _mean_of_group_means(g_num_b.reshape(len(num_b), -1), g_den_b.reshape(len(num_b), -1),
                                              cn[sl], n_keys, n_nouns)
    if replicates_out is not None:
        replicates_out.update(consistency=reps, mean_of_noun_means=g_reps)
    rows = []
    for k in range(n_keys):  # the intervals: Wilson's over the independent units (unit_interval)
        row = {"n": int(round(den[0, k])), "n_undefined": int(round(n_all[k] - den[0, k])),
               "consistency": float(point[k]), "mean_of_noun_means": float(g_point[k])}
        # the words of the key's defined comparisons: a1 of type t1, a2 of type t2, both nouns of a pair
        used = defined[masks[k // n_types]][:, masks[k % n_types]]
        first, second = int(used.any((1, 2)).sum()), int(used.any((0, 2)).sum())  # a1's and a2's adjectives
        pairs = used.any((0, 1))
        nouns = np.union1d(np.asarray(noun_1)[pairs], np.asarray(noun_2)[pairs])
        rows.append(unit_interval(row, {"nouns": len(nouns), "adjectives_1": first, "adjectives_2": second}, unit))
    return rows


def _mean_of_group_means(num: np.ndarray, den: np.ndarray, group_weight: np.ndarray, n_keys: int,
                         n_groups: int) -> np.ndarray:
    """(replicates, keys): per key, the mean over groups with a defined item of the groups' shares,
    each group counted as often as it was drawn."""
    num = np.asarray(num, np.float64).reshape(-1, n_keys, n_groups)
    den = np.asarray(den, np.float64).reshape(-1, n_keys, n_groups)
    has = den > 0
    share = np.where(has, num / np.where(has, den, 1), 0.0)
    weight = np.where(has, group_weight[:, None, :], 0.0)
    total = weight.sum(2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (share * weight).sum(2) / np.where(total > 0, total, 1), np.nan)


# ---- scoring one (dataset, model) -----------------------------------------------------------------

class Distances:
    """1 - cosine of string pairs from one store; each string's key computed once."""

    def __init__(self, store: VectorStore):
        self.store = store
        self.keys: dict[str, int] = {}

    def key_array(self, texts) -> np.ndarray:
        keys = self.keys
        return np.fromiter((keys[t] if t in keys else keys.setdefault(t, text_key(t)) for t in texts),
                           dtype=np.uint64, count=len(texts))

    def __call__(self, a: list[str], b: list[str]) -> np.ndarray:
        out = np.empty(len(a), dtype=np.float64)
        for start in range(0, len(a), CHUNK):
            stop = min(start + CHUNK, len(a))
            out[start:stop] = 1.0 - self.store.paired_cosine(self.key_array(a[start:stop]), self.key_array(b[start:stop]))
            self.store.release_pages()
        return out

    def norms(self, texts: list[str]) -> np.ndarray:
        _, norms = self.store.lookup(self.key_array(texts))
        self.store.release_pages()
        return norms


def _nullable(name: str, passed: np.ndarray, defined: np.ndarray) -> pl.Series:
    """A verdict column: null where the comparison is undefined."""
    return pl.Series(name, passed, pl.Boolean).zip_with(pl.Series(defined, dtype=pl.Boolean),
                                                        pl.Series(name, [None] * len(passed), pl.Boolean))


def word_lists_of(phrases: pl.DataFrame) -> tuple[list[str], list[str], list[str], list[str]]:
    """(adjectives, their types, nouns, types in order) from the AN rows of phrases.parquet."""
    an = phrases.filter(pl.col("kind") == "AN")
    adj = an.unique("adj1_idx", keep="first").sort("adj1_idx")
    noun = an.unique("noun_idx", keep="first").sort("noun_idx")
    if adj["adj1_idx"].to_list() != list(range(adj.height)) or noun["noun_idx"].to_list() != list(range(noun.height)):
        raise ValueError("phrases.parquet: word indices are not 0..n-1; rebuild the phrases")
    types = list(dict.fromkeys(adj["type1"].to_list()))
    return adj["adj1"].to_list(), adj["type1"].to_list(), noun["noun"].to_list(), types


def compute_distances(phrases: pl.DataFrame, dist: Distances, log) -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    adjs, adj_types, nouns, _ = word_lists_of(phrases)
    norms = dist.norms(adjs + nouns)
    known_adj, known_noun = norms[:len(adjs)] > 0, norms[len(adjs):] > 0
    started = time.perf_counter()
    frames = []
    for kind in ("AN", "AAN"):
        part = phrases.filter(pl.col("kind") == kind)
        if not part.height:
            continue
        p = part["phrase"].to_list()
        a1, n = part["adj1"].to_list(), part["noun"].to_list()
        d = {}
        if kind == "AN":
            d["d_phrase_1"], d["d_phrase_2"] = dist(p, a1), dist(p, n)
            d["d_split_1"] = dist(a1, n)
            d["d_phrase_3"] = d["d_split_2"] = d["d_split_3"] = np.full(part.height, np.nan)
            known = known_adj[part["adj1_idx"].to_numpy()] & known_noun[part["noun_idx"].to_numpy()]
        else:
            a2 = part["adj2"].to_list()
            d["d_phrase_1"], d["d_phrase_2"], d["d_phrase_3"] = dist(p, a1), dist(p, a2), dist(p, n)
            d["d_split_1"] = dist(a1, [join_words(x, y) for x, y in zip(a2, n)])
            d["d_split_2"] = dist(a2, [join_words(x, y) for x, y in zip(a1, n)])
            d["d_split_3"] = dist(n, [join_words(x, y) for x, y in zip(a1, a2)])
            known = (known_adj[part["adj1_idx"].to_numpy()] & known_adj[part["adj2_idx"].to_numpy()]
                     & known_noun[part["noun_idx"].to_numpy()])
        n_words = np.full(part.height, 2 if kind == "AN" else 3)
        single, single_def = single_verdicts(np.column_stack([d[c] for c in DIST_COLUMNS[:3]]),
                                             np.column_stack([d[c] for c in DIST_COLUMNS[3:]]), n_words, known)
        frame = part.select("phrase_id", "phrase", "kind", "key", "noun_idx", "adj1_idx", "adj2_idx").with_columns(
            *(pl.Series(c, d[c], pl.Float64) for c in DIST_COLUMNS),
            _nullable("single_pass", single, single_def))
        if kind == "AN":
            nonsub, nonsub_def = strict_less(d["d_phrase_1"], d["d_phrase_2"], known)
            frame = frame.with_columns(_nullable("nonsubsective_pass", nonsub, nonsub_def))
        else:
            frame = frame.with_columns(pl.lit(None, pl.Boolean).alias("nonsubsective_pass"))
        frames.append(frame)
        log.info("%s phrases: %d, distances in %.1f s", kind, part.height, time.perf_counter() - started)
    distances = pl.concat(frames).select(pl.col(c).cast(t) for c, t in DIST_SCHEMA.items())
    # test 2: d(a n, a n') for every adjective and unordered noun pair
    rows = [(ai, ni, nj) for ai in range(len(adjs)) for ni in range(len(nouns)) for nj in range(ni + 1, len(nouns))]
    ai, ni, nj = (np.array([r[k] for r in rows], dtype=np.int64) for k in range(3)) if rows else (
        np.empty(0, np.int64),) * 3
    pair_d = dist([join_words(adjs[a], nouns[x]) for a, x in zip(ai, ni)],
                  [join_words(adjs[a], nouns[y]) for a, y in zip(ai, nj)])
    pairs = pl.DataFrame({"adj_idx": ai, "adjective": [adjs[a] for a in ai], "type": [adj_types[a] for a in ai],
                          "noun_idx_1": ni, "noun_idx_2": nj, "noun_1": [nouns[x] for x in ni],
                          "noun_2": [nouns[y] for y in nj], "distance": pair_d}, schema=PAIR_SCHEMA)
    info = {"unknown_adjectives": [a for a, k in zip(adjs, known_adj) if not k],
            "unknown_nouns": [x for x, k in zip(nouns, known_noun) if not k]}
    return distances, pairs, info


def pair_cubes(pairs: pl.DataFrame, n_adjs: int, known_adj: np.ndarray, known_noun: np.ndarray):
    """Test 2 from the pair distances: (passed, defined) as (a1, a2, noun pair) arrays (a1 == a2 is
    never defined), and each noun pair's first and second noun."""
    n_pairs = pairs.height // max(n_adjs, 1)
    ordered = pairs.sort("adj_idx", "noun_idx_1", "noun_idx_2")
    d = ordered["distance"].to_numpy().astype(np.float64).reshape(n_adjs, n_pairs)
    n1 = ordered["noun_idx_1"].to_numpy()[:n_pairs].astype(np.int64)
    n2 = ordered["noun_idx_2"].to_numpy()[:n_pairs].astype(np.int64)
    known = ((known_adj[:, None] & known_adj[None, :] & ~np.eye(n_adjs, dtype=bool))[:, :, None]
             & (known_noun[n1] & known_noun[n2])[None, None, :])
    passed, defined = strict_less(d[:, None, :], d[None, :, :], known)
    return passed, defined, n1, n2


def pair_items(pairs: pl.DataFrame, n_adjs: int, known_adj: np.ndarray, known_noun: np.ndarray) -> dict:
    """Test 2's comparisons (a1, a2, noun pair) with a1 != a2, one item each (for `shares`)."""
    passed, defined, n1, n2 = pair_cubes(pairs, n_adjs, known_adj, known_noun)
    a1, a2 = np.nonzero(~np.eye(n_adjs, dtype=bool))
    n_pairs = len(n1)
    return {"a1": np.repeat(a1, n_pairs), "a2": np.repeat(a2, n_pairs), "n1": np.tile(n1, len(a1)),
            "n2": np.tile(n2, len(a1)), "passed": passed[a1, a2].ravel(), "defined": defined[a1, a2].ravel()}


def share_rows(distances: pl.DataFrame, pairs: pl.DataFrame, phrases: pl.DataFrame, info: dict, dataset: str,
               model: str, bootstrap_b: int, seed: int, unit: str, replicates_out: list | None = None) -> list[dict]:
    """The share rows of one (dataset, model); with `replicates_out`, the paired replicates of every
    row's consistency (and mean of noun means) are appended to it (bootstrap.replicate_rows)."""
    adjs, adj_types, nouns, types = word_lists_of(phrases)
    tix = {t: i for i, t in enumerate(types)}
    k = len(types)
    base = {"dataset": dataset, "model": model, "resampled": unit, "bootstrap_b": int(bootstrap_b)}
    out = []

    def emit(test, kind, keys, results, reps):
        for k, ((key, t1, t2), r) in enumerate(zip(keys, results)):
            out.append({**base, "test": test, "kind": kind, "key": key, "type1": t1, "type2": t2,
                        "mean_of_noun_means": None, "mean_of_noun_means_ci_low": None,
                        "mean_of_noun_means_ci_high": None, **r})
            # the pooled share only: the reference's mean of noun means would double the comparisons
            # that Holm's correction of the differences table counts, for a secondary estimate
            if replicates_out is not None:
                replicates_out.append(replicate_rows("montague", dataset, f"{test}/{kind}/{key}", model,
                                                     r["consistency"], reps["consistency"][:, k], r["n_units"]))

    def names(test, kind):
        # the paired stream, paired_rng(seed, "montague", dataset, f"{test}/{kind}"): no model in
        # it, and the word indices are positions in the dataset's word lists (model-independent),
        # so replicate b draws the same nouns and adjectives for every model
        return ("paired", "montague", dataset, f"{test}/{kind}")

    an = distances.filter(pl.col("kind") == "AN")
    aan = distances.filter(pl.col("kind") == "AAN")
    an_type = np.array([tix[adj_types[a]] for a in an["adj1_idx"].to_numpy()], dtype=np.int64)
    for test, col in (("single", "single_pass"), ("nonsubsective", "nonsubsective_pass")):
        passed = an[col].fill_null(False).to_numpy()
        defined = an[col].is_not_null().to_numpy()
        reps: dict = {}
        res = shares(an["noun_idx"].to_numpy(), an["adj1_idx"].to_numpy(), an_type, passed, defined, k, len(nouns),
                     len(adjs), bootstrap_b, seed, names(test, "AN"), unit, replicates_out=reps)
        emit(test, "AN", [(t, t, None) for t in types], res, reps)
        if test == "single" and aan.height:
            t1 = np.array([tix[adj_types[a]] for a in aan["adj1_idx"].to_numpy()], dtype=np.int64)
            t2 = np.array([tix[adj_types[a]] for a in aan["adj2_idx"].to_numpy()], dtype=np.int64)
            res = shares(aan["noun_idx"].to_numpy(), np.column_stack([aan["adj1_idx"].to_numpy(),
                                                                      aan["adj2_idx"].to_numpy()]),
                         t1 * k + t2, aan[col].fill_null(False).to_numpy(), aan[col].is_not_null().to_numpy(),
                         k * k, len(nouns), len(adjs), bootstrap_b, seed, names(test, "AAN"), unit, replicates_out=reps)
            emit(test, "AAN", [(aan_key(a, b), a, b) for a in types for b in types], res, reps)
    known_adj = np.array([a not in info["unknown_adjectives"] for a in adjs])
    known_noun = np.array([x not in info["unknown_nouns"] for x in nouns])
    passed, defined, n1, n2 = pair_cubes(pairs, len(adjs), known_adj, known_noun)
    type_idx = np.array([tix[t] for t in adj_types], dtype=np.int64)
    reps = {}
    res = pair_shares(passed, defined, type_idx, k, n1, n2, len(nouns), bootstrap_b, seed, names("pair", "pair"), unit,
                      replicates_out=reps)
    emit("pair", "pair", [(aan_key(a, b), a, b) for a in types for b in types], res, reps)
    return out


def score(phrases_path: str, store_dirs: list[str], dataset: str, model: str, spec: dict, bootstrap_b: int,
          seed: int, unit: str, out_dir: str, log) -> dict:
    if unit not in UNITS:
        raise ValueError(f"unknown bootstrap unit {unit!r}; expected one of {', '.join(UNITS)}")
    started = time.perf_counter()
    store = VectorStore(store_dirs, model=model, spec_digest=spec_digest(spec))
    phrases = pl.read_parquet(phrases_path)
    dist = Distances(store)
    distances, pairs, info = compute_distances(phrases, dist, log)
    scored = time.perf_counter()
    replicates: list = []
    rows = share_rows(distances, pairs, phrases, info, dataset, model, bootstrap_b, seed, unit, replicates)
    out = Path(out_dir)
    # the paired replicates behind every share's interval, for the differences table (differences.py)
    write_replicates(out / "replicates.parquet", replicates)
    with atomic_path(out / "distances.parquet") as tmp:
        distances.write_parquet(tmp, compression="zstd")
    with atomic_path(out / "pair_distances.parquet") as tmp:
        pairs.write_parquet(tmp, compression="zstd")
    table = pl.DataFrame(rows, schema=SHARE_SCHEMA, orient="row")
    with atomic_path(out / "shares.parquet") as tmp:
        table.write_parquet(tmp)
    strings = list(dist.keys)
    zero = int((dist.norms(strings) == 0).sum())
    summary = {
        "dataset": dataset, "model": model, "phrases": distances.height, "strings_compared": len(strings),
        "zero_norm_strings": zero, **info,
        "undefined": {"single": int(distances["single_pass"].is_null().sum()),
                      "nonsubsective": int(distances.filter(pl.col("kind") == "AN")["nonsubsective_pass"]
                                           .is_null().sum()),
                      "pair": int(sum(r["n_undefined"] for r in rows if r["test"] == "pair"))},
        "distances_at_least_1": int((distances.select(DIST_COLUMNS).to_numpy() >= 1).sum()),
        "padding_filter": "not applied: every distance counts, also >= 1 (methods.md §5)",
        "ties": {"single": "<= (a tie passes, as the reference)", "pair": "< (a tie fails)",
                 "nonsubsective": "< (a tie fails)"},
        "estimate": "pooled share of defined comparisons per key; pair also mean_of_noun_means (the reference's)",
        "bootstrap": {"replicates": int(bootstrap_b), "seed": int(seed), "resampled": unit, "level": LEVEL,
                      "method": "percentile", "streams": "paired across models: ('paired', 'montague', dataset, test/kind)"},
        "store": {k: store.manifest.get(k) for k in ("family", "origin", "dim", "dtype", "format", "device",
                                                     "precision")},
        "seconds": {"distances": round(scored - started, 2), "shares": round(time.perf_counter() - scored, 2)},
    }
    write_json(out / "summary.json", summary)
    for r in rows:
        if r["test"] != "single" or r["kind"] == "AN":
            log.info("%s/%s %s %s: %.4f [%.4f, %.4f] (n %d, undefined %d)", dataset, model, r["test"], r["key"],
                     r["consistency"], r["ci_low"], r["ci_high"], r["n"], r["n_undefined"])
    log.info("%s/%s: %d phrases, %d strings (%d zero-norm), unknown words %s; distances %.1f s, shares %.1f s "
             "(B=%d, %s)", dataset, model, distances.height, len(strings), zero,
             info["unknown_adjectives"] + info["unknown_nouns"], summary["seconds"]["distances"],
             summary["seconds"]["shares"], bootstrap_b, unit)
    return summary


# ---- the jobs of rules/montague.smk (workflow_scripts/jobs.py) ----
def run_montague_score(job) -> None:
    """Writes the five outputs, all in one folder (montague/<dataset>/<model>/)."""
    score(job.input.phrases, list(job.input.stores), job.wildcards.dataset, job.wildcards.model, job.params.spec,
          job.params.bootstrap_b, job.params.seed, job.params.unit, os.path.dirname(job.output.shares),
          setup_logging(name="montague"))
