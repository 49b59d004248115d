"""PT: continued masked-language-model pre-training of a sentence encoder's transformer.

The encoder's transformer (the `auto_model` of a sentence-transformers model; a plain transformers
model is loaded the same way, with mean pooling) gets a masked-LM head (`AutoModelForMaskedLM`:
the base's own head where its checkpoint has one, else a new one, seeded) and is trained with
transformers' Trainer and `DataCollatorForLanguageModeling` (`mask_rate` of the tokens masked, 80%
of them replaced by [MASK], 10% by a random token, 10% kept: BERT's rule). The trained encoder
weights go back into the sentence-transformers model (pooling and normalisation unchanged); the
head is dropped.
"""
from __future__ import annotations

from pathlib import Path

from workflow_scripts.adapt.trainer_common import last_checkpoint, loss_curve, training_arguments


def encoder_to_mlm(st, init_dir: Path, seed: int):
    """An AutoModelForMaskedLM whose encoder holds the sentence model's transformer weights."""
    import transformers
    from transformers import AutoModelForMaskedLM

    transformer = st[0]
    if not (init_dir / "config.json").exists():
        init_dir.mkdir(parents=True, exist_ok=True)
        transformer.auto_model.save_pretrained(init_dir)
        transformer.tokenizer.save_pretrained(init_dir)
    transformers.set_seed(seed)  # the new head's initialisation
    return AutoModelForMaskedLM.from_pretrained(init_dir)


def mlm_to_encoder(st, mlm) -> None:
    """Copy the trained encoder back into the sentence model (a pooler the MLM model lacks stays)."""
    state = mlm.base_model.state_dict()
    result = st[0].auto_model.load_state_dict(state, strict=False)
    unexpected = list(result.unexpected_keys)
    missing = [k for k in result.missing_keys if not k.startswith("pooler.")]
    if unexpected or missing:
        raise RuntimeError(f"PT: encoder weights do not fit the sentence model (missing {missing[:5]}, "
                           f"unexpected {unexpected[:5]})")


def train_pt(st, sentences: list[str], cfg: dict, seed: int, work: Path, device: str, deterministic: bool,
             log, callbacks=None) -> dict:
    """Train in place; returns {'loss_curve', 'resumed_from', 'global_step'}."""
    from transformers import DataCollatorForLanguageModeling, Trainer

    mlm = encoder_to_mlm(st, work / "init", seed)
    tokenizer = st[0].tokenizer
    if tokenizer.mask_token is None:
        raise ValueError("PT: the base model's tokenizer has no mask token; masked-LM pre-training needs one")
    dataset = [tokenizer(s, truncation=True, max_length=cfg["max_length"]) for s in sentences]
    collator = DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm=True, mlm_probability=cfg["mask_rate"])
    args = training_arguments(cfg, seed, work / "checkpoints", device, deterministic)
    trainer = Trainer(model=mlm, args=args, train_dataset=dataset, data_collator=collator, callbacks=callbacks)
    resume = last_checkpoint(work / "checkpoints")
    if resume:
        log.info("PT: resuming from %s", resume)
    trainer.train(resume_from_checkpoint=resume)
    mlm_to_encoder(st, trainer.model)
    return {"loss_curve": loss_curve(trainer), "resumed_from": resume, "global_step": trainer.state.global_step,
            "examples": len(dataset)}
