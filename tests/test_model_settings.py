"""Pooling, normalisation, per-role templates and prompts, and local models tracked by content
(workflow_scripts/model_settings.py, encoders/, Study.embed_spec). Tiny random models only."""
import json
import os

import numpy as np
import pytest

from helpers import SENTENCES, tiny_bert
from test_embed import write_texts
from workflow_scripts.embed import embed_partition
from workflow_scripts.encoders.sentence_transformers import SentenceTransformerEncoder
from workflow_scripts.encoders.transformers import TransformersEncoder
from workflow_scripts.model_settings import ModelDigests, role_spec, scope_role
from workflow_scripts.study import Study
from workflow_scripts.vector_store import StoreMismatch, VectorStore, spec_digest

TEXTS = ["the cat sleeps on the mat", "a dog runs", "she does not like cold tea today"]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return tiny_bert(tmp_path_factory.mktemp("models") / "bert")


def hand_pool(hidden: np.ndarray, mask: np.ndarray, pooling: str) -> np.ndarray:
    """Pooling written out row by row from the last hidden states and the attention mask."""
    out = []
    for h, m in zip(hidden, mask):
        real = np.flatnonzero(m)  # positions of real tokens, wherever the padding is
        out.append({"mean": h[real].mean(0), "cls": h[real[0]], "last_token": h[real[-1]],
                    "max": h[real].max(0)}[pooling])
    return np.stack(out)


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("pooling", ["mean", "cls", "last_token", "max"])
def test_pooling_equals_a_hand_computation_under_either_padding(bert, pooling, side):
    import torch
    enc = TransformersEncoder({"family": "transformers", "path": str(bert), "pooling": pooling}, "cpu")
    enc.tokenizer.padding_side = side
    batch = enc.tokenizer(TEXTS, padding=True, return_tensors="pt")
    mask = batch["attention_mask"].numpy()
    assert (mask == 0).any() and ((mask[:, 0] == 0).any() if side == "left" else (mask[:, -1] == 0).any())
    with torch.inference_mode():
        hidden = enc.model(**batch).last_hidden_state.numpy()
    expected = hand_pool(hidden, mask, pooling)
    assert np.allclose(enc.encode_batch(TEXTS), expected, atol=1e-5)
    if side == "right":  # padded after the text: each text's vector is its vector alone (no padding)
        for text, vec in zip(TEXTS, enc.encode_batch(TEXTS)):
            one = enc.tokenizer(text, return_tensors="pt")
            with torch.inference_mode():
                h = enc.model(**one).last_hidden_state.numpy()
            assert np.allclose(vec, hand_pool(h, one["attention_mask"].numpy(), pooling)[0], atol=1e-5)
    # the poolings differ from each other (a test that cannot tell them apart would pass any)
    assert not np.allclose(expected, hand_pool(hidden, mask, "mean" if pooling != "mean" else "cls"), atol=1e-3)


def test_normalize_gives_unit_vectors_of_the_pooled_direction(bert):
    plain = TransformersEncoder({"family": "transformers", "path": str(bert), "pooling": "cls"}, "cpu")
    unit = TransformersEncoder({"family": "transformers", "path": str(bert), "pooling": "cls", "normalize": True}, "cpu")
    a, b = plain.encode_batch(TEXTS), unit.encode_batch(TEXTS)
    assert np.allclose(np.linalg.norm(b, axis=1), 1, atol=1e-6)
    assert np.allclose(b, a / np.linalg.norm(a, axis=1, keepdims=True), atol=1e-6)
    assert not np.allclose(np.linalg.norm(a, axis=1), 1, atol=1e-3)


def test_template_changes_only_its_roles_texts(bert, monkeypatch):
    spec = {"family": "transformers", "path": str(bert),
            "templates": {"query": "query: {text}", "document": "passage: {text}", "text": "{text}"}}
    seen = []
    query = TransformersEncoder(role_spec(spec, "query"), "cpu")
    original = query.tokenizer.__class__.__call__

    def spy(self, texts, *args, **kwargs):
        seen.append(list(texts))
        return original(self, texts, *args, **kwargs)

    monkeypatch.setattr(query.tokenizer.__class__, "__call__", spy)
    vq = query.encode_batch(TEXTS[:2])
    assert seen[-1] == ["query: the cat sleeps on the mat", "query: a dog runs"]
    TransformersEncoder(role_spec(spec, "document"), "cpu").encode_batch(TEXTS[:2])
    assert seen[-1] == ["passage: the cat sleeps on the mat", "passage: a dog runs"]
    vt = TransformersEncoder(role_spec(spec, "text"), "cpu").encode_batch(TEXTS[:2])
    assert seen[-1] == TEXTS[:2]  # `{text}` is no template
    monkeypatch.undo()
    plain = TransformersEncoder({"family": "transformers", "path": str(bert)}, "cpu")
    assert np.allclose(vt, plain.encode_batch(TEXTS[:2]), atol=1e-6)
    assert np.allclose(vq, plain.encode_batch(["query: " + t for t in TEXTS[:2]]), atol=1e-6)
    assert not np.allclose(vq, vt, atol=1e-3)


def test_role_spec_changes_only_the_role_a_form_is_set_for():
    base = {"family": "transformers", "name": "org/m"}
    spec = {**base, "templates": {"query": "Instruct: find the passage\nQuery: {text}"}}
    assert role_spec(spec, "document") == base and role_spec(spec, "text") == base
    assert role_spec(spec, "query") == {**base, "text_form": {"role": "query",
                                                              "template": "Instruct: find the passage\nQuery: {text}"}}
    assert role_spec(role_spec(spec, "query"), "text") == role_spec(spec, "query")  # idempotent
    assert spec_digest(spec, "document") == spec_digest(base) != spec_digest(spec, "query")
    assert [scope_role(s) for s in ("retrieval.tele.query", "retrieval.tele", "csc_en", "triplets.sick")] == \
        ["query", "document", "text", "text"]


@pytest.fixture(scope="module")
def tiny_st(bert, tmp_path_factory):
    """A sentence-transformers model (tiny BERT + mean pooling) with prompts in its config."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    model = SentenceTransformer(modules=[Transformer(str(bert)), Pooling(32, "mean")], device="cpu",
                                prompts={"query": "query: ", "passage": "passage: "})
    path = tmp_path_factory.mktemp("models") / "st"
    model.save(str(path))
    return path


def test_sentence_transformers_prompt_name_per_role(tiny_st):
    from sentence_transformers import SentenceTransformer
    spec = {"family": "sentence_transformers", "path": str(tiny_st),
            "prompt_name": {"query": "query", "document": "passage"}}
    reference = SentenceTransformer(str(tiny_st), device="cpu")
    for role, name in (("query", "query"), ("document", "passage")):
        enc = SentenceTransformerEncoder(role_spec(spec, role), "cpu")
        assert enc.prompt == {"query": "query: ", "passage": "passage: "}[name]
        assert np.allclose(enc.encode_batch(TEXTS), reference.encode(TEXTS, prompt_name=name), atol=1e-5)
    text = SentenceTransformerEncoder(role_spec(spec, "text"), "cpu")
    assert text.prompt is None
    assert np.allclose(text.encode_batch(TEXTS), reference.encode(TEXTS), atol=1e-5)
    assert not np.allclose(text.encode_batch(TEXTS), reference.encode(TEXTS, prompt_name="query"), atol=1e-4)
    literal = SentenceTransformerEncoder(role_spec({**spec, "prompt_name": {}, "prompts": {"query": "query: "}},
                                                   "query"), "cpu")
    assert np.allclose(literal.encode_batch(TEXTS), reference.encode(TEXTS, prompt_name="query"), atol=1e-5)
    with pytest.raises(ValueError, match=r"no prompt named 'search' \(role query\).*'passage', 'query'\]"):
        SentenceTransformerEncoder(role_spec({**spec, "prompt_name": {"query": "search"}}, "query"), "cpu")


def test_store_manifest_records_the_prompt_and_the_model_digest(bert, tmp_path, log):
    study = Study({"models": {"b": {"family": "transformers", "path": str(bert), "device": "cpu",
                                    "templates": {"query": "query: {text}"}}}}, str(tmp_path / "results"), parts=1)
    spec = study.embed_spec("b")
    assert len(spec["model_sha256"]) == 64
    files = [write_texts(tmp_path / "t.parquet", SENTENCES)]
    store = str(tmp_path / "q" / "part-000")
    m = embed_partition("b", study.embed_spec("b", "retrieval.d.query"), "retrieval.d.query", 0, 1, files, store, 1, log)
    assert m["text_form"] == {"role": "query", "template": "query: {text}"}
    assert m["model_sha256"] == spec["model_sha256"]
    assert json.loads((tmp_path / "q" / "part-000" / "manifest.json").read_text())["text_form"] == m["text_form"]
    VectorStore([store], model="b", spec_digest=spec_digest(spec, "query"))
    # a store made with another prompt (here: none, as a document) is refused where a query store is expected
    doc = str(tmp_path / "d" / "part-000")
    m = embed_partition("b", spec, "retrieval.d", 0, 1, files, doc, 1, log)
    assert m["text_form"] is None
    with pytest.raises(StoreMismatch, match="another configuration"):
        VectorStore([doc], model="b", spec_digest=spec_digest(spec, "query"))


def test_digest_cache_is_used_while_size_and_mtime_hold(bert, tmp_path):
    import shutil
    folder = tmp_path / "m"
    shutil.copytree(bert, folder)
    (folder / "README.md").write_text("a model card")
    cache = str(tmp_path / "cache" / "digests.json")
    first = ModelDigests(cache)
    digest = first.digest([folder])
    first.save()
    files = [f for f in folder.iterdir() if f.suffix != ".md"]
    assert first.reads == len(files) >= 3
    again = ModelDigests(cache)
    assert again.digest([folder]) == digest and again.reads == 0  # nothing read: all from the cache
    (folder / "README.md").write_text("another card")  # not part of the model
    assert ModelDigests(cache).digest([folder]) == digest
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # same size, new content and mtime
    st = weights.stat()
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    changed = ModelDigests(cache)
    assert changed.digest([folder]) != digest and changed.reads == 1
    # the cache is trusted while size and mtime hold: a rewrite that restores both is not seen
    # (the documented trade-off), and a single file's digest is its sha256
    import hashlib
    assert ModelDigests(None).digest([weights]) == hashlib.sha256(weights.read_bytes()).hexdigest()


def test_a_new_checkpoint_changes_only_that_models_embed_params(bert, tmp_path):
    import shutil
    for name in ("mine", "other"):
        shutil.copytree(bert, tmp_path / name)
    (tmp_path / "vectors.vec").write_text("2 2\ncat 1 0\ndog 0 1\n")
    config = {"models": {
        "mine": {"family": "transformers", "path": str(tmp_path / "mine"), "device": "cpu",
                 "templates": {"query": "query: {text}"}},
        "other": {"family": "sentence_transformers", "name": str(tmp_path / "other"), "device": "cpu"},
        "hub": {"family": "sentence_transformers", "name": "org/model", "revision": "abc", "device": "cpu"},
        "wv": {"family": "word_vectors", "path": str(tmp_path / "vectors.vec")},
        "tfidf": {"family": "tfidf"}}}
    results = str(tmp_path / "results")
    scopes = ["csc_en", "retrieval.d", "retrieval.d.query"]

    def params():
        study = Study(config, results, parts=1)
        return {(m, s): json.dumps(study.embed_spec(m, s), sort_keys=True) for m in config["models"] for s in scopes}

    before = params()
    assert "model_sha256" not in before[("hub", "csc_en")] and "model_sha256" not in before[("tfidf", "csc_en")]
    assert "model_sha256" in before[("other", "csc_en")] and "model_sha256" in before[("wv", "csc_en")]
    # the query template changes the query store only
    assert before[("mine", "csc_en")] == before[("mine", "retrieval.d")] != before[("mine", "retrieval.d.query")]
    assert os.path.exists(f"{results}/.cache/model_digests.json")
    assert params() == before  # replanning changes nothing
    (tmp_path / "mine" / "model.safetensors").write_bytes(b"a new checkpoint")
    after = params()
    assert {k for k in before if before[k] != after[k]} == {("mine", s) for s in scopes}


def test_retrieval_searches_with_query_vectors_from_the_query_store(bert, tmp_path, log):
    """A query template: the questions are embedded as a text set of their own (role query), the
    set's texts as documents; the search takes each from its store, and refuses without the first."""
    import polars as pl
    from retrieval.test_search_jobs import DOCS, QUERIES, SETTINGS, write_beir
    from workflow_scripts.retrieval.query_texts import write_query_texts
    from workflow_scripts.retrieval.search import search_job
    from workflow_scripts.texts import write_text_partitions
    set_dir = str(write_beir(tmp_path / "set"))
    spec = {"family": "transformers", "path": str(bert), "device": "cpu", "pooling": "max", "normalize": True,
            "templates": {"query": "query: {text}"}}
    doc_texts, query_texts = [tmp_path / "texts" / "d.parquet"], [tmp_path / "texts" / "q.parquet"]
    write_text_partitions(DOCS + list(QUERIES.values()), doc_texts)
    assert write_query_texts(set_dir, [str(query_texts[0])], log)
    assert pl.read_parquet(query_texts[0])["text"].to_list() == list(QUERIES.values())
    doc = str(tmp_path / "stores" / "retrieval.t" / "part-000")
    query = str(tmp_path / "stores" / "retrieval.t.query" / "part-000")
    embed_partition("b", spec, "retrieval.t", 0, 1, [str(doc_texts[0])], doc, 1, log)
    embed_partition("b", spec, "retrieval.t.query", 0, 1, [str(query_texts[0])], query, 1, log)
    out = tmp_path / "out"
    summary = search_job(set_dir, [doc, query], "b", spec, "t", SETTINGS, 3, "cpu", 1, str(out / "topk.parquet"),
                         str(out / "sims.parquet"), str(out / "search.json"), log)
    assert summary["text_forms"] == {"query": {"role": "query", "template": "query: {text}"}, "document": None}
    plain = TransformersEncoder({**spec, "templates": {}}, "cpu")
    q = plain.encode_batch(["query: " + t for t in QUERIES.values()]).astype(np.float64)
    unprompted = plain.encode_batch(list(QUERIES.values())).astype(np.float64)
    d = plain.encode_batch(DOCS).astype(np.float64)
    topk = pl.read_parquet(out / "topk.parquet")
    qi = [list(QUERIES).index(x) for x in topk["query_id"]]
    ci = [int(x[1:]) for x in topk["corpus_id"]]
    assert np.allclose(topk["score"].to_numpy(), np.einsum("ij,ij->i", q[qi], d[ci]), atol=1e-5)
    assert np.abs(topk["score"].to_numpy() - np.einsum("ij,ij->i", unprompted[qi], d[ci])).max() > 1e-4
    with pytest.raises(StoreMismatch, match="embeds queries apart from documents"):
        search_job(set_dir, [doc], "b", spec, "t", SETTINGS, 3, "cpu", 1, str(out / "t2.parquet"),
                   str(out / "s2.parquet"), str(out / "j2.json"), log)


@pytest.fixture(scope="module")
def tiny_decoder(bert, tmp_path_factory):
    """A 2-layer random GPT-2 (causal attention) with the tiny BERT's word-level tokenizer."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2Model
    path = tmp_path_factory.mktemp("models") / "gpt2"
    tokenizer = AutoTokenizer.from_pretrained(bert)
    torch.manual_seed(0)
    GPT2Model(GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2, n_positions=64)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_last_token_of_a_decoder_is_its_last_real_tokens_state(tiny_decoder):
    """Causal attention: with padding after the text, the last real token's state is the one the
    text alone gives; with padding before it, the last position (a hand computation on the batch)."""
    import torch
    enc = TransformersEncoder({"family": "transformers", "path": str(tiny_decoder), "pooling": "last_token"}, "cpu")
    right = enc.encode_batch(TEXTS)
    for text, vec in zip(TEXTS, right):
        one = enc.tokenizer(text, return_tensors="pt")
        with torch.inference_mode():
            alone = enc.model(**one).last_hidden_state[0, -1].numpy()
        assert np.allclose(vec, alone, atol=1e-5)
    enc.tokenizer.padding_side = "left"
    batch = enc.tokenizer(TEXTS, padding=True, return_tensors="pt")
    assert (batch["attention_mask"][:, 0] == 0).any()
    with torch.inference_mode():
        hidden = enc.model(**batch).last_hidden_state.numpy()
    assert np.allclose(enc.encode_batch(TEXTS), hidden[:, -1], atol=1e-5)
    # the mean would be another vector: the test tells poolings apart
    assert not np.allclose(right, hand_pool(hidden, batch["attention_mask"].numpy(), "mean"), atol=1e-3)
