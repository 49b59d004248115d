"""FT: contrastive fine-tuning on (question, answer, mined hard negatives) of a retrieval set's split.

sentence-transformers' trainer with MultipleNegativesRankingLoss: each question's answer is its
positive; every other answer in the batch, and its mined hard negatives, are its negatives. Hard
negatives come from `sentence_transformers.util.mine_hard_negatives`, run with the model about to
be fine-tuned over every document of the set before training (the library's own miner; the
positives of a question are never its negatives). Batches never hold the same text twice
(`BatchSamplers.NO_DUPLICATES`), which would make a positive one of its own in-batch negatives.
"""
from __future__ import annotations

from pathlib import Path

from workflow_scripts.adapt.trainer_common import last_checkpoint, loss_curve, training_arguments


def mine(st, pairs: list[tuple[str, str]], docs: list[str], cfg: dict, log):
    """The training dataset: columns anchor, positive[, negative_1..n]; questions for which no
    negative passes the margin are dropped and counted."""
    from datasets import Dataset
    from sentence_transformers.util import mine_hard_negatives

    dataset = Dataset.from_dict({"anchor": [a for a, _ in pairs], "positive": [p for _, p in pairs]})
    hn = cfg["hard_negatives"]
    if hn["num_negatives"] == 0:
        return dataset, {"mined": False, "rows": len(dataset), "dropped": 0}
    mined = mine_hard_negatives(dataset, st, corpus=docs, num_negatives=hn["num_negatives"], range_min=hn["range_min"],
                                range_max=hn["range_max"], relative_margin=hn["relative_margin"],
                                sampling_strategy=hn["sampling"], output_format="n-tuple", batch_size=32,
                                verbose=False)
    dropped = len(dataset) - len(mined)
    if dropped:
        log.warning("FT: %d of %d (question, answer) pairs got fewer than %d hard negatives within the margin and "
                    "were dropped", dropped, len(dataset), hn["num_negatives"])
    return mined, {"mined": True, "rows": len(mined), "dropped": dropped}


def train_ft(st, pairs, docs, cfg: dict, seed: int, work: Path, device: str, deterministic: bool, log,
             callbacks=None) -> dict:
    """Train in place; returns {'loss_curve', 'resumed_from', 'global_step', 'mining'}."""
    import transformers
    from sentence_transformers import SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer import losses
    from sentence_transformers.sentence_transformer.training_args import (BatchSamplers,
                                                                          SentenceTransformerTrainingArguments)

    if cfg["loss"] != "mnrl":
        raise ValueError(f"FT: unknown loss {cfg['loss']!r}")
    if not pairs:
        raise ValueError("FT: no (question, answer) pairs in the training split")
    st.max_seq_length = cfg["max_length"]
    transformers.set_seed(seed)
    dataset, mining = mine(st, pairs, docs, cfg, log)
    if len(dataset) == 0:
        raise ValueError("FT: no training rows left after mining hard negatives (lower relative_margin or num_negatives)")
    args = training_arguments(cfg, seed, work / "checkpoints", device, deterministic,
                              cls=SentenceTransformerTrainingArguments, batch_sampler=BatchSamplers.NO_DUPLICATES)
    trainer = SentenceTransformerTrainer(model=st, args=args, train_dataset=dataset,
                                         loss=losses.MultipleNegativesRankingLoss(st), callbacks=callbacks)
    resume = last_checkpoint(work / "checkpoints")
    if resume:
        log.info("FT: resuming from %s", resume)
    trainer.train(resume_from_checkpoint=resume)
    return {"loss_curve": loss_curve(trainer), "resumed_from": resume, "global_step": trainer.state.global_step,
            "examples": len(dataset), "mining": mining}
