import random

import pytest

from workflow_scripts.perturb import Perturber, insertion_variants, sentence_rng

SETTINGS = {"variants_per_sentence": 3, "fuzz_terms": {"en": ["a", "the"], "nl": ["de", "het"]},
            "negation_terms": {"en": ["not"], "nl": ["niet"]}}


def inserted(original: str, variant: str):
    """The one word inserted into `original` to give `variant`, and where (or None)."""
    o, v = original.split(), variant.split()
    if len(v) != len(o) + 1:
        return None
    for i in range(len(v)):
        if v[:i] + v[i + 1:] == o:
            return i, v[i]
    return None


def test_each_variant_inserts_exactly_one_term_before_a_word():
    words = "the quick brown fox jumps".split()
    for seed in range(30):
        for pos, term, text in insertion_variants(words, ["a", "the"], 3, random.Random(seed)):
            assert 0 <= pos < len(words)  # never after the last word
            assert text.split()[pos] == term and text.split()[:pos] + text.split()[pos + 1:] == words


def test_x_variants_when_enough_candidates_and_all_when_fewer():
    rng = random.Random(0)
    assert len(insertion_variants("a b c d".split(), ["not"], 3, rng)) == 3
    assert len(insertion_variants("one".split(), ["not"], 3, rng)) == 1       # n = 1 candidate
    two = insertion_variants("one two".split(), ["a", "xx"], 10, rng)            # 2n = 4 candidates
    assert sorted((p, t) for p, t, _ in two) == [(0, "a"), (0, "xx"), (1, "a"), (1, "xx")]


def test_duplicate_variants_collapse():
    # inserting "the" before word 1 or before word 2 of "x the y" gives the same text
    found = insertion_variants("x the y".split(), ["the"], 3, random.Random(1))
    texts = [t for _, _, t in found]
    assert len(texts) == len(set(texts)) == 2
    assert set(texts) == {"the x the y", "x the the y"}


def test_shuffle_is_seeded_by_config_seed_and_sentence_id():
    p = Perturber(SETTINGS, "en", seed=13)
    text = "one two three four five six seven eight"
    first = p.variants([42], [text], __import__("collections").Counter())
    again = p.variants([42], [text], __import__("collections").Counter())
    other_id = p.variants([43], [text], __import__("collections").Counter())
    other_seed = Perturber(SETTINGS, "en", seed=14).variants([42], [text], __import__("collections").Counter())
    assert first == again
    assert [r[5] for r in first] != [r[5] for r in other_id] or [r[5] for r in first] != [r[5] for r in other_seed]
    assert sentence_rng(13, 42).random() == sentence_rng(13, 42).random()


def test_kinds_terms_and_ids():
    from collections import Counter
    rows = Perturber(SETTINGS, "nl", seed=1).variants([7], ["de kat slaapt op de mat"], Counter())
    kinds = Counter(r[2] for r in rows)
    assert kinds == {"fuzz": 3, "negation": 3}
    for orig_id, variant_id, kind, pos, term, text in rows:
        assert inserted("de kat slaapt op de mat", text) is not None
        assert term in (["de", "het"] if kind == "fuzz" else ["niet"])
    assert len({r[1] for r in rows}) == len(rows)  # variant ids unique


def test_missing_language_terms_is_an_error():
    with pytest.raises(ValueError, match="no terms for language 'de'"):
        Perturber(SETTINGS, "de", seed=1)


def test_worker_processes_give_the_same_outputs(tmp_path):
    """Shards perturbed in parallel are written in order: byte-identical files for 1 and 2 workers."""
    import json
    import logging

    import polars as pl

    from workflow_scripts.common import text_key
    from workflow_scripts.perturb import perturb_corpus
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    sentences = [f"the {w} sat on mat number {i} today" for i, w in enumerate(["cat", "dog", "bird"] * 7)]
    shards = []
    for s, lo in enumerate(range(0, len(sentences), 5)):
        chunk = sentences[lo:lo + 5]
        pl.DataFrame({"sentence_id": pl.Series(range(lo + 1, lo + 1 + len(chunk)), dtype=pl.UInt64), "text": chunk,
                      "text_key": pl.Series([text_key(t) for t in chunk], dtype=pl.UInt64)}
                     ).write_parquet(corpus / f"part-{s:05d}.parquet")
        shards.append({"file": f"part-{s:05d}.parquet", "rows": len(chunk)})
    (corpus / "manifest.json").write_text(json.dumps({"corpus": "c", "language": "nl", "rows": len(sentences),
                                                      "shards": shards}))
    settings = {"variants_per_sentence": 3, "fuzz_terms": {"nl": ["de", "het"]}, "negation_terms": {"nl": ["niet"]}}
    outputs = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        texts = [str(out / f"texts-{p}.parquet") for p in range(2)]
        report = perturb_corpus(str(corpus), settings, 5, 2, str(out / "variants"), texts, str(out / "report.json"),
                                logging.getLogger("t"), workers=workers)
        assert report["variants"] == {"fuzz": 3 * len(sentences), "negation": 3 * len(sentences)}
        outputs[workers] = {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*.parquet"))}
    assert len(outputs[1]) == len(shards) + 2
    assert outputs[1] == outputs[2]
