"""The items behind a number: on hand-made per-item files of two models, the disagreement page
lists the 20 items with the largest |score A - score B| (ties by item id), with their texts."""
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from workflow_scripts.disagreements import items_module, run_disagreements, top_disagreements
from workflow_scripts.jobs import make_job


def triplet_files(tmp_path, model: str, margins: dict[int, float]) -> dict:
    """A triplets dataset's files for one model: margin cos(S, S+) - cos(S, S*) per triplet id."""
    from workflow_scripts.triplets.items import item_files
    files = item_files(str(tmp_path), {}, "toy", model)
    ids = sorted(margins)
    (tmp_path / "triplets" / "toy" / model).mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"id": pl.Series(ids, dtype=pl.UInt64), "s": [f"s{i}" for i in ids],
                  "s_plus": [f"plus{i}" for i in ids], "s_star": [f"star{i}" for i in ids],
                  "source": ["hand"] * len(ids), "rule": ["r"] * len(ids)}).write_parquet(files["triplets"])
    sim_plus = np.full(len(ids), 0.5)
    pl.DataFrame({"id": pl.Series(ids, dtype=pl.UInt64), "sim_s_splus": sim_plus,
                  "sim_s_sstar": sim_plus - np.array([margins[i] for i in ids]),
                  "sim_splus_sstar": np.zeros(len(ids)),
                  "correct": [margins[i] > 0 for i in ids]}).write_parquet(files["scores"])
    return files


def test_the_twenty_largest_differences_with_their_texts(tmp_path):
    # 30 triplets; model b's margin is 0 everywhere, model a's is i/100 for triplet i (ids 10..39),
    # except: triplet 12 is undefined for a (NaN), and triplets 20 and 21 tie with 25 (|diff| 0.25)
    a = {i: i / 100 for i in range(10, 40)}
    a[12] = float("nan")
    a[20], a[21] = 0.25, -0.25
    b = {i: 0.0 for i in range(10, 40)}
    files_a = triplet_files(tmp_path, "a", a)
    files_b = triplet_files(tmp_path, "b", b)
    out, page = tmp_path / "d.csv", tmp_path / "d.html"
    run_disagreements(make_job(input=sorted({*files_a.values(), *files_b.values()}),
                               output={"table": str(out), "page": str(page)},
                               params={"item_files": {"a": files_a, "b": files_b}, "pairs": [["a", "b"]]},
                               wildcards={"probe": "triplets", "dataset": "toy"}))
    table = pl.read_csv(out, schema_overrides={"item_id": pl.Utf8})
    # by |diff|: 39..26 (0.39..0.26), the three-way tie at 0.25 in id order (20, 21, 25), then 24, 23, 22
    expected = [str(i) for i in range(39, 25, -1)] + ["20", "21", "25"] + ["24", "23", "22"]
    assert table["item_id"].to_list() == expected
    assert table["rank"].to_list() == list(range(1, 21))
    row = table.filter(pl.col("item_id") == "21").row(0, named=True)
    assert (row["s"], row["s_plus"], row["s_star"]) == ("s21", "plus21", "star21")
    assert row["difference"] == pytest.approx(-0.25) and row["correct_a"] is False and row["correct_b"] is False
    assert "12" not in table["item_id"].to_list()  # undefined for a: never listed
    html = page.read_text()
    assert "a vs b" in html and "plus39" in html and "cos(S, S+) - cos(S, S*)" in html


def test_ties_break_by_item_id_and_only_shared_items_count():
    a = pl.DataFrame({"item_id": ["x", "c", "b", "a", "e"], "text": ["tx", "tc", "tb", "ta", "te"],
                      "score": [0.0, 1.0, 1.0, 1.0, 0.5]})
    b = pl.DataFrame({"item_id": ["a", "b", "c", "y", "e"], "score": [0.0, 0.0, 0.0, 5.0, 0.5]})
    top = top_disagreements(a, b, top=2)
    assert top["item_id"].to_list() == ["a", "b"]
    assert top["text"].to_list() == ["ta", "tb"]
    # equal scores are no disagreement: fewer rows than asked for rather than filler
    assert top_disagreements(a, b, top=10)["item_id"].to_list() == ["a", "b", "c"]


def test_every_probe_with_stored_items_has_an_items_module():
    for probe in ("csc", "triplets", "montague", "retrieval", "settheory"):
        module = items_module(probe)
        assert module is not None and callable(module.read_items) and module.SCORE
    assert items_module("domain_shift") is None  # its items are text pairs whose cosines are not kept


def test_numeric_ids_break_ties_as_text_at_the_edge_of_the_top():
    """A large probe's scores keep integer ids (read_scores): the top is the same as with text ids,
    ties at its edge included ("10" sorts before "9" as text)."""
    ids = [9, 10, 11, 3]
    a = pl.DataFrame({"item_id": pl.Series(ids, dtype=pl.UInt64), "score": [0.5, 0.5, 0.9, 0.5]})
    b = pl.DataFrame({"item_id": pl.Series(ids, dtype=pl.UInt64), "score": [0.0, 0.0, 0.0, 0.0]})
    as_text = [f.with_columns(pl.col("item_id").cast(pl.Utf8)) for f in (a, b)]
    for top in (1, 2, 3, 4, 10):
        got = top_disagreements(a, b, top)
        assert got["item_id"].dtype == pl.Utf8
        assert got.equals(top_disagreements(*as_text, top))
    assert top_disagreements(a, b, 2)["item_id"].to_list() == ["11", "10"]


def test_csc_disagreements_read_texts_only_for_the_listed_items(tmp_path):
    """CSC's scores are read without texts and the texts of the listed items alone afterwards; the
    page is what reading every item with its texts gives."""
    from workflow_scripts.csc import items as csc_items
    from workflow_scripts.disagreements import disagreements, write
    rng = np.random.default_rng(3)
    n_orig, per = 30, 4
    (tmp_path / "corpora" / "toy").mkdir(parents=True)
    (tmp_path / "perturbations" / "toy").mkdir(parents=True)
    pl.DataFrame({"sentence_id": pl.Series(range(n_orig), dtype=pl.UInt64),
                  "text": [f"sentence {i}" for i in range(n_orig)]}).write_parquet(tmp_path / "corpora/toy/part-0.parquet")
    variant_ids = list(range(100, 100 + n_orig * per))
    originals = [v // per % n_orig for v in range(n_orig * per)]
    pl.DataFrame({"original_id": pl.Series(originals, dtype=pl.UInt64),
                  "variant_id": pl.Series(variant_ids, dtype=pl.UInt64), "term": ["t"] * len(variant_ids),
                  "text": [f"variant {v}" for v in variant_ids]}).write_parquet(tmp_path / "perturbations/toy/part-0.parquet")
    files = {}
    for m in ("a", "b", "c"):
        files[m] = csc_items.item_files(str(tmp_path), {}, "toy", m)
        Path(files[m]["scores"]).parent.mkdir(parents=True)
        scores = np.round(rng.random(len(variant_ids)), 1)  # coarse: many ties
        pl.DataFrame({"original_id": pl.Series(originals, dtype=pl.UInt64),
                      "variant_id": pl.Series(variant_ids, dtype=pl.UInt64), "kind": ["insertion"] * len(variant_ids),
                      "similarity": scores}).write_parquet(files[m]["scores"])
    pairs = [("a", "b"), ("c", "a")]
    import logging
    got = write("csc", "toy", files, pairs, str(tmp_path / "d.csv"), str(tmp_path / "d.html"), 5,
                logging.getLogger("t"))
    full = disagreements({m: csc_items.read_items(f) for m, f in files.items()}, pairs, 5)
    assert got.equals(full) and got.height == 10
    row = got.row(0, named=True)
    assert row["variant"] == f"variant {row['item_id']}"
    assert row["original"] == f"sentence {(int(row['item_id']) - 100) // per % n_orig}"
