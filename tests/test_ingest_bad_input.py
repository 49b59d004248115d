"""Bad input at ingest: control characters, over-long texts, undecodable CSV cells, extra fields
and truncated compressed files. Bad records are counted per reason and skipped; input that cannot
be read to its end is an error that names the file and the last record read, and leaves nothing
that looks finished."""
import gzip
import zipfile

import polars as pl
import pytest

from workflow_scripts.ingest import ingest

BITEXT = {"format": "bitext", "languages": ["en", "nl"]}


def texts(out_dir):
    return sorted(pl.read_parquet(out_dir / "part-*.parquet")["text"].to_list())


def assert_nothing_written(tmp_path, *names):
    for name in names:
        assert not (tmp_path / name).exists()
    assert not list(tmp_path.glob(".tmp-*"))


def test_control_characters_and_max_chars(tmp_path, log):
    src = tmp_path / "pairs.txt"
    src.write_text("Good line.\tGoede regel.\n"
                   "Null\x00byte here\tNul byte\n"            # NUL: control_char
                   "Escape \x1b[31mred\tRood\n"                # ESC: control_char
                   "Unit\x1fseparator\tScheiding\n"            # \x1f is whitespace to str.split: normalised
                   + "x" * 21 + "\tkort\n"                     # 21 characters > max_chars 20: too_long
                   + "y" * 20 + "\tprecies twintig\n"          # exactly max_chars: kept
                   "C1 \x9b csi\tC1\n",                        # C1 control (CSI): control_char
                   encoding="utf-8")
    report = ingest({**BITEXT, "max_chars": 20}, "b", str(src), str(tmp_path / "o"), 100, log)
    assert report["records"] == 3
    assert report["skipped"] == {"control_char": 3, "too_long": 1}
    assert report["skipped_examples"]["control_char"] == [
        {"line": 2, "detail": "U+0000 at character 4"},
        {"line": 3, "detail": "U+001B at character 7"},
        {"line": 7, "detail": "U+009B at character 3"}]
    assert report["skipped_examples"]["too_long"] == [{"line": 5, "detail": "21 characters, max_chars 20"}]
    assert texts(tmp_path / "o") == ["Goede regel.", "Good line.", "Scheiding", "Unit separator",
                                     "precies twintig", "y" * 20]


def test_default_max_chars_counts_a_100k_character_line(tmp_path, log):
    src = tmp_path / "lines.txt"
    src.write_text("a" * 100_000 + "\n" + "b" * 10_000 + "\nshort\n", encoding="utf-8")
    report = ingest({"format": "lines", "languages": ["en"]}, "l", str(src), str(tmp_path / "o"), 100, log)
    assert report["records"] == 2 and report["skipped"] == {"too_long": 1}
    assert report["skipped_examples"]["too_long"] == [{"line": 1, "detail": "100000 characters, max_chars 10000"}]


def test_csv_streams_and_counts_undecodable_extra_and_long_records(tmp_path, log):
    src = tmp_path / "labels.csv"
    src.write_bytes(
        b"\xef\xbb\xbfid,label,note\r\n"                  # BOM: not part of the first column's name
        b"1,Eerste label,ok\r\n"
        b"2,Tweede label,bad \xff byte in a column not read\r\n"   # read: the bad byte is elsewhere
        b"3,Der\xe9de label,latin-1\r\n"                  # undecodable
        b'4,"Vierde, met\r\nnieuwe regel",multi-line cell\r\n'
        b"5,Vijfde \xef\xbf\xbd label,a real U+FFFD\r\n"   # valid UTF-8 for U+FFFD: kept
        b"6,Zesde,x,extra cell\r\n"                       # extra_field
        b"7,Zevende\x00nul,x\r\n"                          # control_char
        b"8," + b"z" * 200_000 + b",past csv's field limit\r\n"   # too_long
        b"9,Negende,read after the long one\r\n")
    spec = {"format": "csv", "languages": ["nl"], "columns": {"nl": "label"}}
    report = ingest(spec, "c", str(src), str(tmp_path / "o"), 100, log)
    assert report["records"] == 5
    assert report["skipped"] == {"undecodable": 1, "extra_field": 1, "control_char": 1, "too_long": 1}
    # record k is on spreadsheet row k + 1 (the header is row 1)
    assert report["skipped_examples"]["undecodable"] == [{"line": 4, "detail": "column label"}]
    assert report["skipped_examples"]["extra_field"] == [{"line": 7, "detail": "4 cells, header has 3"}]
    assert [e["line"] for e in report["skipped_examples"]["control_char"]] == [8]
    assert [e["line"] for e in report["skipped_examples"]["too_long"]] == [9]
    assert texts(tmp_path / "o") == ["Eerste label", "Negende", "Tweede label", "Vierde, met nieuwe regel",
                                     "Vijfde \ufffd label"]


def gzip_without_trailer(data: bytes) -> bytes:
    """A gzip stream cut before its 8-byte trailer (CRC and size): all data is there, the end is not."""
    return gzip.compress(data, mtime=0)[:-8]


@pytest.mark.parametrize("spec,data,last", [
    pytest.param(BITEXT, b"one\teen\ntwo\ttwee\nthree\tdrie\n", "line 3", id="bitext"),
    pytest.param({"format": "csv", "languages": ["en"], "columns": {"en": "t"}}, b"t\none\ntwo\n", "CSV record 3",
                 id="csv"),
    pytest.param({"format": "tmx", "languages": ["en"]},
                 b'<tmx><body><tu><tuv xml:lang="en"><seg>one</seg></tuv></tu>'
                 b'<tu><tuv xml:lang="en"><seg>two</seg></tuv></tu></body></tmx>', "translation unit 0", id="tmx"),
    # (the XML parser asks for 16 KiB blocks: the first one already hits the cut, so no unit was read)
])
def test_truncated_gzip_names_file_and_last_record_and_writes_nothing(tmp_path, log, spec, data, last):
    src = tmp_path / "input.gz"
    src.write_bytes(gzip_without_trailer(data))
    with pytest.raises(ValueError) as err:
        ingest(spec, "g", str(src), str(tmp_path / "out"), 100, log, report_path=str(tmp_path / "report.json"))
    assert str(err.value).startswith(f"{src}: input ends early or is corrupt after {last} (EOFError: ")
    assert str(err.value).endswith("; no output written")
    assert_nothing_written(tmp_path, "out", "report.json")


def test_gzip_cut_mid_stream(tmp_path, log):
    lines = b"".join(b"line %d\tregel %d\n" % (i, i) for i in range(200_000))
    compressed = gzip.compress(lines, mtime=0)
    src = tmp_path / "cut.txt.gz"
    src.write_bytes(compressed[: len(compressed) // 2])
    with pytest.raises(ValueError, match=r"cut\.txt\.gz: input ends early or is corrupt after line \d+ ") as err:
        ingest(BITEXT, "g", str(src), str(tmp_path / "out"), 100_000, log)
    last = int(str(err.value).split(" after line ")[1].split(" ")[0])
    assert 0 < last < 200_000
    assert_nothing_written(tmp_path, "out")


def test_truncated_zip_names_the_file(tmp_path, log):
    whole = tmp_path / "whole.zip"
    with zipfile.ZipFile(whole, "w") as z:
        z.writestr("c.en", b"one\n")
        z.writestr("c.nl", b"een\n")
    src = tmp_path / "cut.zip"
    src.write_bytes(whole.read_bytes()[:-30])  # the central directory, at the end, is gone
    spec = {"format": "moses", "languages": ["en", "nl"], "files": {"en": "c.en", "nl": "c.nl"}}
    with pytest.raises(ValueError, match=f"^{src}: not a readable zip file"):
        ingest(spec, "z", str(src), str(tmp_path / "out"), 100, log)
    assert_nothing_written(tmp_path, "out")


def test_corrupt_zip_member_names_the_file_and_writes_nothing(tmp_path, log):
    """A member whose bytes fail their CRC (read through a buffer) is an error, not a short corpus."""
    src = tmp_path / "bad.zip"
    lines = b"".join(b"line %d\n" % i for i in range(5000))
    with zipfile.ZipFile(src, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("c.en", lines)
        z.writestr("c.nl", lines)
    data = bytearray(src.read_bytes())
    at = data.index(b"line 4000")
    data[at:at + 4] = b"LINE"  # same length, wrong CRC
    src.write_bytes(bytes(data))
    spec = {"format": "moses", "languages": ["en", "nl"], "files": {"en": "c.en", "nl": "c.nl"}}
    with pytest.raises(ValueError, match=rf"^{src}: input ends early or is corrupt after line \d+ \(BadZipFile"):
        ingest(spec, "z", str(src), str(tmp_path / "out"), 100, log)
    assert_nothing_written(tmp_path, "out")


def test_control_characters_are_all_unprintable():
    """checked_text searches for control characters only in texts str.isprintable() rejects."""
    from workflow_scripts.ingest import CONTROL_CHAR
    matched = [c for c in map(chr, range(0x110000)) if CONTROL_CHAR.match(c)]
    assert len(matched) == 55 and not any(c.isprintable() for c in matched)
