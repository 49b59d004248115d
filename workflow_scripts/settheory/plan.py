"""Planning of the set-theoretic compositionality probe: the input functions and params of
rules/settheory.smk."""
from __future__ import annotations

import os

from workflow_scripts.study import DatasetCount, ProbePlan, data_lines

# results/settheory/samples/ holds every sample set's table: never a sample set's folder
SET_NAME = r"(?!samples$)[A-Za-z0-9][A-Za-z0-9_.-]*"


class SettheoryPlan(ProbePlan):
    def set_spec(self, dataset: str) -> dict:
        return self.config["settheory"]["datasets"][dataset]

    def generator(self, dataset: str) -> tuple[str, dict]:
        """(name, entry) of a built sample set's generator: settheory.generators over the built-in ones."""
        from workflow_scripts.settheory.defaults import DEFAULT_GENERATORS, DEFAULT_SET

        name = self.set_spec(dataset).get("generator", DEFAULT_SET["generator"])
        return name, {**DEFAULT_GENERATORS, **self.config["settheory"]["generators"]}[name]

    def prompt(self, dataset: str) -> dict:
        from workflow_scripts.settheory.defaults import DEFAULT_PROMPTS, DEFAULT_SET

        name = self.set_spec(dataset).get("prompt", DEFAULT_SET["prompt"])
        return {**DEFAULT_PROMPTS, **self.config["settheory"]["prompts"]}[name]

    def device(self, dataset: str) -> str:
        """The device a built sample set's generator runs on (`auto`: cuda when the planning process
        sees a GPU); imported sets need none."""
        if "file" in self.set_spec(dataset):
            return "cpu"
        device = self.generator(dataset)[1].get("device", "cpu")
        return self.study.auto_device() if device == "auto" else device

    # ---- what a sample set will hold, for the plan summary (ProbePlan.planned_counts) ----
    def dataset_count(self, dataset: str) -> DatasetCount:
        """An imported table: at most its rows; built from articles: at most max_articles x
        windows_per_article windows (unknown without max_articles: every article's)."""
        from workflow_scripts.settheory.samples import DEFAULT_SET

        spec = {**DEFAULT_SET, **self.set_spec(dataset)}
        if "file" in spec:
            rows = data_lines(spec["file"], header=1 if spec["file"].endswith((".tsv", ".tab", ".csv")) else 0)
            return DatasetCount(dataset, rows, "windows", "<=" if rows is not None else "?", f"rows of {spec['file']}")
        if spec.get("max_articles"):
            return DatasetCount(dataset, spec["max_articles"] * spec["windows_per_article"], "windows", "<=",
                                "max_articles x windows_per_article")
        return DatasetCount(dataset, None, "windows", "?", "every article's windows: counted by its build job")

    def dataset_report(self, dataset: str) -> str:
        return f"{self.R}/reports/settheory/{dataset}.json"

    def built_count(self, dataset: str, report: dict) -> DatasetCount:
        return DatasetCount(dataset, (report.get("counts") or {}).get("samples"), "windows", "=", "built",
                            (report.get("texts") or {}).get("unique_texts"))

    def samples_inputs(self, wildcards) -> dict:
        spec = self.set_spec(wildcards.dataset)
        if "file" in spec:
            return {"file": spec["file"]}
        return {"articles": f"{self.R}/articles/{spec['articles']}"}

    def samples_spec(self, wildcards) -> dict:
        return self.set_spec(wildcards.dataset)

    def samples_generation(self, wildcards) -> dict:
        """A built sample set's generator {name, spec}, prompt, device and generation cache; an
        imported set has none ({})."""
        if "file" in self.set_spec(wildcards.dataset):
            return {}
        name, spec = self.generator(wildcards.dataset)
        return {"name": name, "spec": spec, "prompt": self.prompt(wildcards.dataset),
                "device": self.device(wildcards.dataset), "cache": self.generation_cache(wildcards.dataset)}

    def generation_cache(self, dataset: str) -> str:
        from workflow_scripts.generator import spec_digest

        name, spec = self.generator(dataset)
        cache_dir = self.config["settheory"].get("generation_cache") or f"{self.R}/cache/generations"
        return os.path.join(cache_dir, f"{name}-{spec_digest(spec)}.jsonl")

    def planned_generations(self, rule: str, wildcards: dict) -> dict | None:
        """Two fusions per window: up to max_articles x windows_per_article windows (every article's
        when max_articles is not set: unknown here)."""
        if rule != "settheory_samples" or "file" in self.set_spec(wildcards["dataset"]):
            return None
        from workflow_scripts.settheory.defaults import DEFAULT_SET

        spec = {**DEFAULT_SET, **self.set_spec(wildcards["dataset"])}
        windows = spec["max_articles"] * spec["windows_per_article"] if spec.get("max_articles") else None
        return {"what": f"settheory {wildcards['dataset']}: fusions", "generator": self.generator(wildcards["dataset"])[0],
                "requests": None if windows is None else 2 * windows,
                "cache": self.generation_cache(wildcards["dataset"])}

    def filter_inputs(self, wildcards) -> dict:
        scope = self.scope(wildcards.dataset)
        return {"samples": f"{self.R}/settheory/samples/{wildcards.dataset}.parquet",
                "stores": [s for m in self.config["settheory"]["filter"]["encoders"] for s in self.study.stores(m, scope)]}

    def filter_spec(self, wildcards=None) -> dict:
        f = self.config["settheory"]["filter"]
        return {"rule": f["rule"], "threshold": f["threshold"],
                "encoders": [{"name": m, "spec": self.study.embed_spec(m)} for m in f["encoders"]]}

    def pair_files(self, pair) -> dict[str, str]:
        return {"measures": f"{self.R}/settheory/{pair.dataset}/{pair.model}/measures.parquet",
                "samples": f"{self.R}/settheory/samples/{pair.dataset}.parquet",
                "filter": f"{self.R}/reports/settheory_filter/{pair.dataset}.json"}

    def aggregate_inputs(self, wildcards) -> dict:
        return self.pair_inputs()

    def aggregate_pairs(self, wildcards=None) -> list[dict]:
        """The aggregate's (sample set, model) pairs, in the order of its inputs <key>_<i>."""
        return [{"sampleset": p.dataset, "model": p.model} for p in self.pairs]

    def criterion_settings(self, wildcards=None) -> dict:
        keys = ("measures", "fixed_bounds", "bounds", "middle_tolerance", "c5", "c6", "histogram_bins", "bootstrap_b")
        return {k: self.config["settheory"][k] for k in keys}

    def replicate_files(self) -> list[str]:
        """The aggregate's paired bootstrap replicates of every share: one file per sample set, all
        its models (the pooled bounds make it one job over every model)."""
        return [f"{self.R}/settheory/{d}/replicates.parquet" for d in self.datasets]

    def plots(self) -> list[str]:
        return [f"{self.R}/plots/settheory/{p.dataset}/{p.model}.png" for p in self.pairs]

    def targets(self) -> list[str]:
        return [f"{self.R}/tables/settheory_shares.csv"] if self.ran else []

    def headline_options(self) -> dict:
        measures = self.config["settheory"]["measures"]
        return {"settheory_measure": "cosine" if "cosine" in measures or not measures else measures[0]}

    def collections(self) -> list[str]:
        """The article collections the built sample sets read, in order."""
        return list(dict.fromkeys(self.set_spec(d)["articles"] for d in self.datasets if "articles" in self.set_spec(d)))

    def report_plots(self) -> list[str]:
        return self.plots()

    def report_jsons(self) -> list[str]:
        return ([f"{self.R}/reports/articles/{a}.json" for a in self.collections()]
                + [f"{self.R}/reports/settheory/{d}.json" for d in self.datasets]
                + [f"{self.R}/reports/settheory_filter/{d}.json" for d in self.datasets])

    def generator_reports(self) -> list[str]:
        return [f"{self.R}/reports/settheory/{d}.json" for d in self.datasets]

    def data_sources(self) -> dict[str, str]:
        return {f"settheory.{d}": self.set_spec(d).get("file") or self.study.source_file(self.set_spec(d)["articles"])
                for d in self.datasets}
