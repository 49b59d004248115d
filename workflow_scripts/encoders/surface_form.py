"""Family `surface_form`: the word-overlap yardstick, not a language model: binary sets of words or
character n-grams as unit vectors, stored sparse (cosine = Ochiai coefficient); nothing is fitted or
downloaded."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from workflow_scripts.encoders import DEFAULT_TOKEN_PATTERN, Family

if TYPE_CHECKING:  # annotations only: numpy is imported where it is used
    import numpy as np

SURFACE_FORM_TOKENIZERS = ("words", "treebank", "char_ngrams")
# the Penn Treebank's clitics, kept whole (TreebankWordTokenizer's CONTRACTIONS and ENDING_QUOTES)
TREEBANK_CLITICS = frozenset({"n't", "'s", "'m", "'d", "'ll", "'re", "'ve"})
# the Treebank cuts "can't" into ca + n't, "won't" into wo + n't: give the verb back its own form, so
# that "can't" shares `can` with "can" (as `is` in "isn't" does with "is")
TREEBANK_STEMS = {"ca": "can", "wo": "will", "sha": "shall"}
INNER_PERIOD = re.compile(r"\.(\s)")


def surface_form_tokenizer(spec: dict) -> str:
    """The surface-form tokenizer of a model entry: `tokenizer`, else the older `features` key
    (words | char_ngrams, which name the tokenizer of the same name), else `words`. The config
    check (config._surface_form_problems) refuses a `features` that contradicts `tokenizer`."""
    return spec.get("tokenizer") or spec.get("features") or "words"


def treebank_words(tokenizer, text: str, pattern: re.Pattern) -> list[str]:
    """Words of a text under the Treebank rule: contractions split as the Penn Treebank does ("isn't"
    -> is + n't), clitics kept whole, and every other token cut into the runs of `pattern` (so that
    punctuation, which the Treebank keeps as tokens, counts as in the `words` rule: not at all)."""
    # the Treebank expects one sentence: it splits only the final period, and a contraction glued to
    # an inner one ("isn't. She") stays whole; punctuation is dropped below, so cutting it off is free
    tokens = tokenizer.tokenize(INNER_PERIOD.sub(r" .\1", text))
    out = []
    for i, token in enumerate(tokens):
        if token.lower() in TREEBANK_CLITICS:
            out.append(token)
        elif i + 1 < len(tokens) and tokens[i + 1].lower() == "n't" and token.lower() in TREEBANK_STEMS:
            stem = TREEBANK_STEMS[token.lower()]
            out.append(stem.upper() if token.isupper() else stem.capitalize() if token[0].isupper() else stem)
        else:
            out += pattern.findall(token)
    return out


class SurfaceFormEncoder:
    """The surface-form yardstick, NOT a language model: a text is the SET of its features (word
    n-grams, or character n-grams of the whitespace-normalised text; lower-cased by default), as a
    binary vector scaled to unit length. `tokenizer` says how words are cut: `words` takes the runs
    of `token_pattern` (so "isn't" -> isn + t), `treebank` first splits contractions as the Penn
    Treebank does (NLTK's TreebankWordTokenizer: "isn't" -> is + n't, "don't" -> do + n't) and then
    takes the runs of `token_pattern` in every other token; see surface_form_tokenizer. The cosine of two texts is then the
    Ochiai coefficient |A & B| / sqrt(|A| |B|), whatever other texts are embedded: nothing is fitted
    or downloaded. Repeated features count once (a set). A text without features (empty, or only
    punctuation for words) is a zero vector: its cosines are undefined (NaN), as for other families.
    A non-empty text shorter than the smallest character n-gram is one feature, itself.

    Stores are sparse (CSR, as TF-IDF's). A feature is named by a 64-bit hash of its string
    (common.text_key); its column is the rank of that hash among the features of the whole text set
    (`index`), so every partition of a text set numbers columns alike and the store's dimension is
    the number of distinct features there. The column numbering depends on the text set; the
    cosines do not (they count shared features). Two features share a column only if their 64-bit
    hashes collide (about n^2 / 2^65 for n distinct features: 3e-6 for ten million)."""

    def __init__(self, spec: dict):
        import numpy as np
        self.tokenizer = surface_form_tokenizer(spec)
        self.kind = "char_ngrams" if self.tokenizer == "char_ngrams" else "words"
        default = [1, 1] if self.kind == "words" else [3, 3]
        self.min_n, self.max_n = spec.get("ngram_range") or default
        self.lowercase = spec.get("lowercase", True)
        self.pattern = re.compile(spec.get("token_pattern", DEFAULT_TOKEN_PATTERN))
        self.columns = np.empty(0, np.uint64)
        self.dim = 0
        self.treebank = None
        if self.tokenizer == "treebank":
            from nltk.tokenize import TreebankWordTokenizer  # rules only: no NLTK data is read
            self.treebank = TreebankWordTokenizer()
        unit = {"words": "word", "treebank": "Treebank-tokenized word", "char_ngrams": "character"}[self.tokenizer]
        self.origin = (f"surface form ({unit} {self.min_n}-{self.max_n}-grams"
                       f"{', lower-cased' if self.lowercase else ''}; binary unit vectors, cosine = Ochiai "
                       "coefficient; not a language model)")

    def features(self, text: str) -> set[str]:
        if self.lowercase:
            text = text.lower()
        if self.treebank is not None:
            units, sep = treebank_words(self.treebank, text, self.pattern), " "
        elif self.kind == "words":
            units, sep = self.pattern.findall(text), " "
        else:
            units, sep = " ".join(text.split()), ""
            if 0 < len(units) < self.min_n:
                return {units}
        return {sep.join(units[i:i + n]) for n in range(self.min_n, self.max_n + 1)
                for i in range(len(units) - n + 1)}

    def feature_ids(self, text: str) -> np.ndarray:
        import numpy as np
        from workflow_scripts.common import text_key
        return np.unique(np.fromiter((text_key(f) for f in self.features(text)), dtype=np.uint64))

    def index(self, chunks) -> None:
        """Number the columns: every distinct feature of the texts (an iterable of text lists)."""
        import numpy as np
        seen = [self.columns]
        for texts in chunks:
            block = [self.feature_ids(t) for t in texts]
            seen = [np.unique(np.concatenate(seen + block))]
        self.columns = seen[0]
        self.dim = len(self.columns)

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        import numpy as np
        return np.zeros(len(texts), dtype=np.int64)

    def encode_batch(self, texts: list[str]):
        """CSR rows (float32) of unit binary vectors over the indexed columns."""
        import numpy as np
        import scipy.sparse
        ids = [self.feature_ids(t) for t in texts]
        if not self.dim and any(len(i) for i in ids):  # not indexed yet: these texts are the set
            self.index([texts])
        counts = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        flat = np.concatenate(ids) if ids else np.empty(0, np.uint64)
        cols = np.searchsorted(self.columns, flat)
        found = cols < self.dim
        found[found] = self.columns[cols[found]] == flat[found]
        if not found.all():
            raise ValueError("surface form: a text has features outside the indexed text set; index every text "
                             "of the set (all its partitions) before encoding")
        values = np.repeat(1.0 / np.sqrt(np.maximum(counts, 1)), counts).astype(np.float32)
        indptr = np.concatenate([[0], np.cumsum(counts)])
        # np.unique sorted each row's hashes, and ranks follow hashes: indices come sorted
        return scipy.sparse.csr_matrix((values, cols.astype(np.int32), indptr), shape=(len(texts), self.dim))


    def manifest_fields(self) -> dict:
        return {"origin": self.origin, "features": self.dim}


def load(spec: dict, device: str, model_file, job) -> SurfaceFormEncoder:
    """The encoder with its columns numbered over the whole text set (every partition alike)."""
    encoder = SurfaceFormEncoder(spec)
    if job.text_set:
        from workflow_scripts.texts import iter_chunks, unique_rows
        masks, _ = unique_rows(list(job.text_set))
        encoder.index(texts for _, texts in iter_chunks(list(job.text_set), masks, job.chunk_rows))
        job.log.info("%s: %d distinct features in the text set (%d file(s))", job.label, encoder.dim,
                     len(job.text_set))
    return encoder


def sample_encoder(spec: dict, texts: list[str], device: str, model_file) -> SurfaceFormEncoder:
    encoder = SurfaceFormEncoder(spec)
    encoder.index([texts])
    return encoder


# `features` is the older key: `words` and `char_ngrams` name the tokenizers of the same name, and
# word features are cut by either word tokenizer
FEATURES_OF_TOKENIZER = {"words": "words", "treebank": "words", "char_ngrams": "char_ngrams"}


def config_problems(name: str, m: dict) -> list[str]:
    """What the schema cannot say: an older `features` agrees with `tokenizer`, and an n-gram range
    runs from small to large."""
    problems = []
    tokenizer, features = m.get("tokenizer"), m.get("features")
    if tokenizer and features and FEATURES_OF_TOKENIZER.get(tokenizer) != features:
        problems.append(f"config key `models.{name}.features`: {features!r} contradicts `tokenizer: "
                        f"{tokenizer}`, which makes {FEATURES_OF_TOKENIZER.get(tokenizer)} features; "
                        "drop `features` (`tokenizer` replaces it)")
    lo_hi = m.get("ngram_range")
    if lo_hi and lo_hi[0] > lo_hi[1]:
        problems.append(f"config key `models.{name}.ngram_range`: {lo_hi!r} runs backwards; expected "
                        f"[min_n, max_n] with min_n <= max_n, e.g. [{lo_hi[1]}, {lo_hi[0]}]")
    return problems


def settings_label(spec: dict) -> str:
    tokenizer = surface_form_tokenizer(spec)
    lo, hi = spec.get("ngram_range") or ([3, 3] if tokenizer == "char_ngrams" else [1, 1])
    unit = {"words": "words", "treebank": "treebank words", "char_ngrams": "char_ngrams"}[tokenizer]
    return f"surface form: {unit} {lo}-{hi}-grams, Ochiai coefficient"


FAMILY = Family(
    name="surface_form", load=load, modules=("scipy", "nltk"),  # nltk: the treebank tokenizer
    sparse=True, needs=("text_set",), baseline=True, own_keys=("tokenizer", "features", "ngram_range"),
    sample_encoder=sample_encoder, config_problems=config_problems, settings_label=settings_label)
