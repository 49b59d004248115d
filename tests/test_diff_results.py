"""tests/diff_results.py: byte for byte, or with the timing fields that jobs record set aside."""
import json

from diff_results import compare


def test_timings_aside_ignores_only_timing_fields(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for root, seconds, rss in ((a, 1.5, 100.0), (b, 2.5, 90.0)):
        (root / "reports").mkdir(parents=True)
        (root / "reports" / "x.json").write_text(json.dumps({"n": 3, "seconds": seconds, "run": {"peak_rss_mb": rss}}))
        (root / "tables").mkdir()
        (root / "tables" / "t.csv").write_text("model,value\nm,0.5\n")
    assert not compare(a, b)[0]
    same, message = compare(a, b, timings_aside=True)
    assert same and "timing fields aside" in message
    (b / "reports" / "x.json").write_text(json.dumps({"n": 4, "seconds": 2.5, "run": {"peak_rss_mb": 90.0}}))
    assert not compare(a, b, timings_aside=True)[0]  # a counted value still differs
    (b / "reports" / "x.json").write_text(json.dumps({"n": 3, "seconds": 2.5, "run": {"peak_rss_mb": 90.0}}))
    (b / "tables" / "t.csv").write_text("model,value\nm,0.6\n")
    same, message = compare(a, b, timings_aside=True)
    assert not same and "tables/t.csv" in message
