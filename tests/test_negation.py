"""Tests for workflow_scripts.negation (grammatical English negation, SNCSE-style, addition only).

Tagger-free tests always run. Tagger tests need the offline NLTK data (perceptron tagger JSON and
WordNet), found through NLTK_DATA or <repo>/../shared/data/nltk_data, and skip when it is absent.
Nothing is downloaded.
"""
from __future__ import annotations

import os
import string
from pathlib import Path

import pytest

from workflow_scripts.negation import GrammaticalNegator


def _nltk_data_dir() -> Path | None:
    env = os.environ.get("NLTK_DATA")
    default = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "nltk_data"
    path = Path(env.split(os.pathsep)[0]) if env else default
    return path if path.is_dir() else None


@pytest.fixture(scope="module")
def tagged() -> GrammaticalNegator:
    data = _nltk_data_dir()
    if data is None:
        pytest.skip("NLTK data not found (set NLTK_DATA or provide ../shared/data/nltk_data)")
    nltk = pytest.importorskip("nltk")
    if str(data) not in nltk.data.path:
        nltk.data.path.insert(0, str(data))
    neg = GrammaticalNegator(use_tagger=True)
    if not neg.has_tagger:
        pytest.skip(f"tagger/WordNet not loadable from {data}: {neg.tagger_error}")
    return neg


@pytest.fixture(scope="module")
def plain() -> GrammaticalNegator:
    neg = GrammaticalNegator(use_tagger=False)
    assert not neg.has_tagger
    return neg


def _check_position(result: tuple, words: tuple[str, ...] = ("not",)) -> None:
    """position points at the first inserted word, in the output's whitespace tokens."""
    text, _, pos = result
    toks = text.split()
    assert toks[pos].strip(string.punctuation).lower() in words


# --- without the tagger (no data needed) ------------------------------------------------------

PLAIN_CASES = [
    ("The cat is on the mat.", "The cat is not on the mat.", "auxiliary"),
    ("She will come tomorrow.", "She will not come tomorrow.", "auxiliary"),
    ("They were happy.", "They were not happy.", "auxiliary"),
    ("You must leave now!", "You must not leave now!", "auxiliary"),
    ("It's raining.", "It's not raining.", "auxiliary"),
    ("I'm tired.", "I'm not tired.", "auxiliary"),
    ("They're here.", "They're not here.", "auxiliary"),
    ("I'll be there.", "I'll not be there.", "auxiliary"),
    ("We've seen it.", "We've not seen it.", "auxiliary"),
    ("Let's go.", "Let's not go.", "auxiliary"),
    ("John's car is red.", "John's car is not red.", "auxiliary"),  # possessive 's skipped
    ("The can is empty.", "The can is not empty.", "auxiliary"),  # noun after a determiner
    ("In May it is warm.", "In May it is not warm.", "auxiliary"),  # capitalised name
    ("It is.", "It is not.", "auxiliary"),  # trailing punctuation moves onto "not"
    ("He is, however, happy.", "He is not, however, happy.", "auxiliary"),
    ("Is it raining?", "Is it not raining?", "auxiliary"),  # inversion: after the pronoun
    ("Can you help me?", "Can you not help me?", "auxiliary"),
    ("She walks because it is cold.", "She walks because it is not cold.", "auxiliary"),  # documented limit
]


@pytest.mark.parametrize("sentence,expected,reason", PLAIN_CASES)
def test_plain_negates(plain, sentence, expected, reason):
    result = plain.negate(sentence)
    assert result[:2] == (expected, reason)
    _check_position(result)


@pytest.mark.parametrize("sentence,reason", [
    ("She walks to work.", "needs_tagger"),
    ("He has finished the report.", "needs_tagger"),  # have: auxiliary or main verb?
    ("She does her homework, which is fun.", "needs_tagger"),  # do-form before the be-form
    ("Great prices for hotels", "needs_tagger"),
    ("John's happy.", "needs_tagger"),  # 's after a noun may be possessive
    ("Is the cat on the mat?", "inverted"),  # subject is a noun phrase
    ("Why is the sky blue?", "needs_tagger"),
    ("This is not fine.", "already_negated"),
    ("She can't swim.", "already_negated"),
    ("I DON'T know.", "already_negated"),
    ("We never met.", "already_negated"),
    ("Nobody came.", "already_negated"),
    ("There is no time.", "already_negated"),
    ("You cannot be serious.", "already_negated"),
    ("Neither option is good.", "already_negated"),
    ("I dont know.", "already_negated"),
    ("Isn\u2019t it nice?", "already_negated"),  # curly apostrophe
    ("", "empty"),
    ("   ", "empty"),
    ("... -- !", "empty"),
])
def test_plain_not_negated(plain, sentence, reason):
    assert plain.negate(sentence) == (None, reason, None)


def test_missing_data_falls_back_without_exception(monkeypatch, tmp_path):
    nltk = pytest.importorskip("nltk")
    monkeypatch.delenv("NLTK_DATA", raising=False)
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    neg = GrammaticalNegator(use_tagger=True)
    assert neg.has_tagger is False and neg.tagger_error
    assert neg.negate("She walks to work.") == (None, "needs_tagger", None)
    assert neg.negate("The cat is on the mat.")[0] == "The cat is not on the mat."


def test_plain_negate_many_matches_negate(plain):
    sentences = [c[0] for c in PLAIN_CASES] + ["She walks to work.", "", "This is not fine."]
    assert plain.negate_many(sentences) == [plain.negate(s) for s in sentences]


def test_other_tokens_unchanged(plain):
    sentence = "  The  cat\tis   on the mat.  "
    text, _, pos = plain.negate(sentence)
    toks = text.split()
    assert toks[:pos] + toks[pos + 1:] == sentence.split() and toks[pos] == "not"


# --- with the tagger --------------------------------------------------------------------------

TAGGED_CASES = [
    ("The cat is on the mat.", "The cat is not on the mat.", "auxiliary"),
    ("She walks to work.", "She does not walk to work.", "do_support"),
    ("They sold the house last year.", "They did not sell the house last year.", "do_support"),
    ("He has finished the report.", "He has not finished the report.", "auxiliary"),
    ("He has already finished.", "He has not already finished.", "auxiliary"),  # adverb skipped
    ("She had eaten.", "She had not eaten.", "auxiliary"),
    ("He has a car.", "He does not have a car.", "do_support"),  # main-verb have
    ("I had lunch.", "I did not have lunch.", "do_support"),
    ("I do like it.", "I do not like it.", "auxiliary"),  # emphatic do
    ("She does her homework.", "She does not do her homework.", "do_support"),  # main-verb do
    ("He saw the film.", "He did not see the film.", "do_support"),  # not "saw" (to saw)
    ("The results show a clear trend.", "The results do not show a clear trend.", "do_support"),
    ("I love it.", "I do not love it.", "do_support"),
    ("Close the door.", "Do not close the door.", "do_support"),  # imperative
    ('"Close the door," she said.', '"Do not close the door," she said.', "do_support"),
    ("Please close the door.", "Please do not close the door.", "do_support"),
    ("Have a nice day.", "Do not have a nice day.", "do_support"),
    ("She will come tomorrow.", "She will not come tomorrow.", "auxiliary"),
    ("The can is empty.", "The can is not empty.", "auxiliary"),  # "can" after a determiner
    ("It's raining.", "It's not raining.", "auxiliary"),
    ("John's car is red.", "John's car is not red.", "auxiliary"),
    ("I'd like a coffee.", "I'd not like a coffee.", "auxiliary"),
    ("To err is human.", "To err is not human.", "auxiliary"),  # infinitive is no main verb
    ("Work is hard.", "Work is not hard.", "auxiliary"),  # not an imperative
    ("Is it raining?", "Is it not raining?", "auxiliary"),
    ("Do you like it?", "Do you not like it?", "auxiliary"),
    ("Have you seen it?", "Have you not seen it?", "auxiliary"),
    ("Who is coming?", "Who is not coming?", "auxiliary"),
    ("Who wrote this?", "Who did not write this?", "do_support"),
    ("Had I known, I would have left.", "Had I not known, I would have left.", "auxiliary"),
]


@pytest.mark.parametrize("sentence,expected,reason", TAGGED_CASES)
def test_tagged_negates(tagged, sentence, expected, reason):
    result = tagged.negate(sentence)
    assert result[:2] == (expected, reason)
    _check_position(result, ("not",) if reason == "auxiliary" else ("do", "does", "did"))
    if reason == "do_support":
        assert result[0].split()[result[2] + 1] == "not"


@pytest.mark.parametrize("sentence,reason", [
    ("Great prices for hotels", "no_verb"),
    ("John's happy.", "no_verb"),  # tagged as possessive; no finite verb left
    ("Welcome to our website!", "no_verb"),  # greeting, not an imperative
    ("Is the cat on the mat?", "inverted"),
    ("Does the cat sleep?", "inverted"),
    ("Why is the sky blue?", "inverted"),
    ("They countersued the firm.", "unknown_verb"),  # no WordNet base form: not guessed
    ("This is not fine.", "already_negated"),
    ("Nobody came.", "already_negated"),
    ("", "empty"),
])
def test_tagged_not_negated(tagged, sentence, reason):
    assert tagged.negate(sentence) == (None, reason, None)


def test_tagged_negate_many_matches_negate(tagged):
    sentences = ([c[0] for c in TAGGED_CASES] + [c[0] for c in PLAIN_CASES]
                 + ["Great prices for hotels", "", "This is not fine.", "Does the cat sleep?"])
    batch = tagged.negate_many(sentences)
    assert batch == [tagged.negate(s) for s in sentences]
    assert tagged.negate_many([]) == []


def test_tagged_deterministic(tagged):
    s = ["She walks to work.", "Close the door.", "He has finished the report."]
    assert tagged.negate_many(s) == tagged.negate_many(list(reversed(s)))[::-1]
