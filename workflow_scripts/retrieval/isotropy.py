"""Isotropy of a model's vectors, before and after standardise / whiten / PCA, with retrieval
re-measured after each transformation (methods.md §4; seed 003, Table III).

Both scores are computed on unit vectors (what is searched), from streamed moments, so memory
follows the dimension (d x d), not the corpus:
- **IsoScore** (Rudman et al. 2022) depends only on the eigenvalues of the covariance of the points.
  It is computed from the covariance accumulated shard by shard, by `isoscore_from_covariance`: the
  `IsoScore` package's `IsoScore_cov` formula in numpy, because the package imports torch, which
  cost each isotropy job seconds of start-up for a few lines of arithmetic (tests check it against
  `IsoScore_cov` to 1e-12, against the eigenvalue form of methods.md and against the package's
  `IsoScore(points)` on the points themselves). The reference passed the points as rows to the 1.0
  API, which expects columns, and crashed whenever N > d. The covariance of N points has rank at
  most N - 1, so IsoScore needs N > d: with fewer points the score is NaN, with a note.
- **I1**, Mu et al.'s second-order approximation of the partition-function isotropy:
  I1 = (N - ||sum_i v_i|| + sigma_min^2 / 2) / (N + ||sum_i v_i|| + sigma_max^2 / 2), N the number of
  vectors, sigma the singular values of V (N x d), i.e. the square roots of the eigenvalues of
  V^T V (sigma_min = 0 when N < d). The reference used d for N and the norm of the per-row
  coordinate sums for ||sum_i v_i||: both fixed here (tests).

Transformations are fitted on the corpus vectors (`fit_on: corpus`) or on corpus and queries,
applied to both, and the results are normalised to unit length again before searching:
- `standardise`: (x - mean) / sd per dimension (a dimension without spread keeps sd 1);
- `whiten`: (x - mean) Sigma^(-1/2), with eigenvalues floored at `whiten_epsilon` x the largest;
- `pca`: (x - mean) projected on the leading principal axes: `pca_components` axes (an integer),
  or as many as explain that share of the variance (a number below 1).
Their parameters are unpublished: these are config values, recorded in the output.
Sparse stores (TF-IDF) have no isotropy here (a vocabulary-wide covariance): rows with a note.

The job of rules/retrieval.smk, one per (set, model): `run_retrieval_isotropy` (retrieval_isotropy).
"""
from __future__ import annotations

import json

import numpy as np
import polars as pl

from workflow_scripts.common import atomic_path, setup_logging
from workflow_scripts.retrieval.search import (TOPK_SCHEMA, SearchStats, StoreCorpus, load_eval_set, open_stores,
                                               query_vectors, run_search, search_options, topk_frame)

TRANSFORMS = ("standardise", "whiten", "pca")
ISOTROPY_SCHEMA = {"transform": pl.String, "vectors": pl.String, "n": pl.Int64, "dim": pl.Int64, "i1": pl.Float64,
                   "isoscore": pl.Float64, "note": pl.String, "transform_settings": pl.String}


class Moments:
    """Streamed count, sum and Gram matrix (float64) of row vectors."""

    def __init__(self, dim: int | None = None):
        self.n = 0
        self.sum = None if dim is None else np.zeros(dim)
        self.gram = None if dim is None else np.zeros((dim, dim))

    def add(self, rows: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.float64)
        if self.sum is None:
            self.sum, self.gram = np.zeros(rows.shape[1]), np.zeros((rows.shape[1], rows.shape[1]))
        self.n += len(rows)
        self.sum += rows.sum(axis=0)
        self.gram += rows.T @ rows

    def merged(self, other: "Moments") -> "Moments":
        out = Moments()
        out.n, out.sum, out.gram = self.n + other.n, self.sum + other.sum, self.gram + other.gram
        return out

    @property
    def dim(self) -> int:
        return 0 if self.sum is None else len(self.sum)

    def mean(self) -> np.ndarray:
        return self.sum / self.n

    def covariance(self) -> np.ndarray:
        """Sample covariance (N - 1): IsoScore is scale-free, so the denominator does not matter."""
        mean = self.mean()
        return (self.gram - self.n * np.outer(mean, mean)) / max(self.n - 1, 1)


def isoscore_from_covariance(cov: np.ndarray) -> float:
    """IsoScore of a distribution with this covariance: the `IsoScore` package's `IsoScore_cov` (2.0.1)
    step by step, in numpy rather than torch, so that an isotropy job does not import torch (seconds
    of start-up per job). The package takes sqrt(d) of an integer tensor, which torch computes in
    float32: those float32 intermediates are kept, so that the scores agree to rounding (tested)."""
    cov = np.asarray(cov, dtype=np.float64)
    d = cov.shape[1]
    sqrt_d = np.sqrt(np.float32(d))                               # float32, as in the package
    singular_values = np.linalg.svd(cov, compute_uv=False)
    normalised = singular_values * np.float64(sqrt_d) / np.linalg.norm(singular_values)
    bound = np.sqrt(np.float32(2) * (np.float32(d) - sqrt_d))     # float32: bounds the defect to [0, 1]
    defect = np.linalg.norm(normalised - 1.0) / np.float64(bound)
    spread = np.float64(np.float32(d) - sqrt_d)
    return float(((d - defect ** 2 * spread) ** 2 - d) / (d * (d - 1)))


def i1_from_moments(m: Moments) -> float:
    """Mu et al.'s second-order I1 from N, the summed vector and the eigenvalues of V^T V."""
    eig = np.clip(np.linalg.eigvalsh(m.gram), 0.0, None)
    sigma_min2 = eig[0] if m.n >= m.dim else 0.0
    sigma_max2 = eig[-1]
    s = float(np.linalg.norm(m.sum))
    return float((m.n - s + 0.5 * sigma_min2) / (m.n + s + 0.5 * sigma_max2))


def scores(m: Moments) -> tuple[float, float, str]:
    """(I1, IsoScore, note) of the moments' vectors."""
    if m.n == 0:
        return float("nan"), float("nan"), "no vectors"
    i1 = i1_from_moments(m)
    if m.n <= m.dim:
        return i1, float("nan"), f"IsoScore needs more vectors than dimensions ({m.n} vectors, {m.dim} dimensions)"
    return i1, isoscore_from_covariance(m.covariance()), ""


# ---- transformations --------------------------------------------------------------------------

def fit_transform(name: str, m: Moments, settings: dict):
    """(function (unit rows, nonzero) -> (unit rows, nonzero), description) fitted on the moments."""
    mean = m.mean()
    cov = m.covariance()
    if name == "standardise":
        sd = np.sqrt(np.clip(np.diag(cov), 0, None))
        sd[sd == 0] = 1.0
        matrix, desc = np.diag(1.0 / sd), {"centre": True, "scale": "per-dimension sd"}
    elif name == "whiten":
        eig, vec = np.linalg.eigh(cov)
        floor = settings["whiten_epsilon"] * max(eig[-1], 0.0)
        eig = np.maximum(eig, floor if floor > 0 else 1e-12)
        matrix, desc = (vec / np.sqrt(eig)) @ vec.T, {"centre": True, "epsilon": settings["whiten_epsilon"],
                                                      "form": "ZCA, Sigma^(-1/2)"}
    elif name == "pca":
        eig, vec = np.linalg.eigh(cov)
        eig, vec = eig[::-1], vec[:, ::-1]
        want = settings["pca_components"]
        if isinstance(want, float) and want < 1:
            share = np.cumsum(np.clip(eig, 0, None)) / max(np.clip(eig, 0, None).sum(), 1e-300)
            c = int(np.searchsorted(share, want) + 1)
        else:
            c = int(want)
        c = max(1, min(c, len(eig)))
        matrix = vec[:, :c]
        desc = {"centre": True, "components": c, "asked": want,
                "variance_share": float(np.clip(eig[:c], 0, None).sum() / max(np.clip(eig, 0, None).sum(), 1e-300))}
    else:
        raise ValueError(f"unknown transformation {name!r}; expected one of {', '.join(TRANSFORMS)}")
    mean32, matrix32 = mean.astype(np.float32), matrix.astype(np.float32)

    def apply(unit: np.ndarray, nonzero: np.ndarray):
        out = (unit - mean32) @ matrix32
        norms = np.linalg.norm(out.astype(np.float64), axis=1)
        ok = nonzero & (norms > 0)
        result = np.zeros_like(out, dtype=np.float32)
        result[ok] = (out[ok] / norms[ok, None]).astype(np.float32)
        return result, ok
    return apply, desc


def isotropy_job(set_dir: str, stores: list[str], model: str, spec: dict, dataset: str, settings: dict, device: str,
                 threads: int, isotropy_out: str, topk_out: str, log) -> pl.DataFrame:
    store, query_store = open_stores(stores, model, spec)
    ev = load_eval_set(set_dir, settings["eval_split"], log)
    rows, topk_frames = [], []
    if store.sparse:
        note = "sparse store (TF-IDF): no isotropy or transformations (they need dense vectors)"
        for vectors in ("corpus", "queries"):
            rows.append({"transform": "none", "vectors": vectors, "n": 0, "dim": store.dim, "i1": float("nan"),
                         "isoscore": float("nan"), "note": note, "transform_settings": "{}"})
        log.info("%s / %s: %s", dataset, model, note)
    else:
        corpus = StoreCorpus(store, ev.corpus_keys, settings["search"].get("shard_rows", 200_000))
        base = Moments(store.dim)
        for shard in corpus.shards():
            base.add(shard.vectors[shard.valid])
        qvec, qnz = query_vectors(query_store or store, ev.query_keys)
        qbase = Moments(store.dim)
        qbase.add(qvec[qnz])
        for vectors, m in (("corpus", base), ("queries", qbase)):
            i1, iso, note = scores(m)
            rows.append({"transform": "none", "vectors": vectors, "n": m.n, "dim": m.dim, "i1": i1, "isoscore": iso,
                         "note": note, "transform_settings": "{}"})
        log.info("%s / %s: corpus I1 %.4f IsoScore %.4f (%d vectors, %d dims)", dataset, model, rows[0]["i1"],
                 rows[0]["isoscore"], base.n, base.dim)
        fit = base if settings["fit_on"] == "corpus" else base.merged(qbase)
        top_k = max(settings["ks"])
        for name in settings["transforms"]:
            transform, desc = fit_transform(name, fit, settings)
            moments = Moments()
            stats = SearchStats()
            found, scores_, tq, tqnz, _ = run_search(store, ev, top_k, settings["search"], device, threads, log,
                                                     transform=transform,
                                                     on_shard=lambda unit, nonzero: moments.add(unit[nonzero]),
                                                     stats=stats, query_store=query_store)
            tq_m = Moments(tq.shape[1])
            tq_m.add(tq[tqnz])
            for vectors, m in (("corpus", moments), ("queries", tq_m)):
                i1, iso, note = scores(m)
                rows.append({"transform": name, "vectors": vectors, "n": m.n, "dim": m.dim, "i1": i1, "isoscore": iso,
                             "note": note, "transform_settings": json.dumps({**desc, "fit_on": settings["fit_on"]},
                                                                            sort_keys=True)})
            topk_frames.append(topk_frame(ev, found, scores_).with_columns(pl.lit(name).alias("transform")))
            log.info("%s / %s: %s (%s): corpus I1 %.4f IsoScore %.4f; searched in %.1f s", dataset, model, name,
                     json.dumps(desc, sort_keys=True), rows[-2]["i1"], rows[-2]["isoscore"], stats.seconds)
    iso = pl.DataFrame(rows, schema=ISOTROPY_SCHEMA, orient="row")
    schema = {"transform": pl.String, **TOPK_SCHEMA}
    topk = pl.concat(topk_frames).select(list(schema)) if topk_frames else pl.DataFrame(schema=schema)
    with atomic_path(isotropy_out) as tmp:
        iso.write_parquet(tmp)
    with atomic_path(topk_out) as tmp:
        topk.write_parquet(tmp)
    return iso


# ---- the jobs of rules/retrieval.smk (workflow_scripts/jobs.py) ----
def run_retrieval_isotropy(job) -> None:
    # settings: eval_split, ks, transforms, fit_on, whiten_epsilon, pca_components (RetrievalPlan)
    settings = {**job.params.settings, "search": search_options(job.resources)}
    isotropy_job(job.input.set, list(job.input.stores), job.wildcards.model, job.params.spec, job.wildcards.dataset,
                 settings, job.params.device, job.threads, job.output.isotropy, job.output.topk,
                 setup_logging(name="retrieval"))
