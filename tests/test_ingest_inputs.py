"""Inputs that never lie: a bad line is counted under a reason and the rest read, never merged into
its neighbours or silently dropped; input that cannot be read on (broken XML, UTF-16) and a source
with no usable record are errors naming the file, and leave nothing that looks finished.

Each test here fails on the reader before this (fef8af2): unclosed CSV quotes merged rows, broken
TMX dropped every later unit under one `xml_error`, an empty or all-bad source gave an empty corpus,
CR-only files were one line, and a UTF-8 byte order mark stayed in the first text."""
import codecs
import gzip
import re
import zipfile

import polars as pl
import pytest

from workflow_scripts.ingest import ingest

CSV = {"format": "csv", "languages": ["nl"], "columns": {"nl": "label"}}
BITEXT = {"format": "bitext", "languages": ["en", "nl"]}
LINES = {"format": "lines", "languages": ["en"]}


def texts(out_dir):
    return pl.read_parquet(out_dir / "part-*.parquet")["text"].to_list()


def assert_nothing_written(tmp_path, *names):
    for name in names:
        assert not (tmp_path / name).exists()
    assert not list(tmp_path.glob(".tmp-*"))


def csv_rows(n: int, quoted: bool) -> list[str]:
    """`id,label,note` rows 1..n (file line k + 1 holds row k): label quoted or not."""
    q = '"' if quoted else ""
    return [f"{i},{q}Sentence number {i} is here{q},note {i}" for i in range(1, n + 1)]


def write_csv(path, rows):
    path.write_text("id,label,note\n" + "\n".join(rows) + "\n", encoding="utf-8")


# ---- row 1: an unclosed quote in a quoted cell ---------------------------------------------------

def test_csv_unclosed_quote_in_a_quoted_cell_is_counted_and_the_next_rows_read(tmp_path, log, records):
    """Before: row 51's cell swallowed the line break and row 52 up to its opening quote, so two rows
    became one record (`Sentence 51 is cut,note 51\\n52,Sentence number 52 is here"`), 0 skipped."""
    rows = csv_rows(200, quoted=True)
    rows[50] = '51,"Sentence 51 is cut,note 51'  # the label's closing quote is missing
    src = tmp_path / "labels.csv"
    write_csv(src, rows)
    report = ingest(CSV, "c", str(src), str(tmp_path / "o"), 1000, log)
    assert report["records"] == 199
    assert report["skipped"] == {"unclosed_quote": 1}
    # record 51 is spreadsheet row 52, on file line 52
    assert report["skipped_examples"]["unclosed_quote"] == [{
        "line": 52, "detail": "a quote opened on line 52 is still open on line 53 (',' expected after '\"'); "
                              "line 53 read again"}]
    got = texts(tmp_path / "o")
    assert got == [f"Sentence number {i} is here" for i in range(1, 201) if i != 51]
    assert not any("\n" in t or "cut" in t for t in got)
    assert ("WARNING", f"c: {src}: skipped 1 CSV record(s) as unclosed_quote, e.g. CSV record 52: a quote opened "
                       "on line 52 is still open on line 53 (',' expected after '\"'); line 53 read again") in records


# ---- row 2: an unclosed quote among unquoted cells -----------------------------------------------

@pytest.mark.parametrize("n_rows,last_line,why", [
    # the rest of the file (9.5 KB) would have been one "sentence", under max_chars
    (200, 201, "the file ends inside the quotes"),
    # csv's field limit (128 Ki characters) stops the swallowed cell near line 3099: before, that
    # was one `too_long` and ~3,000 rows silently gone
    (5000, None, "field larger than field limit (131072)"),
])
def test_csv_unclosed_quote_in_unquoted_cells_is_counted_and_the_rest_read(tmp_path, log, n_rows, last_line, why):
    rows = csv_rows(n_rows, quoted=False)
    rows[50] = '51,"Sentence 51 opens a quote,note 51'
    rows[9] = '10,a "b,c'  # a quote inside an unquoted cell is text
    src = tmp_path / "labels.csv"
    write_csv(src, rows)
    report = ingest(CSV, "c", str(src), str(tmp_path / "o"), 1000, log)
    assert report["records"] == n_rows - 1
    assert report["skipped"] == {"unclosed_quote": 1}
    [example] = report["skipped_examples"]["unclosed_quote"]
    last = last_line or int(re.search(r"still open on line (\d+)", example["detail"]).group(1))
    assert example == {"line": 52, "detail": f"a quote opened on line 52 is still open on line {last} ({why}); "
                                             f"lines 53-{last} read again"}
    got = texts(tmp_path / "o")
    assert len(got) == n_rows - 1 and max(map(len, got)) < 40
    assert got[9] == 'a "b' and got[50] == "Sentence number 52 is here"
    assert got[-1] == f"Sentence number {n_rows} is here"


def test_csv_stray_quote_and_unclosed_quote_on_the_last_line(tmp_path, log):
    src = tmp_path / "labels.csv"
    src.write_text('id,label,note\n1,"ab"c,x\n2,Twee,y\n3,"Drie, never closed,z\n', encoding="utf-8")
    report = ingest(CSV, "c", str(src), str(tmp_path / "o"), 100, log)
    assert report["records"] == 1 and texts(tmp_path / "o") == ["Twee"]
    assert report["skipped_examples"] == {
        "stray_quote": [{"line": 2, "detail": "line 2: ',' expected after '\"'"}],
        "unclosed_quote": [{"line": 4, "detail": "a quote opened on line 4 is still open at the end of the file"}]}


# ---- row 3: broken XML in a TMX file --------------------------------------------------------------

def test_tmx_broken_tag_is_an_error_naming_line_and_column(tmp_path, log):
    """Before: units 101-200 were dropped and counted as one `xml_error`; the job succeeded."""
    units = [f'<tu><tuv xml:lang="en"><seg>Sentence {i}.</seg></tuv><tuv xml:lang="nl"><seg>Zin {i}.</seg></tuv></tu>'
             for i in range(1, 201)]
    units[100] = '<tu><tuv xml:lang="en"><seg>Sentence 101.</seg></tuv><tuv xml:lang="nl"><seg>Zin 101.</tuv></tu>'
    src = tmp_path / "en-nl.tmx.gz"
    with gzip.open(src, "wt", encoding="utf-8") as f:  # unit k on line k + 2
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4"><header srclang="en"/><body>\n'
                + "\n".join(units) + "\n</body></tmx>\n")
    column = units[100].index("</tuv>", units[100].index("Zin 101")) + 3  # 1-based, at the tag's name
    with pytest.raises(ValueError) as err:
        ingest({"format": "tmx", "languages": ["en", "nl"]}, "tm", str(src), str(tmp_path / "o"), 100, log,
               report_path=str(tmp_path / "report.json"))
    assert str(err.value) == (
        f"{src}: XML error at line 103, column {column}: mismatched tag; the translation units after it cannot be "
        "read (an XML parser stops at the first error; 100 were read before it); no output written")
    assert_nothing_written(tmp_path, "o", "report.json")


# ---- row 4: no usable record ----------------------------------------------------------------------

@pytest.mark.parametrize("spec,data,message", [
    pytest.param(BITEXT, b"", "it holds no record at all", id="empty-bitext"),
    pytest.param(CSV, b"id,label,note\n", "it holds no record at all", id="header-only-csv"),
    pytest.param({"format": "tmx", "languages": ["en"]}, b"<tmx><body></body></tmx>", "it holds no record at all",
                 id="tmx-without-units"),
    pytest.param(BITEXT, b"one\ttwo\tthree\nonly one\n\ttwee\n",
                 "all 3 skipped: extra_field 1 (first at line 1: 3 fields, expected at most 2), missing_field 1 "
                 "(first at line 2), empty 1 (first at line 3)", id="all-bad-bitext"),
    pytest.param(CSV, b"id,label,note\n1,,x\n2,\"\",y\n", "all 2 skipped: empty 2 (first at CSV record 2)",
                 id="all-empty-csv"),
])
def test_a_source_without_a_usable_record_is_an_error(tmp_path, log, spec, data, message):
    src = tmp_path / "input"
    src.write_bytes(data)
    with pytest.raises(ValueError) as err:
        ingest(spec, "s", str(src), str(tmp_path / "o"), 100, log, report_path=str(tmp_path / "report.json"))
    assert str(err.value) == (f"{src}: no usable record in this {spec['format']} input of source s: {message}; "
                              "no output written")
    assert_nothing_written(tmp_path, "o", "report.json")


@pytest.mark.parametrize("spec,encoding,why", [
    (BITEXT, "utf-16", "it starts with the UTF-16 byte order mark FF FE"),
    (LINES, "utf-16-be", "24 of the first 24 byte pairs hold a NUL byte"),
    (CSV, "utf-16", "it starts with the UTF-16 byte order mark FF FE"),
])
def test_utf16_input_is_an_error_that_says_so(tmp_path, log, spec, encoding, why):
    """Before: every line was `control_char` (the NULs) or `undecodable`, and the corpus empty."""
    text = ("id,label,note\n1,Een,x\n" if spec is CSV else "Hello there\tHallo daar\n") * 2
    if spec is LINES:
        text = "Hello there\nAnother one\n"
    src = tmp_path / "input.txt"
    src.write_bytes(text.encode(encoding))
    with pytest.raises(ValueError) as err:
        ingest(spec, "u", str(src), str(tmp_path / "o"), 100, log)
    assert str(err.value) == (f"{src}: the file is UTF-16, not UTF-8 ({why}); convert it, e.g. "
                              "`iconv -f UTF-16 -t UTF-8`; no output written")
    assert_nothing_written(tmp_path, "o")


@pytest.mark.parametrize("spec,data,want", [
    (LINES, b"One sentence.\rTwo sentences.\r\rThree.\r", ["One sentence.", "Two sentences.", "Three."]),
    (BITEXT, b"One.\tEen.\rTwo.\tTwee.\rNo tab\rThree.\tDrie.", ["Een.", "One.", "Three.", "Drie.", "Two.", "Twee."]),
])
def test_cr_only_line_endings_are_split_at_cr(tmp_path, log, spec, data, want):
    """Before: a CR-only file was one line (short: one merged "sentence"; long: `too_long`)."""
    src = tmp_path / "mac.txt.gz"
    src.write_bytes(gzip.compress(data))
    report = ingest(spec, "m", str(src), str(tmp_path / "o"), 100, log)
    assert sorted(texts(tmp_path / "o")) == sorted(want)
    if spec is LINES:
        assert report["skipped_examples"] == {"empty": [{"line": 3, "detail": ""}]}
    else:
        assert report["skipped_examples"] == {"missing_field": [{"line": 3, "detail": ""}]}


# ---- row 5: a UTF-8 byte order mark ---------------------------------------------------------------

def test_utf8_bom_is_dropped_in_line_based_formats(tmp_path, log):
    bom = codecs.BOM_UTF8
    bitext = tmp_path / "pairs.txt"
    bitext.write_bytes(bom + b"The cat sleeps.\tDe kat slaapt.\nA dog.\tEen hond.\n")
    ingest(BITEXT, "b", str(bitext), str(tmp_path / "o1"), 100, log)
    assert sorted(texts(tmp_path / "o1")) == ["A dog.", "De kat slaapt.", "Een hond.", "The cat sleeps."]

    tsv = tmp_path / "pairs.tsv"  # the header's first column is found by its name
    tsv.write_bytes(bom + b"en\tnl\nA dog.\tEen hond.\n")
    spec = {"format": "tsv", "header": True, "languages": ["en", "nl"], "columns": {"en": "en", "nl": "nl"}}
    assert ingest(spec, "t", str(tsv), str(tmp_path / "o2"), 100, log)["records"] == 1

    lines = tmp_path / "s.txt.gz"
    lines.write_bytes(gzip.compress(bom + b"First sentence.\nSecond.\n"))
    ingest(LINES, "l", str(lines), str(tmp_path / "o3"), 100, log)
    assert texts(tmp_path / "o3") == ["First sentence.", "Second."]

    moses = tmp_path / "en-nl.zip"
    with zipfile.ZipFile(moses, "w") as z:
        z.writestr("c.en", bom + b"One.\nTwo.\n")
        z.writestr("c.nl", bom + b"Een.\nTwee.\n")
    spec = {"format": "moses", "languages": ["en", "nl"], "files": {"en": "c.en", "nl": "c.nl"}}
    ingest(spec, "z", str(moses), str(tmp_path / "o4"), 100, log)
    assert sorted(texts(tmp_path / "o4")) == ["Een.", "One.", "Twee.", "Two."]
