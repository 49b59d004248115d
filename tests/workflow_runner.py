"""Run the Snakemake workflow from tests, in a scratch working directory."""
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--show-failed-logs"]


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


def planned_jobs(directory: Path, config_path: Path, overlays=(), **options) -> list[tuple[str, dict]]:
    """The jobs Snakemake would run now, as (rule, wildcards), from its own dry run (`options`:
    snakemake()'s)."""
    out = snakemake(directory, config_path, "--dry-run", overlays=overlays, **options)
    text = out.stdout + out.stderr
    jobs = []
    for block in re.split(r"\n(?=\s*(?:local)?rule \w+:)", text):
        m = re.match(r"(?:local)?rule (\w+):", block.strip())
        if not m:
            continue
        wc = re.search(r"^\s*wildcards: (.*)$", block, re.M)
        wildcards = dict(kv.split("=", 1) for kv in wc.group(1).split(", ")) if wc else {}
        jobs.append((m.group(1), wildcards))
    return jobs
