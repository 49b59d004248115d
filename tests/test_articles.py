"""Articles stage: the CNN/DailyMail release formats (.story files in a folder, one file or a tar
archive; the Hugging Face layout as Parquet, CSV or JSON Lines, gzip detected from the content), stable
ids shared between formats, NLTK punkt sentences, bad records counted per reason."""
import gzip
import io
import json
import tarfile

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import missing_data, shared_data
from workflow_scripts import articles as art

STORY = """The mayor opened the new bridge on Monday. Thousands of residents walked across it.

It cost 12 million pounds, Dr. Smith said.

@highlight

Bridge opens

@highlight

Thousands walk across it
"""
STORY2 = "A fire destroyed a bakery. No one was hurt.\n\n@highlight\n\nBakery fire\n"
HF_ROWS = [{"id": "a1", "article": "The mayor opened the new bridge on Monday. Thousands of residents walked across it.\n"
                                   "It cost 12 million pounds, Dr. Smith said.",
            "highlights": "Bridge opens\nThousands walk across it"},
           {"id": "b2", "article": "A fire destroyed a bakery. No one was hurt.", "highlights": "Bakery fire"}]


@pytest.fixture(scope="module")
def splitter():
    shared_data("nltk_data")  # punkt_tab; skips where ../shared is absent and NLTK_DATA has none
    try:
        return art.SentenceSplitter()
    except LookupError:
        missing_data("NLTK punkt_tab data not found")


def build(tmp_path, spec, path, splitter, log):
    out = tmp_path / "out"
    report = art.build("x", spec, str(path), str(out), log, str(tmp_path / "report.json"), splitter)
    frame = pl.read_parquet(out / "part-00000.parquet")
    return frame, report


def test_parse_story():
    paragraphs, highlights = art.parse_story(STORY)
    assert paragraphs == ["The mayor opened the new bridge on Monday. Thousands of residents walked across it.",
                          "It cost 12 million pounds, Dr. Smith said."]
    assert highlights == ["Bridge opens", "Thousands walk across it"]
    assert art.parse_story("Only text.\n") == (["Only text."], [])


def test_story_folder_and_hf_jsonl_give_the_same_articles(tmp_path, splitter, log):
    folder = tmp_path / "stories" / "cnn"
    folder.mkdir(parents=True)
    (folder / "a1.story").write_text(STORY)
    (folder / "b2.story").write_text(STORY2)
    stories, report = build(tmp_path / "s", {"format": "story"}, tmp_path / "stories", splitter, log)
    jsonl = tmp_path / "hf.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in HF_ROWS))
    hf, _ = build(tmp_path / "h", {"format": "hf"}, jsonl, splitter, log)
    assert stories.drop("article").sort("doc_id").equals(hf.drop("article").sort("doc_id"))
    row = stories.filter(pl.col("doc_id") == "a1").row(0, named=True)
    assert row["article_id"] == art.article_id("a1")
    # punkt per paragraph: "Dr." does not end a sentence, and no sentence spans two paragraphs
    assert row["sentences"] == ["The mayor opened the new bridge on Monday.", "Thousands of residents walked across it.",
                                "It cost 12 million pounds, Dr. Smith said."]
    assert row["n_sentences"] == 3 and row["highlights"] == "Bridge opens\nThousands walk across it"
    assert report["articles"] == 2 and report["sentences"] == 5 and report["skipped_total"] == 0


def test_tar_archive_and_single_story(tmp_path, splitter, log):
    tgz = tmp_path / "cnn_stories.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        for name, text in (("cnn/stories/a1.story", STORY), ("cnn/stories/b2.story", STORY2)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    frame, _ = build(tmp_path / "t", {"format": "story"}, tgz, splitter, log)
    assert sorted(frame["doc_id"]) == ["a1", "b2"]
    one = tmp_path / "b2.story"
    one.write_text(STORY2)
    frame, _ = build(tmp_path / "o", {"format": "story"}, one, splitter, log)
    assert frame["doc_id"].to_list() == ["b2"] and frame["sentences"][0].to_list() == ["A fire destroyed a bakery.",
                                                                                        "No one was hurt."]


@pytest.mark.parametrize("file_type", ["parquet", "csv", "jsonl"])
def test_hf_layouts_gzip_detected_from_content(tmp_path, splitter, log, file_type):
    path = tmp_path / "release.bin"  # no telling extension
    if file_type == "parquet":
        pq.write_table(pa.Table.from_pylist(HF_ROWS), path)
    elif file_type == "csv":
        pl.DataFrame(HF_ROWS).write_csv(path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in HF_ROWS))
    assert art.detect_file_type(str(path)) == file_type
    frame, report = build(tmp_path / "plain", {"format": "hf"}, path, splitter, log)
    assert report["file_type"] == file_type and sorted(frame["doc_id"]) == ["a1", "b2"]
    if file_type != "parquet":
        gz = tmp_path / "release.gz.bin"
        gz.write_bytes(gzip.compress(path.read_bytes()))
        frame2, _ = build(tmp_path / "gz", {"format": "hf"}, gz, splitter, log)
        assert frame2.equals(frame)


def test_bad_records_are_counted_per_reason(tmp_path, splitter, log):
    first = json.dumps({"id": "a1", "article": "Short one. Two.", "highlights": "h"})
    lines = [first, "not json", "[1, 2]", json.dumps({"id": "c3"}), json.dumps({"id": "d4", "article": "   "}), first,
             json.dumps({"id": "e5", "article": "Bad \u0000 byte."}), json.dumps({"id": "f6", "article": "x" * 50}),
             json.dumps({"article": "No id here."}), json.dumps({"id": "g7", "article": "Fine. Without highlights."})]
    data = ("\n".join(lines) + "\n").encode() + b'{"id": "h8", "article": "\xff\xfe"}\n'
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    frame, report = build(tmp_path, {"format": "hf", "max_chars": 40}, path, splitter, log)
    assert report["skipped"] == {"malformed": 2, "missing_field": 2, "empty": 1, "duplicate_id": 1, "control_char": 1,
                                 "too_long": 1, "undecodable": 1}
    assert report["records"] == 11 and report["articles"] == 2 and report["without_highlights"] == 1
    assert sorted(frame["doc_id"]) == ["a1", "g7"]
    assert report["skipped_examples"]["malformed"][0]["record"] == "line 2"


def test_csv_records_with_wrong_field_count(tmp_path, splitter, log):
    path = tmp_path / "r.csv"
    path.write_text('id,article,highlights\na1,"One. Two.",h\nb2,"Three.",h,extra\n')
    frame, report = build(tmp_path, {"format": "hf"}, path, splitter, log)
    assert report["skipped"] == {"malformed": 1} and frame["doc_id"].to_list() == ["a1"]
    bad = tmp_path / "cols.csv"
    bad.write_text("key,text\n1,x\n")
    with pytest.raises(ValueError, match="lacks column"):
        build(tmp_path / "c", {"format": "hf"}, bad, splitter, log)


def test_truncated_gzip_stops_with_the_file_named(tmp_path, splitter, log):
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(gzip.compress(("".join(json.dumps(r) + "\n" for r in HF_ROWS * 50)).encode())[:-30])
    with pytest.raises(ValueError, match="ends early or is corrupt"):
        build(tmp_path, {"format": "hf"}, path, splitter, log)
    assert not (tmp_path / "out").exists()


def test_shards_hold_shard_rows_articles(tmp_path, splitter, log):
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps({"id": f"n{i}", "article": f"Article {i}. It ends."}) + "\n" for i in range(7)))
    out = tmp_path / "out"
    report = art.build("x", {"format": "hf", "shard_rows": 3}, str(path), str(out), log, None, splitter)
    assert [s["rows"] for s in report["shards"]] == [3, 3, 1]
    assert len(list(art.read_articles(str(out)))) == 7


def test_shared_cnn_dailymail_sample(tmp_path, splitter, log):
    path = shared_data("cnn_dailymail", "cnn_dailymail_sample.jsonl")
    out = tmp_path / "out"
    report = art.build("cnn_dm", {"format": "hf"}, str(path), str(out), log, None, splitter)
    assert report["records"] == 282 and report["articles"] == 282 and report["skipped_total"] == 0
    frame = pl.concat([pl.read_parquet(p) for p in sorted(out.glob("part-*.parquet"))])
    assert frame["article_id"].n_unique() == 282
    assert frame["n_sentences"].min() >= 3 and report["sentences"] == frame["n_sentences"].sum()


def test_a_url_collection_is_downloaded_verified_and_split(tmp_path):
    """The workflow: `url` + `sha256` go through download_source (rules/ingest.smk), then the articles rule."""
    import hashlib
    from workflow_runner import snakemake, write_config
    shared_data("nltk_data")
    release = tmp_path / "release.jsonl.gz"
    release.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in HF_ROWS).encode()))
    corpus = tmp_path / "mini.txt"
    corpus.write_text("the cat sleeps\tde kat slaapt\n")
    config = {"seed": 1, "sources": {"mini": {"format": "bitext", "path": str(corpus), "languages": ["en", "nl"]}},
              "corpora": {"mini_en": {"source": "mini", "language": "en"}}, "models": {"tfidf": {"family": "tfidf"}},
              "articles": {"news": {"format": "hf", "url": release.as_uri(),
                                    "sha256": hashlib.sha256(release.read_bytes()).hexdigest()}}}
    run = tmp_path / "run"
    run.mkdir()
    cfg = write_config(run, config)
    target = "results/reports/articles/news.json"
    snakemake(run, cfg, target)
    report = json.loads((run / target).read_text())
    assert report["articles"] == 2 and report["file_type"] == "jsonl"
    assert (run / "results" / "downloads" / "sources" / "news" / "release.jsonl.gz").exists()
    config["articles"]["news"]["sha256"] = "0" * 64  # a wrong checksum: the download is refused
    proc = snakemake(run, write_config(run, config), "--forcerun", "download_source", target, check=False)
    assert proc.returncode != 0 and "checksum mismatch" in (proc.stdout + proc.stderr + "".join(
        p.read_text() for p in (run / "results" / "logs" / "download").rglob("*.log")))


def test_the_articles_job_puts_the_workflows_nltk_folder_first(tmp_path, splitter, monkeypatch):
    """rules/articles.smk's job: release, shards and report from its input and outputs; the
    workflow's NLTK download folder goes before the user's NLTK_DATA (nltk reads it on import)."""
    import os
    from workflow_scripts.jobs import make_job
    jsonl = tmp_path / "hf.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in HF_ROWS))
    user = os.environ.get("NLTK_DATA", "")
    monkeypatch.setenv("NLTK_DATA", user)
    shards, report = tmp_path / "articles" / "news", tmp_path / "reports" / "news.json"
    art.run_articles(make_job(input={"release": str(jsonl)}, output={"shards": str(shards), "report": str(report)},
                              params={"spec": {"format": "hf"}, "nltk_dir": "results/nltk_data"},
                              wildcards={"collection": "news"}))
    assert os.environ["NLTK_DATA"] == ("results/nltk_data" + os.pathsep + user if user else "results/nltk_data")
    written = json.loads(report.read_text())
    assert written["name"] == "news" and written["articles"] == 2 and written["sentences"] == 5
    assert pl.read_parquet(shards / "part-00000.parquet")["doc_id"].sort().to_list() == ["a1", "b2"]
    monkeypatch.delenv("NLTK_DATA")
    from workflow_scripts.nltk_data import prepend_nltk_data
    prepend_nltk_data("results/nltk_data")
    assert os.environ["NLTK_DATA"] == "results/nltk_data"  # no user folder: no separator
