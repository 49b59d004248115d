"""Family openai_embeddings through a local /v1/embeddings server vs the in-process
sentence_transformers family, on the same texts and the same model (all-MiniLM-L6-v2), in one run.

The server (tests/embeddings_server.py) runs MiniLM in this process's threads behind HTTP on
127.0.0.1, so the difference is what the route costs: JSON, HTTP and the client's batching by
token budget, with `concurrency` requests open. A second pass through the endpoint reads every
vector from the cache (what a rerun or a resumed job costs). Prints texts/s of each and the
largest cosine difference between the routes' vectors.
Usage: python tests/benchmarks/bench_embedding_endpoint.py [N_TEXTS] [CONCURRENCY]
"""
import logging
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench_embedding import load_texts  # noqa: E402
from embeddings_server import EmbeddingsServer  # noqa: E402
from workflow_scripts.embed import embed_sorted  # noqa: E402
from workflow_scripts.embedding_api import OpenAIEmbeddingsEncoder  # noqa: E402
from workflow_scripts.encoders.sentence_transformers import SentenceTransformerEncoder  # noqa: E402

SPEC = {"family": "sentence_transformers", "name": "sentence-transformers/all-MiniLM-L6-v2", "batch_size": 32}


def main(n: int, concurrency: int) -> None:
    import torch
    texts = list(dict.fromkeys(load_texts(n * 2)))[:n]
    log = logging.getLogger("bench")
    in_process = SentenceTransformerEncoder(SPEC, "cpu")
    served_model = SentenceTransformerEncoder(SPEC, "cpu")  # the server's own copy
    lock = threading.Lock()  # one forward pass at a time: the server is one model on the same cores

    def serve(batch: list[str]) -> np.ndarray:
        with lock:
            return served_model.encode_batch(batch)

    in_process.encode_batch(texts[:8])  # warm-up, outside the timing
    out = np.empty((len(texts), in_process.dim), np.float32)
    start = time.perf_counter()
    embed_sorted(in_process, texts, out, 32, log, "bench")
    local_s = time.perf_counter() - start
    with EmbeddingsServer(embed=serve) as server, tempfile.TemporaryDirectory() as tmp:
        spec = {"family": "openai_embeddings", "base_url": server.base_url, "model": "all-MiniLM-L6-v2",
                "dimensions": 384, "concurrency": concurrency, "batch_size": 32, "batch_tokens": 8192}
        served = OpenAIEmbeddingsEncoder(spec, "served", log, f"{tmp}/cache.jsonl")
        served.encode_texts(texts[:8])  # warm-up (and these 8 are cached: send the rest)
        start = time.perf_counter()
        got = served.encode_texts(texts)
        served_s = time.perf_counter() - start
        again = OpenAIEmbeddingsEncoder(spec, "served", log, f"{tmp}/cache.jsonl")
        start = time.perf_counter()
        again.encode_texts(texts)
        cached_s = time.perf_counter() - start
        requests = len(server.received)
    cos = (got * out).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(out, axis=1))
    print(f"{len(texts)} unique texts, MiniLM fp32 on CPU, torch threads {torch.get_num_threads()}")
    print(f"in-process sentence_transformers (embed_sorted, batch 32): {len(texts) / local_s:8.0f} texts/s")
    print(f"openai_embeddings via 127.0.0.1 (concurrency {concurrency}, {requests} requests): "
          f"{(len(texts) - 8) / served_s:8.0f} texts/s")
    print(f"openai_embeddings, every vector from the cache:            {len(texts) / cached_s:8.0f} texts/s")
    print(f"smallest cosine between the routes' vectors: {cos.min():.7f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000, int(sys.argv[2]) if len(sys.argv) > 2 else 4)
