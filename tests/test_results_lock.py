"""One run at a time per results folder (workflow_scripts/results_lock.py): two working directories
whose configs name the same `results:` would otherwise both run and race on its files. The second
is refused while the first holds `<results>/.lock`; a dry run is never refused, nor are the job
processes of the run that holds it (`--mode subprocess` / `remote`); a killed holder releases it."""
import os
import signal
import subprocess
import sys
import time

import pytest

from workflow_runner import ROOT, SNAKEMAKE, snakemake, write_config
from workflow_scripts import results_lock

MESSAGE = ("results folder `{results}` is in use by another run (pid {pid} on host {host} since {since}); wait for "
           "it, or give this study its own `results:`")


def tiny_config(directory, results) -> dict:
    (directory / "bitext.txt").write_text("the cat sleeps\tde kat slaapt\nprices are high\tde prijzen zijn hoog\n")
    return {"seed": 1, "embedding_partitions": 1, "results": str(results),
            "sources": {"mini": {"format": "bitext", "path": "bitext.txt", "languages": ["en", "nl"]}},
            "corpora": {"mini_en": {"source": "mini", "language": "en"}},
            "models": {"hashing": {"family": "hashing", "dim": 16}},
            "csc": {"perturb": {"grammatical_negation": {"enabled": False}}, "bootstrap_b": 10}}


@pytest.fixture
def held(tmp_path):
    """A results folder whose lock this test process holds."""
    results = tmp_path / "shared_results"
    results_lock.acquire(results)
    yield results
    results_lock.release(results)


def test_a_second_holder_is_refused_with_the_first_ones_details(tmp_path):
    results = tmp_path / "results"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom workflow_scripts import results_lock\n"
                               f"results_lock.acquire({str(results)!r})\nprint('held', flush=True)\ntime.sleep(600)\n"],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        info = results_lock.holder(results)
        assert info["pid"] == holder.pid and info["host"] and info["since"]
        with pytest.raises(results_lock.ResultsInUse) as err:
            results_lock.acquire(results)
        assert str(err.value) == MESSAGE.format(results=results, **info)
    finally:
        holder.send_signal(signal.SIGKILL)  # the kernel releases a dead process's flock
        holder.wait()
    results_lock.acquire(results)
    try:
        assert results_lock.holder(results)["pid"] == os.getpid()
        results_lock.acquire(results)  # again in the holding process: a no-op
    finally:
        results_lock.release(results)


def test_job_processes_never_take_the_lock(tmp_path):
    """The onstart handler's guard: only Snakemake's main process (exec mode default) locks."""
    class Job:
        is_main_process = False
    results_lock.take_for_run(tmp_path / "r", Job())
    assert not (tmp_path / "r" / ".lock").exists()


def test_second_run_on_the_same_results_is_refused_and_a_dry_run_is_not(tmp_path, held):
    run = tmp_path / "second"
    run.mkdir()
    cfg = write_config(run, tiny_config(run, held))
    out = snakemake(run, cfg, check=False)
    text = out.stdout + out.stderr
    assert out.returncode != 0, text[-3000:]
    info = results_lock.holder(held)
    assert info["pid"] == os.getpid()
    assert MESSAGE.format(results=held, **info) in text
    assert not (held / "ingest").exists() and "rule ingest" not in text  # before any job
    dry = snakemake(run, cfg, "--dry-run", check=False)
    assert dry.returncode == 0 and "is in use by another run" not in dry.stdout + dry.stderr
    # a job process of the run that holds the lock (as Snakemake spawns them, or a SLURM job) runs
    for mode in ("subprocess", "remote"):
        job = subprocess.run([*SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "--directory", str(run), "--cores", "1",
                              "--configfile", str(cfg), "--mode", mode, "--forcerun", "ingest",
                              str(held / "reports" / "ingest" / "mini.json")], capture_output=True, text=True)
        assert job.returncode == 0, (mode, job.stderr[-3000:])
