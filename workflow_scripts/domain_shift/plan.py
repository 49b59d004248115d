"""Planning of the domain-shift probe: the input functions and params of rules/domain_shift.smk."""
from __future__ import annotations

from workflow_scripts.study import DatasetCount, DatasetPair, ProbePlan


class DomainShiftPlan(ProbePlan):
    def __init__(self, study, probe):
        super().__init__(study, probe)
        # a plot per (dataset, model the workflow trained) whose root base model scores the dataset too
        self.plot_entries = [
            {"dataset": p.dataset, "model": p.model, "base": study.root_base(p.model),
             "png": f"{self.R}/plots/domain_shift/{p.dataset}/{p.model}.png"}
            for p in self.pairs if study.trained(p.model) and DatasetPair(p.dataset, study.root_base(p.model)) in self.pairs]

    def source_paths(self, dataset: str) -> dict[str, str]:
        """source label -> the local file or folder it is read from (workflow_scripts/domain_shift/texts.py)."""
        from workflow_scripts.domain_shift.texts import source_label

        spec = self.config["domain_shift"]["datasets"][dataset]
        paths = {}
        for src in spec["specific"] + spec["agnostic"]:
            if "retrieval" in src:
                paths[source_label(src)] = f"{self.R}/retrieval/sets/{src['retrieval']}"
            elif "corpus" in src:
                paths[source_label(src)] = f"{self.R}/corpora/{src['corpus']}"
            else:
                paths[source_label(src)] = src["file"]
        return paths

    # ---- what a dataset will hold, for the plan summary (ProbePlan.planned_counts) ----
    def dataset_count(self, dataset: str) -> DatasetCount:
        """At most max_texts texts of each group (specific, agnostic): what the sources hold is known
        once the sets and corpora they read are built."""
        cap = self.config["domain_shift"]["datasets"][dataset].get("max_texts")
        if cap is None:
            return super().dataset_count(dataset)
        return DatasetCount(dataset, 2 * cap, "texts", "<=", "max_texts per group, two groups", 2 * cap)

    def dataset_report(self, dataset: str) -> str:
        return f"{self.R}/reports/domain_shift/{dataset}.json"

    def built_count(self, dataset: str, report: dict) -> DatasetCount:
        texts = sum((report.get("texts") or {}).values())
        return DatasetCount(dataset, texts, "texts", "=", "built", (report.get("partitions") or {}).get("unique_texts"))

    def build_inputs(self, wildcards) -> list[str]:
        return sorted(set(self.source_paths(wildcards.dataset).values()))

    def build_spec(self, wildcards) -> dict:
        return self.config["domain_shift"]["datasets"][wildcards.dataset]

    def build_paths(self, wildcards) -> dict[str, str]:
        return self.source_paths(wildcards.dataset)

    def settings(self, wildcards=None) -> dict:
        settings = {k: self.config["domain_shift"][k] for k in ("bootstrap_b", "grid_step", "exact_kde_max_n")}
        k = self.config["domain_shift"].get("table_k", (self.config.get("retrieval") or {}).get("table_k", 5))
        return {**settings, "table_k": k}

    def pair_files(self, pair) -> dict[str, str]:
        base = f"{self.R}/domain_shift/{pair.dataset}/{pair.model}"
        return {"summary": f"{base}/summary.json", "curves": f"{base}/curves.parquet"}

    def replicate_files(self) -> list[str]:
        """The score jobs' paired bootstrap replicates, one file per (dataset, model)."""
        return [f"{self.R}/domain_shift/{p.dataset}/{p.model}/replicates.parquet" for p in self.pairs]

    def retrieval_ran(self) -> bool:
        """Whether the retrieval probe scores some model: the side-by-side table reads its tables."""
        return bool(self.study.dataset_pairs("retrieval"))

    def aggregate_inputs(self, wildcards) -> dict:
        inputs = self.pair_inputs()
        if self.retrieval_ran():
            inputs["retrieval_accuracy"] = f"{self.R}/tables/retrieval_accuracy.csv"
            inputs["retrieval_isotropy"] = f"{self.R}/tables/retrieval_isotropy.csv"
        return inputs

    def aggregate_entries(self, wildcards=None) -> list[dict]:
        """Param: the (dataset, model) pairs in the order of aggregate_inputs' `summary_<i>`, `curves_<i>`."""
        return [{"dataset": p.dataset, "model": p.model, "base": self.study.root_base(p.model),
                 "adaptation": self.study.adaptation(p.model)} for p in self.pairs]

    def models(self, wildcards=None) -> list[dict]:
        """The models of the side-by-side table (those that run retrieval or domain shift) with their
        root base and how each was made; a model of other probes only (an overlay's) changes nothing here."""
        return [{"model": m, "root": self.study.root_base(m), "adaptation": self.study.adaptation(m)}
                for m in self.config["models"]
                if self.study.runs_probe(m, "domain_shift") or self.study.runs_probe(m, "retrieval")]

    def plots_param(self, wildcards=None) -> list[dict]:
        """Param: the plots in the order of the rule's output `plots` (their files)."""
        return [{k: v for k, v in p.items() if k != "png"} for p in self.plot_entries]

    def targets(self) -> list[str]:
        return [f"{self.R}/tables/domain_shift.csv", *(p["png"] for p in self.plot_entries)] if self.ran else []

    def report_plots(self) -> list[str]:
        return [p["png"] for p in self.plot_entries]

    def report_jsons(self) -> list[str]:
        return [f"{self.R}/reports/domain_shift/{d}.json" for d in self.datasets]

    def data_sources(self) -> dict[str, str]:
        # files read in place (sets and corpora are the workflow's own outputs)
        return {f"domain_shift.{d}.{label}": path for d in self.datasets for label, path in self.source_paths(d).items()
                if not path.startswith(f"{self.R}/")}
