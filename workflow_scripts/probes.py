"""The probe registry: every probe declares itself in its own package, and this leaf module finds them.

A probe is a package `workflow_scripts/<name>/` holding
  probe.py      its declaration, a module-level `PROBE = Probe(...)` (this module's dataclasses only:
                cheap to import, no numpy or polars at import time)
  schema.yaml   the schema of its config section `<name>:`
  plan.py       its planner: a `workflow_scripts.study.ProbePlan` subclass with the (dataset, model)
                pairs it plans from config and its rules' input functions
and a rule file `rules/<name>.smk` included from the Snakefile; its data, report captions
(`report/*.rst`), published figures (`published.csv`) and one-probe study (`study.yaml`) lie in
`resources/<name>/`, its tests in `tests/<name>/`. The config schema, the cross-field
checks, the default resources, the NLTK data a study needs, `rule all`, the text sets' roles and
writers (embedding, shard errors, the TF-IDF fit's variants), the report (categories, table pages, the
Markdown sections, the model-by-probe overview) and the shared tests all iterate over
`declarations()`; nothing else keeps a list of probes, and no shared module names one
(tests/test_layers.py). A stage laid out like a probe (adapt: models the
workflow trains) declares itself the same way with `is_stage=True`: it has a config section, rules
and resources, but no model runs it as a probe and it has no report section.
"""
from __future__ import annotations

import fnmatch
import functools
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

PACKAGE_DIR = Path(__file__).parent
RESOURCES = PACKAGE_DIR.parent / "resources"
# captions of the report's pages that are no probe's own (the overview, differences, published figures)
SHARED_CAPTIONS = RESOURCES / "report"


@dataclass(frozen=True)
class Resources:
    """A rule's default resources (`resources.<rule>` in config overrides them). Memory and runtime
    grow with the attempt number. `heavy`: the rule must declare `benchmark:`."""
    threads: int = 1
    mem_mb: int = 1000
    runtime: int = 10
    heavy: bool = False
    # a job's own values: (wildcard, dotted config path) of the config entry that may set threads,
    # mem_mb or runtime for that job, e.g. ("recipe", "adapt.recipes"): a recipe's own resources
    per_job: tuple[str, str] | None = None


@dataclass(frozen=True)
class Headline:
    """A headline figure of the model-by-probe overview: read from a table the probe writes (a file
    name under results/tables/); `extract(frame, options)` gives rows with model, column, label,
    value, ci_low, ci_high. Nothing is recomputed."""
    table: str
    extract: Callable
    # which side is better; None: the probe states no better side (e.g. domain shift, where "lower"
    # would be our choice, not the seed's claim): the figure is shown but gets no verdict (no B mark)
    lower_is_better: bool | None = False
    # what the figure's n counts, the independent unit its bootstrap resamples (plural noun, e.g.
    # "questions"); an extractor's row may name its own (CSC: sentences, or hashed groups of them)
    unit: str = ""
    # the statistic's range: a figure at either end is marked on the overview (a ceiling or floor)
    bounds: tuple = (0.0, 1.0)
    # the statistics of the probe's replicates files behind this figure (the `statistic` the extractor
    # puts on its rows): fnmatch patterns, or a function of the options giving them. They make the
    # confirmatory family of the differences table (each model vs the surface-form baseline on them).
    # None: the probe's `directions` patterns (every statistic with a better side)
    statistics: tuple | Callable[[dict], tuple] | None = None


@dataclass(frozen=True)
class NltkNeeds:
    """NLTK packages a probe needs when configured: `always`, per configured source format
    (`<probe>.sources.<name>.format`), per dataset kind (`<probe>.datasets.<name>.kind`); `optional`:
    packages that choose a method (with them one method, without them a fallback that gives other
    numbers). The config chooses through the key `switch` (a dotted path in the probe's section);
    where `optional_if` says the config asks for the data-using method and the packages are
    missing, the plan stops (nltk_data.method_choices): the fallback is used only when the config
    asks for it explicitly, so a study gives the same numbers however it is started.
    `methods`: (the method with the data, the fallback) in words, and `fallback`: the setting that
    asks for the fallback, for the console and the message."""
    always: tuple[str, ...] = ()
    by_source_format: dict = field(default_factory=dict)
    by_dataset_kind: dict = field(default_factory=dict)
    optional: tuple[str, ...] = ()
    # whether the probe's config section uses the optional packages (default: whenever configured)
    optional_if: Callable[[dict], bool] | None = None
    switch: str = ""
    fallback: str = ""
    methods: tuple[str, str] = ("", "")


@dataclass(frozen=True)
class TextSet:
    """A kind of text set a probe writes (results/texts/<scope>/part-NNN.parquet, rules/common.smk),
    as the shared stages need to know it: the rule that writes it (the error about a damaged
    partition names it, shards.py), the role its texts are embedded for (model_settings.scope_role)
    and, for a corpus's text set, where the TF-IDF fit finds its variants."""
    rule: str
    # fnmatch pattern of the scope after `<probe>.` (a dataset `d`: `d`; retrieval's questions: `d.query`)
    pattern: str = "*"
    role: str = "text"  # `query`, `document` or `text` (model_settings.ROLES)
    # each corpus's text set (its scope: the corpus's name), not one of `<probe>.<dataset>`
    corpus: bool = False
    # with `corpus`: the folder under results/ holding each corpus's variants by its name (variants.py's
    # format), from which the TF-IDF fit counts the insertion variants' terms; "" where there are none
    variants: str = ""


@dataclass(frozen=True)
class Probe:
    name: str                    # package, config section, rule-file and report-category key
    title: str                   # report category and Markdown section title
    order: int                   # place in the report and the overview
    plan: str                    # "module:Class" of its ProbePlan, imported when a workflow plans
    rules: dict                  # rule name -> Resources: the probe's rules and their defaults
    summary: str = ""            # the Markdown report's paragraph under the title
    is_stage: bool = False       # a stage laid out like a probe: not a probe of `models.<m>.probes`
    needs_corpora: bool = False  # its texts come from the configured corpora
    check: Callable[[dict], list[str]] | None = None  # cross-field checks of the validated config
    # called with (config, results) before any probe plans: a stage adds what it makes (adapt: models)
    prepare: Callable[[dict, str], object] | None = None
    nltk: NltkNeeds = NltkNeeds()
    # report pages: (file under results/tables/, subcategory, caption file name: caption_file)
    tables: tuple = ()
    # per-dataset tables: (file pattern with {dataset}, caption file), shown in the dataset's subcategory
    dataset_tables: tuple = ()
    headlines: tuple = ()        # Headline entries for the overview
    # which way is better for the statistics of its replicates files (bootstrap.replicate_rows), for
    # the differences table's `better`: (fnmatch pattern of a statistic, "higher" | "lower"), first
    # match wins; a statistic no pattern matches has no direction (e.g. a mean cosine)
    directions: tuple = ()
    # the interval method per statistic of its replicates (bootstrap.interval_method): (fnmatch
    # pattern, "percentile" | "bca"), first match wins; "percentile" where none matches. BCa where
    # the estimator is biased (a KDE overlap), its jackknife over the probe's resampling units
    intervals: tuple = ()
    # the smallest effect of interest of each headline statistic, in its own units, with the reason
    # for it (verdicts.py): (fnmatch pattern, delta, reason), first match wins; `compare.margins`
    # overrides it per study. A confirmatory comparison's verdict word reads it
    margins: tuple = ()
    # the level a statistic is compared with where the surface-form baseline is degenerate (its
    # figure the same in every resample: fixed by its construction), which is also the chance level
    # of a direction check: (fnmatch pattern, level, name), name `chance` or `ceiling`
    references: tuple = ()
    # statistics whose separation from their reference decides W and `wrong direction` (CSC's
    # within-sentence AUC): fnmatch patterns
    separations: tuple = ()
    # statistics that are shares of right/wrong independent units (their intervals against a
    # reference are Wilson's over the units): fnmatch patterns
    shares: tuple = ()
    # the text sets it writes, first match wins (TextSet); the shared stages ask text_set(scope)
    text_sets: tuple = ()
    # results/<folder>/<name>/ directories of Parquet shards it writes: folder -> (what they are, with
    # {name}; the rule that writes them), for the error about a damaged shard (shards.py)
    shard_folders: dict = field(default_factory=dict)
    # the models it adds to `models` (a stage's: adapt's recipes), named by the config checks that run
    # before `prepare` registers them
    added_models: Callable[[dict], list[str]] | None = None
    # what the n of its headline figures counts, for the report's overview (e.g. "triplets")
    n_note: str = ""

    @property
    def schema_path(self) -> Path:
        return PACKAGE_DIR / self.name / "schema.yaml"

    @property
    def resources_dir(self) -> Path:
        """resources/<name>/: its data, report captions, published figures and one-probe study."""
        return RESOURCES / self.name

    @property
    def study_config(self) -> Path:
        """Its one-probe study (docs/adding-a-probe.md), which the shared tests run and whose section
        the generated config cases start from when config.yaml has none (tests/schema_cases.py)."""
        return self.resources_dir / "study.yaml"

    def caption_file(self, name: str) -> Path:
        """The caption file `name` of one of its report pages: its own (resources/<name>/report/),
        else a shared one (resources/report/, e.g. the overview table's)."""
        own = self.resources_dir / "report" / name
        return own if own.exists() else SHARED_CAPTIONS / name

    def planner(self):
        module, _, cls = self.plan.partition(":")
        return getattr(importlib.import_module(module), cls)


# the declarations, imported by their file names: part of the code of every job that imports this
# module (workflow_scripts/code_digest.py)
DISCOVERS = ("*/probe.py",)


@functools.lru_cache(maxsize=8)
def _discover(root: str) -> tuple[Probe, ...]:
    found = []
    for path in sorted(Path(root).glob(DISCOVERS[0])):
        module = importlib.import_module(f"workflow_scripts.{path.parent.name}.probe")
        probe = module.PROBE
        if probe.name != path.parent.name:
            raise ValueError(f"{path}: declares probe {probe.name!r}; expected the package's name {path.parent.name!r}")
        found.append(probe)
    return tuple(sorted(found, key=lambda p: (p.order, p.name)))


def declarations(stages: bool = True) -> list[Probe]:
    """Every declared probe in report order; with `stages`, the stages laid out like one too."""
    return [p for p in _discover(str(PACKAGE_DIR)) if stages or not p.is_stage]


def probe_names() -> list[str]:
    """The probes a model may run (`models.<name>.probes`)."""
    return [p.name for p in declarations(stages=False)]


def get(name: str) -> Probe:
    for p in declarations():
        if p.name == name:
            return p
    raise KeyError(f"no probe or stage named {name!r} (declared: {', '.join(p.name for p in declarations())})")


def text_set(scope: str) -> TextSet | None:
    """The declaration of text set `scope`: a probe's (`<probe>.<dataset>...`), or a corpus's (a
    scope without a dot); None where no probe declares it."""
    probe, dot, rest = scope.partition(".")
    for p in declarations():
        for t in p.text_sets:
            a_corpus = t.corpus and not dot
            a_dataset = not t.corpus and dot and p.name == probe and fnmatch.fnmatchcase(rest, t.pattern)
            if a_corpus or a_dataset:
                return t
    return None


def corpus_variants() -> str:
    """The folder under results/ holding each corpus's variants ("" where no probe writes them)."""
    return next((t.variants for p in declarations() for t in p.text_sets if t.corpus and t.variants), "")


def corpus_probe() -> str:
    """The probe whose text sets are the corpora themselves ("" where none declares one)."""
    return next((p.name for p in declarations() for t in p.text_sets if t.corpus), "")


def shard_folders() -> dict[str, tuple[str, str]]:
    """results/<folder>/ -> (what its directories hold, the rule that writes them), of every probe."""
    return {folder: produced for p in declarations() for folder, produced in p.shard_folders.items()}


def results_folders() -> set[str]:
    """The folders the probes write directly under a results folder: each one's name and its shard
    and variants folders."""
    return ({p.name for p in declarations()} | set(shard_folders()) | {corpus_variants()}) - {""}


def added_models(config: dict) -> list[str]:
    """The models the stages add to `models` (adapt's recipes), before they are registered."""
    return [m for p in declarations() if p.added_models for m in p.added_models(config)]


# Categories of the HTML report that are not a probe's.
SHARED_CATEGORIES = {"overview": "Overview", "inputs": "Inputs", "runtime": "Runtime"}


def categories() -> dict[str, str]:
    """Report category per key: the overview first, each probe's title, then inputs and runtime."""
    return {"overview": SHARED_CATEGORIES["overview"], **{p.name: p.title for p in declarations(stages=False)},
            "inputs": SHARED_CATEGORIES["inputs"], "runtime": SHARED_CATEGORIES["runtime"]}


def declared_rules() -> dict[str, Resources]:
    """rule -> its declared Resources, of every declared rule."""
    return {rule: r for p in declarations() for rule, r in p.rules.items()}


def headline_statistics(probe: str, options: dict | None = None) -> tuple[str, ...]:
    """The fnmatch patterns of a probe's headline statistics (its Headlines' `statistics`), given the
    headline options (retrieval's table k, set theory's measure): the confirmatory family of its
    differences table compares each model with the surface-form baseline on these."""
    declared = get(probe)
    out: list[str] = []
    for h in declared.headlines:
        if h.statistics is None:
            out += [pattern for pattern, _ in declared.directions]
        else:
            out += h.statistics(options or {}) if callable(h.statistics) else h.statistics
    return tuple(dict.fromkeys(out))


# ---- helpers for the probes' headline extractors ----
def number(v) -> float | None:
    """A table cell as a float; empty, non-numeric and NaN cells as None (not run or undefined)."""
    if v is None or v == "":
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if x != x else x


def headline_rows(frame, column: Callable[[dict], str], label: Callable[[dict], str], value: str | Callable[[dict], object],
                  low: str | Callable[[dict], object], high: str | Callable[[dict], object],
                  n: str | Callable[[dict], object] | None = None,
                  interval: Callable[[dict], str] | None = None,
                  unit: Callable[[dict], str] | None = None,
                  dataset: str | None = None, statistic: Callable[[dict], str] | None = None,
                  extra: Callable[[dict], dict] | None = None) -> list[dict]:
    """Overview rows (model, column, label, value, ci_low, ci_high, n, interval[, unit][, dataset,
    statistic][, extra keys]) from a probe table's rows, one per row: every probe's extractor builds
    its rows here. `value`, `low`, `high`: the column (or a function of the row giving the cell) of
    the figure and its interval; `n`: the column (or a function of the row) giving the independent
    units behind the figure, the ones its bootstrap resamples (None where the table has no such
    column); `interval`: which interval it is, where not the probe's usual one; `unit`: what n
    counts, where the row decides it (otherwise the Headline's `unit`); `dataset` (a column) and
    `statistic`, given together: the figure's dataset and statistic in the probe's replicates, by
    which the differences table's comparisons find it; `extra`: more keys of the row (CSC's wrong_direction)."""
    def cell(r: dict, source):
        return number(source(r) if callable(source) else r[source])

    def count(r: dict):
        x = number(n(r) if callable(n) else r.get(n)) if n is not None else None
        return None if x is None else int(x)
    out = []
    for r in frame.iter_rows(named=True):
        row = {"model": r["model"], "column": column(r), "label": label(r), "value": cell(r, value),
               "ci_low": cell(r, low), "ci_high": cell(r, high), "n": count(r),
               "interval": interval(r) if interval else ""}
        if unit is not None and unit(r):
            row["unit"] = unit(r)
        if dataset is not None:
            row.update(dataset=r[dataset], statistic=statistic(r))
        if extra is not None:
            row.update(extra(r))
        out.append(row)
    return out


def smallest(*columns: str) -> Callable[[dict], object]:
    """n as the smallest of several count columns (None where one is missing)."""
    def n(r: dict):
        values = [number(r.get(c)) for c in columns]
        return None if any(v is None for v in values) else min(values)
    return n
