"""Few model loads: a model's store of a text set has its device's number of partitions
(`embedding_partitions_per_device`, a divisor of `embedding_partitions`), store partition p holding
text partitions p, p + n, ...; one embedding job (one model load) per store partition."""
import re

import numpy as np
import pytest

from conftest import requires_shared
from helpers import SENTENCES
from workflow_scripts.common import partition_of, text_key
from workflow_scripts.config import ConfigError, validate
from workflow_scripts.embed import embed_partition
from workflow_scripts.settheory.operators import encoder_stores
from workflow_scripts.study import Study
from workflow_scripts.texts import write_text_partitions
from workflow_scripts.vector_store import VectorStore


def config(**extra) -> dict:
    return {"seed": 1, "embedding_partitions": 4,
            "sources": {"s": {"format": "lines", "path": "s.txt", "languages": ["en"]}},
            "corpora": {"c": {"source": "s", "language": "en"}},
            "models": {"gpu": {"family": "sentence_transformers", "name": "org/m", "device": "cuda"},
                       "cpu": {"family": "hashing", "dim": 8}}, **extra}


def test_a_gpu_model_has_its_devices_store_partitions_each_of_every_nth_text_partition():
    s = Study(validate(config(embedding_partitions_per_device={"cuda": 2})), "res")
    assert (s.store_parts("gpu"), s.store_parts("cpu")) == (2, 4)
    assert s.stores("gpu", "c") == ["res/embeddings/gpu/c/part-000", "res/embeddings/gpu/c/part-001"]
    assert s.store_texts("gpu", "c", 1) == ["res/texts/c/part-001.parquet", "res/texts/c/part-003.parquet"]
    assert s.store_texts("cpu", "c", 1) == ["res/texts/c/part-001.parquet"]
    # the text partitions' keys are those of the store partition: keys % 4 in {1, 3} <=> keys % 2 == 1
    keys = np.arange(1000, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    assert np.array_equal(np.isin(partition_of(keys, 4), [1, 3]), partition_of(keys, 2) == 1)
    unset = Study(validate(config()), "res")
    assert unset.store_parts("gpu") == unset.store_parts("cpu") == 4


def test_a_device_partition_count_must_divide_the_text_partitions():
    with pytest.raises(ConfigError, match=r"`embedding_partitions_per_device.cuda`: 3 does not divide "
                                          r"embedding_partitions \(4\); expected a divisor of it .* e.g. 1, 2, 4"):
        validate(config(embedding_partitions_per_device={"cuda": 3}))
    with pytest.raises(ConfigError, match=r"embedding_partitions_per_device.*tpu"):
        validate(config(embedding_partitions_per_device={"tpu": 1}))


def test_a_store_partition_of_several_text_partitions_holds_their_texts_and_the_same_vectors(tmp_path, log):
    texts = SENTENCES + [f"sentence number {i} of the set" for i in range(40)]
    files = [str(tmp_path / f"part-{p:03d}.parquet") for p in range(4)]
    write_text_partitions(texts, files)
    spec = {"family": "hashing", "dim": 16}
    per_text = [str(tmp_path / f"fine-{p}") for p in range(4)]
    for p in range(4):
        embed_partition("h", spec, "c", p, 4, [files[p]], per_text[p], 1, log)
    coarse = [str(tmp_path / f"coarse-{p}") for p in range(2)]
    for p in range(2):
        m = embed_partition("h", spec, "c", p, 2, files[p::2], coarse[p], 1, log, chunk_rows=7)
        assert (m["partition"], m["partitions"]) == (p, 2)
    keys = np.array([text_key(t) for t in texts], np.uint64)
    fine, _ = VectorStore(per_text).lookup(keys)
    wide, _ = VectorStore(coarse).lookup(keys)
    assert np.array_equal(fine, wide) and np.abs(wide).sum(axis=1).min() > 0


def test_filter_encoders_with_different_store_counts_get_their_own(tmp_path):
    import json
    stores = []
    for model, parts in (("a", 2), ("b", 1)):
        for p in range(parts):
            d = tmp_path / model / f"part-{p:03d}"
            d.mkdir(parents=True)
            (d / "manifest.json").write_text(json.dumps({"model": model}))
            stores.append(str(d))
    out = encoder_stores([{"name": "a"}, {"name": "b"}], stores)
    assert [len(e["stores"]) for e in out] == [2, 1] and out[1]["stores"] == [stores[2]]
    with pytest.raises(ValueError, match=r"none for \['c'\]"):
        encoder_stores([{"name": "a"}, {"name": "c"}], stores)


@requires_shared("nltk_data")
def test_the_workflow_plans_one_embedding_job_per_device_partition(tmp_path):
    """Dry run: the GPU model's store of a corpus is 2 jobs reading 2 text partitions each (their
    partitions param 2), the CPU models' 4 jobs of one; CSC's scoring reads each model's stores."""
    from workflow_runner import snakemake, write_config
    (tmp_path / "bitext.txt").write_text("the cat sleeps\tde kat slaapt\na dog runs fast\teen hond rent snel\n")
    (tmp_path / "models" / "x").mkdir(parents=True)
    cfg = {"seed": 1, "embedding_partitions": 4, "embedding_partitions_per_device": {"cuda": 2},
           "sources": {"mini": {"format": "bitext", "path": str(tmp_path / "bitext.txt"), "languages": ["en", "nl"]}},
           "corpora": {"mini_en": {"source": "mini", "language": "en"}},
           "models": {"bert": {"family": "transformers", "path": "models/x", "device": "cuda"},
                      "hash": {"family": "hashing", "dim": 8}}}
    out = snakemake(tmp_path, write_config(tmp_path, cfg), "--dry-run", "--printshellcmds").stdout
    blocks = re.split(r"\n(?=\s*(?:local)?rule \w+:)", out)
    embeds = {}
    for block in blocks:
        if re.match(r"\s*rule embed:", block):
            wc = dict(kv.split("=", 1) for kv in re.search(r"wildcards: (.*)", block).group(1).split(", "))
            inputs = re.search(r"input: (.*)", block).group(1)
            embeds[wc["model"], wc["part"]] = sorted(re.findall(r"texts/mini_en/(part-\d+)\.parquet", inputs))
    assert {k: v for k, v in embeds.items() if k[0] == "bert"} == {
        ("bert", "000"): ["part-000", "part-002"], ("bert", "001"): ["part-001", "part-003"]}
    assert sorted(p for m, p in embeds if m == "hash") == ["000", "001", "002", "003"]
    assert all(len(v) == 1 for (m, _), v in embeds.items() if m == "hash")
    score = next(b for b in blocks if re.match(r"\s*rule csc_score:", b) and "model=bert" in b)
    assert sorted(re.findall(r"embeddings/bert/mini_en/(part-\d+)", re.search(r"input: (.*)", score).group(1))) == [
        "part-000", "part-001"]
