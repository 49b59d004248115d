"""Compare two results directories file by file (logs, benchmark timings and the run lock aside).

Usage: python tests/diff_results.py RESULTS_A RESULTS_B [--timings-aside] [--common]   (exit 1 when they differ)

--timings-aside: JSON files are compared without their timing fields (keys naming seconds, peak
memory or speeds: a job's report and a trained model's manifest record how long they took), a
trained model's README without its "Training: N seconds" line, and the provenance's tree digests of
trained model folders (they cover those files) without their value. Everything else stays byte for byte.

--common: compare only the files both directories have (after a config moved some inputs or models
out, "what stays"), list every one that differs, and name the files only one of them has.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

# .lock: the last run's pid, host and start (workflow_scripts/results_lock.py); .study.json: the study
# that made the folder, when and from where (workflow_scripts/study_folders.py); .cache: the local models'
# file digests by path, size and mtime (Study.model_digest), which differ by where and when files were made
SKIPPED = {"logs", "benchmarks", ".lock", ".study.json", ".cache"}
TIMING_KEY = re.compile(r"seconds|peak_rss|per_second|elapsed", re.I)


def result_files(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*")
            if p.is_file() and p.relative_to(root).parts[0] not in SKIPPED and not p.name.startswith(".tmp-")}


def without_timings(obj):
    if isinstance(obj, dict):
        return {k: without_timings(v) for k, v in obj.items() if not TIMING_KEY.search(k)}
    if isinstance(obj, list):
        return [without_timings(v) for v in obj]
    return obj


def normalised(path: Path, data: bytes, root: Path) -> bytes:
    data = data.replace(str(root).encode(), b"RESULTS")
    if path.suffix == ".json":
        try:
            return json.dumps(without_timings(json.loads(data)), sort_keys=True).encode()
        except ValueError:
            return data
    if path.name == "README.md" and path.parts[0] == "models":
        return re.sub(rb"\*\*Training\*\*: [\d.]+ seconds", b"", data)
    if path.name == "provenance.rst":  # the tree digests of trained models' folders hold their timings
        return re.sub(rb"(- results/models/\S+\n\s+- tree:)[0-9a-f]+", rb"\1", data.replace(b"\\_", b"_"))
    return data


def compare(a: Path, b: Path, timings_aside: bool = False, common: bool = False) -> tuple[bool, str]:
    fa, fb = result_files(a), result_files(b)
    if not fa:
        return False, f"{a} holds no result files"
    only = ""
    if common:
        only = (f"{len(fa - fb)} files only in {a.name}, {len(fb - fa)} only in {b.name} (set aside: "
                f"{sorted(map(str, fa - fb))}, {sorted(map(str, fb - fa))}); ")
        fa = fb = fa & fb
    elif fa != fb:
        return False, (f"different file sets: only in {a.name}: {sorted(map(str, fa - fb))[:10]}, "
                       f"only in {b.name}: {sorted(map(str, fb - fa))[:10]}")
    differ = []
    for p in sorted(fa):
        ta, tb = (a / p).read_bytes(), (b / p).read_bytes()
        if ta != tb:
            # a manifest or report may name its own results directory
            if timings_aside:
                same = normalised(p, ta, a) == normalised(p, tb, b)
            else:
                same = ta.replace(str(a).encode(), b"RESULTS") == tb.replace(str(b).encode(), b"RESULTS")
            if not same:
                differ.append(str(p))
    if differ:
        return False, only + f"{len(differ)} of {len(fa)} result files differ: {differ if common else differ[:10]}"
    return True, only + (f"all {len(fa)} {'common ' if common else ''}result files byte-identical"
                         + (" (timing fields aside)" if timings_aside else ""))


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a not in ("--timings-aside", "--common")]
    if len(args) != 2 or any(a.startswith("-") for a in args):
        sys.exit(__doc__.split("\n\n")[1])  # the usage line, exit status 1
    same, message = compare(Path(args[0]), Path(args[1]), timings_aside="--timings-aside" in sys.argv,
                            common="--common" in sys.argv)
    print(message)
    sys.exit(0 if same else 1)
