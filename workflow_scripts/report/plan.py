"""Planning of the report stage (rules/report.smk) from the probes' plans: what the report reads and
shows for the probes that ran, and the params of its job (report/build.py). No probe is named here: each one's tables, plots, dataset reports,
data sources and headline options come from its declaration and its plan."""
from __future__ import annotations

import os

from workflow_scripts import published
from workflow_scripts.encoders import family_of
from workflow_scripts.probes import RESOURCES as RESOURCES_DIR
from workflow_scripts.probes import SHARED_CAPTIONS, Probe
from workflow_scripts.report.overview import headline_tables
from workflow_scripts.study_folders import portable_path
from workflow_scripts.study import ProbePlan, Study

OVERVIEW_TABLE = ("overview.csv", "Overview", "overview_table.rst")
DIFFERENCES_CAPTION = "differences.rst"
RANKS_CAPTION = "ranks.rst"
PUBLISHED_CAPTION = "published.rst"
RESOURCES = str(RESOURCES_DIR)
CHECKOUT = os.path.dirname(RESOURCES)


def caption_path(probe: Probe | None, name: str) -> str:
    """A page's caption file, relative to the checkout (rules/report.smk's `caption=` adds `../`): the
    probe's own (resources/<probe>/report/), else a shared one (resources/report/)."""
    path = probe.caption_file(name) if probe else SHARED_CAPTIONS / name
    return os.path.relpath(path, CHECKOUT)


def shipped_only(paths, resources: str = RESOURCES) -> bool:
    """Whether there is at least one input and every one lies under `resources` (the workflow's
    shipped demo samples), symbolic links resolved."""
    root = os.path.realpath(resources)
    paths = [os.path.realpath(p) for p in paths if p]
    return bool(paths) and all(os.path.commonpath([root, p]) == root for p in paths)


class ReportPlan:
    def __init__(self, study: Study, plans: list[ProbePlan]):
        self.study = study
        self.config = study.config
        self.R = study.results
        self.plans = [p for p in plans if p.ran and not p.probe.is_stage]
        self.probes = [p.name for p in self.plans]
        # the paired model comparisons (rules/differences.smk) of every probe that writes replicates
        self.differences = [self.differences_table(p) for p in self.plans if p.replicate_files()]
        overview = (f"{self.R}/tables/{OVERVIEW_TABLE[0]}", *OVERVIEW_TABLE[1:])
        # (probe, table, page, subcategory, caption) of every table shown as a page: the overview's
        # first, then each probe's tables, then its per-dataset tables in the dataset's subcategory
        # (the caption as its file relative to the checkout, caption_path)
        declared = {p.name: p.probe for p in self.plans}
        self.pages = [(probe, table, f"{self.R}/report/tables/{os.path.basename(table).removesuffix('.csv')}.html",
                       sub, caption_path(declared.get(probe), caption))
                      for probe, pages in [("overview", [overview])] + [(p.name, p.report_pages() + self.difference_pages(p))
                                                                          for p in self.plans]
                      for table, sub, caption in pages]
        # the papers' published figures of each probe that has some: a page of their own, apart from our tables
        # (relative to the working directory when inside it: a moved checkout keeps the report's inputs)
        self.pages += [(p.name, portable_path(published.path(p.name)), f"{self.R}/report/tables/published_{p.name}.html",
                        "Published figures", caption_path(p.probe, PUBLISHED_CAPTION))
                       for p in self.plans if published.path(p.name).exists()]
        # the probes' tables the report reads: the overview's headline tables and the pages' tables
        self.tables = list(dict.fromkeys([f"{self.R}/tables/{name}" for name in headline_tables(self.probes)]
                                         + [t for probe, t, _, _, _ in self.pages if probe != "overview"]))
        self.page_tables = [t for probe, t, _, _, _ in self.pages if probe != "overview"]
        # the corpora's inputs, when the study has corpora: ingest reports and the length buckets
        self.ingest = [f"{self.R}/reports/ingest/{s}.json" for s in self.config["sources"]]
        self.lengths = [f"{self.R}/tables/length_buckets.csv"] if self.config["corpora"] else []
        # every input and dataset report: their counts are the Inputs page
        self.jsons = self.ingest + [j for p in self.plans for j in p.report_jsons()]
        # dataset reports that may name a text generator and its prompt (the provenance lists them)
        self.generator_jsons = [j for p in self.plans for j in p.generator_reports()]
        self.plots = [plot for p in self.plans for plot in p.report_plots()]
        # one embedding store per model (its manifest names the model's origin and device)
        self.stores: dict[str, str] = {}
        for plan in self.plans:
            for pair in plan.pairs:
                self.stores.setdefault(pair.model, study.stores(pair.model, plan.pair_scope(pair))[0])

    def differences_table(self, plan: ProbePlan) -> str:
        return f"{self.R}/tables/{plan.name}_differences.csv"

    def ranks_table(self, plan: ProbePlan) -> str:
        return f"{self.R}/tables/{plan.name}_ranks.csv"

    def difference_pages(self, plan: ProbePlan) -> list[tuple[str, str, str]]:
        """(table, subcategory, caption file) of the probe's differences page and its leaderboard (the
        rank table), where it has them."""
        if not plan.replicate_files():
            return []
        return [(self.differences_table(plan), "Differences", DIFFERENCES_CAPTION),
                (self.ranks_table(plan), "Leaderboard", RANKS_CAPTION)]

    def written_tables(self) -> list[str]:
        """Every table the report shows that a job of the study writes (the overview, the probes'
        tables, the differences; not the published figures shipped under resources/): the
        provenance names the code digest of each."""
        shown = [table for _, table, _, _, _ in self.pages]
        return [t for t in dict.fromkeys(shown + self.tables) if t.startswith(f"{self.R}/")]

    def data_sources(self, wildcards=None) -> dict[str, str]:
        """Name -> local file or folder of every input the probes that ran read (provenance: sha256)."""
        data = {s: self.study.source_file(s) for s in self.config["sources"]}
        for plan in self.plans:
            data.update(plan.data_sources())
        for m in self.stores:  # the model files the embedding jobs read (a hub model's origin is in its manifest)
            spec = self.config["models"][m]
            if family_of(spec).model_file or spec.get("adapted"):
                data[f"model {m}"] = self.study.model_file(m)
        return {name: path for name, path in data.items() if path}

    def demo_inputs(self) -> bool:
        """Whether every input of the run is one of the samples shipped under the workflow's resources/
        (the report's first screen then says its numbers check the workflow, not the models). Models
        the workflow trains (adapt) are outputs, not inputs: what they were trained on is counted."""
        trained = {f"model {m}" for m, spec in self.config["models"].items() if spec.get("adapted")}
        return shipped_only(path for name, path in self.data_sources().items() if name not in trained)

    def first_screen_settings(self, wildcards=None) -> dict:
        """Param: the first screen's settings (report/overview.py): report.min_n, and whether the demo
        banner shows."""
        return {"min_n": int((self.config.get("report") or {}).get("min_n", 100)), "demo": self.demo_inputs()}

    def model_specs(self, wildcards=None) -> dict[str, dict]:
        """Param: what decides each model's vectors (family, name/path/revision, ...; Study.embed_spec),
        not how its jobs run, in config order."""
        return {m: self.study.embed_spec(m) for m in self.config["models"]}

    def run_settings(self, wildcards=None) -> dict:
        """Param: the run's settings the provenance names."""
        return {k: self.config[k] for k in ("seed", "embedding_partitions")}

    def data_files(self) -> list[str]:
        return sorted(set(self.data_sources().values()))

    def sections(self, wildcards=None) -> list[dict]:
        """Param: the Markdown report's section per probe that ran (its declaration's title and
        summary, its table pages with their captions' text, its plots)."""
        def caption(probe: Probe, name: str) -> str:
            return probe.caption_file(name).read_text(encoding="utf-8")
        return [{"probe": p.name, "title": p.probe.title, "summary": p.probe.summary,
                 "tables": [{"path": t, "caption": caption(p.probe, c)} for t, _, c in p.report_pages()],
                 "plots": p.report_plots(),
                 "differences": self.differences_table(p) if p.replicate_files() else None}
                for p in self.plans]

    def headline_options(self, wildcards=None) -> dict:
        """Param: the options of the probes' headline extractors (retrieval's table k, ...)."""
        return {k: v for p in self.plans for k, v in p.headline_options().items()}
