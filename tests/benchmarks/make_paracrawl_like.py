"""Write a ParaCrawl-sized EN–NL bitext (benchmark input, not test data) from the real sample.

Usage: python tests/benchmarks/make_paracrawl_like.py OUT.zip|OUT.txt.gz [--pairs 2560472] [--seed 7]

Every synthetic pair is built from two real pairs of ../shared/data/en_nl_parallel/ (ParaCrawl
human-evaluation sample and Tatoeba): a template pair gives the length of each side, its first
words are kept and the rest are taken from the end of a second pair (per side, at the same
fraction of the length). So each side has exactly the length of a real sentence and only real
words at their real frequencies. Templates are drawn with weights that give the English side the
token-bucket shares of the seed paper's Table 2 (PC_EN). The output is the release's format: OUT.zip is
OPUS ParaCrawl v1's moses zip (the 2,560,472-pair release the paper used: one line-aligned file per
language), OUT.txt.gz the later releases' bitext (`en<TAB>nl` per line). A small share of malformed lines (invalid UTF-8,
an empty side, and in the bitext a missing tab) exercises the ingest stage's bad-line accounting as a real crawl would.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "en_nl_parallel"
PAPER_PAIRS = 2_560_472
BUCKET_EDGES = [0, 10, 20, 30, 40, 50, 10 ** 9]
MOSES_MEMBERS = ("ParaCrawl.en-nl.en", "ParaCrawl.en-nl.nl")  # as in OPUS ParaCrawl v1 moses/en-nl.txt.zip
TABLE2_PC_EN = [0.3299, 0.3174, 0.1892, 0.0896, 0.0373, 0.0366]  # seed paper, Table 2


def real_pairs(shared: Path) -> list[tuple[list[str], list[str]]]:
    pairs = set()
    with open(shared / "paracrawl_en_nl_human_eval.tsv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            pairs.add((row["en"], row["nl"]))
    with open(shared / "tatoeba_laser_en_nl.tsv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            pairs.add((row["en"], row["nl"]))
    out = [(en.split(), nl.split()) for en, nl in sorted(pairs)]
    return [(en, nl) for en, nl in out if en and nl]


def template_weights(pairs) -> np.ndarray:
    lengths = np.array([len(en) for en, _ in pairs])
    bucket = np.searchsorted(BUCKET_EDGES, lengths, side="right") - 1
    counts = np.bincount(bucket, minlength=len(TABLE2_PC_EN))
    weights = np.array([TABLE2_PC_EN[b] / counts[b] for b in bucket])
    return weights / weights.sum()


def generate(out: str, n_pairs: int, seed: int, bad_rate: float = 2e-5, shared: Path = SHARED) -> dict:
    pairs = real_pairs(shared)
    rng = np.random.default_rng(seed)
    template = rng.choice(len(pairs), size=n_pairs, p=template_weights(pairs))
    donor = rng.integers(0, len(pairs), size=n_pairs)
    keep = rng.random(n_pairs)  # fraction of the template's words kept at the front
    bad = np.flatnonzero(rng.random(n_pairs) < bad_rate)
    bad_kind = rng.integers(0, 3, size=len(bad))
    bad_of = dict(zip(bad.tolist(), bad_kind.tolist()))
    started = time.perf_counter()
    moses = out.endswith(".zip")
    if moses:  # OPUS ParaCrawl v1 layout: one line-aligned file per language in a zip
        plain = [Path(out).with_name(f".{name}.tmp") for name in MOSES_MEMBERS]
        sinks = [open(p, "wb") for p in plain]
    else:
        sinks = [gzip.open(out, "wb", compresslevel=1)]
    try:
        blocks: list[list[bytes]] = [[] for _ in sinks]
        for i in range(n_pairs):
            (en_t, nl_t), (en_d, nl_d) = pairs[template[i]], pairs[donor[i]]
            sides = []
            for t, d in ((en_t, en_d), (nl_t, nl_d)):
                k = max(1, int(round(keep[i] * len(t))))
                rest = len(t) - k
                tail = d[len(d) - rest:] if 0 < rest <= len(d) else (d * (rest // len(d) + 1))[:rest] if rest else []
                sides.append(" ".join(t[:k] + tail).encode("utf-8"))
            kind = bad_of.get(i)
            if kind == 0:
                sides[0] = sides[0][:8] + b"\xff\xfe" + sides[0][8:]  # not UTF-8
            elif kind == 1:
                sides[1] = b" "                                     # empty side
            elif kind == 2 and not moses:
                sides = [sides[0] + b" " + sides[1]]                # missing field
            if moses:
                blocks[0].append(sides[0])
                blocks[1].append(sides[1] if len(sides) > 1 else b"")
            else:
                blocks[0].append(b"\t".join(sides))
            if len(blocks[0]) == 100_000 or i + 1 == n_pairs:
                for sink, block in zip(sinks, blocks):
                    sink.write(b"\n".join(block) + b"\n")
                    block.clear()
                if (i + 1) % 500_000 == 0:
                    print(f"{i + 1} pairs ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    finally:
        for sink in sinks:
            sink.close()
    if moses:  # a zip takes one member at a time
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            for name, p in zip(MOSES_MEMBERS, plain):
                archive.write(p, arcname=name)
                p.unlink()
    malformed = int(np.sum(bad_kind < 2)) if moses else len(bad)  # a moses file has no tab to drop
    return {"pairs": n_pairs, "malformed": malformed, "templates": len(pairs), "seed": seed}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--pairs", type=int, default=PAPER_PAIRS)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--bad-rate", type=float, default=2e-5)
    args = ap.parse_args()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    print(generate(args.out, args.pairs, args.seed, args.bad_rate))


if __name__ == "__main__":
    main()
