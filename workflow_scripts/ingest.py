"""Stage 1, ingest: read a corpus in its release format into Parquet shards with stable ids.

Formats: ParaCrawl's gzipped plain-text bitext (`en<TAB>nl`), OPUS "moses" zips (one line-aligned
file per language), TMX, generic TSV (columns by index
or header name), one sentence per line, and one column of a CSV. Each row becomes one sentence
(`sentence_id`, `pair_id`, `language`, `text`, `n_tokens`). Bad input lines are counted per reason
in `report.json` and skipped: they never stop a multi-million-line run. Input that cannot be read
to its end (a truncated gzip or zip, TMX whose XML breaks off), input in another encoding (UTF-16),
and a source with no usable record at all are errors naming the file, and leave no output.

Line-based formats (bitext, tsv, lines, and the members of a moses zip) drop a UTF-8 byte order
mark at the start, and a file with CR-only line endings (no LF in its first 64 KiB, a CR there) is
split at CR (and LF, CRLF). A CSV record whose quoted cell is never closed (the quote swallows line
breaks, and the record breaks CSV's rules or has the wrong number of cells) is counted as
`unclosed_quote` and the lines after its first are read again as records of their own; a quote
that closes and is followed by text (`"ab"c`) is `stray_quote`.

Row filters (`where: {column: [values]}`, tsv and csv sources; columns by name with a header, by
index without one) keep a row only when every named column's value is in its list. A row filtered
out is counted under the first column (in `where` order) whose value is not listed (`filtered` in the
report), never as a bad line; a line that is bad before its filter can be read (extra or missing
fields) stays a bad line.
"""
from __future__ import annotations

import csv
import gzip
import hashlib
import io
import re
import xml.etree.ElementTree as ET
import zipfile
import zlib
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from workflow_scripts.common import SEP, atomic_path, setup_logging, sorted_keys, write_json

SCHEMA = pa.schema([
    ("sentence_id", pa.uint64()),
    ("pair_id", pa.uint64()),
    ("language", pa.string()),
    ("text", pa.string()),
    ("n_tokens", pa.int32()),
])
EXAMPLES_PER_REASON = 5
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
# Longest text (in characters, after whitespace normalisation) that is sent on; the schema's default
# for `sources.<name>.max_chars` is the same. 10,000 is four times the longest line of the real
# ParaCrawl and Tatoeba samples, and beyond what any encoder reads (512 tokens are a few thousand
# characters): longer "sentences" are unsegmented documents or junk that would only cost tagger time.
DEFAULT_MAX_CHARS = 10_000
# Control characters left after normalisation (NUL, escape, C1 controls...); the whitespace ones
# (tab, newline, \x1c-\x1f, \x85) are whitespace to str.split and are normalised to spaces instead.
CONTROL_CHAR = re.compile("[" + re.escape("".join(
    ch for ch in map(chr, [*range(0x20), *range(0x7F, 0xA0)]) if not ch.isspace())) + "]")
# lone surrogates that errors="surrogateescape" puts in place of bytes that are not UTF-8
ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
# what a record number counts, per format, for error messages
RECORD_UNIT = {"tmx": "translation unit", "csv": "CSV record"}
# unreadable compressed input: gzip.GzipFile raises EOFError at a truncated end, zlib.error or
# BadGzipFile on corrupt data; zipfile raises BadZipFile (e.g. a bad CRC) on a corrupt member
READ_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile, zipfile.BadZipFile)
UTF8_BOM = b"\xef\xbb\xbf"
# how much of a line-based file is looked at for its encoding and line endings
SNIFF_BYTES = 1 << 16


class BadRecord(Exception):
    """A record that is skipped and counted under `reason`."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason)
        self.reason, self.detail = reason, detail


def open_binary(path: str | Path):
    """Open plain or gzip-compressed input, decided by the magic bytes, not the file name."""
    f = open(path, "rb")
    magic = f.read(2)
    f.seek(0)
    if magic == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=f)
    return f


class FilteredOut:
    """A row that a `where` filter leaves out, counted under the first column whose value is not listed."""
    __slots__ = ("column",)

    def __init__(self, column: str):
        self.column = column


def where_values(where: dict | None) -> dict:
    """`where` as column -> set of accepted strings (YAML may read a value such as 1 as a number, a
    column index as an int or a string of digits)."""
    return {column: {str(v) for v in values} for column, values in (where or {}).items()}


def where_index(column) -> int:
    """A column index of a header-less file, given as an int or a string of digits."""
    if isinstance(column, int) or (isinstance(column, str) and column.isdigit()):
        return int(column)
    raise ValueError(f"`where` names column {column!r}, but the file has no header: columns are indices (0, 1, ...)")


def normalise(text: str) -> str:
    """Collapse runs of whitespace, so that a variant built by splitting and re-joining words
    differs from its original only by the inserted word."""
    return " ".join(text.split())


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadRecord("undecodable", f"byte {err.start}") from None


def utf16_evidence(head: bytes) -> str | None:
    """Why the bytes at the start of a file say it is UTF-16 (or UTF-32), not UTF-8; None if they
    do not. A UTF-16 byte order mark is not valid UTF-8; without one, UTF-16 text in a Latin script
    has a NUL in every other byte, which no usable UTF-8 text has."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return f"it starts with the UTF-16 byte order mark {head[0]:02X} {head[1]:02X}"
    sample = head[:4096]
    half = len(sample) // 2
    if half >= 8:
        nuls = max(sample[0::2].count(0), sample[1::2].count(0))
        if nuls >= 0.4 * half:
            return f"{nuls} of the first {half} byte pairs hold a NUL byte"
    return None


def refuse_utf16(head: bytes, path, what: str = "the file") -> None:
    why = utf16_evidence(head)
    if why:
        raise ValueError(f"{path}: {what} is UTF-16, not UTF-8 ({why}); convert it, e.g. "
                         f"`iconv -f UTF-16 -t UTF-8`; no output written")


def _universal_lines(head: bytes, f) -> Iterator[bytes]:
    """The lines of a file whose lines end in CR (old Mac style), LF or CRLF, each with its ending.
    (Only for files that look CR-only: elsewhere a lone CR inside a line is whitespace, as before.)"""
    pending = head
    while True:
        block = f.read(1 << 20)
        lines = (pending + block).splitlines(keepends=True)  # bytes: at CR, LF and CRLF only
        # the last line may go on in the next block (or be a CR whose LF is there)
        pending = lines.pop() if block and lines else b""
        yield from lines
        if not block:
            return


def binary_lines(f, path) -> Iterator[bytes]:
    """The lines of a line-based file (bytes, with their line ending): a UTF-8 byte order mark at
    the start dropped, UTF-16 refused, and a file that looks CR-only (a CR and no LF in its first
    64 KiB) split at CR as well as LF and CRLF. Otherwise lines end at LF, and after the first
    64 KiB the file's own line iteration takes over (C speed)."""
    head = f.read1(SNIFF_BYTES)  # one read: a truncated gzip fails where its lines run out, not here
    refuse_utf16(head, path)
    head = head.removeprefix(UTF8_BOM)
    if b"\r" in head and b"\n" not in head:
        yield from _universal_lines(head, f)
        return
    *lines, tail = head.split(b"\n")
    for line in lines:
        yield line + b"\n"
    if tail:
        yield tail + f.readline()
    yield from f


def _checked(text: str | None, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    if text is None:
        raise BadRecord("missing_field")
    return checked_text(normalise(text), max_chars)


def checked_text(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """A normalised text, or BadRecord: empty, a control character, longer than max_chars."""
    if not text:
        raise BadRecord("empty")
    # every control character is unprintable: the C-speed check first, the search only if it fails
    control = None if text.isprintable() else CONTROL_CHAR.search(text)
    if control:
        raise BadRecord("control_char", f"U+{ord(control.group()):04X} at character {control.start()}")
    if len(text) > max_chars:
        raise BadRecord("too_long", f"{len(text)} characters, max_chars {max_chars}")
    return text


def read_delimited(path, columns: dict[str, int | str], delimiter: str = "\t", header: bool = False,
                   n_fields: int | None = None, max_chars: int = DEFAULT_MAX_CHARS, where: dict | None = None,
                   ) -> Iterator[tuple[int, dict[str, str] | BadRecord | FilteredOut]]:
    """Bitext / TSV / one-sentence-per-line reader. Yields (line number, {language: text}) or
    (line number, BadRecord). No quoting: ParaCrawl text contains quote characters.

    A line may hold at most `n_fields` fields (with a header: the header's; by default one past the
    highest column used). More fields mean a stray delimiter, so which field is which is unknown:
    such a line is `extra_field`, never split at a guess. A line with fewer fields is
    `missing_field` only where a column that is read is absent. `where` (column -> accepted values):
    a row whose value of such a column is not listed is a FilteredOut (module docstring)."""
    accepted = where_values(where)
    indices = None if header else dict(columns)
    filters = None if header else [(str(c), where_index(c), ok) for c, ok in accepted.items()]
    if n_fields is None and indices is not None:
        n_fields = max([*indices.values(), *(i for _, i, _ in filters)]) + 1
    with open_binary(path) as f:
        for lineno, raw in enumerate(binary_lines(f, path), start=1):
            raw = raw.rstrip(b"\r\n")
            try:
                fields = _decode(raw).split(delimiter)
                if indices is None:  # the header line
                    named = [*columns.values(), *accepted]
                    missing = [c for c in named if isinstance(c, str) and c not in fields]
                    beyond = [c for c in named if isinstance(c, int) and c >= len(fields)]
                    if missing or beyond:
                        raise ValueError(f"{path}: header has no column(s) {missing or beyond}; it has {fields}")
                    indices = {lang: fields.index(c) if isinstance(c, str) else c for lang, c in columns.items()}
                    filters = [(str(c), fields.index(c) if isinstance(c, str) else c, ok) for c, ok in accepted.items()]
                    n_fields = len(fields)
                    continue
                if len(fields) > n_fields:
                    raise BadRecord("extra_field", f"{len(fields)} fields, expected at most {n_fields}")
                out = _filtered(fields, filters)
                if out is not None:
                    yield lineno, out
                    continue
                yield lineno, {lang: _checked(fields[idx] if idx < len(fields) else None, max_chars)
                               for lang, idx in indices.items()}
            except BadRecord as bad:
                yield lineno, bad


def _filtered(cells: list[str], filters: list) -> FilteredOut | None:
    """The FilteredOut of a row whose value of a `where` column is not listed; a row too short to
    hold that column is `missing_field` (a bad line, not a filtered one)."""
    for name, index, ok in filters:
        if index >= len(cells):
            raise BadRecord("missing_field", f"no column {name} to filter on")
        if cells[index] not in ok:
            return FilteredOut(name)
    return None


class _LineFeed:
    """csv.reader's input: the lines of a text, numbered, and the ones the record being parsed has
    taken so far (`taken`: (line number, line) pairs), so that a record found broken can hand all
    but its first line back (`read_again`) to be parsed as records of their own."""

    def __init__(self, lines):
        self.lines, self.again, self.taken, self.lineno = lines, deque(), [], 0

    def __iter__(self):
        return self

    def __next__(self) -> str:
        if self.again:
            item = self.again.popleft()
        else:
            line = next(self.lines)
            self.lineno += 1
            item = (self.lineno, line)
        self.taken.append(item)
        return item[1]

    def read_again(self, items: list) -> None:
        self.again.extendleft(reversed(items))


def _quote_problem(path, taken: list, row: list | None, err: csv.Error | None, n_header: int,
                   feed: _LineFeed) -> BadRecord | None:
    """The BadRecord for a record with a quoting problem, or None. Records are parsed strictly
    (csv's `strict`): a quote that closes a cell must be followed by a delimiter or a line end, and
    the file must not end inside quotes; valid CSV never breaks these rules. A record that took
    several lines and breaks them, or has a cell count other than the header's, is an unclosed
    quote that swallowed line breaks: the lines after its first are read again."""
    first, last = taken[0][0], taken[-1][0]
    message = str(err) if err is not None else ""
    if len(taken) > 1 and (err is not None or len(row) != n_header):
        why = message if err is not None else f"{len(row)} cells, header has {n_header}"
        if message == "unexpected end of data":
            why = "the file ends inside the quotes"
        feed.read_again(taken[1:])
        again = f"line {last}" if last == first + 1 else f"lines {first + 1}-{last}"
        return BadRecord("unclosed_quote", f"a quote opened on line {first} is still open on line {last} "
                                           f"({why}); {again} read again")
    if err is None:
        return None
    if message == "unexpected end of data":
        return BadRecord("unclosed_quote", f"a quote opened on line {first} is still open at the end of the file")
    if "expected after" in message:  # ',' expected after '"': text after a closing quote
        return BadRecord("stray_quote", f"line {first}: {message}")
    if "field larger than field limit" in message:  # none other in the default dialect
        return BadRecord("too_long", message)
    raise ValueError(f"{path}: CSV line {first}: {err}") from err


CSV_DEFAULT_FIELD_LIMIT = 131072  # Python's own default (csv.field_size_limit())


def read_csv_column(path, columns: dict[str, str], max_chars: int = DEFAULT_MAX_CHARS, where: dict | None = None,
                    ) -> Iterator[tuple[int, dict[str, str] | BadRecord | FilteredOut]]:
    """One or more named columns of a quoted CSV (e.g. ESCO labels); multi-line cells allowed.
    Streamed; a record numbers as in a spreadsheet (header = 1); blank lines are no records. Bytes
    that are not UTF-8 are decoded to lone surrogates (surrogateescape), which valid UTF-8 never
    yields, so only the records holding them are `undecodable`. A record with more cells than the
    header is `extra_field`; a cell past csv's field-size limit is `too_long`. A quoted cell that is
    never closed swallows the lines after it until the next quote: that record is `unclosed_quote`
    and the swallowed lines are read again (`_quote_problem`), so one stray quote costs one record,
    not the rest of the file; text after a closing quote is `stray_quote`. UTF-16 is refused."""
    # cells up to max_chars must be readable, so that the length check, not csv, decides; set for this
    # read alone and put back after it: the same input gives the same report whatever ran before
    previous_limit = csv.field_size_limit(max(CSV_DEFAULT_FIELD_LIMIT, max_chars + 1))
    try:
        with open_binary(path) as fb:
            refuse_utf16(fb.peek(SNIFF_BYTES), path)
            text = io.TextIOWrapper(fb, encoding="utf-8-sig", errors="surrogateescape", newline="")
            feed = _LineFeed(text)
            reader = csv.reader(feed, strict=True)
            try:
                fieldnames = next(reader, None)
            except csv.Error as err:
                raise ValueError(f"{path}: CSV header: {err}") from err
            accepted = where_values(where)
            missing = [c for c in [*columns.values(), *accepted] if c not in (fieldnames or [])]
            if missing:
                raise ValueError(f"{path}: CSV has no column(s) {missing}; it has {fieldnames}")
            n_header = len(fieldnames)
            n_names = len(dict.fromkeys(fieldnames))  # the keys a csv.DictReader row would have
            index = {name: i for i, name in enumerate(fieldnames)}  # the last of equal names, as DictReader
            wanted = [(lang, col, index[col]) for lang, col in columns.items()]
            filters = [(col, index[col], ok) for col, ok in accepted.items()]
            rowno = 1
            while True:
                feed.taken = []
                err = None
                try:
                    row = next(reader)
                except StopIteration:
                    return
                except csv.Error as e:
                    row, err = None, e
                if row == []:  # a blank line (csv.DictReader skips them too)
                    continue
                rowno += 1
                try:
                    problem = _quote_problem(path, feed.taken, row, err, n_header, feed)
                    if problem is not None:
                        raise problem
                    if len(row) > n_header:  # cells beyond the header
                        raise BadRecord("extra_field", f"{n_names + len(row) - n_header} cells, header has {n_header}")
                    out = _filtered(row, filters)
                    if out is not None:
                        yield rowno, out
                        continue
                    record = {}
                    for lang, col, i in wanted:
                        value = row[i] if i < len(row) else None
                        if value is not None and ESCAPED_BYTE.search(value):
                            raise BadRecord("undecodable", f"column {col}")
                        record[lang] = _checked(value, max_chars)
                    yield rowno, record
                except BadRecord as bad:
                    yield rowno, bad
    finally:
        csv.field_size_limit(previous_limit)


def read_tmx(path, languages: list[str], max_chars: int = DEFAULT_MAX_CHARS,
             ) -> Iterator[tuple[int, dict[str, str] | BadRecord]]:
    """Streaming TMX reader: one record per <tu>, keeping the <seg> of each wanted language.
    Language codes match on their primary subtag (`en-GB` counts as `en`). Broken XML is an error
    naming its line and column (the parser cannot read past it). Memory stays bounded:
    each finished <tu> is removed from its parent (`<body>`), which would otherwise keep every
    one of them, cleared or not, to the end of the file."""
    with open_binary(path) as f:
        tu_no = 0
        open_elements = []  # the path from the root to the element being parsed
        try:
            for event, elem in ET.iterparse(f, events=("start", "end")):
                if event == "start":
                    open_elements.append(elem)
                    continue
                open_elements.pop()
                if elem.tag != "tu":
                    continue
                tu_no += 1
                segs: dict[str, str] = {}
                for tuv in elem.iter("tuv"):
                    lang = (tuv.get(XML_LANG) or tuv.get("lang") or "").split("-")[0].lower()
                    seg = tuv.find("seg")
                    if lang and seg is not None:
                        segs[lang] = "".join(seg.itertext())
                if open_elements:  # every earlier sibling is read already: drop them, this <tu> too
                    del open_elements[-1][:]
                try:
                    yield tu_no, {lang: _checked(segs.get(lang), max_chars) for lang in languages}
                except BadRecord as bad:
                    yield tu_no, bad
        except ET.ParseError as err:
            # expat stops at the first error: nothing after it can be read, so a corpus cut short
            # there must not pass for the whole one
            from xml.parsers.expat import ErrorString
            line, column = err.position  # expat counts columns from 0, editors from 1
            raise ValueError(f"{path}: XML error at line {line}, column {column + 1}: {ErrorString(err.code)}; the "
                             f"translation units after it cannot be read (an XML parser stops at the first "
                             f"error; {tu_no} were read before it); no output written") from err


def read_moses(path, files: dict[str, str], max_chars: int = DEFAULT_MAX_CHARS,
               ) -> Iterator[tuple[int, dict[str, str] | BadRecord]]:
    """OPUS "moses" release: one file per language, line-aligned, inside a zip (`files` names the
    members, e.g. ParaCrawl.en-nl.en / ParaCrawl.en-nl.nl). Lines past the end of a shorter file
    are counted as unaligned."""
    import itertools
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as err:  # e.g. a truncated download: the directory is at the end
        raise ValueError(f"{path}: not a readable zip file ({err})") from err
    with archive:
        names = set(archive.namelist())
        missing = [m for m in files.values() if m not in names]
        if missing:
            raise ValueError(f"{path}: zip has no member(s) {missing}; it has {sorted(names)[:10]}")
        # buffered: ZipExtFile.readline is Python code, a third of the stage's time per line
        handles = {lang: io.BufferedReader(archive.open(member), buffer_size=1 << 20) for lang, member in files.items()}
        try:
            for lang, h in handles.items():
                refuse_utf16(h.peek(SNIFF_BYTES), path, f"zip member {files[lang]}")
            # each member's own lines, the first without a UTF-8 byte order mark
            firsts = [h.readline() for h in handles.values()]  # b"": an empty member, no line
            members = [itertools.chain([first.removeprefix(UTF8_BOM)] if first else [], h)
                       for first, h in zip(firsts, handles.values())]
            for lineno, lines in enumerate(itertools.zip_longest(*members), start=1):
                if any(line is None for line in lines):
                    yield lineno, BadRecord("unaligned", "one language file ended before the other")
                    continue
                try:
                    yield lineno, {lang: _checked(_decode(line.rstrip(b"\r\n")), max_chars)
                                   for lang, line in zip(handles, lines)}
                except BadRecord as bad:
                    yield lineno, bad
        finally:
            for h in handles.values():
                h.close()


def records(spec: dict, path: str) -> Iterator[tuple[int, dict[str, str] | BadRecord]]:
    fmt = spec["format"]
    langs = spec["languages"]
    max_chars = spec.get("max_chars", DEFAULT_MAX_CHARS)
    if fmt in ("bitext", "tsv"):
        cols = spec.get("columns") or {lang: i for i, lang in enumerate(langs)}
        return read_delimited(path, cols, "\t", header=fmt == "tsv" and spec.get("header", False),
                              n_fields=spec.get("fields"), max_chars=max_chars, where=spec.get("where"))
    if fmt == "lines":
        return read_delimited(path, {langs[0]: 0}, "\n", n_fields=1, max_chars=max_chars)
    if fmt == "csv":
        return read_csv_column(path, spec["columns"], max_chars, where=spec.get("where"))
    if fmt == "tmx":
        return read_tmx(path, langs, max_chars)
    if fmt == "moses":
        return read_moses(path, spec["files"], max_chars)
    raise ValueError(f"unknown format {fmt!r}")


class ShardWriter:
    """Writes rows into numbered Parquet shards of at most `shard_rows` rows."""

    def __init__(self, out_dir: Path, shard_rows: int):
        self.out_dir, self.shard_rows = out_dir, shard_rows
        self.shards: list[dict] = []
        self._new_buffer()

    def _new_buffer(self) -> None:
        # one list per column, appended to directly: a per-row loop over the schema cost as much
        # as reading the line
        self.columns = tuple([] for _ in SCHEMA.names)
        self._ids, self._pairs, self._langs, self._texts, self._tokens = self.columns

    def add(self, sentence_id: int, pair_id: int, language: str, text: str, tokens: int) -> None:
        self._ids.append(sentence_id)
        self._pairs.append(pair_id)
        self._langs.append(language)
        self._texts.append(text)
        self._tokens.append(tokens)
        if len(self._texts) >= self.shard_rows:
            self.flush()

    def flush(self) -> None:
        rows = len(self._texts)
        if not rows:
            return
        name = f"part-{len(self.shards):05d}.parquet"
        table = pa.Table.from_pydict(dict(zip(SCHEMA.names, self.columns)), schema=SCHEMA)
        pq.write_table(table, self.out_dir / name, compression="zstd")
        self.shards.append({"file": name, "rows": rows})
        self._new_buffer()


def _id(joined: str) -> int:
    """stable_id of the parts SEP-joined in `joined` (inlined: three ids per pair of lines)."""
    return int.from_bytes(hashlib.blake2b(joined.encode("utf-8"), digest_size=8).digest(), "little")


def skip_summary(bad: Counter, examples: dict, unit: str = "line") -> str:
    """`reason N (first at <unit> L: detail), ...` for an error message."""
    return ", ".join(f"{reason} {count} (first at {unit} {examples[reason][0]['line']}"
                     + (f": {examples[reason][0]['detail']})" if examples[reason][0]["detail"] else ")")
                     for reason, count in bad.most_common())


@dataclass
class Tally:
    """What reading a source counted beside its rows: records, bad lines per reason (with the first
    examples), rows `where` filtered out per column, and the last record number read."""
    records: int = 0
    lineno: int = 0
    bad: Counter = field(default_factory=Counter)
    filtered: Counter = field(default_factory=Counter)
    examples: dict = field(default_factory=dict)


def source_rows(spec: dict, source: str, path: str, tally: Tally) -> Iterator[tuple[int, int, str, str, int]]:
    """(sentence_id, pair_id, language, text, n_tokens) of every row the ingest job writes for
    `source`, in order, counting the rest in `tally`; the plan summary (plan_summary.py) reads a
    local source through it before any job, so its counts are the job's."""
    for lineno, rec in records(spec, path):
        tally.lineno = lineno
        if isinstance(rec, FilteredOut):
            tally.filtered[rec.column] += 1
            continue
        if isinstance(rec, BadRecord):
            tally.bad[rec.reason] += 1
            ex = tally.examples.setdefault(rec.reason, [])
            if len(ex) < EXAMPLES_PER_REASON:
                ex.append({"line": lineno, "detail": rec.detail})
            continue
        tally.records += 1
        pair_id = _id(SEP.join([source, *(rec[lang] for lang in spec["languages"] if lang in rec)]))
        for lang, text in rec.items():
            # the texts are normalised (_checked): single spaces between words, so the n_tokens
            # count is the spaces plus one
            yield _id(f"{source}{SEP}{lang}{SEP}{text}"), pair_id, lang, text, text.count(" ") + 1


def ingest(spec: dict, source: str, path: str, out_dir: str, shard_rows: int, log,
           report_path: str | None = None) -> dict:
    """Read one corpus source into `out_dir` (written atomically) and return its report."""
    tally = Tally()
    bad, filtered, examples = tally.bad, tally.filtered, tally.examples
    rows_per_language = Counter()
    logged = 0
    with atomic_path(out_dir, is_dir=True) as tmp:
        writer = ShardWriter(tmp, shard_rows)
        try:
            for row in source_rows(spec, source, path, tally):
                writer.add(*row)
                rows_per_language[row[2]] += 1
                if tally.records % 500_000 == 0 and tally.records != logged:
                    logged = tally.records
                    log.info("%s: %d records read, %d skipped", source, tally.records, sum(bad.values()))
        except READ_ERRORS as err:
            # the rest of the input is unreadable: a partial corpus must not pass for the whole one
            unit = RECORD_UNIT.get(spec["format"], "line")
            raise ValueError(f"{path}: input ends early or is corrupt after {unit} {tally.lineno} "
                             f"({type(err).__name__}: {err}); no output written") from err
        n_records = tally.records
        unit = RECORD_UNIT.get(spec["format"], "line")
        if not n_records:
            # an empty corpus is a wrong input (an empty download, another encoding, a wrong format
            # or column), never a result
            raise ValueError(f"{path}: no usable record in this {spec['format']} input of source {source}: "
                             + (f"all {sum(bad.values())} skipped: {skip_summary(bad, examples, unit)}"
                                if bad else "it holds no record at all")
                             + (f"; `where` filtered out {sum(filtered.values())} ({dict(filtered)})" if filtered else "")
                             + "; no output written")
        for reason, count in bad.items():
            log.warning("%s: %s: skipped %d %s(s) as %s, e.g. %s", source, path, count, unit, reason,
                        "; ".join(f"{unit} {e['line']}" + (f": {e['detail']}" if e["detail"] else "")
                                  for e in examples[reason][:3]))
        writer.flush()
        report = {
            "source": source,
            "input": str(path),
            "format": spec["format"],
            "records": n_records,
            "rows_per_language": dict(rows_per_language),
            "skipped": dict(bad),
            "skipped_total": sum(bad.values()),
            "skipped_examples": examples,
            # rows a `where` filter left out, per column (not bad lines: never in `skipped`)
            "filtered": dict(filtered),
            "filtered_total": sum(filtered.values()),
            "shard_rows": shard_rows,
            "shards": writer.shards,
        }
        write_json(tmp / "report.json", report)
        if report_path:
            write_json(report_path, report)
    log.info("%s: %d records, %d rows in %d shards; skipped %s; filtered out %s", source, n_records,
             sum(rows_per_language.values()), len(writer.shards), dict(bad) or "none", dict(filtered) or "none")
    return report


# ---- the jobs of rules/ingest.smk (workflow_scripts/jobs.py) ----
def run_ingest(job) -> None:
    # keys sorted, as the JSON param gave them before: `columns` orders each record's languages
    spec = sorted_keys(job.params.spec)
    ingest(spec, job.wildcards.source, job.input[0], job.output.shards, job.params.shard_rows,
           setup_logging(name="ingest"), job.output.report)
