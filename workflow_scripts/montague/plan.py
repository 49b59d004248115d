"""Planning of the Montague modifier probe: the input functions and params of rules/montague.smk."""
from __future__ import annotations

from workflow_scripts.study import ProbePlan


class MontaguePlan(ProbePlan):
    def phrase_inputs(self, wildcards) -> dict:
        """A word list read from a CSV: the file (a change rebuilds the phrases); lists given in the
        config are params."""
        spec = self.config["montague"]["datasets"][wildcards.dataset]
        return {"file": spec["file"]} if "file" in spec else {}

    def word_lists(self, wildcards) -> dict:
        """A word list's config entry (its adjective types in config order: the tables' columns)."""
        return self.config["montague"]["datasets"][wildcards.dataset]

    def shares(self) -> list[str]:
        return [f"{self.R}/montague/{p.dataset}/{p.model}/shares.parquet" for p in self.pairs]

    def replicate_files(self) -> list[str]:
        return [f"{self.R}/montague/{p.dataset}/{p.model}/replicates.parquet" for p in self.pairs]

    def aggregate_entries(self, wildcards, input) -> list[dict]:
        return [{"dataset": p.dataset, "model": p.model, "shares": path} for p, path in zip(self.pairs, input)]

    def models(self) -> list[str]:
        return list(dict.fromkeys(p.model for p in self.pairs))

    def plots(self, ext: str = "png") -> list[str]:
        return [f"{self.R}/plots/montague/{p.dataset}/{p.model}.{ext}" for p in self.pairs]

    def targets(self) -> list[str]:
        # the heat maps too: a new model's missing plot is what makes Snakemake rerun the aggregate
        return [f"{self.R}/tables/montague_single.csv", *self.plots()] if self.ran else []

    def report_plots(self) -> list[str]:
        return self.plots()

    def report_jsons(self) -> list[str]:
        return [f"{self.R}/reports/montague/{d}.json" for d in self.datasets]

    def data_sources(self) -> dict[str, str]:
        return {f"montague.{d}": self.config["montague"]["datasets"][d].get("file") for d in self.datasets}
