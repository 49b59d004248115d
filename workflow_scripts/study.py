"""Planning that every stage shares, as plain functions of the validated config (no Snakemake): which
model runs which probe and dataset, the text sets and the stores the embedding stage fills, which
store copies another's vectors, where sources and model files are, the device a model runs on and
what decides its vectors. `ProbePlan` is the base of every probe's planner (`<probe>/plan.py`).

rules/common.smk builds one `Study` and one plan per declared probe (workflow_scripts/probes.py); the
rule files read them. Everything here is unit-testable with a config dict.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import namedtuple
from dataclasses import dataclass
from pathlib import Path

from workflow_scripts.common import vector_settings
from workflow_scripts.encoders import family_of, local_model_files, role_spec
from workflow_scripts.model_settings import ModelDigests, scope_role
from workflow_scripts.study_folders import portable_path

Pair = namedtuple("Pair", "corpus model")
DatasetPair = namedtuple("DatasetPair", "dataset model")

# Keys that make a corpus a subset of another (a token range, a length-matched or capped subset).
DERIVING_KEYS = ("min_tokens", "max_tokens", "match_lengths_of", "max_sentences")


class Study:
    """The validated config of one run and its results folder, with the planning every stage asks."""

    def __init__(self, config: dict, results: str, parts: int | None = None):
        self.config = config
        self.results = results
        self.parts = parts or config["embedding_partitions"]
        self.part_ids = [f"{p:03d}" for p in range(self.parts)]
        self._device: list[str] = []
        self._model_digests: dict[str, str | None] = {}
        self._stamps: dict[str, str] = {}
        # the largest input file Snakemake judges by its sha256 (rules/common.smk sets its
        # --max-checksum-file-size; this is its default)
        # NLTK data (rules/common.smk plans it before any job): package -> name@digest or
        # "nltk_download", and whether the workflow's download rule fetched some
        self.nltk_fingerprint: dict[str, str] = {}
        self.nltk_download = False

    # ---- NLTK data the jobs read ----
    @property
    def nltk_manifest(self) -> str:
        return f"{self.results}/nltk_data/manifest.json"

    def nltk_inputs(self) -> dict:
        """Once the workflow has downloaded NLTK data, the jobs that use it keep it as an input (else
        the next run, finding the packages, would see the inputs change and rebuild)."""
        return {"nltk": self.nltk_manifest} if self.nltk_download else {}

    def nltk_plan(self, wildcards=None, prefix: str = "") -> dict:
        """Param: name@digest of the NLTK packages (those starting with `prefix`): a change reruns."""
        return {k: v for k, v in sorted(self.nltk_fingerprint.items()) if k.startswith(prefix)}

    def nltk_download_dir(self, wildcards=None) -> str:
        """Param: the workflow's own NLTK download folder, which a job puts before the user's NLTK_DATA
        (the job's environment). Relative like the results folder, so a moved checkout or a fresh
        clone does not see the param change; what the data is, not where, decides reruns (nltk_plan)."""
        return os.path.dirname(self.nltk_manifest)

    # ---- which model runs where ----
    def runs_probe(self, model: str, probe: str) -> bool:
        """A model runs every probe unless its config entry lists `probes`."""
        return probe in self.config["models"][model].get("probes", [probe])

    def model_corpora(self, model: str) -> list[str]:
        return self.config["models"][model].get("corpora") or list(self.config.get("corpora") or {})

    def model_datasets(self, model: str, probe: str) -> list[str]:
        """The datasets of `probe` (every probe names its datasets under `<probe>.datasets`) a model
        scores: all, unless its entry lists `datasets`."""
        wanted = self.config["models"][model].get("datasets")
        return [d for d in self.config[probe]["datasets"] if wanted is None or d in wanted]

    def dataset_pairs(self, probe: str) -> list[DatasetPair]:
        """(dataset, model) of every model that runs `probe` on its datasets, models in config order."""
        if probe not in self.config:
            return []
        return [DatasetPair(d, m) for m in self.config["models"] if self.runs_probe(m, probe)
                for d in self.model_datasets(m, probe)]

    # ---- text sets and stores (docs/adding-a-probe.md) ----
    # A text set is a corpus (its originals and variants) or a probe's dataset (scope
    # `<probe>.<dataset>`). Each has its own texts/<scope>/ files and, per model, its own store
    # embeddings/<model>/<scope>/, so adding a corpus, a dataset or a probe adds jobs and never
    # changes an existing embedding job's inputs.
    @staticmethod
    def dataset_scope(probe: str, dataset: str) -> str:
        return f"{probe}.{dataset}"

    def scope_corpus(self, scope: str) -> str | None:
        """The corpus a text set is, or None for a probe dataset."""
        return scope if scope in (self.config.get("corpora") or {}) else None

    def texts(self, scope: str) -> list[str]:
        return [f"{self.results}/texts/{scope}/part-{p}.parquet" for p in self.part_ids]

    # A model's store of a text set has its device's number of partitions (embedding_partitions_per_device,
    # a divisor of embedding_partitions): store partition p of n holds the texts whose key is p modulo
    # n, i.e. text partitions p, p + n, p + 2n, ... (keys are p modulo the text partitions' count).
    def store_parts(self, model: str) -> int:
        """How many partitions (and embedding jobs, each loading the model) a store of the model has."""
        per_device = self.config.get("embedding_partitions_per_device") or {}
        return per_device.get(self.resolved_device(model), self.parts)

    def stores(self, model: str, scope: str) -> list[str]:
        return [f"{self.results}/embeddings/{model}/{scope}/part-{p:03d}" for p in range(self.store_parts(model))]

    def store_texts(self, model: str, scope: str, part: int) -> list[str]:
        """The text partitions that store partition `part` of the model embeds."""
        return self.texts(scope)[int(part)::self.store_parts(model)]

    def parent_corpus(self, corpus: str) -> str | None:
        """The configured corpus a derived corpus was cut from: the first unfiltered corpus of the
        same source and language. Its sentences, and so its variants (seeded per sentence), are the
        parent's, so its vectors are copied, not encoded."""
        corpora = self.config["corpora"]
        spec = corpora[corpus]
        if not any(spec.get(k) is not None for k in DERIVING_KEYS):
            return None
        for name, other in corpora.items():
            if (name != corpus and other["source"] == spec["source"] and other["language"] == spec["language"]
                    and not any(other.get(k) is not None for k in DERIVING_KEYS)):
                return name
        return None

    def reuse_scope(self, model: str, scope: str) -> str | None:
        """The store this model's store of `scope` copies vectors from, or None. TF-IDF is fitted per
        text set, and surface-form columns are numbered per text set, so their vectors are never shared."""
        corpus = self.scope_corpus(scope)
        parent = self.parent_corpus(corpus) if corpus else None
        if (parent is None or family_of(self.config["models"][model]).sparse
                or parent not in self.model_corpora(model)):
            return None
        return parent

    # ---- sources and model files ----
    def source_spec(self, name: str) -> dict:
        """A corpus source, an article collection or a probe's source (names are unique across them:
        the config checks)."""
        from workflow_scripts.probes import declarations

        probe_sources = [(self.config.get(p.name) or {}).get("sources") or {} for p in declarations()]
        for section in (self.config.get("sources") or {}, self.config.get("articles") or {}, *probe_sources):
            if name in section:
                return section[name]
        raise KeyError(f"no source named {name!r}")

    def source_file(self, name: str) -> str | None:
        """The local file of a source: its path, or where its verified download lands; None for
        sources that are NLTK data (the treebank)."""
        spec = self.source_spec(name)
        if "url" in spec:
            from workflow_scripts.downloads import url_filename

            return f"{self.results}/downloads/sources/{name}/{url_filename(spec['url'])}"
        return spec.get("path")

    def model_file(self, model: str) -> str | None:
        spec = self.config["models"][model]
        if "url" in spec:
            from workflow_scripts.downloads import url_filename

            # a .gz download is verified, then stored decompressed (fastText's cc.*.300.bin.gz)
            return f"{self.results}/downloads/models/{model}/{url_filename(spec['url']).removesuffix('.gz')}"
        return spec.get("path")

    # ---- models the workflow trained: their entries carry their lineage ----
    def lineage(self, model: str) -> tuple[str, list[str]]:
        """(root base, steps) of a model: a model the workflow trained (the adapt stage registers it
        with `adapted: {recipe, base, steps}`) back through its chain of bases to the configured model
        it started from; a configured model is its own root, with no steps."""
        steps, seen = [], set()
        while (adapted := self.config["models"].get(model, {}).get("adapted")) and model not in seen:
            seen.add(model)
            steps = list(adapted["steps"]) + steps
            model = adapted["base"]
        return model, steps

    def root_base(self, model: str) -> str:
        return self.lineage(model)[0]

    def adaptation(self, model: str) -> str:
        """How a model was made from its root base: `base`, or its steps, e.g. PT, FT, PT-FT, FT-merge."""
        return "-".join(s.upper() if s != "merge" else s for s in self.lineage(model)[1]) or "base"

    def trained(self, model: str) -> bool:
        return bool(self.config["models"][model].get("adapted"))

    # ---- devices and what decides a model's vectors ----
    def resolved_device(self, model: str) -> str:
        """The device a model's embedding jobs run on: `auto` becomes cuda when this process, which
        plans the jobs, sees a GPU, else cpu. Resolved while planning, not in the job, so that it is
        a param (a change reruns the model) and the `gpu` resource follows it; a job asked for cuda
        on a machine without one refuses to run. Families that are not torch run on the CPU."""
        spec = self.config["models"][model]
        if not family_of(spec).uses_torch:
            return "cpu"
        if spec.get("device", "auto") != "auto":
            return spec["device"]
        return self.auto_device()

    def auto_device(self) -> str:
        if not self._device:  # torch imported only if a model or generator asks
            import torch

            self._device.append("cuda" if torch.cuda.is_available() else "cpu")
        return self._device[0]

    def embed_spec(self, model: str, scope: str | None = None) -> dict:
        """What decides a model's vectors: its config entry without the settings that only say how
        the job runs (common.RUN_SETTINGS), with the resolved device for torch families and, for a
        local model, `model_sha256` (the digest of its files: a new checkpoint reruns its jobs). As
        a param, it reruns exactly what changes vectors. With `scope`: as the store of that text set
        is embedded, i.e. resolved for the set's role (model_settings.role_spec)."""
        spec = vector_settings(self.config["models"][model])
        spec.pop("device", None)
        if family_of(spec).uses_torch:
            spec["device"] = self.resolved_device(model)
        digest = self.model_digest(model)
        if digest:
            spec["model_sha256"] = digest
        spec.update(family_of(spec).vector_identity(spec))  # e.g. a new MTEB registry reruns the model
        return spec if scope is None else role_spec(spec, self.scope_role(scope))

    @staticmethod
    def scope_role(scope: str) -> str:
        """`query` (retrieval questions), `document` (retrieval sets) or `text` (model_settings.scope_role)."""
        return scope_role(scope)

    # ---- local data judged by content: a copy or a clone keeps results that a new mtime would rerun ----
    def judged_by_content(self, path: str) -> bool:
        """Whether the local input `path` is judged by its content (rules/common.smk `by_content`):
        every folder and file that the workflow does not make (outside the results folder). Snakemake
        judges a folder, or a file over its checksum limit, by its mtime alone, and any file by its
        mtime where no `.snakemake/` metadata records its sha256 (a results folder copied without
        it), so a fresh clone's new mtimes would rerun what reads it."""
        if Path(path).resolve().is_relative_to(Path(self.results).resolve()) or not os.path.exists(path):
            return False
        return True

    def content_stamp(self, path: str) -> str:
        """<results>/.cache/content/<name>.json: the sha256 of the local folder or large file `path`
        (its files' names and contents; each file's sha256 cached by path, size and mtime), rewritten
        only when that changes. An input in place of the data's own mtime: a rule reruns when the
        data's content changes, not when a clone or a copy gives it new mtimes."""
        if path not in self._stamps:
            name = portable_path(path)
            stamp = Path(f"{self.results}/.cache/content/{hashlib.sha256(name.encode()).hexdigest()[:16]}.json")
            digests = ModelDigests(self.digest_cache)
            record = json.dumps({"path": name, "sha256": digests.digest([Path(path)], ignored_suffixes=())},
                                indent=1) + "\n"
            digests.save()
            if not stamp.exists() or stamp.read_text() != record:
                stamp.parent.mkdir(parents=True, exist_ok=True)
                tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}.tmp")
                tmp.write_text(record)
                os.replace(tmp, stamp)
            self._stamps[path] = str(stamp)
        return self._stamps[path]

    @property
    def digest_cache(self) -> str:
        return f"{self.results}/.cache/model_digests.json"

    def model_digest(self, model: str) -> str | None:
        """sha256 of a local model's files (encoders.local_model_files), None for a hub id, a
        checked download or a model without files. Computed once per plan; each file's sha256 is
        cached by path, size and mtime (digest_cache), so an unchanged folder is not read again."""
        if model not in self._model_digests:
            files = local_model_files(self.config["models"][model])
            digest = None
            if files:
                digests = ModelDigests(self.digest_cache)
                digest = digests.digest(files)
                digests.save()
            self._model_digests[model] = digest
        return self._model_digests[model]


@dataclass(frozen=True)
class DatasetCount:
    """What a probe's dataset will hold (ProbePlan.planned_counts): `n` items counted in `unit`
    (triplets, questions, phrases, windows, texts; None: unknown before its build job), `bound` "="
    (exact) or "<=" (at most: a cap of its config), how it was found, and the texts it will embed
    where known (`texts`)."""
    dataset: str
    n: int | None
    unit: str
    bound: str
    how: str
    texts: int | None = None


def report_json(path: str) -> dict | None:
    """A dataset report (a build job's JSON), or None where it is not written yet."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def data_lines(path: str | None, header: int = 0) -> int | None:
    """Non-empty lines of a local text file less `header`, or None where it is not here."""
    if not path or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        return max(0, sum(1 for line in f if line.strip()) - header)


class ProbePlan:
    """A probe's planner: its (dataset, model) pairs, the datasets some model scores, and its rules'
    input functions and params. Subclasses live in `<probe>/plan.py`; methods taking `wildcards`
    are Snakemake input functions. `targets`, `report_*` and `data_sources` tell `rule all` and the
    report what the probe made."""

    def __init__(self, study: Study, probe):
        self.study = study
        self.probe = probe
        self.name = probe.name
        self.config = study.config
        self.R = study.results
        self.pairs = self.plan_pairs()
        self.datasets = self.planned_datasets()

    @property
    def section(self) -> dict:
        return self.config.get(self.name) or {}

    def plan_pairs(self) -> list:
        return self.study.dataset_pairs(self.name)

    def planned_datasets(self) -> list[str]:
        """Datasets some model scores, in config order (a dataset no model scores is not built)."""
        scored = {p.dataset for p in self.pairs}
        return [d for d in self.section.get("datasets", {}) if d in scored]

    @property
    def ran(self) -> bool:
        return bool(self.pairs)

    def nltk_method_applies(self) -> bool:
        """Whether the method its optional NLTK packages choose (`NltkNeeds.optional`) is part of
        what this study runs (nltk_data.method_choices); a probe whose method applies to only some
        datasets narrows it."""
        return self.ran

    def scope(self, dataset: str) -> str:
        return self.study.dataset_scope(self.name, dataset)

    def stores(self, wildcards) -> list[str]:
        """Input function: the model's stores of the dataset's text set."""
        return self.study.stores(wildcards.model, self.scope(wildcards.dataset))

    def spec(self, wildcards) -> dict:
        """Param: what decides the model's vectors (the stores must match it)."""
        return self.study.embed_spec(wildcards.model)

    def pair_inputs(self) -> dict[str, str]:
        """An aggregate's inputs: pair i's files (the plan's `pair_files`) named `<file>_<i>`, which
        the job reads back with jobs.pair_entries."""
        return {f"{key}_{i}": path for i, pair in enumerate(self.pairs) for key, path in self.pair_files(pair).items()}

    def pair_scope(self, pair) -> str:
        return self.scope(pair.dataset)

    def planned_counts(self, planned: frozenset = frozenset()) -> list["DatasetCount"]:
        """What each dataset some model scores will hold, for the plan summary: what its build job
        counted (its report, `dataset_report`, unless `planned` outputs rebuild it), else the probe's
        own count where it is known before the run (its word lists, a file's rows, a cap of its
        config: `dataset_count`), else unknown."""
        out = []
        for d in self.datasets:
            path = self.dataset_report(d)
            report = report_json(path) if path and path not in planned else None
            out.append(self.built_count(d, report) if report is not None else self.dataset_count(d))
        return out

    def dataset_report(self, dataset: str) -> str | None:
        """The report JSON the dataset's build job writes, where it counts what the dataset holds."""
        return None

    def dataset_count(self, dataset: str) -> "DatasetCount":
        return DatasetCount(dataset, None, "items", "?", "counted by its build job")

    def built_count(self, dataset: str, report: dict) -> "DatasetCount":
        """What a built dataset holds, from its report (dataset_report)."""
        return self.dataset_count(dataset)

    def planned_generations(self, rule: str, wildcards: dict) -> dict | None:
        """What a planned job of this probe asks a generator for, for the plan summary
        (workflow_scripts/plan_summary.py): {"what", "generator", "requests" (an upper bound, None
        when unknown), "cache" (its answers cache file)}; None for a job that generates nothing."""
        return None

    # ---- what the probe made: rule all and the report ----
    def targets(self) -> list[str]:
        """The final outputs `rule all` asks for (the probe's tables and plots) when the probe ran."""
        return []

    def table_paths(self) -> list[str]:
        """The probe's tables shown as report pages, with its per-dataset tables."""
        tables = [f"{self.R}/tables/{name}" for name, _, _ in self.probe.tables]
        return tables + [f"{self.R}/tables/{pattern.format(dataset=d)}"
                         for pattern, _ in self.probe.dataset_tables for d in self.datasets]

    def report_pages(self) -> list[tuple[str, str, str]]:
        """(table, subcategory, caption file) of every table page."""
        pages = [(f"{self.R}/tables/{name}", sub, caption) for name, sub, caption in self.probe.tables]
        return pages + [(f"{self.R}/tables/{pattern.format(dataset=d)}", d, caption)
                        for pattern, caption in self.probe.dataset_tables for d in self.datasets]

    def headline_options(self) -> dict:
        """Options of the probe's headline extractors (its declaration's `headlines`)."""
        return {}

    def report_plots(self) -> list[str]:
        """The PNG plots the Markdown report shows, in order."""
        return []

    def report_jsons(self) -> list[str]:
        """The dataset reports (counts) the report's Inputs page shows."""
        return []

    def generator_reports(self) -> list[str]:
        """Dataset reports that may name a text generator and its prompt (the provenance lists them)."""
        return []

    def data_sources(self) -> dict[str, str]:
        """Name -> local file or folder of every input the probe read (provenance: sha256)."""
        return {}

    def replicate_files(self) -> list[str]:
        """Every replicates file (bootstrap.write_replicates) the probe writes: the paired bootstrap
        replicates of its statistics per (dataset, model), read by the probe's differences table."""
        return []

    def outcome_entries(self) -> list[dict]:
        """The per-item right/wrong files behind a statistic that is a share of items, one per
        (dataset, model): {dataset, statistic, model, path}, the file a Parquet table with the
        items' `id` and `correct` (null where the model has no verdict). The differences table
        tests such a statistic by McNemar's exact test on these instead of the bootstrap."""
        return []

    def outcome_files(self) -> list[str]:
        """Input function of the differences table: the files of `outcome_entries` (a file that
        holds several statistics, e.g. retrieval's every k, once)."""
        return list(dict.fromkeys(e["path"] for e in self.outcome_entries()))


def plan_study(config: dict, results: str) -> tuple[Study, dict[str, ProbePlan]]:
    """The study of a validated config and every declared probe's plan: the one entry point that
    rules/common.smk plans the workflow by and plan_summary.load_study estimates it by, so the
    summary cannot count other jobs than the workflow runs. Before any probe plans its pairs, a
    stage adds what it makes (adapt: its recipes become models of `config`, in place)."""
    from workflow_scripts.probes import declarations

    for probe in declarations():
        if probe.prepare:
            probe.prepare(config, results)
    study = Study(config, results)
    return study, {p.name: p.planner()(study, p) for p in declarations()}
