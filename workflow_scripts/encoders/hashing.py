"""Family `hashing`: a declared stand-in for scale runs (hashed words x a random projection), not a
language model."""
from __future__ import annotations

from typing import TYPE_CHECKING

from workflow_scripts.encoders import Family

if TYPE_CHECKING:  # annotations only: numpy is imported where it is used
    import numpy as np


class HashingEncoder:
    """Stand-in encoder for scale runs, NOT a language model: hashed word counts (scikit-learn's
    HashingVectorizer) times a fixed Gaussian random projection to `dim` dimensions. It costs
    microseconds per text, so every stage can run at full corpus size on a CPU; its overlaps say
    nothing about meaning. Configs must declare it (`family: hashing`), and reports name it."""

    def __init__(self, spec: dict):
        import numpy as np
        from sklearn.feature_extraction.text import HashingVectorizer
        self.dim = spec.get("dim", 64)
        bits = spec.get("hash_bits", 18)
        self.vectorizer = HashingVectorizer(n_features=2 ** bits, lowercase=True, token_pattern=r"(?u)\b\w+\b",
                                            alternate_sign=False, norm=None, dtype=np.float32)
        rng = np.random.default_rng(spec.get("projection_seed", 0))
        self.projection = rng.standard_normal((2 ** bits, self.dim), dtype=np.float32) / np.float32(np.sqrt(self.dim))
        self.origin = f"hashing stand-in (2^{bits} hashed words -> {self.dim}-d random projection; not a language model)"

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        import numpy as np
        return np.zeros(len(texts), dtype=np.int64)  # cost does not depend on length: no sorting needed

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        import numpy as np
        return np.asarray(self.vectorizer.transform(texts) @ self.projection, dtype=np.float32)



def load(spec: dict, device: str, model_file, job) -> HashingEncoder:
    return HashingEncoder(spec)


FAMILY = Family(
    name="hashing", load=load, modules=("sklearn",), stand_in=True,
    settings_label=lambda spec: "hashing stand-in, not a language model",
    origin_label=lambda spec: "hashed words x seeded random projection")
