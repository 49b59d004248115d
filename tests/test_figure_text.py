"""The shared figure-with-interval text of the probes' tables, against hand-written strings."""
import math

from workflow_scripts.figure_text import interval_text


def test_a_share_with_its_interval():
    assert interval_text(0.934, 0.9, 0.951) == "0.93 [0.90, 0.95]"


def test_a_percentage_with_bounds_of_one_decimal():
    assert interval_text(0.97423, 0.9691, 0.9779, digits=2, bound_digits=1, scale=100, suffix="%") == \
        "97.42% [96.9, 97.8]"


def test_the_interval_is_left_out_where_a_bound_is_missing_or_not_finite():
    assert interval_text(0.5, None, 0.6) == "0.50"
    assert interval_text(0.5, math.nan, math.nan, scale=100, suffix="%") == "50.00%"
    assert interval_text(0.5, 0.4, math.inf) == "0.50"


def test_no_value_gives_the_missing_text():
    assert interval_text(None) == "undefined" and interval_text(math.nan, 0.1, 0.2) == "undefined"
    assert interval_text(math.nan, missing="") == ""
