"""A small OpenAI-compatible /v1/embeddings server for tests and benchmarks: http.server in a thread
on 127.0.0.1, port 0 (a free one). POST <base>/embeddings with {"model", "input": [texts],
"dimensions"?} answers {"data": [{"index", "embedding"}]}: by default `toy_vector(text, dim)`, a
vector a test can compute itself; or whatever `embed(texts) -> array` gives (a real model, for
the benchmark).

Scripted trouble, as in chat_server.py: `script` lists actions the next requests take, one each,
in arrival order: a status code ("429" with Retry-After: 0, "500", "503", ...), ("retry_after", value)
(429 with that Retry-After header), "hang" (never answer
until `release` is set, or `hang_s` passed), ("dim", n) (answer vectors of n dimensions), "repeat_index" (the right
number of vectors, but index 0 twice and the last index missing), ("pad", n) (a correct answer
padded with n spaces), ("echo", status) (answer that status with a body quoting the Authorization
header's token plain, JSON-escaped with `/` as `\\/`, and URL-encoded). `delay_s` holds every answer
that long (so that requests overlap); `max_in_flight` is the most requests open at once. After
the script, requests are answered normally. `received` lists each request's input texts in
arrival order, `answered` the texts of the 200 answers; `auth` keeps the Authorization headers seen.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from urllib.parse import quote

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
        self.delay_s = 0.0
        self.hang_s = 60.0
        self.in_flight = self.max_in_flight = 0
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
                if action == "hang":  # a request the client gives up on: not counted as open
                    server.hanging.set()
                    server.release.wait(server.hang_s)
                    self.close_connection = True
                    return
                with server.lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    self.answer(body, texts, action)
                finally:
                    with server.lock:
                        server.in_flight -= 1

            def answer(self, body: dict, texts: list[str], action):
                time.sleep(server.delay_s)
                dim = body.get("dimensions") or server.dim
                kind = action[0] if isinstance(action, tuple) else action
                if kind == "echo":  # written as raw JSON text: json.dumps would escape the backslashes again
                    token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                    escaped = json.dumps(token)[1:-1].replace("/", "\\/")
                    return self._send_raw(int(action[1]), '{"error": {"message": "json %s; url %s"}, "plain": "%s"}'
                                          % (escaped, quote(token, safe=""), token))
                if kind == "retry_after":
                    return self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": str(action[1])})
                if kind == "dim":
                    dim = action[1]
                elif kind not in (None, "repeat_index", "pad"):
                    return self._send(int(action), {"error": {"message": f"scripted {action}"}},
                                      {"Retry-After": "0"} if str(action) == "429" else {})
                if server.embed is not None:
                    vectors = np.asarray(server.embed(texts), dtype=np.float32).tolist()
                else:
                    vectors = [toy_vector(t, dim) for t in texts]
                with server.lock:
                    server.answered += texts
                indices = list(range(len(vectors)))
                if action == "repeat_index" and len(indices) > 1:
                    indices[-1] = 0
                answer = {"object": "list", "model": body.get("model"),
                          "data": [{"object": "embedding", "index": i, "embedding": v}
                                   for i, v in reversed(list(zip(indices, vectors)))],  # any order: by index
                          "usage": {"prompt_tokens": 0, "total_tokens": 0}}
                if kind == "pad":
                    answer["padding"] = " " * action[1]
                self._send(200, answer)

            def _send_raw(self, status: int, text: str):
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

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
