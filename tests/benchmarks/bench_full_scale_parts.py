"""The changes behind the faster full-scale stages, each old way vs new way in one run.

1. TF-IDF fit: term counts by scikit-learn's analyzer in Python vs in polars (Rust regex) where
   both engines provably tokenise alike (`tfidf_fit.count_terms(fast=...)`); same counts asserted.
2. Vector-store lookups: keys searched in the given (random) order vs in sorted order
   (`Partition._positions`); same rows asserted.
3. Grammatical negation: nltk's own tagger on whole sentences vs the lazy per-position tagger with
   per-word feature rows (`GrammaticalNegator(lazy_tags=...)`); same outputs asserted.
4. Grammatical negation: the lazy tagger sentence by sentence (`negate`) vs `negate_many`, which
   tags the first words of 10,000 sentences at once; same outputs asserted.
5. TF-IDF fit on a perturbed corpus: every unique text tokenised vs insertion variants counted
   from their originals (`tfidf_fit.count_insertion_terms`); same counts asserted.

Texts: the English and Dutch sides of ../shared/data/en_nl_parallel, each sentence with the
workflow's insertion variants (3 fuzz + 3 negation), repeated to --texts texts.
Usage: python tests/benchmarks/bench_full_scale_parts.py [--texts 400000]
Needs NLTK_DATA pointing at ../shared/data/nltk_data for part 3.
"""
from __future__ import annotations

import argparse
import csv
import random
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from workflow_scripts.csc.perturb import Perturber  # noqa: E402
from workflow_scripts.common import text_key  # noqa: E402
from workflow_scripts.texts import unique_rows  # noqa: E402
from workflow_scripts.tfidf_fit import count_insertion_terms, count_terms, iter_texts  # noqa: E402
from workflow_scripts.vector_store import Partition  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "en_nl_parallel"
SETTINGS = {"variants_per_sentence": 3, "fuzz_terms": {"en": ["a", "the"], "nl": ["de", "het"]},
            "negation_terms": {"en": ["not"], "nl": ["niet"]}}


def sentences(language: str) -> list[str]:
    out = []
    for name in ("paracrawl_en_nl_human_eval.tsv", "tatoeba_laser_en_nl.tsv"):
        with open(SHARED / name, encoding="utf-8", newline="") as f:
            out += [row[language] for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
    return out


def texts_with_variants(language: str, n: int) -> list[str]:
    base = sentences(language)
    perturber = Perturber(SETTINGS, language, seed=13)
    variants = perturber.variants(list(range(len(base))), base, Counter())
    texts = base + [v[5] for v in variants]
    return (texts * (n // len(texts) + 1))[:n]


def timed(fn):
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def bench_tfidf(n: int) -> None:
    for language in ("nl", "en"):
        texts = texts_with_variants(language, n)
        batches = [texts[i:i + 200_000] for i in range(0, len(texts), 200_000)]
        spec = {"family": "tfidf"}
        t_old, old = timed(lambda: count_terms(spec, batches, fast=False))
        t_new, new = timed(lambda: count_terms(spec, batches, fast=True))
        assert old == new
        print(f"tf-idf term counts, {n:,} {language} texts: analyzer {t_old:.2f} s, polars {t_new:.2f} s, "
              f"{t_old / t_new:.1f}x; identical counts ({len(new[0]):,} terms)")


def bench_lookup(tmp: Path) -> None:
    rng = np.random.default_rng(0)
    keys = np.unique(rng.integers(0, 2 ** 63, 4_000_000, dtype=np.uint64))
    np.save(tmp / "keys.npy", keys)
    part = Partition.__new__(Partition)
    part.keys = np.load(tmp / "keys.npy", mmap_mode="r")
    needles = rng.choice(keys, 650_000)
    t_old, old = timed(lambda: np.minimum(np.searchsorted(part.keys, needles), len(part.keys) - 1))
    t_new, new = timed(lambda: part._positions(needles))
    assert np.array_equal(old, new)
    print(f"store lookup, 650,000 keys in a 4,000,000-key partition: random order {t_old:.3f} s, "
          f"sorted {t_new:.3f} s, {t_old / t_new:.1f}x; same positions")


def bench_negation(n: int) -> None:
    from workflow_scripts.csc.negation import GrammaticalNegator
    lazy = GrammaticalNegator(use_tagger=True)
    whole = GrammaticalNegator(use_tagger=True, lazy_tags=False)
    if not lazy.has_tagger:
        print("grammatical negation: skipped (NLTK data not found; set NLTK_DATA)")
        return
    base = sentences("en")
    random.Random(0).shuffle(base)
    sample = base[:n]
    t_old, old = timed(lambda: whole.negate_many(sample))
    t_new, new = timed(lambda: lazy.negate_many(sample))
    assert old == new
    print(f"grammatical negation, {len(sample):,} sentences: nltk tag() on whole sentences {t_old:.2f} s, "
          f"lazy tagging with cached feature rows {t_new:.2f} s, {t_old / t_new:.1f}x; same outputs "
          f"({len(sample) / t_new:,.0f} sentences/s)")


def bench_negation_batches(n: int) -> None:
    from workflow_scripts.csc.negation import GrammaticalNegator
    negator = GrammaticalNegator(use_tagger=True)
    if not negator.has_tagger:
        print("grammatical negation in batches: skipped (NLTK data not found; set NLTK_DATA)")
        return
    base = sentences("en")
    sample = [f"{s} {i // len(base)}" if i >= len(base) else s for i, s in enumerate((base * (n // len(base) + 1))[:n])]
    negator.negate_many(sample[:2000])  # caches warm for both
    t_old, old = timed(lambda: [negator.negate(s) for s in sample])
    t_new, new = timed(lambda: negator.negate_many(sample))
    assert old == new
    print(f"grammatical negation, {n:,} sentences: one by one {t_old:.2f} s, first 8 words of 10,000 "
          f"tagged together {t_new:.2f} s, {t_old / t_new:.1f}x; same outputs")


def bench_insertion_counts(tmp: Path, n: int) -> None:
    """n Dutch originals (the real ones, numbered to be distinct), their variants as perturb writes them."""
    import polars as pl
    base = sentences("nl")
    originals = [f"{s} {i // len(base)}" for i, s in enumerate((base * (n // len(base) + 1))[:n])]
    ids = list(range(len(originals)))
    cols = Perturber(SETTINGS, "nl", seed=13).columns(ids, originals, Counter())
    keys = [text_key(t) for t in originals]
    corpus = tmp / "corpus.parquet"
    pl.DataFrame({"text": originals, "text_key": pl.Series(keys, dtype=pl.UInt64)}).write_parquet(corpus)
    (tmp / "variants").mkdir()
    cols["original_key"] = [keys[i] for i in cols["original_id"]]
    cols["text_key"] = [text_key(t) for t in cols["text"]]
    pl.DataFrame(cols, schema_overrides={"original_key": pl.UInt64, "text_key": pl.UInt64}).write_parquet(
        tmp / "variants" / "part-00000.parquet")
    texts = pl.concat([pl.DataFrame({"text_key": pl.Series(keys, dtype=pl.UInt64), "text": originals}),
                       pl.DataFrame({"text_key": pl.Series(cols["text_key"], dtype=pl.UInt64), "text": cols["text"]})])
    texts.write_parquet(tmp / "texts.parquet")
    files, spec = [str(tmp / "texts.parquet")], {"family": "tfidf"}
    t_old, old = timed(lambda: count_terms(spec, iter_texts(files, unique_rows(files)[0], 200_000)))
    t_new, new = timed(lambda: count_insertion_terms(spec, [str(corpus)], str(tmp / "variants"), files))
    assert old == new
    print(f"tf-idf fit counts, {n:,} nl originals + {len(cols['text']):,} variants: every text {t_old:.2f} s, "
          f"insertions from their originals {t_new:.2f} s, {t_old / t_new:.1f}x; identical counts")


def main() -> None:
    import tempfile
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--texts", type=int, default=400_000)
    args = ap.parse_args()
    bench_tfidf(args.texts)
    with tempfile.TemporaryDirectory() as tmp:
        bench_lookup(Path(tmp))
    bench_negation(4000)
    bench_negation_batches(40_000)
    with tempfile.TemporaryDirectory() as tmp:
        bench_insertion_counts(Path(tmp), args.texts // 7)


if __name__ == "__main__":
    main()
