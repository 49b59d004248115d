"""Tests for workflow_scripts.triplets.datasets and .sources (the five triplet datasets of Zhu, Li &
de Melo, seed 002, and user datasets).

On the shared data (../shared/data: SICK.txt, MSRP, the NLTK WSJ sample): all five datasets are
built once (module fixture) and checked for the table's invariants, the report's arithmetic, the
sizes, the Fixed Point Reorder partner rule's 481 pairs, and hand-checked triplets of named SICK,
MSRP and WSJ sentences (expected outputs written as the edits verified by hand, so that no corpus
text is copied here). On the default inputs under resources/triplets/ each dataset gives >= 15
triplets. The rule's job runs once in a subprocess with another PYTHONHASHSEED and must write what
the in-process build gives. Tests needing ../shared skip when it is absent; all need the NLTK tagger and
WordNet (NLTK_DATA) and lemminflect.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import polars as pl
import pytest

pytest.importorskip("lemminflect")
nltk = pytest.importorskip("nltk")
try:
    nltk.pos_tag(["test"])
    from nltk.corpus import wordnet
    wordnet.synsets("dog")
except LookupError:
    pytest.skip("NLTK tagger/WordNet data not found (set NLTK_DATA or provide ../shared/data/nltk_data)",
                allow_module_level=True)

from conftest import ROOT, shared_data  # noqa: E402
from workflow_scripts.common import stable_id  # noqa: E402
from workflow_scripts.jobs import make_job  # noqa: E402
from workflow_scripts.triplets import datasets as D  # noqa: E402
from workflow_scripts.triplets import sources as S  # noqa: E402

SPECS = {"negation_detection": {"sources": ["sick", "wsj", "msrp"]},
         "negation_variants": {"sources": ["sick"]},
         "clause_relatedness": {"sources": ["wsj", "msrp"]},
         "argument_sensitivity": {},
         "fixed_point_reorder": {"sources": ["sick"]}}
# Sizes on the shared data with the default settings and seed 0: the paper's size where the sources
# give enough triplets, all 481 partner pairs for Fixed Point Reorder.
SIZES = {"negation_detection": 674, "negation_variants": 516, "clause_relatedness": 567,
         "argument_sensitivity": 445, "fixed_point_reorder": 481}


@pytest.fixture(scope="module")
def shared_sources():
    msrp = shared_data("msrp")
    shared_data("nltk_data", "corpora", "treebank.zip")
    return {"sick": {"format": "sick", "file": str(shared_data("sick", "SICK.txt"))},
            "wsj": {"format": "treebank", "file": None},
            "msrp": {"format": "msrp", "file": [str(msrp / "msr_paraphrase_train.txt"),
                                                str(msrp / "msr_paraphrase_test.txt")]}}


@pytest.fixture(scope="module")
def built(shared_sources):
    from workflow_scripts.common import setup_logging
    log = setup_logging(None, "test_triplets")
    return {name: D.build_dataset(name, spec, shared_sources, {}, 0, log) for name, spec in SPECS.items()}


@pytest.fixture(scope="module")
def sentence(shared_sources):
    """(text, tags) of a sentence of a shared source by its id."""
    index = {}

    def get(source, sid):
        if source not in index:
            index[source] = {i: (t, tags) for i, t, tags in S.read_sentences(shared_sources[source])}
        return index[source][sid]
    return get


def check_frame(name, frame, report, max_triplets):
    assert frame.columns == list(D.COLUMNS)
    assert dict(frame.schema) == D.SCHEMA
    assert 0 < frame.height <= max_triplets
    assert frame["id"].n_unique() == frame.height
    assert frame.select(["s", "s_plus", "s_star"]).unique().height == frame.height
    for row in frame.iter_rows(named=True):
        assert all(row[c] and row[c].strip() == row[c] for c in ("s", "s_plus", "s_star", "source", "rule")), row
        assert len({row["s"], row["s_plus"], row["s_star"]}) == 3, row
        assert row["id"] == stable_id(name, row["s"], row["s_plus"], row["s_star"])
    assert report["size"] == frame.height and report["dataset"] == name
    for source, st in report["sources"].items():
        assert st["tried"] == st["kept"] + sum(st["rejected"].values()), (source, st)
        assert st["tried"] <= st["eligible"]
        assert all(":" in reason for reason in st["rejected"]), st["rejected"]
        assert "s:transform_error" not in st["rejected"]
    assert sum(st["kept"] for st in report["sources"].values()) == frame.height
    assert report["tried"] == sum(st["tried"] for st in report["sources"].values())
    assert Counter(report["rejected"]) == sum((Counter(st["rejected"]) for st in report["sources"].values()), Counter())
    assert report["examples"] == frame.head(5).drop("id").to_dicts()
    json.dumps(report)  # serialisable as written


@pytest.mark.parametrize("name", list(SPECS))
def test_shared_build_invariants(built, name):
    frame, report = built[name]
    check_frame(name, frame, report, D.PAPER_SIZES[name])
    assert frame.height == SIZES[name]
    assert report["kind"] == name and report["target_size"] == D.PAPER_SIZES[name]
    assert report["scoring"] == ("negation_variants" if name == "negation_variants" else "strict")
    prefixes = set(frame["source"].str.split(":").list.first())
    assert prefixes == (set(SPECS[name]["sources"]) if SPECS[name] else {"template"})


def test_shared_report_details(built):
    nd = built["negation_detection"][1]["sources"]
    assert nd["sick"]["records"] == 9840 and nd["sick"]["sentences"] == 6076  # unique sentence_A/B
    assert nd["wsj"]["records"] == 3914 and nd["msrp"]["records"] == 4076 + 1725
    assert nd["sick"]["rejected"]["s_plus:no_synonym"] > 0
    nv = built["negation_variants"][1]["sources"]["sick"]
    assert nv["eligible"] + nv["ineligible"]["no_indefinite_article"] == 6076
    cr = built["clause_relatedness"][1]
    assert cr["settings"] == {"clause_max_tokens": 30} and cr["sources"]["wsj"]["ineligible"]["too_long"] > 0
    frame = built["clause_relatedness"][0]
    assert all(len(s.split()) < 30 for s in frame["s"])
    fp = built["fixed_point_reorder"][1]
    assert fp["sources"]["sick"]["eligible"] == 481 and fp["settings"]["fixed_point_pivot"] == 3
    assert set(built["fixed_point_reorder"][0]["rule"]) == {"entailment_partner;pivot_3"}
    rules = built["argument_sensitivity"][0]["rule"]
    assert rules.str.starts_with("passive_simple").all() and rules.str.ends_with("reorder_simple").all()


def test_partner_rule_keeps_481_pairs(shared_sources):
    pairs = list(S.sick_pairs(shared_sources["sick"]))
    assert len(pairs) == 9840
    rule = D.merge_settings({})["sick_partners"]
    reasons = Counter(D.partner_reason(p, rule) for p in pairs)
    assert reasons[None] == 481
    # the reference's quirks: "another" reads as negated, a trailing space is an extra word
    words = dict(rule, match="words")
    assert sum(D.partner_reason(p, words) is None for p in pairs) == 491
    # stricter thresholds keep fewer pairs; the distance-1 pairs alone
    assert sum(D.partner_reason(p, dict(rule, min_relatedness=4.8)) is None for p in pairs) < 481
    assert 0 < sum(D.partner_reason(p, dict(rule, min_similarity=1.0)) is None for p in pairs) < 481


# (kind, source, id, expected (S+, S*) as edits of S verified by hand, rule)
HAND_CHECKED = [
    ("negation_detection", "wsj", "wsj_0049.mrg#45", "The guild began a strike",
     lambda s: (s.replace(" began ", " started "), s.replace(" began ", " didn't begin ")), "begin>start;do_support"),
    ("negation_detection", "sick", "1478:B", "The deer is not jumping",
     lambda s: (s.replace("jumping", "leaping"), s.replace(" not ", " ")), "jump>leap;removed"),
    ("negation_detection", "msrp", "716598", "The Royals chose Chris Lubanski,",
     lambda s: (s.replace(" chose ", " selected "), s.replace(" chose ", " didn't choose ")), "choose>select;do_support"),
    ("negation_variants", "sick", "4690:A", "A man is holding a small animal",
     lambda s: (s.replace(" is ", " isn't "), "There is no man holding" + s.split("holding", 1)[1]),
     "contraction;there_is_no"),
    ("clause_relatedness", "wsj", "wsj_0048.mrg#40", "The Huntsville , Ala. ,",
     lambda s: ("It expects" + s.split("it expects", 1)[1], s.replace("it expects", "it doesn't expect")),
     "bare;clause_do_support"),
    ("clause_relatedness", "msrp", "801530", '"They feel so happy',
     lambda s: (s[1:s.index(',"')] + ".", s.replace('"They feel', '"They don\'t feel')), "quote_first;clause_do_support"),
    ("clause_relatedness", "wsj", "wsj_0184.mrg#15", "Earlier staff-reduction moves have trimmed",
     lambda s: (s.split(" , the spokesman said")[0] + " .", s.replace(" have trimmed ", " haven't trimmed ")),
     "report_last;clause_contraction"),
]


@pytest.mark.parametrize("kind,source,sid,start,edit,rule", HAND_CHECKED, ids=[c[2] for c in HAND_CHECKED])
def test_hand_checked_triplets(sentence, kind, source, sid, start, edit, rule):
    text, tags = sentence(source, sid)
    assert text.startswith(start)
    out = D.MAKERS[kind](D.Candidate(source, sid, text, tags), D.merge_settings({}), 0)
    assert out == (text, *edit(text), rule)


def test_hand_checked_fixed_point_and_templates(shared_sources):
    pair = next(p for p in S.sick_pairs(shared_sources["sick"]) if p.pair_id == "4201")
    assert D.partner_reason(pair, D.merge_settings({})["sick_partners"]) is None
    words = pair.sentence_a.split()
    assert len(words) == 6 and pair.sentence_b.split() == words[:4] + words[5:]  # one word less
    out = D.MAKERS["fixed_point_reorder"](D.Candidate("sick", "4201", pair.sentence_a, None, pair.sentence_b),
                                          D.merge_settings({}), 0)
    assert out == (pair.sentence_a, pair.sentence_b,
                   " ".join(words[3:] + [words[0].lower()] + words[1:3]).capitalize(), "entailment_partner;pivot_3")
    settings = D.merge_settings({})
    known = [("Harley", "NNP"), ("asks", "VBZ"), ("Abigail", "NNP"), ("to", "TO")]
    cand = D.Candidate("template", "t", "Harley asks Abigail to bake some muffins.", known)
    assert D.MAKERS["argument_sensitivity"](cand, settings, 0) == (
        cand.text, "Abigail is asked by Harley to bake some muffins.", "Abigail asks Harley to bake some muffins.",
        "passive_simple;reorder_simple")
    agentless = D.merge_settings({"passive_agent": False})
    assert D.MAKERS["argument_sensitivity"](cand, agentless, 0)[1] == "Abigail is asked to bake some muffins."
    # the tagger alone reads "Lilly admired Noah." as Lilly/RB admired/VBN; the template's tags fix it
    known = [("Lilly", "NNP"), ("admired", "VBD"), ("Noah", "NNP")]
    out = D.MAKERS["argument_sensitivity"](D.Candidate("template", "t", "Lilly admired Noah.", known), settings, 0)
    assert out[1:3] == ("Noah was admired by Lilly.", "Noah admired Lilly.")


def test_negate_embedded_clause_in_place():
    from workflow_scripts.triplets.parsing import Result, parse
    from workflow_scripts.triplets.structural import embedded_clause
    cases = [('"We made our own decision," he said.', "We made our own decision.",
              '"We didn\'t make our own decision," he said.'),  # the paper's example b)
             ("Copperweld said it expected a protracted strike.", "It expected a protracted strike.",
              "Copperweld said it didn't expect a protracted strike."),
             ("The river is rising, the police said.", "The river is rising.",
              "The river isn't rising, the police said.")]
    for s, clause, negated in cases:
        p = parse(s)
        assert embedded_clause(p).sentence == clause
        assert D.negate_embedded(p, clause) == Result(negated, rule=D.negate_embedded(p, clause).rule)
    p = parse("He said it rained and it rained.")
    assert D.clause_span(p, "It rained.") == (5, 8)  # with its full stop: the last one
    assert D.clause_span(p, "It rained") == "ambiguous_clause"
    assert D.clause_span(p, "Nothing like it.") == "clause_not_found"


def test_rebuild_is_identical_and_seed_changes_selection(shared_sources, built, log):
    for name in ("negation_variants", "fixed_point_reorder"):
        frame, report = D.build_dataset(name, SPECS[name], shared_sources, {}, 0, log)
        assert frame.equals(built[name][0])
        assert {k: v for k, v in report.items() if k != "seconds"} == \
            {k: v for k, v in built[name][1].items() if k != "seconds"}
    other, _ = D.build_dataset("negation_variants", SPECS["negation_variants"], shared_sources, {}, 1, log)
    assert other.height == 516 and not other.equals(built["negation_variants"][0])
    seeded, report = D.build_dataset("fixed_point_reorder", {"sources": ["sick"], "max_triplets": 50},
                                     shared_sources, {"fixed_point_pivot": "seeded"}, 0, log)
    assert report["settings"]["fixed_point_pivot"] == "seeded" and seeded.height == 50
    assert len(set(seeded["rule"])) > 2  # the pivot varies with the sentence


def write_user_files(tmp_path):
    rows = [("1", 'He said "yes".', "He agreed.", "He refused."),
            ("2", "One.", "", "Three."),  # missing S+
            ("3", 'He said "yes".', "He agreed.", "He refused."),  # repeated triplet
            ("4", "A cat sleeps.", "A cat is asleep.", "A cat runs.")]
    tsv = tmp_path / "user.tsv"
    tsv.write_text("key\tfirst\tsecond\tthird\n" + "".join("\t".join(r) + "\n" for r in rows) + "5\tonly two\n",
                   encoding="utf-8")
    csv_path = tmp_path / "user.csv"
    csv_path.write_text('s,s_plus,s_star\n"A, b.",B.,C.\n,B.,C.\nx.,y.,z.\n', encoding="utf-8")
    pq = tmp_path / "user.parquet"
    pl.DataFrame({"s": ["a.", "b.", None], "s_plus": ["c.", "d.", "e."], "s_star": ["f.", " ", "g."]}).write_parquet(pq)
    return tsv, csv_path, pq


def test_user_datasets(tmp_path, log):
    tsv, csv_path, pq = write_user_files(tmp_path)
    columns = {"s": "first", "s_plus": "second", "s_star": "third", "id": "key"}
    frame, report = D.build_dataset("mine", {"file": str(tsv), "columns": columns}, {}, {}, 0, log)
    check_frame("mine", frame, report, 10)
    assert frame["s"].to_list() == ['He said "yes".', "A cat sleeps."]
    assert frame["source"].to_list() == ["user.tsv:1", "user.tsv:4"]
    assert report["sources"]["file"]["rejected"] == {"s:duplicate": 1, "s_plus:missing_text": 2}
    assert report["scoring"] == "strict" and report["kind"] == "user"
    frame, report = D.build_dataset("mine_csv", {"file": str(csv_path), "scoring": "negation_variants"}, {}, {}, 0, log)
    assert frame["s"].to_list() == ["A, b.", "x."] and report["scoring"] == "negation_variants"
    assert report["sources"]["file"]["rejected"] == {"s:missing_text": 1}
    frame, report = D.build_dataset("mine_pq", {"file": str(pq)}, {}, {}, 0, log)
    assert frame["s"].to_list() == ["a."] and frame["source"].to_list() == ["user.parquet:1"]
    assert report["sources"]["file"]["rejected"] == {"s:missing_text": 1, "s_star:missing_text": 1}
    first, _ = D.build_dataset("mine", {"file": str(tsv), "columns": columns, "max_triplets": 1}, {}, {}, 0, log)
    assert first.height == 1 and first["id"][0] == stable_id("mine", 'He said "yes".', "He agreed.", "He refused.")
    with pytest.raises(ValueError, match="no column"):
        D.build_dataset("bad", {"file": str(tsv)}, {}, {}, 0, log)
    with pytest.raises(ValueError, match="scoring"):
        D.build_dataset("bad", {"file": str(csv_path), "scoring": "loose"}, {}, {}, 0, log)


def test_default_resources_give_each_dataset(log):
    sizes = {}
    for name, spec in D.DEFAULT_DATASETS.items():
        frame, report = D.build_dataset(name, spec, D.DEFAULT_SOURCES, {}, 0, log)
        check_frame(name, frame, report, D.PAPER_SIZES[name])
        sizes[name] = frame.height
    assert all(n >= 15 for n in sizes.values()), sizes
    pairs = list(S.sick_pairs(D.DEFAULT_SOURCES["sick_sample"]))
    rule = D.DEFAULT_SETTINGS["sick_partners"]
    assert sum(D.partner_reason(p, rule) is None for p in pairs) == 23  # "another" is "negated"
    assert sum(D.partner_reason(p, dict(rule, match="words")) is None for p in pairs) == 24


# the job in a child process, under another hash seed: the triplets must not depend on it
RUN_BUILD_JOB = """import json, sys
from workflow_scripts.jobs import make_job
from workflow_scripts.triplets.datasets import run_triplets_build
run_triplets_build(make_job(**json.loads(sys.argv[1])))"""


def test_build_job_writes_what_build_gives(tmp_path, log):
    spec = {"kind": "clause_relatedness", "sources": ["reported_speech"], "max_triplets": 20}
    out, report_path = tmp_path / "t.parquet", tmp_path / "r.json"
    texts = [tmp_path / "texts" / f"part-{i:03d}.parquet" for i in range(2)]
    job = {"output": {"triplets": str(out), "texts": [str(t) for t in texts], "report": str(report_path)},
           "params": {"spec": spec, "sources": D.DEFAULT_SOURCES, "settings": {}, "seed": 7,
                      "nltk_dir": str(tmp_path / "no_nltk_data_here")},
           "wildcards": {"dataset": "cr"}}
    env = dict(os.environ, PYTHONHASHSEED="12345")
    done = subprocess.run([sys.executable, "-c", RUN_BUILD_JOB, json.dumps(job)],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    frame, report = D.build_dataset("cr", spec, D.DEFAULT_SOURCES, {}, 7, log)
    assert pl.read_parquet(out).equals(frame) and frame.height == 20
    written = json.loads(report_path.read_text())
    assert written["sources"] == json.loads(json.dumps(report["sources"]))
    assert written["texts"]["partitions"] == 2
    stored = pl.concat([pl.read_parquet(t) for t in texts])
    assert sorted(stored["text"]) == sorted(set(frame["s"]) | set(frame["s_plus"]) | set(frame["s_star"]))
    assert "cr: tried" in done.stderr


def test_build_job_puts_the_workflow_nltk_folder_first(tmp_path, monkeypatch):
    """The rule's NLTK download folder goes before the user's NLTK_DATA (as the shell prefix did)."""
    def stop(*args):  # the environment is set before the build starts: no build needed
        raise RuntimeError("stop")

    monkeypatch.setenv("NLTK_DATA", "/user/nltk")
    monkeypatch.setattr(D, "build_dataset", stop)
    job = make_job(params={"nltk_dir": "results/nltk_data", "spec": {}, "sources": {}, "settings": {}, "seed": 0},
                   wildcards={"dataset": "cr"})
    with pytest.raises(RuntimeError, match="stop"):
        D.run_triplets_build(job)
    assert os.environ["NLTK_DATA"] == f"results/nltk_data{os.pathsep}/user/nltk"
    monkeypatch.delenv("NLTK_DATA")
    with pytest.raises(RuntimeError, match="stop"):
        D.run_triplets_build(job)
    assert os.environ["NLTK_DATA"] == "results/nltk_data"


def test_sources_count_bad_lines(tmp_path):
    sick = tmp_path / "s.tsv"
    sick.write_bytes(b"pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\r\n"
                     b"1\tA dog runs.\tA dog is running.\tENTAILMENT\t4.9\r\n"
                     b"2\tshort line\r\n"
                     b"3\tA dog runs.\tA cat  sleeps. \tNEUTRAL\tmany\r\n"
                     b"4\t\xff\xfe bad\tx\tNEUTRAL\t1.0\r\n")
    stats = S.new_stats()
    got = list(S.read_sentences({"format": "sick", "file": str(sick)}, stats))
    assert got == [("1:A", "A dog runs.", None), ("1:B", "A dog is running.", None), ("3:B", "A cat sleeps.", None)]
    assert stats["skipped"] == {"short_line": 1, "duplicate_sentence": 1, "bad_encoding": 1}
    pair_stats = S.new_stats()
    pairs = list(S.sick_pairs({"format": "sick", "file": str(sick)}, pair_stats))
    assert [p.pair_id for p in pairs] == ["1"] and pair_stats["skipped"]["bad_score"] == 1
    assert pairs[0].raw_b == "A dog is running." and pairs[0].label == "ENTAILMENT"
    msrp = tmp_path / "m.txt"
    msrp.write_bytes("\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n"
                     '1\t10\t11\tHe said "no.\tHe said no.\r\n0\t10\t12\tHe said "no.\tShe left.\r\n'
                     "1\t13\r\n".encode("utf-8"))
    stats = S.new_stats()
    got = list(S.read_sentences({"format": "msrp", "file": str(msrp)}, stats))
    assert got == [("10", 'He said "no.', None), ("11", "He said no.", None), ("12", "She left.", None)]
    assert stats["skipped"] == {"duplicate_sentence": 1, "short_line": 1}
    lines = tmp_path / "l.txt"
    lines.write_text("# comment\n\nFirst one.\n  Second   one. \nFirst one.\n", encoding="utf-8")
    stats = S.new_stats()
    got = list(S.read_sentences({"format": "lines", "file": str(lines)}, stats))
    assert got == [("l.txt:3", "First one.", None), ("l.txt:4", "Second one.", None)]
    with pytest.raises(FileNotFoundError):
        list(S.read_sentences({"format": "lines", "file": str(tmp_path / "missing.txt")}))
    with pytest.raises(ValueError, match="unknown source format"):
        list(S.read_sentences({"format": "xml", "file": str(lines)}))


def test_treebank_source_drops_traces(shared_sources):
    stats = S.new_stats()
    items = list(S.read_sentences(shared_sources["wsj"], stats))
    assert stats["records"] == 3914 and len(items) == 3903  # 11 repeated sentences
    for sid, text, tags in items:
        words = text.split()
        assert len(words) == len(tags) and "-NONE-" not in tags
        assert not {"-LRB-", "-RRB-", "*U*", "*T*-1", "*-1"} & set(words), (sid, text)
    by_id = {sid: (text, tags) for sid, text, tags in items}
    text, tags = by_id["wsj_0001.mrg#0"]
    assert text.startswith("Pierre Vinken , 61 years old") and tags[:2] == ["NNP", "NNP"]
    assert any("(" in t.split() for t, _ in by_id.values())
    reader = S._treebank_reader(str(shared_data("nltk_data", "corpora", "treebank.zip")))  # a zip as `file`
    assert len(reader.fileids()) == 199
    first = [w for w, t in reader.tagged_sents("wsj_0001.mrg")[0] if t != "-NONE-"]
    assert " ".join(first) == text


def test_settings_are_validated():
    assert D.merge_settings({"sick_partners": {"min_relatedness": 4.0}})["sick_partners"] == \
        {"min_relatedness": 4.0, "max_word_distance": 1, "min_similarity": 0.85, "match": "reference"}
    for bad in ({"fixed_point_pivot": 0}, {"fixed_point_pivot": "random"}, {"pivot": 3},
                {"sick_partners": {"relatedness": 4}}, {"templates": {"tenses": ["future"]}},
                {"passive_agent": "yes"}):
        with pytest.raises(ValueError):
            D.merge_settings(bad)
    with pytest.raises(ValueError, match="unknown kind"):
        D.build_dataset("x", {"kind": "nope"}, {}, {}, 0, None)
    with pytest.raises(ValueError, match="cannot use"):
        D.build_dataset("fixed_point_reorder", {"sources": ["reported_speech"]}, D.DEFAULT_SOURCES, {}, 0, None)


def test_argument_sensitivity_records_subject_and_verb_of_each_template(log):
    # triplets built from one template share its subject and verb: scores.py resamples those clusters
    templates = {"names": ["Lilly", "Imogen", "Noah"], "transitive_verbs": ["like", "admire"],
                 "control_verbs": ["ask"], "verb_phrases": ["play the guitar"], "tenses": ["present", "past"]}
    frame, _ = D.build_dataset("argument_sensitivity", {"max_triplets": 30}, {}, {"templates": templates}, 0, log)
    assert frame.height > 10 and frame["subject"].null_count() == 0 and frame["verb"].null_count() == 0
    assert (frame["subject"] == frame["s"].str.split(" ").list.first()).all()
    # present and past forms of one verb are one cluster
    assert set(frame["verb"]) == {"like", "admire", "ask"}


def test_sick_triplets_are_clustered_by_the_pair_graph(built):
    """Issue 43, point 4: on the full SICK release a pair's two near-identical sentences both become
    originals, and sentences chain through pairs: Negation Variants' 516 triplets lie in 273
    connected components of the pair graph, Fixed Point Reorder's 481 in 286 (its S+ is its S's
    partner, so also another triplet's S). Every triplet from SICK carries its component; the WSJ
    and MSRP-free ones none."""
    frame, _ = built["negation_variants"]
    assert frame.height == 516 and frame["cluster"].null_count() == 0 and frame["cluster"].n_unique() == 273
    frame, _ = built["fixed_point_reorder"]
    assert frame.height == 481 and frame["cluster"].n_unique() == 286
    assert built["argument_sensitivity"][0]["cluster"].null_count() == 445  # templates: subjects x verbs instead
