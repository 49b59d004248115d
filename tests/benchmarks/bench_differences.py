"""Cost of the differences stage at the full study's shape: the CSC replicates of M models on the
rehearsal's corpora (5 corpora, the grammatical negation on the 2 English ones; B replicates per
statistic), built synthetically, then `differences.build` on them, timed.

Usage: PYTHONPATH=<checkout> python tests/benchmarks/bench_differences.py [--models 8] [--b 1000]
           [--statistics overlap,gap,auc,within_auc,within_gap] [--repeats 3]
Run it once per checkout (PYTHONPATH chooses whose workflow_scripts is timed) with the statistics
that checkout's CSC writes, side by side in one session: the size of a differences job does not grow
with the pairs of the corpus (its inputs are the B replicates per statistic and model), only with the
models and statistics, so this shape is that of the 640k- and the 2.56M-pair study alike.
"""
from __future__ import annotations

import argparse
import inspect
import tempfile
import time
from pathlib import Path

import numpy as np


def replicate_files(folder: Path, models: list[str], b: int, statistics: list[str]) -> list[str]:
    from workflow_scripts.bootstrap import replicate_rows, write_replicates
    corpora = {"pc_en": True, "pc_nl": False, "pc_en_filtered": True, "pc_nl_filtered": False, "skills_nl": False}
    rng = np.random.default_rng(0)
    # a checkout whose replicates carry the units behind each figure gets them
    units = (100000,) if "units" in inspect.signature(replicate_rows).parameters else ()
    paths = []
    for model in models:
        parts = []
        for corpus, english in corpora.items():
            for cond in ("negation", "grammatical_negation") if english else ("negation",):
                for stat in statistics:
                    centre = rng.uniform(0.3, 0.9)
                    reps = centre + rng.normal(0, 0.01, b)
                    parts.append(replicate_rows("csc", corpus, f"{cond}/{stat}", model, centre, reps, *units))
        path = folder / f"{model}.parquet"
        write_replicates(path, parts)
        paths.append(str(path))
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=8, help="models, the first the surface-form baseline")
    ap.add_argument("--b", type=int, default=1000)
    ap.add_argument("--statistics", default="overlap,gap,auc,within_auc,within_gap")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    from workflow_scripts import differences
    models = ["form_only"] + [f"m{i}" for i in range(a.models - 1)]
    specs = {m: {"family": "surface_form" if m == "form_only" else "sentence_transformers"} for m in models}
    with tempfile.TemporaryDirectory() as tmp:
        paths = replicate_files(Path(tmp), models, a.b, a.statistics.split(","))
        extra = {"ranks_out": str(Path(tmp) / "ranks.csv")} if "ranks_out" in inspect.signature(differences.build).parameters else {}
        times = []
        for _ in range(a.repeats):
            start = time.perf_counter()
            table = differences.build("csc", paths, specs, {}, str(Path(tmp) / "d.csv"), **extra)
            times.append(time.perf_counter() - start)
    print(f"{differences.__file__}: {a.models} models, B = {a.b}, statistics {a.statistics}: {table.height} rows, "
          f"best of {a.repeats} {min(times):.2f} s (all: {', '.join(f'{t:.2f}' for t in times)})")


if __name__ == "__main__":
    main()
