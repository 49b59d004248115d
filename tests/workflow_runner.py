"""Run the Snakemake workflow from tests, in a scratch working directory."""
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--show-failed-logs"]
# what a clone of the checkout holds that a study reads (tests/ and docs/ are not read)
CHECKOUT_FILES = ("Snakefile", "config.yaml", "rules", "workflow_scripts", "resources", "envs", "profiles")


def write_config(directory: Path, config: dict) -> Path:
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def snakemake(directory: Path, config_path: Path, *args: str, check: bool = True,
              overlays=(), snakefile: Path = ROOT / "Snakefile", env: dict | None = None) -> subprocess.CompletedProcess:
    """`overlays`: config files given after `config_path` (Snakemake merges them into it);
    `snakefile`: another checkout's; `env`: the environment (default: this process's)."""
    cmd = [*SNAKEMAKE, "-s", str(snakefile), "--directory", str(directory), "--cores", "2",
           *args, "--configfile", str(config_path), *map(str, overlays)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-5000:]}\n{proc.stderr[-8000:]}")
    return proc


def copy_checkout(dest: Path, keep_mtimes: bool) -> Path:
    """The checkout's files a study reads, at `dest`: as `cp -a` copies them (mtimes kept), or as
    a fresh clone makes them (every file and folder written now)."""
    dest.mkdir(parents=True)
    for name in CHECKOUT_FILES:
        src = ROOT / name
        ignore = shutil.ignore_patterns("__pycache__")
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore, copy_function=shutil.copy2 if keep_mtimes else shutil.copy)
        else:
            (shutil.copy2 if keep_mtimes else shutil.copy)(src, dest / name)
    if not keep_mtimes:
        now = time.time() + 5  # later than any result of the study
        for folder, _, files in os.walk(dest):
            for f in [*files, "."]:
                os.utime(Path(folder) / f, (now, now))
    return dest


def planned_jobs(directory: Path, config_path: Path, overlays=(), reasons: bool = False,
                 **options) -> list[tuple]:
    """The jobs Snakemake would run now, as (rule, wildcards), with `reasons` (rule, wildcards,
    Snakemake's reason), from its own dry run (`options`: snakemake()'s)."""
    out = snakemake(directory, config_path, "--dry-run", overlays=overlays, **options)
    text = out.stdout + out.stderr
    jobs = []
    for block in re.split(r"\n(?=\s*(?:local)?rule \w+:)", text):
        m = re.match(r"(?:local)?rule (\w+):", block.strip())
        if not m:
            continue
        wc = re.search(r"^\s*wildcards: (.*)$", block, re.M)
        wildcards = dict(kv.split("=", 1) for kv in wc.group(1).split(", ")) if wc else {}
        reason = re.search(r"^\s*reason: (.*)$", block, re.M)
        jobs.append((m.group(1), wildcards, reason.group(1) if reason else "") if reasons else (m.group(1), wildcards))
    return jobs
