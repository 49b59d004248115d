"""Trainer settings shared by PT (transformers' Trainer) and FT (sentence-transformers' trainer)."""
from __future__ import annotations

from pathlib import Path


def training_arguments(cfg: dict, seed: int, out_dir: Path, device: str, deterministic: bool, cls=None, **extra):
    """Seeded, checkpointing every `save_steps` (optimizer, scheduler and RNG states with the
    weights, so a killed job resumes where it was), loss logged every step, no reporting."""
    if cls is None:
        from transformers import TrainingArguments as cls
    return cls(
        output_dir=str(out_dir),
        per_device_train_batch_size=cfg["batch_size"],
        num_train_epochs=cfg["epochs"],
        max_steps=cfg["max_steps"] if cfg.get("max_steps") else -1,
        learning_rate=cfg["learning_rate"],
        warmup_steps=float(cfg["warmup_ratio"]),  # transformers 5: a float in [0, 1) is a share of the steps
        weight_decay=cfg["weight_decay"],
        seed=seed,
        data_seed=seed,
        full_determinism=deterministic,
        save_strategy="steps",
        save_steps=cfg["save_steps"],
        save_total_limit=2,
        logging_strategy="steps",
        logging_steps=1,
        report_to=[],
        use_cpu=device == "cpu",
        dataloader_num_workers=0,
        disable_tqdm=True,
        **extra,
    )


def last_checkpoint(directory: Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint
    return get_last_checkpoint(str(directory)) if Path(directory).is_dir() else None


def loss_curve(trainer) -> list[dict]:
    """[{step, epoch, loss}] of every logged training step (restored from the checkpoint on resume)."""
    return [{"step": int(e["step"]), "epoch": float(e.get("epoch", 0.0)), "loss": float(e["loss"])}
            for e in trainer.state.log_history if "loss" in e]
