"""Family `mteb`: a model named by MTEB's model registry (`mteb.get_model_meta`), loaded and prompted
as MTEB loads and prompts it.

Entry: `{family: mteb, name: <registry name>, revision, prompts: {role: literal}, max_length,
precision, path | package}`. The registry entry (its ModelMeta) gives the loader, the revision, the
prompts keyed by task type and by prompt type, and the maximum tokens; the model's own modules give
pooling and normalisation, as in MTEB. Any of `revision`, `prompts`, `max_length`, `precision` in
the entry overrides the registry's, and the job's log and the store's manifest (`mteb.overrides`)
say so.

Weights: from the Hugging Face hub at the registry's revision (or its cache: offline, a revision
not in the cache stops the job naming the revision and the cache folder), or, offline, from a local
folder (`path`) or the folder an installed package carries (`package`, model_settings.BUNDLED_PACKAGES);
the registry still gives the prompts and the loader's settings, and the folder's files are tracked
by their sha256 like any local model's (encoders/mteb.py: local_files).

Roles map onto MTEB's prompts as an MTEB task would ask for them (mteb's get_prompt_name: task type
with prompt type, then task type, then prompt type): `query` = a Retrieval task's query,
`document` = a Retrieval task's document, `text` = an STS task (no prompt type: our other probes
compare texts as STS does). With no registry prompt, sentence-transformers' own fallback applies as
in MTEB's run: `query` its model's "query" prompt, `document` its "document", "passage" or
"corpus" prompt, `text` its `default_prompt_name`.

Loaders: entries whose loader is sentence-transformers (MTEB's SentenceTransformerEncoderWrapper,
about 350 of the registry's entries) run here. Other loaders (instruction wrappers, API models,
multimodal models) are refused, naming the loader. mteb is imported by the embedding job, and once
where the workflow is planned to check the names (`registry_problem`, config.registry_problems).
"""
from __future__ import annotations

import importlib.metadata
from pathlib import Path
from types import SimpleNamespace

from workflow_scripts.encoders import LOG, ModelUnavailable, _hub_offline, _in_hub_cache, hub_cache_folder
from workflow_scripts.encoders.sentence_transformers import SentenceTransformerEncoder
from workflow_scripts.model_settings import bundled_package_folder

# our role -> (MTEB task type, MTEB prompt type)
ROLE_PROMPT_TYPES = {"query": ("Retrieval", "query"), "document": ("Retrieval", "document"), "text": ("STS", None)}
# sentence-transformers' fallback when no prompt is passed (encode_query, encode_document, encode)
ST_FALLBACK = {"query": ("query",), "document": ("document", "passage", "corpus"), "text": ()}
SENTENCE_TRANSFORMER_LOADERS = ("SentenceTransformerEncoderWrapper", "SentenceTransformerMultimodalEncoderWrapper",
                                "sentence_transformers_loader")
# the registry's loader arguments that reach SentenceTransformer(...) unchanged
PASSED_LOADER_KWARGS = ("trust_remote_code", "model_kwargs", "tokenizer_kwargs", "config_kwargs")
DTYPE_PRECISION = {"torch.float32": "fp32", "torch.bfloat16": "bf16", "torch.float16": "fp16",
                   "float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def mteb_version() -> str | None:
    """The installed mteb's version, without importing it (planning reads it: a new registry reruns)."""
    try:
        return importlib.metadata.version("mteb")
    except importlib.metadata.PackageNotFoundError:
        return None


def registry_meta(name: str, revision: str | None = None):
    """The registry's ModelMeta of `name`. Not passed on: `revision` (mteb refuses any but the
    registry's, while the config's overrides it: MtebEncoder._choose)."""
    import mteb
    return mteb.get_model_meta(name)


def registry_problem(key: str, name: str) -> str | None:
    """Why `name` is not a model of the installed mteb's registry (for the config key `key`), or None;
    read when the workflow is planned, so that a wrong name stops the run before any job."""
    import difflib
    import warnings

    import mteb
    try:
        with warnings.catch_warnings():  # a renamed model is found under its old name, with a warning
            warnings.simplefilter("ignore", DeprecationWarning)
            mteb.get_model_meta(name)
        return None
    except KeyError:
        pass
    close = difflib.get_close_matches(name, [m.name for m in mteb.get_model_metas()], n=3)
    return (f"config key `{key}`: {name!r} is not a model of MTEB's registry (mteb {mteb_version()}); expected a "
            f"registry name, e.g. sentence-transformers/all-MiniLM-L6-v2"
            + (f" (close: {', '.join(close)})" if close else "")
            + ", or family sentence_transformers/transformers for a model the registry lacks")


def loader_name(meta) -> str:
    loader = meta.loader
    return getattr(loader, "__name__", None) or getattr(getattr(loader, "func", None), "__name__", None) or str(loader)


def model_prompts(meta, built_in: dict | None) -> dict:
    """The prompts MTEB's sentence-transformers wrapper uses: the registry's `model_prompts`, else
    the model's own, keys that are no task type, prompt type or task name dropped (as mteb does)."""
    from mteb.models.abs_encoder import AbsEncoder
    prompts = (meta.loader_kwargs or {}).get("model_prompts") or {k: v for k, v in (built_in or {}).items() if v is not None}
    valid, _ = AbsEncoder.validate_task_to_prompt_name(prompts or None, raise_for_invalid_keys=False)
    return dict(valid or {})


def registry_prompt(prompts: dict, role: str) -> tuple[str | None, str | None]:
    """(key, prompt) MTEB picks for `role` (ROLE_PROMPT_TYPES) from `prompts`, or (None, None)."""
    from mteb.models.abs_encoder import get_prompt_name
    from mteb.types import PromptType
    task_type, prompt_type = ROLE_PROMPT_TYPES[role]
    task = SimpleNamespace(name=None, type=task_type)
    key = get_prompt_name(prompts or None, task, PromptType(prompt_type) if prompt_type else None)
    return (key, prompts[key]) if key else (None, None)


class MtebEncoder(SentenceTransformerEncoder):
    """A registry entry with a sentence-transformers loader (see the module's docstring)."""

    def __init__(self, spec: dict, device: str, log=None):
        self.log = log or LOG  # the job's log: what the registry gave and what the config overrode
        self.role = (spec.get("text_form") or {}).get("role", "text")
        self.meta = registry_meta(spec["name"], spec.get("revision"))
        loader = loader_name(self.meta)
        if loader not in SENTENCE_TRANSFORMER_LOADERS:
            raise ValueError(f"model {spec['name']!r}: MTEB registers it with loader {loader}; family mteb runs "
                             f"sentence-transformers loaders only ({', '.join(SENTENCE_TRANSFORMER_LOADERS)}). Use "
                             "family sentence_transformers or transformers with its settings, or precomputed vectors")
        kwargs = dict(self.meta.loader_kwargs or {})
        self.overrides: dict = {}
        effective = {k: v for k, v in spec.items() if k not in ("text_form", "prompts")}
        effective["name"] = self.meta.name  # where the registry says the weights are
        effective["revision"] = self._choose("revision", spec.get("revision"), self.meta.revision)
        registry_precision = DTYPE_PRECISION.get(str((kwargs.get("model_kwargs") or {}).get("torch_dtype")
                                                     or kwargs.get("torch_dtype") or kwargs.get("dtype") or ""))
        effective["precision"] = self._choose("precision", spec.get("precision"), registry_precision) or "fp32"
        self.registry_max_length = kwargs.get("max_seq_length")
        effective["max_length"] = self._choose("max_length", spec.get("max_length"), self.registry_max_length)
        self.config_prompt = (spec.get("text_form") or {}).get("prompt")
        self.loader_kwargs = {k: kwargs[k] for k in PASSED_LOADER_KWARGS if k in kwargs}
        for key in ("model_kwargs",):  # the precision is ours (above), not a second dtype
            if key in self.loader_kwargs:
                self.loader_kwargs[key] = {k: v for k, v in self.loader_kwargs[key].items()
                                           if k not in ("torch_dtype", "dtype")}
        super().__init__(effective, device)
        self.origin = f"MTEB registry {self.meta.name}@{effective['revision']} (mteb {mteb_version()}; {self.origin})"

    def _choose(self, key: str, configured, registered):
        """The config's value where it gives one (recorded as an override of the registry's), else the registry's."""
        if configured is not None and registered is not None and configured != registered:
            self.overrides[key] = {"config": configured, "registry": registered}
            self.log.info("model %s: `%s` %r from the config overrides the MTEB registry's %r", self.meta.name, key,
                     configured, registered)
        return configured if configured is not None else registered

    def _load(self, spec: dict):
        """(the SentenceTransformer, where its weights came from): the entry's `path` or `package`,
        else the hub (or its cache) at the revision chosen."""
        from sentence_transformers import SentenceTransformer
        folder, origin = self._weights(spec)
        if folder is not None:
            return SentenceTransformer(str(folder), device=self.device, **self.loader_kwargs), origin
        model = SentenceTransformer(spec["name"], device=self.device, revision=spec.get("revision"),
                                    **self.loader_kwargs)
        return model, origin

    def _weights(self, spec: dict):
        """(local folder or None, origin) of the weights; offline without them in the hub's cache,
        ModelUnavailable naming the revision, the cache folder and the ways out."""
        if spec.get("path"):
            return spec["path"], f"path {spec['path']}"
        if spec.get("package"):
            import importlib.metadata
            folder = bundled_package_folder(spec["package"])
            return folder, f"package {spec['package']} {importlib.metadata.version(spec['package'])} ({folder})"
        name, revision = spec["name"], spec.get("revision")
        if _hub_offline() and not Path(name).is_dir() and not _in_hub_cache(name, revision):
            cache = hub_cache_folder()
            repo = f"models--{name.replace('/', '--')}"
            raise ModelUnavailable(
                f"model {name!r} (family mteb): the Hugging Face hub is off (HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE) "
                f"and its cache {cache} has no snapshot of revision {revision or 'main'} (looked for "
                f"{cache}/{repo}/snapshots/{revision or '<refs/main>'}/config.json). Give the weights as a local "
                "folder (`path: <folder>`) or an installed package that carries them (`package: <name>`), fill the "
                f"cache where the hub is reachable (hf download {name} --revision {revision or 'main'}), or unset "
                "HF_HUB_OFFLINE (docs/models.md, MTEB offline)")
        return None, f"hub {name}@{revision or 'main'}"

    def _prompt(self, form: dict, source: str) -> str | None:
        """The role's prompt: the config's literal prompt (an override), else MTEB's choice from the
        registry's prompts (or the model's own), else sentence-transformers' fallback."""
        prompts = model_prompts(self.meta, self.model.prompts)
        key, prompt = registry_prompt(prompts, self.role)
        source_note = "mteb registry" if (self.meta.loader_kwargs or {}).get("model_prompts") else "model's own prompts"
        if key is None:  # as sentence-transformers does when MTEB passes no prompt
            own = self.model.prompts or {}
            if (self.meta.loader_kwargs or {}).get("model_prompts"):
                own = prompts  # MTEB's wrapper replaced the model's prompts with the registry's
            names = ST_FALLBACK[self.role] or ((self.model.default_prompt_name,) if self.model.default_prompt_name else ())
            key = next((n for n in names if n in own), None)
            prompt = own.get(key) if key else None
            source_note = "sentence-transformers' fallback" if key else "none"
        self.prompt_record = {"role": self.role, "key": key, "prompt": prompt, "source": source_note}
        if self.config_prompt is not None:
            if self.config_prompt != (prompt or ""):
                self.overrides["prompt"] = {"config": self.config_prompt, "registry": prompt}
                self.log.info("model %s, role %s: prompt %r from the config overrides MTEB's %r (key %s)", self.meta.name,
                         self.role, self.config_prompt, prompt, key)
            self.prompt_record = {"role": self.role, "key": None, "prompt": self.config_prompt, "source": "config"}
            return self.config_prompt
        self.log.info("model %s, role %s: prompt %r (%s, key %s)", self.meta.name, self.role, prompt, source_note, key)
        return prompt or None

    def modules_summary(self) -> dict:
        """Pooling and normalisation as the model's own modules say (MTEB does not set them)."""
        pooling, normalize = None, False
        for module in self.model:
            kind = type(module).__name__
            if kind == "Pooling":
                pooling = module.get_pooling_mode_str() if hasattr(module, "get_pooling_mode_str") else \
                    getattr(module, "pooling_mode", None)
            normalize = normalize or kind == "Normalize"
        return {"pooling": pooling, "normalize": normalize}

    def manifest_fields(self) -> dict:
        meta = self.meta
        return {"mteb": {"version": mteb_version(), "name": meta.name, "revision": meta.revision,
                         "loader": loader_name(meta), "max_tokens": meta.max_tokens,
                         "max_length": self.model.max_seq_length, "embed_dim": meta.embed_dim,
                         "similarity_fn_name": str(getattr(meta.similarity_fn_name, "value", meta.similarity_fn_name)),
                         **self.modules_summary(), "prompt": self.prompt_record, "overrides": self.overrides}}
