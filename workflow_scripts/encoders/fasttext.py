"""Family `fasttext`: a fastText `.bin` model; a sentence is fastText's sentence vector."""
from __future__ import annotations

from typing import TYPE_CHECKING

from workflow_scripts.encoders import Family, model_file_of, model_file_required

if TYPE_CHECKING:  # annotations only: numpy is imported where it is used
    import numpy as np


class FastTextEncoder:
    def __init__(self, spec: dict, model_path: str):
        import fasttext
        self.model = fasttext.load_model(model_path)
        self.dim = self.model.get_dimension()
        self.origin = f"fastText {model_path}"

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        import numpy as np
        return np.fromiter((len(t.split()) for t in texts), dtype=np.int64, count=len(texts))

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        # fastText has no batch API; its sentence vector is the mean of normalised word vectors
        import numpy as np
        return np.stack([self.model.get_sentence_vector(t) for t in texts]).astype(np.float32)



def load(spec: dict, device: str, model_file, job) -> FastTextEncoder:
    return FastTextEncoder(spec, model_file or spec["path"])


FAMILY = Family(
    name="fasttext", load=load, modules=("fasttext",), model_file=True, local_files=model_file_of,
    requires=model_file_required("a fastText .bin"))
