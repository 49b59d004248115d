"""The OpenAI-compatible generator backend (generator.ChatAPIGenerator) against a real HTTP server on
127.0.0.1 that speaks the chat-completions protocol (tests/chat_server.py): fusions, retries after a
429, failure after 500s and after timeouts (the error names the endpoint and the status), a job killed
mid-generation and a resume that asks for no answered prompt again, and the API key kept out of
everything written."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chat_server import ChatServer, fuse
from workflow_scripts import generator as G

ROOT = Path(__file__).resolve().parents[1]
PROMPT = {"system": "Fuse two sentences.", "shots": [["Sentence 1: A.\nSentence 2: B.", "A and B."]],
          "user": "Sentence 1: {first}\nSentence 2: {second}"}
ITEMS = [{"first": f"The ferry {i} left the harbour at noon.", "second": f"It carried {i} passengers to the island."}
         for i in range(6)]
KEY = "sk-test-5f1c9e0b7a2d4c68"


def spec(server, **more):
    return {"backend": "openai", "base_url": server.base_url, "model": "tiny-fuser", "api_key_env": "FUSIONS_TEST_KEY",
            "concurrency": 2, "timeout_s": 5, "retries": 2, "backoff_s": 0.01, **more}


def user_of(item):
    return PROMPT["user"].format(**item)


@pytest.fixture
def server():
    with ChatServer() as s:
        yield s


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("FUSIONS_TEST_KEY", KEY)


def test_fusions_are_generated_once_and_then_read_from_the_cache(server, tmp_path, log):
    cache = tmp_path / "gen.jsonl"
    gen = G.make_generator(spec(server), log=log, cache_path=str(cache), name="served")
    assert isinstance(gen, G.ChatAPIGenerator)
    records = gen.generate_records(PROMPT, ITEMS + ITEMS[:1])  # a repeated item: one request
    assert [r["text"] for r in records] == [fuse(user_of(it)) for it in ITEMS + ITEMS[:1]]
    assert all(r["finished"] for r in records)
    assert sum(server.received.values()) == len(ITEMS) and set(server.received.values()) == {1}
    assert set(server.auth) == {f"Bearer {KEY}"}  # the key is sent, in the header
    assert gen.stats["generated"] == len(ITEMS) and gen.stats["cached"] == 0
    again = G.make_generator(spec(server, concurrency=1, timeout_s=1, retries=0), log=log, cache_path=str(cache))
    assert again.generate(PROMPT, ITEMS) == [r["text"] for r in records[:-1]]  # how it runs: not in the key
    assert sum(server.received.values()) == len(ITEMS) and again.stats["cached"] == len(ITEMS)
    # what decides the answers is in the key: another temperature asks again
    other = G.make_generator(spec(server, temperature=0.7), cache_path=str(cache))
    other.generate(PROMPT, ITEMS[:1])
    assert server.received[user_of(ITEMS[0])] == 2
    assert G.spec_digest(spec(server)) != G.spec_digest(spec(server, temperature=0.7))
    assert G.spec_digest(spec(server)) == G.spec_digest({**spec(server), "base_url": server.base_url + "/"})


def test_a_429_is_retried(server, tmp_path, log):
    server.script = ["429", "503"]
    gen = G.make_generator(spec(server, concurrency=1), log=log, cache_path=str(tmp_path / "c.jsonl"))
    assert gen.generate(PROMPT, ITEMS[:1]) == [fuse(user_of(ITEMS[0]))]
    assert server.received[user_of(ITEMS[0])] == 3 and gen.stats["retried"] == 2


def test_500s_fail_naming_the_endpoint_and_status(server, tmp_path):
    server.script = ["500"] * 3
    cache = tmp_path / "c.jsonl"
    gen = G.make_generator(spec(server, concurrency=1, retries=2), cache_path=str(cache), name="served")
    with pytest.raises(G.EndpointError) as err:
        gen.generate(PROMPT, ITEMS[:1])
    assert f"{server.base_url}/chat/completions" in str(err.value) and "HTTP 500" in str(err.value)
    assert "3 attempt(s)" in str(err.value) and "served" in str(err.value)
    assert not cache.exists() or cache.read_text() == ""


def test_a_client_error_is_not_retried(server, tmp_path):
    server.script = ["401"]
    gen = G.make_generator(spec(server, concurrency=1), cache_path=str(tmp_path / "c.jsonl"))
    with pytest.raises(G.EndpointError, match="401.*not retried"):
        gen.generate(PROMPT, ITEMS[:1])
    assert sum(server.received.values()) == 1


def test_a_timeout_is_retried_then_fails(server, tmp_path):
    server.script = [("sleep", 2.0), ("sleep", 2.0)]
    gen = G.make_generator(spec(server, concurrency=1, timeout_s=0.2, retries=1), cache_path=str(tmp_path / "c.jsonl"))
    with pytest.raises(G.EndpointError, match="timeout_s=0.2") as err:
        gen.generate(PROMPT, ITEMS[:1])
    assert server.base_url in str(err.value)
    server.script = [("sleep", 2.0)]  # once: the retry answers
    assert gen.generate(PROMPT, ITEMS[:1]) == [fuse(user_of(ITEMS[0]))]


def test_a_missing_key_variable_is_named(monkeypatch, server):
    monkeypatch.delenv("FUSIONS_TEST_KEY")
    problem = G.api_key_problem("served", spec(server))
    assert "FUSIONS_TEST_KEY" in problem and "served" in problem
    assert G.api_key_problem("served", {k: v for k, v in spec(server).items() if k != "api_key_env"}) is None
    from workflow_scripts.settheory.probe import check
    config = {"articles": {"a": {}}, "models": {},
              "settheory": {"generators": {"served": spec(server)},
                            "datasets": {"n": {"articles": "a", "generator": "served", "min_words": 4, "max_words": 60}},
                            "filter": {"encoders": []}, "fixed_bounds": {}}}
    problems = check(config)
    assert len(problems) == 1 and "settheory.generators.served.api_key_env" in problems[0]
    assert "FUSIONS_TEST_KEY" in problems[0]


CHILD = """
import json, sys
from workflow_scripts import generator as G
from workflow_scripts.common import setup_logging
spec, items, prompt, cache = json.loads(sys.argv[1])
G.make_generator(spec, log=setup_logging(None, "child"), cache_path=cache).generate(prompt, items)
"""


def test_a_killed_run_resumes_without_asking_twice(server, tmp_path):
    cache = tmp_path / "gen.jsonl"
    server.script = [None, None, None, "hang"]  # the 4th request never gets an answer
    args = json.dumps([spec(server, concurrency=1), ITEMS, PROMPT, str(cache)])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, args], cwd=ROOT, env=env, stderr=subprocess.PIPE)
    try:
        assert server.hanging.wait(60), "the child never reached the 4th request"
        lines = cache.read_text().splitlines()
        assert len(lines) == 3  # every answer is in the cache as soon as it came
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    server.release.set()
    time.sleep(0.05)
    answered_before = dict(server.answered)
    gen = G.make_generator(spec(server, concurrency=3), cache_path=str(cache))
    texts = gen.generate(PROMPT, ITEMS)
    assert texts == [fuse(user_of(it)) for it in ITEMS]
    assert gen.stats["cached"] == 3 and gen.stats["generated"] == 3
    assert sum(answered_before.values()) == 3 and set(server.answered.values()) == {1}  # none answered twice
    # only the prompt cut off by the kill was sent again
    assert sorted(server.received.values()) == [1] * 5 + [2]


def run_bounded(fn, seconds):
    """fn() in a thread: (result or exception, seconds taken), or None if it is still running after
    `seconds` (the test fails instead of hanging)."""
    import threading
    out = {}

    def target():
        try:
            out["value"] = fn()
        except Exception as err:  # noqa: BLE001 - handed to the test
            out["value"] = err

    start = time.monotonic()
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    return None if thread.is_alive() else (out["value"], time.monotonic() - start)


def test_timeout_s_bounds_the_whole_request_not_each_read(server, tmp_path):
    # a byte every 0.5 s: each read is well within 2 s, the request never ends
    server.script = [("trickle", 0.5)]
    gen = G.make_generator(spec(server, concurrency=1, timeout_s=2, retries=0), cache_path=str(tmp_path / "c.jsonl"),
                           name="served")
    done = run_bounded(lambda: gen.generate(PROMPT, ITEMS[:1]), 10)
    server.release.set()  # ends the trickle either way
    assert done is not None, "the request outlived timeout_s=2 by 8 s"
    err, seconds = done
    assert isinstance(err, G.EndpointError) and 1.9 <= seconds <= 4.5
    assert "timeout_s=2" in str(err) and f"{server.base_url}/chat/completions" in str(err) and "served" in str(err)


def test_a_trickled_answer_is_retried_within_its_own_deadline(server, tmp_path):
    server.script = [("trickle", 0.3)]  # then answered normally
    gen = G.make_generator(spec(server, concurrency=1, timeout_s=1, retries=1), cache_path=str(tmp_path / "c.jsonl"))
    done = run_bounded(lambda: gen.generate(PROMPT, ITEMS[:1]), 10)
    server.release.set()
    assert done is not None and done[0] == [fuse(user_of(ITEMS[0]))] and gen.stats["retried"] == 1


@pytest.mark.parametrize("size,read", [(2_000_000, False), (5_000, True)])
def test_an_over_long_answer_is_cut_flagged_and_cached(server, tmp_path, size, read):
    """A 2 MB answer (its body past what is read) and one just past max_answer_chars: a `too_long`
    record, never a failure, and a rerun reads it from the cache."""
    server.script = [("long", size)]
    cache = tmp_path / "c.jsonl"
    gen = G.make_generator(spec(server, concurrency=1, max_answer_chars=4000), cache_path=str(cache))
    [rec] = gen.generate_records(PROMPT, ITEMS[:1])
    assert rec["too_long"] and rec["finished"]
    assert len(rec["raw"]) == (4000 if read else 0) and len(cache.read_text()) < 10_000
    again = G.make_generator(spec(server, concurrency=1, max_answer_chars=4000), cache_path=str(cache))
    assert again.generate_records(PROMPT, ITEMS[:1])[0]["too_long"] and sum(server.received.values()) == 1
    # the cap decides what is recorded: another cap asks again
    other = G.make_generator(spec(server, concurrency=1, max_answer_chars=8000), cache_path=str(cache))
    assert not other.generate_records(PROMPT, ITEMS[:1])[0].get("too_long")


@pytest.mark.parametrize("status", [401, 503])
def test_a_reply_echoing_the_key_is_redacted(server, tmp_path, status):
    """A 401 (failed at once) or a 503 (logged at each retry, then failed) whose body repeats the
    Authorization header: neither the error nor the log holds the key."""
    import logging
    server.script = [("echo_auth", status)] * 2
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    log = logging.getLogger("redaction-test")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    gen = G.make_generator(spec(server, concurrency=1, retries=1), log=log, cache_path=str(tmp_path / "c.jsonl"))
    with pytest.raises(G.EndpointError) as err:
        gen.generate(PROMPT, ITEMS[:1])
    text = str(err.value) + "\n".join(r.getMessage() for r in records)
    assert f"HTTP {status}" in str(err.value) and "Bearer [redacted]" in str(err.value)
    assert KEY not in text and KEY[3:12] not in text
    assert len(records) == (1 if status == 503 else 0)


def test_a_key_cut_by_the_200_character_excerpt_is_not_left_in_part(server, tmp_path, monkeypatch):
    long_key = "sk-" + "0123456789abcdef" * 20  # longer than the excerpt of the reply
    monkeypatch.setenv("LONG_TEST_KEY", long_key)
    server.script = [("echo_auth", 401)]
    gen = G.make_generator(spec(server, concurrency=1, api_key_env="LONG_TEST_KEY"), cache_path=str(tmp_path / "c"))
    with pytest.raises(G.EndpointError) as err:
        gen.generate(PROMPT, ITEMS[:1])
    assert "0123456789abcdef" not in str(err.value) and "[redacted]" in str(err.value)


def test_redaction_covers_a_bearer_token_that_is_not_the_key(server):
    gen = G.make_generator(spec(server))
    assert gen.redact(f"token {KEY} and 'Authorization: bearer abc.def-1'") == \
        "token [redacted] and 'Authorization: bearer [redacted]'"


def test_the_endpoint_is_part_of_the_cache_key(tmp_path):
    """Two servers under one `model` name may serve different weights: each has its own cache entries,
    unless a shared `cache_tag` says they are one (a server that moved)."""
    cache = tmp_path / "gen.jsonl"
    with ChatServer(answers={user_of(ITEMS[0]): "The first server's fusion."}) as one, \
            ChatServer(answers={user_of(ITEMS[0]): "The second server's fusion."}) as two:
        assert G.make_generator(spec(one), cache_path=str(cache)).generate(PROMPT, ITEMS[:1]) == \
            ["The first server's fusion."]
        second = G.make_generator(spec(two), cache_path=str(cache))
        assert second.generate(PROMPT, ITEMS[:1]) == ["The second server's fusion."]
        assert second.describe()["settings"]["endpoint"] == two.base_url  # in the samples' provenance
        assert len(cache.read_text().splitlines()) == 2 and sum(two.received.values()) == 1
        assert G.spec_digest(spec(one)) != G.spec_digest(spec(two))
        # one cache_tag: the second server's generator reads what the first one answered
        tagged = G.make_generator(spec(one, cache_tag="lab-qwen"), cache_path=str(cache))
        assert tagged.generate(PROMPT, ITEMS[:1]) == ["The first server's fusion."]
        moved = G.make_generator(spec(two, cache_tag="lab-qwen"), cache_path=str(cache))
        assert moved.generate(PROMPT, ITEMS[:1]) == ["The first server's fusion."]
        assert moved.stats["cached"] == 1 and sum(two.received.values()) == 1
        assert G.spec_digest(spec(one, cache_tag="lab-qwen")) == G.spec_digest(spec(two, cache_tag="lab-qwen"))
        assert "cache_tag" not in json.dumps(moved._body(PROMPT, ITEMS[0])) and \
            "endpoint" not in moved._body(PROMPT, ITEMS[0])  # not sent to the server
