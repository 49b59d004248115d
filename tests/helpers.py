"""Tiny models built on the fly for tests (no downloads)."""
import subprocess
import sys
from pathlib import Path

SENTENCES = [
    "the cat sleeps on the mat", "a dog runs in the park", "she does not like cold tea",
    "de kat slaapt op de mat", "het is niet koud vandaag", "they sold the house last year",
    "we will visit the museum tomorrow", "is this the right way to the station",
]


def tiny_bert(directory: Path, sentences=SENTENCES, seed: int = 0) -> Path:
    """A 2-layer random BERT with a word-level vocabulary made from `sentences`."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast
    directory.mkdir(parents=True, exist_ok=True)
    words = sorted({w for s in sentences for w in s.lower().split()} | {"a", "the", "not", "de", "het", "niet"})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(directory / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    BertModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def tiny_fasttext(path: Path, sentences=SENTENCES) -> Path:
    """A 16-dim skipgram fastText model trained on `sentences`.

    Trained in a fresh interpreter: fastText 0.9.2 now and then stops with "Encountered NaN" when it
    trains inside a process that has already run other native code (seen only in long pytest runs).
    """
    corpus = path.with_suffix(".txt")
    corpus.write_text("\n".join(sentences * 20) + "\n")
    script = (
        "import sys, fasttext\n"
        "m = fasttext.train_unsupervised(sys.argv[1], model='skipgram', dim=16, epoch=2, minCount=1,"
        " minn=2, maxn=4, bucket=50000, thread=1, verbose=0)\n"
        "m.save_model(sys.argv[2])\n"
    )
    subprocess.run([sys.executable, "-c", script, str(corpus), str(path)], check=True)
    return path
