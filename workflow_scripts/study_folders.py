"""Studies that do not trample each other: a study's identity, its default results folder, and the
marker that says which study a results folder belongs to.

- A study is named by the `study:` config key, else by the stem of its first config file
  (`--configfile my_study.yaml` -> `my_study`; a `config.yaml` other than the working directory's
  by its folder: `studies/pilot/config.yaml` -> `pilot`); overlays given after it (`--configfile base.yaml
  overlay.yaml`, `make run CONFIG="base.yaml overlay.yaml"`) keep the base's identity and folder.
- Its results folder is `results:` when the config sets it (or `--config results=...`), else
  `results/<name>/`; a study named `config` (a workflow's config.yaml, Snakemake's default name,
  the default study) keeps `results/`, where the documentation and the tests look.
- Identity, compared between runs: the `study:` name when given, else the first config file's path
  (relative to the working directory when inside it, so a moved or cloned checkout keeps it).
- `<results>/.study.json` records the study that made the folder: written when a run starts
  executing jobs (rules/common.smk, onstart, under the results lock), checked when any run plans
  (dry runs and `--report` too). A folder without it (made before this marker existed) is claimed
  by the first study that runs in it.

CLI (the Makefile's): python -m workflow_scripts.study_folders results-folder [CONFIG ...]
prints the study's results folder (default config: config.yaml).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

MARKER = ".study.json"
DEFAULT_CONFIG = "config.yaml"
DEFAULT_STUDY = "config"  # the stem of the default config.yaml: its study keeps `results/`
RESULTS_ROOT = "results"
# folders a study writes directly under its results folder (rules/*.smk, workflow_scripts): a study
# named like one of them would nest its folder among the default study's outputs
# (the shared stages'; each probe's are its name and the folders it declares, probes.results_folders)
RESERVED = frozenset({
    "articles", "benchmarks", "cache", "corpora", "downloads", "embeddings", "ingest", "logs",
    "models", "nltk_data", "plots", "report", "reports", "tables", "texts",
})


class StudyConflict(RuntimeError):
    """The results folder belongs to another study, or the study's name cannot name a folder."""


def portable_path(path) -> str:
    """`path` relative to the working directory when it lies inside it, else absolute: the form a
    path takes wherever it names a study, decides a rerun or keys a cache, so that moving or cloning
    the checkout (the working directory with it) leaves it unchanged."""
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute)
    return absolute if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


def identity(config: dict, configfiles) -> dict:
    """{"study": name, "key": what runs are compared by, "configfiles": [...]} of this run.
    `configfiles`: Snakemake's workflow.configfiles (the base first, then overlays)."""
    files = [portable_path(f) for f in configfiles or ()] or [DEFAULT_CONFIG]
    named = config.get("study")
    name = named if named else Path(files[0]).stem
    if not named and name == DEFAULT_STUDY and files[0] != DEFAULT_CONFIG:
        # studies/pilot/config.yaml: the study `pilot`, not the default study's `config`
        name = Path(files[0]).parent.name or name
    return {"study": name, "key": f"study:{name}" if named else f"config:{files[0]}", "configfiles": files}


def default_results(study: dict) -> str:
    """The folder of a study whose config sets no `results:`."""
    name = study["study"]
    if name == DEFAULT_STUDY:
        return RESULTS_ROOT
    from workflow_scripts import probes
    if name in RESERVED or name in probes.results_folders():
        raise StudyConflict(
            f"study `{name}` ({', '.join(study['configfiles'])}): its default results folder "
            f"`{RESULTS_ROOT}/{name}` is a folder the default study writes; set `results:` (e.g. "
            f"`results: {RESULTS_ROOT}/study_{name}`) or `study:` to another name in its config")
    return f"{RESULTS_ROOT}/{name}"


def owner(results) -> dict | None:
    """The study recorded in `<results>/.study.json`; None when the folder has no marker."""
    try:
        return json.loads((Path(results) / MARKER).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}  # unreadable: treated as another study's, the message says what to do


def _describe(study: dict) -> str:
    return f"study `{study.get('study', '?')}` (config files: {', '.join(study.get('configfiles') or ['?'])})"


def conflict_message(results, recorded: dict, study: dict) -> str:
    return (f"results folder `{results}` belongs to {_describe(recorded)}; this run is {_describe(study)}. "
            f"A study writes only into its own folder: give this one its own `results:` in its config "
            f"(or `--config results=...`; without `results:` a study gets `{RESULTS_ROOT}/<config name>/`), "
            f"or, to hand the folder over to it, delete `{Path(results) / MARKER}`.")


def check(results, study: dict) -> None:
    """Raise StudyConflict when `results` was made by another study."""
    recorded = owner(results)
    if recorded is not None and recorded.get("key") != study["key"]:
        raise StudyConflict(conflict_message(results, recorded, study))


def claim(results, study: dict) -> Path:
    """Check, then record this study in `<results>/.study.json` if the folder has no owner yet
    (atomically; an existing marker of the same study is left as it is). Called under the results
    lock, so two studies starting on one folder at once cannot both claim it."""
    check(results, study)
    marker = Path(results) / MARKER
    if not marker.exists():
        marker.parent.mkdir(parents=True, exist_ok=True)
        tmp = marker.with_name(f"{MARKER}.tmp-{os.getpid()}")
        record = {**study, "since": time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime()), "cwd": os.getcwd()}
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        os.replace(tmp, marker)
    return marker


def load_configs(paths) -> dict:
    """The config files merged as Snakemake merges `--configfile a b` (later files update earlier
    ones, mappings recursively)."""
    import yaml

    def update(base: dict, new: dict) -> None:
        for key, value in new.items():
            if isinstance(value, dict) and isinstance(base.get(key), dict):
                update(base[key], value)
            else:
                base[key] = value

    merged: dict = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            update(merged, yaml.safe_load(f) or {})
    return merged


def results_folder(paths) -> str:
    """The results folder of the study given by these config files (what the Makefile prints and
    where `make report` writes report.html)."""
    paths = list(paths) or [DEFAULT_CONFIG]
    config = load_configs(paths)
    return str(config["results"]) if config.get("results") else default_results(identity(config, paths))


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "results-folder":
        print("usage: python -m workflow_scripts.study_folders results-folder [CONFIG ...]", file=sys.stderr)
        return 2
    try:
        print(results_folder(argv[1:]))
    except (OSError, StudyConflict) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
