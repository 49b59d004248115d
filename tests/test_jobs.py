"""A job is a function (workflow_scripts/jobs.py): the name a rule gives resolves to a function,
and what the job prints, by Python or by a child process, ends up in the rule's log."""
import subprocess
import sys

import pytest

from workflow_runner import ROOT
from workflow_scripts import jobs


@pytest.mark.parametrize("name,message", [
    ("length_filter", "must read 'module:function'"),
    ("no_such_module:run", "No module named"),
    ("length_filter:run_nothing", "has no attribute 'run_nothing'"),
    ("length_filter:BUCKET_LABELS", "is not a function"),
])
def test_a_bad_function_name_says_what_is_wrong(name, message):
    with pytest.raises(jobs.JobError, match=message):
        jobs.resolve(name)


def test_a_name_resolves_within_the_package():
    from workflow_scripts.length_filter import run_length_buckets
    assert jobs.resolve("length_filter:run_length_buckets") is run_length_buckets


def run_job_in_a_child(log, body: str) -> subprocess.CompletedProcess:
    """Call jobs.call in a fresh interpreter (it redirects file descriptors 1 and 2) with a job
    whose function is `body`."""
    code = (
        "import os, sys\n"
        "from workflow_scripts import jobs\n"
        f"def function(job):\n{body}\n"
        "jobs.resolve = lambda name: function\n"
        f"jobs.call(jobs.make_job(log={str(log)!r}, threads=3, function='any:thing'))\n")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)


def test_the_log_gets_prints_records_and_child_output_and_is_rewritten(tmp_path):
    log = tmp_path / "logs" / "rule" / "job.log"
    log.parent.mkdir(parents=True)
    log.write_text("a previous attempt's log\n")
    proc = run_job_in_a_child(log, "\n".join([
        "    print('printed')",
        "    sys.stderr.write('to stderr\\n')",
        "    import logging; logging.getLogger('x').info('a record')",
        "    os.system('echo from a child process')",
        "    print('polars threads', os.environ['POLARS_MAX_THREADS'])"]))
    assert proc.returncode == 0, proc.stderr
    text = log.read_text()
    assert "previous attempt" not in text
    for line in ("printed", "to stderr", "a record", "from a child process", "polars threads 3"):
        assert line in text, (line, text)
    assert "printed" not in proc.stdout


def test_a_failing_job_leaves_its_traceback_in_the_log_and_fails(tmp_path):
    log = tmp_path / "job.log"
    proc = run_job_in_a_child(log, "    raise ValueError('bad input line 7')")
    assert proc.returncode != 0
    assert "ValueError: bad input line 7" in log.read_text()


def test_a_test_job_reads_like_a_snakemake_job():
    job = jobs.make_job(input={"texts": "a.parquet", "stores": ["s1", "s2"]}, params={"spec": {"k": 1}},
                        output={"table": "t.csv"}, wildcards={"model": "m"}, threads=2, function="m:f")
    assert job.input.texts == job.input["texts"] == "a.parquet" and job.input.stores == ["s1", "s2"]
    assert job.input.get("reference") is None and job.params.spec == {"k": 1}
    assert job.params["function"] == "m:f" and job.output[0] == "t.csv" and job.wildcards.model == "m"
    assert job.threads == 2 and list(job.log) == []


def test_an_aggregate_reads_each_pairs_files_by_index():
    pairs = [{"dataset": "d", "model": "a"}, {"dataset": "d", "model": "b"}]
    inputs = {"summary_0": "a.json", "curves_1": "b.parquet", "summary_1": "b.json", "retrieval_accuracy": "t.csv"}
    assert jobs.pair_entries(pairs, inputs) == [{"dataset": "d", "model": "a", "summary": "a.json"},
                                               {"dataset": "d", "model": "b", "curves": "b.parquet",
                                                "summary": "b.json"}]
    assert pairs[0] == {"dataset": "d", "model": "a"}  # the params are not changed
