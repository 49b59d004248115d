"""Planning of the CSC probe: (corpus, model) pairs and the input functions of rules/csc.smk."""
from __future__ import annotations

from workflow_scripts.csc.conditions import NEGATIVE_CONDITIONS
from workflow_scripts.study import Pair, ProbePlan


class CscPlan(ProbePlan):
    def plan_pairs(self) -> list[Pair]:
        return [Pair(c, m) for m in self.config["models"] if self.study.runs_probe(m, "csc")
                for c in self.study.model_corpora(m)]

    def planned_datasets(self) -> list[str]:
        """The corpora some model scores, in config order."""
        scored = {p.corpus for p in self.pairs}
        return [c for c in self.config.get("corpora") or {} if c in scored]

    def pair_scope(self, pair) -> str:
        return pair.corpus  # a corpus is its own text set

    def perturb_settings(self, wildcards) -> dict:
        """The part of `csc.perturb` a corpus's variants depend on: its language's terms only, so
        editing another language's terms reruns nothing here."""
        settings = self.config["csc"]["perturb"]
        language = self.config["corpora"][wildcards.corpus]["language"]
        return {**settings, "fuzz_terms": {language: settings["fuzz_terms"][language]},
                "negation_terms": {language: settings["negation_terms"][language]}}

    def nltk_plan(self, wildcards) -> dict | None:
        """NLTK data and version the corpus's grammatical negation would use (package name@digest, no
        paths; null where it gets none): a param, so that installing, removing or changing them
        reruns its perturbation and what follows. Cheap: stats and checksums, no nltk import."""
        from workflow_scripts.csc.negation import grammatical_negation_plan

        language = self.config["corpora"][wildcards.corpus]["language"]
        return grammatical_negation_plan(self.config["csc"]["perturb"], language)

    def nltk_method_applies(self) -> bool:
        """The grammatical negation (tagger or rules) applies where a scored corpus's language gets it."""
        settings = self.config["csc"]["perturb"].get("grammatical_negation", {})
        languages = settings.get("languages", ["en"])
        return settings.get("enabled", True) and any(
            self.config["corpora"][c]["language"] in languages for c in self.datasets)

    def stores(self, wildcards) -> list[str]:
        return self.study.stores(wildcards.model, wildcards.corpus)

    def within_margins(self, wildcards=None) -> dict[str, float]:
        """Param of the aggregate: condition -> the margin of its within-sentence AUC (the probe's
        declaration or the study's `compare.margins.csc`), which decides each row's separation."""
        from workflow_scripts.verdicts import margin_of

        overrides = ((self.config.get("compare") or {}).get("margins") or {}).get("csc")
        return {c: margin_of(self.probe.margins, f"{c}/within_auc", overrides)[0] for c in NEGATIVE_CONDITIONS}

    def summaries(self) -> list[str]:
        return [f"{self.R}/csc/{p.corpus}/{p.model}/summary.json" for p in self.pairs]

    def replicate_files(self) -> list[str]:
        return [f"{self.R}/csc/{p.corpus}/{p.model}/replicates.parquet" for p in self.pairs]

    def plots(self) -> list[str]:
        return [f"{self.R}/plots/csc/{p.corpus}/{p.model}.png" for p in self.pairs]

    def targets(self) -> list[str]:
        return [f"{self.R}/tables/csc_overlap.csv", *self.plots()] if self.ran else []

    def report_plots(self) -> list[str]:
        return self.plots()

    def report_jsons(self) -> list[str]:
        return [f"{self.R}/reports/perturb/{c}.json" for c in self.datasets]
