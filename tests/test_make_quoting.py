"""The Makefile never runs a config value in a shell, and its `unlock` / `recover` targets never pull
Snakemake's lock from under a live run of the checkout.

- A config's `results:` holding `$(touch ...)` or backticks reaches recipes single-quoted: `make run`,
  `make report` and `make dry-run` create no marker file.
- CONFIG is a space-separated list of files, so a name with a space cannot be told apart: a CONFIG word
  with characters other than letters, digits and `. _ - / + , @ : =`, or naming no file, is refused
  with a message before any shell (make's own `$(shell ...)` included) sees it.
- `make unlock` refuses while a live process holds a study's results lock in the checkout (naming the
  folder and the pid), and unlocks once the holder is dead.

Each test works in a scratch checkout: the repository's entries linked, the Makefile copied, so its
`.snakemake/` and `results/` are the test's own."""
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from workflow_runner import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make")

VENV = Path(sys.executable).parent.parent
MARKERS = ("marker_dollar", "marker_backtick")
HOSTILE_RESULTS = "out/$(touch marker_dollar)`touch marker_backtick`"
TIMEOUT = 600


def scratch_checkout(tmp_path: Path) -> Path:
    work = tmp_path / "checkout"
    work.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in (".git", ".snakemake", "results", "Makefile", ".venv", "tests"):
            (work / entry.name).symlink_to(entry)
    (work / ".venv").symlink_to(VENV)
    shutil.copy(ROOT / "Makefile", work / "Makefile")
    return work


def tiny_study(work: Path, results: str, name: str = "study.yaml") -> Path:
    (work / "bitext.txt").write_text("the cat sleeps\tde kat slaapt\nprices are high\tde prijzen zijn hoog\n")
    config = {"seed": 1, "embedding_partitions": 1, "results": results,
              "sources": {"mini": {"format": "bitext", "path": "bitext.txt", "languages": ["en", "nl"]}},
              "corpora": {"mini_en": {"source": "mini", "language": "en"}},
              "models": {"hashing": {"family": "hashing", "dim": 16}},
              "csc": {"perturb": {"grammatical_negation": {"enabled": False}}, "bootstrap_b": 10}}
    path = work / name
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def make(work: Path, *args: str) -> subprocess.CompletedProcess:
    # the venv is set up already (-o: never reinstalled here); the Makefile's defaults, whatever this shell exports
    env = {k: v for k, v in os.environ.items() if k not in ("CONFIG", "RESULTS", "CORES", "SNAKEMAKE_ARGS", "MAKEFLAGS")}
    return subprocess.run(["make", "--no-print-directory", "-C", str(work), "-o", ".venv/.installed", "CORES=2", *args],
                          capture_output=True, text=True, env=env, timeout=TIMEOUT)


def no_markers(work: Path, proc: subprocess.CompletedProcess) -> None:
    made = [m for m in MARKERS if (work / m).exists()]
    assert not made, f"the shell ran a config value: {made} created\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def test_results_value_is_never_run_by_run_report_or_dry_run(tmp_path):
    work = scratch_checkout(tmp_path)
    tiny_study(work, HOSTILE_RESULTS)
    dry = make(work, "dry-run", "CONFIG=study.yaml")
    no_markers(work, dry)
    assert dry.returncode == 0, dry.stderr[-3000:]
    run = make(work, "run", "CONFIG=study.yaml")
    no_markers(work, run)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # the folder is the config's, as written; what make run prints on success names it
    assert (work / HOSTILE_RESULTS / "report.md").exists()
    assert f"Done. Results are in {HOSTILE_RESULTS}/: report.md, tables/, plots/." in run.stdout
    assert (f"'make report CONFIG=\"study.yaml\"' builds the HTML report of everything, "
            f"{HOSTILE_RESULTS}/report.html.") in run.stdout
    report = make(work, "report", "CONFIG=study.yaml")
    no_markers(work, report)
    assert report.returncode == 0, report.stdout[-3000:] + report.stderr[-3000:]
    assert (work / HOSTILE_RESULTS / "report.html").exists()
    assert f"Done. The report is {HOSTILE_RESULTS}/report.html." in report.stdout
    # make recover after a kill (Snakemake's lock left behind): unlocked, nothing left to run, the same ending
    lock = snakemake_lock(work, f"{HOSTILE_RESULTS}/report.md")
    recover = make(work, "recover", "CONFIG=study.yaml")
    no_markers(work, recover)
    assert recover.returncode == 0, recover.stdout[-3000:] + recover.stderr[-3000:]
    assert not lock.exists() and "--rerun-incomplete" in recover.stdout
    assert f"Done. Results are in {HOSTILE_RESULTS}/: report.md, tables/, plots/." in recover.stdout


def test_a_results_folder_given_as_RESULTS_reaches_snakemake_as_written(tmp_path):
    """RESULTS=DIR (command line or environment) holding `$`: make expanded `$b` to nothing, so
    `make report` asked Snakemake for another folder's report (out/a$c)."""
    work = scratch_checkout(tmp_path)
    tiny_study(work, "res")
    folder = "out/a$b$$c"
    for how in ("command line", "environment"):
        for target in ("report", "run", "dry-run", "unlock", "recover"):
            args, extra_env = ([f"RESULTS={folder}"], {}) if how == "command line" else ([], {"RESULTS": folder})
            env = {k: v for k, v in os.environ.items() if k not in ("CONFIG", "RESULTS", "SNAKEMAKE_ARGS", "MAKEFLAGS")}
            proc = subprocess.run(["make", "-n", "--no-print-directory", "-C", str(work), "-o", ".venv/.installed",
                                   target, "CONFIG=study.yaml", *args], capture_output=True, text=True,
                                  env={**env, **extra_env}, timeout=TIMEOUT)
            assert proc.returncode == 0, proc.stderr[-2000:]
            # single-quoted as written; what the shell then gives the program is the folder itself
            assert f"'{folder}" in proc.stdout and "'out/a$c" not in proc.stdout, (how, target, proc.stdout[-2000:])


@pytest.mark.parametrize("name, left", [
    ("`touch marker_backtick`.yaml", "`"),  # split at the space: the first word is refused
    ("$(touch marker_dollar).yaml", "$("),
    ("$(shell touch marker_dollar).yaml", "$("),  # make's own function: split at the space, refused
    ("x;touch marker_dollar;.yaml", ";"),
    ("x|y&z.yaml", "|&"),
    ("it's.yaml", "'"),
])
def test_config_names_with_shell_characters_are_refused(tmp_path, name, left):
    work = scratch_checkout(tmp_path)
    study = tiny_study(work, "res")
    if "/" not in name and " " not in name:
        shutil.copy(study, work / name)  # the file exists: refused for its name alone
    for target in ("dry-run", "run", "report", "unlock"):
        proc = make(work, target, f"CONFIG={name}")
        no_markers(work, proc)
        assert proc.returncode != 0
        word = name.split()[0]
        assert f'CONFIG: config file name `{word}` holds "{left}"; ' in proc.stderr, proc.stderr[-2000:]
        assert "may hold only letters, digits and . _ - / + , @ : =" in proc.stderr
        assert "snakemake" not in proc.stdout  # refused before any command ran
    assert not (work / "res").exists()


def test_config_name_with_a_space_or_no_file_is_refused(tmp_path):
    work = scratch_checkout(tmp_path)
    shutil.copy(tiny_study(work, "res"), work / "my study.yaml")
    proc = make(work, "dry-run", "CONFIG=my study.yaml")
    assert proc.returncode != 0
    assert (f"CONFIG: config file `my` not found (from {work}); CONFIG is a space-separated list of existing "
            "config files, so a name with a space is split in two") in proc.stderr, proc.stderr[-2000:]
    # the list form still works
    ok = make(work, "dry-run", "CONFIG=study.yaml study.yaml")
    assert ok.returncode == 0, ok.stderr[-3000:]


def fake_holder(work: Path, results: Path) -> subprocess.Popen:
    """A live process holding `results`' lock, as a running study's Snakemake holds it."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom workflow_scripts import results_lock\n"
                             f"results_lock.acquire({str(results)!r})\nprint('held', flush=True)\ntime.sleep(600)\n"],
                            stdout=subprocess.PIPE, text=True, cwd=work)
    assert proc.stdout.readline().strip() == "held"
    return proc


def snakemake_lock(work: Path, *paths: str) -> Path:
    """Snakemake's lock as a killed (or running) run leaves it: the files it locks, one a line."""
    locks = work / ".snakemake" / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    lock = locks / "0.output.lock"
    lock.write_text("".join(f"{p}\n" for p in paths))
    return lock


@pytest.mark.parametrize("held", ["res", "results/other_study", "elsewhere/folder"])
def test_make_unlock_refuses_while_a_study_of_the_checkout_runs(tmp_path, held):
    """The study's own folder, another study's under results/, or one Snakemake's lock names."""
    work = scratch_checkout(tmp_path)
    tiny_study(work, "res")
    lock = snakemake_lock(work, f"{held}/tables/x.csv")
    holder = fake_holder(work, work / held)
    try:
        for target in ("unlock", "recover"):
            proc = make(work, target, "CONFIG=study.yaml")
            assert proc.returncode != 0
            assert "not unlocking: a run is live in this checkout (results folder `" in proc.stderr, proc.stderr[-2000:]
            assert f"{held}` is held by pid {holder.pid} on host " in proc.stderr, proc.stderr[-2000:]
            assert "wait for it to finish (or stop it), then unlock" in proc.stderr
            assert lock.exists() and "--unlock" not in proc.stdout.replace("unlock-check", "")
    finally:
        holder.send_signal(signal.SIGKILL)  # the kernel releases a dead process's flock
        holder.wait()
    proc = make(work, "unlock", "CONFIG=study.yaml")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert not lock.exists()  # Snakemake's stale lock removed


def test_make_help_lists_every_target():
    """`make help` exits 0 without setting anything up and names each target the Makefile declares."""
    proc = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    phony = next(line for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith(".PHONY:"))
    targets = phony.split(":", 1)[1].split()
    listed = set(re.findall(r"make ([a-z-]+)", proc.stdout))
    assert set(targets) - listed == set(), f"not in make help: {sorted(set(targets) - listed)}"
    assert "STOP_JOBS=yes" in proc.stdout and "Ctrl-C" in proc.stdout
