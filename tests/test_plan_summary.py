"""The plan summary `make dry-run` ends with (workflow_scripts/plan_summary.py) and the throughput it
estimates from (workflow_scripts/throughput.py): the jobs read from Snakemake's dry-run listing,
texts new vs reused per model and stage, estimates = fixed cost per loading job + new texts / rate,
generations requested, other jobs from benchmark files; and the embedding job that records its
throughput. Every expectation is counted by hand from the small inputs written here."""
import json
import logging
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from workflow_scripts import plan_summary, probes, throughput
from workflow_scripts.config import validate
from workflow_scripts.embed import embed_partition, throughput_file_of
from workflow_scripts.plan_summary import Job, parse_dry_run
from workflow_scripts.study import Study
from workflow_scripts.texts import write_text_partitions

ROOT = Path(__file__).resolve().parents[1]

DRY_RUN = """\
Building DAG of jobs...
[Fri Nov 27 13:55:31 2026]
rule embed:
    input: res/texts/short/part-000.parquet
    output: res/embeddings/dense/short/part-000
    log: res/logs/embed/dense/short/part-000.log
    jobid: 7
    wildcards: model=dense, scope=short, part=000
    threads: 2
    resources: tmpdir=/tmp, runtime=720, gpu=0
[Fri Nov 27 13:55:31 2026]
localrule csc_plot:
    input: res/csc/c/dense/curves.parquet
    output: res/plots/csc/c/dense.png, res/plots/csc/c/dense.svg
    wildcards: corpus=c, model=dense
[Fri Nov 27 13:55:31 2026]
group job embed_small (jobs in lexicogr. order):

    [Fri Nov 27 13:55:31 2026]
    rule embed:
        input: res/texts/short_f/part-000.parquet, res/embeddings/sparse/short/part-000
        output: res/embeddings/sparse/short_f/part-000
        wildcards: model=sparse, scope=short_f, part=000
Job stats:
job       count
"""


def test_dry_run_listing_gives_each_job_its_rule_wildcards_outputs_and_threads():
    jobs = parse_dry_run(DRY_RUN.splitlines(keepends=True))
    assert jobs == [Job("embed", {"model": "dense", "scope": "short", "part": "000"},
                        ["res/embeddings/dense/short/part-000"], 2),
                    Job("csc_plot", {"corpus": "c", "model": "dense"},
                        ["res/plots/csc/c/dense.png", "res/plots/csc/c/dense.svg"], 1),
                    # a job of a group is listed indented inside it
                    Job("embed", {"model": "sparse", "scope": "short_f", "part": "000"},
                        ["res/embeddings/sparse/short_f/part-000"], 1)]


def test_throughput_is_total_texts_over_encoding_seconds_and_the_mean_fixed_cost(tmp_path):
    cache = tmp_path / ".cache" / "throughput.json"
    throughput.record(cache, "k", 64, 4.0, 9.0, source="calibration")
    assert throughput.summarise(throughput.load(cache)["k"]) == throughput.Throughput(16.0, 5.0, "calibration", 1)
    # measured jobs replace the calibration: (100 + 300) texts / (2 + 4) s; fixed ((5 - 2) + (9 - 4)) / 2
    throughput.record(cache, "k", 100, 2.0, 5.0)
    throughput.record(cache, "k", 300, 4.0, 9.0)
    speed = throughput.summarise(throughput.load(cache)["k"])
    assert speed.source == "measured" and speed.jobs == 2
    assert speed.texts_per_s == pytest.approx(400 / 6) and speed.fixed_s == pytest.approx(4.0)
    # 2 jobs that load the model and 200 new texts: 2 x 4 s + 200 / (400 / 6) s = 11 s
    assert speed.seconds(200, 2) == pytest.approx(11.0)
    for _ in range(throughput.KEEP + 5):
        throughput.record(cache, "k", 1, 1.0, 1.0)
    assert len(throughput.load(cache)["k"]) == throughput.KEEP
    assert throughput.load(tmp_path / "missing.json") == {}


def test_model_key_names_family_model_device_and_precision():
    assert throughput.model_key({"family": "sentence_transformers", "name": "m/x", "precision": "bf16"}, "cuda") \
        == "sentence_transformers|m/x|cuda|bf16"
    assert throughput.model_key({"family": "tfidf", "preset": "paper"}, "cpu") == "tfidf|paper|cpu|fp32"


def small_study(tmp_path) -> Study:
    """Corpus `c` (10 texts) and its derived `short` (4 texts: 3 of c's, 1 of its own), a dense
    model whose store of `c` is up to date and a TF-IDF model."""
    (tmp_path / "s.txt").write_text("one\ntwo\nthree\n")
    config = {"seed": 1, "embedding_partitions": 1,
              "sources": {"s": {"format": "lines", "path": str(tmp_path / "s.txt"), "languages": ["en"]}},
              "corpora": {"c": {"source": "s", "language": "en"},
                          "short": {"source": "s", "language": "en", "max_tokens": 9}},
              "models": {"dense": {"family": "hashing", "dim": 8}, "sparse": {"family": "tfidf"}}}
    study = Study(validate(config, check_paths=False), str(tmp_path / "res"))
    c_texts = [f"text {i}" for i in range(10)]
    write_text_partitions(c_texts, study.texts("c"))
    write_text_partitions(c_texts[:3] + ["only short"], study.texts("short"))
    store = tmp_path / "res" / "embeddings" / "dense" / "c" / "part-000"
    store.mkdir(parents=True)
    (store / "manifest.json").write_text(json.dumps({"rows": 10}))
    return study


def test_texts_new_and_reused_per_model_and_stage(tmp_path):
    study = small_study(tmp_path)
    jobs = [Job("embed", {"model": "dense", "scope": "short", "part": "000"}, study.stores("dense", "short")),
            Job("embed", {"model": "sparse", "scope": "c", "part": "000"}, study.stores("sparse", "c"))]
    rows = {(r.model, r.stage): r for r in plan_summary.embed_rows(study, jobs)}
    dense, sparse = rows["dense", "csc"], rows["sparse", "csc"]
    # dense: short's 3 texts copied from c's store, 1 encoded; c's store (10 rows) is up to date
    assert (dense.jobs, dense.new, dense.reused, dense.loading_jobs, dense.estimated) == (1, 1, 3 + 10, 1, False)
    # TF-IDF is fitted per text set: all 10 of c encoded, nothing copied
    assert (sparse.jobs, sparse.new, sparse.reused, sparse.loading_jobs) == (1, 10, 0, 1)


def test_a_corpus_not_perturbed_yet_is_estimated_from_its_source_lines(tmp_path):
    study = small_study(tmp_path)
    for f in study.texts("c") + study.texts("short"):
        os.unlink(f)
    count = plan_summary.text_count(study, "c", 0, set(), plan_summary.VARIANTS_PER_SENTENCE)
    # 3 source lines x 7 texts per sentence, one partition
    assert (count.n, count.exact) == (21, False)
    # a probe's dataset is unknown until its build job has run
    assert plan_summary.text_count(study, "triplets.one", 0, set(), 7.0).n is None


def test_texts_per_sentence_is_measured_on_the_corpora_built(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    study = small_study(tmp_path)
    assert plan_summary.texts_per_sentence(study)[0] == plan_summary.VARIANTS_PER_SENTENCE
    (tmp_path / "res" / "corpora" / "c").mkdir(parents=True)
    pq.write_table(pa.table({"id": [1, 2, 3, 4]}), tmp_path / "res" / "corpora" / "c" / "part-00000.parquet")
    assert plan_summary.texts_per_sentence(study)[0] == pytest.approx(10 / 4)


def test_summary_estimates_embedding_from_throughput_and_other_jobs_from_benchmarks(tmp_path):
    study = small_study(tmp_path)
    cache = throughput.cache_path(study.results)
    # dense: 2 texts/s + 3 s per loading job; sparse: 10 texts/s + 1 s
    throughput.record(cache, throughput.model_key(study.embed_spec("dense"), "cpu"), 10, 5.0, 8.0)
    throughput.record(cache, throughput.model_key(study.embed_spec("sparse"), "cpu"), 100, 10.0, 11.0)
    for name, seconds in (("a", 2.0), ("b", 4.0)):
        bench = tmp_path / "res" / "benchmarks" / "csc_score" / f"{name}.tsv"
        bench.parent.mkdir(parents=True, exist_ok=True)
        bench.write_text(f"s\th:m:s\tmax_rss\n{seconds}\t0:00:02\t100\n")
    jobs = [Job("embed", {"model": "dense", "scope": "short", "part": "000"}, study.stores("dense", "short")),
            Job("embed", {"model": "sparse", "scope": "c", "part": "000"}, study.stores("sparse", "c")),
            Job("csc_score", {}, ["x"]), Job("csc_score", {}, ["y"]), Job("csc_score", {}, ["z"]),
            Job("csc_plot", {}, ["p"])]
    text = plan_summary.summary(study, {}, jobs, cores=2, calibrate_missing=False)
    # dense: 3 s + 1 text / 2 texts/s = 3.5 s (shown as 4 s); sparse: 1 s + 10 / 10 = 2 s
    lines = [line.split() for line in text.splitlines()]
    assert ["dense", "csc", "1", "1", "13", "4", "s"] in lines
    assert ["sparse", "csc", "1", "10", "0", "2", "s"] in lines
    # csc_score: 3 jobs x mean(2, 4) s = 9 s; csc_plot has no benchmark files
    assert "csc_score 3 x 3.0 s" in text and "not estimated: csc_plot (1)" in text
    # 3.5 + 2 + 9 = 14.5 s of job time, bounded below (csc_plot); 1 thread each, 2 cores: 7.25 s wall
    assert "Estimated: >= 14 s of job time; on 2 core(s) >= 7 s wall" in text
    assert "Generations to request: none" in text
    assert "What `>=` leaves out: the rules not estimated (" in text
    # nothing planned: both stores are kept, nothing estimated
    nothing = plan_summary.summary(study, {}, [], cores=2, calibrate_missing=False)
    assert ["dense", "csc", "0", "0", "10", "-"] in [line.split() for line in nothing.splitlines()]
    assert "Other jobs: none" in nothing and "no embedding job planned" in nothing
    assert "Estimated: ~0 s of job time" in nothing


def test_a_model_never_measured_is_not_estimated_without_calibration(tmp_path):
    study = small_study(tmp_path)
    jobs = [Job("embed", {"model": "sparse", "scope": "c", "part": "000"}, study.stores("sparse", "c"))]
    text = plan_summary.summary(study, {}, jobs, cores=1, calibrate_missing=False)
    assert ["sparse", "csc", "1", "10", "0", "not", "estimated"] in [line.split() for line in text.splitlines()]
    assert "sparse: unknown: no measurement" in text


def test_calibration_measures_a_model_in_a_fresh_process_and_records_it(tmp_path):
    study = small_study(tmp_path)
    speeds = plan_summary.model_throughputs(study, ["dense"], calibrate_missing=True)
    assert speeds["dense"].source == "calibration" and speeds["dense"].jobs == 1
    records = throughput.load(throughput.cache_path(study.results))
    [(key, [record])] = records.items()
    # the built text sets hold fewer than half of CALIBRATION_TEXTS (c: 10): the shipped sample's 64
    assert key == "hashing|-|cpu|fp32" and record["texts"] == 64 and record["source"] == "calibration"


def test_settheory_plans_two_fusions_per_window_and_counts_its_cache(tmp_path):
    config = validate({"seed": 1, "embedding_partitions": 1, "models": {"t": {"family": "tfidf"}},
                       "articles": {"news": {"format": "story", "path": str(tmp_path)}},
                       "settheory": {"datasets": {"news": {"articles": "news", "max_articles": 3,
                                                           "windows_per_article": 2}}}}, check_paths=False)
    study = Study(config, str(tmp_path / "res"))
    [probe] = [p for p in probes.declarations() if p.name == "settheory"]
    plan = probe.planner()(study, probe)
    asked = plan.planned_generations("settheory_samples", {"dataset": "news"})
    assert asked["requests"] == 3 * 2 * 2 and asked["generator"] == "smollm2"
    assert plan.planned_generations("settheory_filter", {"dataset": "news"}) is None
    cache = tmp_path / "cache.jsonl"
    asked["cache"] = str(cache)
    cache.write_text('{"key": "a", "raw": "x", "finished": true}\n{"key": "b", "raw": "y", "finished": true}\n')
    rows = plan_summary.generation_rows({"settheory": FixedPlan(asked)}, [Job("settheory_samples", {"dataset": "news"})])
    assert rows == [{**asked, "cached": 2}]


class FixedPlan:
    """A plan whose every job asks for the same generations (the cache file is the test's)."""

    def __init__(self, asked):
        self.asked = asked

    def planned_generations(self, rule, wildcards):
        return self.asked


def test_embedding_job_records_its_throughput_under_the_results_cache(tmp_path):
    texts = [f"sentence number {i}" for i in range(7)]
    text_files = [str(tmp_path / "res" / "texts" / "c" / "part-000.parquet")]
    write_text_partitions(texts, text_files)
    out = tmp_path / "res" / "embeddings" / "h" / "c" / "part-000"
    path = throughput_file_of(str(out))
    assert path == str(tmp_path / "res" / ".cache" / "throughput.json")
    assert throughput_file_of(str(tmp_path / "elsewhere" / "part-000")) is None
    embed_partition("h", {"family": "hashing", "dim": 8}, "c", 0, 1, text_files, str(out), 1,
                    logging.getLogger("test"), throughput_file=path)
    [(key, [record])] = throughput.load(path).items()
    assert key == "hashing|-|cpu|fp32" and record["texts"] == 7 and record["source"] == "job"
    assert 0 <= record["encode_s"] <= record["job_s"]
    assert np.isfinite(record["job_s"])


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_dry_run_ends_with_the_plan_summary(tmp_path):
    """The old `make dry-run` ended with Snakemake's listing; now the summary follows it. The tiny
    study: one corpus of 2 source lines, one model, no calibration (CALIBRATE=no)."""
    from test_make_quoting import make, scratch_checkout, tiny_study

    work = scratch_checkout(tmp_path)
    tiny_study(work, "res")
    proc = make(work, "dry-run", "CONFIG=study.yaml", "CALIBRATE=no")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    listing, summary = proc.stdout.split("Plan summary: ", 1)
    assert "This was a dry-run" in listing
    lines = [line.split() for line in summary.splitlines()]
    # mini_en: 2 source lines x 7 texts per sentence = ~14 texts to encode, nothing reused
    assert ["hashing", "csc", "1", "~14", "0", "not", "estimated"] in lines, summary
    assert "hashing: unknown: no measurement" in summary
    assert "Generations to request: none" in summary
    assert not (work / "res" / ".cache" / "throughput.json").exists()  # CALIBRATE=no measured nothing


# ---- what each dataset will hold, counted before any job ------------------------------------------

def evaluated_source(tmp_path) -> str:
    """A ParaCrawl-like human-evaluation TSV: 12 data rows, 7 judged V (one of them a repeat of
    another V row's English), 5 judged otherwise."""
    rows = [("V", "the cat sleeps", "de kat slaapt"), ("E", "broken line here", "kapot"),
            ("V", "prices are high today", "de prijzen zijn vandaag hoog"), ("A", "wrong pair", "fout paar"),
            ("V", "we visit the museum", "wij bezoeken het museum"), ("V", "the cat sleeps", "de kat slaapt"),
            ("MT", "machine made", "machinaal"), ("V", "she likes cold tea", "zij houdt van koude thee"),
            ("V", "rain fell all night long here", "het regende de hele nacht"), ("L", "x", "y"),
            ("V", "a dog barks", "een hond blaft"), ("T", "bad tok", "slecht")]
    path = tmp_path / "eval.tsv"
    path.write_text("evaluation\ten\tnl\n" + "".join("\t".join(r) + "\n" for r in rows))
    return str(path)


def evaluated_study(tmp_path, corpora: dict) -> Study:
    config = {"seed": 1, "embedding_partitions": 1,
              "sources": {"pc": {"format": "tsv", "header": True, "path": evaluated_source(tmp_path),
                                 "languages": ["en", "nl"], "columns": {"en": "en", "nl": "nl"},
                                 "where": {"evaluation": ["V"]}}},
              "corpora": corpora, "models": {"h": {"family": "hashing", "dim": 8}}}
    return Study(validate(config, check_paths=False), str(tmp_path / "res"))


def test_corpora_are_counted_with_where_duplicates_and_max_sentences_before_any_job(tmp_path):
    """The estimate counted every line of the source file (all 3,994 rows of a ParaCrawl study with
    `where: {evaluation: [V]}` and max_sentences 400): 9x too high."""
    study = evaluated_study(tmp_path, {"en": {"source": "pc", "language": "en"},
                                       "en_4": {"source": "pc", "language": "en", "max_sentences": 4},
                                       "en_short": {"source": "pc", "language": "en", "max_tokens": 3}})
    counts = plan_summary.corpus_counts(study)
    # 7 V rows, one a repeat: 6 sentences; max_sentences 4; at most 3 tokens: the cat sleeps,
    # we visit the museum (4: no), a dog barks, she likes cold tea (4: no) -> 2
    assert (counts.corpus("en").n, counts.corpus("en").exact) == (6, True)
    assert counts.corpus("en_4").n == 4 and counts.corpus("en_short").n == 2
    assert "`where` leaving out 5" in counts.corpus("en").how
    # a corpus not perturbed yet: its sentences x 7 texts per sentence, not the file's 12 lines x 7
    count = plan_summary.text_count(study, "en_4", 0, set(), plan_summary.VARIANTS_PER_SENTENCE)
    assert (count.n, count.exact) == (28, False)


def test_corpus_counts_are_the_jobs_own(tmp_path, log):
    """What ingest and derive_corpus then make: the same numbers, length matching included."""
    from workflow_scripts.ingest import ingest
    from workflow_scripts.length_filter import derive_corpus

    corpora = {"en": {"source": "pc", "language": "en"}, "nl_2": {"source": "pc", "language": "nl", "max_sentences": 2},
               "nl_like_en": {"source": "pc", "language": "nl", "match_lengths_of": "en", "length_match_tolerance": 0.3}}
    study = evaluated_study(tmp_path, corpora)
    planned = {c: plan_summary.corpus_counts(study).corpus(c).n for c in corpora}
    spec = study.config["sources"]["pc"]
    ingest(spec, "pc", spec["path"], str(tmp_path / "res" / "ingest" / "pc"), 100, log)
    made = {}
    for corpus in ("en", "nl_2", "nl_like_en"):  # the reference first
        reference = str(tmp_path / "res" / "corpora" / "en") if corpus == "nl_like_en" else None
        made[corpus] = derive_corpus(study.config["corpora"][corpus], corpus, str(tmp_path / "res" / "ingest" / "pc"),
                                     str(tmp_path / "res" / "corpora" / corpus), 1, 100, reference, log)["rows"]
    assert planned == made and made["en"] == 6 and made["nl_2"] == 2


def test_probe_datasets_are_counted_in_their_own_units(tmp_path):
    """Montague's phrases from its word lists (N x A + N x A x (A - 1)), a BEIR set's questions
    and documents, an imported sample set's windows, generated triplets at most max_triplets;
    once built, what the build job counted."""
    study, plans = plan_summary.load_study([], str(tmp_path / "res"))  # config.yaml
    counts = {(probe, d.dataset): d for probe, found in plan_summary.dataset_counts(plans, []).items() for d in found}
    en = counts["montague", "modifiers_en"]  # 15 adjectives, 6 nouns (config.yaml)
    assert (en.n, en.unit, en.bound, en.texts) == (6 * 15 + 6 * 15 * 14, "phrases", "=", 1350 + 15 + 6 + 15 * 14)
    qa = counts["retrieval", "telecom_qa"]  # resources/retrieval/telecom_qa: 36 queries, 45 documents
    assert (qa.n, qa.unit, qa.texts) == (36, "questions", 36 + 45)
    assert (counts["settheory", "news"].n, counts["settheory", "news"].unit) == (64, "windows")  # news_samples.tsv
    nd = counts["triplets", "negation_detection"]
    assert (nd.n, nd.bound, nd.unit) == (674, "<=", "triplets")  # the paper's size, what the samples may yield
    assert ("csc", "pc_en") not in counts  # corpora are counted as corpora
    # built: the build job's report is what counts
    report = tmp_path / "res" / "reports" / "triplets" / "negation_detection.json"
    report.parent.mkdir(parents=True)
    report.write_text(json.dumps({"size": 79, "texts": {"unique_texts": 230}}))
    built = {d.dataset: d for d in plans["triplets"].planned_counts()}["negation_detection"]
    assert (built.n, built.bound, built.texts) == (79, "=", 230)
    # unless a planned job rebuilds it
    assert {d.dataset: d for d in plans["triplets"].planned_counts(frozenset([str(report)]))}["negation_detection"].n == 674
    text = plan_summary.summary(study, plans, [], cores=1, calibrate_missing=False)
    assert "  montague modifiers_en: 1,350 phrases, 1,581 texts (15 adjectives x 6 nouns)" in text
    assert "  retrieval telecom_qa: at most 36 questions, 81 texts (queries.jsonl, beside 45 documents)" in text
    # pc_en: the distinct English lines of the shipped sample, x 7 texts per sentence
    english = {" ".join(line.split("\t")[0].split()) for line in plan_summary.SAMPLE_FILE.read_text().splitlines()}
    assert f"  pc_en: {len(english)} sentences, ~{7 * len(english):,} texts (source read as ingest reads it" in text


def test_the_summary_plans_the_study_as_the_workflow_does(tmp_path):
    """rules/common.smk and plan_summary.load_study plan by one function (study.plan_study): on the
    default config, every target of the summary's probe plans is an output of a job Snakemake's dry run
    lists, the models embedded are the study's, and each probe's datasets and (dataset, model) pairs
    are those its planned jobs carry."""
    import subprocess
    import sys

    results = str(tmp_path / "res")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--dry-run", "--cores", "2", "--config",
                           f"results={results}"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    jobs = parse_dry_run(proc.stdout.splitlines(keepends=True))
    outputs = {o for job in jobs for o in job.outputs}
    study, plans = plan_summary.load_study([], results)
    targets = [t for plan in plans.values() for t in plan.targets()]
    assert targets and [t for t in targets if t not in outputs] == []
    embedded = {(j.wildcards["model"], j.wildcards["scope"]) for j in jobs if j.rule == "embed"}
    assert {m for m, _ in embedded} == set(study.config["models"])
    assert {p.model for plan in plans.values() for p in plan.pairs} == set(study.config["models"])
    # each probe's datasets, and the (dataset, model) pairs it scores, are those its jobs carry
    compared = 0
    for name, plan in plans.items():
        mine = [j.wildcards for j in jobs if j.rule.startswith(f"{name}_") and "dataset" in j.wildcards]
        if not mine:
            continue
        assert {w["dataset"] for w in mine} == set(plan.datasets), name
        assert {(w["dataset"], w["model"]) for w in mine if "model" in w} == set(plan.pairs), name
        compared += 1
    assert compared >= 4
