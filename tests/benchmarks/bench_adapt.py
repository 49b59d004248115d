"""CPU step time of the adapt stage's training (MiniLM PT and FT), and what bge-large would cost on a GPU.

MEASURED: all-MiniLM-L6-v2 (the bundled package), continued MLM pre-training (PT) and MNRL
fine-tuning (FT, one mined hard negative) through workflow_scripts.adapt.train, on this machine's
CPU: seconds per optimiser step after a warm-up step, at the batch size and sequence length given.

PROJECTED, not measured (no GPU was lent when this was written): bge-large-en-v1.5 on one H100.
Assumptions, each stated in the output:
  - training FLOPs per token = 6 x non-embedding parameters + 6 x layers x sequence x hidden
    (Kaplan et al. 2020, eq. 2.1 forward, x3 for backward), plus for PT the MLM head
    (6 x (hidden x vocabulary + hidden^2): BertForMaskedLM scores every position); FT encodes 3
    texts per example (question, answer, hard negative), PT one sentence;
  - parameter counts from the models' published configs: MiniLM-L6 (6 layers, hidden 384, 22.7M
    parameters of which 11.7M embeddings), bge-large (24 layers, hidden 1024, 335M of which 31.8M
    embeddings);
  - H100 SXM dense BF16 peak 989 TFLOP/s (NVIDIA datasheet); sustained model-FLOP utilisation 35%
    (an assumption typical of BERT-large fine-tuning with mixed precision; 20-50% is the usual range);
  - CPU projection of bge-large: the measured MiniLM CPU FLOP rate applied to bge-large's FLOPs.
Usage: python tests/benchmarks/bench_adapt.py [STEPS] [BATCH] [MAX_LENGTH]   (default 6 16 128)
Prints a table and writes JSON to stdout's last line.
"""
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from workflow_scripts.adapt import models as M  # noqa: E402

MODELS = {  # published configs (config.json of each model on the Hugging Face hub)
    "all-MiniLM-L6-v2": {"layers": 6, "hidden": 384, "params": 22.7e6, "embedding_params": 11.9e6},
    "bge-large-en-v1.5": {"layers": 24, "hidden": 1024, "params": 335.1e6, "embedding_params": 31.8e6},
}
H100_BF16_PEAK = 989e12  # FLOP/s, dense, SXM (NVIDIA H100 datasheet)
ASSUMED_MFU = 0.35


VOCAB = 30522  # both models' WordPiece vocabulary


def flops_per_step(model: dict, batch: int, seq: int, texts_per_example: int, mlm_head: bool = False) -> float:
    tokens = batch * seq * texts_per_example
    per_token = 6 * (model["params"] - model["embedding_params"]) + 6 * model["layers"] * seq * model["hidden"]
    if mlm_head:  # BertForMaskedLM scores every position against the vocabulary (hidden x vocab)
        per_token += 6 * (model["hidden"] * VOCAB + model["hidden"] ** 2)
    return per_token * tokens


def measure(step: str, steps: int, batch: int, seq: int, work: Path, set_dir: Path) -> dict:
    """Median wall seconds of an optimiser step (Trainer callback), the first step left out (warm-up)."""
    import statistics

    from transformers import TrainerCallback

    from workflow_scripts.adapt.train import train

    class Timer(TrainerCallback):
        def __init__(self):
            self.times, self.start = [], None

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter() - self.start)

    base = {"model": "minilm", "family": "sentence_transformers", "name": "sentence-transformers/all-MiniLM-L6-v2"}
    cfg = {**M.DEFAULTS[step], "batch_size": batch, "max_length": seq, "save_steps": 10_000, "max_steps": 1 + steps,
           "data": {"kind": "retrieval", "name": "specs", "path": str(set_dir)}}
    if step == "ft":  # every example kept (the margin would drop near-duplicate word salads)
        cfg["hard_negatives"] = {**cfg["hard_negatives"], "relative_margin": None}
    plan = {"recipe": f"bench_{step}", "steps": [step], "seed": 1, "deterministic": False, "base": base, step: cfg}
    timer = Timer()
    manifest = train(plan, str(work / step), str(work / f"work-{step}"), "cpu", os.cpu_count() or 1,
                     callbacks={step: [timer]})
    return {"seconds_per_step": statistics.median(timer.times[1:]), "step_seconds": timer.times,
            "peak_rss_mb": manifest["runs"][step]["peak_rss_mb"], "examples": manifest["runs"][step]["examples"]}


def bench_set(directory: Path) -> Path:
    """A BEIR set of long telecom-style texts (120 words), so that every batch fills max_length."""
    import random
    rng = random.Random(0)
    words = ("the UE shall report the measurement of the serving cell to the gNB when the RRC connection is "
             "established and the timer T310 expires before the handover procedure completes").split()
    docs = [" ".join(rng.choice(words) for _ in range(120)) for _ in range(200)]
    (directory / "qrels").mkdir(parents=True)
    (directory / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(docs)))
    # questions as long as the documents (their words reversed), so that all three texts of an FT
    # example fill max_length, as the FLOP count assumes
    (directory / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": " ".join(t.split()[::-1])}) + "\n"
                                                     for i, t in enumerate(docs)))
    (directory / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" +
                                                   "".join(f"q{i}\td{i}\t1\n" for i in range(len(docs))))
    return directory


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    seq = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    work = Path(tempfile.mkdtemp(prefix="bench_adapt_"))
    try:
        set_dir = bench_set(work / "set")
        out = {"batch": batch, "max_length": seq, "cpu_threads": os.cpu_count(), "measured": {}, "projected": {},
               "assumptions": {"flops_per_token": "6 x non-embedding params + 6 x layers x seq x hidden (+ PT: 6 x (hidden x vocab + hidden^2))",
                               "texts_per_example": {"pt": 1, "ft": 3}, "h100_bf16_peak_flops": H100_BF16_PEAK,
                               "mfu": ASSUMED_MFU, "models": MODELS}}
        for step, texts in (("pt", 1), ("ft", 3)):
            m = measure(step, steps, batch, seq, work, set_dir)
            mini = flops_per_step(MODELS["all-MiniLM-L6-v2"], batch, seq, texts, mlm_head=step == "pt")
            large = flops_per_step(MODELS["bge-large-en-v1.5"], batch, seq, texts, mlm_head=step == "pt")
            cpu_rate = mini / m["seconds_per_step"]
            out["measured"][f"minilm_{step}"] = {**m, "flops_per_step": mini, "cpu_flops_per_s": cpu_rate}
            out["projected"][f"bge_large_{step}"] = {
                "flops_per_step": large,
                "cpu_seconds_per_step (PROJECTION)": large / cpu_rate,
                "h100_seconds_per_step (PROJECTION)": large / (H100_BF16_PEAK * ASSUMED_MFU),
                "h100_seconds_per_1000_steps (PROJECTION)": 1000 * large / (H100_BF16_PEAK * ASSUMED_MFU)}
        print(f"batch {batch}, max_length {seq}, {os.cpu_count()} CPU threads")
        for name, m in out["measured"].items():
            print(f"MEASURED  {name:14s} {m['seconds_per_step']:8.2f} s/step on CPU, peak RSS {m['peak_rss_mb']:.0f} MB, "
                  f"{m['cpu_flops_per_s'] / 1e9:.1f} GFLOP/s effective")
        for name, p in out["projected"].items():
            print(f"PROJECTED {name:14s} CPU {p['cpu_seconds_per_step (PROJECTION)']:8.1f} s/step; H100 (bf16, MFU "
                  f"{ASSUMED_MFU:.0%}) {p['h100_seconds_per_step (PROJECTION)'] * 1000:.1f} ms/step, "
                  f"{p['h100_seconds_per_1000_steps (PROJECTION)']:.0f} s per 1000 steps")
        print(json.dumps(out))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
