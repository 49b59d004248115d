"""Planning of the Montague modifier probe: the input functions and params of rules/montague.smk."""
from __future__ import annotations

from workflow_scripts.study import DatasetCount, ProbePlan


class MontaguePlan(ProbePlan):
    def phrase_inputs(self, wildcards) -> dict:
        """A word list read from a CSV: the file (a change rebuilds the phrases); lists given in the
        config are params."""
        spec = self.config["montague"]["datasets"][wildcards.dataset]
        return {"file": spec["file"]} if "file" in spec else {}

    def word_lists(self, wildcards) -> dict:
        """A word list's config entry (its adjective types in config order: the tables' columns)."""
        return self.config["montague"]["datasets"][wildcards.dataset]

    # ---- what a dataset will hold, for the plan summary (ProbePlan.planned_counts) ----
    def dataset_count(self, dataset: str) -> DatasetCount:
        """Exact from the word lists (phrases.py): N x A AN and N x A x (A - 1) AAN phrases; the
        texts add every word and the A x (A - 1) adjective pairs."""
        from workflow_scripts.montague.phrases import word_lists

        try:
            words = word_lists(self.config["montague"]["datasets"][dataset])
        except OSError:  # a word-list file not here yet
            return super().dataset_count(dataset)
        a, n = len(words.adjectives), len(words.nouns)
        phrases = n * a + n * a * (a - 1)
        return DatasetCount(dataset, phrases, "phrases", "=", f"{a} adjectives x {n} nouns",
                            phrases + a + n + a * (a - 1))

    def dataset_report(self, dataset: str) -> str:
        return f"{self.R}/reports/montague/{dataset}.json"

    def built_count(self, dataset: str, report: dict) -> DatasetCount:
        return DatasetCount(dataset, report["phrases"]["total"], "phrases", "=", "built",
                            (report.get("texts") or {}).get("unique_texts"))

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
