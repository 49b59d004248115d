"""A set-theory study whose generator is an OpenAI-compatible endpoint (the fixture server of
tests/chat_server.py on 127.0.0.1), end to end through Snakemake with TF-IDF: the fusions come from
the endpoint, the gate's counts are in the sample set's report, its page of fusions is written, a
rerun with another encoder sends no request, and the API key appears in no file the run wrote."""
import json
import os
from pathlib import Path

import polars as pl
import pytest

from chat_server import ChatServer
from workflow_runner import snakemake, write_config
from workflow_scripts.settheory.samples import GATE_REASONS

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-fixture-9d3a71e5c0b24f86"

pytestmark = pytest.mark.requires_shared("nltk_data")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    base = tmp_path_factory.mktemp("settheory_endpoint")
    old = os.environ.get("FIXTURE_API_KEY")
    os.environ["FIXTURE_API_KEY"] = KEY  # the Snakemake subprocess and its jobs inherit it
    with ChatServer() as server:
        config = {
            "seed": 13, "embedding_partitions": 1, "results": "results",
            "models": {"tfidf": {"family": "tfidf"}},
            "articles": {"news": {"format": "story", "path": str(ROOT / "resources" / "settheory" / "articles")}},
            "settheory": {
                "generators": {"served": {"backend": "openai", "base_url": server.base_url, "model": "tiny-fuser",
                                          "api_key_env": "FIXTURE_API_KEY", "concurrency": 2, "timeout_s": 10,
                                          "retries": 1, "backoff_s": 0.01}},
                "datasets": {"news": {"articles": "news", "generator": "served", "max_articles": 3,
                                      "keep_echoes": True}},
                "filter": {"encoders": []}, "measures": ["cosine"], "bootstrap_b": 20},
        }
        run = base / "run"
        run.mkdir()
        # the probe's outputs, not the report (its own tests run it): a fast study
        snakemake(run, write_config(run, config), "results/tables/settheory_shares.csv")
        first = sum(server.received.values())
        # another encoder: its embeddings and measures are new, the samples (and the endpoint) are not
        config["models"]["hashing"] = {"family": "hashing", "dim": 32, "hash_bits": 10}
        again = snakemake(run, write_config(run, config), "results/settheory/news/hashing/measures.parquet",
                          check=False)
        yield {"run": run, "server": server, "first": first, "again": again,
               "second": sum(server.received.values()) - first}
    if old is None:
        os.environ.pop("FIXTURE_API_KEY", None)
    else:
        os.environ["FIXTURE_API_KEY"] = old


def test_the_endpoint_made_the_fusions(study):
    res = study["run"] / "results"
    samples = pl.read_parquet(res / "settheory" / "samples" / "news.parquet")
    report = json.loads((res / "reports" / "settheory" / "news.json").read_text())
    counts = report["counts"]
    assert samples.height == counts["windows_chosen"] == 3  # keep_echoes: every window stays
    assert counts["fusions_requested"] == 6 == counts["fusions_generated"] == study["first"]
    assert all(", and " in s for s in samples["S1"].to_list() + samples["S2"].to_list())  # the fixture's fusions
    assert report["generator"]["backend"] == "openai" and "chat/completions" in report["generator"]["origin"]
    assert set(study["server"].auth) == {f"Bearer {KEY}"}
    # the fixture glues the two sentences with ", and" and drops a few words: past the echo rule, the
    # gate calls it a near concatenation, flagged (keep_echoes) in s1_echo / s2_echo
    assert counts.get("fusions_ok") == 6 == counts["fusions_rejected_gate"] + counts.get("fusions_accepted", 0)
    assert report["gate_rejected"]["near_concatenation"] == counts["fusions_gate_near_concatenation"] >= 4
    assert set(samples["s1_echo"]) | set(samples["s2_echo"]) <= {*GATE_REASONS, None}
    page = pl.read_csv(res / "tables" / "settheory_fusions_news.csv")
    assert page.columns[:5] == ["status", "reason", "first", "second", "fusion"] and page.height == 6
    assert set(page["status"]) <= {"rejected: gate", "accepted"}
    assert (res / "tables" / "settheory_shares.csv").exists()


def test_a_new_encoder_does_not_call_the_endpoint(study):
    assert study["again"].returncode == 0, study["again"].stderr[-3000:]
    assert study["second"] == 0
    assert "rule settheory_samples:" not in study["again"].stdout + study["again"].stderr
    assert (study["run"] / "results" / "settheory" / "news" / "hashing" / "measures.parquet").exists()


def test_the_key_is_written_nowhere(study):
    leaks = [str(p) for p in study["run"].rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaks == []
    assert KEY not in study["again"].stdout + study["again"].stderr
