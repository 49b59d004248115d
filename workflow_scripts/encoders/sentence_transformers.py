"""Family `sentence_transformers`: a Hugging Face id or local path loaded by sentence-transformers;
the role's prompt by name (one of the model's own) or literal."""
from __future__ import annotations

from typing import TYPE_CHECKING

from workflow_scripts.encoders import Family, hub_model_files, resolve_model_source
from workflow_scripts.encoders._torch import TorchEncoder

if TYPE_CHECKING:  # annotations only: numpy is imported where it is used
    import numpy as np


class SentenceTransformerEncoder(TorchEncoder):
    def __init__(self, spec: dict, device: str):
        super().__init__(spec, device)
        self.model, self.origin = self._load(spec)
        source = spec.get("path") or spec.get("name")
        if spec.get("max_length"):
            self.model.max_seq_length = spec["max_length"]
        self.model.eval()
        self.model.to(self.dtype)  # modules beyond the transformer (e.g. a Dense layer) too
        self.dim = self.model.get_embedding_dimension()
        self.tokenizer = self.model.tokenizer
        self.prompt = self._prompt(spec.get("text_form") or {}, source)

    def _load(self, spec: dict):
        """(the SentenceTransformer, its origin): a path, a bundled package or the hub (or its cache)."""
        from sentence_transformers import SentenceTransformer
        source, origin = resolve_model_source(spec)
        # the precision asked for, whatever the checkpoint's dtype (transformers 5 loads a float16
        # checkpoint as float16 unless told otherwise)
        return SentenceTransformer(source, device=self.device, revision=spec.get("revision"),
                                   model_kwargs={"dtype": self.dtype}), origin

    def _prompt(self, form: dict, source: str) -> str | None:
        """The role's prompt (model_settings.role_spec): one of the model's own by name, or a
        literal one; the model's pooling leaves prompt tokens out where its config says so."""
        if "prompt_name" in form:
            name = form["prompt_name"]
            if name not in (self.model.prompts or {}):
                raise ValueError(f"model {source!r}: no prompt named {name!r} (role {form['role']}); the model's "
                                 f"prompts: {sorted(self.model.prompts or {})}. Use `prompts` for a literal prompt")
            return self.model.prompts[name]
        return form.get("prompt")

    def token_inputs(self, texts: list[str]) -> tuple[list[str], dict]:
        texts = [self.prompt + t for t in texts] if self.prompt else texts
        return texts, {"add_special_tokens": True, "truncation": True, "max_length": self.model.max_seq_length}

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        import numpy as np
        strings, kwargs = self.token_inputs(texts)
        enc = self.tokenizer(strings, return_attention_mask=False, **kwargs)
        return np.fromiter(map(len, enc["input_ids"]), dtype=np.int64, count=len(texts))

    def reference_features(self, texts: list[str]) -> dict:
        # as SentenceTransformer.encode(prompt=...) does: the prompt prepended; the tensors only
        # reach the model (the modality and prompt length entries never did)
        features = self.model.preprocess(texts, prompt=self.prompt) if self.prompt else self.model.preprocess(texts)
        return {k: v for k, v in features.items() if hasattr(v, "to")}

    def forward(self, features: dict):
        with self.torch.inference_mode():
            return self.model(self._inputs(features))["sentence_embedding"].float()



def load(spec: dict, device: str, model_file, job) -> SentenceTransformerEncoder:
    return SentenceTransformerEncoder(spec, device)


FAMILY = Family(
    name="sentence_transformers", load=load, modules=("torch", "transformers", "sentence_transformers"),
    uses_torch=True, trainable=True, loads_trained=True, model_folder=True, local_files=hub_model_files,
    requires={"anyOf": [{"required": ["name"]}, {"required": ["path"]}],
              "x-expected": "`name` (a Hugging Face id) or `path` (a local model directory)"})
