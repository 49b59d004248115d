"""CSC's conditions and curve names, and how a row's overlap reads: what the score job (curves.py),
the plot job (plots.py), the table job (tables.py) and the planning (plan.py) share.

No third-party import: the planning reads the conditions at every Snakemake start, and each job's
code digest (workflow_scripts/code_digest.py) holds this module, not the other jobs' code.
"""
from __future__ import annotations

import math

KINDS = ("fuzz", "negation", "grammatical_negation")
NEGATIVE_CONDITIONS = KINDS[1:]
# the curves of curves.parquet: per condition the fuzzed variants of its sentences and its own
CURVE_NAMES = tuple(name for c in NEGATIVE_CONDITIONS for name in (f"fuzz@{c}", c))


def fuzz_curve(cond: str) -> str:
    """The fuzzed curve a condition is compared with: the fuzzed variants of the sentences that have
    a variant of the condition too (issue 43: both curves over the same sentences)."""
    return f"fuzz@{cond}"


def fmt_overlap(row: dict) -> str:
    """'0.1234 [0.1000, 0.1500]'; no interval where it is undefined; 'undefined' without an overlap."""
    if row["overlap"] is None or not math.isfinite(row["overlap"]):
        return "undefined"
    text = f"{row['overlap']:.4f}"
    if row.get("overlap_ci_low") is not None and math.isfinite(row["overlap_ci_low"]):
        text += f" [{row['overlap_ci_low']:.4f}, {row['overlap_ci_high']:.4f}]"
    return text
