"""The surface-form baseline (family surface_form): its cosine is the Ochiai coefficient
|A & B| / sqrt(|A| |B|) of the two texts' feature sets, counted by hand below, and does not depend
on the other texts of the set; stores written through the embedding job read back the same across
partitions."""
import logging
import math

import numpy as np
import pytest

from workflow_scripts.common import text_key
from workflow_scripts.embed import embed_partition
from workflow_scripts.encoders.surface_form import SurfaceFormEncoder
from workflow_scripts.texts import write_text_partitions
from workflow_scripts.vector_store import VectorStore

LOG = logging.getLogger("test")
WORDS = {"family": "surface_form"}
TRIGRAMS = {"family": "surface_form", "features": "char_ngrams", "ngram_range": [3, 3]}
TREEBANK = {"family": "surface_form", "tokenizer": "treebank"}


def cosine(spec: dict, a: str, b: str, others: tuple = ()) -> float:
    enc = SurfaceFormEncoder(spec)
    texts = [a, b, *others]
    enc.index([texts])
    rows = enc.encode_batch(texts)
    dot = float(rows[0].multiply(rows[1]).sum())
    na, nb = (float(np.sqrt(rows[i].multiply(rows[i]).sum())) for i in (0, 1))
    return dot / (na * nb) if na and nb else math.nan


@pytest.mark.parametrize("spec,a,b,expected", [
    # {the, cat, sat} vs {the, cat, ran, away}: 2 shared
    pytest.param(WORDS, "the cat sat", "the cat ran away", 2 / math.sqrt(3 * 4), id="words"),
    # repeats count once and case is folded: {cat, dog} vs {cat}
    pytest.param(WORDS, "Cat cat DOG dog", "cat", 1 / math.sqrt(2), id="words_repeated"),
    # one-letter words count: {a, dog} vs {dog}
    pytest.param(WORDS, "a dog", "dog", 1 / math.sqrt(2), id="one_letter_word"),
    # word order is invisible to a set
    pytest.param(WORDS, "former old king", "old former king", 1.0, id="order_blind"),
    # word 1-2-grams: {red, dog, red dog} vs {dog, red, dog red}: red, dog shared
    pytest.param({**WORDS, "ngram_range": [1, 2]}, "red dog", "dog red", 2 / 3, id="word_bigrams"),
    # {abc, bcd} vs {abc, bce}
    pytest.param(TRIGRAMS, "abcd", "abce", 1 / 2, id="trigrams"),
    # "aaaa" has trigram aaa twice: {aaa} vs {aaa, aab}
    pytest.param(TRIGRAMS, "aaaa", "aaab", 1 / math.sqrt(2), id="trigrams_repeated"),
    # whitespace runs are one space: {a b, b c} vs {a b, b d} -> trigrams {"a b"," b ","b c"} vs {"a b"," b ","b d"}
    pytest.param(TRIGRAMS, "a  b c", "a b d", 2 / 3, id="trigrams_whitespace"),
    # 2-3-grams: {ab, bc, abc} vs {ab, bd, abd}
    pytest.param({**TRIGRAMS, "ngram_range": [2, 3]}, "abc", "abd", 1 / 3, id="char_2_3"),
    # a text shorter than the smallest n is one feature, itself
    pytest.param(TRIGRAMS, "ab", "ab", 1.0, id="short_text"),
    pytest.param({**WORDS, "lowercase": False}, "Cat", "cat", 0.0, id="case_kept"),
])
def test_cosine_is_the_ochiai_coefficient(spec, a, b, expected):
    assert cosine(spec, a, b) == pytest.approx(expected, rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("spec", [WORDS, TRIGRAMS])
def test_empty_text_is_a_zero_vector(spec):
    enc = SurfaceFormEncoder(spec)
    rows = enc.encode_batch(["", "a cat", "!!!" if spec is WORDS else ""])
    assert rows[0].nnz == 0 and rows[2].nnz == 0 and rows[1].nnz > 0
    assert math.isnan(cosine(spec, "", "a cat"))


@pytest.mark.parametrize("spec", [WORDS, TRIGRAMS, {**WORDS, "ngram_range": [1, 3]}])
def test_cosine_does_not_depend_on_the_other_texts(spec):
    a, b = "The cat sat on the mat.", "A cat sat on a hat!"
    alone = cosine(spec, a, b)
    crowd = tuple(f"text {i} about cats, hats and mats number {i * 7}" for i in range(50))
    assert cosine(spec, a, b, crowd) == alone  # identical floats, not merely close
    assert cosine(spec, a, b, ("zzz qqq",)) == alone


def test_stores_of_two_partitions_number_columns_alike(tmp_path):
    """Each partition's job indexes the whole text set: cosines across partitions are Ochiai's."""
    texts = ["the cat sat", "the cat ran away", "a dog", "dog", "", "mat hat cat", "cat"] + [f"w{i} x" for i in range(30)]
    files = [str(tmp_path / "texts" / f"part-{p}.parquet") for p in range(2)]
    write_text_partitions(texts, files)
    stores = []
    for p in range(2):
        out = str(tmp_path / "store" / f"part-{p}")
        manifest = embed_partition("form_only", WORDS, "s", p, 2, [files[p]], out, 1, LOG, vocabulary_texts=files)
        assert manifest["format"] == "csr"
        stores.append(out)
    store = VectorStore(stores, model="form_only")
    keys = lambda ts: np.array([text_key(t) for t in ts], dtype=np.uint64)  # noqa: E731
    a = ["the cat sat", "a dog", "mat hat cat", "cat", "", "w1 x"]
    b = ["the cat ran away", "dog", "cat", "the cat sat", "cat", "w2 x"]
    got = store.paired_cosine(keys(a), keys(b))
    want = [2 / math.sqrt(12), 1 / math.sqrt(2), 1 / math.sqrt(3), 1 / math.sqrt(3), math.nan, 1 / 2]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # the partitions split the texts (the test means something only if both hold some)
    assert all(len(part.keys) for part in store.parts)


def test_a_text_outside_the_indexed_set_is_refused():
    enc = SurfaceFormEncoder(WORDS)
    enc.index([["the cat"]])
    with pytest.raises(ValueError, match="outside the indexed text set"):
        enc.encode_batch(["the dog"])


# ---- tokenizer: words | treebank | char_ngrams (issue 32, point 5) ---------------------------------

NEGATED, ORIGINAL = "The man isn't running", "The man is running"


def test_treebank_keeps_the_verb_of_a_contracted_negation():
    # words: {the, man, isn, t, running}; treebank: {the, man, is, n't, running}
    assert SurfaceFormEncoder(WORDS).features(NEGATED) == {"the", "man", "isn", "t", "running"}
    assert SurfaceFormEncoder(TREEBANK).features(NEGATED) == {"the", "man", "is", "n't", "running"}


def test_treebank_cosine_of_a_negation_and_its_original_is_the_ochiai_coefficient_by_hand():
    # {the, man, is, n't, running} vs {the, man, is, running}: 4 shared of 5 and 4
    treebank = cosine(TREEBANK, NEGATED, ORIGINAL)
    assert treebank == pytest.approx(4 / math.sqrt(5 * 4))
    # the words rule loses `is` ({the, man, isn, t, running}): 3 shared
    words = cosine(WORDS, NEGATED, ORIGINAL)
    assert words == pytest.approx(3 / math.sqrt(5 * 4))
    assert treebank > words


@pytest.mark.parametrize("text,expected", [
    # the Treebank's ca/wo/sha before n't are given back their verb
    pytest.param("He can't swim", {"he", "can", "n't", "swim"}, id="cant"),
    pytest.param("It won't rain", {"it", "will", "n't", "rain"}, id="wont"),
    pytest.param("She doesn't like it", {"she", "does", "n't", "like", "it"}, id="do_support"),
    # other clitics stay whole; punctuation counts as under the words rule: not at all
    pytest.param("I'm here, \"aren't\" we?", {"i", "'m", "here", "are", "n't", "we"}, id="clitics_and_punctuation"),
    # a sentence-internal period does not glue to its word (the Treebank splits only the final one)
    pytest.param("He isn't. She is.", {"he", "is", "n't", "she"}, id="inner_period"),
])
def test_treebank_words(text, expected):
    assert SurfaceFormEncoder(TREEBANK).features(text) == expected


def test_older_features_key_names_the_tokenizer_of_the_same_name():
    assert SurfaceFormEncoder(TRIGRAMS).features("abcd") == {"abc", "bcd"}
    assert SurfaceFormEncoder({"family": "surface_form", "tokenizer": "char_ngrams"}).features("abcd") == {"abc", "bcd"}
    assert SurfaceFormEncoder({"family": "surface_form", "features": "words"}).features(NEGATED) == \
        SurfaceFormEncoder(WORDS).features(NEGATED)


def test_treebank_needs_no_nltk_data(monkeypatch, tmp_path):
    import nltk
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])  # an empty data path: nothing to find
    assert SurfaceFormEncoder(TREEBANK).features("Isn't it?") == {"is", "n't", "it"}
