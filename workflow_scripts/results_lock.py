"""One run at a time per results folder: `<results>/.lock`, beside Snakemake's own lock.

Snakemake locks its working directory (`.snakemake/locks`), not the folder the outputs go to, so two
working directories whose configs name the same `results:` would both run and race on the same files.
A run that executes jobs takes an exclusive `flock` on `<results>/.lock` and holds it, through an
open file descriptor, for the life of its Snakemake process; a second run finds it taken and stops
before any job with who holds it (pid, host, start time, written into the file). The lock is the
kernel's: a process that ends in any way, SIGKILL included, releases it, so no `--unlock` is ever
needed for it (the file itself stays, with the last holder's details). On NFS, Linux maps flock to
the server's byte-range locks (NFSv4), so runs on two hosts of a cluster exclude each other too.

Which invocations take it (rules/common.smk): only Snakemake's main process of a run that executes
jobs, through its `onstart` handler, which Snakemake calls after planning and before the first job
(a `--touch` run, which writes, takes it too). Snakemake never calls it for a dry run, nor for
`--lint`, `--report`, `--unlock`, `--list-*`, `--summary` or `--dag` (none of them executes), nor
when nothing is left to do, nor in the job processes it spawns (`--mode subprocess` or `remote`:
they run with `--no-hooks`; the handler checks the mode too). Not from the Snakefile's own code:
Snakemake reads the Snakefile before it knows whether the run is a dry run (`workflow.dryrun` is
still False then), and `sys.argv` misses profiles, the API and abbreviated flags. A run with
`--no-hooks` does not lock.

`make unlock` / `make recover` first run `python -m workflow_scripts.results_lock unlock-check RESULTS`:
`snakemake --unlock` removes the lock of every run of the working directory, so it is refused while a
live process holds the results lock of the study, of a folder under `results/`, or of a folder that
Snakemake's own locks name (`unlock_refusal`). A run still planning holds no results lock yet: unseen.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path

LOCK_NAME = ".lock"
# folder (resolved) -> the open descriptor holding its lock: kept for the life of the process
_HELD: dict[str, int] = {}


class ResultsInUse(RuntimeError):
    """Another process holds the results folder's lock."""


def lock_path(results) -> Path:
    return Path(results) / LOCK_NAME


def holder(results) -> dict:
    """What the lock file says about its (last) holder: pid, host, since; {} if unreadable."""
    try:
        return json.loads(lock_path(results).read_text())
    except (OSError, ValueError):
        return {}


def in_use_message(results, info: dict) -> str:
    return (f"results folder `{results}` is in use by another run (pid {info.get('pid', '?')} on host "
            f"{info.get('host', '?')} since {info.get('since', '?')}); wait for it, or give this study its own "
            "`results:`")


def acquire(results) -> Path:
    """Take `<results>/.lock` for this process, or raise ResultsInUse naming its holder. Taking it
    again in the process that holds it is a no-op (the descriptor stays open until the process ends,
    or `release`)."""
    folder = Path(results)
    key = str(folder.resolve())
    if key in _HELD:
        return lock_path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path(folder), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        os.close(fd)
        if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise
        # the holder writes its details right after taking the lock: give it a moment to finish
        info = holder(folder)
        for _ in range(20):
            if info:
                break
            time.sleep(0.05)
            info = holder(folder)
        raise ResultsInUse(in_use_message(results, info)) from None
    info = {"pid": os.getpid(), "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime()), "cwd": os.getcwd()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
    _HELD[key] = fd
    return lock_path(folder)


def release(results) -> None:
    """Give the lock back before the process ends (tests; a finished run just exits)."""
    fd = _HELD.pop(str(Path(results).resolve()), None)
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def live_holder(results) -> dict | None:
    """The holder's details when a live process holds `<results>/.lock` now, else None (no lock file,
    or its last holder is dead: the kernel released its flock). Tested with a shared, non-blocking
    flock taken and dropped at once, so a run starting meanwhile is refused for no more than that."""
    try:
        fd = os.open(lock_path(results), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise
        return holder(results) or {"pid": "?", "host": "?", "since": "?"}
    finally:
        os.close(fd)  # drops the shared lock, if taken
    return None


def checkout_results_folders(results=(), workdir=".") -> list[Path]:
    """The results folders whose lock can belong to a run of this working directory: the ones given
    (the study's), `results/` and the folders under it (the default studies' folders), and every
    folder holding a `.lock` above a file that Snakemake's own locks (`.snakemake/locks/*.lock`, one
    path a line) name, which finds a study's folder wherever its `results:` puts it."""
    workdir = Path(workdir)
    found: dict[str, Path] = {}

    def add(folder: Path) -> None:
        if lock_path(folder).is_file():
            found.setdefault(os.path.abspath(folder), folder)

    for folder in results:
        add(Path(folder))
    add(workdir / "results")
    for lock in sorted(workdir.glob("results/*/" + LOCK_NAME)):
        add(lock.parent)
    seen: set[str] = set()
    for snake_lock in sorted((workdir / ".snakemake" / "locks").glob("*.lock")):
        try:
            lines = snake_lock.read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            folder = Path(os.path.abspath(workdir / line.strip())).parent if line.strip() else None
            while folder is not None and str(folder) not in seen and folder != folder.parent:
                seen.add(str(folder))
                add(folder)
                folder = folder.parent
    return list(found.values())


def unlock_refusal(results=(), workdir=".") -> str:
    """Why `snakemake --unlock` must not run in this working directory now ("" when it may): a live run
    holds a study's results lock, and `--unlock` would remove Snakemake's lock from under it."""
    live = [(folder, info) for folder in checkout_results_folders(results, workdir)
            if (info := live_holder(folder)) is not None]
    if not live:
        return ""
    runs = "; ".join(f"results folder `{folder}` is held by pid {info.get('pid', '?')} on host {info.get('host', '?')} "
                     f"since {info.get('since', '?')} (working directory {info.get('cwd', '?')})"
                     for folder, info in live)
    return (f"not unlocking: a run is live in this checkout ({runs}). `snakemake --unlock` removes the lock of "
            "every run of the working directory, that one's too; wait for it to finish (or stop it), then unlock.")


def main(argv: list[str]) -> int:
    """python -m workflow_scripts.results_lock unlock-check [RESULTS ...] (the Makefile's `unlock`):
    exit 1 with the reason when a live run of this checkout holds a results lock."""
    if not argv or argv[0] != "unlock-check":
        print("usage: python -m workflow_scripts.results_lock unlock-check [RESULTS ...]", file=sys.stderr)
        return 2
    refusal = unlock_refusal(argv[1:])
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 1
    return 0


def take_for_run(results, workflow) -> None:
    """The `onstart` handler's part: take the lock in Snakemake's main process; the job processes
    (exec mode subprocess or remote) never do, since their main process holds it for them."""
    if not getattr(workflow, "is_main_process", True):
        return
    acquire(results)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
