"""Helpers every stage uses: stable ids, atomic outputs, logging, JSON I/O."""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import shutil
import sys
from glob import escape as glob_escape
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    import numpy as np

SEP = "\x1f"  # unit separator: cannot occur in a whitespace-normalised sentence

# Model settings that say how an embedding job runs, not which vectors it writes. Measured with
# all-MiniLM-L6-v2 (tests/benchmarks/bench_batch_invariance.py): in fp32, batch size and padding
# move vectors by at most 1.6e-7 and pairwise cosines by 2.5e-7, and 1 or 2 torch threads give
# identical bits; resources and corpora change nothing. These reach the job outside Snakemake's
# params, so changing them reruns nothing, and they are not in the spec digest.
RUN_SETTINGS = frozenset({"threads", "mem_mb", "runtime", "batch_size", "cpu_workers", "corpora", "probes", "datasets",
                          "gpu_model",
                          # family openai_embeddings: how requests run (every vector is cached by its text)
                          "batch_tokens", "concurrency", "timeout_s", "retries", "backoff_s", "api_key_env",
                          "max_answer_bytes"})
REDUCED_PRECISIONS = ("bf16", "fp16")


def vector_settings(spec: dict) -> dict:
    """The part of a model's config entry that decides its vectors. In bf16/fp16 the batch size
    does: the batch's padding moves pairwise cosines by up to 2.5e-3 (same benchmark)."""
    from workflow_scripts.encoders import families

    out = {k: v for k, v in spec.items() if k not in RUN_SETTINGS}
    family = families().get(spec.get("family"))
    if family is not None and family.uses_torch and spec.get("precision", "fp32") in REDUCED_PRECISIONS:
        out["batch_size"] = spec.get("batch_size", 32)
    return out


def prepare_job_environment(workflow_dir: str, python: str) -> None:
    """Make the workflow's jobs import `workflow_scripts` from this checkout and run `python` as
    the interpreter that runs Snakemake (exported, so local and cluster jobs inherit it)."""
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (workflow_dir, os.environ.get("PYTHONPATH")) if p)
    os.environ["PATH"] = os.pathsep.join((os.path.dirname(python), os.environ.get("PATH", "")))


def stable_id(*parts: object) -> int:
    """64-bit id from the given parts (blake2b), identical across processes, machines and versions.

    Python's hash() is salted per process and polars' hash is not stable across versions, so
    neither can name rows that must match between runs.
    """
    data = SEP.join(map(str, parts)).encode("utf-8")  # map: a generator costs a fifth of the id
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def text_key(text: str) -> int:
    """Key of a text in the vector stores: the same text gets one vector per model, whatever
    corpus or probe it comes from."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def partition_of(keys: np.ndarray | int, partitions: int):
    """Hash partition of text keys: the keys are uniform 64-bit hashes, so modulo balances."""
    import numpy as np  # here: the config check and planning import this module without numpy

    return np.asarray(keys, dtype=np.uint64) % np.uint64(partitions)


def setup_logging(log_path: str | None = None, name: str = "workflow") -> logging.Logger:
    """Log to the rule's log file (and stderr), with timestamps so progress is visible."""
    logger = logging.getLogger(name)
    logger.setLevel(logging.INFO)
    logger.handlers.clear()
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%d %H:%M:%S")
    handler: logging.Handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(fmt)
    logger.addHandler(handler)
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        fh = logging.FileHandler(log_path, mode="a", encoding="utf-8")
        fh.setFormatter(fmt)
        logger.addHandler(fh)
    logger.propagate = False
    return logger


TMP_SUFFIX_LEN = 8  # random hex characters after `.tmp-<name>-`


def _tmp_sibling(final: Path, is_dir: bool) -> Path:
    """Create `.tmp-<name>-<8 hex>` beside `final` with the permissions the process umask gives
    (0666/0777 minus umask, as open() and mkdir() would), unlike tempfile's 0600/0700: results are
    shared on clusters. O_EXCL / mkdir fail rather than reuse an existing name."""
    while True:
        tmp = final.parent / f".tmp-{final.name}-{secrets.token_hex(TMP_SUFFIX_LEN // 2)}"
        try:
            if is_dir:
                os.mkdir(tmp, 0o777)
            else:
                os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue


def read_json_lines(path: str | os.PathLike | None, parse) -> tuple[dict, int]:
    """{key: parse(record)} of a JSON Lines cache (append_locked) and how many lines could not be
    read (a line cut short by a killed job; a record `parse` refuses with KeyError/TypeError/ValueError)."""
    entries, unreadable = {}, 0
    if path and os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    record = json.loads(line)
                    entries[record["key"]] = parse(record)
                except (ValueError, KeyError, TypeError):
                    unreadable += 1
    return entries, unreadable


def append_locked(path: str | os.PathLike, data: str) -> None:
    """Append `data` to a text file under an exclusive lock, flushed to disk: a cache that parallel
    jobs share, and that a killed job leaves whole but for its last line."""
    import fcntl
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextlib.contextmanager
def atomic_path(final: str | os.PathLike, is_dir: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside `final`; move it into place only if the block succeeds.

    A job killed half-way leaves a hidden `.tmp-*` entry, never a file that looks finished.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    # left by a killed earlier attempt at this output (one job at a time writes an output)
    for stale in final.parent.glob(f".tmp-{glob_escape(final.name)}-" + "?" * TMP_SUFFIX_LEN):
        shutil.rmtree(stale, ignore_errors=True) if stale.is_dir() else stale.unlink(missing_ok=True)
    tmp = _tmp_sibling(final, is_dir)
    try:
        yield tmp
        if is_dir and final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
        raise


def sorted_keys(obj):
    """`obj` with every dict's keys in sorted order, at any depth: the order params had when they
    were JSON text with sorted keys, for what a job stores or digests as it is."""
    if isinstance(obj, dict):
        return {key: sorted_keys(obj[key]) for key in sorted(obj)}
    if isinstance(obj, (list, tuple)):
        return [sorted_keys(item) for item in obj]
    return obj


def write_json(path: str | os.PathLike, obj) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n", encoding="utf-8")


def _json_default(o):
    np = sys.modules.get("numpy")  # a numpy scalar exists only where numpy was imported
    if np is not None and isinstance(o, np.integer):
        return int(o)
    if np is not None and isinstance(o, np.floating):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o)}")


def read_json(path: str | os.PathLike):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def n_tokens(text: str) -> int:
    """Token count as the seed paper counts it: whitespace-separated words."""
    return len(text.split())
