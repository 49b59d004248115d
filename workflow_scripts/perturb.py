"""Stage 3, perturb: fuzzing and negation by single-term insertion (methods.md §1), plus the
English grammatical negation as a third condition.

For a sentence of n whitespace words the candidates are every (position, term) with position
"before word i", i = 0..n-1, in a fixed order; a random.Random seeded by (config seed, sentence id)
shuffles them and the first X become X variants, each with one inserted term. Duplicate variant
texts collapse. Output shards hold (original_id, variant_id, kind, position, term, text) plus the
text keys the vector stores are indexed by; the texts to embed (originals and variants) are written
hash-partitioned so that every embedding job reads only its partition.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from workflow_scripts.common import atomic_path, read_json, setup_logging, stable_id, text_key, write_json

KINDS = ("fuzz", "negation", "grammatical_negation")
VARIANT_SCHEMA = pa.schema([
    ("original_id", pa.uint64()),
    ("variant_id", pa.uint64()),
    ("kind", pa.string()),
    ("position", pa.int32()),
    ("term", pa.string()),
    ("text", pa.string()),
    ("original_key", pa.uint64()),
    ("text_key", pa.uint64()),
])
TEXT_SCHEMA = pa.schema([("text_key", pa.uint64()), ("text", pa.string())])


def insertion_variants(words: list[str], terms: list[str], x: int, rng: random.Random) -> list[tuple[int, str, str]]:
    """X single-insertion variants: (position, term, text), duplicates collapsed, in shuffled order."""
    candidates = [(i, t) for i in range(len(words)) for t in terms]
    rng.shuffle(candidates)
    seen: set[str] = set()
    out = []
    for pos, term in candidates[:x]:
        text = " ".join(words[:pos] + [term] + words[pos:])
        if text not in seen:
            seen.add(text)
            out.append((pos, term, text))
    return out


def sentence_rng(seed: int, sentence_id: int) -> random.Random:
    # str seeds are hashed with SHA-512 by random.seed: stable across processes and Python versions
    return random.Random(f"{seed}:{sentence_id}")


class Perturber:
    def __init__(self, settings: dict, language: str, seed: int, negator=None):
        self.x = settings["variants_per_sentence"]
        self.fuzz_terms = settings["fuzz_terms"].get(language)
        self.neg_terms = settings["negation_terms"].get(language)
        if not self.fuzz_terms or not self.neg_terms:
            raise ValueError(f"perturb.fuzz_terms / perturb.negation_terms have no terms for language {language!r}")
        self.seed = seed
        self.negator = negator

    def variants(self, ids: list[int], texts: list[str], stats: Counter) -> list[tuple]:
        rows = []
        grammatical = self.negator.negate_many(texts) if self.negator else [None] * len(texts)
        for sid, text, gram in zip(ids, texts, grammatical):
            words = text.split()
            rng = sentence_rng(self.seed, sid)
            for kind, terms in (("fuzz", self.fuzz_terms), ("negation", self.neg_terms)):
                found = insertion_variants(words, terms, self.x, rng)
                stats[f"{kind}_collapsed"] += min(self.x, len(words) * len(terms)) - len(found)
                for pos, term, vtext in found:
                    rows.append((sid, stable_id(sid, kind, pos, term), kind, pos, term, vtext))
            if gram is not None:
                gtext, reason, pos = gram
                stats[f"grammatical_negation_{reason}"] += 1
                if gtext is not None:
                    rows.append((sid, stable_id(sid, "grammatical_negation", pos, "not"),
                                 "grammatical_negation", pos, "not", gtext))
        return rows


_WORKER_STATE: dict = {}


def _init_worker(settings: dict, language: str, seed: int, partitions: int) -> None:
    negator = None
    grammatical = settings.get("grammatical_negation", {})
    if grammatical.get("enabled", True) and language in grammatical.get("languages", ["en"]):
        from workflow_scripts.negation import GrammaticalNegator
        negator = GrammaticalNegator(use_tagger=grammatical.get("use_tagger", True))
    _WORKER_STATE.update(perturber=Perturber(settings, language, seed, negator), partitions=partitions)


def _perturb_shard(path: Path) -> tuple[pa.Table, pl.DataFrame, Counter, bool | None]:
    """Variants of one corpus shard, its unique texts to embed (originals and variants), outcome
    counts, and whether the grammatical negation had its tagger (None: no grammatical negation)."""
    perturber, partitions = _WORKER_STATE["perturber"], _WORKER_STATE["partitions"]
    stats: Counter = Counter()
    frame = pl.read_parquet(path, columns=["sentence_id", "text", "text_key"])
    ids, texts = frame["sentence_id"].to_list(), frame["text"].to_list()
    rows = perturber.variants(ids, texts, stats)
    key_of = dict(zip(ids, frame["text_key"].to_list()))
    cols = list(zip(*rows)) if rows else [[] for _ in range(6)]
    vkeys = [text_key(t) for t in cols[5]]
    table = pa.Table.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip([*cols, [key_of[s] for s in cols[0]], vkeys], VARIANT_SCHEMA)],
        schema=VARIANT_SCHEMA)
    texts_frame = pl.DataFrame({
        "text_key": pl.Series(frame["text_key"].to_list() + vkeys, dtype=pl.UInt64),
        "text": texts + list(cols[5]),
    }).unique(subset="text_key", keep="first", maintain_order=True)
    texts_frame = texts_frame.with_columns(part=(pl.col("text_key") % partitions))
    negator = perturber.negator
    return table, texts_frame, stats, (negator.has_tagger if negator else None)


def perturb_corpus(corpus_dir: str, settings: dict, seed: int, partitions: int,
                   out_variants: str, out_texts: list[str], report_path: str, log, workers: int = 1) -> dict:
    """Shard by shard; with workers > 1, worker processes perturb shards while this one writes
    them in order (the output does not depend on the number of workers)."""
    manifest = read_json(Path(corpus_dir) / "manifest.json")
    language = manifest["language"]
    # the term lists for the report, and an early error for a language without terms
    perturber = Perturber(settings, language, seed)
    stats: Counter = Counter()
    counts = Counter()
    if len(out_texts) != partitions:
        raise ValueError(f"expected {partitions} text partition outputs, got {len(out_texts)}")
    paths = [Path(corpus_dir) / shard["file"] for shard in manifest["shards"]]
    workers = max(1, min(workers, len(paths)))
    pool = None
    if workers > 1:
        import multiprocessing
        # spawned, not forked: polars' thread pool does not survive a fork
        pool = multiprocessing.get_context("spawn").Pool(workers, _init_worker,
                                                         (settings, language, seed, partitions))
        results = pool.imap(_perturb_shard, paths)
    else:  # the tagger is loaded where the shards are perturbed: here, or only in the workers
        _init_worker(settings, language, seed, partitions)
        results = map(_perturb_shard, paths)
    started = time.perf_counter()
    with atomic_path(out_variants, is_dir=True) as vdir:
        tmp_texts = [Path(vdir) / f".texts-{p}.parquet" for p in range(partitions)]
        text_writers = [pq.ParquetWriter(t, TEXT_SCHEMA, compression="zstd") for t in tmp_texts]
        shards = []
        sentences = 0
        tagger = None
        try:
            for i, (table, texts_frame, shard_stats, tagger) in enumerate(results):
                if i == 0 and tagger is not None:
                    log.info("grammatical negation on (%s tagger)", "with" if tagger else "without")
                name = f"part-{i:05d}.parquet"
                pq.write_table(table, Path(vdir) / name, compression="zstd")
                shards.append({"file": name, "rows": table.num_rows})
                counts.update({v["values"]: v["counts"] for v in table.column("kind").value_counts().to_pylist()})
                stats.update(shard_stats)
                for p, group in texts_frame.group_by("part"):
                    text_writers[p[0]].write_table(group.drop("part").to_arrow().cast(TEXT_SCHEMA))
                sentences += manifest["shards"][i]["rows"]
                rate = sentences / max(time.perf_counter() - started, 1e-9)
                log.info("%s shard %d/%d: %d variants; %d/%d sentences (%.0f/s, %.0f s left)", manifest["corpus"],
                         i + 1, len(paths), table.num_rows, sentences, manifest["rows"], rate,
                         (manifest["rows"] - sentences) / max(rate, 1e-9))
        finally:
            if pool is not None:
                pool.terminate()
        for w in text_writers:
            w.close()
        for tmp, final in zip(tmp_texts, out_texts):
            with atomic_path(final) as dest:
                tmp.replace(dest)
        report = {
            "corpus": manifest["corpus"],
            "language": language,
            "sentences": manifest["rows"],
            "variants": dict(counts),
            "variants_per_sentence": settings["variants_per_sentence"],
            "fuzz_terms": perturber.fuzz_terms,
            "negation_terms": perturber.neg_terms,
            "duplicates_collapsed": {k: stats[f"{k}_collapsed"] for k in ("fuzz", "negation")},
            "grammatical_negation": (
                {"tagger": tagger,
                 "outcomes": {k.removeprefix("grammatical_negation_"): v for k, v in sorted(stats.items())
                              if k.startswith("grammatical_negation_")}}
                if tagger is not None else None),
            "seed": seed,
            "shards": shards,
        }
        write_json(Path(vdir) / "manifest.json", report)
    write_json(report_path, report)
    return report


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus-dir", required=True)
    ap.add_argument("--settings", required=True, help="the config's perturb section as JSON")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--partitions", type=int, required=True)
    ap.add_argument("--out-variants", required=True)
    ap.add_argument("--out-texts", nargs="+", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--workers", type=int, default=1, help="processes perturbing shards in parallel")
    ap.add_argument("--log")
    args = ap.parse_args(argv)
    log = setup_logging(args.log, "perturb")
    perturb_corpus(args.corpus_dir, json.loads(args.settings), args.seed, args.partitions,
                   args.out_variants, args.out_texts, args.report, log, args.workers)


if __name__ == "__main__":
    main(sys.argv[1:])
