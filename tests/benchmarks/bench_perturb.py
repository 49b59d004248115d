"""Perturbation speed, old vs new, on real English sentences; and its peak memory at scale.

Usage: python tests/benchmarks/bench_perturb.py [--sentences 20000] [--old-commit 8ae3e96 (or any later)]
       python tests/benchmarks/bench_perturb.py --scale 400000 [--shard-rows 100000] [--workers 2]

Default mode: the English side of ../shared/data/en_nl_parallel (4,008 unique sentences), topped up
to --sentences with sentences spliced from two real ones as make_paracrawl_like.py builds them. Runs
the grammatical negation alone and a whole shard's perturbation (`_perturb_shard`: variants, ids,
text keys, frames), each in a fresh process, for the code of --old-commit (whole-sentence tagging,
before this change) and for the working tree, and prints sentences/s side by side, the ratio, each
process's peak RSS, and whether the outputs are identical (they must be).

--scale: the working tree's perturb_corpus over a corpus of that many sentences with --workers
processes, printing wall time and the peak RSS of the whole process tree (sampled every 0.1 s),
to check that memory follows the shard size, not the corpus size. Needs NLTK_DATA (`make` sets it).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_paracrawl_like import SHARED, real_pairs, template_weights  # noqa: E402

SETTINGS = {"variants_per_sentence": 3, "fuzz_terms": {"en": ["a", "the"]}, "negation_terms": {"en": ["not"]},
            "grammatical_negation": {"enabled": True, "languages": ["en"], "use_tagger": True}}


def english(n: int, seed: int = 7) -> list[str]:
    pairs = real_pairs(SHARED)
    real = sorted({" ".join(en) for en, _ in pairs})
    out = real[:n]
    m = n - len(out)
    if m > 0:  # spliced like make_paracrawl_like.py: a real template's start, a real donor's end
        rng = np.random.default_rng(seed)
        template = rng.choice(len(pairs), size=m, p=template_weights(pairs))
        donor, keep = rng.integers(0, len(pairs), size=m), rng.random(m)
        for i in range(m):
            t, d = pairs[template[i]][0], pairs[donor[i]][0]
            k = max(1, int(round(keep[i] * len(t))))
            rest = len(t) - k
            tail = d[len(d) - rest:] if 0 < rest <= len(d) else (d * (rest // len(d) + 1))[:rest] if rest else []
            out.append(" ".join(t[:k] + tail))
    return out


def write_shard(path: Path, sentences: list[str], first_id: int = 1) -> None:
    import polars as pl

    from workflow_scripts.common import text_key
    pl.DataFrame({"sentence_id": pl.Series(range(first_id, first_id + len(sentences)), dtype=pl.UInt64),
                  "text": sentences,
                  "text_key": pl.Series([text_key(t) for t in sentences], dtype=pl.UInt64)}).write_parquet(path)


def _module_from_commit(commit: str, rel: str, name: str):
    """A module of the repository as it was at `commit`, importable beside today's."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{rel}"], capture_output=True, text=True,
                            check=True).stdout
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    exec(compile(source, f"{commit}:{rel}", "exec"), module.__dict__)
    return module


def _exists_at(commit: str, rel: str) -> bool:
    return subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}:{rel}"], capture_output=True).returncode == 0


def measure(which: str, commit: str, shard: str) -> dict:
    """In this (fresh) process: load `which` code, time negation and a whole shard."""
    import polars as pl
    sentences = pl.read_parquet(shard)["text"].to_list()
    if which == "old":  # the modules moved into workflow_scripts/csc/ after 8ae3e96
        folder = "workflow_scripts/csc" if _exists_at(commit, "workflow_scripts/csc/negation.py") else "workflow_scripts"
        negation = _module_from_commit(commit, f"{folder}/negation.py", "old_negation")
        perturb = _module_from_commit(commit, f"{folder}/perturb.py", "old_perturb")
    else:
        from workflow_scripts.csc import negation, perturb
    started = time.perf_counter()
    negator = negation.GrammaticalNegator(use_tagger=True)
    load_s = time.perf_counter() - started
    assert negator.has_tagger, f"no tagger: {negator.tagger_error} (set NLTK_DATA)"
    started = time.perf_counter()
    results = negator.negate_many(sentences)
    negation_s = time.perf_counter() - started
    # the shard as a worker perturbs it (the negator is the one loaded above)
    perturb._WORKER_STATE.update(perturber=perturb.Perturber(SETTINGS, "en", 13, negator), partitions=2)
    started = time.perf_counter()
    # the shard's outputs as computed in a worker (_shard_outputs here; the old code's _perturb_shard)
    table, texts, stats, _ = getattr(perturb, "_shard_outputs", perturb._perturb_shard)(Path(shard))
    shard_s = time.perf_counter() - started
    digest = hashlib.blake2b(repr(results).encode(), digest_size=8).hexdigest()
    sink = Path(tempfile.mkdtemp()) / "t.parquet"  # outputs compared as written
    import pyarrow.parquet as pq
    pq.write_table(table, sink, compression="zstd")
    texts.write_parquet(sink.with_name("x.parquet"), compression="zstd")
    files = hashlib.blake2b(sink.read_bytes() + sink.with_name("x.parquet").read_bytes(), digest_size=8).hexdigest()
    return {"sentences": len(sentences), "load_s": load_s, "negation_per_s": len(sentences) / negation_s,
            "shard_per_s": len(sentences) / shard_s, "negation_digest": digest, "shard_digest": files,
            "variants": table.num_rows, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def compare(args) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-perturb-"))
    shard = work / "shard.parquet"
    write_shard(shard, english(args.sentences))
    rows = {}
    for which in ("old", "new"):
        out = subprocess.run([sys.executable, __file__, "--measure", which, "--old-commit", args.old_commit,
                              "--shard", str(shard)], capture_output=True, text=True)
        if out.returncode:
            sys.exit(out.stderr)
        rows[which] = json.loads(out.stdout.strip().splitlines()[-1])
    old, new = rows["old"], rows["new"]
    print(f"{args.sentences} English sentences (real + spliced), one process each, "
          f"old = {args.old_commit}, new = working tree")
    print(f"{'':24}{'old':>12}{'new':>12}{'new/old':>10}")
    for key, label in (("negation_per_s", "negation sentences/s"), ("shard_per_s", "shard sentences/s")):
        print(f"{label:24}{old[key]:12.0f}{new[key]:12.0f}{new[key] / old[key]:10.2f}")
    print(f"{'tagger+data load s':24}{old['load_s']:12.1f}{new['load_s']:12.1f}")
    print(f"{'peak RSS MB':24}{old['peak_rss_mb']:12.0f}{new['peak_rss_mb']:12.0f}")
    same = old["negation_digest"] == new["negation_digest"] and old["shard_digest"] == new["shard_digest"]
    print(f"outputs identical (negations, variant and text files): {'yes' if same else 'NO'}")
    if not same:
        sys.exit(1)


def scale(args) -> None:
    """perturb_corpus at scale with worker processes; peak RSS of the process tree."""
    import logging
    import threading

    import psutil

    from workflow_scripts.csc.perturb import perturb_corpus
    work = Path(tempfile.mkdtemp(prefix="bench-perturb-scale-"))
    corpus = work / "corpus"
    corpus.mkdir()
    base = english(min(args.scale, 40000))
    shards, row = [], 1
    for k, lo in enumerate(range(0, args.scale, args.shard_rows)):
        chunk = [base[(lo + i) % len(base)] for i in range(min(args.shard_rows, args.scale - lo))]
        write_shard(corpus / f"part-{k:05d}.parquet", chunk, row)
        shards.append({"file": f"part-{k:05d}.parquet", "rows": len(chunk)})
        row += len(chunk)
    (corpus / "manifest.json").write_text(json.dumps({"corpus": "bench", "language": "en", "rows": args.scale,
                                                      "shards": shards}))
    me, peak, done = psutil.Process(), [0], threading.Event()

    def sample():
        while not done.is_set():
            try:
                tree = [me] + me.children(recursive=True)
                peak[0] = max(peak[0], sum(p.memory_info().rss for p in tree))
            except psutil.Error:
                pass
            time.sleep(0.1)

    threading.Thread(target=sample, daemon=True).start()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    started = time.perf_counter()
    out = work / "out"
    perturb_corpus(str(corpus), SETTINGS, 13, 2, str(out / "variants"), [str(out / f"t{p}") for p in range(2)],
                   str(out / "report.json"), logging.getLogger("bench"), workers=args.workers)
    wall = time.perf_counter() - started
    done.set()
    print(f"{args.scale} sentences, {len(shards)} shards of {args.shard_rows}, {args.workers} workers: "
          f"{wall:.0f} s wall, {args.scale / wall:.0f} sentences/s, peak RSS of the process tree "
          f"{peak[0] / 2 ** 20:.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", type=int, default=20000)
    ap.add_argument("--old-commit", default="8ae3e96", help="the code before tagging only what is needed")
    ap.add_argument("--scale", type=int, help="sentences for the memory-at-scale run (working tree only)")
    ap.add_argument("--shard-rows", type=int, default=100000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--measure", choices=("old", "new"), help=argparse.SUPPRESS)
    ap.add_argument("--shard", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not os.environ.get("NLTK_DATA") and (SHARED.parent / "nltk_data").is_dir():
        os.environ["NLTK_DATA"] = str(SHARED.parent / "nltk_data")
    if args.measure:
        print(json.dumps(measure(args.measure, args.old_commit, args.shard)))
    elif args.scale:
        scale(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
