"""Planning of the sentence-triplet probe: the input functions and params of rules/triplets.smk."""
from __future__ import annotations

from workflow_scripts.study import DatasetCount, ProbePlan, data_lines


class TripletsPlan(ProbePlan):
    def dataset_sources(self, dataset: str) -> list[str]:
        return self.config["triplets"]["datasets"][dataset].get("sources", [])

    def build_inputs(self, wildcards) -> dict:
        spec = self.config["triplets"]["datasets"][wildcards.dataset]
        files = (self.study.source_file(s) for s in self.dataset_sources(wildcards.dataset))
        inputs = {"sources": [f for f in files if f]}
        if "file" in spec:
            inputs["file"] = spec["file"]
        return {**inputs, **self.study.nltk_inputs()}

    # ---- what a dataset will hold, for the plan summary (ProbePlan.planned_counts) ----
    def dataset_count(self, dataset: str) -> DatasetCount:
        """A file of triplets: its rows (its `max_triplets` first); generated triplets: at most
        `max_triplets` (default the paper's size): how many the sources yield is known once built."""
        from workflow_scripts.triplets.datasets import PAPER_SIZES

        spec = self.config["triplets"]["datasets"][dataset]
        if "file" in spec:
            rows = data_lines(spec["file"], header=1 if spec["file"].endswith((".tsv", ".csv")) else 0)
            cap = spec.get("max_triplets")
            n = rows if cap is None or rows is None else min(rows, cap)
            return DatasetCount(dataset, n, "triplets", "<=" if n is not None else "?", f"rows of {spec['file']}")
        cap = spec.get("max_triplets", PAPER_SIZES.get(spec.get("kind", dataset)))
        return DatasetCount(dataset, cap, "triplets", "<=", "max_triplets; what the sources yield is known once built")

    def dataset_report(self, dataset: str) -> str:
        return f"{self.R}/reports/triplets/{dataset}.json"

    def built_count(self, dataset: str, report: dict) -> DatasetCount:
        return DatasetCount(dataset, report["size"], "triplets", "=", "built",
                            (report.get("texts") or {}).get("unique_texts"))

    def build_spec(self, wildcards) -> dict:
        return self.config["triplets"]["datasets"][wildcards.dataset]

    def sources(self, wildcards) -> dict:
        return {name: {"format": self.study.source_spec(name)["format"], "file": self.study.source_file(name)}
                for name in self.dataset_sources(wildcards.dataset)}

    def settings(self, wildcards) -> dict:
        keys = ("fixed_point_pivot", "passive_agent", "clause_max_tokens", "sick_partners", "templates")
        return {k: self.config["triplets"][k] for k in keys if k in self.config["triplets"]}

    def scoring(self, dataset: str) -> str:
        spec = self.config["triplets"]["datasets"][dataset]
        if "file" in spec:
            return spec.get("scoring", "strict")
        kind = spec.get("kind", dataset)
        if kind == "argument_sensitivity":
            # the seed's figures imply "strict", its prose "passive_over_reordered": a config choice
            return self.config["triplets"].get("argument_sensitivity_scoring", "strict")
        return "negation_variants" if kind == "negation_variants" else "strict"

    def scores(self) -> list[str]:
        return [f"{self.R}/triplets/{p.dataset}/{p.model}/scores.parquet" for p in self.pairs]

    def aggregate_entries(self, wildcards, input) -> list[dict]:
        return [{"dataset": p.dataset, "model": p.model, "scores": path, "scoring": self.scoring(p.dataset)}
                for p, path in zip(self.pairs, input)]

    def models(self) -> list[str]:
        return list(dict.fromkeys(p.model for p in self.pairs))

    def plots(self) -> list[str]:
        return [f"{self.R}/plots/triplets/{d}.png" for d in self.datasets]

    def targets(self) -> list[str]:
        return [f"{self.R}/tables/triplets_accuracy.csv"] if self.ran else []

    def replicate_files(self) -> list[str]:
        # one file for all (dataset, model) pairs: the aggregate job draws the bootstrap
        return [f"{self.R}/triplets/replicates.parquet"] if self.ran else []

    def clustered(self, dataset: str) -> bool:
        """Whether the dataset's bootstrap resamples clusters (templates' subjects x verbs), not triplets."""
        spec = self.config["triplets"]["datasets"][dataset]
        return ("file" not in spec and spec.get("kind", dataset) == "argument_sensitivity"
                and self.config["triplets"].get("bootstrap_unit", "clusters") == "clusters")

    def outcome_entries(self) -> list[dict]:
        # accuracy is the share of right triplets: each model's per-triplet verdicts (`correct`, by
        # `id`) let the differences table use McNemar's exact test. Not where triplets share a
        # subject or verb: McNemar takes them as independent; there the cluster bootstrap's p decides.
        # Triplets sharing a unit (`cluster`: a pair-graph component, else S) are tested by the exact
        # cluster sign-flip test over the units, as the bootstrap resamples them; `items` takes every
        # triplet alone.
        by_original = self.config["triplets"].get("bootstrap_unit", "clusters") == "clusters"
        return [{"dataset": p.dataset, "statistic": "accuracy", "model": p.model, "path": path,
                 **({"cluster": "cluster"} if by_original else {})}
                for p, path in zip(self.pairs, self.scores()) if not self.clustered(p.dataset)]

    def report_plots(self) -> list[str]:
        return self.plots()

    def report_jsons(self) -> list[str]:
        return [f"{self.R}/reports/triplets/{d}.json" for d in self.datasets]

    def data_sources(self) -> dict[str, str]:
        data = {}
        for d in self.datasets:
            data.update({s: self.study.source_file(s) for s in self.dataset_sources(d)})
            data[f"triplets.{d}"] = self.config["triplets"]["datasets"][d].get("file")
        return data
