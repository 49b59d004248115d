"""Stage 2, length filter: derive the corpora the probes run on from ingested sources.

A derived corpus is one language of a source, deduplicated by sentence id, optionally restricted to
a token range, optionally length-matched to another corpus (seeded stratified sampling by exact
token count: how the seed paper's PC_filtered is made), optionally capped in size. Also writes the
length-bucket table in the layout of the seed's Table 2.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from workflow_scripts.common import atomic_path, read_json, setup_logging, stable_id, text_key, write_json
from workflow_scripts.shards import reading

# Table 2 buckets: [0, 10), [10, 20), ... [50, inf)
BUCKET_EDGES = [0, 10, 20, 30, 40, 50]
BUCKET_LABELS = ["0-10", "10-20", "20-30", "30-40", "40-50", ">=50"]
LENGTH_STRATUM_CAP = 100  # token counts above this form one stratum when matching lengths


def bucket_counts(n_tokens: np.ndarray) -> dict[str, int]:
    idx = np.searchsorted(BUCKET_EDGES, np.asarray(n_tokens), side="right") - 1
    counts = np.bincount(idx, minlength=len(BUCKET_LABELS))
    return {label: int(c) for label, c in zip(BUCKET_LABELS, counts)}


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def sample_key(seed: int, ids: np.ndarray, salt: str = "sample") -> np.ndarray:
    """Seeded, order-independent sampling key per sentence id: splitmix64 of the id xor a salt.
    Pure 64-bit integer arithmetic, so the keys are the same on every machine and version, and
    vectorised (a blake2b per id in Python took 1.4 us, 3.5 s for ParaCrawl's 2.56M sentences)."""
    x = np.asarray(ids, dtype=np.uint64) ^ np.uint64(stable_id(salt, seed))
    with np.errstate(over="ignore"):
        x = x + _GOLDEN
        x = (x ^ (x >> np.uint64(30))) * _MIX1
        x = (x ^ (x >> np.uint64(27))) * _MIX2
    return x ^ (x >> np.uint64(31))


def _quotas_for(n: float, shares: dict[int, float], available: dict[int, int]) -> dict[int, int]:
    return {s: min(int(np.floor(n * p + 1e-9)), available.get(s, 0)) for s, p in shares.items()}


def total_variation(quotas: dict[int, int], shares: dict[int, float]) -> float:
    total = sum(quotas.values())
    if not total:
        return 1.0
    return 0.5 * sum(abs(quotas.get(s, 0) / total - p) for s, p in shares.items())


def _top_up(quotas: dict[int, int], shares: dict[int, float], available: dict[int, int], cap: int,
            tolerance: float) -> dict[int, int]:
    """One sentence at a time, up to `cap` in all, to the stratum furthest below its share of the
    new total (ties: the shorter length), while the distance stays within the tolerance."""
    quotas = dict(quotas)
    while (total := sum(quotas.values())) < cap:
        open_ = [s for s in shares if quotas[s] < available.get(s, 0)]
        if not open_:
            break
        best = max(open_, key=lambda s: (shares[s] * (total + 1) - quotas[s], -s))
        quotas[best] += 1
        if total_variation(quotas, shares) > tolerance:
            quotas[best] -= 1
            break
    return quotas


def match_quotas(available: dict[int, int], reference: dict[int, int], tolerance: float = 0.05,
                 max_total: int | None = None) -> tuple[dict[int, int], float]:
    """Per-stratum (token count) quotas that follow the reference length distribution.

    Returns as many sentences as possible (at most `max_total`) whose length distribution stays
    within `tolerance` total-variation distance of the reference; with tolerance 0 the proportions
    are kept exactly and the scarcest length decides the size. Also returns the distance reached.
    When `max_total` binds, the quotas sum to exactly `max_total` if the tolerance allows (the
    sentences that rounding each quota down leaves over go to the strata furthest below their
    share). When no subset gets within the tolerance (a reference length the source lacks,
    or too few sentences for the proportions), the result keeps the reference proportions among
    the lengths the source has, sized by the scarcest, and the distance returned exceeds the
    tolerance: the caller decides what to do (derive_corpus warns and records it).
    """
    total_ref = sum(reference.values())
    shares = {s: c / total_ref for s, c in reference.items() if c}
    if not any(available.get(s, 0) for s in shares):
        return {}, 1.0
    cap = max_total if max_total is not None else sum(available.values())
    # exact proportions over the lengths that have sentences: the scarcest length decides n
    usable = {s: p for s, p in shares.items() if available.get(s, 0) > 0}
    norm = sum(usable.values())
    exact_n = min(available[s] / (p / norm) for s, p in usable.items()) / norm

    def largest(lo: float, hi: float, ok) -> float:
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if ok(mid) else (lo, mid)
        return lo

    size = lambda n: sum(_quotas_for(n, shares, available).values())
    if size(exact_n) > cap:
        # the cap binds before any stratum runs out: scale the exact proportions down, then fill
        # up to the cap what rounding down left (less than one sentence per stratum)
        n = largest(0.0, exact_n, lambda n: size(n) <= cap)
        quotas = _top_up(_quotas_for(n, shares, available), shares, available, cap, tolerance)
        return quotas, total_variation(quotas, shares)
    elif total_variation(_quotas_for(exact_n, shares, available), shares) > tolerance:
        n = exact_n
    else:
        # past exact_n strata run out and the distance grows: the largest n within tolerance and cap
        high = sum(available.get(s, 0) for s in shares) / min(shares.values())
        n = largest(exact_n, high, lambda n: size(n) <= cap and
                    total_variation(_quotas_for(n, shares, available), shares) <= tolerance)
    quotas = _quotas_for(n, shares, available)
    return quotas, total_variation(quotas, shares)


def reference_counts(reference_dir: str) -> dict[int, int]:
    """Sentences per token count (capped at LENGTH_STRATUM_CAP) of a built reference corpus."""
    return {int(k): v for k, v in read_json(Path(reference_dir) / "manifest.json")["length_counts"].items()}


def select_rows(index: pl.DataFrame, spec: dict, seed: int, reference: dict[int, int] | None) -> tuple[np.ndarray, dict]:
    """Which rows of the source (by global row number) form the corpus. `index` holds only
    row number, sentence id and token count of the corpus's language: 16 bytes per row.
    `reference`: the reference corpus's sentences per token count (match_lengths_of), or None.
    The plan summary (plan_summary.py) calls it too, to count a corpus before it is built."""
    info: dict = {"rows_read": index.height}
    frame = index.unique(subset="sentence_id", keep="first", maintain_order=True)
    info["duplicates_removed"] = index.height - frame.height
    lo, hi = spec.get("min_tokens"), spec.get("max_tokens")
    if lo is not None:
        frame = frame.filter(pl.col("n_tokens") >= lo)
    if hi is not None:
        frame = frame.filter(pl.col("n_tokens") <= hi)
    info["rows_in_token_range"] = frame.height
    if reference is not None:
        strata = frame["n_tokens"].clip(upper_bound=LENGTH_STRATUM_CAP)
        available = dict(zip(*np.unique(strata.to_numpy(), return_counts=True)))
        available = {int(k): int(v) for k, v in available.items()}
        tolerance = spec.get("length_match_tolerance", 0.05)
        quotas, distance = match_quotas(available, reference, tolerance, spec.get("max_sentences"))
        keyed = frame.with_columns(stratum=strata, key=pl.Series(sample_key(seed, frame["sentence_id"].to_numpy())))
        keyed = keyed.filter(pl.col("stratum").is_in(list(quotas)))
        keyed = keyed.with_columns(rank=pl.col("key").rank("ordinal").over("stratum"))
        quota_col = pl.col("stratum").replace_strict(quotas, return_dtype=pl.Int64)
        frame = keyed.filter(pl.col("rank") <= quota_col).drop("stratum", "key", "rank")
        info["length_matched_to"] = spec["match_lengths_of"]
        info["length_distribution_distance"] = round(distance, 6)  # total variation to the reference
        info["length_match_tolerance_met"] = bool(distance <= tolerance)
    cap = spec.get("max_sentences")
    if cap is not None and frame.height > cap:
        # a key of its own: reusing the stratum-sampling key would bias the cap towards strata
        # whose quota was a small share of what was available
        keys = sample_key(seed, frame["sentence_id"].to_numpy(), salt="cap")
        frame = frame[np.sort(np.argsort(keys, kind="stable")[:cap])]
    lengths = frame["n_tokens"].clip(upper_bound=LENGTH_STRATUM_CAP).value_counts()
    info["length_counts"] = {str(int(k)): int(v) for k, v in sorted(zip(lengths["n_tokens"], lengths["count"]))}
    info["buckets"] = bucket_counts(frame["n_tokens"].to_numpy())
    return np.sort(frame["row"].to_numpy()), info


def derive_corpus(spec: dict, corpus: str, source_dir: str, out_dir: str, seed: int,
                  shard_rows: int, reference_dir: str | None, log) -> dict:
    """Two passes over the source's shards: (1) row number, id and length of every sentence of
    the language decide which rows are kept; (2) the kept rows are copied shard by shard, in source
    order. Memory: 16 bytes per source row plus one shard, whatever the corpus size."""
    lang = spec["language"]
    files = sorted(Path(source_dir).glob("part-*.parquet"))
    with reading(files):  # an unreadable shard: an error naming it and rule ingest
        index = (
            pl.scan_parquet([str(f) for f in files]).with_row_index("row")
            .filter(pl.col("language") == lang)
            .select("row", "sentence_id", "n_tokens")
            .collect()
        ) if files else pl.DataFrame(schema={"row": pl.UInt32, "sentence_id": pl.UInt64, "n_tokens": pl.Int32})
    keep, info = select_rows(index, spec, seed, reference_counts(reference_dir) if reference_dir else None)
    del index
    if not info.get("length_match_tolerance_met", True):
        log.warning("%s: no subset of %s's sentences gets within length_match_tolerance %s of %s's length "
                    "distribution; kept the reference proportions among the lengths available: total "
                    "variation %s (manifest: length_match_tolerance_met false)", corpus, spec["source"],
                    spec.get("length_match_tolerance", 0.05), spec["match_lengths_of"],
                    info["length_distribution_distance"])
    log.info("%s: %d of %d %s sentences selected; copying them", corpus, len(keep), info["rows_read"], lang)
    with atomic_path(out_dir, is_dir=True) as tmp:
        shards: list[dict] = []
        pending: list[pl.DataFrame] = []

        def flush(force: bool = False) -> None:
            nonlocal pending
            frame = pl.concat(pending) if pending else None
            while frame is not None and (frame.height >= shard_rows or (force and frame.height)):
                part, frame = frame.head(shard_rows), frame.slice(shard_rows)
                name = f"part-{len(shards):05d}.parquet"
                part.write_parquet(tmp / name, compression="zstd")
                shards.append({"file": name, "rows": part.height})
            pending = [frame] if frame is not None and frame.height else []

        offset = 0
        for f in files:
            with reading(f):
                n = pq.ParquetFile(f).metadata.num_rows
            lo, hi = np.searchsorted(keep, [offset, offset + n])
            if hi > lo:
                local = pl.Series("row", (keep[lo:hi] - offset).astype(np.int64))
                with reading(f):
                    frame = (pl.read_parquet(f, columns=["sentence_id", "text", "n_tokens"]).with_row_index("row")
                             .filter(pl.col("row").is_in(local.implode())).drop("row"))
                frame = frame.with_columns(
                    language=pl.lit(lang),
                    text_key=pl.Series([text_key(t) for t in frame["text"]], dtype=pl.UInt64))
                pending.append(frame)
                flush()
            offset += n
        flush(force=True)
        if not shards:  # an empty corpus still has one (empty) shard, so readers need no special case
            empty = pl.DataFrame(schema={"sentence_id": pl.UInt64, "text": pl.String, "n_tokens": pl.Int32,
                                         "language": pl.String, "text_key": pl.UInt64})
            empty.write_parquet(tmp / "part-00000.parquet", compression="zstd")
            shards.append({"file": "part-00000.parquet", "rows": 0})
        manifest = {
            "corpus": corpus,
            "source": spec["source"],
            "language": lang,
            "rows": int(len(keep)),
            "token_range": [spec.get("min_tokens"), spec.get("max_tokens")],
            "max_sentences": spec.get("max_sentences"),
            "seed": seed,
            **info,
            "shards": shards,
        }
        write_json(tmp / "manifest.json", manifest)
    log.info("%s: %d sentences (%d read, %d duplicates, %d in token range) in %d shard(s)", corpus, len(keep),
             info["rows_read"], info["duplicates_removed"], info["rows_in_token_range"], len(shards))
    return manifest


def length_table(manifests: dict[str, dict]) -> pl.DataFrame:
    """Table 2 layout: percentage of sentences per token bucket, one column per corpus, with the
    number of sentences in the last row."""
    rows = {"tokens": BUCKET_LABELS + ["sentences"]}
    for corpus, m in manifests.items():
        total = m["rows"]
        pct = [round(100.0 * m["buckets"][b] / total, 2) if total else float("nan") for b in BUCKET_LABELS]
        rows[corpus] = [f"{p:.2f}%" for p in pct] + [str(total)]
    return pl.DataFrame(rows)


# ---- the jobs of rules/length_filter.smk (workflow_scripts/jobs.py) ----
def run_derive_corpus(job) -> None:
    derive_corpus(job.params.spec, job.wildcards.corpus, job.input.source, job.output[0], job.params.seed,
                  job.params.shard_rows, job.input.get("reference"), setup_logging(name="length_filter"))


def run_length_buckets(job) -> None:
    manifests = {read_json(Path(p) / "manifest.json")["corpus"]: read_json(Path(p) / "manifest.json")
                 for p in job.input}
    with atomic_path(job.output[0]) as tmp:
        length_table(manifests).write_csv(tmp)
    setup_logging(name="length_filter").info("length buckets for %d corpora -> %s", len(manifests), job.output[0])
