"""Family `openai_embeddings`: vectors from an OpenAI-compatible /v1/embeddings endpoint (TEI, vLLM,
Infinity, hosted APIs), with every vector cached.

Entry: `{family: openai_embeddings, base_url, model, api_key_env, dimensions, cache_tag, templates,
batch_tokens, batch_size, concurrency, timeout_s, retries, backoff_s, max_answer_bytes}`.

- What decides the vectors (the cache key and the store's spec): the endpoint's identity
  (`cache_tag`, else `base_url`: endpoints.endpoint_identity), `model`, `dimensions` (sent to the
  server when set; every vector must have it) and the text as sent (the role's `templates` entry
  applied). How requests run decides nothing: a request holds at most `batch_size` texts (32) and
  at most `batch_tokens` estimated tokens (8192; a text counts len(utf-8 bytes) / 4 + 1 tokens, an
  overestimate for the usual tokenizers, and a longer text goes alone); at most `concurrency` (4)
  requests are open; each has an overall deadline `timeout_s` (60) and is retried `retries` (4)
  times with backoff (endpoints.Endpoint, shared with the served generator). These run settings
  reach the embedding job as its resources (encoders.job_resources, rules/embed.smk), which Snakemake does
  not compare when it decides a rerun.
- What is cached is checked first: an answer holds exactly one vector per text sent (its `index`
  values each position of the request once: a repeated index would give one text its neighbour's
  vector), of the dimension expected, finite, in a body of at most `max_answer_bytes` (32 MiB;
  counted as it is read, so a server cannot make the job hold more).
- The cache: `<results>/.cache/embeddings/<model>.jsonl`, one JSON line per text (its key's sha256
  and the float32 vector in base64), appended under a lock as each request is answered. A rerun,
  a killed job resumed, or a new probe sharing texts sends only texts the cache lacks.
- The API key is read from the environment variable `api_key_env` only (never from a file), sent
  as a bearer token in the Authorization header, and redacted from every message in every spelling
  a server may echo it in (endpoints.secret_forms).
"""
from __future__ import annotations

import base64
import hashlib
import json
import time
from pathlib import Path

import numpy as np

from workflow_scripts.common import append_locked, read_json_lines
from workflow_scripts.endpoints import Endpoint, endpoint_identity, run_bounded
from workflow_scripts.model_settings import apply_template

DEFAULT_BATCH_TOKENS = 8192
# an answer's body at most: 32 texts of 4,096 dimensions are about 3 MB of JSON floats
DEFAULT_MAX_ANSWER_BYTES = 32 * 1024 * 1024
DIMENSION_PROBE = "dimension"  # the text embedded once to learn the dimension when `dimensions` is unset


def estimated_tokens(text: str) -> int:
    """An upper estimate of a text's tokens without the server's tokenizer: a BPE token is rarely
    under 4 bytes of English, so len(utf-8 bytes) / 4 + 1 (the +1: an empty text still costs one)."""
    return len(text.encode("utf-8")) // 4 + 1


def token_batches(texts: list[str], batch_tokens: int, batch_size: int) -> list[list[int]]:
    """Indices of `texts` in requests of at most `batch_size` texts and `batch_tokens` estimated
    tokens, in order; a text over the budget goes alone."""
    batches, current, used = [], [], 0
    for i, text in enumerate(texts):
        cost = estimated_tokens(text)
        if current and (used + cost > batch_tokens or len(current) >= batch_size):
            batches.append(current)
            current, used = [], 0
        current.append(i)
        used += cost
    if current:
        batches.append(current)
    return batches


def _summarise(values: list, shown: int = 8) -> str:
    """A list for a message, cut after `shown` items."""
    return repr(values[:shown])[:-1] + (f", ... ({len(values)} in all)]" if len(values) > shown else "]")


class VectorCache:
    """key -> float32 vector, from a JSON Lines file appended under an exclusive lock (parallel
    embedding jobs of one model share it; a line cut short by a killed job is skipped)."""

    def __init__(self, path: str | None):
        self.path = Path(path) if path else None
        self.vectors, self.unreadable = read_json_lines(
            self.path, lambda rec: np.frombuffer(base64.b64decode(rec["vector"]), dtype="<f4"))

    def get(self, key: str) -> np.ndarray | None:
        return self.vectors.get(key)

    def put(self, keys: list[str], vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype="<f4")
        for key, vector in zip(keys, vectors):
            self.vectors[key] = vector
        if self.path and keys:
            append_locked(self.path, "".join(
                json.dumps({"key": k, "vector": base64.b64encode(v.tobytes()).decode("ascii")}) + "\n"
                for k, v in zip(keys, vectors)))


class OpenAIEmbeddingsEncoder:
    """The encoder of family openai_embeddings (see the module's docstring): `dim`, `origin`,
    `encode_texts(texts)` (its own batching and concurrency) and `encode_batch` for single batches."""

    def __init__(self, spec: dict, name: str = "", log=None, cache_path: str | None = None):
        self.spec, self.log, self.name = spec, log, name or spec["model"]
        self.url = spec["base_url"].rstrip("/") + "/embeddings"
        self.api = Endpoint(self.url, spec, f"model {self.name!r}", log)
        self.settings = {"endpoint": endpoint_identity(spec), "model": spec["model"],
                         "dimensions": spec.get("dimensions")}
        self.template = (spec.get("text_form") or {}).get("template")
        self.cache = VectorCache(cache_path)
        self.batch_tokens = int(spec.get("batch_tokens", DEFAULT_BATCH_TOKENS))
        self.batch_size = int(spec.get("batch_size", 32))
        self.api.max_body_bytes = int(spec.get("max_answer_bytes") or DEFAULT_MAX_ANSWER_BYTES)
        self.stats = {"texts": 0, "cached": 0, "sent": 0}
        self.origin = (f"endpoint {self.url} (model {spec['model']}"
                       + (f", dimensions {spec['dimensions']}" if spec.get("dimensions") else "") + ")")
        self._dim = spec.get("dimensions")

    @property
    def dim(self) -> int:
        if self._dim is None:  # one text, cached: a rerun asks nothing
            self._dim = int(self.encode_texts([DIMENSION_PROBE], raw=True).shape[1])
        return self._dim

    def key(self, text: str) -> str:
        """The cache key of a text as sent: the endpoint's identity, the model, the dimensions."""
        return hashlib.sha256(json.dumps([self.settings, text], sort_keys=True, ensure_ascii=False)
                              .encode()).hexdigest()

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        return np.fromiter((estimated_tokens(t) for t in apply_template(self.template, texts)), np.int64, len(texts))

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        return self.encode_texts(texts)

    def encode_texts(self, texts: list[str], raw: bool = False) -> np.ndarray:
        """The vector of each text (its role's template applied unless `raw`): from the cache, else
        from the endpoint, each answered request cached at once."""
        sent_forms = texts if raw else apply_template(self.template, texts)
        keys = [self.key(t) for t in sent_forms]
        missing = list(dict.fromkeys(k for k in keys if self.cache.get(k) is None))  # each text once
        self.stats["texts"] += len(texts)
        asked = set(missing)
        self.stats["cached"] += sum(1 for k in keys if k not in asked)
        if missing:
            form_of = dict(zip(keys, sent_forms))
            self._request_missing([form_of[k] for k in missing], missing)
        out = np.stack([self.cache.get(k) for k in keys]).astype(np.float32) if keys else \
            np.empty((0, self._dim or 0), np.float32)
        return out

    def _request_missing(self, forms: list[str], keys: list[str]) -> None:
        batches = token_batches(forms, self.batch_tokens, self.batch_size)
        started, done = time.perf_counter(), 0

        def keep(batch: list[int], vectors: np.ndarray) -> None:
            nonlocal done
            self.cache.put([keys[i] for i in batch], vectors)
            done += len(batch)
            self.stats["sent"] += len(batch)
            if self.log:
                rate = done / max(time.perf_counter() - started, 1e-9)
                self.log.info("%s: %d/%d texts answered (%.0f texts/s)", self.url, done, len(forms), rate)

        with self.api.client() as client:
            jobs = ((b, lambda b=b: self._embed(client, [forms[i] for i in b])) for b in batches)
            run_bounded(jobs, int(self.api.run["concurrency"]), keep)

    def _embed(self, client, inputs: list[str]) -> np.ndarray:
        body = {"model": self.spec["model"], "input": inputs, "encoding_format": "float"}
        if self.spec.get("dimensions"):
            body["dimensions"] = self.spec["dimensions"]
        text, over_size = self.api.post(client, body)
        if over_size:
            raise self.api.fail(f"answered more than max_answer_bytes={self.api.max_body_bytes:,} bytes for "
                                f"{len(inputs)} texts (not read further); raise `max_answer_bytes` if the server's "
                                "answers are that large, or lower `batch_size`/`batch_tokens`")
        try:
            data = json.loads(text)["data"]
            indices = [d["index"] for d in data]
            rows = [d["embedding"] for d in data]
        except (ValueError, KeyError, TypeError) as err:
            raise self.api.fail(f"answered 200 without data[].embedding ({type(err).__name__}): "
                                f"{self.api.redact(text)[:200]!r}") from None
        if sorted(i if type(i) is int else -1 for i in indices) != list(range(len(inputs))):
            raise self.api.fail(f"answered the indices {_summarise(indices)} for {len(inputs)} texts; expected each "
                                f"of 0..{len(inputs) - 1} once (a repeated or missing index would give a text "
                                "another's vector); nothing of this answer is cached")
        try:
            vectors = np.asarray([rows[j] for j in np.argsort(indices)], dtype=np.float32)
        except (ValueError, TypeError):
            vectors = np.empty(0)
        if vectors.ndim != 2 or len(vectors) != len(inputs):
            raise self.api.fail(f"answered {len(rows)} vectors of unequal lengths or not lists of numbers for "
                                f"{len(inputs)} texts")
        expected = self._dim
        if expected is not None and vectors.shape[1] != expected:
            said = "the config says dimensions" if self.spec.get("dimensions") else "earlier answers had"
            raise self.api.fail(f"answered vectors of {vectors.shape[1]} dimensions; {said} {expected}. "
                                "Check `model` and `dimensions` against what the endpoint serves")
        if not np.isfinite(vectors).all():
            raise self.api.fail("answered non-finite values")
        return vectors

    def manifest_fields(self) -> dict:
        """What the store's manifest records beside the origin (the key's variable, never the key)."""
        return {"endpoint": {"identity": self.settings["endpoint"], "url": self.url, "model": self.spec["model"],
                             "dimensions": self.spec.get("dimensions"), "api_key_env": self.spec.get("api_key_env")}}
