"""Row filters at ingestion (`where: {column: [values]}` on tsv and csv sources): a row is kept only
when every named column's value is listed; rows filtered out are counted per column (the first
column, in `where` order, that rejects the row) and are never bad lines."""
import csv

import polars as pl
import pytest

from conftest import requires_shared, shared_data
from workflow_scripts.config import ConfigError, validate
from workflow_scripts.ingest import ingest


def texts(out_dir) -> list[str]:
    return sorted(pl.read_parquet(out_dir / "part-*.parquet")["text"].to_list())


def test_tsv_with_header_keeps_rows_whose_values_are_listed(tmp_path, log):
    tsv = tmp_path / "judged.tsv"
    tsv.write_text("en\tnl\tevaluation\trelease\n"
                   "A dog.\tEen hond.\tV\tv3\n"
                   "A cat.\tEen kat.\tE\tv3\n"          # evaluation not listed
                   "A cow.\tEen koe.\tF\tv7\n"          # evaluation listed, release not
                   "A pig.\tEen varken.\tA\tv7\n"       # both not listed: counted under evaluation (first)
                   "A hen.\tEen kip.\tV\tv6\tstray\n"   # extra field: a bad line, never a filtered one
                   "A rat.\t\tV\tv3\n"                  # kept by the filter, then empty: a bad line
                   "A bee.\tEen bij.\tF\tv3\n", encoding="utf-8")
    spec = {"format": "tsv", "header": True, "languages": ["en", "nl"], "columns": {"en": "en", "nl": "nl"},
            "where": {"evaluation": ["V", "F"], "release": ["v3"]}}
    report = ingest(spec, "judged", str(tsv), str(tmp_path / "o"), 100, log)
    assert report["records"] == 2
    assert report["filtered"] == {"evaluation": 2, "release": 1} and report["filtered_total"] == 3
    assert report["skipped"] == {"extra_field": 1, "empty": 1}
    assert texts(tmp_path / "o") == ["A bee.", "A dog.", "Een bij.", "Een hond."]
    # without a filter nothing is filtered: the report says so
    report = ingest({k: v for k, v in spec.items() if k != "where"}, "judged", str(tsv), str(tmp_path / "o2"), 100, log)
    assert report["records"] == 5 and report["filtered"] == {} and report["filtered_total"] == 0


def test_tsv_without_header_filters_by_index_and_csv_by_name(tmp_path, log):
    tsv = tmp_path / "scored.tsv"
    tsv.write_text("1\tEen hond.\tA dog.\n2\tEen kat.\tA cat.\n1\tEen koe.\n", encoding="utf-8")
    spec = {"format": "tsv", "languages": ["en", "nl"], "columns": {"en": 2, "nl": 1}, "where": {"0": [1]}}
    report = ingest(spec, "s", str(tsv), str(tmp_path / "o"), 100, log)
    assert (report["records"], report["filtered"], report["skipped"]) == (1, {"0": 1}, {"missing_field": 1})
    with pytest.raises(ValueError, match="no header: columns are indices"):
        ingest({**spec, "where": {"label": ["1"]}}, "s", str(tsv), str(tmp_path / "o1"), 100, log)
    data = tmp_path / "skills.csv"
    data.write_text('label,status\n"kennis, breed",released\nconcept,draft\n', encoding="utf-8")
    spec = {"format": "csv", "languages": ["nl"], "columns": {"nl": "label"}, "where": {"status": ["released"]}}
    report = ingest(spec, "c", str(data), str(tmp_path / "o2"), 100, log)
    assert (report["records"], report["filtered"], report["skipped_total"]) == (1, {"status": 1}, 0)
    assert texts(tmp_path / "o2") == ["kennis, breed"]
    with pytest.raises(ValueError, match=r"no column\(s\) \['state'\]"):
        ingest({**spec, "where": {"state": ["x"]}}, "c", str(data), str(tmp_path / "o3"), 100, log)


def test_all_rows_filtered_is_an_error_naming_the_filter(tmp_path, log):
    tsv = tmp_path / "t.tsv"
    tsv.write_text("en\tok\nA dog.\tno\n", encoding="utf-8")
    spec = {"format": "tsv", "header": True, "languages": ["en"], "columns": {"en": "en"}, "where": {"ok": ["yes"]}}
    with pytest.raises(ValueError, match=r"`where` filtered out 1 \(\{'ok': 1\}\)"):
        ingest(spec, "t", str(tsv), str(tmp_path / "o"), 100, log)


def test_config_accepts_where_on_tsv_and_csv_only():
    def config(source: dict) -> dict:
        return {"seed": 0, "models": {"m": {"family": "tfidf"}}, "sources": {"s": {"path": "x", "languages": ["en"], **source}}}
    validate(config({"format": "tsv", "header": True, "columns": {"en": "en"}, "where": {"evaluation": ["V"]}}))
    with pytest.raises(ConfigError, match=r"`sources.s.where`: a lines source takes no row filters"):
        validate(config({"format": "lines", "where": {"0": ["V"]}}))
    with pytest.raises(ConfigError, match=r"`sources.s.where.evaluation`: 'evaluation' is a name"):
        validate(config({"format": "tsv", "where": {"evaluation": ["V"]}}))
    with pytest.raises(ConfigError, match=r"sources.s.where"):
        validate(config({"format": "tsv", "header": True, "columns": {"en": "en"}, "where": {"evaluation": "V"}}))


@requires_shared("en_nl_parallel/paracrawl_en_nl_human_eval.tsv")
def test_paracrawl_human_evaluation_valid_pairs(tmp_path, log):
    """The README's advice for clean parallel text, `evaluation == V`, applied at ingestion."""
    path = shared_data("en_nl_parallel", "paracrawl_en_nl_human_eval.tsv")
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    header, body = rows[0], rows[1:]
    assert len(body) == 3994  # the README's row count
    well_formed = [r for r in body if len(r) <= len(header)]
    not_v = sum(1 for r in well_formed if r[header.index("evaluation")] != "V")
    spec = {"format": "tsv", "header": True, "languages": ["en", "nl"], "columns": {"en": "en", "nl": "nl"},
            "where": {"evaluation": ["V"]}}
    report = ingest(spec, "paracrawl_v", str(path), str(tmp_path / "o"), 10_000, log)
    assert report["filtered"] == {"evaluation": not_v} and not_v > 0
    # every line is kept, filtered out or skipped as bad, once
    assert report["records"] + report["filtered_total"] + report["skipped_total"] == len(body)
    assert "evaluation" not in report["skipped"] and report["records"] > 500
