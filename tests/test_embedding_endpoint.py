"""Family openai_embeddings (embedding_api.py) against a real HTTP server on 127.0.0.1
(embeddings_server.py): the vectors, batching by a token budget, retries, the cache that a rerun and
a resumed job read, a wrong dimension refused, and the key kept out of files and messages."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from embeddings_server import EmbeddingsServer, toy_vector
from workflow_scripts.embed import embed_partition
from workflow_scripts.embedding_api import OpenAIEmbeddingsEncoder, estimated_tokens, token_batches
from workflow_scripts.endpoints import EndpointError
from workflow_scripts.vector_store import VectorStore
from test_embed import write_texts

ROOT = Path(__file__).resolve().parents[1]
TEXTS = ["The ferry left at noon.", "A cat sat on the mat.", "Nobody answered the phone.", "Rain fell all night.",
         "The shop is closed on Sundays.", "She did not take the train."]
KEY = "sk-test-0123456789abcdef"


def spec(server, **extra) -> dict:
    return {"family": "openai_embeddings", "base_url": server.base_url, "model": "toy-embed", "backoff_s": 0.0,
            **extra}


@pytest.fixture
def server():
    with EmbeddingsServer(dim=8) as s:
        yield s


def test_vectors_are_the_servers_for_the_text_as_sent_and_the_store_holds_them(server, tmp_path, log):
    files = [write_texts(tmp_path / "t.parquet", TEXTS + TEXTS[:2])]  # repeats: embedded once
    entry = spec(server, templates={"query": "query: {text}"})
    store_dir = tmp_path / "store"
    manifest = embed_partition("served", entry, "retrieval.tiny.query", 0, 1, files, str(store_dir), 1, log,
                               cache=str(tmp_path / "cache.jsonl"))
    store = VectorStore([str(store_dir)])
    from workflow_scripts.common import text_key
    got, _ = store.lookup(np.array([text_key(t) for t in TEXTS], dtype=np.uint64))
    want = np.array([toy_vector(f"query: {t}", 8) for t in TEXTS], dtype=np.float32)
    np.testing.assert_array_equal(got, want)  # the template applied, each vector in its text's row
    assert manifest["dim"] == 8 and manifest["text_form"] == {"role": "query", "template": "query: {text}"}
    assert manifest["endpoint"]["model"] == "toy-embed" and manifest["origin"].startswith("endpoint http://127.0.0.1")
    # each text sent once (plus the one probe that learns the dimension)
    assert sorted(server.texts_received()) == sorted(["dimension"] + [f"query: {t}" for t in TEXTS])


def test_token_budget_batches():
    texts = ["a" * 40, "b" * 40, "c" * 40, "d" * 400, "e"]  # 11, 11, 11, 101, 1 estimated tokens
    assert [estimated_tokens(t) for t in texts] == [11, 11, 11, 101, 1]
    assert token_batches(texts, batch_tokens=25, batch_size=10) == [[0, 1], [2], [3], [4]]  # the long one alone
    assert token_batches(texts, batch_tokens=1000, batch_size=2) == [[0, 1], [2, 3], [4]]


def test_requests_follow_the_token_budget_and_concurrency_bound(server, tmp_path):
    enc = OpenAIEmbeddingsEncoder(spec(server, dimensions=8, batch_tokens=16, concurrency=2), "served",
                                  cache_path=str(tmp_path / "c.jsonl"))
    out = enc.encode_texts(TEXTS)
    np.testing.assert_array_equal(out, np.array([toy_vector(t, 8) for t in TEXTS], np.float32))
    assert all(sum(estimated_tokens(t) for t in batch) <= 16 or len(batch) == 1 for batch in server.received)
    assert len(server.received) >= 3 and sorted(server.texts_received()) == sorted(TEXTS)


def test_429_and_5xx_are_retried_then_succeed(server, tmp_path, log):
    server.script = ["429", "503", "500"]
    enc = OpenAIEmbeddingsEncoder(spec(server, dimensions=8, concurrency=1, retries=3), "served", log,
                                  str(tmp_path / "c.jsonl"))
    out = enc.encode_texts(TEXTS[:3])
    np.testing.assert_array_equal(out, np.array([toy_vector(t, 8) for t in TEXTS[:3]], np.float32))
    assert len(server.received) == 4 and enc.api.stats["retried"] == 3


def test_the_wait_before_each_retry_is_the_backoff_or_the_servers_retry_after(server, tmp_path, log, records):
    """backoff_s, doubled after each attempt, unless the server sent Retry-After (at most 60 s; one
    that is no number of seconds >= 0 leaves the backoff)."""
    server.script = ["503", "500", ("retry_after", "7"), ("retry_after", "120"), ("retry_after", "-1"),
                     ("retry_after", "Wed, 21 Oct 2015 07:28:00 GMT")]
    enc = OpenAIEmbeddingsEncoder(spec(server, dimensions=8, concurrency=1, retries=6, backoff_s=0.5), "served", log,
                                  str(tmp_path / "c.jsonl"))
    waits = []
    enc.api.sleep = waits.append
    np.testing.assert_array_equal(enc.encode_texts(["x"]), np.array([toy_vector("x", 8)], np.float32))
    assert waits == [0.5, 1.0, 7.0, 60.0, 8.0, 16.0]
    assert len(server.received) == 7 and enc.api.stats == {"requests": 1, "retried": 6}
    retried = [m for level, m in records if level == "WARNING"]
    assert [m.rsplit("; ", 1)[1] for m in retried] == [f"retry {n}/6" for n in range(1, 7)]
    assert retried[0] == f"{server.base_url}/embeddings: HTTP 503: " + \
        repr('{"error": {"message": "scripted 503"}}') + "; retry 1/6"
    # no retries: the first failure is the last
    server.script = ["503"]
    enc = OpenAIEmbeddingsEncoder(spec(server, dimensions=8, retries=0), "served", cache_path=str(tmp_path / "d.jsonl"))
    enc.api.sleep = waits.append
    with pytest.raises(EndpointError, match=r"failed after 1 attempt\(s\); last: HTTP 503"):
        enc.encode_texts(["y"])
    assert len(waits) == 6


def test_retries_spent_name_the_endpoint_and_keep_the_key_out(server, tmp_path, monkeypatch):
    monkeypatch.setenv("EMB_KEY", KEY)
    server.script = ["500"] * 3
    enc = OpenAIEmbeddingsEncoder(spec(server, dimensions=8, retries=2, api_key_env="EMB_KEY"), "served",
                                  cache_path=str(tmp_path / "c.jsonl"))
    with pytest.raises(EndpointError) as err:
        enc.encode_texts(["x"])
    assert f"{server.base_url}/embeddings" in str(err.value) and "3 attempt(s)" in str(err.value)
    assert server.auth[-1] == f"Bearer {KEY}" and KEY not in str(err.value)
    assert KEY not in json.dumps(enc.manifest_fields())


def test_a_wrong_dimension_is_refused_naming_the_endpoint(server, tmp_path):
    server.script = [("dim", 5)]
    enc = OpenAIEmbeddingsEncoder(spec(server, dimensions=8), "served", cache_path=str(tmp_path / "c.jsonl"))
    with pytest.raises(EndpointError, match=r"model 'served': POST http://127\.0\.0\.1:\d+/v1/embeddings answered "
                                            r"vectors of 5 dimensions; the config says dimensions 8"):
        enc.encode_texts(TEXTS[:2])
    assert not (tmp_path / "c.jsonl").exists()  # nothing of the wrong size is cached


def test_a_rerun_and_a_new_probe_send_only_new_texts(server, tmp_path):
    cache = str(tmp_path / "c.jsonl")
    first = OpenAIEmbeddingsEncoder(spec(server, dimensions=8), "served", cache_path=cache).encode_texts(TEXTS[:4])
    assert len(server.texts_received()) == 4
    again = OpenAIEmbeddingsEncoder(spec(server, dimensions=8), "served", cache_path=cache)
    np.testing.assert_array_equal(again.encode_texts(TEXTS[:4]), first)
    assert len(server.texts_received()) == 4  # nothing sent
    again.encode_texts(TEXTS)  # a new probe sharing four texts
    assert server.texts_received()[4:] == TEXTS[4:]
    # another endpoint identity (or model, or dimensions) is another cache entry
    OpenAIEmbeddingsEncoder(spec(server, dimensions=8, cache_tag="elsewhere"), "served", cache_path=cache) \
        .encode_texts(TEXTS[:1])
    assert server.texts_received()[-1] == TEXTS[0]


KILLED_JOB = """
import sys
from workflow_scripts.embedding_api import OpenAIEmbeddingsEncoder
spec = {"family": "openai_embeddings", "base_url": sys.argv[1], "model": "toy-embed", "dimensions": 8,
        "concurrency": 1, "batch_size": 2, "timeout_s": 60}
OpenAIEmbeddingsEncoder(spec, "served", cache_path=sys.argv[2]).encode_texts(sys.argv[3:])
"""


def test_a_job_killed_mid_run_resumes_sending_only_unanswered_batches(server, tmp_path):
    cache = tmp_path / "c.jsonl"
    server.script = [("dim", 8), ("dim", 8), "hang"]  # two batches of two answered, the third never
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_JOB, server.base_url, str(cache), *TEXTS], env=env,
                            start_new_session=True)
    try:
        assert server.hanging.wait(60), "the third request never came"
        time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert len(server.answered) == 4
    lines = cache.read_text().splitlines()
    assert len(lines) == 4  # the two answered batches, kept as they came
    server.received.clear()
    enc = OpenAIEmbeddingsEncoder({**spec(server, dimensions=8), "batch_size": 2}, "served", cache_path=str(cache))
    out = enc.encode_texts(TEXTS)
    assert server.texts_received() == TEXTS[4:]  # only the batches never answered
    np.testing.assert_array_equal(out, np.array([toy_vector(t, 8) for t in TEXTS], np.float32))


def test_schema_and_config_checks(server, monkeypatch):
    from workflow_scripts.encoders import family_of
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    entry = spec(server, api_key_env="NO_SUCH_KEY_VAR")
    problems = family_of(entry).config_problems("served", entry)
    assert problems and "NO_SUCH_KEY_VAR" in problems[0] and "models.served.api_key_env" in problems[0]
    monkeypatch.setenv("NO_SUCH_KEY_VAR", KEY)
    assert family_of(entry).config_problems("served", entry) == []


# ---- a served model's run settings reach the workflow's embedding job (rules/embed.smk) ----------

SLASHED_KEY = "sk-test/0123+456=abc"  # `/`, `+`, `=`: its JSON-escaped and URL-encoded forms differ from it


def served_study(tmp_path, server, **settings) -> tuple[Path, str]:
    """A retrieval-only study of the served model on the shipped 45-document BEIR set: (config, the
    store the embedding job writes)."""
    from workflow_runner import write_config
    config = {"seed": 1, "embedding_partitions": 1, "results": str(tmp_path / "res"),
              "models": {"served": {"family": "openai_embeddings", "base_url": server.base_url, "model": "toy-embed",
                                    "dimensions": 8, "api_key_env": "EMB_KEY", **settings}},
              "retrieval": {"datasets": {"t": {"kind": "beir", "path": str(ROOT / "resources/retrieval/telecom_qa")}}}}
    return write_config(tmp_path, config), str(tmp_path / "res/embeddings/served/retrieval.t/part-000")


def files_holding(root: Path, secret: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_a_served_models_run_settings_reach_its_embedding_job(server, tmp_path):
    """retries, backoff_s, timeout_s, concurrency and batch_tokens of the model's entry decide how the
    workflow's job sends its requests (they were dropped with the spec's run settings: the defaults,
    4 retries, ran instead), and the key of `api_key_env` arrives as a bearer token on every request,
    in no file and no log."""
    from workflow_runner import snakemake
    env = {**os.environ, "EMB_KEY": SLASHED_KEY}
    settings = {"retries": 2, "backoff_s": 0.2, "timeout_s": 1.5, "batch_tokens": 60}
    config, store = served_study(tmp_path, server, concurrency=1, **settings)
    server.script = ["500"] * 3  # one more than retries: 2 allows
    failed = snakemake(tmp_path, config, store, check=False, env=env)
    assert failed.returncode != 0 and not os.path.exists(store)
    assert len(server.received) == 3, f"{len(server.received)} attempts, retries: 2 allows 3"
    log_text = (tmp_path / "res/logs/embed/served/retrieval.t/part-000.log").read_text()
    assert "retry 1/2" in log_text and "retry 2/2" in log_text and "failed after 3 attempt(s)" in log_text
    assert server.auth == [f"Bearer {SLASHED_KEY}"] * 3

    # the deadline: a request never answered is given up after timeout_s (1.5 s), then retried
    config, _ = served_study(tmp_path, server, concurrency=2, **settings)
    server.received.clear()
    server.script, server.delay_s = ["hang"], 0.3  # held answers: requests overlap up to `concurrency`
    started = time.monotonic()
    try:
        snakemake(tmp_path, config, store, env=env)
    finally:
        server.release.set()
    assert "no complete answer within timeout_s=1.5 s" in \
        (tmp_path / "res/logs/embed/served/retrieval.t/part-000.log").read_text()
    assert time.monotonic() - started < 55  # the default deadline (60 s) would still be waiting
    # batch_tokens: 60 estimated tokens per request at most (a longer text alone), 2 requests open at most
    assert all(sum(estimated_tokens(t) for t in batch) <= 60 or len(batch) == 1 for batch in server.received)
    assert len(server.received) > 4 and server.max_in_flight == 2
    assert set(server.auth) == {f"Bearer {SLASHED_KEY}"}
    manifest = json.loads(Path(store, "manifest.json").read_text())
    assert manifest["dim"] == 8 and manifest["endpoint"]["api_key_env"] == "EMB_KEY"  # the variable, not the key
    assert files_holding(tmp_path, SLASHED_KEY) == []  # logs, stores, caches, Snakemake's metadata


def test_run_settings_travel_as_resources_and_back():
    from workflow_scripts.encoders import job_resources, run_settings_of
    entry = {"family": "openai_embeddings", "base_url": "http://x/v1", "model": "m", "retries": 2, "backoff_s": 0.25,
             "timeout_s": 1.5, "concurrency": 3, "batch_tokens": 100, "api_key_env": "K", "max_answer_bytes": 4096}
    resources = job_resources(entry)
    # Snakemake rounds a float resource to an integer: seconds travel as milliseconds
    assert resources == {"api_retries": 2, "api_backoff_ms": 250, "api_timeout_ms": 1500, "api_concurrency": 3,
                         "api_batch_tokens": 100, "api_key_env": "K", "api_max_answer_bytes": 4096}
    assert run_settings_of({**resources, "mem_mb": 1000}) == {k: v for k, v in entry.items()
                                                              if k not in ("family", "base_url", "model")}
    assert job_resources({"family": "tfidf"}) == {} and run_settings_of({"batch_size": 32}) == {}


# ---- answers are checked before anything is cached ------------------------------------------------

def test_a_repeated_index_is_refused_and_nothing_is_cached(server, tmp_path):
    """Index 0 twice and the last index missing, the count right: accepted, one text got its
    neighbour's vector and the cache kept it for every rerun."""
    cache = tmp_path / "c.jsonl"
    server.script = ["repeat_index"]
    enc = OpenAIEmbeddingsEncoder(spec(server, dimensions=8, concurrency=1), "served", cache_path=str(cache))
    with pytest.raises(EndpointError, match=r"model 'served': POST http://127\.0\.0\.1:\d+/v1/embeddings answered the "
                                            r"indices \[0, 2, 1, 0\] for 4 texts; expected each of 0\.\.3 once"):
        enc.encode_texts(TEXTS[:4])
    assert not cache.exists()
    # an honest answer afterwards: every text its own vector
    out = OpenAIEmbeddingsEncoder(spec(server, dimensions=8), "served", cache_path=str(cache)).encode_texts(TEXTS[:4])
    np.testing.assert_array_equal(out, np.array([toy_vector(t, 8) for t in TEXTS[:4]], np.float32))


def test_an_answer_over_max_answer_bytes_is_refused_unread_naming_the_endpoint(server, tmp_path):
    cache = tmp_path / "c.jsonl"
    server.script = [("pad", 200_000)]
    enc = OpenAIEmbeddingsEncoder(spec(server, dimensions=8, max_answer_bytes=100_000), "served",
                                  cache_path=str(cache))
    with pytest.raises(EndpointError, match=r"model 'served': POST http://127\.0\.0\.1:\d+/v1/embeddings answered more "
                                            r"than max_answer_bytes=100,000 bytes for 2 texts"):
        enc.encode_texts(TEXTS[:2])
    assert not cache.exists() and len(server.received) == 1  # refused, not retried
    # the same answer within the default bound (32 MiB) is read
    server.script = [("pad", 200_000)]
    out = OpenAIEmbeddingsEncoder(spec(server, dimensions=8), "served", cache_path=str(cache)).encode_texts(TEXTS[:2])
    assert out.shape == (2, 8)


@pytest.mark.parametrize("status", [400, 503])
def test_a_key_echoed_plain_json_escaped_or_url_encoded_is_redacted(server, tmp_path, monkeypatch, caplog, status):
    import logging
    monkeypatch.setenv("EMB_KEY", SLASHED_KEY)
    server.script = [("echo", status)] * 2
    log = logging.getLogger("redaction-test-embed")
    enc = OpenAIEmbeddingsEncoder(spec(server, dimensions=8, retries=1, api_key_env="EMB_KEY"), "served", log,
                                  str(tmp_path / "c.jsonl"))
    with caplog.at_level(logging.WARNING, logger="redaction-test-embed"), pytest.raises(EndpointError) as err:
        enc.encode_texts(["x"])
    message = str(err.value) + caplog.text
    assert "[redacted]" in str(err.value) and f"HTTP {status}" in str(err.value)
    escaped = SLASHED_KEY.replace("/", "\\/")
    for form in (SLASHED_KEY, escaped, "sk-test%2F0123%2B456%3Dabc", "0123"):
        assert form not in message, form
