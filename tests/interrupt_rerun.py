"""Kill the workflow at random moments, rerun it, and require the results of an uninterrupted run.

Usage: python tests/interrupt_rerun.py KILLS [--config resources/configs/test_small.yaml]
                                            [--workdir DIR] [--seed 1]

1. A reference run of the config, uninterrupted (`--cores 2`).
2. KILLS times: start (or resume, `--rerun-incomplete`) the same config in a second results
   directory, wait a random time drawn from (1 s, half the reference duration), kill it by its
   process id (SIGKILL of the whole process group: Snakemake and the jobs it runs, as when a node
   dies, or SIGTERM of Snakemake alone, as when a scheduler ends it), then `--unlock`. A run that
   completes before its kill is checked like the last one, and the next round starts from nothing.
3. A last run with `--rerun-incomplete` must complete; so must every run in between that is not
   killed. Every result file (tables, reports, corpora, perturbations, vector stores, similarities,
   curves, plots; logs and benchmark timings aside) must be byte-identical to the reference, and no
   half-written `.tmp-*` entry may be left.
Not part of the pytest suite: CI runs it with 3 kills (`make test-interrupt`).
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

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from compare_results import compare  # noqa: E402


def absolute_config(config_path: Path, workdir: Path) -> Path:
    """The config with its input paths made absolute, so the workflow can run in `workdir`."""
    config = yaml.safe_load(config_path.read_text())
    for section in ("sources", "models"):
        for spec in (config.get(section) or {}).values():
            if spec.get("path") and not Path(spec["path"]).is_absolute():
                candidate = ROOT / spec["path"]
                if candidate.exists():
                    spec["path"] = str(candidate)
    out = workdir / "config.yaml"
    out.write_text(yaml.safe_dump(config, sort_keys=False))
    return out


def command(workdir: Path, config: Path, results: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir),
            "--cores", "2", "--configfile", str(config), "--config", f"results={results}", *extra]


def run(cmd: list[str], log: Path) -> float:
    started = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        sys.exit(f"run failed ({proc.returncode}): {' '.join(cmd)}\n{log.read_text()[-4000:]}")
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kills", type=int)
    ap.add_argument("--config", default=str(ROOT / "resources" / "configs" / "test_small.yaml"))
    ap.add_argument("--workdir")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="interrupt-test-")).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    config = absolute_config(Path(args.config).resolve(), workdir)
    rng = random.Random(args.seed)
    started = time.perf_counter()

    saved = workdir / "reference.seconds"
    if saved.exists() and (workdir / "reference" / "tables" / "csc_overlap.csv").exists():
        reference = float(saved.read_text())  # an earlier reference run of this workdir
    else:
        reference = run(command(workdir, config, "reference"), workdir / "reference.log")
        saved.write_text(f"{reference:.1f}\n")
    print(f"reference run: {reference:.0f} s", flush=True)

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
            same, message = compare(workdir / "reference", interrupted)
            if not same:
                sys.exit(f"FAILED after round {rounds}: {message}")
            checks += 1
            state = f"completed (round {rounds} checked: {message}); new round"
            shutil.rmtree(interrupted)
            rounds += 1
        except subprocess.TimeoutExpired:
            if hard:
                os.killpg(proc.pid, signal.SIGKILL)  # snakemake and every job it started
                state = "SIGKILL of the process group"
            else:
                os.kill(proc.pid, signal.SIGTERM)  # snakemake alone; it stops its jobs
                state = "SIGTERM of snakemake"
            proc.wait()
            try:  # jobs of a SIGTERMed snakemake may outlive it briefly
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()
        subprocess.run(command(workdir, config, "interrupted", "--unlock"), capture_output=True)
        outcomes.append(state)
        print(f"run {k}: {state} after {delay:.1f} s", flush=True)

    final = run(command(workdir, config, "interrupted", "--rerun-incomplete"), workdir / "final.log")
    print(f"final run (--rerun-incomplete): {final:.0f} s", flush=True)
    same, message = compare(workdir / "reference", workdir / "interrupted")
    leftovers = [str(p.relative_to(workdir)) for p in (workdir / "interrupted").rglob(".tmp-*")]
    killed = sum(not s.startswith("completed") for s in outcomes)
    print(f"{args.kills} runs: {killed} killed mid-run, {checks + 1} completions checked over {rounds} round(s) ("
          f"{sum('SIGKILL' in s for s in outcomes)} SIGKILL, {sum('SIGTERM' in s for s in outcomes)} SIGTERM); "
          f"{message}; leftover temporary entries: {len(leftovers)}; total {time.perf_counter() - started:.0f} s")
    if not same or leftovers:
        sys.exit(f"FAILED: {message}; leftovers {leftovers[:10]}")
    print("interruption test passed")


if __name__ == "__main__":
    main()
