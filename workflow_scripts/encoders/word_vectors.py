"""Family `word_vectors`: the mean of raw word2vec/GloVe vectors, unknown words zero."""
from __future__ import annotations

from typing import TYPE_CHECKING

from workflow_scripts.encoders import LOG, Family, model_file_of, model_file_required

if TYPE_CHECKING:  # annotations only: numpy is imported where it is used
    import numpy as np


class WordVectorsEncoder:
    """Mean of raw word vectors, as the seed 004 baselines (GloVe, word2vec) are computed: a text is
    split on whitespace, each word looked up in a word2vec text or binary file or a GloVe text file
    (no header line; detected), and the vectors averaged with an unknown word as a zero vector.
    A text of unknown words only stays a zero vector (norm 0): the probes count it as undefined.
    `lowercase: true` looks words up in lower case (GloVe's vocabulary is lower case). Unlike family
    fasttext (fastText's sentence vector: a mean of L2-normalised word vectors), nothing is
    normalised; a fastText `.vec` file read here gives the raw mean."""

    MAX_REPORTED = 20  # unknown words named in the log (then only counted)

    def __init__(self, spec: dict, model_path: str):
        from gensim.models import KeyedVectors
        from gensim.utils import open as open_any  # .gz and .bz2 too
        path = str(model_path)
        binary = spec.get("binary", path.endswith((".bin", ".bin.gz")))
        header = True
        if not binary:
            with open_any(path, "rb") as f:
                first = f.readline().split()
            header = len(first) == 2 and all(x.isdigit() for x in first)
        self.vectors = KeyedVectors.load_word2vec_format(path, binary=binary, no_header=not header)
        self.index = self.vectors.key_to_index
        self.lowercase = spec.get("lowercase", False)
        self.dim = self.vectors.vector_size
        self.unknown: set[str] = set()
        self.origin = (f"word vectors {path} ({'word2vec binary' if binary else 'word2vec text' if header else 'GloVe text'}"
                       f", {len(self.index)} words; mean of raw vectors, unknown words zero)")

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        import numpy as np
        return np.fromiter((len(t.split()) for t in texts), dtype=np.int64, count=len(texts))

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        import numpy as np
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            words = (text.lower() if self.lowercase else text).split()
            rows = [self.index.get(w) for w in words]
            known = [r for r in rows if r is not None]
            if known:
                out[i] = self.vectors.vectors[known].sum(axis=0, dtype=np.float64) / len(words)
            for w, r in zip(words, rows):
                if r is None and w not in self.unknown:
                    self.unknown.add(w)
                    if len(self.unknown) <= self.MAX_REPORTED:
                        LOG.warning("word vectors: %r is not in the vocabulary (a zero vector in the mean)%s", w,
                                    "; further unknown words are not named" if len(self.unknown) == self.MAX_REPORTED
                                    else "")
        return out



def load(spec: dict, device: str, model_file, job) -> WordVectorsEncoder:
    return WordVectorsEncoder(spec, model_file or spec["path"])


FAMILY = Family(
    name="word_vectors", load=load, modules=("gensim",), model_file=True, local_files=model_file_of,
    requires=model_file_required("a word2vec/GloVe text or binary file"))
