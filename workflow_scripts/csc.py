"""Stage 5, Concept Separation Curves: score, density, overlap, plots (methods.md §1).

cos(original, variant) for every variant, from the vector stores; zero-norm vectors give NaN,
which is dropped from the densities and counted. Density: Gaussian KDE with covariance factor 0.2
(kernel sd = 0.2 x sample sd) on the 2001-point grid -1..1 — scipy's exact gaussian_kde for small
inputs, a binned estimator (linear binning on a grid 8x finer + FFT convolution with the same
kernel) above a size threshold. Each density is divided by its sum over the grid (equation 1);
overlap = sum over the grid of min(fuzz, neg) (equation 2).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from scipy import signal, stats

from workflow_scripts.common import atomic_path, read_json, setup_logging, write_json
from workflow_scripts.vector_store import VectorStore, spec_digest

GRID = np.linspace(-1.0, 1.0, 2001)
GRID_STEP = 0.001
COVARIANCE_FACTOR = 0.2
REFINE = 8  # fine-grid nodes per grid step for the binned estimator
KERNEL_REACH = 8.0  # kernel truncated at this many bandwidths (exp(-32) ~ 1e-14)
NEGATIVE_CONDITIONS = ("negation", "grammatical_negation")
SIM_SCHEMA = pa.schema([("original_id", pa.uint64()), ("variant_id", pa.uint64()),
                        ("kind", pa.string()), ("similarity", pa.float64())])


class BinnedSample:
    """Sufficient statistics of a similarity sample for the binned KDE: linear-binning weights on
    the fine grid plus count, sum and sum of squares. Shards add up exactly, so they can be reduced."""

    def __init__(self, refine: int = REFINE):
        self.refine = refine
        self.nodes = (len(GRID) - 1) * refine + 1
        self.step = GRID_STEP / refine
        self.weights = np.zeros(self.nodes)
        self.n = 0
        self.total = 0.0
        self.total_sq = 0.0

    def add(self, values: np.ndarray) -> None:
        x = np.clip(np.asarray(values, dtype=np.float64), -1.0, 1.0)
        if not len(x):
            return
        t = (x + 1.0) / self.step
        j = np.minimum(np.floor(t).astype(np.int64), self.nodes - 2)
        frac = t - j
        self.weights += np.bincount(j, weights=1.0 - frac, minlength=self.nodes)
        self.weights += np.bincount(j + 1, weights=frac, minlength=self.nodes)
        self.n += len(x)
        self.total += float(x.sum())
        self.total_sq += float(np.dot(x, x))

    def sd(self) -> float:
        if self.n < 2:
            return 0.0
        var = (self.total_sq - self.total * self.total / self.n) / (self.n - 1)
        return float(np.sqrt(max(var, 0.0)))

    def density(self, bandwidth: float | None = None) -> np.ndarray:
        """Unnormalised KDE on GRID (same scale as scipy's gaussian_kde)."""
        bw = COVARIANCE_FACTOR * self.sd() if bandwidth is None else bandwidth
        if self.n == 0:
            return np.zeros(len(GRID))
        if bw < GRID_STEP:
            # The 0.001 grid cannot resolve a kernel this narrow (one distinct value, say): linear
            # binning straight onto the grid keeps all the mass (a Gaussian sampled between grid
            # points would read 0 everywhere). Fine-to-coarse linear interpolation of the fine
            # binning equals the linear binning of the points on the coarse grid.
            frac = (np.arange(self.nodes) % self.refine) / self.refine
            lower = np.arange(self.nodes) // self.refine
            coarse = np.bincount(lower, weights=self.weights * (1 - frac), minlength=len(GRID))
            coarse += np.bincount(np.minimum(lower + 1, len(GRID) - 1), weights=self.weights * frac,
                                  minlength=len(GRID))
            return coarse[: len(GRID)] / (self.n * GRID_STEP)
        else:
            reach = int(np.ceil(KERNEL_REACH * bw / self.step))
            offsets = np.arange(-reach, reach + 1) * self.step
            kernel = np.exp(-0.5 * (offsets / bw) ** 2) / (bw * np.sqrt(2.0 * np.pi))
            fine = signal.fftconvolve(self.weights, kernel, mode="full")[reach:reach + self.nodes] / self.n
        return np.maximum(fine[:: self.refine], 0.0)  # FFT round-off can leave -1e-17


def exact_density(values: np.ndarray) -> np.ndarray:
    """scipy.stats.gaussian_kde with covariance factor 0.2, evaluated on GRID."""
    return stats.gaussian_kde(np.asarray(values, dtype=np.float64), bw_method=COVARIANCE_FACTOR)(GRID)


def normalise(density: np.ndarray) -> np.ndarray:
    """Equation 1: divide by the sum over the grid."""
    total = density.sum()
    return density / total if total > 0 else np.full_like(density, np.nan)


def overlap(fuzz: np.ndarray, neg: np.ndarray) -> float:
    """Equation 2: shared area of two normalised densities, in [0, 1]."""
    return float(np.minimum(fuzz, neg).sum())


def curve(sample: BinnedSample, raw: np.ndarray | None, exact_max_n: int) -> tuple[np.ndarray, str]:
    """Normalised density and the method used. The exact KDE needs the raw values, more than one
    distinct value, and a bandwidth the 0.001 grid resolves; otherwise the binned one is used."""
    if sample.n == 0:
        return np.full(len(GRID), np.nan), "empty"
    bw = COVARIANCE_FACTOR * sample.sd()
    if raw is not None and sample.n <= exact_max_n and bw >= GRID_STEP:
        return normalise(exact_density(raw)), "exact"
    return normalise(sample.density()), "binned"


def score(variants_dir: str, store_dirs: list[str], model: str, corpus: str, exact_max_n: int,
          out_dir: str, log, model_spec: dict | None = None) -> dict:
    store = VectorStore(store_dirs, model=model, spec_digest=spec_digest(model_spec) if model_spec else None)
    manifest = read_json(Path(variants_dir) / "manifest.json")
    kinds = ["fuzz", *NEGATIVE_CONDITIONS]
    samples = {k: BinnedSample() for k in kinds}
    raw: dict[str, list | None] = {k: [] for k in kinds}
    dropped = {k: 0 for k in kinds}
    out = Path(out_dir)
    with atomic_path(out / "similarities.parquet") as tmp_sims:
        writer = pq.ParquetWriter(tmp_sims, SIM_SCHEMA, compression="zstd")
        for i, shard in enumerate(manifest["shards"]):
            frame = pl.read_parquet(Path(variants_dir) / shard["file"],
                                    columns=["original_id", "variant_id", "kind", "original_key", "text_key"])
            sims = store.paired_cosine(frame["original_key"].to_numpy(), frame["text_key"].to_numpy())
            writer.write_table(pa.table({"original_id": frame["original_id"].to_arrow(),
                                         "variant_id": frame["variant_id"].to_arrow(),
                                         "kind": frame["kind"].to_arrow().cast(pa.string()),
                                         "similarity": sims}, schema=SIM_SCHEMA))
            kind_col = frame["kind"].to_numpy()
            for k in kinds:
                v = sims[kind_col == k]
                finite = v[np.isfinite(v)]
                dropped[k] += len(v) - len(finite)
                samples[k].add(finite)
                if raw[k] is not None:
                    raw[k].append(finite)
                    if samples[k].n > exact_max_n:
                        raw[k] = None  # too many for the exact KDE; stop holding them
            log.info("%s/%s: shard %d/%d scored (%d pairs)", corpus, model, i + 1, len(manifest["shards"]), len(sims))
        writer.close()
    curves, methods = {}, {}
    for k in kinds:
        values = np.concatenate(raw[k]) if raw[k] else (np.empty(0) if raw[k] is not None else None)
        curves[k], methods[k] = curve(samples[k], values, exact_max_n)
    rows = []
    for cond in NEGATIVE_CONDITIONS:
        if samples[cond].n == 0 and dropped[cond] == 0:
            continue  # condition not produced for this corpus (e.g. grammatical negation of Dutch)
        value = overlap(curves["fuzz"], curves[cond]) if samples["fuzz"].n and samples[cond].n else float("nan")
        rows.append({"corpus": corpus, "model": model, "condition": cond, "overlap": value,
                     "n_fuzzed": samples["fuzz"].n, "n_negated": samples[cond].n,
                     "n_dropped": dropped["fuzz"] + dropped[cond],
                     "kde": "+".join(sorted({methods["fuzz"], methods[cond]}))})
    with atomic_path(out / "curves.parquet") as tmp:
        pl.DataFrame({"similarity": GRID, **{f"density_{k}": curves[k] for k in kinds}}).write_parquet(tmp)
    summary = {"corpus": corpus, "model": model, "rows": rows, "kde_methods": methods,
               "bandwidths": {k: COVARIANCE_FACTOR * samples[k].sd() for k in kinds},
               "counts": {k: samples[k].n for k in kinds}, "dropped_nan": dropped,
               "store": {k: store.manifest.get(k) for k in ("family", "origin", "dim", "dtype", "format")}}
    write_json(out / "summary.json", summary)
    for r in rows:
        log.info("%s/%s %s: overlap %.4f (fuzzed %d, negated %d, dropped %d, %s KDE)", corpus, model,
                 r["condition"], r["overlap"], r["n_fuzzed"], r["n_negated"], r["n_dropped"], r["kde"])
    return summary


def plot(curves_path: str, summary_path: str, out_png: str, out_svg: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    # SVG element ids are random per process unless salted: fixed, so reruns give identical files
    matplotlib.rcParams["svg.hashsalt"] = "csc-plot"
    import matplotlib.pyplot as plt
    curves = pl.read_parquet(curves_path)
    summary = read_json(summary_path)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    labels = {"fuzz": "fuzzed", "negation": "negated (inserted)", "grammatical_negation": "negated (grammatical)"}
    styles = {"fuzz": "-", "negation": "-", "grammatical_negation": "--"}
    for kind, label in labels.items():
        col = curves[f"density_{kind}"].to_numpy()
        if np.all(np.isnan(col)):
            continue
        ax.plot(curves["similarity"], col, styles[kind], label=f"{label} (n={summary['counts'][kind]})")
    overlaps = ", ".join(f"{r['condition'].replace('_', ' ')} {r['overlap']:.4f}" for r in summary["rows"])
    ax.set_title(f"{summary['corpus']} · {summary['model']}\noverlap: {overlaps}", fontsize=10)
    ax.set_xlabel("cosine similarity to the original sentence")
    ax.set_ylabel("normalised density")
    ax.set_xlim(-1, 1)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    for path in (out_png, out_svg):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=Path(path).suffix[1:], dpi=120, metadata={"Date": None} if path.endswith(".svg") else None)
    plt.close(fig)


def aggregate(summary_paths: list[str], out_csv: str) -> pl.DataFrame:
    rows = [r for p in summary_paths for r in read_json(p)["rows"]]
    schema = {"corpus": pl.String, "model": pl.String, "condition": pl.String, "overlap": pl.Float64,
              "n_fuzzed": pl.Int64, "n_negated": pl.Int64, "n_dropped": pl.Int64, "kde": pl.String}
    table = pl.DataFrame(rows, schema=schema).sort("corpus", "model", "condition")
    table = table.with_columns(pl.col("overlap").round(6))
    with atomic_path(out_csv) as tmp:
        table.write_csv(tmp)
    return table


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("score")
    s.add_argument("--variants-dir", required=True)
    s.add_argument("--stores", nargs="+", required=True)
    s.add_argument("--model", required=True)
    s.add_argument("--corpus", required=True)
    s.add_argument("--exact-max-n", type=int, required=True)
    s.add_argument("--spec", help="the model's config entry as JSON: the stores must have been embedded with it")
    s.add_argument("--out-dir", required=True)
    s.add_argument("--log")
    p = sub.add_parser("plot")
    p.add_argument("--curves", required=True)
    p.add_argument("--summary", required=True)
    p.add_argument("--png", required=True)
    p.add_argument("--svg", required=True)
    a = sub.add_parser("aggregate")
    a.add_argument("--summaries", nargs="+", required=True)
    a.add_argument("--out", required=True)
    a.add_argument("--log")
    args = ap.parse_args(argv)
    if args.cmd == "score":
        score(args.variants_dir, args.stores, args.model, args.corpus, args.exact_max_n, args.out_dir,
              setup_logging(args.log, "csc"), json.loads(args.spec) if args.spec else None)
    elif args.cmd == "plot":
        plot(args.curves, args.summary, args.png, args.svg)
    else:
        table = aggregate(args.summaries, args.out)
        setup_logging(args.log, "csc").info("%d overlap rows -> %s", table.height, args.out)


if __name__ == "__main__":
    main(sys.argv[1:])
