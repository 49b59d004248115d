"""Montague probe, phrases: the regular language (A)+N up to three words, its composition and
the strings the tests need; word lists from the config, from the published CSV and from our own
Dutch CSV; bad input counted, never fatal."""
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import shared_data
from workflow_scripts.montague.phrases import (build, build_word_lists, generate_phrases, read_word_csv,
                                               strings_to_embed, word_lists, write_outputs)

ROOT = Path(__file__).resolve().parents[2]
# the seed's full published lists: a study of their own (the default config keeps a few words of each type)
CONFIG = yaml.safe_load((ROOT / "resources" / "montague" / "study_published.yaml").read_text())
EN = CONFIG["montague"]["datasets"]["modifiers_en"]
DEFAULT_EN = yaml.safe_load((ROOT / "config.yaml").read_text())["montague"]["datasets"]["modifiers_en"]


@pytest.fixture(scope="module")
def published(log_module):
    words, phrases, strings, report = build("en", EN, log_module)
    return words, phrases, strings, report


@pytest.fixture(scope="module")
def log_module():
    from workflow_scripts.common import setup_logging
    return setup_logging(None, "test-montague")


def test_published_lists_give_44652_phrases_of_the_right_composition(published):
    words, phrases, strings, report = published
    assert [words.adjective_types.count(t) for t in words.types] == [11, 6, 27, 14, 3]
    assert len(words.adjectives) == 61 and len(words.nouns) == 12
    assert phrases.height == 44_652
    kinds = dict(phrases.group_by("kind").len().iter_rows())
    assert kinds == {"AN": 732, "AAN": 43_920}  # 12 x 61 and 12 x 61 x 60; 12 x 61^2 alone proves nothing
    assert report["phrases"] == {"AN": 732, "AAN": 43_920, "total": 44_652}
    assert phrases["phrase"].n_unique() == phrases.height and phrases["phrase_id"].n_unique() == phrases.height
    # every word count is 2 or 3, an AAN never repeats an adjective, every phrase ends in a noun
    parts = phrases.with_columns(pl.col("phrase").str.split(" ").list.len().alias("words"))
    assert set(parts.filter(pl.col("kind") == "AN")["words"]) == {2}
    assert set(parts.filter(pl.col("kind") == "AAN")["words"]) == {3}
    aan = phrases.filter(pl.col("kind") == "AAN")
    assert (aan["adj1"] != aan["adj2"]).all()
    assert set(phrases["noun"]) == set(words.nouns)
    # per noun: 61 AN and 61 x 60 AAN; per ordered adjective pair: one AAN per noun
    per_noun = phrases.group_by("noun", "kind").len()
    assert set(per_noun.filter(pl.col("kind") == "AN")["len"]) == {61}
    assert set(per_noun.filter(pl.col("kind") == "AAN")["len"]) == {3660}
    assert set(aan.group_by("adj1", "adj2").len()["len"]) == {12}


def test_a_sample_of_phrases(published):
    _, phrases, _, _ = published
    have = set(phrases["phrase"])
    for phrase in ("wild dog", "square assumed law", "alleged former king", "former alleged king", "ex- king",
                   "so-called big occurence", "big so-called occurence"):
        assert phrase in have, phrase
    for phrase in ("wild wild dog", "dog wild", "wild", "dog", "wild red", "dog dog", "wild red big dog",
                   "feral dog"):  # repeats, wrong order, no noun, single words, four words, synonyms
        assert phrase not in have, phrase
    row = phrases.filter(pl.col("phrase") == "square assumed law").row(0, named=True)
    assert (row["kind"], row["type1"], row["type2"], row["key"]) == ("AAN", "intersective", "plain",
                                                                   "intersective|plain")
    an = phrases.filter(pl.col("phrase") == "counterfeit potato").row(0, named=True)
    assert (an["key"], an["adj2"], an["type2"]) == ("privative", None, None)
    # order: AN first, then AAN, each by noun, a1, a2 in list order
    assert phrases["phrase"][:3].to_list() == ["wild student", "red student", "Canadian student"]
    assert phrases["phrase"][732:734].to_list() == ["wild red student", "wild Canadian student"]


def test_strings_cover_words_and_sub_phrases(published):
    words, phrases, strings, _ = published
    unique = set(strings)
    assert len(unique) == 48_385  # 44,652 phrases + 73 words + 61 x 60 `a1 a2`
    assert {"wild", "dog", "so-called", "wild red", "red wild", "assumed law", "square law", "square assumed"} <= unique
    aan = phrases.filter(pl.col("kind") == "AAN")
    for a1, a2, n in aan.select("adj1", "adj2", "noun").sample(200, seed=1).iter_rows():
        assert {a1, a2, n, f"{a1} {a2}", f"{a2} {n}", f"{a1} {n}"} <= unique


def test_config_lists_are_the_published_csv():
    """The published-lists study carries the published lists; they equal adjectives.csv of the reference."""
    path = shared_data("modifiers_consistency", "adjectives.csv")
    from_csv = read_word_csv(path)
    from_config = word_lists(EN)
    assert from_csv.as_dict() == from_config.as_dict()
    assert from_csv.types == ["intersective", "subsective", "plain", "privative", "ambiguous"]
    assert from_csv.problems == {}


def test_default_lists_are_a_few_published_words_of_every_type(log_module):
    """The default run's English lists: every published type, in the published order, each with a
    few of its published adjectives (so every test key has items), and a few published nouns; small
    enough for `make run` (1,350 phrases, not 44,652)."""
    full, few = word_lists(EN), word_lists(DEFAULT_EN)
    assert few.types == full.types
    for kind in full.types:
        mine = [a for a, t in zip(few.adjectives, few.adjective_types) if t == kind]
        theirs = [a for a, t in zip(full.adjectives, full.adjective_types) if t == kind]
        assert len(mine) >= 2 and [a for a in theirs if a in mine] == mine, kind
    assert 2 <= len(few.nouns) < len(full.nouns) and [n for n in full.nouns if n in few.nouns] == few.nouns
    _, phrases, _, report = build("en", DEFAULT_EN, log_module)
    assert report["phrases"] == {"AN": 90, "AAN": 1_260, "total": 1_350}
    keys = set(phrases.filter(pl.col("kind") == "AAN")["key"])
    assert len(keys) == len(full.types) ** 2  # every (outer, inner) type pair of the AAN tests


def test_our_dutch_list_reads_and_is_grammatical_in_form():
    words = read_word_csv(ROOT / "resources" / "montague" / "adjectives_nl.csv")
    assert words.types == ["intersective", "subsective", "plain", "privative", "ambiguous"]
    assert words.problems == {}
    assert len(words.adjectives) == 23 and len(words.nouns) == 12
    # attributive forms before a de-word: -e, or an adjective that does not inflect (-en)
    assert all(a.endswith("e") or a.endswith("en") for a in words.adjectives)
    phrases = generate_phrases("nl", words)
    assert phrases.height == 12 * 23 * 23
    assert "vermeende voormalige koning" in set(phrases["phrase"])


def test_bad_lines_and_duplicates_are_counted_not_fatal(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_bytes("Colour,SYN Colour,Size words,Nouns\n"
                     "red,crimson,big,dog\n"
                     "blue,navy,small,cat,EXTRA\n"           # a cell more than the header: skipped
                     "red,,huge,dog\n"                      # red and dog again
                     "green,,dog,bird\n"                    # an adjective that is a noun
                     "ye\x01llow,,  tiny  ,\n".encode() +  # a control character; whitespace normalised
                     b"\xffbad,,,fish\n")                   # not UTF-8
    words = read_word_csv(path)
    assert words.types == ["colour", "size_words"]
    assert words.adjectives == ["red", "green", "big", "huge", "tiny"]
    assert words.nouns == ["dog", "bird", "fish"]
    counts = {reason: p["count"] for reason, p in words.problems.items()}
    assert counts == {"extra_field": 1, "duplicate_adjective": 1, "duplicate_noun": 1, "adjective_is_noun": 1,
                      "control_char": 1, "undecodable": 1}
    assert "line 3" in words.problems["extra_field"]["examples"][0]


def test_inline_lists_any_language_and_outputs(tmp_path, log):
    spec = {"adjectives": {"kleur": ["rode", "blauwe"], "maat": ["grote"]}, "nouns": ["hond", "kat"]}
    words, phrases, strings, report = build("mine", spec, log)
    assert phrases.height == 2 * (3 + 3 * 2)
    assert set(phrases.filter(pl.col("kind") == "AAN")["key"]) == {"kleur|kleur", "kleur|maat", "maat|kleur"}
    texts = [tmp_path / f"part-{i:03d}.parquet" for i in range(2)]
    out = write_outputs(phrases, strings, report, str(tmp_path / "phrases.parquet"), [str(t) for t in texts],
                        str(tmp_path / "report.json"))
    assert out["texts"]["unique_texts"] == 18 + 5 + 6
    written = pl.concat([pl.read_parquet(t) for t in texts])
    assert written["text"].n_unique() == written.height == 29
    assert pl.read_parquet(tmp_path / "phrases.parquet").equals(phrases)


def test_empty_lists_are_an_error_duplicates_are_not(log):
    with pytest.raises(ValueError, match="no adjectives"):  # red is a noun, so no adjective is left
        build("x", {"adjectives": {"a": ["red"]}, "nouns": ["red"]}, log)
    words = build_word_lists({"a": ["red", "red"]}, ["dog"])
    assert words.adjectives == ["red"] and words.problems["duplicate_adjective"]["count"] == 1
    assert strings_to_embed(words, generate_phrases("x", words)) == ["red dog", "red", "dog"]
