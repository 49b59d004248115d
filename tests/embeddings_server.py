"""A small OpenAI-compatible /v1/embeddings server for tests and benchmarks: http.server in a thread
on 127.0.0.1, port 0 (a free one). POST <base>/embeddings with {"model", "input": [texts],
"dimensions"?} answers {"data": [{"index", "embedding"}]}: by default `toy_vector(text, dim)`, a
vector a test can compute itself; or whatever `embed(texts) -> array` gives (a real model, for
the benchmark).

Scripted trouble, as in chat_server.py: `script` lists actions the next requests take, one each,
in arrival order: a status code ("429" with Retry-After: 0, "500", "503", ...), "hang" (never answer
until `release` is set), ("dim", n) (answer vectors of n dimensions). After the script, requests
are answered normally. `received` lists each request's input texts in arrival order, `answered`
the texts of the 200 answers; `auth` keeps the Authorization headers seen.
"""
from __future__ import annotations

import hashlib
import json
import threading
import numpy as np

from chat_server import JsonHandler, LocalServer


def toy_vector(text: str, dim: int) -> list[float]:
    """A deterministic vector of a text: seeded by the sha256 of its UTF-8 bytes."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32).tolist()


class EmbeddingsServer(LocalServer):
    def __init__(self, dim: int = 8, embed=None):
        self.dim, self.embed = dim, embed
        self.script: list = []
        self.received: list[list[str]] = []
        self.answered: list[str] = []
        self.auth: list[str | None] = []
        self.release = threading.Event()
        self.hanging = threading.Event()
        self.lock = threading.Lock()
        server = self

        class Handler(JsonHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if not self.path.endswith("/embeddings"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                texts = body.get("input") or []
                texts = [texts] if isinstance(texts, str) else texts
                with server.lock:
                    server.received.append(list(texts))
                    server.auth.append(self.headers.get("Authorization"))
                    action = server.script.pop(0) if server.script else None
                if action == "hang":
                    server.hanging.set()
                    server.release.wait(60)
                    self.close_connection = True
                    return
                dim = body.get("dimensions") or server.dim
                if isinstance(action, tuple) and action[0] == "dim":
                    dim = action[1]
                elif action is not None:
                    return self._send(int(action), {"error": {"message": f"scripted {action}"}},
                                      {"Retry-After": "0"} if str(action) == "429" else {})
                if server.embed is not None:
                    vectors = np.asarray(server.embed(texts), dtype=np.float32).tolist()
                else:
                    vectors = [toy_vector(t, dim) for t in texts]
                with server.lock:
                    server.answered += texts
                self._send(200, {"object": "list", "model": body.get("model"),
                                 "data": [{"object": "embedding", "index": i, "embedding": v}
                                          for i, v in reversed(list(enumerate(vectors)))],  # any order: by index
                                 "usage": {"prompt_tokens": 0, "total_tokens": 0}})

        self.serve(Handler)

    def texts_received(self) -> list[str]:
        return [t for batch in self.received for t in batch]


def main() -> None:
    """Serve toy vectors until killed, printing the base URL (for a study run by hand)."""
    with EmbeddingsServer() as server:
        print(server.base_url, flush=True)
        server.thread.join()


if __name__ == "__main__":
    main()
