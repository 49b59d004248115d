"""Measures and projections behind C1-C6, per (sample set, model) (methods.md §2).

For every kept operator sample (A, B, target T: O for overlap, D for difference, U for union) this
reads the vectors of A, B and T through the vector-store API and writes, per measure m:
  {m}_ab = m(A, B), {m}_at = m(A, T), {m}_bt = m(B, T), and for difference samples
  {m}_dt = m(A - B, T), {m}_db = m(A - B, B)  (C4: the algebraic difference of the inputs)
Measures (MEASURES): `cosine` and `dot` are similarities; `l1`, `l2` (Minkowski distances of the raw
vectors) and `ned` are distances, NED(x, y) = 0.5 * Var(x - y) / (Var(x) + Var(y)) with the population
variance over the dimensions and no square root (the reference code's nsed). The criteria negate the
differences of distances, so "higher is better" everywhere. Vectors are used as stored: models that
normalise (sentence-transformers) give dot = cosine and ||A||/||B|| = 1; mean-pooled decoders do not.
A zero vector makes cosine and NED undefined (NaN), and the criteria count such samples apart.

Projection (C2, C5, C6): T projected onto the plane of A and B, with the Gram-Schmidt basis taken
with B first (e_b = B/|B|, e_a = (A - (A.e_b) e_b)/|...|; the reference code's order), computed from
the dot products alone (so sparse TF-IDF vectors work too). Written: angle_ab = angle(A, B),
angle_pa = angle(p, A), angle_pb = angle(p, B) in degrees, norm_a, norm_b, norm_t, norm_p (|p|), and
the norm ratio ||A||/||B||. When A and B are parallel (no plane) or T is orthogonal to the plane
(p = 0) the angles are NaN.

Job: run_settheory_measures (rule settheory_measures, rules/settheory.smk).
"""
from __future__ import annotations

import numpy as np
import polars as pl
import scipy.sparse as sp

from workflow_scripts.common import atomic_path, setup_logging
from workflow_scripts.texts import text_keys
from workflow_scripts.vector_store import VectorStore, spec_digest

SIMILARITIES = ("cosine", "dot")
DISTANCES = ("l1", "l2", "ned")
MEASURES = SIMILARITIES + DISTANCES
PAIRS = ("ab", "at", "bt")
DIFF_PAIRS = ("dt", "db")
GEOMETRY = ("angle_ab", "angle_pa", "angle_pb", "norm_a", "norm_b", "norm_t", "norm_p", "norm_ratio")
PARALLEL_TOL = 1e-6  # |A - (A.e_b) e_b| below this fraction of |A|: A and B span no plane


def sign(measure: str) -> float:
    """+1 for similarities, -1 for distances: criteria negate the differences of distances."""
    if measure in SIMILARITIES:
        return 1.0
    if measure in DISTANCES:
        return -1.0
    raise ValueError(f"unknown measure {measure!r}; expected one of {', '.join(MEASURES)}")


# ---- row-wise linear algebra on dense arrays or CSR matrices ------------------------------------

def _rowdot(x, y) -> np.ndarray:
    if sp.issparse(x):
        return np.asarray(x.multiply(y).sum(axis=1), dtype=np.float64).ravel()
    return np.einsum("ij,ij->i", x, y, dtype=np.float64)


def _rowsum(x) -> np.ndarray:
    return np.asarray(x.sum(axis=1), dtype=np.float64).ravel()


def _rowabs(x) -> np.ndarray:
    return np.asarray(abs(x).sum(axis=1), dtype=np.float64).ravel()


def _as64(x):
    return x.astype(np.float64) if sp.issparse(x) else np.asarray(x, dtype=np.float64)


def pair_measures(x, y, measures=MEASURES) -> dict[str, np.ndarray]:
    """Each measure of the row pairs (x_i, y_i); x, y dense (n, d) arrays or CSR matrices."""
    x, y = _as64(x), _as64(y)
    d = x.shape[1]
    out = {}
    xy = _rowdot(x, y)
    nx, ny = np.sqrt(_rowdot(x, x)), np.sqrt(_rowdot(y, y))
    z = x - y
    with np.errstate(invalid="ignore", divide="ignore"):
        if "cosine" in measures:
            out["cosine"] = np.clip(np.where((nx > 0) & (ny > 0), xy / (nx * ny), np.nan), -1.0, 1.0)
        if "dot" in measures:
            out["dot"] = xy
        if "l1" in measures:
            out["l1"] = _rowabs(z)
        if "l2" in measures:
            out["l2"] = np.sqrt(_rowdot(z, z))
        if "ned" in measures:
            def var(v):
                return np.maximum(_rowdot(v, v) / d - (_rowsum(v) / d) ** 2, 0.0)
            denom = var(x) + var(y)
            out["ned"] = np.where(denom > 0, 0.5 * var(z) / denom, np.nan)
    return out


def projection(a, b, t) -> dict[str, np.ndarray]:
    """Angles (degrees) and norms of the projection p of t onto the plane of a and b (module docstring)."""
    a, b, t = _as64(a), _as64(b), _as64(t)
    aa, bb, tt = _rowdot(a, a), _rowdot(b, b), _rowdot(t, t)
    ab, ta, tb = _rowdot(a, b), _rowdot(t, a), _rowdot(t, b)
    return projection_from_dots(aa, bb, tt, ab, ta, tb)


def projection_from_dots(aa, bb, tt, ab, ta, tb) -> dict[str, np.ndarray]:
    norm_a, norm_b, norm_t = np.sqrt(aa), np.sqrt(bb), np.sqrt(tt)
    with np.errstate(invalid="ignore", divide="ignore"):
        a_b = ab / norm_b                               # A's coordinate along e_b
        u = np.sqrt(np.maximum(aa - a_b ** 2, 0.0))     # |A - (A.e_b) e_b|: A's coordinate along e_a
        plane = (norm_b > 0) & (norm_a > 0) & (u > PARALLEL_TOL * norm_a)
        t_b = tb / norm_b
        t_a = (ta - a_b * t_b) / u
        norm_p = np.hypot(t_a, t_b)
        ok = plane & (norm_p > 0)

        def angle(cos):
            return np.where(ok, np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))), np.nan)

        angle_ab = np.where((norm_a > 0) & (norm_b > 0), np.degrees(np.arccos(np.clip(ab / (norm_a * norm_b), -1, 1))),
                            np.nan)
        angle_ab = np.where(plane, angle_ab, np.nan)
        angle_pa = angle((t_a * u + t_b * a_b) / (norm_p * norm_a))
        angle_pb = angle(t_b / norm_p)
        ratio = np.where(norm_b > 0, norm_a / norm_b, np.nan)
    return {"angle_ab": angle_ab, "angle_pa": angle_pa, "angle_pb": angle_pb, "norm_a": norm_a, "norm_b": norm_b,
            "norm_t": norm_t, "norm_p": np.where(plane, norm_p, np.nan), "norm_ratio": ratio}


def measure_rows(va, vb, vt, is_diff: np.ndarray, measures=MEASURES) -> dict[str, np.ndarray]:
    out = {}
    for pair, (x, y) in {"ab": (va, vb), "at": (va, vt), "bt": (vb, vt)}.items():
        for m, values in pair_measures(x, y, measures).items():
            out[f"{m}_{pair}"] = values
    diff = va - vb
    for pair, y in {"dt": vt, "db": vb}.items():
        for m, values in pair_measures(diff, y, measures).items():
            out[f"{m}_{pair}"] = np.where(is_diff, values, np.nan)
    out.update(projection(va, vb, vt))
    return out


def columns(measures=MEASURES) -> list[str]:
    return [f"{m}_{p}" for m in measures for p in PAIRS + DIFF_PAIRS] + list(GEOMETRY)


def compute(operators_path: str, store_dirs: list[str], model: str, spec: dict, measures: list[str], log) -> pl.DataFrame:
    store = VectorStore(store_dirs, model=model, spec_digest=spec_digest(spec))
    ops = pl.read_parquet(operators_path, columns=["op_id", "sample_id", "operator", "variant", "a", "b", "t", "kept"])
    ops = ops.filter(pl.col("kept"))
    chunk = max(256, int(5e6 // max(store.dim, 1)))  # about 40 MB per float64 array of a chunk
    parts = []
    for start in range(0, ops.height, chunk):
        part = ops.slice(start, chunk)
        va, _ = store.lookup(text_keys(part["a"].to_list()))
        vb, _ = store.lookup(text_keys(part["b"].to_list()))
        vt, _ = store.lookup(text_keys(part["t"].to_list()))
        store.release_pages()
        values = measure_rows(va, vb, vt, (part["operator"] == "difference").to_numpy(), measures)
        parts.append(pl.DataFrame({c: pl.Series(c, values[c], pl.Float64) for c in columns(measures)}))
        log.info("%s: %d/%d operator samples", model, min(start + chunk, ops.height), ops.height)
    values = pl.concat(parts) if parts else pl.DataFrame(schema={c: pl.Float64 for c in columns(measures)})
    out = pl.concat([ops.select("op_id", "sample_id", "operator", "variant"), values], how="horizontal")
    undefined = int(out.select(pl.col("angle_pa").is_nan().sum()).item()) if out.height else 0
    log.info("%s: %d operator samples measured (%s); %d with undefined projection angles", model, out.height,
             ", ".join(measures), undefined)
    return out


# ---- the jobs of rules/settheory.smk (workflow_scripts/jobs.py) ----
def run_settheory_measures(job) -> None:
    """measures.parquet of a (sample set, model). params: spec (the model's embed spec), measures."""
    frame = compute(job.input.operators, list(job.input.stores), job.wildcards.model, job.params.spec,
                    list(job.params.measures), setup_logging(name="settheory"))
    with atomic_path(job.output[0]) as tmp:
        frame.write_parquet(tmp)
