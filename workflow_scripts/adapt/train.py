"""The adapt stage's training job: run a recipe's steps (pt, ft, merge) on its base model and write
the model directory `<results>/models/<recipe>/` (sentence-transformers layout) with `manifest.json`.

Resumable: the job works in `<work root>/<digest of its plan>/` (`<results>/models/.work/<recipe>/`
in the workflow). Each step's Trainer checkpoints there every `save_steps`; a finished step's model
is moved into `<i>-<step>/model` in one rename. A rerun after a kill skips finished steps and
resumes the running one from its last checkpoint (weights, optimizer, scheduler, RNG states); a
changed recipe gets a new digest, so stale checkpoints are never resumed (other digests' folders
are removed). The finished model is moved into place last, so the model directory either does not
exist or is complete; the work folder is removed after that.

Deterministic: the same plan gives the same weights on CPU with the same number of threads (seeded
Trainer, data order and masking; tests/adapt/test_adapt.py). On CUDA, seeded runs differ in the last bits
unless `deterministic: true` (transformers' full_determinism: deterministic cuDNN/cuBLAS kernels).
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import resource
import shutil
import time
from pathlib import Path

from workflow_scripts.adapt.data import digest, ft_pairs, pt_sentences
from workflow_scripts.common import atomic_path, setup_logging, sorted_keys, write_json

MANIFEST = "manifest.json"
DEFAULTS_NOTE = ("The seed paper published no training hyper-parameters; every value not set in the config is a "
                 "default of this workflow (workflow_scripts/adapt/models.py DEFAULTS).")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def versions() -> dict:
    out = {}
    for dist in ("torch", "transformers", "sentence-transformers", "datasets", "accelerate", "numpy"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def load_model(spec: dict, device: str):
    """A SentenceTransformer of a plan's model spec (a configured model or a trained directory); a
    plain transformers model gets mean pooling, what the `transformers` family embeds with."""
    from sentence_transformers import SentenceTransformer

    from workflow_scripts.encoders import resolve_model_source

    source, origin = resolve_model_source(spec)
    st = SentenceTransformer(source, device=device, revision=spec.get("revision"))
    if spec.get("max_length"):
        st.max_seq_length = spec["max_length"]
    return st, origin


def _step_dirs(work: Path, plan: dict) -> list[tuple[str, Path]]:
    return [(step, work / f"{i}-{step}") for i, step in enumerate(plan["steps"])]


def train(plan: dict, out_dir: str, work_root: str, device: str = "cpu", threads: int = 1, log=None,
          callbacks: dict | None = None) -> dict:
    """Run the plan; returns the manifest. `callbacks`: step -> list of Trainer callbacks (tests)."""
    import torch

    from workflow_scripts.adapt.contrastive import train_ft
    from workflow_scripts.adapt.merge import merge_into
    from workflow_scripts.adapt.mlm import train_pt
    from workflow_scripts.encoders import check_device

    log = log or setup_logging(None, "adapt")
    check_device(device, plan["recipe"])
    torch.set_num_threads(threads)
    plan_digest = digest(plan)
    root = Path(work_root)
    work = root / plan_digest[:16]
    if root.is_dir():  # checkpoints of another plan (a changed recipe) must never be resumed
        for stale in root.iterdir():
            if stale != work:
                log.info("removing the work folder of another plan: %s", stale)
                shutil.rmtree(stale, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    seed = plan["seed"]
    st, base_origin = load_model(plan["base"], device)
    results, data = {}, {}
    for step, sdir in _step_dirs(work, plan):
        done, record = sdir / "model", sdir / "result.json"
        started = time.perf_counter()
        if done.is_dir() and record.exists():
            log.info("step %s: finished in an earlier attempt; loading %s", step, done)
            st, _ = load_model({"path": str(done)}, device)
            results[step] = json.loads(record.read_text())
            data[step] = results[step].pop("data", None)
            continue
        sdir.mkdir(parents=True, exist_ok=True)
        cbs = (callbacks or {}).get(step)
        if step == "pt":
            cfg = plan["pt"]
            sentences = pt_sentences(cfg["data"], cfg["max_texts"], seed)
            data[step] = {**cfg["data"], "examples": len(sentences), "digest": digest(sentences)}
            log.info("step pt: %d sentences of %s %s", len(sentences), cfg["data"]["kind"], cfg["data"]["name"])
            res = train_pt(st, sentences, cfg, seed, sdir, device, plan["deterministic"], log, cbs)
        elif step == "ft":
            cfg = plan["ft"]
            pairs, docs, wrong, counts = ft_pairs(cfg["data"], cfg["split"], cfg["negatives"])
            # the wrong answers are training examples only when used: the mined digest stays what it was
            examples = [pairs, docs] if wrong is None else [pairs, docs, wrong]
            data[step] = {**cfg["data"], "split": cfg["split"], **counts, "digest": digest(examples)}
            log.info("step ft: %d (question, answer) pairs of %s/%s, %d documents, negatives: %s", len(pairs),
                     cfg["data"]["name"], cfg["split"], len(docs), cfg["negatives"])
            res = train_ft(st, pairs, docs, cfg, seed, sdir, device, plan["deterministic"], log, cbs,
                           wrong_answers=wrong)
        else:
            other, other_origin = load_model(plan["merge"]["with"], device)
            merge_into(st, other, plan["merge"]["weight"])
            data[step] = {"with": plan["merge"]["with"]["model"], "origin": other_origin}
            res = {"weight": plan["merge"]["weight"]}
            del other
        res["seconds"] = round(time.perf_counter() - started, 3)
        res["peak_rss_mb"] = round(peak_rss_mb(), 1)
        log.info("step %s done in %.1f s (%s optimiser steps), peak RSS %.0f MB", step, res["seconds"],
                 res.get("global_step", 0), res["peak_rss_mb"])
        with atomic_path(done, is_dir=True) as tmp:
            st.save(str(tmp))
        write_json(record, {**res, "data": data[step]})
        results[step] = res
    manifest = {
        "recipe": plan["recipe"], "steps": plan["steps"],
        "base": {"model": plan["base"]["model"], "name": plan["base"].get("name"), "path": plan["base"].get("path"),
                 "revision": plan["base"].get("revision"), "origin": base_origin},
        "seed": seed, "deterministic": plan["deterministic"], "device": device, "threads": threads,
        "data": data, "settings": {k: plan[k] for k in ("pt", "ft", "merge") if k in plan},
        "loss_curve": {s: r.get("loss_curve", []) for s, r in results.items() if "loss_curve" in r},
        "runs": {s: {k: v for k, v in r.items() if k != "loss_curve"} for s, r in results.items()},
        "plan_digest": plan_digest, "versions": versions(), "defaults": DEFAULTS_NOTE,
    }
    with atomic_path(out_dir, is_dir=True) as tmp:
        shutil.copytree(_step_dirs(work, plan)[-1][1] / "model", tmp, dirs_exist_ok=True)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    shutil.rmtree(root, ignore_errors=True)
    return manifest


# ---- the jobs of rules/adapt.smk (workflow_scripts/jobs.py) ----
def run_adapt_train(job) -> None:
    # before the model's libraries are imported: no progress bars in the log, no tokenizer threads
    # beside the job's; the hub is online unless the caller's environment says otherwise
    os.environ["TQDM_DISABLE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = os.environ.get("HF_HUB_OFFLINE") or "0"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    log = setup_logging(name="adapt")
    out = job.output[0]
    work = os.path.join(os.path.dirname(out), ".work", os.path.basename(out))  # <results>/models/.work/<recipe>
    # keys sorted, as the JSON param gave them before: the plan's digest names its work folder
    plan = sorted_keys(job.params.plan)
    manifest = train(plan, out, work, job.params.device, job.threads, log)
    log.info("wrote %s (%s)", out, ", ".join(f"{s}: {r.get('seconds')} s" for s, r in manifest["runs"].items()))
