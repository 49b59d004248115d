"""The shared embedding loop (workflow_scripts/embed_pipeline.py): one tokenization per text, the
batches padded from it equal to the model's own, and the same vectors, byte for byte, as encoding
each batch through the family's `encode_batch` (what the embed job did before)."""
import logging
import threading
import time

import numpy as np
import pytest

from helpers import SENTENCES, tiny_bert
from workflow_scripts.embed_pipeline import BackgroundWrites, HostCopies, Prefetch, Tokens, embed_sorted, pad_values_of
from workflow_scripts.encoders.sentence_transformers import SentenceTransformerEncoder
from workflow_scripts.encoders.transformers import TransformersEncoder

MINILM = {"family": "sentence_transformers", "name": "sentence-transformers/all-MiniLM-L6-v2"}
TEXTS = SENTENCES + ["a much longer sentence about nothing in particular " * 8, "short", "",
                     "the cat", "Tokyo's 3.5% rise, e.g. in Q1 — was it?", "de kat slaapt"] * 3


def per_batch(encoder, texts, batch_size):
    """The embed job before the shared loop: sorted by token_lengths, encode_batch per batch."""
    out = np.empty((len(texts), encoder.dim), np.float32)
    order = np.argsort(-encoder.token_lengths(texts), kind="stable")
    for i in range(0, len(texts), batch_size):
        idx = order[i:i + batch_size]
        out[idx] = encoder.encode_batch([texts[j] for j in idx])
    return out


@pytest.fixture(scope="module")
def minilm():
    return SentenceTransformerEncoder(MINILM, "cpu")


@pytest.fixture
def quiet_log(caplog):
    log = logging.getLogger("pipeline-test")
    log.setLevel(logging.INFO)
    return log


def test_minilm_vectors_are_the_bytes_of_encoding_each_batch(minilm, quiet_log, caplog, monkeypatch):
    calls = []
    original = minilm.reference_features
    monkeypatch.setattr(minilm, "reference_features", lambda texts: calls.append(len(texts)) or original(texts))
    out = np.empty((len(TEXTS), minilm.dim), np.float32)
    embed_sorted(minilm, TEXTS, out, 4, quiet_log, "t")
    monkeypatch.undo()
    assert np.array_equal(out, per_batch(minilm, TEXTS, 4))
    # tokenized once: the library's own tokenization ran for the two checked batches only
    assert calls == [4, len(TEXTS) % 4 or 4] and "differ" not in caplog.text
    reference = minilm.model.encode(TEXTS, batch_size=32, convert_to_numpy=True)
    cos = np.einsum("ij,ij->i", out, reference) / (np.linalg.norm(out, axis=1) * np.linalg.norm(reference, axis=1))
    assert cos.min() >= 0.99999


def test_a_prompt_and_a_truncating_max_length_keep_the_bytes(quiet_log):
    enc = SentenceTransformerEncoder({**MINILM, "max_length": 12, "text_form": {"role": "query", "prompt": "query: "}},
                                     "cpu")
    out = np.empty((len(TEXTS), enc.dim), np.float32)
    embed_sorted(enc, TEXTS, out, 5, quiet_log, "t")
    assert np.array_equal(out, per_batch(enc, TEXTS, 5))
    assert enc.tokenize(TEXTS).lengths.max() == 12


@pytest.mark.parametrize("side", ["right", "left"])
def test_transformers_family_keeps_the_bytes_with_either_padding_side(tmp_path, quiet_log, side):
    enc = TransformersEncoder({"family": "transformers", "path": str(tiny_bert(tmp_path / "bert")),
                               "text_form": {"role": "text", "template": "passage: {text}"}}, "cpu")
    enc.tokenizer.padding_side = side
    tokens = enc.tokenize(TEXTS)
    idx = np.array([3, 0, 12, 9])
    padded = enc.collate(tokens, idx)
    reference = enc.reference_features([TEXTS[i] for i in idx])
    assert set(padded) == set(reference)
    for key in reference:
        assert padded[key].dtype == reference[key].dtype and bool((padded[key] == reference[key]).all()), key
    out = np.empty((len(TEXTS), enc.dim), np.float32)
    embed_sorted(enc, TEXTS, out, 3, quiet_log, "t")
    assert np.array_equal(out, per_batch(enc, TEXTS, 3))


def falls_back(encoder, log, caplog, monkeypatch, warning: str) -> None:
    """embed_sorted, with what `monkeypatch` changed, says `warning` and still stores the vectors of
    one encode_batch per batch (checked with the changes undone)."""
    out = np.empty((len(TEXTS), encoder.dim), np.float32)
    with caplog.at_level(logging.WARNING, logger="pipeline-test"):
        embed_sorted(encoder, TEXTS, out, 4, log, "t")
    assert warning in caplog.text
    monkeypatch.undo()
    assert np.array_equal(out, per_batch(encoder, TEXTS, 4))


def test_inputs_that_differ_from_the_models_own_fall_back_to_its_tokenization(minilm, quiet_log, caplog, monkeypatch):
    original = minilm.collate

    def off_by_one(tokens, idx):
        features = original(tokens, idx)
        return {**features, "input_ids": features["input_ids"] + 1}

    monkeypatch.setattr(minilm, "collate", off_by_one)
    falls_back(minilm, quiet_log, caplog, monkeypatch, "differ from the model's own")


def test_a_tokenizer_output_without_a_known_padding_value_falls_back(minilm, quiet_log, caplog, monkeypatch):
    original = minilm.tokenizer.__class__.__call__
    monkeypatch.setattr(minilm.tokenizer.__class__, "__call__", lambda self, *a, **k: {
        **original(self, *a, **k), "offsets": [[0] for _ in a[0]]} if k.get("padding") is False else original(self, *a, **k))
    falls_back(minilm, quiet_log, caplog, monkeypatch, "no padding value known for the tokenizer's 'offsets'")


def test_tokens_pad_as_the_tokenizer_pads(minilm):
    texts = ["a", "a somewhat longer text here", "", "two words"]
    tokens = Tokens(dict(minilm.tokenizer(texts, padding=False)), pad_values_of(minilm.tokenizer))
    padded = tokens.pad(np.array([1, 3, 2]))
    reference = minilm.tokenizer([texts[1], texts[3], texts[2]], padding=True, return_tensors="np")
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        assert np.array_equal(padded[key], reference[key]), key
    assert list(tokens.lengths) == [len(x) for x in minilm.tokenizer(texts)["input_ids"]]


def test_prefetch_keeps_order_raises_in_the_consumer_and_stops_when_left():
    assert list(Prefetch(lambda x: x * x, range(50), depth=3)) == [x * x for x in range(50)]

    def fails(x):
        if x == 5:
            raise ValueError("item 5")
        return x

    got = []
    with pytest.raises(ValueError, match="item 5"):
        for x in Prefetch(fails, range(10)):
            got.append(x)
    assert got == [0, 1, 2, 3, 4]
    produced = []
    it = Prefetch(lambda x: produced.append(x) or x, range(10_000), depth=2)
    for x in it:
        if x == 3:
            break
    it.thread.join(timeout=5)
    assert not it.thread.is_alive() and len(produced) < 10  # bounded: it never ran far ahead


def test_background_writes_run_in_order_and_raise_errors():
    seen = []
    with BackgroundWrites() as writes:
        for i in range(5):
            writes.submit(lambda i: (time.sleep(0.01), seen.append((i, threading.current_thread().name))), i)
    assert [i for i, _ in seen] == list(range(5)) and all(name != "MainThread" for _, name in seen)

    def broken():
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        with BackgroundWrites() as writes:
            writes.submit(broken)
            writes.submit(lambda: None)


def test_host_copies_on_the_cpu_hand_back_the_same_memory():
    import torch
    copies = HostCopies(torch, "cpu", 4, 8)
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    [(idx, arr)] = copies.push([1, 2, 3], t)
    assert idx == [1, 2, 3] and arr.ctypes.data == t.data_ptr() and copies.drain() == []


def test_host_copies_on_a_gpu_return_every_batch_in_order():
    import torch
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here")
    copies = HostCopies(torch, "cuda", 4, 8, depth=2)
    got = []
    for b in range(7):
        got += copies.push(b, torch.full((8 - b % 3, 4), float(b), device="cuda"))
    got += copies.drain()
    assert [b for b, _ in got] == list(range(7))
    assert all(arr.shape == (8 - b % 3, 4) and (arr == b).all() for b, arr in got)


def test_minilm_on_a_gpu_matches_the_cpu(minilm, quiet_log):
    import torch
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here")
    gpu = SentenceTransformerEncoder(MINILM, "cuda")
    out = np.empty((len(TEXTS), gpu.dim), np.float32)
    embed_sorted(gpu, TEXTS, out, 4, quiet_log, "t")
    assert np.allclose(out, per_batch(gpu, TEXTS, 4), atol=1e-5)
    assert np.allclose(out, per_batch(minilm, TEXTS, 4), atol=1e-4)
