"""What a run will cost, said before it starts: `make dry-run` ends with this plan summary.

It runs Snakemake's dry run (echoing its output), reads the jobs it plans, and prints per model and
stage (the probe whose text sets it embeds; corpora are CSC's) the embedding jobs, the texts to
encode (new) and the texts whose vectors are kept (reused: stores that are up to date, and a derived
corpus's texts copied from its parent's store), and an estimated time from the throughput measured
on this machine (workflow_scripts/throughput.py: earlier embedding jobs, else a calibration it runs
now); then the generations the run will request (minus what their caches hold), the other jobs,
estimated from the benchmark files of an earlier run where there are some, and a total.

Text counts are exact where a text set's files exist and no planned job rebuilds them. Before that,
a corpus's texts are estimated as its sentences (the built corpus, else the ingested source, else
the source file's lines) times the texts per sentence that perturbation made of the corpora built
so far (default VARIANTS_PER_SENTENCE); a probe dataset's texts are unknown until its build job
has run, and its estimate counts only the jobs' fixed cost (shown as `>=`).

CLI (the Makefile's dry-run):
python -m workflow_scripts.plan_summary --results DIR [--configfile F ...] [--cores N] [--no-calibrate]
    -- snakemake --dry-run ...
"""
from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import weakref
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from workflow_scripts import probes, throughput
from workflow_scripts.encoders import family_of

# texts per corpus sentence before any corpus was perturbed: the default run's corpora made 6.2-7.4
# (pc_en: 405 sentences, 2,990 texts), the issue that asked for this summary saw 7.4 (1,751 -> 12,986)
VARIANTS_PER_SENTENCE = 7.0
CALIBRATION_TIMEOUT_S = 300
SAMPLE_FILE = Path(__file__).resolve().parents[1] / "resources" / "corpora" / "en_nl_sample.txt"
LINE_FORMATS = {"bitext": 0, "lines": 0, "jsonl": 0, "csv": 1, "tsv": 1}  # format -> header lines
NOT_ESTIMATED = "not estimated"


# ---- the jobs Snakemake plans ---------------------------------------------------------------------

@dataclass
class Job:
    rule: str
    wildcards: dict = field(default_factory=dict)
    outputs: list = field(default_factory=list)
    threads: int = 1


# a job of a group (on a cluster: embed_small, profiles/slurm) is listed indented inside its group
RULE_LINE = re.compile(r"^\s*(?:local)?rule (\S+):$")
FIELD_LINE = re.compile(r"^\s+(output|wildcards|threads): (.*)$")


def parse_dry_run(lines) -> list[Job]:
    """The jobs of `snakemake --dry-run`'s listing: each `rule NAME:` block's wildcards, outputs and
    threads (1 when the block names none)."""
    jobs: list[Job] = []
    for line in lines:
        line = line.rstrip("\n")
        if m := RULE_LINE.match(line):
            jobs.append(Job(m.group(1)))
        elif jobs and (m := FIELD_LINE.match(line)):
            key, value = m.groups()
            if key == "output":
                jobs[-1].outputs = value.split(", ")
            elif key == "threads":
                jobs[-1].threads = int(value)
            else:
                jobs[-1].wildcards = dict(item.split("=", 1) for item in value.split(", ") if "=" in item)
    return jobs


# ---- the study, as rules/common.smk plans it ------------------------------------------------------

def load_study(configfiles: list[str], results: str):
    """(Study, probe plans) of these config files and results folder: validated, with the models a
    stage adds (adapt), as rules/common.smk builds them."""
    from workflow_scripts import study_folders
    from workflow_scripts.config import validate
    from workflow_scripts.study import plan_study

    config = study_folders.load_configs(configfiles or [study_folders.DEFAULT_CONFIG])
    config["results"] = results
    return plan_study(validate(config, check_paths=False), results)


# ---- counting texts -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Count:
    n: int | None  # None: unknown
    exact: bool
    how: str = ""


def parquet_rows(paths) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(p).metadata.num_rows for p in paths)


def folder_rows(folder: str) -> int | None:
    files = sorted(glob.glob(os.path.join(folder, "*.parquet")))
    return parquet_rows(files) if files else None


def file_lines(path: str, header: int) -> int | None:
    try:
        with open(path, "rb") as f:
            return max(0, sum(1 for line in f if line.strip()) - header)
    except OSError:
        return None


# a local source up to this size is read as the ingest job will read it, to count its corpora
# exactly before any job (about 1 s per 100k lines); a larger one is estimated from its lines
EXACT_READ_BYTES = 256 * 1024 * 1024
_CORPORA: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # study -> CorpusCounts


@dataclass(frozen=True)
class CorpusCount(Count):
    lengths: dict | None = None  # sentences per token count (the reference of a length-matched corpus)


class CorpusCounts:
    """The sentences each corpus will have, counted as the ingest and derive_corpus jobs make them:
    the source's rows (its ingested shards, else the local file read through ingest.source_rows:
    `where`, bad lines, max_chars applied), then length_filter.select_rows (duplicates, token range,
    length matching to the reference corpus, `max_sentences`). A built corpus is read as it is."""

    def __init__(self, study):
        self.study = study
        self._sources: dict[str, tuple] = {}
        self._corpora: dict[str, CorpusCount] = {}

    def source_index(self, source: str):
        """(language, sentence_id, n_tokens) of the rows ingest writes for `source`, and how they were
        found; (None, why) where the source is not here or too large to read now."""
        if source not in self._sources:
            self._sources[source] = self._read_source(source)
        return self._sources[source]

    def _read_source(self, source: str):
        import polars as pl

        from workflow_scripts.ingest import Tally, source_rows

        shards = sorted(glob.glob(f"{self.study.results}/ingest/{source}/part-*.parquet"))
        if shards:
            return pl.scan_parquet(shards).select("language", "sentence_id", "n_tokens").collect(), "ingested source"
        spec, path = self.study.source_spec(source), self.study.source_file(source)
        if path is None or not os.path.isfile(path):
            return None, "source not here yet"
        if os.path.getsize(path) > EXACT_READ_BYTES:
            return None, f"source over {EXACT_READ_BYTES >> 20} MiB, not read before the run"
        tally = Tally()
        try:
            rows = [(lang, sid, tokens) for sid, _, lang, _, tokens in source_rows(spec, source, path, tally)]
        except (OSError, ValueError, EOFError) as err:  # the ingest job will say what is wrong
            return None, f"source unreadable now ({type(err).__name__})"
        frame = pl.DataFrame(rows, schema={"language": pl.String, "sentence_id": pl.UInt64, "n_tokens": pl.Int32},
                             orient="row")
        how = "source read as ingest reads it" + (f", `where` leaving out {sum(tally.filtered.values()):,}"
                                                  if tally.filtered else "")
        return frame, how

    def corpus(self, corpus: str) -> CorpusCount:
        if corpus not in self._corpora:
            self._corpora[corpus] = self._count(corpus)
        return self._corpora[corpus]

    def _count(self, corpus: str) -> CorpusCount:
        import polars as pl

        from workflow_scripts.length_filter import select_rows

        folder = f"{self.study.results}/corpora/{corpus}"
        built = folder_rows(folder)
        if built is not None and os.path.exists(f"{folder}/manifest.json"):
            manifest = json.loads(Path(folder, "manifest.json").read_text())
            lengths = {int(k): v for k, v in (manifest.get("length_counts") or {}).items()}
            return CorpusCount(built, True, "built corpus", lengths)
        spec = self.study.config["corpora"][corpus]
        index, how = self.source_index(spec["source"])
        reference = None
        if spec.get("match_lengths_of"):
            ref = self.corpus(spec["match_lengths_of"])
            if ref.lengths is None:
                return CorpusCount(None, False, f"its reference {spec['match_lengths_of']}: {ref.how}")
            reference = ref.lengths
        if index is None:
            return self._estimate(corpus, how)
        rows = index.filter(pl.col("language") == spec["language"]).select("sentence_id", "n_tokens") \
            .with_row_index("row")
        keep, info = select_rows(rows, spec, self.study.config["seed"], reference)
        applied = [k for k in ("min_tokens", "max_tokens", "match_lengths_of", "max_sentences") if spec.get(k) is not None]
        how += "; " + ", ".join(["duplicates"] + applied) + " applied as derive_corpus applies them"
        lengths = {int(k): v for k, v in info["length_counts"].items()}
        return CorpusCount(len(keep), True, how, lengths)

    def _estimate(self, corpus: str, why: str) -> CorpusCount:
        """A corpus whose source cannot be read now: at most its parent's sentences, else the
        source file's lines (no filter applied)."""
        parent = self.study.parent_corpus(corpus)
        if parent:
            upper = self.corpus(parent)
            return CorpusCount(upper.n, False, f"at most {parent}'s")
        source = self.study.config["corpora"][corpus]["source"]
        spec, path = self.study.source_spec(source), self.study.source_file(source)
        header = LINE_FORMATS.get(spec.get("format"))
        if path is None or header is None or path.endswith((".gz", ".zip")) or not os.path.isfile(path):
            return CorpusCount(None, False, why)
        lines = file_lines(path, header)
        return CorpusCount(lines, False, f"source file lines ({why}; no filter applied)")


def corpus_counts(study) -> CorpusCounts:
    if study not in _CORPORA:
        _CORPORA[study] = CorpusCounts(study)
    return _CORPORA[study]


def corpus_sentences(study, corpus: str) -> Count:
    """Sentences of a corpus (CorpusCounts): exact where its source is here, else estimated."""
    return corpus_counts(study).corpus(corpus)


def texts_per_sentence(study) -> tuple[float, str]:
    """Texts per corpus sentence that perturbation made of the corpora built so far (all their text
    files and corpus shards present), else VARIANTS_PER_SENTENCE."""
    texts = sentences = 0
    for corpus in study.config.get("corpora") or {}:
        files = study.texts(corpus)
        rows = folder_rows(f"{study.results}/corpora/{corpus}")
        if rows and all(os.path.exists(f) for f in files):
            texts += parquet_rows(files)
            sentences += rows
    if sentences:
        return texts / sentences, f"{texts / sentences:.1f} texts per sentence, measured on the corpora built"
    return VARIANTS_PER_SENTENCE, f"{VARIANTS_PER_SENTENCE:.0f} texts per sentence assumed (no corpus perturbed yet)"


def text_count(study, scope: str, part: int, planned: set[str], factor: float,
               dataset_texts: dict[str, int] | None = None, model: str | None = None) -> Count:
    """Unique texts of one store partition of a text set (its text files hold unique rows): the
    model's (Study.store_texts), else text partition `part`. `dataset_texts`: text set -> the texts
    a probe's dataset will embed, where its plan knows them before the run (dataset_counts)."""
    paths = study.store_texts(model, scope, part) if model else [study.texts(scope)[part]]
    if all(os.path.exists(p) for p in paths):
        n = parquet_rows(paths)
        rebuilt = any(p in planned for p in paths)
        return Count(n, not rebuilt, "current text files, rebuilt" if rebuilt else "text files")
    corpus = study.scope_corpus(scope)
    if corpus is None:
        texts = (dataset_texts or {}).get(scope)
        if texts is None:
            return Count(None, False, "built by its dataset job")
        return Count(round(texts * len(paths) / study.parts), False, "the dataset's count")
    sentences = corpus_sentences(study, corpus)
    if sentences.n is None:
        return Count(None, False, sentences.how)
    return Count(round(sentences.n * factor * len(paths) / study.parts), False, f"{sentences.how} x {factor:.1f}")


def reused_count(study, model: str, scope: str, part: int, count: Count) -> tuple[int | None, str | None]:
    """(texts copied from the parent corpus's store, its name) for a derived corpus's store
    partition; the texts the parent lacks are encoded. (0, None) for any other store."""
    parent = study.reuse_scope(model, scope)
    if parent is None:
        return 0, None
    mine, theirs = study.store_texts(model, scope, part), study.store_texts(model, parent, part)
    if all(os.path.exists(p) for p in mine + theirs):
        import numpy as np
        import pyarrow.parquet as pq

        keys = [np.concatenate([pq.read_table(p, columns=["text_key"])["text_key"].to_numpy() for p in files])
                for files in (mine, theirs)]
        return int(np.isin(keys[0], keys[1]).sum()), parent
    return count.n, parent  # a derived corpus's sentences and variants are its parent's


def up_to_date_stores(study, planned: set[str]) -> dict[tuple[str, str], int]:
    """(model, stage) -> texts in existing stores that no planned job rebuilds (read from manifests)."""
    kept: dict[tuple[str, str], int] = defaultdict(int)
    for model in study.config["models"]:
        for manifest in sorted(glob.glob(f"{study.results}/embeddings/{model}/*/part-*/manifest.json")):
            store = os.path.dirname(manifest)
            if store in planned:
                continue
            try:
                rows = json.loads(Path(manifest).read_text())["rows"]
            except (OSError, ValueError, KeyError):
                continue
            kept[model, stage_of(study, Path(store).parent.name)] += int(rows)
    return kept


def stage_of(study, scope: str) -> str:
    """The probe a text set belongs to: `<probe>.<dataset>`, or a corpus's (the registry's corpus probe)."""
    return probes.corpus_probe() if study.scope_corpus(scope) else scope.split(".", 1)[0]


# ---- throughput -----------------------------------------------------------------------------------

def sample_texts(study, n: int = throughput.CALIBRATION_TEXTS) -> list[str]:
    """Texts to calibrate on: the first text set built in this results folder, else the English side
    of the shipped EN-NL sample."""
    import pyarrow.parquet as pq

    for path in sorted(glob.glob(f"{study.results}/texts/*/part-*.parquet")):
        texts = pq.read_table(path, columns=["text"])["text"].to_pylist()[:n]
        if len(texts) >= n // 2:
            return texts
    with open(SAMPLE_FILE, encoding="utf-8") as f:
        return [line.split("\t")[0].strip() for line, _ in zip(f, range(n))]


def calibrate(study, model: str, key: str, texts: list[str], cache: Path) -> str | None:
    """Run throughput's calibration for a model in a fresh process and record it; None on success,
    else why it could not (the model cannot load here, or it is built by this run)."""
    spec = study.embed_spec(model)
    if study.trained(model) or not family_of(spec).estimable:
        return "built or read by the run"
    model_file = study.model_file(model)
    if model_file and not os.path.exists(model_file):
        return "model file not here yet"
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(texts, f)
    command = [sys.executable, "-m", "workflow_scripts.throughput", "calibrate", "--spec", json.dumps(spec),
               "--device", study.resolved_device(model), "--sample", f.name]
    if model_file:
        command += ["--model-file", model_file]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=CALIBRATION_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"calibration took over {CALIBRATION_TIMEOUT_S} s"
    finally:
        os.unlink(f.name)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return f"cannot load here ({last[:120]})"
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    throughput.record(cache, key, measured["texts"], measured["encode_s"], measured["job_s"], source="calibration")
    return None


def model_throughputs(study, models, calibrate_missing: bool) -> dict[str, throughput.Throughput | str]:
    """model -> its Throughput, or why there is none."""
    cache = throughput.cache_path(study.results)
    out: dict[str, throughput.Throughput | str] = {}
    texts = None
    for model in models:
        key = throughput.model_key(study.embed_spec(model), study.resolved_device(model))
        found = throughput.summarise(throughput.load(cache).get(key, []))
        if found is None and calibrate_missing:
            texts = texts or sample_texts(study)
            problem = calibrate(study, model, key, texts, cache)
            found = throughput.summarise(throughput.load(cache).get(key, [])) if problem is None else problem
        out[model] = found or "no measurement (make dry-run calibrates)"
    return out


# ---- other jobs: benchmark files of earlier runs --------------------------------------------------

def benchmark_seconds(results: str, rule: str) -> list[float]:
    """Wall seconds of each benchmarked job of `rule` in this results folder (Snakemake's `s`)."""
    seconds = []
    for path in glob.glob(f"{results}/benchmarks/{rule}/**/*.tsv", recursive=True):
        try:
            with open(path, newline="") as f:
                seconds += [float(row["s"]) for row in csv.DictReader(f, delimiter="\t")]
        except (OSError, ValueError, KeyError):
            continue
    return seconds


# ---- the summary ----------------------------------------------------------------------------------

@dataclass
class EmbedRow:
    model: str
    stage: str
    jobs: int = 0
    loading_jobs: int = 0
    new: int = 0
    reused: int = 0
    unknown_jobs: int = 0  # jobs whose text count is not known yet
    estimated: bool = False  # some count is an estimate
    job_threads: int = 1


def embed_rows(study, jobs: list[Job], dataset_texts: dict[str, int] | None = None) -> list[EmbedRow]:
    planned = {o for j in jobs for o in j.outputs}
    factor, _ = texts_per_sentence(study)
    rows: dict[tuple[str, str], EmbedRow] = {}
    for job in jobs:
        if job.rule != "embed":
            continue
        model, scope, part = job.wildcards["model"], job.wildcards["scope"], int(job.wildcards["part"])
        row = rows.setdefault((model, stage_of(study, scope)), EmbedRow(model, stage_of(study, scope)))
        row.jobs += 1
        row.job_threads = max(row.job_threads, job.threads)
        count = text_count(study, scope, part, planned, factor, dataset_texts, model)
        copied, parent = reused_count(study, model, scope, part, count)
        row.estimated |= not count.exact
        if count.n is None:
            row.unknown_jobs += 1
            row.loading_jobs += parent is None
            continue
        new = count.n - (copied or 0)
        row.new += new
        row.reused += copied or 0
        row.loading_jobs += new > 0
    for (model, stage), texts in up_to_date_stores(study, planned).items():
        rows.setdefault((model, stage), EmbedRow(model, stage)).reused += texts
    order = {m: i for i, m in enumerate(study.config["models"])}
    return sorted(rows.values(), key=lambda r: (order.get(r.model, len(order)), r.stage))


def other_rules(results: str, jobs: list[Job]) -> list[dict]:
    """Per planned rule other than embed: jobs, and the mean seconds of its benchmarked jobs."""
    counts: dict[str, list[Job]] = defaultdict(list)
    for job in jobs:
        if job.rule not in ("embed", "all"):
            counts[job.rule].append(job)
    out = []
    for rule, its_jobs in counts.items():
        seconds = benchmark_seconds(results, rule)
        mean = sum(seconds) / len(seconds) if seconds else None
        out.append({"rule": rule, "jobs": len(its_jobs), "mean_s": mean,
                    "threads": max(j.threads for j in its_jobs)})
    return sorted(out, key=lambda r: -(r["jobs"] * (r["mean_s"] or 0)))


def generation_rows(plans: dict, jobs: list[Job]) -> list[dict]:
    """What the planned jobs will ask generators for: each probe's plan answers for its own jobs."""
    from workflow_scripts.generator import GenerationCache

    rows = []
    for job in jobs:
        for plan in plans.values():
            asked = plan.planned_generations(job.rule, job.wildcards)
            if asked:
                cache = asked.get("cache")
                rows.append({**asked, "cached": len(GenerationCache(cache).entries) if cache else 0})
    return rows


# ---- what each dataset will hold ----------------------------------------------------------------

def dataset_counts(plans: dict, jobs: list[Job]) -> dict[str, list]:
    """probe -> its datasets' counts (ProbePlan.planned_counts: study.DatasetCount), for the probes
    that run datasets of their own."""
    planned = frozenset(o for j in jobs for o in j.outputs)
    corpus_probe = probes.corpus_probe()  # its datasets are the corpora, counted by CorpusCounts
    return {name: plan.planned_counts(planned) for name, plan in plans.items()
            if plan.ran and plan.datasets and name != corpus_probe}


def dataset_lines(study, counts: dict[str, list]) -> list[str]:
    """The plan summary's "Datasets" section: each corpus's sentences (CorpusCounts) and texts to
    embed, then each probe dataset's items in its own unit."""
    factor, _ = texts_per_sentence(study)
    lines = []
    corpora = corpus_counts(study)
    for corpus in study.config.get("corpora") or {}:
        c = corpora.corpus(corpus)
        texts = "" if c.n is None else f", ~{fmt_n(c.n * factor)} texts"
        lines.append(f"  {corpus}: {'' if c.exact else '~'}{fmt_n(c.n)} sentences{texts} ({c.how})")
    for probe, found in counts.items():
        for d in found:
            bound = {"=": "", "<=": "at most "}.get(d.bound, "")
            texts = f", {fmt_n(d.texts)} texts" if d.texts is not None and d.unit != "texts" else ""
            lines.append(f"  {probe} {d.dataset}: {bound}{fmt_n(d.n)} {d.unit}{texts} ({d.how})")
    return lines


def fmt_n(n: float | None) -> str:
    return "?" if n is None else f"{n:,.0f}"


def fmt_s(seconds: float) -> str:
    return f"{seconds:,.0f} s" if seconds < 600 else f"{seconds:,.0f} s ({seconds / 60:.0f} min)"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return [line(header), line(["-" * w for w in widths]), *map(line, rows)]


def summary(study, plans: dict, jobs: list[Job], cores: int, calibrate_missing: bool = True) -> str:
    """The plan summary's text."""
    counts = dataset_counts(plans, jobs)
    # a probe dataset's texts, where its plan knows them: text set <probe>.<dataset>
    texts = {f"{probe}.{d.dataset}": d.texts for probe, found in counts.items() for d in found if d.texts is not None}
    rows = embed_rows(study, jobs, texts)
    speeds = model_throughputs(study, sorted({r.model for r in rows if r.jobs}), calibrate_missing)
    lines = [f"Plan summary: {len(jobs)} jobs planned, {sum(r.jobs for r in rows)} of them embedding "
             f"(results: {study.results}/)", ""]
    datasets = dataset_lines(study, counts)
    if datasets:
        lines += ["Datasets (corpora as ingest and derive_corpus will cut them: `where`, max_sentences, token "
                  "range, length matching applied; probe datasets as their plans count them):", *datasets, ""]
    embed_s = thread_s = 0.0
    lower_bound = False
    out = []
    for r in rows:
        speed = speeds.get(r.model)
        if not r.jobs:
            est = "-"
        elif isinstance(speed, throughput.Throughput):
            seconds = speed.seconds(r.new, r.loading_jobs)
            embed_s += seconds
            thread_s += seconds * r.job_threads
            lower_bound |= r.unknown_jobs > 0
            est = (">= " if r.unknown_jobs else "~" if r.estimated else "") + fmt_s(seconds)
        else:
            est = NOT_ESTIMATED
        new = fmt_n(r.new) if not r.unknown_jobs else \
            (f"{fmt_n(r.new)} + ?" if r.new else "?") + f" ({r.unknown_jobs} text set part(s) not built yet)"
        out.append([r.model, r.stage, str(r.jobs), ("~" if r.estimated and r.new else "") + new, fmt_n(r.reused),
                    est])
    lines += ["Embedding, per model and stage (texts: new = to encode; reused = kept in up-to-date stores "
              "or copied from a parent corpus's):"]
    lines += ["  " + s for s in table(["model", "stage", "jobs", "texts new", "reused", "estimate"], out)]
    _, how = texts_per_sentence(study)
    lines += [f"  (~: estimated; a corpus not perturbed yet: its sentences x texts per sentence, {how})", ""]
    lines += ["Throughput on this machine (" + str(throughput.cache_path(study.results)) + "):"
              + ("" if speeds else " not needed, no embedding job planned")]
    for model, speed in speeds.items():
        lines.append(f"  {model}: " + (speed.describe() if isinstance(speed, throughput.Throughput)
                                       else f"unknown: {speed}"))
    lines.append("")
    generations = generation_rows(plans, jobs)
    if generations:
        lines.append("Generations to request:")
        for g in generations:
            lines.append(f"  {g['what']}: up to {fmt_n(g.get('requests'))} with {g['generator']} "
                         f"({g['cached']} answers in its cache, {g.get('cache')})")
    else:
        lines.append("Generations to request: none")
    lines.append("")
    others = other_rules(study.results, jobs)
    known = [o for o in others if o["mean_s"] is not None]
    unknown = [o for o in others if o["mean_s"] is None]
    other_s = sum(o["jobs"] * o["mean_s"] for o in known)
    thread_s += sum(o["jobs"] * o["mean_s"] * o["threads"] for o in known)
    n_other = sum(o["jobs"] for o in others)
    if not others:
        lines.append("Other jobs: none")
    elif known:
        top = ", ".join(f"{o['rule']} {o['jobs']} x {o['mean_s']:.1f} s" for o in known[:5])
        lines.append(f"Other jobs: {n_other}; {sum(o['jobs'] for o in known)} estimated from the benchmark "
                     f"files of an earlier run, {fmt_s(other_s)} ({top}{', ...' if len(known) > 5 else ''})")
    else:
        lines.append(f"Other jobs: {n_other}; {NOT_ESTIMATED} (no benchmark files of an earlier run in "
                     f"{study.results}/benchmarks/)")
    if unknown:
        lines.append(f"  {NOT_ESTIMATED}: " + ", ".join(f"{o['rule']} ({o['jobs']})" for o in unknown))
    total = embed_s + other_s
    wall = thread_s / max(1, cores)
    bound = ">= " if lower_bound or unknown else "~"
    lines += ["", f"Estimated: {bound}{fmt_s(total)} of job time; on {cores} core(s) {bound}{fmt_s(wall)} "
              f"wall (embedding {fmt_s(embed_s)}, other jobs {fmt_s(other_s)})."]
    left_out = (["the texts of text sets not built yet (counted once a run has built them)"] * lower_bound
                + ["the rules not estimated (no benchmark files of theirs: an earlier run's, or rules without "
                   "`benchmark:`)"] * bool(unknown))
    if left_out:
        lines.append(f"  What `>=` leaves out: {'; '.join(left_out)}.")
    return "\n".join(lines)


def run_dry_run(command: list[str]) -> tuple[int, list[str]]:
    """Run Snakemake's dry run, echoing its output as it comes; (exit status, its lines)."""
    lines = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        for line in proc.stdout:
            sys.stdout.write(line)
            lines.append(line)
    sys.stdout.flush()
    return proc.returncode, lines


def cores_of(value: str) -> int:
    return (os.cpu_count() or 1) if value == "all" else max(1, int(value))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        print("usage: python -m workflow_scripts.plan_summary --results DIR [--configfile F ...] [--cores N] "
              "[--no-calibrate] -- snakemake --dry-run ...", file=sys.stderr)
        return 2
    split = argv.index("--")
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--results", required=True)
    ap.add_argument("--configfile", nargs="*", default=[])
    ap.add_argument("--cores", default="all")
    ap.add_argument("--no-calibrate", action="store_true", help="no calibration: models never measured are unknown")
    args = ap.parse_args(argv[:split])
    rc, lines = run_dry_run(argv[split + 1:])
    if rc != 0:
        return rc
    study, plans = load_study(args.configfile, args.results)
    print("\n" + summary(study, plans, parse_dry_run(lines), cores_of(args.cores), not args.no_calibrate))
    return 0


if __name__ == "__main__":
    sys.exit(main())
