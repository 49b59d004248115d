"""What the vector store's file digests cost when a store is opened (`Partition.open(verify=True)`,
which every reader of a store does): one store of --rows x --dim float32 vectors written once, then
opened with its manifest's digests checked in full (sha256 of every whole file), sampled (sha256 of
each file's size and SAMPLE_BLOCKS blocks of SAMPLE_BYTES) and not at all (a manifest without
digests, as written before them), side by side; median of --repeats opens with the files in the page
cache (a first open after the files left the cache also pays for reading them from disk: a full
digest reads every byte, a sampled one 4 MiB per file). Also the write-side cost (digests computed
by `PartitionWriter.close`).

Usage: python tests/benchmarks/bench_store_digest.py [--rows 100000] [--dim 384] [--repeats 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from workflow_scripts import vector_store as V  # noqa: E402


def timed_open(directory: Path, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        V.Partition.open(directory)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    keys = np.unique(rng.integers(0, 2 ** 63, size=args.rows + args.rows // 10, dtype=np.uint64))[:args.rows]
    rng.shuffle(keys)
    vectors = rng.normal(size=(args.rows, args.dim)).astype(np.float32)
    with tempfile.TemporaryDirectory(prefix="bench-digest-") as tmp:
        directory = Path(tmp) / "part-000"
        started = time.perf_counter()
        V.write_partition(directory, keys, {"model": "m", "scope": "s", "partition": 0, "partitions": 1,
                                            "family": "x"}, vectors)
        written = time.perf_counter() - started
        manifest = json.loads((directory / "manifest.json").read_text())
        size = sum(entry["bytes"] for entry in manifest["file_digests"].values())
        rows = {}
        for mode in ("full", "sampled", "none"):
            m = dict(manifest)
            if mode == "none":
                m.pop("digest_mode"), m.pop("file_digests")
            else:
                started = time.perf_counter()
                m["digest_mode"], m["file_digests"] = V.file_digests(directory, mode)
                rows[f"digest ({mode})"] = time.perf_counter() - started
            (directory / "manifest.json").write_text(json.dumps(m))
            rows[f"open ({mode})"] = timed_open(directory, args.repeats)
    print(f"store: {args.rows} x {args.dim} float32, {size / 2 ** 20:.1f} MiB in {len(manifest['file_digests'])} "
          f"files; written with digests in {written:.2f} s (mode chosen: {manifest['digest_mode']}, full up to "
          f"{V.FULL_DIGEST_MAX_BYTES / 2 ** 20:.0f} MiB)")
    for mode in ("full", "sampled", "none"):
        digest = rows.get(f"digest ({mode})")
        print(f"  {mode:8s} open {rows[f'open ({mode})'] * 1000:8.1f} ms (median of {args.repeats})"
              + (f"; digests alone {digest * 1000:8.1f} ms" if digest is not None else ""))


if __name__ == "__main__":
    main()
