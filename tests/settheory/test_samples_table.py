"""The default run's hand-written sample set, resources/settheory/news_samples.tsv (README beside
it): enough windows, every text present and within the window limits, and every fusion a fusion by
the probe's own rules (no echo, no quality-gate rejection) that shares content words with both of its
inputs."""
import csv
import logging
from pathlib import Path

import pytest
import yaml

from workflow_scripts.settheory import samples as S

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "resources" / "settheory" / "news_samples.tsv"
FUSIONS = (("S1", "previous", "S0"), ("S2", "S0", "next"))


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    with TABLE.open(newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def test_table_has_the_five_columns_and_enough_windows(rows):
    with TABLE.open(newline="") as f:
        assert next(csv.reader(f, delimiter="\t")) == list(S.SENTENCES)
    assert len(rows) >= 60
    assert all(r[s] and r[s].strip() == r[s] for r in rows for s in S.SENTENCES)


def test_windows_pass_the_built_sets_rules(rows):
    """The rules a built window obeys (samples.candidate_windows): 4..60 words, neighbours distinct."""
    low, high = S.DEFAULT_SET["min_words"], S.DEFAULT_SET["max_words"]
    for r in rows:
        assert all(low <= len(r[s].split()) <= high for s in S.SENTENCES), r
        keys = [S.alnum(r[s]) for s in ("previous", "S0", "next")]
        assert len(set(keys)) == 3, r
    assert len({tuple(r[s] for s in S.SENTENCES) for r in rows}) == len(rows)


def test_every_fusion_fuses(rows):
    """Not an input, not the inputs glued, no echo, no gate rule; content words of both inputs."""
    for r in rows:
        for fusion, first, second in FUSIONS:
            text, a, b = r[fusion], r[first], r[second]
            assert text not in (a, b, f"{a} {b}", f"{b} {a}"), (fusion, r)
            assert S.echo_reason(text, a, b) is None, (fusion, r)
            assert S.gate_reasons(S.gate_measures(text, a, b), S.GATE_DEFAULTS) == [], (fusion, r)
            own = set(S.content_words(S.words(text)))
            for source in (a, b):
                assert own & set(S.content_words(S.words(source))), (fusion, source)


def test_default_config_imports_the_table_and_keeps_every_row(rows):
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    spec = config["settheory"]["datasets"]["news"]
    assert ROOT / spec["file"] == TABLE and "articles" not in spec
    frame, report = S.import_samples("news", {**spec, "file": str(TABLE)}, logging.getLogger("test"))
    counts = report["counts"]
    # every row read, none missing or repeated, both fusions of each accepted (nothing flagged)
    assert frame.height == counts["rows_read"] == len(rows)
    assert counts["fusions_ok"] == 2 * len(rows) and counts["fusions_rejected_gate"] == 0
    assert frame["s1_echo"].null_count() == frame["s2_echo"].null_count() == len(rows)
