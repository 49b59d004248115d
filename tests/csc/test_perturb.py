import json
import random

import pytest

from workflow_scripts.csc.perturb import Perturber, insertion_variants

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
    from collections import Counter
    p = Perturber(SETTINGS, "en", seed=13)
    text = "one two three four five six seven eight"
    texts = lambda perturber, sid: [r[5] for r in perturber.variants([sid], [text], Counter())]
    first = texts(p, 42)
    assert first == texts(p, 42)
    assert first != texts(p, 43)  # another sentence id, another order
    assert first != texts(Perturber(SETTINGS, "en", seed=14), 42)  # another config seed, another order


# (seed 13, sentence id 42): computed once (commit 8ae3e96), the same in every process and run; a
# change of the seeding, the shuffle, the candidate order or the id scheme fails here
PINNED_VARIANTS = [
    (42, 7854527698378766048, "fuzz", 3, "the", "one two three the four five six seven eight"),
    (42, 1963185256063355824, "fuzz", 3, "a", "one two three a four five six seven eight"),
    (42, 14396203585203428485, "fuzz", 1, "the", "one the two three four five six seven eight"),
    (42, 12849669235944296598, "negation", 5, "not", "one two three four five not six seven eight"),
    (42, 4577847436080318544, "negation", 2, "not", "one two not three four five six seven eight"),
    (42, 11640479748012009983, "negation", 7, "not", "one two three four five six seven not eight"),
]


def test_seeded_variants_pinned_here_and_in_a_fresh_process():
    import json
    import subprocess
    import sys
    from collections import Counter
    rows = Perturber(SETTINGS, "en", seed=13).variants([42], ["one two three four five six seven eight"], Counter())
    assert rows == PINNED_VARIANTS
    script = ("import json, collections\nfrom workflow_scripts.csc.perturb import Perturber\n"
              f"rows = Perturber({SETTINGS!r}, 'en', seed=13).variants([42], ['one two three four five six seven eight'],"
              " collections.Counter())\nprint(json.dumps(rows))")
    # a fresh interpreter with another hash seed: nothing may depend on Python's salted hash()
    env = {**__import__("os").environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env)
    assert [tuple(r) for r in json.loads(out.stdout)] == PINNED_VARIANTS


def test_inlined_shuffle_and_ids_equal_the_library_ones():
    from workflow_scripts.common import stable_id
    from workflow_scripts.csc.perturb import _shuffle, variant_id
    for seed in range(200):
        for n in (0, 1, 2, 3, 7, 16, 33, 100, 257):
            a, b = list(range(n)), list(range(n))
            r1, r2 = random.Random(f"{seed}:{n}"), random.Random(f"{seed}:{n}")
            random.Random.shuffle(r1, a)
            _shuffle(r2, b)
            assert a == b and r1.random() == r2.random()  # same order, same draws consumed
    assert variant_id(42, "fuzz", 3, "the") == stable_id(42, "fuzz", 3, "the") == 7854527698378766048
    assert variant_id(2 ** 64 - 1, "grammatical_negation", 0, "not") == stable_id(2 ** 64 - 1, "grammatical_negation",
                                                                                  0, "not")


def test_reseeding_one_generator_gives_each_sentences_own_state():
    from workflow_scripts.csc.perturb import _reseed, sentence_rng
    rng = random.Random()
    for seed in (0, 13, 2 ** 40):
        for sentence_id in (0, 1, 12345, 2 ** 63, 2 ** 64 - 1):
            _reseed(rng, seed, sentence_id)
            reference = sentence_rng(seed, sentence_id)
            assert rng.getstate()[:2] == reference.getstate()[:2]
            assert [rng.getrandbits(7) for _ in range(50)] == [reference.getrandbits(7) for _ in range(50)]


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
    from workflow_scripts.csc.perturb import perturb_corpus
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


def _write_corpus(folder, shards: list[list[str]], language: str = "en") -> None:
    import json

    import polars as pl

    from workflow_scripts.common import text_key
    folder.mkdir(parents=True)
    entries, next_id = [], 1
    for k, chunk in enumerate(shards):
        pl.DataFrame({"sentence_id": pl.Series(range(next_id, next_id + len(chunk)), dtype=pl.UInt64), "text": chunk,
                      "text_key": pl.Series([text_key(t) for t in chunk], dtype=pl.UInt64)}
                     ).write_parquet(folder / f"part-{k:05d}.parquet")
        entries.append({"file": f"part-{k:05d}.parquet", "rows": len(chunk)})
        next_id += len(chunk)
    (folder / "manifest.json").write_text(json.dumps({"corpus": "c", "language": language, "rows": next_id - 1,
                                                      "shards": entries}))


# every count below follows from the sentences alone, whatever the shuffle picks (see each comment)
HAND_CORPUS = [
    ["the the",                # fuzz "the" at 0 or 1: both "the the the" -> 1 variant, 1 collapsed; not: 2
     "It is here.",            # 3 words: 3 fuzz, 3 not; rules: "It is not here." (auxiliary)
     "She walks home today"],  # 3 of 4 positions each; rules: needs_tagger
    ["Nobody knows it",        # 3 and 3; already_negated
     "hello",                  # 1 and 1; needs_tagger
     "-- !"],                  # 2 and 2 (before "--", before "!"); no word: empty
]
HAND_SETTINGS = {"variants_per_sentence": 3, "fuzz_terms": {"en": ["the"]}, "negation_terms": {"en": ["not"]},
                 "grammatical_negation": {"enabled": True, "languages": ["en"], "use_tagger": False}}


def _run(tmp_path, settings, name="out", expected_nltk=None):
    """perturb_corpus with the plan `expected_nltk` (None: no grammatical negation planned),
    as rules/csc.smk's perturb job runs it (run_perturb)."""
    from workflow_scripts.csc.perturb import run_perturb
    from workflow_scripts.jobs import make_job
    out = tmp_path / name
    run_perturb(make_job(
        input=[str(tmp_path / "corpus")],
        output={"variants": str(out / "variants"), "texts": [str(out / f"texts-{p}.parquet") for p in range(2)],
                "report": str(out / "report.json")},
        params={"settings": settings, "seed": 5, "partitions": 2, "nltk": expected_nltk}))
    return json.loads((out / "report.json").read_text())


def test_report_counts_hand_derived(tmp_path):
    import polars as pl
    _write_corpus(tmp_path / "corpus", HAND_CORPUS)
    report = _run(tmp_path, HAND_SETTINGS, expected_nltk={"mode": "rules"})
    assert report == {
        "corpus": "c", "language": "en", "sentences": 6, "seed": 5,
        "variants": {"fuzz": 1 + 3 + 3 + 3 + 1 + 2, "negation": 2 + 3 + 3 + 3 + 1 + 2, "grammatical_negation": 1},
        "variants_per_sentence": 3, "fuzz_terms": ["the"], "negation_terms": ["not"],
        "duplicates_collapsed": {"fuzz": 1, "negation": 0},
        "grammatical_negation": {"tagger": False, "nltk": {"mode": "rules"}, "missing_nltk_data": [],
                                 "outcomes": {"already_negated": 1, "auxiliary": 1, "empty": 1, "needs_tagger": 3}},
        "shards": [{"file": "part-00000.parquet", "rows": (1 + 2) + (3 + 3 + 1) + (3 + 3)},
                   {"file": "part-00001.parquet", "rows": (3 + 3) + (1 + 1) + (2 + 2)}],
    }
    variants = pl.read_parquet(tmp_path / "out" / "variants" / "part-*.parquet")
    assert variants.filter(pl.col("kind") == "grammatical_negation")["text"].to_list() == ["It is not here."]
    first = variants.filter(pl.col("original_id") == 1)["text"].to_list()
    assert first[0] == "the the the" and sorted(first[1:]) == ["not the the", "the not the"]
    texts = pl.concat([pl.read_parquet(tmp_path / "out" / f"texts-{p}.parquet") for p in range(2)])
    # originals + variants, each text once: inserting "not" before "here." gives the grammatical
    # negation's "It is not here." too (3 words, 3 variants: every position is taken)
    assert texts.height == texts["text"].n_unique() == 6 + 28 - 1


def test_report_records_the_nltk_data_and_refuses_another_plan(tmp_path):
    """Without NLTK data (a fresh process, NLTK_DATA empty) the report says so and the log says
    what is missing and how to fix it; with the data the report names it; a job whose NLTK data
    differs from what Snakemake planned with stops."""
    import json
    import os
    import subprocess
    import sys
    _write_corpus(tmp_path / "corpus", HAND_CORPUS)
    settings = {**HAND_SETTINGS, "grammatical_negation": {"enabled": True, "languages": ["en"], "use_tagger": True}}
    empty = tmp_path / "empty"
    empty.mkdir()
    script = ("import json, sys\nfrom workflow_scripts.common import setup_logging\n"
              "from workflow_scripts.csc.perturb import perturb_corpus\n"
              "out = sys.argv[1]\n"
              "perturb_corpus(sys.argv[2], json.loads(sys.argv[3]), 5, 2, out + '/variants', [out + '/t0', out + '/t1'],"
              " out + '/report.json', setup_logging(out + '/log', 'p'))\n")
    env = {**os.environ, "NLTK_DATA": str(empty), "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "bare"), str(tmp_path / "corpus"), json.dumps(settings)],
                   env=env, check=True, capture_output=True)
    gram = json.loads((tmp_path / "bare" / "report.json").read_text())["grammatical_negation"]
    if gram["tagger"]:
        pytest.skip("NLTK data installed in a default location: cannot hide it")
    assert gram == {"tagger": False, "nltk": {"mode": "rules"},
                    "missing_nltk_data": ["averaged_perceptron_tagger_eng", "wordnet"],
                    "outcomes": {"already_negated": 1, "auxiliary": 1, "empty": 1, "needs_tagger": 3}}
    log = (tmp_path / "bare" / "log").read_text()
    assert "WARNING" in log and "missing (averaged_perceptron_tagger_eng, wordnet" in log and "NLTK_DATA" in log

    from workflow_scripts.csc.negation import GrammaticalNegator, nltk_resources
    planned, missing = nltk_resources(True)
    if missing or not GrammaticalNegator(True).has_tagger:
        from conftest import missing_data
        missing_data("no NLTK data here for the tagger half")
    with_data = _run(tmp_path, settings, "tagged", expected_nltk=planned)["grammatical_negation"]
    assert with_data["tagger"] is True and with_data["nltk"] == planned and planned["mode"] == "tagger"
    assert with_data["nltk"] != gram["nltk"]  # so the Snakemake param differs and perturbation reruns
    assert with_data["outcomes"] == {"already_negated": 1, "auxiliary": 1, "do_support": 1, "empty": 1, "no_verb": 2}
    with pytest.raises(RuntimeError, match="planned with"):
        _run(tmp_path, settings, "mismatch", expected_nltk={"mode": "rules"})
    assert not (tmp_path / "mismatch" / "report.json").exists()


def test_plan_for_no_grammatical_negation_is_checked(tmp_path):
    _write_corpus(tmp_path / "corpus", HAND_CORPUS, language="nl")
    settings = {"variants_per_sentence": 3, "fuzz_terms": {"nl": ["de"]}, "negation_terms": {"nl": ["niet"]}}
    assert _run(tmp_path, settings, "ok", expected_nltk=None)["grammatical_negation"] is None
    with pytest.raises(RuntimeError, match="gets none"):
        _run(tmp_path, settings, "bad", expected_nltk={"mode": "rules"})


def test_in_order_keeps_at_most_ahead_results_pending():
    """Results come back in order, and no more than `ahead` shards are submitted and not yet
    taken: finished shards cannot pile up in the writing process (pool.imap queues them all)."""
    from workflow_scripts.csc.perturb import _in_order

    class Done:
        def __init__(self, value):
            self.value = value

        def get(self):
            return self.value

    class Pool:  # every task finishes at once: the worst case for a slow writer
        submitted = 0

        def apply_async(self, fn, args):
            Pool.submitted += 1
            return Done(fn(*args))

    taken = []
    for result in _in_order(Pool(), lambda x: x * 10, list(range(7)), ahead=2):
        assert Pool.submitted - len(taken) <= 2 + 1  # pending (2) + the one just handed over
        taken.append(result)
    assert taken == [0, 10, 20, 30, 40, 50, 60] and Pool.submitted == 7


def test_batches_do_not_change_the_files(tmp_path, monkeypatch):
    """A shard is perturbed BATCH sentences at a time; the files are the same bytes whatever BATCH."""
    import workflow_scripts.csc.perturb as perturb
    _write_corpus(tmp_path / "corpus", [[f"the {w} sat on mat number {i} today" for i in range(9) for w in ("cat", "dog")],
                                        ["hello there", "It is here."]])
    settings = {**HAND_SETTINGS, "fuzz_terms": {"en": ["a", "the"]}}
    files = {}
    for batch in (10_000, 4, 1):
        monkeypatch.setattr(perturb, "BATCH", batch)
        _run(tmp_path, settings, f"b{batch}", expected_nltk={"mode": "rules"})
        files[batch] = {p.relative_to(tmp_path / f"b{batch}"): p.read_bytes()
                        for p in sorted((tmp_path / f"b{batch}").rglob("*.parquet"))}
    assert len(files[1]) == 2 + 2 and not any(p.name.startswith(".") for p in files[1])  # no pieces left
    assert files[10_000] == files[4] == files[1]
