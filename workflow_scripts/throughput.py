"""Embedding throughput measured on this machine, per model: what `make dry-run`'s plan summary
(workflow_scripts/plan_summary.py) turns into an estimated time.

Every embedding job that encoded texts adds a record to `<results>/.cache/throughput.json` under its
model's key (family, name or path, device, precision): texts encoded, seconds spent encoding them,
and the job's wall seconds from process start (the difference is the job's fixed cost: imports,
loading the model, reading and writing). Before any job has run, a calibration stands in: a fresh
process loads the model and encodes CALIBRATION_TEXTS sample texts, recorded as `calibration`.
Measured records replace calibrations; the last KEEP records of a key count.

CLI (plan_summary runs it, one process per model, so that imports and loading are timed as a job
pays them): python -m workflow_scripts.throughput calibrate --spec JSON --device D --sample FILE
[--model-file F] prints one record as JSON.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

KEEP = 50
CALIBRATION_TEXTS = 64
CACHE_NAME = "throughput.json"


def cache_path(results: str | os.PathLike) -> Path:
    return Path(results) / ".cache" / CACHE_NAME


def model_key(spec: dict, device: str) -> str:
    """What a throughput belongs to: the family, the model's name or path (or TF-IDF's preset), the
    device and the precision. Two config entries of the same model share their measurements."""
    ident = spec.get("name") or spec.get("path") or spec.get("preset") or "-"
    return "|".join((spec["family"], str(ident), device, spec.get("precision", "fp32")))


def process_seconds() -> float:
    """Wall seconds since this process started (its imports included)."""
    import psutil

    return time.time() - psutil.Process().create_time()


def load(path: str | os.PathLike) -> dict:
    """key -> list of records; {} when the file is missing or unreadable (it is only a cache)."""
    try:
        data = json.loads(Path(path).read_text())
        return {k: list(v) for k, v in data.get("models", {}).items()}
    except (OSError, ValueError, AttributeError):
        return {}


@contextlib.contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def record(path: str | os.PathLike, key: str, texts: int, encode_s: float, job_s: float,
           source: str = "job") -> None:
    """Add one measurement under `key`. Jobs finishing side by side take turns (a lock file); the
    file is replaced atomically, so a reader never sees half of it. A measured record drops the
    key's calibrations."""
    path = Path(path)
    entry = {"texts": int(texts), "encode_s": round(float(encode_s), 4), "job_s": round(float(job_s), 4),
             "source": source, "when": time.strftime("%Y-%m-%d %H:%M:%S")}
    with _locked(path):
        models = load(path)
        records = models.get(key, [])
        if source != "calibration":
            records = [r for r in records if r.get("source") != "calibration"]
        models[key] = (records + [entry])[-KEEP:]
        tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps({"models": models}, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)


@dataclass(frozen=True)
class Throughput:
    texts_per_s: float
    fixed_s: float  # per job that loads the model
    source: str  # "measured" (jobs of earlier runs) or "calibration"
    jobs: int

    def seconds(self, texts: int, loading_jobs: int) -> float:
        return loading_jobs * self.fixed_s + texts / self.texts_per_s

    def describe(self) -> str:
        what = f"{self.jobs} job(s) measured" if self.source == "measured" else "calibration"
        return f"{self.texts_per_s:,.0f} texts/s + {self.fixed_s:.1f} s/job ({what})"


def summarise(records: list[dict]) -> Throughput | None:
    """Texts per second over all records (total texts / total encoding seconds) and the mean fixed
    cost per job (job seconds minus encoding seconds); measured records before calibrations."""
    measured = [r for r in records if r.get("source") != "calibration"]
    use = measured or records
    texts = sum(r["texts"] for r in use)
    encode_s = sum(r["encode_s"] for r in use)
    if not use or texts <= 0:
        return None
    fixed = sum(max(0.0, r["job_s"] - r["encode_s"]) for r in use) / len(use)
    return Throughput(texts / max(encode_s, 1e-6), fixed, "measured" if measured else "calibration", len(use))


# ---- calibration: one fresh process per model ---------------------------------------------------

def calibrate(spec: dict, device: str, texts: list[str], model_file: str | None = None) -> dict:
    """Load the model as an embedding job does and encode `texts` in its batches; seconds measured
    from this process's start, so that imports count as in a job."""
    import numpy as np

    from workflow_scripts.encoders import family_of, load_encoder

    family = family_of(spec)
    if family.sample_encoder is not None:
        # what the job builds from its inputs (a fitted vocabulary, the text set's columns), from the sample
        encoder = family.sample_encoder(spec, texts, device, model_file)
        started = time.perf_counter()
        encoder.encode_batch(texts)
    else:
        encoder = load_encoder(spec, device, model_file)
        size = spec.get("batch_size", 32)
        # a model's first batch pays one-off set-up (kernels, caches): warmed up here and counted
        # as fixed cost, as a job spreads it over all its texts
        encoder.encode_batch(texts[:8])
        started = time.perf_counter()
        # batches of similar token count, as embed.embed_sorted makes them
        order = np.argsort(-encoder.token_lengths(texts), kind="stable")
        for i in range(0, len(texts), size):
            encoder.encode_batch([texts[j] for j in order[i:i + size]])
    encode_s = time.perf_counter() - started
    return {"texts": len(texts), "encode_s": encode_s, "job_s": process_seconds()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("calibrate")
    c.add_argument("--spec", required=True)
    c.add_argument("--device", default="cpu")
    c.add_argument("--sample", required=True, help="a JSON list of texts")
    c.add_argument("--model-file")
    args = ap.parse_args(argv)
    texts = json.loads(Path(args.sample).read_text())
    print(json.dumps(calibrate(json.loads(args.spec), args.device, texts, args.model_file)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
