"""The paired bootstrap (issue 26) next to the one it replaced, side by side in one run: seconds and
peak memory of the largest default bootstrap tables, and their ratios (paired / old).

csc       the overlap bootstrap of `csc_score` (config.yaml: bootstrap_b 200, bootstrap_groups 1000)
          on a synthetic similarities file (--similarities, default 1e6; 3 fuzzed + 3 negated per
          sentence), twice: similarities of the usual spread, and narrow ones (sd 0.001) with two
          outlying sentences, whose fine grid is too large for one histogram per group -- the old
          code merged groups there (depending on the model), the paired code builds the groups
          block by block (one more pass over the file per block). The paired side includes
          writing replicates.parquet.
montague  the shares and two-way bootstrap of `montague_score` on the published word lists of
          resources/montague/study_published.yaml (61 adjectives, 12 nouns: 44,652 phrases,
          241,560 pair comparisons; B = 1000, nouns_and_adjectives) from random phrase vectors; the paired side includes collecting
          and writing the replicates.

"old" is the code before issue 26, loaded from git (--old-ref, default the commit the paired
bootstrap was built on). Each side runs --repeats times, alternating which goes first; the fastest
time and the largest peak are shown. Peak memory: tracemalloc's peak (numpy arrays and Python
objects; not polars/pyarrow buffers).

Usage: python tests/benchmarks/bench_paired_bootstrap.py [csc|montague|all] [--similarities 1e6]
           [--old-ref 8e225ad] [--repeats 3]
"""
import argparse
import importlib.util
import logging
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workflow_scripts.bootstrap import write_replicates  # noqa: E402

LOG = logging.getLogger("bench")
OLD_REF = "8e225adcb45584aa62361611204ea32b47b65319"  # main before the paired bootstrap (issue 26)


def old_module(module: str, ref: str, tmp: Path):
    """A module as it was at `ref`, importable beside the current package."""
    rel = module.replace(".", "/") + ".py"
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:{rel}"], check=True, capture_output=True,
                            text=True).stdout
    path = tmp / f"old_{module.replace('.', '_')}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def measure(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    t0 = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return out, seconds, peak


def report(label: str, old: tuple, new: tuple) -> None:
    (_, s_old, m_old), (_, s_new, m_new) = old, new
    print(f"{label:<34} {s_old:8.2f} {s_new:8.2f} {s_new / s_old:6.2f}x {m_old:9.1f} {m_new:9.1f} {m_new / m_old:6.2f}x")


def header() -> None:
    print(f"{'table':<34} {'old s':>8} {'paired s':>8} {'ratio':>7} {'old MiB':>9} {'pair MiB':>9} {'ratio':>7}")


def write_similarities(path: Path, similarities: int, sd: float, gap: float, outliers: int, rng) -> None:
    """3 fuzzed and 3 negated similarities per sentence (a sentence effect and a variant effect of
    sd each); the first `outliers` sentences' similarities at 0.3 (a wide range that replicates
    without them must still cover, with their own narrow bandwidths: a large fine grid)."""
    originals = similarities // 6
    ids = rng.integers(1, 2**63, originals, dtype=np.uint64)
    rows = []
    for kind, mean in (("fuzz", 0.9), ("negation", 0.9 - gap)):
        effect = rng.normal(0.0, sd, originals)
        sims = np.clip(mean + effect[:, None] + rng.normal(0.0, sd, (originals, 3)), -1, 1)
        sims[:outliers] = 0.3
        rows.append(pa.table({"original_id": np.repeat(ids, 3), "variant_id": np.arange(sims.size, dtype=np.uint64),
                              "kind": pa.array([kind] * sims.size, pa.string()), "similarity": sims.ravel()}))
    pq.write_table(pa.concat_tables(rows), path)


def side_by_side(old_fn, new_fn, repeats: int):
    """Each `repeats` times, alternating which goes first: (result, fastest seconds, largest peak)."""
    runs = {"old": [], "new": []}
    for r in range(repeats):
        for name in (("old", "new") if r % 2 == 0 else ("new", "old")):
            runs[name].append(measure(old_fn if name == "old" else new_fn))
    return [(rs[0][0], min(x[1] for x in rs), max(x[2] for x in rs)) for rs in (runs["old"], runs["new"])]


def bench_csc(similarities: int, ref: str, tmp: Path, repeats: int) -> None:
    from workflow_scripts.bootstrap import replicate_rows
    from workflow_scripts.csc import curves as new
    old = old_module("workflow_scripts.csc.curves", ref, tmp)
    rng = np.random.default_rng(0)
    cases = (("usual spread (sd 0.03)", 0.03, 0.05, 0),
             ("narrow + 2 outliers: blocks", 0.001, 0.002, 2))
    for label, sd, gap, outliers in cases:
        path = tmp / "similarities.parquet"
        write_similarities(path, similarities, sd, gap, outliers, rng)
        settings = dict(exact_max_n=20000, bootstrap_b=200, bootstrap_groups=1000, seed=13)

        def paired():
            reps: dict = {}
            rows, _, details = new.analyse(path, "c", "m", LOG, replicates_out=reps, **settings)
            write_replicates(tmp / "replicates.parquet", [replicate_rows("csc", "c", f"{c}/overlap", "m", v, r)
                                                          for c, (v, r) in reps.items()])
            return rows, details

        a, b = side_by_side(lambda: new_rows(old.analyse(path, "c", "m", LOG, **settings)), paired, repeats)
        report(f"csc {similarities:.0e} sims, {label}", a, b)
        (ra, da), (rb, db) = a[0], b[0]
        print(f"    overlap old {ra[0]['overlap']:.4f} [{ra[0]['overlap_ci_low']:.4f}, {ra[0]['overlap_ci_high']:.4f}] "
              f"({da['bootstrap']['groups']} groups), paired {rb[0]['overlap']:.4f} [{rb[0]['overlap_ci_low']:.4f}, "
              f"{rb[0]['overlap_ci_high']:.4f}] ({db['bootstrap']['groups']} groups)")


def new_rows(result):
    rows, _, details = result
    return rows, details


def bench_montague(ref: str, tmp: Path, repeats: int) -> None:
    import yaml

    from workflow_scripts.montague import scores as new
    from workflow_scripts.montague.phrases import build_word_lists, generate_phrases, strings_to_embed
    from workflow_scripts.texts import text_keys
    from workflow_scripts.vector_store import VectorStore, spec_digest, write_partition
    old = old_module("workflow_scripts.montague.scores", ref, tmp)
    study = ROOT / "resources" / "montague" / "study_published.yaml"  # the published lists
    lists = yaml.safe_load(study.read_text())["montague"]["datasets"]["modifiers_en"]
    words = build_word_lists(lists["adjectives"], lists["nouns"])
    phrases = generate_phrases("modifiers_en", words)
    strings = sorted(set(strings_to_embed(words, phrases)))
    spec = {"family": "hashing", "dim": 64}
    manifest = {"model": "m", "scope": "montague.modifiers_en", "partition": 0, "partitions": 1, "family": "hashing",
                "spec_digest": spec_digest(spec)}
    vectors = np.random.default_rng(1).normal(size=(len(strings), 64)).astype(np.float32)
    write_partition(tmp / "store", text_keys(strings), manifest, vectors)
    dist = new.Distances(VectorStore([str(tmp / "store")], model="m", spec_digest=spec_digest(spec)))
    distances, pairs, info = new.compute_distances(phrases, dist, LOG)
    args = (distances, pairs, phrases, info, "modifiers_en", "m", 1000, 13, "nouns_and_adjectives")

    def paired():
        reps: list = []
        rows = new.share_rows(*args, reps)
        write_replicates(tmp / "replicates.parquet", reps)
        return rows

    a, b = side_by_side(lambda: old.share_rows(*args), paired, repeats)
    report(f"montague {phrases.height} phrases, B=1000", a, b)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="?", default="all", choices=("csc", "montague", "all"))
    ap.add_argument("--similarities", type=float, default=1e6)
    ap.add_argument("--old-ref", default=OLD_REF)
    ap.add_argument("--repeats", type=int, default=3, help="runs of each side (alternating); fastest time shown")
    a = ap.parse_args(argv)
    header()
    with tempfile.TemporaryDirectory() as tmp:
        if a.what in ("csc", "all"):
            bench_csc(int(a.similarities), a.old_ref, Path(tmp), a.repeats)
        if a.what in ("montague", "all"):
            bench_montague(a.old_ref, Path(tmp), a.repeats)


if __name__ == "__main__":
    main(sys.argv[1:])
