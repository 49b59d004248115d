"""Per-stage wall time and peak memory of a finished run, from Snakemake's `benchmark:` files.

Usage: python tests/benchmarks/stage_times.py [RESULTS_DIR]   (default: results)
Prints, per rule: jobs, summed job seconds, longest job, peak RSS of any job (MB) and CPU seconds.
"""
import csv
import sys
from collections import defaultdict
from pathlib import Path


def stage_stats(results: Path) -> dict[str, dict]:
    """Per rule: jobs, summed seconds, longest job, peak RSS (MB) and CPU seconds."""
    stats: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "s": 0.0, "max_s": 0.0, "rss": 0.0, "cpu": 0.0})
    for path in sorted((results / "benchmarks").rglob("*.tsv")):
        rule = path.relative_to(results / "benchmarks").parts[0]
        with open(path) as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        for row in rows[-1:]:  # the latest measurement
            s = stats[rule]
            s["jobs"] += 1
            s["s"] += float(row["s"])
            s["max_s"] = max(s["max_s"], float(row["s"]))
            rss = row.get("max_rss", "NA")
            s["rss"] = max(s["rss"], float(rss) if rss not in ("NA", "-", "") else 0.0)
            cpu = row.get("cpu_time", "NA")
            s["cpu"] += float(cpu) if cpu not in ("NA", "-", "") else 0.0
    return dict(stats)


def main() -> None:
    results = Path(sys.argv[1] if len(sys.argv) > 1 else "results")
    stats = stage_stats(results)
    if not stats:
        sys.exit(f"no benchmark files under {results}/benchmarks")
    print(f"{'rule':16s} {'jobs':>5s} {'sum s':>8s} {'max s':>8s} {'peak RSS MB':>12s} {'CPU s':>8s}")
    for rule, s in sorted(stats.items(), key=lambda kv: -kv[1]["s"]):
        print(f"{rule:16s} {s['jobs']:5d} {s['s']:8.1f} {s['max_s']:8.1f} {s['rss']:12.0f} {s['cpu']:8.1f}")
    print(f"{'total':16s} {sum(s['jobs'] for s in stats.values()):5d} {sum(s['s'] for s in stats.values()):8.1f}")


if __name__ == "__main__":
    main()
