"""Tests for workflow_scripts.csc.negation (grammatical English negation, SNCSE-style, addition only).

Tagger-free tests always run. Tagger tests need the offline NLTK data (perceptron tagger JSON and
WordNet), found through NLTK_DATA or <repo>/../shared/data/nltk_data, and skip when it is absent.
Nothing is downloaded.
"""
from __future__ import annotations

import os
import string
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import missing_data
from workflow_scripts.csc.negation import GrammaticalNegator

ROOT = Path(__file__).resolve().parents[2]


def _nltk_data_dir() -> Path | None:
    env = os.environ.get("NLTK_DATA")
    default = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "nltk_data"
    path = Path(env.split(os.pathsep)[0]) if env else default
    return path if path.is_dir() else None


@pytest.fixture(scope="module")
def tagged() -> GrammaticalNegator:
    data = _nltk_data_dir()
    if data is None:
        missing_data("NLTK data not found (set NLTK_DATA or provide ../shared/data/nltk_data)")
    nltk = pytest.importorskip("nltk")
    if str(data) not in nltk.data.path:
        nltk.data.path.insert(0, str(data))
    neg = GrammaticalNegator(use_tagger=True)
    if not neg.has_tagger:
        missing_data(f"tagger/WordNet not loadable from {data}: {neg.tagger_error}")
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


def test_plain_negate_many_hand_written(plain):
    sentences = ["The cat is on the mat.", "Is it raining?", "She walks to work.", "", "This is not fine.", "It is."]
    assert plain.negate_many(sentences) == [
        ("The cat is not on the mat.", "auxiliary", 3),
        ("Is it not raining?", "auxiliary", 2),
        (None, "needs_tagger", None),
        (None, "empty", None),
        (None, "already_negated", None),
        ("It is not.", "auxiliary", 2),
    ]
    assert plain.negate_many([]) == []


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


def test_tagged_negate_many_hand_written(tagged):
    sentences = ["She walks to work.", "Close the door.", '"Close the door," she said.', "He has finished the report.",
                 "Do you like it?", "Does the cat sleep?", "Great prices for hotels", "They countersued the firm.",
                 "I'll be there.", "This is not fine."]
    assert tagged.negate_many(sentences) == [
        ("She does not walk to work.", "do_support", 1),
        ("Do not close the door.", "do_support", 0),
        ('"Do not close the door," she said.', "do_support", 0),
        ("He has not finished the report.", "auxiliary", 2),
        ("Do you not like it?", "auxiliary", 2),
        (None, "inverted", None),
        (None, "no_verb", None),
        (None, "unknown_verb", None),
        ("I'll not be there.", "auxiliary", 1),
        (None, "already_negated", None),
    ]
    assert tagged.negate_many([]) == []


def test_tagged_deterministic(tagged):
    s = ["She walks to work.", "Close the door.", "He has finished the report."]
    assert tagged.negate_many(s) == tagged.negate_many(list(reversed(s)))[::-1]


def test_verb_lemmas_hand_checked(tagged):
    # WordNet's verb base forms in morphy's order (what nltk's private wordnet._morphy gave)
    assert tagged.verb_lemmas("saw") == ["saw", "see"]
    assert tagged.verb_lemmas("found") == ["found", "find"]
    assert tagged.verb_lemmas("axes") == ["axe", "ax"]
    assert tagged.verb_lemmas("singing") == ["sing", "singe"]
    assert tagged.verb_lemmas("went") == ["go"]  # irregular: verb.exc
    assert tagged.verb_lemmas("flies") == ["fly"]  # rule ies -> y
    assert tagged.verb_lemmas("countersued") == []
    assert len(tagged._verb_lemmas) == 11529 and len(tagged._verb_exceptions) == 2401  # WordNet 3.0


# --- tagging only as far as the decision needs -----------------------------------------------

def test_fast_tagger_matches_nltk_tag(tagged):
    """The per-position tagger gives nltk's own tags (digits, years, hyphens, unknown words)."""
    import nltk
    from nltk.tag.perceptron import PerceptronTagger
    from workflow_scripts.csc.tagger import _Tags
    nltk_tagger = PerceptronTagger(loc=nltk.data.find("taggers/averaged_perceptron_tagger_eng/"))
    for sentence in ["The quick brown fox jumps over the lazy dog .", "In 1998 3,000 X-rays cost $ 12m",
                     "Zorblax frimbled the quaggish wemp", "a", "Please close it"]:
        words = sentence.split()
        lazy = _Tags(tagged._perceptron, None, words)
        assert [lazy[i] for i in range(len(words))] == [t for _, t in nltk_tagger.tag(words)]


def test_batched_negation_keeps_no_memory_between_calls(tagged, real_english, monkeypatch):
    """Waiting for more tags is an exception: a reused exception instance would keep every frame
    it was raised from (its traceback grows with each raise), 2.5 GB over a 600k-sentence corpus."""
    import tracemalloc
    import workflow_scripts.csc.negation as negation
    monkeypatch.setattr(negation, "PREFIX_TAGS", 1)  # many sentences wait for tags, several times
    sample = real_english[:400]
    tagged.negate_many(sample)
    tracemalloc.start()
    try:
        tagged.negate_many(sample)
        first = tracemalloc.get_traced_memory()[0]
        for _ in range(4):
            tagged.negate_many(sample)
        growth = tracemalloc.get_traced_memory()[0] - first
    finally:
        tracemalloc.stop()
    assert growth < 200_000, growth


def test_tagger_files_read_without_nltk_are_what_nltk_loads(tagged):
    """With a VERIFIED_NLTK version the tagger and WordNet files are read directly: the same
    weights, tag dictionary, classes, normalisation, verb lemmas and rules, and fingerprint as
    loading them through nltk (which then checks the fast path against its own tag())."""
    import numpy as np
    from nltk.corpus.reader.wordnet import WordNetCorpusReader
    from nltk.tag.perceptron import PerceptronTagger
    from workflow_scripts.csc import tagger as N
    assert N._nltk_version() in N.VERIFIED_NLTK  # the nltk the suite runs is the one it verifies
    assert isinstance(tagged._tagger, N._TaggerFiles)  # the direct path was taken
    via_nltk = GrammaticalNegator(use_tagger=False)
    via_nltk._load(lazy_tags=True)
    assert isinstance(via_nltk._tagger, PerceptronTagger) and via_nltk._perceptron is not None
    assert via_nltk.fingerprint == tagged.fingerprint and via_nltk.missing == tagged.missing == []
    assert list(N.VERB_SUBSTITUTIONS) == WordNetCorpusReader.MORPHOLOGICAL_SUBSTITUTIONS["v"] == tagged._verb_rules
    assert via_nltk._verb_lemmas == tagged._verb_lemmas and via_nltk._verb_exceptions == tagged._verb_exceptions
    assert via_nltk._tagger.model.weights == tagged._tagger.model.weights
    assert via_nltk._tagger.tagdict == tagged._tagger.tagdict and via_nltk._tagger.classes == tagged._tagger.classes
    assert np.array_equal(via_nltk._perceptron.matrix, tagged._perceptron.matrix)
    words = ["1998", "3,000", "12m", "-5", "X-rays", "well-known", "-dash", "The", "ÉCOLE", "", "42nd", "٣٤٥٦"]
    assert [tagged._tagger.normalize(w) for w in words] == [via_nltk._tagger.normalize(w) for w in words]


def test_fast_path_does_not_import_nltk():
    """nltk's import takes 2 s (scikit-learn, scipy.stats, pandas): a negating process skips it."""
    data = _nltk_data_dir()
    if data is None:
        missing_data("NLTK data not found (set NLTK_DATA or provide ../shared/data/nltk_data)")
    code = ("import sys; from workflow_scripts.csc.negation import GrammaticalNegator as G; g = G(use_tagger=True); "
            "assert g.has_tagger and g._perceptron is not None; print(g.negate('She walks to work.')[0]); "
            "print('nltk' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "NLTK_DATA": str(data)}).stdout.split("\n")
    assert out[:2] == ["She does not walk to work.", "False"]


def test_tags_are_computed_only_as_far_as_read(tagged, monkeypatch):
    calls = []
    original = tagged._perceptron.tag_at
    monkeypatch.setattr(tagged._perceptron, "tag_at", lambda i, *a: calls.append(i) or original(i, *a))
    long_tail = " and many more words for the tagger at the end of the list"
    assert tagged.negate("Is it raining" + long_tail + "?")[1] == "auxiliary"
    assert calls == []  # decided by words alone
    assert tagged.negate("She walks to work" + long_tail + ".")[0].startswith("She does not walk to work and")
    assert calls == [0, 1]  # "She" (PRP) and "walks" (VBZ) decide
    calls.clear()
    assert tagged.negate("Great prices for hotels" + long_tail)[1] == "no_verb"
    assert calls == list(range(4 + len(long_tail.split())))  # no verb: every word is read


@pytest.fixture(scope="module")
def real_english():
    """The English side of the real EN-NL sample, unique, sorted (4,008 sentences)."""
    import csv
    from conftest import shared_data
    folder = shared_data("en_nl_parallel")
    out = set()
    for name in ("paracrawl_en_nl_human_eval.tsv", "tatoeba_laser_en_nl.tsv"):
        with open(folder / name, encoding="utf-8", newline="") as f:
            out.update(row["en"] for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return sorted(out)


def _digest(results) -> str:
    import hashlib
    h = hashlib.blake2b(digest_size=16)
    for r in results:
        h.update(repr(r).encode() + b"\n")
    return h.hexdigest()


def test_real_sentences_outputs_pinned(tagged, plain, real_english):
    """Outputs on 4,008 real sentences, pinned as computed by the whole-sentence tagging code this
    replaced (commit 8ae3e96): any change of any output fails here."""
    assert len(real_english) == 4008
    results = tagged.negate_many(real_english)
    from collections import Counter
    assert dict(Counter(r[1] for r in results)) == {
        "already_negated": 364, "auxiliary": 923, "do_support": 1075, "inverted": 29, "no_verb": 1527,
        "unknown_verb": 90}
    assert _digest(results) == "204243543e1ecd49293e6ea8adb47944"
    rules = plain.negate_many(real_english)
    assert dict(Counter(r[1] for r in rules)) == {"already_negated": 364, "auxiliary": 972, "inverted": 1,
                                                   "needs_tagger": 2671}
    assert _digest(rules) == "4b9d441803ce45763f5d802e4a7b49ca"


def test_lazy_tagging_equals_whole_sentence_tagging(tagged, real_english):
    """Tagging only as far as needed gives the outputs of tagging every sentence whole with
    nltk's own tag() (the reference mode), sentence by sentence."""
    reference = GrammaticalNegator(use_tagger=True, lazy_tags=False)
    assert reference.has_tagger and reference._perceptron is None
    sample = real_english[::2]  # 2,004 sentences: the reference mode is slow
    lazy = tagged.negate_many(sample)
    full = reference.negate_many(sample)
    assert [i for i, (a, b) in enumerate(zip(lazy, full)) if a != b] == []


def test_batched_span_tags_equal_tagging_word_by_word(tagged, real_english):
    """tag_spans (the next k words of many sentences at once, after the tags each already has, as
    negate_many uses it) gives tag_at's tags, also for words spelled like the tagger's START/END
    markers, one-word and empty sentences, spans that start at 0, 1, 2 or later and run past the
    end; and negate_many gives negate's result for every real sentence."""
    from workflow_scripts.csc.tagger import _Tags
    perceptron = tagged._perceptron
    sentences = [s.split() for s in real_english[:500]] + [
        [], ["Close"], ["-START-", "-END-", "is", "-END2-"], "In 1998 3,000 X-rays cost $ 12m".split()]
    reference = []
    for words in sentences:
        lazy = _Tags(perceptron, None, words)
        reference.append([lazy[i] for i in range(len(words))])
    for spans in ((1, 1, 1, 40), (3, 5, 100), (8, 16, 32, 64), (2, 1, 2)):
        done = [[] for _ in sentences]
        for k in spans:
            expected = [ref[:len(d) + k] for d, ref in zip(done, reference)]
            perceptron.tag_spans(sentences, done, k)
            assert done == expected
        assert sum(map(len, done)) > 0
    sample = real_english[1::3]
    assert tagged.negate_many(sample) == [tagged.negate(s) for s in sample]


def test_batched_negation_reads_tags_past_the_first_spans(tagged, monkeypatch):
    """Sentences decided beyond the first span of tags, or never (no verb, every word read), and
    the imperative re-tagging, give negate's results in negate_many."""
    import workflow_scripts.csc.negation as negation
    monkeypatch.setattr(negation, "PREFIX_TAGS", 2)
    long_tail = " and many more words for the tagger at the end of the list"
    sentences = ["Great prices for hotels" + long_tail, "The old red barn by the river near the old town burned down .",
                 "Close the door .", "Close", "Open", "Mind the gap", "Is it raining" + long_tail + "?",
                 "The list of all the many good hotels in the city has grown ."]
    results = tagged.negate_many(sentences)
    assert results == [tagged.negate(s) for s in sentences]
    assert [r[1] for r in results] == ["no_verb", "do_support", "do_support", "do_support", "do_support", "do_support",
                                       "auxiliary", "auxiliary"]
    assert results[1][0] == "The old red barn by the river near the old town did not burn down ."
    assert results[2][0] == "Do not close the door ."


# --- NLTK provenance --------------------------------------------------------------------------

SHARED_FINGERPRINT = {"mode": "tagger", "tagger": "averaged_perceptron_tagger_eng@d9db66b94ff151b1",
                      "wordnet": "wordnet@4f5fed30d8228b6c"}  # + "nltk": the installed version


def _resources_in_subprocess(nltk_data: Path, home: Path, then_append: tuple[Path, str] | None = None) -> list[dict]:
    """nltk_resources() and what GrammaticalNegator loaded, in a fresh process (nltk fixes its
    search path on import) that sees only `nltk_data` (and HOME's ~/nltk_data); with
    `then_append`, again after appending a line to that file."""
    import json
    import subprocess
    import sys
    script = ("import json, sys\nfrom workflow_scripts.csc import negation\n"
              "def state():\n"
              "    n = negation.GrammaticalNegator(True)\n"
              "    return {'planned': negation.nltk_resources(True), 'loaded': n.fingerprint, 'missing': n.missing,"
              " 'tagger': n.has_tagger}\n"
              "out = [state()]\n"
              "if len(sys.argv) > 1:\n"
              "    with open(sys.argv[1], 'a') as f:\n"
              "        f.write(sys.argv[2])\n"
              "    negation._planned.cache_clear()\n"
              "    out.append(state())\n"
              "print(json.dumps(out))")
    env = {**os.environ, "NLTK_DATA": str(nltk_data), "HOME": str(home)}
    args = [str(then_append[0]), then_append[1]] if then_append else []
    out = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_fingerprint_names_the_data_not_the_place(tagged):
    import importlib.metadata
    from workflow_scripts.csc.negation import grammatical_negation_plan, nltk_resources
    expected = {**SHARED_FINGERPRINT, "nltk": importlib.metadata.version("nltk")}
    assert nltk_resources(True) == (expected, [])
    assert tagged.fingerprint == expected  # what was loaded is what was planned
    assert nltk_resources(False) == ({"mode": "rules"}, [])  # no tagger asked: no NLTK data read
    settings = {"grammatical_negation": {"enabled": True, "languages": ["en"], "use_tagger": True}}
    assert grammatical_negation_plan(settings, "en") == expected
    assert grammatical_negation_plan(settings, "nl") is None
    assert grammatical_negation_plan({"grammatical_negation": {"enabled": False}}, "en") is None
    assert grammatical_negation_plan({}, "en") == expected  # the defaults: enabled, en, tagger


def test_fingerprint_without_nltk_data(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    got, = _resources_in_subprocess(empty, tmp_path)
    if got["tagger"]:
        pytest.skip("NLTK data installed in a default location: cannot hide it")
    missing = ["averaged_perceptron_tagger_eng", "wordnet"]
    assert got == {"planned": [{"mode": "rules"}, missing], "loaded": {"mode": "rules"}, "missing": missing,
                   "tagger": False}


def test_fingerprint_same_for_zip_or_folder_and_changes_with_the_data(tagged, tmp_path):
    """WordNet unzipped into a folder has the same identity; a changed verb.exc changes it."""
    import importlib.metadata
    import shutil
    import zipfile
    shared = _nltk_data_dir()
    data = tmp_path / "nltk_data"
    shutil.copytree(shared / "taggers" / "averaged_perceptron_tagger_eng",
                    data / "taggers" / "averaged_perceptron_tagger_eng")
    (data / "corpora" / "wordnet").mkdir(parents=True)
    with zipfile.ZipFile(shared / "corpora" / "wordnet.zip") as z:
        for name in ("index.verb", "verb.exc"):  # all the negation reads of WordNet
            (data / "corpora" / "wordnet" / name).write_bytes(z.read(f"wordnet/{name}"))
    expected = {**SHARED_FINGERPRINT, "nltk": importlib.metadata.version("nltk")}
    got, changed = _resources_in_subprocess(data, tmp_path, (data / "corpora" / "wordnet" / "verb.exc", "frobbed frob\n"))
    assert got == {"planned": [expected, []], "loaded": expected, "missing": [], "tagger": True}
    assert changed["loaded"]["wordnet"] != expected["wordnet"] and changed["loaded"]["tagger"] == expected["tagger"]
    assert changed["planned"] == [changed["loaded"], []]
