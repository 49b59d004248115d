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
