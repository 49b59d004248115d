"""Family `tfidf`: scikit-learn's TF-IDF vectorizer (no stop-word removal), transforming texts with
the vocabulary and idf that tfidf_fit.py fits per text set; stored sparse."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from workflow_scripts.encoders import DEFAULT_TOKEN_PATTERN, Family

def tfidf_vectorizer(spec: dict, vocabulary=None):
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    return TfidfVectorizer(
        lowercase=spec.get("lowercase", True),
        token_pattern=spec.get("token_pattern", DEFAULT_TOKEN_PATTERN),
        stop_words=None,  # the inserted words must count
        min_df=spec.get("min_df", 1),
        max_features=spec.get("max_features"),
        sublinear_tf=spec.get("sublinear_tf", False),
        norm=None,  # raw tf-idf vectors; cosine divides by the stored norms
        vocabulary=vocabulary,
        dtype=np.float32,
    )


def tfidf_settings(spec: dict) -> SimpleNamespace:
    """What tfidf_vectorizer(spec) is set to, as far as fitting reads it (the analyzer's options,
    df limits, idf smoothing, dtype), without importing scikit-learn: that import is 2.8 s of every
    fit job, whose counting is polars'. A test compares these with the vectorizer's get_params()."""
    import numpy as np
    return SimpleNamespace(
        lowercase=spec.get("lowercase", True), token_pattern=spec.get("token_pattern", DEFAULT_TOKEN_PATTERN),
        stop_words=None, min_df=spec.get("min_df", 1), max_df=1.0, max_features=spec.get("max_features"),
        sublinear_tf=spec.get("sublinear_tf", False), smooth_idf=True, dtype=np.float32, analyzer="word",
        ngram_range=(1, 1), preprocessor=None, tokenizer=None, strip_accents=None, input="content")


def tfidf_transform(fitted: dict, texts: list[str]):
    import numpy as np
    vec = tfidf_vectorizer(fitted["spec"], vocabulary=fitted["vocabulary"])
    vec.idf_ = np.asarray(fitted["idf"], dtype=np.float32)
    return vec.transform(texts)


class TfidfEncoder:
    """The fitted vectorizer of a text set (the fit job's file)."""

    def __init__(self, fitted: dict):
        self.fitted = fitted
        self.dim = len(fitted["vocabulary"])
        self.origin = f"tf-idf fitted on {fitted['corpus']} ({fitted['fit_on']}, {fitted['documents']} texts)"

    def token_lengths(self, texts: list[str]):
        import numpy as np
        return np.zeros(len(texts), dtype=np.int64)

    def encode_batch(self, texts: list[str]):
        return tfidf_transform(self.fitted, texts)

    def manifest_fields(self) -> dict:
        return {"origin": self.origin, "vocabulary": self.dim}


def load(spec: dict, device: str, model_file, job) -> TfidfEncoder:
    return TfidfEncoder(json.loads(Path(job.fitted).read_text()))


def sample_encoder(spec: dict, texts: list[str], device: str, model_file) -> TfidfEncoder:
    """A fit on the sample, standing in for the fitted vocabulary the job reads."""
    vectorizer = tfidf_vectorizer(spec).fit(texts)
    return TfidfEncoder({"spec": spec, "vocabulary": {w: int(i) for w, i in vectorizer.vocabulary_.items()},
                         "idf": vectorizer.idf_.tolist(), "corpus": "the sample", "fit_on": "texts",
                         "documents": len(texts)})


def settings_label(spec: dict) -> str:
    pattern = spec.get("token_pattern", DEFAULT_TOKEN_PATTERN)
    return (f"tfidf preset {spec.get('preset', 'project')}: token_pattern {pattern}, "
            f"fit_on {spec.get('fit_on', 'originals_and_variants')}")


# Named settings that reproduce a publication. `paper`: the TF-IDF of the CSC seed paper's Table 3
# (its reference code uses scikit-learn's defaults): tokens of two or more word characters, so an
# inserted `a` is invisible, and vocabulary and idf fitted on the original sentences alone.
# `project`: this workflow's defaults (one-letter tokens count; fitted on originals and variants).
TFIDF_PRESETS = {
    "paper": {"token_pattern": r"(?u)\b\w\w+\b", "fit_on": "originals"},
    "project": {"token_pattern": r"(?u)\b\w+\b", "fit_on": "originals_and_variants"},
}

FAMILY = Family(
    name="tfidf", load=load, modules=("sklearn",), sparse=True, needs=("fitted",), presets=TFIDF_PRESETS,
    sample_encoder=sample_encoder, settings_label=settings_label,
    origin_label=lambda spec: "scikit-learn TF-IDF, fitted per text set")
