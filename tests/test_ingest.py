import gzip
import hashlib
import json

import polars as pl
import pytest

from conftest import shared_data
from workflow_scripts.common import stable_id
from workflow_scripts.downloads import download
from workflow_scripts.ingest import ingest


def read_all(out_dir):
    return pl.read_parquet(out_dir / "part-*.parquet")


def test_bitext_gz_counts_bad_lines_and_shards(tmp_path, log):
    lines = [
        b"The cat sleeps.\tDe kat slaapt.\n",
        b"Broken \xff\xfe bytes\tkapot\n",          # undecodable
        b"No Dutch side here\n",                    # missing field
        b"   \tLeeg Engels\n",                       # empty English side
        b"  Extra   spaces  here .\tExtra spaties .\r\n",
        b"Third good line\tDerde goede regel\n",
        b"Stray\ttab in\tDutch\n",                  # extra field: which tab is the separator?
    ]
    src = tmp_path / "en-nl.txt.gz"
    with gzip.open(src, "wb") as f:
        f.writelines(lines)
    spec = {"format": "bitext", "languages": ["en", "nl"]}
    out = tmp_path / "out"
    report = ingest(spec, "pc", str(src), str(out), shard_rows=4, log=log, report_path=str(tmp_path / "r.json"))
    assert report["records"] == 3
    assert report["skipped"] == {"undecodable": 1, "missing_field": 1, "empty": 1, "extra_field": 1}
    assert [e["line"] for e in report["skipped_examples"]["undecodable"]] == [2]
    assert report["skipped_examples"]["extra_field"] == [{"line": 7, "detail": "3 fields, expected at most 2"}]
    assert [s["rows"] for s in report["shards"]] == [4, 2]  # 6 rows, 4 per shard
    frame = read_all(out)
    assert frame.height == 6
    assert "Extra spaces here ." in frame["text"].to_list()  # whitespace normalised
    row = frame.filter(pl.col("text") == "The cat sleeps.").row(0, named=True)
    assert row["sentence_id"] == stable_id("pc", "en", "The cat sleeps.")
    assert row["n_tokens"] == 3 and row["language"] == "en"
    assert json.loads((tmp_path / "r.json").read_text()) == json.loads((out / "report.json").read_text())


def test_ids_are_pinned_and_depend_on_corpus_and_text():
    # fixed value from an independent tool: `printf 'pc\x1fen\x1fThe cat sleeps.' | b2sum -l 64` gives
    # bccfb6826ec8ab2b, read little-endian. A change of the id scheme would silently break reruns and joins.
    assert stable_id("pc", "en", "The cat sleeps.") == 0x2BABC86E82B6CFBC == 3146829141613399996
    assert stable_id("pc", "en", "x") != stable_id("other", "en", "x")


def test_tmx_reader(tmp_path, log):
    """(Broken XML is an error: tests/test_ingest_inputs.py.)"""
    tmx = """<?xml version="1.0" encoding="UTF-8"?>
<tmx version="1.4"><header srclang="en"/><body>
<tu><tuv xml:lang="en"><seg>Hello world.</seg></tuv><tuv xml:lang="nl"><seg>Hallo wereld.</seg></tuv></tu>
<tu><tuv xml:lang="en-GB"><seg>Only English.</seg></tuv></tu>
<tu><tuv xml:lang="en"><seg>Second <b>bold</b> pair.</seg></tuv><tuv xml:lang="nl"><seg>Tweede paar.</seg></tuv></tu>
</body></tmx>"""
    src = tmp_path / "en-nl.tmx.gz"
    with gzip.open(src, "wt", encoding="utf-8") as f:
        f.write(tmx)
    report = ingest({"format": "tmx", "languages": ["en", "nl"]}, "tm", str(src), str(tmp_path / "o"), 100, log)
    assert report["records"] == 2
    assert report["skipped"] == {"missing_field": 1}
    assert "Second bold pair." in read_all(tmp_path / "o")["text"].to_list()


def test_tsv_with_header_and_lines(tmp_path, log):
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("id\ten\tnl\n1\tA dog.\tEen hond.\n2\tA cat.\n3\tA\tstray tab\tEen\n", encoding="utf-8")
    spec = {"format": "tsv", "header": True, "languages": ["en", "nl"], "columns": {"en": "en", "nl": "nl"}}
    report = ingest(spec, "t", str(tsv), str(tmp_path / "o1"), 100, log)
    assert report["records"] == 1 and report["skipped"] == {"missing_field": 1, "extra_field": 1}
    assert report["skipped_examples"]["extra_field"] == [{"line": 4, "detail": "4 fields, expected at most 3"}]
    with pytest.raises(ValueError, match=r"header has no column\(s\) \[3\]; it has \['id', 'en', 'nl'\]"):
        ingest({**spec, "columns": {"en": 1, "nl": 3}}, "t", str(tsv), str(tmp_path / "o3"), 100, log)
    lines = tmp_path / "s.txt"
    lines.write_text("one sentence\n\nanother one\n", encoding="utf-8")
    report = ingest({"format": "lines", "languages": ["en"]}, "l", str(lines), str(tmp_path / "o2"), 100, log)
    assert report["records"] == 2 and report["skipped"] == {"empty": 1}


def test_tsv_columns_by_index_without_header(tmp_path, log):
    tsv = tmp_path / "scored.tsv"
    tsv.write_text("1\t0.9\tEen hond.\tA dog.\n"
                   "2\t0.8\tEen kat.\tA cat.\tnote\n"       # 5 fields: one more than column 3 needs
                   "3\t0.7\tAlleen Nederlands\n"            # no column 3
                   "4\t0.6\tTwee\tTwo\n", encoding="utf-8")
    spec = {"format": "tsv", "languages": ["en", "nl"], "columns": {"en": 3, "nl": 2}}
    report = ingest(spec, "t", str(tsv), str(tmp_path / "o"), 100, log)
    assert report["records"] == 2 and report["skipped"] == {"extra_field": 1, "missing_field": 1}
    assert [(e["line"], e["detail"]) for e in report["skipped_examples"]["extra_field"]] == \
        [(2, "5 fields, expected at most 4")]
    frame = read_all(tmp_path / "o").sort("text")
    assert frame.select("language", "text").rows() == [
        ("en", "A dog."), ("nl", "Een hond."), ("nl", "Twee"), ("en", "Two")]
    # `fields` states how many fields a line has: with 5, line 2 is read
    report = ingest({**spec, "fields": 5}, "t", str(tsv), str(tmp_path / "o5"), 100, log)
    assert report["records"] == 3 and report["skipped"] == {"missing_field": 1}
    assert "A cat." in read_all(tmp_path / "o5")["text"].to_list()


def test_csv_column_of_real_esco_file(tmp_path, log):
    path = shared_data("esco_skills_nl", "transversalSkillsCollection_nl.csv")
    spec = {"format": "csv", "languages": ["nl"], "columns": {"nl": "preferredLabel"}}
    report = ingest(spec, "esco", str(path), str(tmp_path / "o"), 1000, log)
    assert report["records"] + report["skipped_total"] == 88  # the README's count of transversal skills
    frame = read_all(tmp_path / "o")
    assert frame.height == report["records"] and frame["n_tokens"].median() < 10


def test_missing_column_is_a_clear_error(tmp_path, log):
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="no column"):
        ingest({"format": "csv", "languages": ["nl"], "columns": {"nl": "label"}}, "x", str(path),
               str(tmp_path / "o"), 10, log)
    assert not (tmp_path / "o").exists()  # nothing that looks finished


def test_download_verifies_checksum(tmp_path, log):
    src = tmp_path / "corpus.txt.gz"
    src.write_bytes(gzip.compress(b"a\tb\n"))
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    dest = tmp_path / "dl" / "corpus.txt.gz"
    download(src.as_uri(), digest, str(dest), log)
    assert dest.read_bytes() == src.read_bytes()
    bad = tmp_path / "dl" / "bad.gz"
    with pytest.raises(ValueError, match="checksum mismatch"):
        download(src.as_uri(), "0" * 64, str(bad), log)
    assert not bad.exists() and not list((tmp_path / "dl").glob(".tmp-*"))


def test_moses_zip_reads_aligned_members_and_counts_unaligned_lines(tmp_path, log):
    import zipfile
    src = tmp_path / "en-nl.txt.zip"
    with zipfile.ZipFile(src, "w") as z:
        z.writestr("ParaCrawl.en-nl.en", b"The cat sleeps.\nBad \xff line\n\nFourth line\nExtra English line\n")
        z.writestr("ParaCrawl.en-nl.nl", b"De kat slaapt.\nSlechte regel\nLege Engelse kant\nVierde regel\n")
    spec = {"format": "moses", "languages": ["en", "nl"],
            "files": {"en": "ParaCrawl.en-nl.en", "nl": "ParaCrawl.en-nl.nl"}}
    report = ingest(spec, "pc", str(src), str(tmp_path / "out"), shard_rows=10, log=log)
    assert report["records"] == 2
    assert report["skipped"] == {"undecodable": 1, "empty": 1, "unaligned": 1}
    assert report["skipped_examples"]["unaligned"][0]["line"] == 5
    frame = read_all(tmp_path / "out")
    pairs = frame.group_by("pair_id").agg(pl.col("text").sort()).sort("pair_id")["text"].to_list()
    assert sorted(map(tuple, pairs)) == [("De kat slaapt.", "The cat sleeps."), ("Fourth line", "Vierde regel")]
    with pytest.raises(ValueError, match="no member"):
        list(ingest({**spec, "files": {"en": "x.en", "nl": "ParaCrawl.en-nl.nl"}}, "pc", str(src),
                    str(tmp_path / "o2"), 10, log))


def test_the_ingest_job_reads_its_files_and_spec_as_the_json_param_did(tmp_path, log):
    """rules/ingest.smk's ingest: the source file its input, shards and report its outputs; the
    spec's keys sorted as the JSON param gave them, so `columns` in another order (nl before en)
    stores the rows in the same order as before."""
    from workflow_scripts.ingest import run_ingest
    from workflow_scripts.jobs import make_job
    src = tmp_path / "pairs.tsv"
    src.write_text("x\tDe kat slaapt.\tThe cat sleeps.\nx\tEen hond.\tA dog.\n")
    spec = {"format": "tsv", "languages": ["en", "nl"], "columns": {"nl": 1, "en": 2}}
    shards, report = tmp_path / "ingest" / "pc", tmp_path / "reports" / "pc.json"
    run_ingest(make_job(input=[str(src)], output={"shards": str(shards), "report": str(report)},
                        params={"spec": spec, "shard_rows": 3}, wildcards={"source": "pc"}))
    frame = read_all(shards)
    assert frame["text"].to_list() == ["The cat sleeps.", "De kat slaapt.", "A dog.", "Een hond."]
    assert frame["language"].to_list() == ["en", "nl", "en", "nl"]
    assert [s["rows"] for s in json.loads(report.read_text())["shards"]] == [3, 1]
    assert json.loads(report.read_text()) == json.loads((shards / "report.json").read_text())
    sorted_spec = {"columns": {"en": 2, "nl": 1}, "format": "tsv", "languages": ["en", "nl"]}
    ingest(sorted_spec, "pc", str(src), str(tmp_path / "direct"), 3, log)
    assert read_all(tmp_path / "direct").equals(frame)
