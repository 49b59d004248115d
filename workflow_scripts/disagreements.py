"""Items behind a number (issue 26): per probe dataset, the items where two compared models
disagree most, with their texts.

A probe shows its items by a module `workflow_scripts/<probe>/items.py` (found, not listed here):
`item_files(results, config, dataset, model)` names the files that hold one model's per-item scores
and the items' texts, `read_items(files)` reads them into one row per item: `item_id` (a string),
the item's text columns, `score` (Float64) and, where the probe has one, `correct`; `SCORE` says what
the score is. A probe with many items (CSC: 16M variants per corpus at 2.56M pairs) also gives
`read_scores(files)` (item_id, score: no texts) and `read_items_of(files, ids)` (those items alone):
the job reads every model's scores, chooses the items, then reads only their texts (other probes'
items are read twice, once for the scores and once for the listed items' texts: small datasets). A
probe without that module (domain_shift: its items are text pairs whose cosines are not kept) has
no disagreement page.

Per dataset, for each compared pair (A, B) (paired_statistics.compared_pairs, from the `compare:` config,
default: every model against the surface-form baseline and against the first model), the N items
(default 20) with the largest |score_A - score_B|, ties broken by item id (as text); items where
either score is undefined (NaN or null), or the two scores are equal, are left out (fewer rows then). Written: a CSV (one row per pair and item) and an
HTML page for Snakemake's report. The job of rule disagreements (rules/disagreements.smk) is
run_disagreements.
"""
from __future__ import annotations

import html
import importlib
import importlib.util
from types import ModuleType

import polars as pl

from workflow_scripts.common import atomic_path, setup_logging
from workflow_scripts.paired_statistics import compared_pairs

TOP = 20
# the probes' items modules, imported by name (items_module): part of this job's code
# (workflow_scripts/code_digest.py)
DISCOVERS = ("*/items.py",)


def items_module(probe: str) -> ModuleType | None:
    """The probe's items module, or None where the probe has none."""
    name = f"workflow_scripts.{probe}.items"
    try:
        found = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        return None
    return importlib.import_module(name) if found else None


def top_disagreements(a: pl.DataFrame, b: pl.DataFrame, top: int = TOP) -> pl.DataFrame:
    """The `top` items of both per-item frames with the largest |score_a - score_b| (ties: item id
    ascending), with a's text columns, both scores (and flags), and the difference A - B."""
    texts = [c for c in a.columns if c not in ("item_id", "score", "correct")]
    flags = "correct" in a.columns and "correct" in b.columns
    left = a.select("item_id", *texts, pl.col("score").alias("score_a"),
                    *([pl.col("correct").alias("correct_a")] if flags else []))
    right = b.select("item_id", pl.col("score").alias("score_b"), *([pl.col("correct").alias("correct_b")] if flags else []))
    both = left.join(right, on="item_id", how="inner")
    defined = pl.col("score_a").is_not_null() & pl.col("score_b").is_not_null() \
        & pl.col("score_a").is_not_nan() & pl.col("score_b").is_not_nan()
    both = both.filter(defined).with_columns((pl.col("score_a") - pl.col("score_b")).alias("difference"))
    both = (both.with_columns(pl.col("difference").abs().alias("abs_difference"))
            .filter(pl.col("abs_difference") > 0))  # equal scores: no disagreement to show
    if both.schema["item_id"] != pl.Utf8:
        # numeric ids (read_scores of a large probe): the rows that can make the top, ties at its
        # edge included, then their ids as text, which break the ties as for every probe
        if both.height > top:
            both = both.filter(pl.col("abs_difference") >= both["abs_difference"].top_k(top).min())
        both = both.with_columns(pl.col("item_id").cast(pl.Utf8))
    return both.sort(["abs_difference", "item_id"], descending=[True, False]).head(top).drop("abs_difference")


def disagreements(items: dict[str, pl.DataFrame], pairs: list[tuple[str, str]], top: int = TOP) -> pl.DataFrame:
    """One frame: per pair (A, B) in the given order, its top items, ranked 1..top."""
    frames = []
    for a, b in pairs:
        t = top_disagreements(items[a], items[b], top)
        frames.append(t.select(pl.lit(a).alias("model_a"), pl.lit(b).alias("model_b"),
                               pl.int_range(1, t.height + 1, dtype=pl.Int32).alias("rank"), pl.all()))
    if not frames:
        return pl.DataFrame(schema={"model_a": pl.Utf8, "model_b": pl.Utf8, "rank": pl.Int32, "item_id": pl.Utf8})
    return pl.concat(frames, how="diagonal_relaxed")


def page(table: pl.DataFrame, probe: str, dataset: str, score: str, top: int) -> str:
    """An HTML page: per pair, its items as a table (texts escaped)."""
    parts = [f"<h1>Where models disagree: {html.escape(probe)} / {html.escape(dataset)}</h1>",
             f"<p>Per compared pair (A, B), the {top} items with the largest |score A &minus; score B| "
             f"(ties: item id); score = {html.escape(score)}. Items where either score is undefined, or both are equal, "
             "are left out.</p>"]
    if table.is_empty():
        parts.append("<p>No compared pairs (fewer than two models ran this dataset).</p>")
    for (a, b), group in table.group_by(["model_a", "model_b"], maintain_order=True):
        cols = [c for c in group.columns if c not in ("model_a", "model_b")]
        head = "".join(f"<th>{html.escape(c.replace('_a', ' ' + a).replace('_b', ' ' + b) if c.endswith(('_a', '_b')) else c)}</th>"
                       for c in cols)
        rows = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>"
                       for row in group.select(cols).iter_rows())
        parts.append(f"<h2>{html.escape(a)} vs {html.escape(b)}</h2><table border='1'><tr>{head}</tr>{rows}</table>")
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>disagreements</title></head><body>"
            + "".join(parts) + "</body></html>\n")


def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.4f}"
    return "" if v is None else str(v)


class DisagreementPlan:
    """Which (probe, dataset) pages a study gets, and each one's inputs and params: probes with an
    items module, datasets scored by at least two models, pairs from the `compare:` config."""

    def __init__(self, study, plans: list, compare: dict | None):
        self.study, self.R = study, study.results
        self.pages: dict[tuple[str, str], list[str]] = {}
        self.modules: dict[str, ModuleType] = {}
        self.compare = compare
        for plan in plans:
            if not plan.ran or plan.probe.is_stage or (module := items_module(plan.name)) is None:
                continue
            self.modules[plan.name] = module
            for dataset in plan.datasets:
                # a pair's first field is its dataset (csc: its corpus)
                models = list(dict.fromkeys(p.model for p in plan.pairs if p[0] == dataset))
                if self.pairs(plan.name, dataset, models):
                    self.pages[(plan.name, dataset)] = models

    def pairs(self, probe: str, dataset: str, models: list[str] | None = None) -> list[tuple[str, str]]:
        models = self.pages[(probe, dataset)] if models is None else models
        config = self.study.config["models"]
        return compared_pairs({m: config[m] for m in models}, self.compare)

    def files(self, probe: str, dataset: str) -> dict[str, dict]:
        module = self.modules[probe]
        return {m: module.item_files(self.R, self.study.config, dataset, m) for m in self.pages[(probe, dataset)]}

    def targets(self) -> list[str]:
        return [f"{self.R}/report/disagreements/{p}/{d}.html" for p, d in self.pages]

    # input function and params of rule disagreements
    def inputs(self, wildcards) -> list[str]:
        return sorted({f for files in self.files(wildcards.probe, wildcards.dataset).values() for f in files.values()})

    def items_param(self, wildcards) -> dict[str, dict]:
        return self.files(wildcards.probe, wildcards.dataset)

    def pairs_param(self, wildcards) -> list[list[str]]:
        return [list(pair) for pair in self.pairs(wildcards.probe, wildcards.dataset)]


SCORE_COLUMNS = ("item_id", "score", "correct")


def read_scores(module: ModuleType, files: dict) -> pl.DataFrame:
    """One model's per-item scores without the items' texts: the module's `read_scores` where it has
    one (CSC: 16M variants per corpus at full size, whose texts would take gigabytes per model; its
    ids stay integers until the top is chosen), else its `read_items` less the text columns."""
    if hasattr(module, "read_scores"):
        return module.read_scores(files)
    items = module.read_items(files)
    return items.select([c for c in SCORE_COLUMNS if c in items.columns])


def read_texts(module: ModuleType, files: dict, ids: list[str]) -> pl.DataFrame:
    """item_id and the text columns of one model's items `ids`: the module's `read_items_of` where it
    has one (reading only those items), else its `read_items`, filtered."""
    if hasattr(module, "read_items_of"):
        items = module.read_items_of(files, ids)
    else:
        items = module.read_items(files).filter(pl.col("item_id").is_in(ids))
    return items.select("item_id", *[c for c in items.columns if c not in SCORE_COLUMNS])


def with_texts(table: pl.DataFrame, module: ModuleType, files: dict[str, dict], pairs: list) -> pl.DataFrame:
    """The disagreements of score-only frames with model A's text columns of each listed item (as
    top_disagreements gives them from full frames), read for those items alone."""
    texts = []
    for a in dict.fromkeys(a for a, _ in pairs):
        ids = table.filter(pl.col("model_a") == a)["item_id"].unique().to_list() if table.height else []
        texts.append(read_texts(module, files[a], ids).with_columns(pl.lit(a).alias("model_a")))
    if not texts:
        return table
    texts = pl.concat(texts, how="diagonal_relaxed")
    text_columns = [c for c in texts.columns if c not in ("item_id", "model_a")]
    joined = table.join(texts, on=["model_a", "item_id"], how="left")
    head = ["model_a", "model_b", "rank", "item_id"]
    return joined.select(*head, *text_columns, *[c for c in table.columns if c not in head])


def write(probe: str, dataset: str, files: dict[str, dict], pairs: list, out: str, page_out: str, top: int, log) -> pl.DataFrame:
    module = items_module(probe)
    if module is None:
        raise ValueError(f"probe {probe!r} has no items module (workflow_scripts/{probe}/items.py)")
    # scores first, texts only for the items listed: at full size (2.56M pairs, 16M CSC variants
    # per corpus) every model's items with their texts took more than a 24 GB machine (the SLURM
    # dress rehearsal's job was killed)
    scores = {}
    for m, f in files.items():
        scores[m] = read_scores(module, f)
        log.info("%s/%s: %s: %d items", probe, dataset, m, scores[m].height)
    pairs = [tuple(p) for p in pairs]
    table = with_texts(disagreements(scores, pairs, top), module, files, pairs)
    with atomic_path(out) as tmp:
        table.write_csv(tmp)
    with atomic_path(page_out) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(page(table, probe, dataset, module.SCORE, top))
    log.info("%s/%s: %d pair(s), %d rows", probe, dataset, len(pairs), table.height)
    return table


# ---- the jobs of rules/disagreements.smk (workflow_scripts/jobs.py) ----
def run_disagreements(job) -> None:
    write(job.wildcards.probe, job.wildcards.dataset, job.params.item_files, job.params.pairs, job.output.table,
          job.output.page, TOP, setup_logging(name="disagreements"))
