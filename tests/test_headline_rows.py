"""The one helper every probe's headline extractor builds its overview rows with (probes.headline_rows),
checked row by row against rows written out by hand."""
import polars as pl
import pytest

from workflow_scripts.probes import headline_rows, smallest

TABLE = pl.DataFrame({"model": ["a", "bow"], "set": ["q", "q"], "kind": ["x", "y"],
                      "share": [0.75, float("nan")], "share_full": [0.5, 1.0],
                      "lo": [0.6, None], "hi": [0.9, None], "n_left": [12.0, 7.0], "n_right": [10.0, 9.0],
                      "unit": ["groups", ""], "ok": [True, False]})


def test_rows_by_hand_with_dataset_statistic_and_extra_keys():
    rows = headline_rows(TABLE, lambda r: f"toy_{r['set']}", lambda r: f"toy {r['set']} share", "share", "lo", "hi",
                         n=smallest("n_left", "n_right"), interval=lambda r: "exact" if r["kind"] == "y" else "",
                         unit=lambda r: r["unit"], dataset="set", statistic=lambda r: f"share/{r['kind']}",
                         extra=lambda r: {"wrong_direction": not r["ok"]})
    # NaN and missing cells are no figure (None); n is the smaller count, an int; `unit` only where
    # the row names one; dataset, statistic and the extra keys come last, in that order
    assert [list(r.items()) for r in rows] == [
        [("model", "a"), ("column", "toy_q"), ("label", "toy q share"), ("value", 0.75), ("ci_low", 0.6),
         ("ci_high", 0.9), ("n", 10), ("interval", ""), ("unit", "groups"), ("dataset", "q"),
         ("statistic", "share/x"), ("wrong_direction", False)],
        [("model", "bow"), ("column", "toy_q"), ("label", "toy q share"), ("value", None), ("ci_low", None),
         ("ci_high", None), ("n", 7), ("interval", "exact"), ("dataset", "q"), ("statistic", "share/y"),
         ("wrong_direction", True)]]


def test_a_figure_the_row_chooses_and_the_plain_form():
    # the cells as functions of the row (retrieval: the full-data figure where the row says so)
    rows = headline_rows(TABLE, lambda r: "c", lambda r: "l", lambda r: r["share_full"] if r["kind"] == "y" else r["share"],
                         lambda r: 0.1, lambda r: "", n="n_left")
    assert [(r["value"], r["ci_low"], r["ci_high"], r["n"]) for r in rows] == [(0.75, 0.1, None, 12), (1.0, 0.1, None, 7)]
    # without n, interval, unit, dataset: n None, interval "", no unit, dataset or statistic keys
    plain = headline_rows(TABLE.head(1), lambda r: "c", lambda r: "l", "share", "lo", "hi")
    assert plain == [{"model": "a", "column": "c", "label": "l", "value": 0.75, "ci_low": 0.6, "ci_high": 0.9,
                      "n": None, "interval": ""}]
    with pytest.raises(KeyError):  # a figure's column the table lacks is an error, not an empty cell
        headline_rows(TABLE, lambda r: "c", lambda r: "l", "accuracy", "lo", "hi")
