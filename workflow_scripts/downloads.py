"""Downloads: a URL (http, https or file) fetched to a file, verified against its sha256 before it
appears, optionally decompressed as it arrives; the names downloads are stored under; the download
job of rules/ingest.smk (`run_download_source`) and of rules/embed.smk (`run_download_model`).

HTTP goes through httpx, as the served endpoints do (endpoints.py); a file:// URL is read in place.
A failed try is repeated by tenacity (`download`'s docstring says when and how often).
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import ssl
import urllib.parse
import urllib.request
import zlib
from pathlib import Path
from typing import Iterator

from workflow_scripts.common import atomic_path, setup_logging

# A download waits at most this long (seconds) for a connection and for each read: a stalled
# server fails the try instead of holding the job to its runtime limit. Overridden by the
# environment variable, and by download(timeout=).
DOWNLOAD_TIMEOUT_ENV = "WORKFLOW_DOWNLOAD_TIMEOUT"
DEFAULT_DOWNLOAD_TIMEOUT = 60.0
DOWNLOAD_TRIES = 3  # tries per download (file:// URLs: one)
DOWNLOAD_BACKOFF = 10.0  # seconds before the second try, doubled before each further one
BLOCK_BYTES = 1 << 22  # read and hashed at a time


class DownloadError(OSError):
    """A download that failed every try (or with a permanent HTTP error)."""


class HTTPError(OSError):
    """An answer other than 2xx, worded as urllib worded it (`HTTP Error 404: Not Found`), so that
    the messages stay what they were."""

    def __init__(self, code: int, reason: str):
        super().__init__(f"HTTP Error {code}: {reason}")
        self.code = code


def url_filename(url: str) -> str:
    """The file name a download of `url` is stored under: the last segment of the URL's path,
    percent-decoded, without query string or fragment (`https://x/cc.en.300.bin.gz?download=true`
    -> `cc.en.300.bin.gz`). Never a path: a decoded `/` (`%2F`) becomes `_`, and an empty name
    (`https://x/dir/`), `.` or `..` becomes `data`."""
    segment = urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1]
    name = urllib.parse.unquote(segment).replace("/", "_").replace("\0", "_")
    return "data" if name in ("", ".", "..") else name


def is_gzip_url(url: str) -> bool:
    """Whether a download of `url` is a gzip file by its name (`url_filename` ends in `.gz`): the
    query string and fragment do not count (`x.bin.gz?download=true` is; `x.bin?f=.gz` is not)."""
    return url_filename(url).endswith(".gz")


def download_timeout() -> float:
    """The per-read timeout: $WORKFLOW_DOWNLOAD_TIMEOUT, else 60 s."""
    value = os.environ.get(DOWNLOAD_TIMEOUT_ENV, "").strip()
    if not value:
        return DEFAULT_DOWNLOAD_TIMEOUT
    try:
        timeout = float(value)
    except ValueError:
        timeout = 0.0
    if not timeout > 0:
        raise ValueError(f"{DOWNLOAD_TIMEOUT_ENV}={value!r}: give the seconds a download may wait for each read, "
                         "a number > 0")
    return timeout


class _Gunzip:
    """Streaming gzip decompression, multi-member files included (what `gzip.open` reads)."""

    def __init__(self):
        self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)

    def __call__(self, block: bytes) -> bytes:
        out = [self.inflate.decompress(block)]
        while self.inflate.eof and self.inflate.unused_data:  # the next gzip member starts here
            rest = self.inflate.unused_data
            self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out.append(self.inflate.decompress(rest))
        return b"".join(out)


@contextlib.contextmanager
def _body(url: str, timeout: float) -> Iterator[Iterator[bytes]]:
    """The bytes of `url` as they arrive: a file:// URL's file, else the body of an httpx GET
    (redirects followed; each connection and read waits at most `timeout` seconds). The bytes are
    the body as sent (`identity` asked for, nothing decoded): the checksum is of those."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "file":
        with open(urllib.request.url2pathname(parts.path), "rb") as f:
            yield iter(lambda: f.read(BLOCK_BYTES), b"")
        return
    import httpx

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request otherwise
    # the system's certificate authorities, as urllib trusted them (httpx's own default: certifi's)
    tls = ssl.create_default_context()
    try:
        with httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=True, verify=tls,
                          headers={"Accept-Encoding": "identity"}) as client, client.stream("GET", url) as response:
            if not response.is_success:
                raise HTTPError(response.status_code, response.reason_phrase)
            yield response.iter_raw(BLOCK_BYTES)
    except httpx.TimeoutException as err:
        # the TimeoutError a socket raises: the message, and the hint on the timeout, as before httpx
        raise TimeoutError(str(err) or "timed out") from err


def _fetch(url: str, tmp: Path, timeout: float, gunzip: bool, log) -> tuple[int, str, _Gunzip | None]:
    """One try: `url` into `tmp` (rewritten from the start). Returns bytes, sha256, decompressor."""
    # the sha256 of the bytes as they arrive (compressed, as published), not of the file written
    h = hashlib.sha256()
    done = 0
    decompress = _Gunzip() if gunzip else None
    with _body(url, timeout) as blocks, open(tmp, "wb") as out:
        for block in blocks:
            h.update(block)
            out.write(decompress(block) if decompress else block)
            done += len(block)
            if done % (1 << 30) < BLOCK_BYTES:
                log.info("%s: %.1f GiB", url, done / (1 << 30))
    return done, h.hexdigest(), decompress


def _transient(err: BaseException) -> bool:
    """Whether another try may succeed: network errors, timeouts, cut connections and HTTP 408,
    429 and 5xx; not other HTTP errors (404: the URL is wrong), nor anything but an I/O error."""
    import httpx

    if isinstance(err, HTTPError):
        return err.code in (408, 429) or err.code >= 500
    return isinstance(err, (OSError, httpx.TransportError))


def download(url: str, sha256: str, dest: str, log, gunzip: bool | str = False, timeout: float | None = None,
             tries: int | None = None, backoff: float | None = None) -> None:
    """Fetch `url` (http, https or file) to `dest`, verifying its sha256 before it appears.
    With `gunzip`, the download is decompressed as it arrives (fastText ships .bin.gz); the checksum
    is of the compressed bytes, as published. `gunzip="auto"` decompresses when the URL's file name
    (`url_filename`, query string and fragment dropped) ends in `.gz`.

    Each connection and each read waits at most `timeout` seconds (default: `download_timeout()`,
    60 s or $WORKFLOW_DOWNLOAD_TIMEOUT). A try that fails (timeout, network error, HTTP 408/429/5xx)
    is repeated from the start after `backoff` seconds (default DOWNLOAD_BACKOFF), doubled each
    time, up to `tries` tries (default DOWNLOAD_TRIES; file:// URLs: one); then DownloadError names
    the URL and the last error."""
    import httpx
    from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

    if gunzip == "auto":
        gunzip = is_gzip_url(url)
    elif not isinstance(gunzip, bool):
        raise ValueError(f"gunzip must be True, False or 'auto', not {gunzip!r}")
    timeout = download_timeout() if timeout is None else timeout
    tries = DOWNLOAD_TRIES if tries is None else tries
    backoff = DOWNLOAD_BACKOFF if backoff is None else backoff
    if not timeout > 0 or tries < 1:
        raise ValueError(f"download of {url}: timeout must be > 0 and tries >= 1, not {timeout} and {tries}")
    if urllib.parse.urlsplit(url).scheme == "file":
        tries = 1  # a local file does not get better by waiting

    def before_sleep(state) -> None:
        err = state.outcome.exception()
        log.warning("%s: try %d of %d failed (%s: %s); trying again in %g s", url, state.attempt_number, tries,
                    type(err).__name__, err, state.upcoming_sleep)

    retrying = Retrying(stop=stop_after_attempt(tries), wait=wait_exponential(multiplier=backoff),
                        retry=retry_if_exception(_transient), before_sleep=before_sleep, reraise=True)
    with atomic_path(dest) as tmp:
        try:
            for attempt in retrying:
                with attempt:
                    done, digest, decompress = _fetch(url, tmp, timeout, gunzip, log)
        except (OSError, httpx.TransportError) as err:  # timeouts, resets, cut bodies, HTTP errors
            made = attempt.retry_state.attempt_number
            hint = (f"; each connection and read waits at most {timeout:g} s (${DOWNLOAD_TIMEOUT_ENV})"
                    if isinstance(err, TimeoutError) else "")
            raise DownloadError(f"{url}: download failed after {made} {'try' if made == 1 else 'tries'} "
                                f"({type(err).__name__}: {err}){hint}; nothing written to {dest}") from err
        if sha256 == "unpinned":
            # no published checksum (OPUS and fastText publish none): say what to pin
            log.warning("UNPINNED download %s: %d bytes, sha256 %s; put `sha256: %s` in the config so "
                        "later downloads are verified", url, done, digest, digest)
        elif digest != sha256.lower():
            raise ValueError(f"checksum mismatch for {url}: expected sha256 {sha256}, got {digest}")
        if decompress and not decompress.inflate.eof:
            raise ValueError(f"{url}: the gzip stream ends early ({done} bytes downloaded)")
    log.info("downloaded %s (%d bytes, sha256 %s%s)", url, done, "UNPINNED" if sha256 == "unpinned" else "ok",
             ", decompressed" if gunzip else "")


# ---- the download jobs of rules/ingest.smk and rules/embed.smk (workflow_scripts/jobs.py) ----
def run_download_source(job) -> None:
    download(job.params.url, job.params.sha256, job.output[0], setup_logging(name="ingest"))


def run_download_model(job) -> None:
    download(job.params.url, job.params.sha256, job.output[0], setup_logging(name="ingest"), job.params.gunzip)
