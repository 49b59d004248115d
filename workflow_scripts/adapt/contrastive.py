"""FT: contrastive fine-tuning on (question, answer, negatives) of a retrieval set's split.

sentence-transformers' trainer with MultipleNegativesRankingLoss: each question's answer is its
positive; every other answer in the batch, and its own negatives, are its negatives. Where a row's
negatives come from is `ft.negatives`:

- `mined` (default): hard negatives from `sentence_transformers.util.mine_hard_negatives`, run with
  the model about to be fine-tuned over every document of the set before training (the library's
  own miner; the positives of a question are never its negatives);
- `wrong_answers`: the question's wrong answers from the set (TeleQnA's wrong options), the first
  `num_negatives` in option order;
- `both`: the wrong answers first, topped up with mined ones to `num_negatives`.

Every row has exactly `num_negatives` negatives (the loss takes fixed columns): a row with fewer is
dropped and counted per reason. Batches never hold the same text twice
(`BatchSamplers.NO_DUPLICATES`), which would make a positive one of its own in-batch negatives.
"""
from __future__ import annotations

from pathlib import Path

from workflow_scripts.adapt.trainer_common import last_checkpoint, loss_curve, training_arguments

# why a row is dropped, per mode: it has fewer than num_negatives usable negatives of its kind
DROP_REASON = {"mined": "too_few_mined", "wrong_answers": "no_wrong_answers", "both": "too_few_negatives"}


def negative_rows(pairs: list[tuple[str, str]], wrong_answers: list[list[str]] | None,
                  mined: list[list[str]] | None, mode: str, num_negatives: int) -> tuple[list[tuple], dict]:
    """Rows (anchor, positive, [negatives]) and their counts. A row takes its wrong answers (modes
    wrong_answers, both) and then its mined negatives (mined, both), in the given order, until it has
    `num_negatives`; a negative equal to the row's positive or already taken is skipped. A row left
    with fewer is dropped and counted under DROP_REASON[mode]. Pure: no model."""
    if mode not in DROP_REASON:
        raise ValueError(f"FT: unknown negatives mode {mode!r} (known: {', '.join(DROP_REASON)})")
    use_wrong, use_mined = mode in ("wrong_answers", "both"), mode in ("mined", "both")
    if (use_wrong and wrong_answers is None) or (use_mined and mined is None and num_negatives):
        raise ValueError(f"FT: negatives mode {mode!r} needs the {'wrong answers' if use_wrong else 'mined negatives'}")
    rows, dropped, taken = [], 0, {"wrong_answers": 0, "mined": 0}
    for i, (anchor, positive) in enumerate(pairs):
        negatives, source = [], []
        candidates = ([(w, "wrong_answers") for w in wrong_answers[i]] if use_wrong else []) + \
                     ([(m, "mined") for m in mined[i]] if use_mined and mined is not None else [])
        for text, kind in candidates:
            if len(negatives) == num_negatives:
                break
            if text != positive and text not in negatives:
                negatives.append(text)
                source.append(kind)
        if len(negatives) < num_negatives:
            dropped += 1
            continue
        rows.append((anchor, positive, negatives))
        for kind in source:
            taken[kind] += 1
    record = {"mode": mode, "num_negatives": num_negatives, "rows": len(rows), "dropped": dropped,
              "dropped_by_reason": {DROP_REASON[mode]: dropped} if dropped else {}, "negatives": taken}
    return rows, record


def mine(st, pairs: list[tuple[str, str]], docs: list[str], hn: dict) -> list[list[str]]:
    """Each pair's mined hard negatives, best first (at most num_negatives; fewer where fewer pass
    the margin), from the library's miner run with the model about to be trained."""
    from datasets import Dataset
    from sentence_transformers.util import mine_hard_negatives

    dataset = Dataset.from_dict({"anchor": [a for a, _ in pairs], "positive": [p for _, p in pairs]})
    # labeled-list keeps rows with fewer negatives than asked (n-tuple drops them): `both` tops up with them
    mined = mine_hard_negatives(dataset, st, corpus=docs, num_negatives=hn["num_negatives"], range_min=hn["range_min"],
                                range_max=hn["range_max"], relative_margin=hn["relative_margin"],
                                sampling_strategy=hn["sampling"], output_format="labeled-list", batch_size=32,
                                verbose=False)
    found = {(row["anchor"], row["positive"][0]): row["positive"][1:] for row in mined}
    return [list(found.get(pair, [])) for pair in pairs]


def training_rows(st, pairs, docs, wrong_answers, cfg: dict, log):
    """The training dataset (columns anchor, positive[, negative_1..n]) and the manifest's mining record."""
    from datasets import Dataset

    mode, hn = cfg["negatives"], cfg["hard_negatives"]
    n = hn["num_negatives"]
    if mode != "mined" and n == 0:
        raise ValueError(f"FT: `negatives: {mode}` needs hard_negatives.num_negatives >= 1 (0 means in-batch "
                         "negatives only, i.e. no wrong answers)")
    mined = mine(st, pairs, docs, hn) if mode != "wrong_answers" and n else None
    rows, record = negative_rows(pairs, wrong_answers, mined, mode, n)
    record["mined"] = mined is not None
    if record["dropped"]:
        log.warning("FT: %d of %d (question, answer) pairs got fewer than %d negatives (%s) and were dropped",
                    record["dropped"], len(pairs), n, record["dropped_by_reason"])
    columns = {"anchor": [a for a, _, _ in rows], "positive": [p for _, p, _ in rows],
               **{f"negative_{i}": [negs[i - 1] for _, _, negs in rows] for i in range(1, n + 1)}}
    return Dataset.from_dict(columns), record


def train_ft(st, pairs, docs, cfg: dict, seed: int, work: Path, device: str, deterministic: bool, log,
             callbacks=None, wrong_answers: list[list[str]] | None = None) -> dict:
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
    dataset, mining = training_rows(st, pairs, docs, wrong_answers, cfg, log)
    if len(dataset) == 0:
        raise ValueError(f"FT: no training rows left: every pair got fewer than {cfg['hard_negatives']['num_negatives']} "
                         f"negatives ({mining['dropped_by_reason']}; negatives: {cfg['negatives']}); lower "
                         "num_negatives, or relative_margin when negatives are mined")
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
