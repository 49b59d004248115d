"""What the torch families share (sentence_transformers, transformers, mteb): the embedding loop's
tokenize-once interface. A helper, not a family."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: numpy is imported where it is used
    import numpy as np
    from workflow_scripts.embed_pipeline import Tokens


class TorchEncoder:
    """What the torch families share: the embedding loop's tokenize-once interface
    (embed_pipeline.embed_sorted). A family gives `token_inputs(texts)` (the strings its tokenizer
    reads and the truncation it applies), `reference_features(texts)` (the padded inputs its own
    library builds) and `forward(features)` (the vectors, float32 on the device); `encode_batch`
    is the two in a row, the loop pads batches from one tokenization and checks them against
    `reference_features`."""

    def __init__(self, spec: dict, device: str):
        import torch
        self.torch = torch
        self.device = device
        self.dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[spec.get("precision", "fp32")]

    def _inputs(self, enc: dict):
        # pinned host tensors (embed_pipeline, on a GPU) go over without blocking
        return {k: v.to(self.device, non_blocking=True) for k, v in enc.items() if hasattr(v, "to")}

    def tokenize(self, texts: list[str]):
        """Every text tokenized once, unpadded, as the family's tokenizer reads it (token_inputs)."""
        from workflow_scripts.embed_pipeline import Tokens, pad_values_of
        strings, kwargs = self.token_inputs(texts)
        enc = self.tokenizer(strings, padding=False, **kwargs)
        return Tokens(dict(enc), pad_values_of(self.tokenizer), self.tokenizer.padding_side)

    def collate(self, tokens: Tokens, idx) -> dict:
        """The padded inputs of the texts `idx` of `tokens`, as host tensors."""
        return {k: self.torch.from_numpy(v) for k, v in tokens.pad(idx).items()}

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        return self.forward(self.reference_features(texts)).cpu().numpy()

