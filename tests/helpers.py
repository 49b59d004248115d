"""Tiny models built on the fly for tests (no downloads)."""
import subprocess
import sys
from pathlib import Path

SENTENCES = [
    "the cat sleeps on the mat", "a dog runs in the park", "she does not like cold tea",
    "de kat slaapt op de mat", "het is niet koud vandaag", "they sold the house last year",
    "we will visit the museum tomorrow", "is this the right way to the station",
]

# a small EN-NL bitext and a user's own (S, S+, S*) triplets: the workflow tests' shared inputs
EN = ["the cat sleeps on the mat", "a dog runs in the park today", "she likes cold tea",
      "they sold the house last year", "we will visit the museum tomorrow", "is this the right way",
      "prices are high", "he has finished the report", "the old man walks to the station every morning"]
NL = ["de kat slaapt op de mat", "een hond rent vandaag in het park", "zij houdt van koude thee",
      "zij verkochten het huis vorig jaar", "wij bezoeken morgen het museum", "is dit de goede weg",
      "de prijzen zijn hoog", "hij heeft het rapport af", "de oude man loopt elke ochtend naar het station"]
# (S, S+, S*): a user's own triplets file
TRIPLETS = [("the cat sleeps on the mat", "the cat is sleeping on the mat", "the cat does not sleep on the mat"),
            ("she likes cold tea", "she enjoys cold tea", "she does not like cold tea"),
            ("prices are high", "prices are very high", "prices are not high"),
            ("the dog runs in the park", "a dog runs in the park", "the park runs in the dog")]


def tiny_bert(directory: Path, sentences=SENTENCES, seed: int = 0) -> Path:
    """A 2-layer random BERT with a word-level vocabulary made from `sentences`."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast
    directory.mkdir(parents=True, exist_ok=True)
    words = sorted({w for s in sentences for w in s.lower().split()} | {"a", "the", "not", "de", "het", "niet"})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n")
    # vocab as a mapping: transformers 5 ignores `vocab_file=` here (every word would become [UNK])
    tokenizer = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True)
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


def write_table(path: Path, rows: list[dict]) -> str:
    """A small CSV table of hand-made rows (the report tests' inputs); returns its path."""
    import polars as pl
    pl.DataFrame(rows).write_csv(path)
    return str(path)
