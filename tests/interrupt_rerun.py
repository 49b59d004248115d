"""Kill the workflow at random moments, rerun it, and require the results of an uninterrupted run.

Usage: python tests/interrupt_rerun.py KILLS [--config resources/configs/test_small.yaml]
                                            [--workdir DIR] [--seed 1] [--reference RESULTS]

1. A reference run of the config, uninterrupted (`--cores 2`), or, with `--reference`, the results
   of one made elsewhere from the repository root (CI passes the SLURM test's local run of the same
   config; its duration is read from RESULTS.seconds).
2. KILLS times: start (or resume, `--rerun-incomplete`) the same config in a second results
   directory, wait a random time drawn from (1 s, half the reference duration), kill it by its
   process id (SIGKILL of the whole process group: Snakemake and the jobs it runs, as when a node
   dies, or SIGTERM of Snakemake alone, as when a scheduler ends it, followed like SLURM's KillWait
   by SIGKILL of the group if it has not stopped within GRACE_SECONDS), then `--unlock`. A run that
   completes before its kill is checked like the last one, and the next round starts from nothing.
3. A last run with `--rerun-incomplete` must complete; so must every run in between that is not
   killed. Every result file (tables, reports, corpora, perturbations, vector stores, similarities,
   curves, plots; logs and benchmark timings aside) must be byte-identical to the reference, and no
   half-written `.tmp-*` entry may be left.
Every run is Snakemake started from the repository root (relative input paths, as in `make run`)
writing into the work directory; its `.snakemake` metadata, and the `--unlock` after each kill, are
the checkout's, so do not run this beside another run in the same checkout. Every wait is bounded, so a run that hangs fails the test with its
log instead of stalling CI. Not part of the pytest suite: CI runs it with 3 kills
(`make test-interrupt`).

Why the grace period: a SIGTERMed Snakemake can hang for good. CI saw one stop logging 10 s into a
run and never exit. Snakemake 9.27's SIGTERM handler (`JobScheduler.exit_gracefully`) takes the
scheduler's non-reentrant `threading.Lock`, and Python runs signal handlers on the main thread, which
holds that lock while it post-processes finished jobs and selects new ones, so a SIGTERM landing
there deadlocks. Schedulers send SIGKILL after a grace period; the workflow's results must survive
that, which is what this test checks, and the output counts the runs that needed it.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from diff_results import compare  # noqa: E402


def command(workdir: Path, config: Path, results: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(ROOT),
            "--cores", "2", "--configfile", str(config), "--config", f"results={workdir / results}", *extra]


GRACE_SECONDS = 30  # SLURM's default KillWait: SIGTERM, then SIGKILL this much later
UNLOCK_TIMEOUT = 300


def run(cmd: list[str], log: Path, timeout: float) -> float:
    """Run a workflow that must complete within `timeout` seconds; seconds taken."""
    started = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            sys.exit(f"run did not finish within {timeout:.0f} s: {' '.join(cmd)}\n{log.read_text()[-4000:]}")
    if proc.returncode != 0:
        sys.exit(f"run failed ({proc.returncode}): {' '.join(cmd)}\n{log.read_text()[-4000:]}")
    return time.perf_counter() - started


def stop(proc: subprocess.Popen, hard: bool) -> str:
    """Kill a running workflow as a dying node (hard) or a scheduler (SIGTERM, grace, SIGKILL) would."""
    if hard:
        os.killpg(proc.pid, signal.SIGKILL)  # snakemake and every job it started
        proc.wait()
        return "SIGKILL of the process group"
    os.kill(proc.pid, signal.SIGTERM)  # snakemake alone; it stops its jobs
    state = "SIGTERM of snakemake"
    try:
        proc.wait(timeout=GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        state += f", still running after {GRACE_SECONDS} s: SIGKILL of the process group"
    try:  # jobs of a SIGTERMed snakemake may outlive it briefly
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    return state


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kills", type=int)
    ap.add_argument("--config", default=str(ROOT / "resources" / "configs" / "test_small.yaml"))
    ap.add_argument("--workdir")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reference", help="results of an uninterrupted run of the same config from the repository "
                    "root, its duration in seconds in RESULTS.seconds (default: run one in the workdir)")
    ap.add_argument("--run-timeout", type=float, default=1200,
                    help="seconds a run that must complete may take (default: 1200)")
    args = ap.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="interrupt-test-")).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    config = Path(args.config).resolve()
    rng = random.Random(args.seed)
    started = time.perf_counter()

    reference_dir = Path(args.reference).resolve() if args.reference else workdir / "reference"
    seconds = reference_dir.with_name(reference_dir.name + ".seconds")
    if seconds.exists() and (reference_dir / "tables" / "csc_overlap.csv").exists():
        reference = float(seconds.read_text())  # given, or an earlier reference run of this workdir
    elif args.reference:
        sys.exit(f"--reference {reference_dir}: needs a finished run's results and {seconds.name} beside them")
    else:
        reference = run(command(workdir, config, "reference"), workdir / "reference.log", args.run_timeout)
        seconds.write_text(f"{reference:.1f}\n")
    print(f"reference run: {reference:.0f} s ({reference_dir})", flush=True)

    interrupted = workdir / "interrupted"
    shutil.rmtree(interrupted, ignore_errors=True)
    outcomes, rounds, checks = [], 1, 0
    for k in range(1, args.kills + 1):
        # a resumed run has less left to do: kill within half a full run, so most kills land mid-run
        delay = rng.uniform(1.0, 0.5 * reference)
        hard = rng.random() < 0.5
        log = open(workdir / f"interrupted-{k:02d}.log", "w")
        proc = subprocess.Popen(command(workdir, config, "interrupted", "--rerun-incomplete"), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=delay)
            if proc.returncode != 0:
                sys.exit(f"run {k} failed on its own ({proc.returncode}); see {log.name}")
            # it completed: check it, then start a new round from nothing so the next kill lands mid-run
            same, message = compare(reference_dir, interrupted)
            if not same:
                sys.exit(f"FAILED after round {rounds}: {message}")
            checks += 1
            state = f"completed (round {rounds} checked: {message}); new round"
            shutil.rmtree(interrupted)
            rounds += 1
        except subprocess.TimeoutExpired:
            state = stop(proc, hard)
        log.close()
        subprocess.run(command(workdir, config, "interrupted", "--unlock"), capture_output=True,
                       timeout=UNLOCK_TIMEOUT)
        outcomes.append(state)
        print(f"run {k}: {state} after {delay:.1f} s", flush=True)

    final = run(command(workdir, config, "interrupted", "--rerun-incomplete"), workdir / "final.log",
                args.run_timeout)
    print(f"final run (--rerun-incomplete): {final:.0f} s", flush=True)
    same, message = compare(reference_dir, workdir / "interrupted")
    leftovers = [str(p.relative_to(workdir)) for p in (workdir / "interrupted").rglob(".tmp-*")]
    killed = sum(not s.startswith("completed") for s in outcomes)
    print(f"{args.kills} runs: {killed} killed mid-run, {checks + 1} completions checked over {rounds} round(s) ("
          f"{sum(s.startswith('SIGKILL') for s in outcomes)} SIGKILL, {sum(s.startswith('SIGTERM') for s in outcomes)} "
          f"SIGTERM, {sum('still running' in s for s in outcomes)} of them past the grace period); "
          f"{message}; leftover temporary entries: {len(leftovers)}; total {time.perf_counter() - started:.0f} s")
    if not same or leftovers:
        sys.exit(f"FAILED: {message}; leftovers {leftovers[:10]}")
    print("interruption test passed")


if __name__ == "__main__":
    main()
