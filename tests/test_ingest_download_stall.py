"""download() against a local HTTP server (127.0.0.1) that stalls: each connection and read waits at
most `timeout` seconds, a failed try is repeated after a backoff, and after the last try the error
names the URL and leaves nothing at `dest`. Before (fef8af2), urlopen had no timeout: a stalled
server held the job to its runtime limit (240 minutes). Timeouts here are fractions of a second.
Since downloads moved from urllib to httpx (downloads.py): redirects are still followed, the body
is stored as sent (a Content-Encoding is not decoded), and only I/O errors are retried."""
import gzip
import hashlib
import http.server
import logging
import threading
import time
import zlib

import pytest

from workflow_scripts.downloads import DownloadError, download
from workflow_scripts.jobs import make_job

PAYLOAD = b"one\ttwo\n" * 1000
GZ = gzip.compress(PAYLOAD, mtime=0)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.stalls = {}  # path -> how many more requests stall ("headers" or "body")
        self.requests = []
        self.release = threading.Event()  # set at teardown: stalled handlers return


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        server = self.server
        server.requests.append(self.path)
        mode, left = server.stalls.get(self.path, (None, 0))
        if left:
            server.stalls[self.path] = (mode, left - 1)
        if left and mode == "headers":  # accepts the connection, never answers
            server.release.wait(30)
            return
        if self.path == "/missing":
            self.send_error(404)
            return
        if left and mode == "busy":
            self.send_error(503)
            return
        if self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/corpus.txt")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path in ("/encoded.gz", "/corrupt.gz"):  # a .gz served as gzip-encoded, as some servers do
            body = GZ if self.path == "/encoded.gz" else GZ[:10] + b"\xff" * 50
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(PAYLOAD)))
        self.end_headers()
        if left and mode == "body":  # half the body, then silence
            self.wfile.write(PAYLOAD[: len(PAYLOAD) // 2])
            self.wfile.flush()
            server.release.wait(30)
            return
        self.wfile.write(PAYLOAD)


@pytest.fixture
def server():
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.release.set()
    srv.shutdown()
    srv.server_close()


def url(server, path):
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def assert_nothing_at(dest):
    assert not dest.exists()
    assert not list(dest.parent.glob(".tmp-*"))


@pytest.mark.parametrize("mode", ["headers", "body"])
def test_a_stalled_server_fails_after_the_tries_naming_the_url(tmp_path, log, records, server, mode):
    server.stalls["/corpus.txt"] = (mode, 99)
    dest = tmp_path / "dl" / "corpus.txt"
    started = time.monotonic()
    with pytest.raises(DownloadError) as err:
        download(url(server, "/corpus.txt"), sha(PAYLOAD), str(dest), log, timeout=0.3, tries=3, backoff=0.05)
    # three tries of 0.3 s, and the backoff between them: 0.05 s, then doubled
    assert 3 * 0.3 + 0.05 + 0.1 <= time.monotonic() - started < 10
    waits = [m.rsplit("trying again in ", 1)[1] for level, m in records if level == "WARNING"]
    assert waits == ["0.05 s", "0.1 s"]
    assert str(err.value).startswith(f"{url(server, '/corpus.txt')}: download failed after 3 tries (")
    assert "timed out" in str(err.value)
    assert str(err.value).endswith("each connection and read waits at most 0.3 s "
                                   f"($WORKFLOW_DOWNLOAD_TIMEOUT); nothing written to {dest}")
    assert server.requests == ["/corpus.txt"] * 3
    assert_nothing_at(dest)


def test_a_stall_is_retried_and_the_download_completes(tmp_path, log, server):
    messages = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append((record.levelname, record.getMessage()))
    log.addHandler(handler)
    try:
        server.stalls["/corpus.txt"] = ("body", 1)  # the first try stalls half-way
        dest = tmp_path / "dl" / "corpus.txt"
        download(url(server, "/corpus.txt"), sha(PAYLOAD), str(dest), log, timeout=0.3, tries=2, backoff=0.05)
    finally:
        log.removeHandler(handler)
    assert dest.read_bytes() == PAYLOAD  # the second try rewrote the file from the start
    assert server.requests == ["/corpus.txt"] * 2
    warnings = [m for level, m in messages if level == "WARNING"]
    assert len(warnings) == 1 and warnings[0].startswith(f"{url(server, '/corpus.txt')}: try 1 of 2 failed (")
    assert warnings[0].endswith("; trying again in 0.05 s")


def test_a_404_is_not_retried(tmp_path, log, server):
    dest = tmp_path / "dl" / "missing"
    with pytest.raises(DownloadError, match=r"^http://127\.0\.0\.1:\d+/missing: download failed after 1 try "
                                            r"\(HTTPError: HTTP Error 404: Not Found\)"):
        download(url(server, "/missing"), sha(PAYLOAD), str(dest), log, timeout=5, tries=3, backoff=0.05)
    assert server.requests == ["/missing"]
    assert_nothing_at(dest)


def test_the_jobs_timeout_comes_from_the_environment(tmp_path, server, monkeypatch):
    """The download job (rules/ingest.smk's download_source): $WORKFLOW_DOWNLOAD_TIMEOUT bounds each
    try of a stalled download, and the job fails naming the URL."""
    from workflow_scripts import downloads
    server.stalls["/corpus.txt"] = ("headers", 99)
    dest = tmp_path / "dl" / "corpus.txt"
    monkeypatch.setenv("WORKFLOW_DOWNLOAD_TIMEOUT", "0.3")
    monkeypatch.setattr(downloads, "DOWNLOAD_BACKOFF", 0.05)  # the job's tries, without their 10 s and 20 s waits
    job = make_job(output=[str(dest)], params={"url": url(server, "/corpus.txt"), "sha256": sha(PAYLOAD)})
    started = time.monotonic()
    with pytest.raises(DownloadError) as err:
        downloads.run_download_source(job)
    assert time.monotonic() - started < 30
    assert str(err.value) == (f"{url(server, '/corpus.txt')}: download failed after 3 tries (TimeoutError: timed out); "
                              f"each connection and read waits at most 0.3 s ($WORKFLOW_DOWNLOAD_TIMEOUT); "
                              f"nothing written to {dest}")
    assert server.requests == ["/corpus.txt"] * 3
    assert_nothing_at(dest)


def test_a_redirect_is_followed(tmp_path, log, server):
    dest = tmp_path / "dl" / "corpus.txt"
    download(url(server, "/moved"), sha(PAYLOAD), str(dest), log, timeout=5, tries=1)
    assert dest.read_bytes() == PAYLOAD and server.requests == ["/moved", "/corpus.txt"]


def test_the_body_is_stored_as_sent_not_decoded(tmp_path, log, server):
    """A .gz that the server labels Content-Encoding: gzip is stored as the .gz its sha256 was
    published for (urllib never decoded it; httpx would, unless told not to), and gunzip decompresses it."""
    dest = tmp_path / "dl" / "encoded.gz"
    download(url(server, "/encoded.gz"), sha(GZ), str(dest), log, timeout=5, tries=1)
    assert dest.read_bytes() == GZ
    download(url(server, "/encoded.gz"), sha(GZ), str(tmp_path / "dl" / "plain"), log, timeout=5, tries=1, gunzip=True)
    assert (tmp_path / "dl" / "plain").read_bytes() == PAYLOAD


def test_a_503_is_retried_and_a_corrupt_stream_is_not(tmp_path, log, server):
    server.stalls["/corpus.txt"] = ("busy", 2)
    dest = tmp_path / "dl" / "corpus.txt"
    download(url(server, "/corpus.txt"), sha(PAYLOAD), str(dest), log, timeout=5, tries=3, backoff=0.01)
    assert dest.read_bytes() == PAYLOAD and server.requests == ["/corpus.txt"] * 3
    # what another try cannot mend (the gzip data is broken) fails at once, as itself
    with pytest.raises(zlib.error):
        download(url(server, "/corrupt.gz"), sha(GZ), str(tmp_path / "dl" / "c"), log, timeout=5, tries=3,
                 backoff=0.01, gunzip=True)
    assert server.requests.count("/corrupt.gz") == 1
    assert_nothing_at(tmp_path / "dl" / "c")
