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

import hashlib
import itertools
import json
import random
import time
from collections import Counter, deque
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from workflow_scripts.common import SEP, atomic_path, read_json, setup_logging, text_key, write_json
from workflow_scripts.shards import read_parquet
from workflow_scripts.variants import INSERTION_KINDS, VARIANT_SCHEMA

TEXT_SCHEMA = pa.schema([("text_key", pa.uint64()), ("text", pa.string())])
UNCHECKED = object()  # perturb_corpus's expected_nltk where no plan is given (None means "none planned")


def insertion_variants(words: list[str], terms: list[str], x: int, rng: random.Random) -> list[tuple[int, str, str]]:
    """X single-insertion variants: (position, term, text), duplicates collapsed, in shuffled order.

    The candidates are (position i, term t) in the order i = 0..n-1, then t; index c stands for
    (c // len(terms), terms[c % len(terms)]), so shuffling the indices shuffles the candidates."""
    n_terms = len(terms)
    order = list(range(len(words) * n_terms))
    _shuffle(rng, order)
    seen: set[str] = set()
    out = []
    for c in order[:x]:
        pos, t = divmod(c, n_terms)
        term = terms[t]
        text = " ".join(words[:pos] + [term] + words[pos:])
        if text not in seen:
            seen.add(text)
            out.append((pos, term, text))
    return out


def _shuffle(rng: random.Random, x: list) -> None:
    """random.shuffle(x) as CPython 3.11-3.13 implements it (Fisher-Yates drawing each index
    with _randbelow_with_getrandbits): the same draws and the same order, without two Python
    calls per element (a third of the perturbation's time), and fixed here should a later Python
    change its shuffle. A test compares it with random.shuffle."""
    getrandbits = rng.getrandbits
    for i in range(len(x) - 1, 0, -1):
        n = i + 1
        k = n.bit_length()
        j = getrandbits(k)
        while j >= n:
            j = getrandbits(k)
        x[i], x[j] = x[j], x[i]


def variant_id(sentence_id: int, kind: str, position: int, term: str) -> int:
    """stable_id(sentence_id, kind, position, term), inlined (one per variant: the generic
    version's join over str() of each part cost as much as the variant itself)."""
    data = f"{sentence_id}{SEP}{kind}{SEP}{position}{SEP}{term}".encode("utf-8")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def sentence_rng(seed: int, sentence_id: int) -> random.Random:
    # str seeds are hashed with SHA-512 by random.seed: stable across processes and Python versions
    return random.Random(f"{seed}:{sentence_id}")


_MT_SEED = random.Random.__mro__[1].seed  # _random.Random.seed: the Mersenne Twister's init_by_array


def _reseed(rng: random.Random, seed: int, sentence_id: int) -> random.Random:
    """rng in the state of sentence_rng(seed, sentence_id): random.seed's version-2 handling of a
    str seed (the str's bytes followed by their SHA-512, as one integer) and the generator's own
    seeding, without making a Random per sentence. A test compares the states."""
    data = f"{seed}:{sentence_id}".encode()
    _MT_SEED(rng, int.from_bytes(data + hashlib.sha512(data).digest()))
    return rng


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
        """(original_id, variant_id, kind, position, term, text) per variant."""
        return list(zip(*self.columns(ids, texts, stats).values()))

    def columns(self, ids: list[int], texts: list[str], stats: Counter) -> dict[str, list]:
        """The variants as columns, per sentence: fuzz, negation, grammatical negation."""
        cols: dict[str, list] = {name: [] for name in VARIANT_SCHEMA.names[:6]}
        oid, vid, kinds, positions, terms_, vtexts = cols.values()
        grammatical = self.negator.negate_many(texts) if self.negator else [None] * len(texts)
        rng, x = random.Random(), self.x
        collapsed = [0, 0]
        insertion_kinds = list(enumerate(zip(INSERTION_KINDS, (self.fuzz_terms, self.neg_terms))))
        for sid, text, gram in zip(ids, texts, grammatical):
            words = text.split()
            _reseed(rng, self.seed, sid)
            for k, (kind, terms) in insertion_kinds:
                found = insertion_variants(words, terms, x, rng)
                collapsed[k] += min(x, len(words) * len(terms)) - len(found)
                for pos, term, vtext in found:
                    oid.append(sid)
                    vid.append(variant_id(sid, kind, pos, term))
                    kinds.append(kind)
                    positions.append(pos)
                    terms_.append(term)
                    vtexts.append(vtext)
            if gram is not None:
                gtext, reason, pos = gram
                stats[f"grammatical_negation_{reason}"] += 1
                if gtext is not None:
                    oid.append(sid)
                    vid.append(variant_id(sid, "grammatical_negation", pos, "not"))
                    kinds.append("grammatical_negation")
                    positions.append(pos)
                    terms_.append("not")
                    vtexts.append(gtext)
        for kind, n in zip(INSERTION_KINDS, collapsed):
            stats[f"{kind}_collapsed"] += n
        return cols


_WORKER_STATE: dict = {}


def _negation_settings(settings: dict, language: str) -> dict | None:
    """The grammatical negation's settings where it applies to the language, else None."""
    grammatical = settings.get("grammatical_negation", {})
    if grammatical.get("enabled", True) and language in grammatical.get("languages", ["en"]):
        return grammatical
    return None


def _init_worker(settings: dict, language: str, seed: int, partitions: int) -> None:
    negator = None
    grammatical = _negation_settings(settings, language)
    if grammatical is not None:
        from workflow_scripts.csc.negation import GrammaticalNegator
        negator = GrammaticalNegator(use_tagger=grammatical.get("use_tagger", True))
    _WORKER_STATE.update(perturber=Perturber(settings, language, seed, negator), partitions=partitions)


BATCH = 10_000  # sentences whose variants are Python objects at once; a shard's live as Arrow arrays


def _shard_outputs(path: Path) -> tuple[pa.Table, pl.DataFrame, Counter, dict | None]:
    """Variants of one corpus shard, its unique texts to embed (originals, then variants; with
    their partition), outcome counts, and what the grammatical negation ran with (None: none)."""
    perturber, partitions = _WORKER_STATE["perturber"], _WORKER_STATE["partitions"]
    stats: Counter = Counter()
    frame = read_parquet(path, columns=["sentence_id", "text", "text_key"])  # unreadable: names the shard
    ids, texts, keys = frame["sentence_id"].to_list(), frame["text"].to_list(), frame["text_key"].to_list()
    key_of = dict(zip(ids, keys))
    arrays: dict[str, list] = {f.name: [] for f in VARIANT_SCHEMA}
    frames = [frame.select("text_key", "text")]
    del frame
    for lo in range(0, len(ids), BATCH):
        cols = perturber.columns(ids[lo:lo + BATCH], texts[lo:lo + BATCH], stats)
        cols["original_key"] = [key_of[s] for s in cols["original_id"]]
        cols["text_key"] = [text_key(t) for t in cols["text"]]
        for f in VARIANT_SCHEMA:
            arrays[f.name].append(pa.array(cols[f.name], type=f.type))
        frames.append(pl.DataFrame({"text_key": pl.Series(cols["text_key"], dtype=pl.UInt64), "text": cols["text"]}))
        del cols
    del ids, texts, keys, key_of
    # one contiguous array per column and one chunk of texts, as when built from whole lists, so
    # the files written are the same bytes
    table = pa.Table.from_arrays([pa.concat_arrays(arrays.pop(f.name)) if arrays[f.name] else pa.array([], f.type)
                                  for f in VARIANT_SCHEMA], schema=VARIANT_SCHEMA)
    texts_frame = pl.concat(frames, rechunk=True).unique(subset="text_key", keep="first", maintain_order=True)
    del frames
    texts_frame = texts_frame.with_columns(part=(pl.col("text_key") % partitions))
    negator = perturber.negator
    info = None if negator is None else {
        "tagger": negator.has_tagger, "nltk": negator.fingerprint, "missing": negator.missing,
        "error": negator.tagger_error}
    return table, texts_frame, stats, info


def _perturb_shard(task: tuple[Path, str, int]) -> dict:
    """Perturb corpus shard `index` and write its variants file into `out_dir` and its texts per
    partition as pieces beside it: only counts go back to the writing process, not the shard's
    rows (pickling them through a pipe cost time and a copy of each shard in both processes)."""
    path, out_dir, index = task
    table, texts_frame, stats, info = _shard_outputs(path)
    name = f"part-{index:05d}.parquet"
    pq.write_table(table, Path(out_dir) / name, compression="zstd")
    kinds = {v["values"]: v["counts"] for v in table.column("kind").value_counts().to_pylist()}
    rows = table.num_rows
    del table
    pieces = []
    for (part,), group in texts_frame.group_by("part"):
        piece = Path(out_dir) / f".texts-{index:05d}-{part}.parquet"
        pq.write_table(group.drop("part").to_arrow().cast(TEXT_SCHEMA), piece, compression="none")
        pieces.append((int(part), str(piece)))
    return {"file": name, "rows": rows, "kinds": kinds, "stats": stats, "negation": info, "pieces": sorted(pieces)}


def _in_order(pool, fn, items: list, ahead: int):
    """fn over items in worker processes, results in order, at most `ahead` shards submitted
    and not yet taken: pool.imap queues every finished result, so workers that outrun the
    writer would pile whole shards up in this process."""
    items_left = iter(items)
    pending = deque(pool.apply_async(fn, (item,)) for item in itertools.islice(items_left, ahead))
    while pending:
        result = pending.popleft().get()
        for item in itertools.islice(items_left, 1):  # keep the freed worker busy while we write
            pending.append(pool.apply_async(fn, (item,)))
        yield result


def _check_negation(info: dict, expected, use_tagger: bool, log) -> None:
    """Log what the grammatical negation runs with; refuse to go on if it is not what the
    workflow planned with (then its rerun decision and the outputs' provenance would be wrong)."""
    from workflow_scripts.csc.tagger import NLTK_DATA_HINT
    log.info("grammatical negation on, %s the tagger: %s", "with" if info["tagger"] else "without",
             json.dumps(info["nltk"], sort_keys=True))
    if use_tagger and info["missing"]:
        log.warning("grammatical negation: use_tagger is true but NLTK data is missing (%s; %s): sentences "
                    "that need tags are counted as needs_tagger, not negated. To negate them, %s",
                    ", ".join(info["missing"]), info["error"], NLTK_DATA_HINT)
    elif info["error"]:
        log.warning("grammatical negation: %s", info["error"])
    if expected is not UNCHECKED and expected != info["nltk"]:
        raise RuntimeError(
            f"the grammatical negation would run with {json.dumps(info['nltk'], sort_keys=True)}, but the "
            f"workflow planned with {json.dumps(expected, sort_keys=True)} (NLTK_DATA, HOME or Python environment "
            "differ between Snakemake and this job): run both with the same environment")


def perturb_corpus(corpus_dir: str, settings: dict, seed: int, partitions: int,
                   out_variants: str, out_texts: list[str], report_path: str, log, workers: int = 1,
                   expected_nltk=UNCHECKED) -> dict:
    """Shard by shard; with workers > 1, worker processes perturb shards while this one writes
    them in order (the output does not depend on the number of workers). expected_nltk: what
    negation.grammatical_negation_plan gave the workflow (None: no grammatical negation
    planned), checked unless UNCHECKED."""
    manifest = read_json(Path(corpus_dir) / "manifest.json")
    language = manifest["language"]
    # the term lists for the report, and an early error for a language without terms
    perturber = Perturber(settings, language, seed)
    grammatical = _negation_settings(settings, language)
    stats: Counter = Counter()
    counts = Counter()
    if len(out_texts) != partitions:
        raise ValueError(f"expected {partitions} text partition outputs, got {len(out_texts)}")
    if expected_nltk is not UNCHECKED and grammatical is None and expected_nltk is not None:
        raise RuntimeError(f"planned grammatical negation ({json.dumps(expected_nltk, sort_keys=True)}) "
                           f"for {language!r}, which gets none")
    paths = [Path(corpus_dir) / shard["file"] for shard in manifest["shards"]]
    workers = max(1, min(workers, len(paths)))
    pool = None
    if workers > 1:
        import multiprocessing
        # spawned, not forked: polars' thread pool does not survive a fork
        pool = multiprocessing.get_context("spawn").Pool(workers, _init_worker,
                                                         (settings, language, seed, partitions))
        results = lambda vdir: _in_order(pool, _perturb_shard, [(p, vdir, i) for i, p in enumerate(paths)], workers)
    else:  # the tagger is loaded where the shards are perturbed: here, or only in the workers
        _init_worker(settings, language, seed, partitions)
        results = lambda vdir: map(_perturb_shard, [(p, vdir, i) for i, p in enumerate(paths)])
    started = time.perf_counter()
    with atomic_path(out_variants, is_dir=True) as vdir:
        tmp_texts = [Path(vdir) / f".texts-{p}.parquet" for p in range(partitions)]
        text_writers = [pq.ParquetWriter(t, TEXT_SCHEMA, compression="zstd") for t in tmp_texts]
        shards = []
        sentences = 0
        negation = None
        try:
            for i, result in enumerate(results(str(vdir))):
                info = result["negation"]
                if info is not None and info != negation:  # every worker's, logged and checked once
                    _check_negation(info, expected_nltk, grammatical.get("use_tagger", True), log)
                    negation = info
                shards.append({"file": result["file"], "rows": result["rows"]})
                counts.update(result["kinds"])
                stats.update(result["stats"])
                for part, piece in result["pieces"]:  # texts in shard order, one partition file each
                    text_writers[part].write_table(pq.read_table(piece).cast(TEXT_SCHEMA))
                    Path(piece).unlink()
                sentences += manifest["shards"][i]["rows"]
                rate = sentences / max(time.perf_counter() - started, 1e-9)
                log.info("%s shard %d/%d: %d variants; %d/%d sentences (%.0f/s, %.0f s left)", manifest["corpus"],
                         i + 1, len(paths), result["rows"], sentences, manifest["rows"], rate,
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
                {"tagger": negation["tagger"],
                 "nltk": negation["nltk"],  # what decided the outputs: see negation.nltk_resources
                 "missing_nltk_data": negation["missing"],
                 "outcomes": {k.removeprefix("grammatical_negation_"): v for k, v in sorted(stats.items())
                              if k.startswith("grammatical_negation_")}}
                if negation is not None else None),
            "seed": seed,
            "shards": shards,
        }
        write_json(Path(vdir) / "manifest.json", report)
    write_json(report_path, report)
    return report


# ---- the jobs of rules/csc.smk (workflow_scripts/jobs.py) ----
def run_perturb(job) -> None:
    perturb_corpus(job.input[0], job.params.settings, job.params.seed, job.params.partitions,
                   job.output.variants, list(job.output.texts), job.output.report, setup_logging(name="perturb"),
                   job.threads, job.params.nltk)
