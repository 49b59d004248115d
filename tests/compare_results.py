"""Compare two results directories file by file (logs, benchmark timings and the run lock aside).

Usage: python tests/compare_results.py RESULTS_A RESULTS_B     (exit 1 when they differ)
"""
from __future__ import annotations

import sys
from pathlib import Path

SKIPPED = {"logs", "benchmarks", ".lock"}  # .lock: the last run's pid, host and start (workflow_scripts/results_lock.py)


def result_files(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*")
            if p.is_file() and p.relative_to(root).parts[0] not in SKIPPED and not p.name.startswith(".tmp-")}


def compare(a: Path, b: Path) -> tuple[bool, str]:
    fa, fb = result_files(a), result_files(b)
    if not fa:
        return False, f"{a} holds no result files"
    if fa != fb:
        return False, (f"different file sets: only in {a.name}: {sorted(map(str, fa - fb))[:10]}, "
                       f"only in {b.name}: {sorted(map(str, fb - fa))[:10]}")
    differ = []
    for p in sorted(fa):
        ta, tb = (a / p).read_bytes(), (b / p).read_bytes()
        if ta != tb:
            # a manifest or report may name its own results directory
            if ta.replace(str(a).encode(), b"RESULTS") != tb.replace(str(b).encode(), b"RESULTS"):
                differ.append(str(p))
    if differ:
        return False, f"{len(differ)} of {len(fa)} result files differ: {differ[:10]}"
    return True, f"all {len(fa)} result files byte-identical"


if __name__ == "__main__":
    same, message = compare(Path(sys.argv[1]), Path(sys.argv[2]))
    print(message)
    sys.exit(0 if same else 1)
