"""The job of rule csc_plot: one (corpus, model)'s curves, the fuzzed and negated densities of each
condition and their shared area (the overlap), over the whole range and zoomed on their mass, as PNG
and SVG, from the score job's curves.parquet and summary.json (curves.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from workflow_scripts.common import atomic_path, read_json
from workflow_scripts.csc.conditions import fmt_overlap, fuzz_curve
from workflow_scripts.density import COVARIANCE_FACTOR

LABELS = {"fuzz@negation": "fuzzed", "negation": "negated (inserted)",
          "fuzz@grammatical_negation": "fuzzed (sentences with a grammatical negation)",
          "grammatical_negation": "negated (grammatical)"}
STYLES = {"fuzz@negation": ("-", "C0"), "negation": ("-", "C1"), "fuzz@grammatical_negation": (":", "C0"),
          "grammatical_negation": ("--", "C2")}


def _fmt_number(value, digits: int = 3) -> str:
    return "undefined" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def _data_range(curves: pl.DataFrame, kinds: list[str]) -> tuple[float, float]:
    """Where 99% of every curve's mass lies, with a margin: the zoomed panel's x range."""
    x = curves["similarity"].to_numpy()
    lows, highs = [], []
    for k in kinds:
        cdf = np.cumsum(np.nan_to_num(curves[f"density_{k}"].to_numpy()))
        if cdf[-1] > 0:
            lows.append(x[np.searchsorted(cdf, 0.005 * cdf[-1])])
            highs.append(x[min(len(x) - 1, np.searchsorted(cdf, 0.995 * cdf[-1]))])
    if not lows:
        return -1.0, 1.0
    lo, hi = min(lows), max(highs)
    margin = max(0.1 * (hi - lo), 0.005)
    return max(-1.0, lo - margin), min(1.0, hi + margin)


def _draw_panel(ax, curves: pl.DataFrame, summary: dict, drawn: list[str], xlim, legend: bool) -> None:
    """One panel: every drawn curve, and each condition's shared area with its fuzzed curve."""
    x = curves["similarity"].to_numpy()
    for kind in drawn:
        style, colour = STYLES[kind]
        ax.plot(x, curves[f"density_{kind}"].to_numpy(), style, color=colour, lw=1.2,
                label=f"{LABELS[kind]} (n={summary['counts'][kind]})")
    for kind in drawn:
        fuzz = fuzz_curve(kind)
        if not kind.startswith("fuzz") and fuzz in drawn:  # the overlap: the shared area under both curves
            shared = np.minimum(curves[f"density_{fuzz}"].to_numpy(), curves[f"density_{kind}"].to_numpy())
            ax.fill_between(x, shared, color=STYLES[kind][1], alpha=0.25, lw=0,
                            label=f"shared area {LABELS[kind].split(' ', 1)[1]}" if legend else None)
    ax.set_xlim(*xlim)
    ax.set_xlabel("cosine similarity to the original sentence")


def plot(curves_path: str, summary_path: str, out_png: str, out_svg: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    # SVG element ids are random per process unless salted: fixed, so reruns give identical files
    matplotlib.rcParams["svg.hashsalt"] = "csc-plot"
    import matplotlib.pyplot as plt
    curves = pl.read_parquet(curves_path)
    summary = read_json(summary_path)
    drawn = [k for k in LABELS if f"density_{k}" in curves.columns
             and not np.all(np.isnan(curves[f"density_{k}"].to_numpy()))]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1, 1.3]})
    zoom = _data_range(curves, drawn)
    for ax, xlim in zip(axes, [(-1.0, 1.0), zoom]):
        _draw_panel(ax, curves, summary, drawn, xlim, legend=ax is axes[1])
    axes[0].set_ylabel("normalised density")
    axes[0].set_title("whole range", fontsize=9)
    axes[1].set_title(f"zoomed on 99% of each curve's mass: {zoom[0]:.3f} to {zoom[1]:.3f}", fontsize=9)
    axes[1].legend(fontsize=8, loc="upper left")
    overlaps = "; ".join(f"{r['condition'].replace('_', ' ')} {fmt_overlap(r)}, within-sentence AUC "
                         f"{_fmt_number(r.get('within_auc'))}" for r in summary["rows"])
    factor = summary.get("kde_covariance_factor", COVARIANCE_FACTOR)
    fig.suptitle(f"{summary['corpus']} · {summary['model']} — overlap (95% CI; KDE covariance factor {factor:g}): "
                 f"{overlaps}", fontsize=9)
    fig.tight_layout()
    for path in (out_png, out_svg):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=Path(path).suffix[1:], dpi=120, metadata={"Date": None} if path.endswith(".svg") else None)
    plt.close(fig)


# ---- the jobs of rules/csc.smk (workflow_scripts/jobs.py) ----
def run_csc_plot(job) -> None:
    plot(job.input.curves, job.input.summary, job.output.png, job.output.svg)
