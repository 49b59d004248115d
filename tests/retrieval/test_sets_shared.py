"""The retrieval sets built from the shared data (../shared/data, read in place; skipped when absent):
the 3GPP Release 18 sections (NR specifications 38.211-38.331) with template and TeleQnA questions,
MSRP paraphrase retrieval and Tatoeba EN->NL bitext retrieval.

Sizes are pinned (a change in the ingestion shows up here and in workflow_scripts/retrieval/README.md's figures), invariants
are checked on every row, and a few TeleQnA links are checked by hand (the question's key, and how
the linked sentence begins: enough to tell a right link from a wrong one, without copying the
specification's text here). Needs NLTK's punkt_tab and pyzipper. Runs in about 20 s (the 3GPP set
is built once, about 11 s).
"""
from __future__ import annotations

import json
import re

import polars as pl
import pytest

from conftest import shared_data
from workflow_scripts import beir
from workflow_scripts.retrieval import questions as Q, sets, spec3gpp as S

pytest.importorskip("pyzipper")
try:
    S._punkt(tuple(S.DEFAULT_ABBREVIATIONS))
except LookupError:
    pytest.skip("NLTK punkt_tab not found (set NLTK_DATA)", allow_module_level=True)


@pytest.fixture(scope="module")
def spec3gpp_set(tmp_path_factory):
    from workflow_scripts.common import setup_logging
    base = tmp_path_factory.mktemp("spec3gpp")
    spec = {"kind": "3gpp", "sources": {"path": str(shared_data("3gpp_specs_rel18_md", "3gpp_rel18_sections.jsonl.gz"))},
            "questions": ["templates", "teleqna"], "teleqna": {"path": str(shared_data("teleqna", "TeleQnA.zip"))}}
    report = sets.build_set("spec3gpp", spec, {}, 0, str(base / "set"), [str(base / "t0.parquet"), str(base / "t1.parquet")],
                            str(base / "report.json"), setup_logging(None, "test"))
    return base / "set", report


def test_3gpp_sizes_and_steps(spec3gpp_set):
    out, report = spec3gpp_set
    steps = report["steps"]["sentences"]
    assert (steps["records"], steps["records_used"], steps["records_skipped"]) == (1321, 1288, {"unnumbered_section": 33})
    assert steps["blocks"] == {"asn1": 759, "caption": 246, "heading": 2023, "paragraph": 15573, "reference": 343,
                               "table": 1019}
    assert steps["sentences_split"] == 19179
    assert steps["sentences_dropped"] == {"formula": 2919, "no_end_punctuation": 5167, "too_long": 67, "too_short": 2837}
    assert steps["sentences_kept"] == 8189 and steps["duplicates_collapsed"] == 486
    assert report["sizes"] == {"documents": 7703, "queries": 1128, "qrels": {"test": 226, "train": 902},
                               "queries_per_split": {"test": 226, "train": 902}}
    q = report["steps"]["questions"]
    assert q["templates"]["checks"]["dropped"] == {"ambiguous": 231, "copies_sentence": 1}
    assert q["teleqna"]["outcomes"] == {"linked": 81, "low_coverage": 351, "no_candidate": 2873, "other_category": 6500,
                                        "tie": 13, "too_few_words": 182}
    assert (q["templates"]["checks"]["kept"], q["teleqna"]["checks"]["kept"]) == (1048, 80)


def test_3gpp_rows_are_clean(spec3gpp_set):
    out, _ = spec3gpp_set
    sentences = pl.read_parquet(out / "sentences" / "part-00000.parquet")
    assert sentences["id"].n_unique() == sentences["text"].n_unique() == sentences.height
    assert sentences["id"].to_list() == [S.sentence_id(t) for t in sentences["text"].to_list()]
    n = sentences["text"].str.split(" ").list.len()
    assert n.min() >= 5 and n.max() <= 100
    assert sentences["text"].str.contains(r"[.?!]$").all()
    for markup in (r"\$", r"\\[A-Za-z]", r"\]\(", r"::=", r"^\|", r"\+--", "\u2063", r"\*\*", r"^#", "ASN1START"):
        assert not sentences["text"].str.contains(markup).any(), markup
    corpus, queries, qrels = beir.read_set(out)
    assert corpus["_id"].to_list() == sentences["id"].to_list()
    questions = pl.read_parquet(out / "questions.parquet")
    assert questions["_id"].n_unique() == questions.height == queries.height
    assert questions["text"].str.to_lowercase().n_unique() == questions.height  # one answer per question
    assert set(questions["answer_id"].to_list()) <= set(corpus["_id"].to_list())
    assert (questions.group_by("answer_id").agg(pl.col("split").n_unique())["split"] == 1).all()
    share = questions.filter(pl.col("split") == "train").height / questions.height
    assert abs(share - 0.8) < 0.01
    templated = questions.filter(pl.col("method") == "templates")
    assert (templated["copy_fraction"] < 0.6).all()
    assert templated["text"].str.contains(r"^What (is|are|does) .+\?$").all()


# TeleQnA questions linked by the lexical rule, checked by hand: key -> how the linked sentence begins
HAND_CHECKED_LINKS = {
    "question 4378": "The UuMessageTransferSidelink message is used for the sidelink transfer",
    "question 796": "Switching SCell (sSCell):",
    "question 8476": "The UECapabilityEnquirySidelink message is used to request",
}


def test_teleqna_links(spec3gpp_set):
    out, _ = spec3gpp_set
    questions = pl.read_parquet(out / "questions.parquet").filter(pl.col("method") == "teleqna")
    corpus, _, _ = beir.read_set(out)
    text_of = dict(zip(corpus["_id"].to_list(), corpus["text"].to_list()))
    by_key = {json.loads(d)["key"]: a for d, a in zip(questions["detail"].to_list(), questions["answer_id"].to_list())}
    for key, start in HAND_CHECKED_LINKS.items():
        assert text_of[by_key[key]].startswith(start), key
    details = [json.loads(d) for d in questions["detail"].to_list()]
    assert all(d["coverage"] >= 0.8 and d["coverage"] - d["runner_up"] >= 0.2 for d in details)
    assert not questions["text"].str.contains(r"\[3GPP Release").any()  # the release tag is stripped
    assert {d["category"] for d in details} <= {"Standards specifications", "Standards overview", "Lexicon"}


def test_teleqna_wrong_answers(spec3gpp_set):
    """Each linked TeleQnA question keeps its wrong options: 1-4 of them (an item has 2-5 options), never
    its answer option's text or the text the answer quotes; template questions have none."""
    out, _ = spec3gpp_set
    questions = pl.read_parquet(out / "questions.parquet")
    items = {item["key"]: item for item in Q.read_teleqna(shared_data("teleqna", "TeleQnA.zip"), Q.TELEQNA_DEFAULTS)}
    teleqna = questions.filter(pl.col("method") == "teleqna")
    for detail, wrong in zip(teleqna["detail"].to_list(), teleqna["wrong_answers"].to_list()):
        item = items[json.loads(detail)["key"]]
        named = int(re.match(r"option (\d+):", item["answer"]).group(1))
        right = {" ".join(t.split()).lower() for k, t in item["options"] if k == named}
        right.add(" ".join(Q._answer_text(item["answer"]).split()).lower())
        assert 1 <= len(wrong) <= 4 and not {w.lower() for w in wrong} & right, item["key"]
        assert len(set(wrong)) == len(wrong)
    assert sorted(teleqna["wrong_answers"].list.len().value_counts().rows()) == [(3, 27), (4, 53)]  # 80 questions
    assert (questions.filter(pl.col("method") == "templates")["wrong_answers"].list.len() == 0).all()


def test_templates_on_real_sentences():
    """Hand-checked template questions (the sentence patterns are quoted in questions.py's table)."""
    cases = {"The IE PLMN-Identity identifies a Public Land Mobile Network.": "What does the IE PLMN-Identity identify?",
             "The IE TAG-Config is used to configure parameters for a time-alignment group.":
                 "What is the IE TAG-Config used for?",
             "The UE determines that the DCI format provides HARQ-ACK information.": "What does the UE determine?"}
    for sentence, question in cases.items():
        assert Q.template_question(sentence, "x", 8)[0] == question


def test_msrp_and_tatoeba_sets(tmp_path, log):
    msrp = sets.build_set("msrp", {"kind": "msrp", "path": str(shared_data("msrp"))}, {}, 0, str(tmp_path / "msrp"),
                          [str(tmp_path / "m.parquet")], None, log)
    # 5,801 pairs (4,076 + 1,725), 3,900 paraphrases; 189 of their #1 strings are themselves a #2 string
    assert msrp["steps"]["pairs"] == {"pairs_read": 5801, "not_paraphrase": 1901, "query_in_corpus": 189, "queries": 3711}
    assert msrp["sizes"]["documents"] == 5474 and msrp["sizes"]["qrels"] == {"test": 3711}
    tatoeba = sets.build_set("tatoeba", {"kind": "tatoeba", "path": str(shared_data("en_nl_parallel", "tatoeba_laser_en_nl.tsv"))},
                             {}, 0, str(tmp_path / "tatoeba"), [str(tmp_path / "t.parquet")], None, log)
    assert tatoeba["sizes"] == {"documents": 812, "queries": 812, "qrels": {"test": 812}, "queries_per_split": {"test": 812}}
    corpus, queries, qrels = beir.read_set(tmp_path / "tatoeba")
    assert re.fullmatch(r"q[0-9a-f]{16}", queries["_id"][0])
