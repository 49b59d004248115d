"""A small OpenAI-compatible chat-completions server for tests: http.server in a thread on
127.0.0.1, port 0 (a free one). POST <base>/chat/completions answers with a fusion of the two
sentences in the last user message ("Sentence 1: ...\\nSentence 2: ..."), or with what `answers`
maps the user message to.

Scripted trouble: `script` is a list of actions the next requests take, one each, in arrival order:
  "429" / "500" / any status code  answer that status (429 with Retry-After: 0)
  ("sleep", s)                     wait s seconds, then answer normally (a client with a shorter
                                   timeout gives up first)
  "hang"                           never answer: wait until `release` is set, then drop the connection
  ("trickle", s)                   send the status line and headers of a long answer, then one byte
                                   every s seconds until the client leaves or `release` is set (a
                                   client with a per-read timeout above s waits for ever)
  ("long", n)                      answer 200 with a fusion of n characters
  ("echo_auth", status)            answer that status with a body that repeats the Authorization
                                   header (as some proxies and servers do)
After the script, requests are answered normally. `received` counts the requests per user message,
`answered` the 200 answers; `auth` keeps the Authorization headers seen.
"""
from __future__ import annotations

import json
import re
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def fuse(user: str) -> str:
    """A deterministic stand-in for a lazy fusion: the two sentences joined by ", and" with every
    third word of the second dropped (a concatenation with small edits: past the echo rule, caught
    by the quality gate's `near_concatenation`)."""
    m = re.search(r"Sentence 1:\s*(.*)\nSentence 2:\s*(.*)", user, re.S)
    if not m:
        return "No sentences."
    first, second = m.group(1).strip().rstrip("."), m.group(2).strip().rstrip(".").split()
    second = [w for i, w in enumerate(second) if i % 3 != 2]
    return f"{first}, and {second[0].lower() if second else ''} {' '.join(second[1:])}.".replace("  ", " ")


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet handler that answers JSON (shared by the test servers: embeddings_server.py too)."""

    def log_message(self, *args):
        pass

    def _send(self, status, payload, headers=None):
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


class LocalServer:
    """A threaded HTTP server on 127.0.0.1 at a free port, in a daemon thread while in `with`;
    leaving sets `release` (hanging requests end) and stops it."""

    release: threading.Event

    def serve(self, handler) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


class ChatServer(LocalServer):
    def __init__(self, answers: dict[str, str] | None = None, model: str = "tiny-fuser"):
        self.answers = answers or {}
        self.model = model
        self.script: list = []
        self.received: Counter = Counter()
        self.answered: Counter = Counter()
        self.auth: list[str | None] = []
        self.release = threading.Event()
        self.hanging = threading.Event()  # set while a request hangs
        self.lock = threading.Lock()
        server = self

        class Handler(JsonHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                user = next((m["content"] for m in reversed(body.get("messages", [])) if m["role"] == "user"), "")
                with server.lock:
                    server.received[user] += 1
                    server.auth.append(self.headers.get("Authorization"))
                    action = server.script.pop(0) if server.script else None
                if action == "hang":
                    server.hanging.set()
                    server.release.wait(30)
                    self.close_connection = True
                    return
                if isinstance(action, tuple) and action[0] == "trickle":
                    return self._trickle(action[1])
                if isinstance(action, tuple) and action[0] == "echo_auth":
                    return self._send(action[1], {"error": {"message": "invalid key",
                                                            "headers": {"Authorization": self.headers.get("Authorization")}}})
                if isinstance(action, tuple) and action[0] == "sleep":
                    server.release.wait(action[1])
                elif isinstance(action, tuple) and action[0] == "long":
                    text = ("The ferry left. " * (action[1] // 16 + 1))[:action[1]]
                    return self._answer(body, user, text)
                elif action is not None:
                    return self._send(int(action), {"error": {"message": f"scripted {action}"}},
                                      {"Retry-After": "0"} if str(action) == "429" else {})
                self._answer(body, user, server.answers.get(user, fuse(user)))

            def _answer(self, body, user, text):
                with server.lock:
                    server.answered[user] += 1
                self._send(200, {"id": "cmpl-1", "object": "chat.completion", "model": body.get("model"),
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": text}}]})

            def _trickle(self, interval):
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    self.wfile.flush()
                    for _ in range(100000):
                        if server.release.wait(interval):
                            break
                        self.wfile.write(b" ")
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

        self.serve(Handler)


def main() -> None:
    """Serve until killed, printing the base URL (for running a study by hand against it)."""
    with ChatServer() as server:
        print(server.base_url, flush=True)
        server.thread.join()


if __name__ == "__main__":
    main()
