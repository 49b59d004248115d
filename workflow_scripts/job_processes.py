"""The job processes of a run: ended when the run is stopped, found when it was killed.

- **Ctrl-C ends the jobs.** Snakemake's own answer to SIGINT is to stop scheduling and wait for the
  jobs that run (a terminal's Ctrl-C reaches them too, through the process group, but `kill -INT
  <snakemake pid>`, a job runner or a script sending it to Snakemake alone leaves them running for as
  long as they take). `end_jobs_on_interrupt`, called by Snakemake's main process when the run
  starts executing (rules/common.smk, `onstart`), puts a SIGINT handler in front of Snakemake's: it
  terminates every process Snakemake started (the jobs and their workers), then raises
  KeyboardInterrupt as before, so Snakemake marks their outputs incomplete and exits. SIGTERM
  keeps Snakemake's meaning: no new jobs, the running ones finish.
- **After a SIGKILL** of Snakemake (or a crash of it), its jobs live on, their parent now the
  init process, still writing into the study's folder. `leftover_jobs(workdir)` finds every process
  that runs a job script of the working directory (Snakemake writes each job's script to
  `<workdir>/.snakemake/scripts/`) and the processes they started; `make unlock` and `make recover`
  refuse while there are any, naming each (pid, the log it writes, since when), or end them first
  with STOP_JOBS=yes (`python -m workflow_scripts.job_processes check [--stop]`).
"""
from __future__ import annotations

import os
import signal
import sys
import time

import psutil

STOP_GRACE_S = 10.0  # SIGTERM, then SIGKILL for what is left after this long


def end_jobs_on_interrupt() -> None:
    """Install the SIGINT handler described above (in the main thread; elsewhere it cannot be)."""
    previous = signal.getsignal(signal.SIGINT)

    def interrupted(signum, frame):
        stop(psutil.Process().children(recursive=True))
        if callable(previous):
            previous(signum, frame)
        else:
            raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGINT, interrupted)
    except ValueError:  # not the main thread: Snakemake's own handling stays
        pass


def leftover_jobs(workdir: str | os.PathLike = ".") -> list[psutil.Process]:
    """Processes running a job script of `workdir`'s Snakemake (`.snakemake/scripts/`), with the
    processes they started, by pid; this process excluded."""
    folders = {os.path.join(os.path.abspath(workdir), ".snakemake", "scripts") + os.sep,
               os.path.join(os.path.realpath(workdir), ".snakemake", "scripts") + os.sep}
    found: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if proc.pid == os.getpid() or not any(arg.startswith(tuple(folders)) for arg in proc.info["cmdline"] or ()):
                continue
            found[proc.pid] = proc
            for child in proc.children(recursive=True):
                found[child.pid] = child
        except psutil.Error:  # ended meanwhile, or not ours to read
            continue
    return [found[pid] for pid in sorted(found)]


def describe(proc: psutil.Process) -> str:
    """`pid N (writing <log>, since <time>)`: the file its output goes to is the job's log."""
    try:
        log = next((f.path for f in proc.open_files() if f.fd == 1), None)
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(proc.create_time()))
    except psutil.Error:
        return f"pid {proc.pid}"
    return f"pid {proc.pid} (" + (f"writing {os.path.relpath(log)}, " if log else "") + f"since {since})"


def stop(procs: list[psutil.Process], grace_s: float = STOP_GRACE_S) -> list[psutil.Process]:
    """SIGTERM each process, SIGKILL those alive after `grace_s`; the processes that were ended."""
    for proc in procs:
        try:
            proc.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=grace_s)
    return procs


def refusal(procs: list[psutil.Process]) -> str:
    named = "; ".join(describe(p) for p in procs)
    return (f"not unlocking: {len(procs)} job process(es) of this checkout still run, left by a Snakemake that was "
            f"killed: {named}. They write into the study's folder, and a rerun would start the same jobs beside "
            "them. Wait for them to end, end them yourself (kill PID), or add STOP_JOBS=yes to end them first "
            "(docs/recovery.md).")


def main(argv: list[str]) -> int:
    """python -m workflow_scripts.job_processes check [--stop] (the Makefile's `unlock`): exit 1
    naming the job processes of this working directory that still run, or with --stop end them."""
    if not argv or argv[0] != "check" or set(argv[1:]) - {"--stop"}:
        print("usage: python -m workflow_scripts.job_processes check [--stop]", file=sys.stderr)
        return 2
    procs = leftover_jobs()
    if not procs:
        return 0
    if "--stop" in argv:
        named = "; ".join(describe(p) for p in procs)
        stop(procs)
        print(f"ended {len(procs)} job process(es) left by a killed run: {named}")
        return 0
    print(f"error: {refusal(procs)}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
