"""OpenAI-compatible HTTP endpoints, shared by the served generator (generator.ChatAPIGenerator:
/chat/completions) and the served encoder (embedding_api.OpenAIEmbeddingsEncoder: /embeddings).

- `Endpoint(url, spec, label)`: one POST route. `spec` gives `api_key_env` (the environment
  variable holding the key: read here, sent only in the Authorization header, never written to a
  file or a message), `timeout_s` (60: the whole request, connect to the last byte, not each read),
  `retries` (4) and `backoff_s` (1). `post(client, body)` retries (tenacity) a 408/409/425/429/5xx
  answer, a request past its deadline or a broken connection after backoff_s * 2^attempt seconds
  (or the server's Retry-After, at most 60 s), then raises EndpointError naming the label, the URL
  and the last problem. Every message passes `redact` first (a server may echo the Authorization header,
  the key plain, JSON-escaped or URL-encoded: `secret_forms`).
- `endpoint_identity(spec)`: which server answers (`cache_tag`, else `base_url`): part of every
  cache key, since two servers may serve different weights under one model name.
- `run_bounded(jobs, concurrency, on_result)`: at most `concurrency` requests open at once; each
  result is handed on as it arrives (so a killed job keeps every answer it had), and the first
  failure is raised once the finished ones are handed on.
"""
from __future__ import annotations

import json
import os
import re
import threading
import time
from typing import Callable, Iterable
from urllib.parse import quote, quote_plus

API_RUN_DEFAULTS = {"concurrency": 4, "timeout_s": 60.0, "retries": 4, "backoff_s": 1.0}
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
# "Bearer <token>" in any text that may be logged or raised (the key itself is replaced too)
BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',}\]]+")
MAX_RETRY_AFTER_S = 60.0


class EndpointError(RuntimeError):
    pass


class DeadlinePassed(Exception):
    """A request to an endpoint ran past its timeout_s."""


class _Retry(Exception):
    """An attempt that another may mend: `problem` for the messages, `retry_after` the seconds the
    server asked to wait (None: the backoff's)."""

    def __init__(self, problem: str, retry_after: float | None = None):
        super().__init__(problem)
        self.problem, self.retry_after = problem, retry_after


def retry_after(value) -> float | None:
    """The seconds of a Retry-After header, at most MAX_RETRY_AFTER_S; None where there is none or
    it is no number of seconds >= 0 (an HTTP date, a negative number, NaN: the backoff waits)."""
    try:
        seconds = float(value)
    except (ValueError, TypeError):
        return None
    return min(seconds, MAX_RETRY_AFTER_S) if seconds >= 0 else None


def secret_forms(secret: str) -> list[str]:
    """The spellings of `secret` a server may echo, longest first: plain, JSON-escaped (`/` as `\\/`
    too, and every non-ASCII character as \\uXXXX) and URL-encoded (path and form style)."""
    escaped = json.dumps(secret)[1:-1]
    forms = {secret, escaped, escaped.replace("/", "\\/"), json.dumps(secret, ensure_ascii=False)[1:-1],
             quote(secret, safe=""), quote(secret), quote_plus(secret)}
    return sorted((f for f in forms if f), key=len, reverse=True)


def endpoint_identity(spec: dict) -> str:
    """Which server answers: the user's `cache_tag` (for a server that moves, or one reached under
    several URLs), else `base_url` without a trailing slash."""
    return spec.get("cache_tag") or spec["base_url"].rstrip("/")


def api_key_problem(label: str, spec: dict, environ=None) -> str | None:
    """Why an endpoint entry cannot run here (its key variable is unset), or None. `label` names
    the entry, e.g. "generator 'x'" or "model 'y'"."""
    var = spec.get("api_key_env")
    environ = os.environ if environ is None else environ
    if var and not environ.get(var):
        return (f"{label} reads its API key from the environment variable {var} (`api_key_env`), "
                f"which is not set; export {var}=... before running, or drop `api_key_env` for an endpoint "
                "that needs no key")
    return None


def run_settings(spec: dict, defaults: dict | None = None) -> dict:
    """How requests run (concurrency, timeout_s, retries, backoff_s): the entry's, else the defaults."""
    defaults = {**API_RUN_DEFAULTS, **(defaults or {})}
    return {k: spec[k] if spec.get(k) is not None else v for k, v in defaults.items()}


class Endpoint:
    """One POST route of an OpenAI-compatible server (see the module's docstring)."""

    def __init__(self, url: str, spec: dict, label: str, log=None, max_body_bytes: int | None = None,
                 defaults: dict | None = None):
        self.url, self.spec, self.label, self.log = url, spec, label, log
        self.run = run_settings(spec, defaults)
        self.max_body_bytes = max_body_bytes
        self.stats = {"requests": 0, "retried": 0}
        self._lock = threading.Lock()
        self.sleep = time.sleep  # the wait between attempts (a test records it instead)

    def headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        var = self.spec.get("api_key_env")
        if var:
            key = os.environ.get(var)
            if not key:
                raise EndpointError(api_key_problem(self.label, self.spec, {}))
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def client(self):
        """An httpx client with the key's header; share it between threads (one connection pool)."""
        import logging

        import httpx
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request otherwise
        return httpx.Client(timeout=httpx.Timeout(float(self.run["timeout_s"])), headers=self.headers())

    def redact(self, text: str) -> str:
        """`text` without the API key in any spelling a server may echo it in (secret_forms): an error
        body may quote the Authorization header or the request."""
        var = self.spec.get("api_key_env")
        key = os.environ.get(var) if var else None
        if key:
            for form in secret_forms(key):
                text = text.replace(form, "[redacted]")
        return BEARER.sub(r"\1[redacted]", text)

    def fail(self, message: str) -> EndpointError:
        return EndpointError(self.redact(f"{self.label}: POST {self.url} {message}"))

    def post(self, client, body: dict) -> tuple[str, bool]:
        """(body text, whether it passed max_body_bytes and was left unread) of a 200 answer, retried
        on 408/409/425/429/5xx, timeouts and broken connections; `timeout_s` bounds each attempt as a
        whole (connect, send, every read)."""
        from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

        retries, backoff = int(self.run["retries"]), float(self.run["backoff_s"])
        with self._lock:
            self.stats["requests"] += 1
        # after the n-th attempt (tenacity counts from 1) backoff_s * 2^(n-1): 1 s, 2 s, 4 s, ...
        backoff_wait = wait_exponential(multiplier=backoff)

        def wait(state) -> float:  # the server's Retry-After where it sent one
            after = state.outcome.exception().retry_after
            return backoff_wait(state) if after is None else after

        def before_sleep(state) -> None:
            with self._lock:
                self.stats["retried"] += 1
            if self.log:
                problem = state.outcome.exception().problem
                self.log.warning("%s", self.redact(f"{self.url}: {problem}; retry {state.attempt_number}/{retries}"))

        retrying = Retrying(stop=stop_after_attempt(retries + 1), wait=wait, retry=retry_if_exception_type(_Retry),
                            before_sleep=before_sleep, sleep=self.sleep, reraise=True)
        try:
            return retrying(self._attempt, client, body)
        except _Retry as last:
            raise self.fail(f"failed after {retries + 1} attempt(s); last: {last.problem}") from None

    def _attempt(self, client, body: dict) -> tuple[str, bool]:
        """One attempt of `post`: its answer, EndpointError for an answer no retry mends, _Retry otherwise."""
        import httpx

        try:
            status, text, headers, over_size = self._post_once(client, body, float(self.run["timeout_s"]))
        except (httpx.TimeoutException, DeadlinePassed):
            raise _Retry(f"no complete answer within timeout_s={self.run['timeout_s']} s (the whole request)") from None
        except httpx.TransportError as err:
            raise _Retry(f"connection failed ({type(err).__name__})") from None
        if status == 200:
            return text, over_size
        problem = f"HTTP {status}: {self.redact(text)[:200]!r}"  # redacted before cut: no partial key
        if status not in RETRY_STATUS:
            raise self.fail(f"answered {problem} (not retried)")
        raise _Retry(problem, retry_after(headers.get("retry-after")))

    def _post_once(self, client, body: dict, timeout_s: float) -> tuple[int, str, dict, bool]:
        """(status, body text, headers, whether the body passed max_body_bytes and was left unread) of
        one POST that ends by `timeout_s` from now: httpx's timeouts bound each network operation, so
        a server that trickles bytes would hold a per-read timeout for ever; the deadline is checked
        after every chunk, and each operation may wait at most the time left when the request began."""
        import httpx

        deadline = time.monotonic() + timeout_s

        def time_left() -> float:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DeadlinePassed
            return left

        with client.stream("POST", self.url, json=body, timeout=httpx.Timeout(time_left())) as resp:
            chunks, size = [], 0
            for chunk in resp.iter_bytes():
                time_left()
                size += len(chunk)
                if self.max_body_bytes is not None and size > self.max_body_bytes:
                    return resp.status_code, b"".join(chunks).decode("utf-8", "replace"), resp.headers, True
                chunks.append(chunk)
            return resp.status_code, b"".join(chunks).decode("utf-8", "replace"), resp.headers, False


def run_bounded(jobs: Iterable[tuple[object, Callable[[], object]]], concurrency: int,
                on_result: Callable[[object, object], None]) -> None:
    """Run each (key, call) of `jobs` in a pool of `concurrency` threads, at most `concurrency` open at
    once, in the jobs' order; `on_result(key, result)` runs in this thread as each call ends. The
    first failure is raised after the results finished with it are handed on; calls not started are
    not started."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    workers = max(1, int(concurrency))
    queue = iter(jobs)
    pending: dict = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            while True:
                while len(pending) < workers:
                    job = next(queue, None)
                    if job is None:
                        break
                    pending[pool.submit(job[1])] = job[0]
                if not pending:
                    return
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                errors = []
                for fut in finished:
                    key = pending.pop(fut)
                    if fut.exception() is not None:
                        errors.append(fut.exception())
                    else:
                        on_result(key, fut.result())
                if errors:  # what finished is handed on; a rerun asks only for the rest
                    raise errors[0]
        finally:
            for fut in pending:
                fut.cancel()
