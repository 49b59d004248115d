"""Planning of the retrieval probe: the input functions and params of rules/retrieval.smk."""
from __future__ import annotations

from workflow_scripts.study import DatasetCount, ProbePlan, data_lines


def local_paths(value) -> list[str]:
    """Every local `path` in a retrieval set's spec (its sources, TeleQnA's zip, ...): inputs of its build."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in ([v] if k == "path" and isinstance(v, str) else local_paths(v))]
    if isinstance(value, list):
        return [p for v in value for p in local_paths(v)]
    return []


class RetrievalPlan(ProbePlan):
    def set_spec(self, dataset: str) -> dict:
        return self.config["retrieval"]["datasets"][dataset]

    def build_inputs(self, wildcards) -> dict:
        return {"sources": local_paths(self.set_spec(wildcards.dataset)), **self.study.nltk_inputs()}

    def build_spec(self, wildcards) -> dict:
        """The set's config entry as the builder reads it (the evaluation split is the probe's)."""
        return {k: v for k, v in self.set_spec(wildcards.dataset).items() if k != "eval_split"}

    # ---- what a set will hold, for the plan summary (ProbePlan.planned_counts) ----
    def dataset_count(self, dataset: str) -> DatasetCount:
        """A local BEIR folder: its questions (queries.jsonl) and documents (corpus.jsonl), the texts
        their sum; a local tatoeba bitext: at most its pairs; the rest are counted once built."""
        import os

        spec = self.set_spec(dataset)
        path = spec.get("path")
        if spec["kind"] == "beir" and path and os.path.isdir(path):
            queries, documents = data_lines(f"{path}/queries.jsonl"), data_lines(f"{path}/corpus.jsonl")
            if queries is not None and documents is not None:
                return DatasetCount(dataset, queries, "questions", "<=", f"queries.jsonl, beside {documents:,} documents",
                                    queries + documents)
        if spec["kind"] == "tatoeba" and path:
            pairs = data_lines(path, header=1)
            if pairs is not None:
                return DatasetCount(dataset, pairs, "questions", "<=", f"pairs of {path}", 2 * pairs)
        return DatasetCount(dataset, None, "questions", "?", f"{spec['kind']} set: counted by its build job")

    def dataset_report(self, dataset: str) -> str:
        return f"{self.R}/reports/retrieval/{dataset}.json"

    def built_count(self, dataset: str, report: dict) -> DatasetCount:
        sizes = report.get("sizes") or {}
        return DatasetCount(dataset, sizes.get("queries"), "questions", "=",
                            f"built, beside {sizes.get('documents', 0):,} documents",
                            (report.get("texts") or {}).get("unique_texts"))

    def build_settings(self, wildcards) -> dict:
        return {"build": self.config["retrieval"]["build"]}

    # ---- a model that embeds questions apart from documents (a query template or prompt) ----
    def query_scope(self, dataset: str) -> str:
        """The text set of the set's questions alone (Study.scope_role: role `query`)."""
        return f"{self.scope(dataset)}.query"

    def queries_apart(self, model: str, dataset: str) -> bool:
        """Whether the model embeds questions otherwise than documents; else the questions' vectors
        are in the set's own store, as before."""
        return (self.study.embed_spec(model, self.query_scope(dataset))
                != self.study.embed_spec(model, self.scope(dataset)))

    def stores(self, wildcards) -> list[str]:
        """Input function: the model's stores of the set and, where the model embeds questions apart
        (Study.scope_role), of its questions; the search tells them apart by their manifests' scope."""
        stores = super().stores(wildcards)
        if self.queries_apart(wildcards.model, wildcards.dataset):
            stores += self.study.stores(wildcards.model, self.query_scope(wildcards.dataset))
        return stores

    def dataset_pattern(self) -> str:
        """Wildcard constraint: the configured sets' names only (`d.query` is not a set)."""
        import re
        return "|".join(re.escape(d) for d in self.section.get("datasets", {})) or "(?!)"

    def build_gpu(self, wildcards) -> int:
        """1 when the set's question generator runs on cuda."""
        spec = self.set_spec(wildcards.dataset)
        uses = "generator" in spec.get("questions", [])
        return 1 if uses and (spec.get("generator") or {}).get("device") == "cuda" else 0

    def planned_generations(self, rule: str, wildcards: dict) -> dict | None:
        """A set with `generator` questions: one question per sentence of its seeded sample."""
        spec = self.set_spec(wildcards.get("dataset", "")) if rule == "retrieval_build" else {}
        if "generator" not in spec.get("questions", []):
            return None
        from workflow_scripts.retrieval.questions import GENERATOR_DEFAULTS

        settings = {**GENERATOR_DEFAULTS, **(spec.get("generator") or {})}
        model = settings.get("model") or {}
        return {"what": f"retrieval {wildcards['dataset']}: questions",
                "generator": model.get("name") or model.get("path") or "SmolLM2-135M-Instruct",
                "requests": settings["max_sentences"],
                "cache": f"{self.R}/cache/generations/retrieval.{wildcards['dataset']}.jsonl"}

    def eval_split(self, dataset: str):
        return self.set_spec(dataset).get("eval_split", self.config["retrieval"]["eval_split"])

    def ks(self) -> list[int]:
        k = self.config["retrieval"]["k"]
        return list(range(k["min"], k["max"] + 1, k["step"]))

    def search_settings(self, wildcards) -> dict:
        r = self.config["retrieval"]
        return {"eval_split": self.eval_split(wildcards.dataset), "top_k": r["top_k"],
                "random_per_query": r["coe"]["random_per_query"]}

    def search_option(self, key: str):
        """A resource: how the search runs, not what it finds (a change reruns nothing)."""
        return lambda wildcards: self.config["retrieval"]["search"][key]

    def isotropy_settings(self, wildcards) -> dict:
        r = self.config["retrieval"]
        return {"eval_split": self.eval_split(wildcards.dataset), "ks": [r["top_k"]], **r["isotropy"]}

    def metric_settings(self, wildcards=None) -> dict:
        r = self.config["retrieval"]
        return {"ks": self.ks(), "top_k": r["top_k"], "bootstrap_b": r["bootstrap_b"], "draws": r["draws"],
                "thresholds": r["thresholds"], "coe": r["coe"]}

    def aggregate_settings(self, wildcards=None) -> dict:
        r = self.config["retrieval"]
        return {"table_k": r["table_k"], "correlations_k": r["table_k"], "bootstrap_b": r["bootstrap_b"],
                "transforms": r["isotropy"]["transforms"]}

    def pair_files(self, pair) -> dict[str, str]:
        base = f"{self.R}/retrieval/{pair.dataset}/{pair.model}"
        return {"summary": f"{base}/summary.parquet", "isotropy": f"{base}/isotropy.parquet",
                "similarities": f"{base}/similarities.parquet", "topk": f"{base}/topk.parquet"}

    def replicate_files(self) -> list[str]:
        """The metrics jobs' paired bootstrap replicates, one file per (set, model)."""
        return [f"{self.R}/retrieval/{p.dataset}/{p.model}/replicates.parquet" for p in self.pairs]

    def outcome_entries(self) -> list[dict]:
        # the full-data accuracy@k is the share of questions with a hit: each model's per-question
        # hits (metrics' outcomes.parquet, one file for every k) give McNemar's exact test
        return [{"dataset": p.dataset, "statistic": f"accuracy@{k}", "model": p.model,
                 "path": f"{self.R}/retrieval/{p.dataset}/{p.model}/outcomes.parquet"}
                for p in self.pairs for k in self.ks()]

    def aggregate_inputs(self, wildcards) -> dict:
        return self.pair_inputs()

    def aggregate_pairs(self, wildcards=None) -> list[dict]:
        """The (set, model) pairs in the order of aggregate_inputs: pair i's files are its inputs `<file>_i`."""
        return [{"dataset": p.dataset, "model": p.model} for p in self.pairs]

    def plots(self) -> list[tuple[str, str]]:
        return [(d, name) for d in self.datasets for name in ("accuracy_vs_k", "similarities")]

    def targets(self) -> list[str]:
        return [f"{self.R}/tables/retrieval_accuracy.csv"] if self.ran else []

    def headline_options(self) -> dict:
        return {"retrieval_k": self.config["retrieval"]["table_k"]}

    def report_plots(self) -> list[str]:
        return [f"{self.R}/plots/retrieval/{d}/{name}.png" for d, name in self.plots()]

    def report_jsons(self) -> list[str]:
        return [f"{self.R}/reports/retrieval/{d}.json" for d in self.datasets]

    def generator_reports(self) -> list[str]:
        return self.report_jsons()

    def data_sources(self) -> dict[str, str]:
        data = {}
        for d in self.datasets:
            for i, path in enumerate(local_paths(self.set_spec(d))):
                data[f"retrieval.{d}" + (f".{i}" if i else "")] = path
        return data
