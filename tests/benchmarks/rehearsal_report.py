"""Figures of a SLURM dress rehearsal (tests/slurm/rehearse_slurm.sh): what the scheduler cost.

Usage: python tests/benchmarks/rehearsal_report.py WORKDIR [--json OUT.json]

Reads from WORKDIR: slurm.log (Snakemake's log: which SLURM job ran which rule, retries, local
jobs), jobcomp.txt (the cluster's jobcomp/filetxt record: Submit, Start and End of every job, its
partition and request), sdiag.txt (slurmctld's RPC counts: the status-check load), slurm.seconds /
local.seconds (wall times), and the runs' benchmark files (slurm/benchmarks: seconds of work and
peak RSS per job). Prints:
- jobs: submitted through sbatch (and grouped jobs inside them), run locally, retried, failed;
- wall time of the SLURM run (and of the local run of the same config, if one was made);
- per SLURM job: pending (Start - Submit; on a busy node this includes waiting for free cores), the
  job's elapsed time, its work (the rules' benchmark seconds) and the rest (elapsed - work: the
  job's own Snakemake start-up and the srun step), with their shares of the summed job time;
- status-check load: squeue (REQUEST_JOB_INFO) and sbatch RPCs, per minute of the run;
- per rule: peak RSS against the memory the job asked for (mem_mb, attempt 1);
- partitions of the embedding jobs;
- with a local run: sha256 of every file under tables/ in both runs, equal or not.
jobcomp times have one-second resolution.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import re
import statistics
import sys
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path

SUBMITTED = re.compile(r"Job (\S+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)")
SLURM_LOG_RULE = re.compile(r"slurm_logs/(rule|group)_([A-Za-z0-9_]+)/")
LOCAL_JOB = re.compile(r"^localrule (\w+):", re.M)
RPC_LINE = re.compile(r"^\s*(REQUEST_\w+)\s+\(\s*\d+\)\s+count:(\d+)", re.M)


def parse_jobcomp(path: Path) -> dict[str, dict]:
    """jobcomp/filetxt lines (`Key=Value ...`) by SLURM job id, times as datetimes, mem in MB."""
    jobs = {}
    for line in path.read_text().splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "JobId" not in fields:
            continue
        tres = dict(t.split("=", 1) for t in fields.get("Tres", "").split(",") if "=" in t)
        mem = tres.get("mem", "0M")
        mem_mb = float(mem[:-1]) * (1024 if mem.endswith("G") else 1) if mem[-1:] in "MG" else float(mem)
        jobs[fields["JobId"]] = {
            "state": fields.get("JobState"), "partition": fields.get("Partition"),
            "cpus": int(tres.get("cpu", 0)), "mem_mb": mem_mb,
            **{k: datetime.fromisoformat(fields[f"{k.capitalize()}Time"]) for k in ("submit", "start", "end")},
        }
    return jobs


def parse_snakemake_log(text: str) -> dict:
    """SLURM job id -> rule (or group) name; local jobs per rule; retries and errors."""
    submitted = {}
    for m in SUBMITTED.finditer(text):
        kind = SLURM_LOG_RULE.search(m.group(3))
        submitted[m.group(2)] = f"{kind.group(1)}:{kind.group(2)}" if kind else "?"
    return {"submitted": submitted, "local": Counter(LOCAL_JOB.findall(text)),
            "retries": text.count("Trying to restart job"), "errors": len(re.findall(r"^Error in rule", text, re.M))}


def parse_sdiag(text: str) -> dict[str, int]:
    return {name: int(count) for name, count in RPC_LINE.findall(text)}


def benchmark_rows(results: Path) -> list[dict]:
    """One row per benchmarked job: rule, seconds of work, peak RSS (MB)."""
    rows = []
    for path in sorted((results / "benchmarks").rglob("*.tsv")):
        with open(path) as f:
            last = list(csv.DictReader(f, delimiter="\t"))[-1:]
        for row in last:
            rss = row.get("max_rss", "NA")
            rows.append({"rule": path.relative_to(results / "benchmarks").parts[0], "s": float(row["s"]),
                         "rss": float(rss) if rss not in ("NA", "-", "") else 0.0})
    return rows


def table_digests(results: Path) -> dict[str, str]:
    return {str(p.relative_to(results)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((results / "tables").rglob("*")) if p.is_file()}


def summarize(work: Path) -> dict:
    log = parse_snakemake_log((work / "slurm.log").read_text())
    # a finished run's copy, else the live cluster's (figures of a run in progress)
    comp_file = work / "jobcomp.txt"
    comp = parse_jobcomp(comp_file if comp_file.exists() else work / "cluster" / "log" / "jobcomp.txt")
    bench = benchmark_rows(work / "slurm")
    jobs = {jid: {**comp[jid], "rule": rule} for jid, rule in log["submitted"].items() if jid in comp}
    pending = [(j["start"] - j["submit"]).total_seconds() for j in jobs.values()]
    elapsed = [(j["end"] - j["start"]).total_seconds() for j in jobs.values()]
    ends = sorted(j["end"] for j in jobs.values())
    # SLURM's reaction: a job that waited starts this long after the job whose end freed its place;
    # Snakemake's: a job is submitted this long after the latest job end before it (its input's)
    dispatch = [_since_last(ends, j["start"]) for j in jobs.values() if j["start"] > j["submit"]]
    handoff = [_since_last(ends, j["submit"]) for j in jobs.values()]
    local_rules = set(log["local"])
    work_s = sum(r["s"] for r in bench if r["rule"] not in local_rules)
    wall = float((work / "slurm.seconds").read_text()) if (work / "slurm.seconds").exists() else None
    rpc = parse_sdiag((work / "sdiag.txt").read_text()) if (work / "sdiag.txt").exists() else {}
    per_rule_rss: dict[str, float] = defaultdict(float)
    for r in bench:
        per_rule_rss[r["rule"]] = max(per_rule_rss[r["rule"]], r["rss"])
    asked: dict[str, float] = defaultdict(float)
    for j in jobs.values():
        kind, name = j["rule"].split(":", 1)
        if kind == "group":  # `<group id>_<its rules>`: the rule whose name ends it
            name = next((r for r in per_rule_rss if name.endswith(f"_{r}")), name)
            name = f"{name} (grouped)"
        asked[name] = max(asked[name], j["mem_mb"])
    out = {
        "submitted": len(log["submitted"]), "by_kind": dict(Counter(j["rule"] for j in jobs.values())),
        "local_jobs": sum(log["local"].values()), "benchmarked_jobs": len(bench),
        "retries": log["retries"], "errors": log["errors"],
        "not_completed": sum(j["state"] != "COMPLETED" for j in jobs.values()),
        "wall_s": wall,
        "local_wall_s": float((work / "local.seconds").read_text()) if (work / "local.seconds").exists() else None,
        "pending_s": _stats(pending), "elapsed_s": _stats(elapsed), "work_s": work_s,
        "dispatch_s": _stats([d for d in dispatch if d is not None]),
        "handoff_s": _stats([h for h in handoff if h is not None]),
        "status_rpcs": {k: v for k, v in rpc.items() if k in ("REQUEST_JOB_INFO", "REQUEST_SUBMIT_BATCH_JOB",
                                                                 "REQUEST_JOB_INFO_SINGLE", "REQUEST_PARTITION_INFO")},
        "memory": {rule: {"peak_rss_mb": per_rule_rss.get(rule.removesuffix(" (grouped)"), 0.0),
                          "asked_mb": asked.get(rule)}
                   for rule in sorted(set(per_rule_rss) - {a.removesuffix(" (grouped)") for a in asked} | set(asked))},
        "partitions": dict(Counter(f"{j['rule']} -> {j['partition']}" for j in jobs.values() if "embed" in j["rule"])),
    }
    stores = work / "slurm" / "embeddings"
    out["store_gb"] = sum(f.stat().st_size for f in stores.rglob("*") if f.is_file()) / 1e9 if stores.is_dir() else 0.0
    p, e = out["pending_s"], out["elapsed_s"]
    out["overhead_per_job_s"] = (p["sum"] + e["sum"] - work_s) / p["n"] if p["n"] else None
    # the job's own start-up, without the wait for a free slot (which on one node is the node's size)
    out["startup_per_job_s"] = (e["sum"] - work_s) / p["n"] if p["n"] else None
    if (work / "pairs").exists():
        out["pairs"] = int((work / "pairs").read_text())
    if (work / "local" / "tables").is_dir():
        a, b = table_digests(work / "slurm"), table_digests(work / "local")
        out["tables"] = {"files": len(a), "equal": a == b,
                         "differ": sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))}
    return out


def _since_last(ends: list[datetime], moment: datetime) -> float | None:
    """Seconds from the latest job end at or before `moment` (None: no job had ended)."""
    before = [e for e in ends if e <= moment]
    return (moment - before[-1]).total_seconds() if before else None


def _stats(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {"n": len(values), "sum": sum(values), "mean": statistics.fmean(values),
            "median": statistics.median(values), "p90": ordered[int(0.9 * (len(values) - 1))], "max": ordered[-1]}


def print_summary(s: dict) -> None:
    print(f"jobs: {s['submitted']} submitted through sbatch {s['by_kind']}, {s['local_jobs']} local, "
          f"{s['benchmarked_jobs']} benchmarked rule jobs; retries {s['retries']}, errors {s['errors']}, "
          f"SLURM jobs not COMPLETED {s['not_completed']}")
    local = f", local run of the same config {s['local_wall_s']:.0f} s" if s["local_wall_s"] else ""
    wall = f"{s['wall_s']:.0f} s" if s["wall_s"] else "unfinished"
    print(f"wall: SLURM run {wall}{local}; vector stores {s['store_gb']:.2f} GB")
    p, e = s["pending_s"], s["elapsed_s"]
    if p["n"]:
        print(f"per SLURM job (s): pending mean {p['mean']:.1f} median {p['median']:.0f} p90 {p['p90']:.0f} "
              f"max {p['max']:.0f}; elapsed mean {e['mean']:.1f} median {e['median']:.0f} max {e['max']:.0f}")
        total = p["sum"] + e["sum"]
        rest = e["sum"] - s["work_s"]
        print(f"summed over SLURM jobs: pending {p['sum']:.0f} s ({p['sum'] / total:.0%}), running {e['sum']:.0f} s; "
              f"of the running time, rules' work {s['work_s']:.0f} s and job start-up/teardown {rest:.0f} s "
              f"({rest / e['sum']:.0%}; {rest / p['n']:.1f} s per job)")
    d, h = s["dispatch_s"], s["handoff_s"]
    if d["n"] and h["n"]:
        print(f"scheduler reaction (s): a waiting job starts {d['median']:.0f} (median, max {d['max']:.0f}) after the "
              f"job end that freed its place; a job is submitted {h['median']:.0f} (median, p90 {h['p90']:.0f}) after "
              f"the latest job end before it (Snakemake's status check and sbatch)")
    if s["status_rpcs"] and s["wall_s"]:
        rates = ", ".join(f"{k} {v} ({v / s['wall_s'] * 60:.1f}/min)" for k, v in s["status_rpcs"].items())
        print(f"slurmctld RPCs: {rates}")
    print(f"{'rule':<26}{'peak RSS MB':>12}{'asked MB':>10}{'peak/asked':>11}   (grouped: the submission's request)")
    for rule, m in s["memory"].items():
        ratio = f"{m['peak_rss_mb'] / m['asked_mb']:.2f}" if m["asked_mb"] else "-"
        asked = f"{m['asked_mb']:.0f}" if m["asked_mb"] else "local"
        print(f"{rule:<26}{m['peak_rss_mb']:>12.0f}{asked:>10}{ratio:>11}")
    print("embedding jobs by partition: " + ", ".join(f"{k}: {v}" for k, v in s["partitions"].items()))
    if "tables" in s:
        t = s["tables"]
        verdict = "identical" if t["equal"] else f"DIFFERENT: {t['differ']}"
        print(f"tables: {t['files']} files, SLURM vs local sha256 {verdict}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workdir", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    summary = summarize(args.workdir)
    print_summary(summary)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2, default=str))
    if "tables" in summary and not summary["tables"]["equal"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
