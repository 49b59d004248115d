"""The recovery steps of docs/recovery.md, as written, finish a run killed with SIGKILL mid-job.

A tiny run (one corpus, the hashing model, one partition) is killed, Snakemake and its jobs at once
(SIGKILL of the process group: a node that dies, a scheduler past its grace period), while its
embedding job runs. That leaves Snakemake's lock in `.snakemake/locks`, an incomplete output, and
this workflow's own `<results>/.lock` (whose flock died with the process). Then the commands
docs/recovery.md gives between `<!-- recovery -->` and `<!-- /recovery -->` are run in order: every line
of that block that starts with `snakemake`, with the options of the killed run added (Snakefile,
--directory, --configfile), as that page asks. The last must finish the run: exit 0, the report
written, and nothing left to do."""
import os
import re
import shlex
import signal
import subprocess
import time

import pytest
import yaml

from workflow_runner import ROOT, SNAKEMAKE, write_config

START, END = "<!-- recovery -->", "<!-- /recovery -->"
TIMEOUT = 600


def readme_recovery_commands() -> list[list[str]]:
    text = (ROOT / "docs" / "recovery.md").read_text(encoding="utf-8")
    if START not in text or END not in text or text.index(START) > text.index(END):
        pytest.fail(f"docs/recovery.md has no recovery steps between `{START}` and `{END}`: this test runs them as "
                    "written (each line in between that starts with `snakemake`), so they must be marked",
                    pytrace=False)
    block = text[text.index(START) + len(START):text.index(END)]
    commands = [shlex.split(line.strip().removeprefix("$ ")) for line in block.splitlines()
                if re.match(r"^\s*(\$ )?snakemake\b", line)]
    if not commands:
        pytest.fail(f"docs/recovery.md's recovery block ({START} ... {END}) holds no line starting with `snakemake`",
                    pytrace=False)
    return commands


def tiny_config(directory):
    lines = ["the cat sleeps on the mat\tde kat slaapt op de mat", "prices are high\tde prijzen zijn hoog",
             "she likes cold tea\tzij houdt van koude thee", "we will visit the museum\twij bezoeken het museum"]
    (directory / "bitext.txt").write_text("\n".join(lines) + "\n")
    return {"seed": 1, "embedding_partitions": 1, "results": "results",
            "sources": {"mini": {"format": "bitext", "path": "bitext.txt", "languages": ["en", "nl"]}},
            "corpora": {"mini_en": {"source": "mini", "language": "en"}},
            "models": {"hashing": {"family": "hashing", "dim": 16}},
            "csc": {"perturb": {"variants_per_sentence": 2, "grammatical_negation": {"enabled": False}},
                    "bootstrap_b": 10}}


def options(run, cfg) -> list[str]:
    """The killed run's options, which the recovery page's commands are to be given again."""
    return ["-s", str(ROOT / "Snakefile"), "--directory", str(run), "--configfile", str(cfg)]


def test_readme_recovery_steps_finish_a_run_killed_mid_job(tmp_path):
    commands = readme_recovery_commands()  # before the slow part: no markers, no run
    run = tmp_path / "run"
    run.mkdir()
    cfg = write_config(run, tiny_config(run))
    killed = subprocess.Popen([*SNAKEMAKE, *options(run, cfg), "--cores", "2"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline, seen = time.monotonic() + TIMEOUT, []
    try:
        for line in killed.stdout:
            seen.append(line)
            if re.match(r"^(local)?rule embed:", line):
                break
            assert time.monotonic() < deadline, "".join(seen)[-3000:]
        else:
            pytest.fail("the run ended before its embedding job started:\n" + "".join(seen)[-3000:])
        time.sleep(0.5)  # the job's process is importing its modules: mid-job
    finally:
        os.killpg(killed.pid, signal.SIGKILL)  # Snakemake and its jobs at once
        killed.wait()
    assert killed.returncode == -signal.SIGKILL
    assert os.listdir(run / ".snakemake" / "locks"), "Snakemake's lock should be left behind by SIGKILL"
    assert os.listdir(run / ".snakemake" / "incomplete"), "the embedding job's output should be marked incomplete"
    assert '"pid": %d' % killed.pid in (run / "results" / ".lock").read_text()  # ours: the file stays, the flock not

    for i, command in enumerate(commands):
        assert command[0] == "snakemake"
        out = subprocess.run([*SNAKEMAKE, *command[1:], *options(run, cfg)], capture_output=True, text=True,
                             timeout=TIMEOUT)
        assert out.returncode == 0, (f"recovery step {i + 1} `{shlex.join(command)}` failed "
                                     f"({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-5000:]}")
    assert (run / "results" / "report.md").exists()
    assert '"pid": %d' % killed.pid not in (run / "results" / ".lock").read_text()  # the rerun took the lock
    dry = subprocess.run([*SNAKEMAKE, *options(run, cfg), "--dry-run"], capture_output=True, text=True,
                         timeout=TIMEOUT)
    assert dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout[-3000:]


# ---- stopping a run: Ctrl-C ends its jobs; a killed Snakemake's jobs are found before unlocking -----

@pytest.fixture
def hanging_server():
    """An embeddings server that never answers: the study's embedding job waits on it for as long as
    the test needs."""
    from embeddings_server import EmbeddingsServer
    with EmbeddingsServer(dim=8) as server:
        server.script, server.hang_s = ["hang"] * 50, TIMEOUT
        try:
            yield server
        finally:
            server.release.set()


def served_study(directory, server) -> dict:
    """A retrieval-only study whose one embedding job asks the server (timeout_s 600: it waits)."""
    return {"seed": 1, "embedding_partitions": 1, "results": "res",
            "models": {"served": {"family": "openai_embeddings", "base_url": server.base_url, "model": "toy-embed",
                                  "dimensions": 8, "timeout_s": 600, "retries": 0, "concurrency": 1}},
            "retrieval": {"datasets": {"t": {"kind": "beir", "path": str(ROOT / "resources/retrieval/telecom_qa")}}}}


def job_processes(workdir) -> list:
    """The processes running a job script of `workdir`'s Snakemake, found here with psutil (not with
    the workflow's own finder, so that these tests see what runs whatever the workflow says)."""
    import psutil
    scripts = os.path.join(os.path.realpath(workdir), ".snakemake", "scripts") + os.sep
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(arg.startswith(scripts) for arg in proc.info["cmdline"] or ()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def start_until_the_job_asks(command, cwd, server) -> subprocess.Popen:
    """Snakemake in a session of its own (a signal to it reaches it alone), once its embedding job
    has sent its request."""
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    if not server.hanging.wait(TIMEOUT):
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the embedding job never sent its request")
    return proc


def test_sigint_to_snakemake_ends_the_running_jobs(tmp_path, hanging_server):
    """`kill -INT <snakemake pid>` (what Ctrl-C sends): Snakemake alone printed "Terminating processes
    on user request" and waited for the job, which ran on."""
    run = tmp_path / "run"
    run.mkdir()
    cfg = write_config(run, served_study(run, hanging_server))
    proc = start_until_the_job_asks([*SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "--cores", "2", "--configfile",
                                     str(cfg)], run, hanging_server)
    try:
        jobs = job_processes(run)
        assert len(jobs) == 1, jobs  # the embedding job, a child of Snakemake
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
        assert proc.returncode != 0
        gone_by = time.monotonic() + 10
        while job_processes(run) and time.monotonic() < gone_by:
            time.sleep(0.2)
        assert job_processes(run) == []
        assert os.listdir(run / ".snakemake" / "incomplete")  # its output marked for --rerun-incomplete
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for job in job_processes(run):
            job.kill()


def test_unlock_and_recover_refuse_while_a_killed_runs_jobs_still_run(tmp_path, hanging_server):
    """After `kill -9 <snakemake pid>` the job lived on (parent 1) and `make unlock` said "Unlocked
    working directory." while it still embedded into the study's folder."""
    from test_make_quoting import make, scratch_checkout
    work = scratch_checkout(tmp_path)
    (work / "study.yaml").write_text(yaml.safe_dump(served_study(work, hanging_server), sort_keys=False))
    proc = start_until_the_job_asks([str(work / ".venv/bin/snakemake"), "--cores", "2", "--configfile", "study.yaml"],
                                    work, hanging_server)
    try:
        proc.send_signal(signal.SIGKILL)  # Snakemake alone: its job is left running
        proc.wait(30)
        jobs = job_processes(work)
        assert len(jobs) == 1 and jobs[0].ppid() != proc.pid
        log = "res/logs/embed/served/retrieval.t/part-000.log"
        for target in ("unlock", "recover"):
            refused = make(work, target, "CONFIG=study.yaml")
            assert refused.returncode != 0, refused.stdout[-2000:]
            assert (f"not unlocking: 1 job process(es) of this checkout still run, left by a Snakemake that was killed: "
                    f"pid {jobs[0].pid} (writing {log}, since ") in refused.stderr, refused.stderr[-2000:]
            assert "add STOP_JOBS=yes to end them first" in refused.stderr
            assert os.listdir(work / ".snakemake" / "locks") and "--unlock" not in refused.stdout.replace("unlock-", "")
        assert jobs[0].is_running()
        ended = make(work, "unlock", "CONFIG=study.yaml", "STOP_JOBS=yes")
        assert ended.returncode == 0, ended.stdout[-2000:] + ended.stderr[-2000:]
        assert f"ended 1 job process(es) left by a killed run: pid {jobs[0].pid} (writing {log}" in ended.stdout
        locks = work / ".snakemake" / "locks"
        assert job_processes(work) == [] and not (locks.exists() and os.listdir(locks))  # Snakemake's lock removed
    finally:
        for job in job_processes(work):
            job.kill()
