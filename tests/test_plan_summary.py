"""The plan summary `make dry-run` ends with (workflow_scripts/plan_summary.py) and the throughput it
estimates from (workflow_scripts/throughput.py): the jobs read from Snakemake's dry-run listing,
texts new vs reused per model and stage, estimates = fixed cost per loading job + new texts / rate,
generations requested, other jobs from benchmark files; and the embedding job that records its
throughput. Every expectation is counted by hand from the small inputs written here."""
import json
import logging
import os
import shutil

import numpy as np
import pytest

from workflow_scripts import plan_summary, probes, throughput
from workflow_scripts.config import validate
from workflow_scripts.embed import embed_partition, throughput_file_of
from workflow_scripts.plan_summary import Job, parse_dry_run
from workflow_scripts.study import Study
from workflow_scripts.texts import write_text_partitions

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
    assert not (work / "res" / ".cache").exists()  # CALIBRATE=no measured nothing
