"""url_filename(): the stored name of a downloaded URL (no query string, no fragment, percent-decoded,
never a path), and download()'s gunzip decision from that clean name, over a local HTTP server and
file:// URLs."""
import functools
import gzip
import hashlib
import http.server
import threading

import pytest

from workflow_scripts.downloads import download, is_gzip_url, run_download_model, url_filename
from workflow_scripts.jobs import make_job

PAYLOAD = b"fastText model bytes\x00\x01\x02" * 500


@pytest.mark.parametrize("url, name", [
    ("https://dl.fbaipublicfiles.com/fasttext/vectors-crawl/cc.en.300.bin.gz", "cc.en.300.bin.gz"),
    # query string and fragment dropped
    ("https://x.org/cc.en.300.bin.gz?download=true", "cc.en.300.bin.gz"),
    ("https://x.org/a/b/corpus.tsv?download=1&token=abc/def.gz", "corpus.tsv"),
    ("https://x.org/corpus.tsv#section-2", "corpus.tsv"),
    ("https://x.org/corpus.tsv?x=1#frag.gz", "corpus.tsv"),
    ("https://x.org/files/model.bin;v=2?dl=1", "model.bin;v=2"),
    # percent-encoding decoded
    ("https://x.org/my%20corpus%20%28v2%29.txt", "my corpus (v2).txt"),
    ("https://x.org/caf%C3%A9.tsv", "café.tsv"),
    ("https://x.org/a%3Fb.txt?c=d", "a?b.txt"),  # an encoded `?` is part of the name
    # never a path
    ("https://x.org/dir%2Fsub%2Ffile.txt", "dir_sub_file.txt"),
    ("https://x.org/..%2F..%2Fetc%2Fpasswd", ".._.._etc_passwd"),
    ("https://x.org/%2E%2E", "data"),
    ("https://x.org/dir/..", "data"),
    ("https://x.org/dir/.", "data"),
    # empty: "data"
    ("https://x.org/dir/", "data"),
    ("https://x.org/dir/?download=true", "data"),
    ("https://x.org", "data"),
    ("https://x.org/", "data"),
    ("https://x.org/#top", "data"),
    ("", "data"),
    # file URLs and a plain path as well
    ("file:///tmp/some%20dir/bitext.txt", "bitext.txt"),
    ("file:///tmp/model.bin.gz", "model.bin.gz"),
    ("/tmp/a b/c.txt", "c.txt"),
])
def test_url_filename(url, name):
    assert url_filename(url) == name
    assert "/" not in url_filename(url)


@pytest.mark.parametrize("url, gz", [
    ("https://x.org/cc.en.300.bin.gz?download=true", True),
    ("https://x.org/cc.en.300.bin.gz#x", True),
    ("https://x.org/cc.en.300.bin%2Egz", True),
    ("https://x.org/cc.en.300.bin.gz", True),
    ("https://x.org/model.bin?format=.gz", False),
    ("https://x.org/model.bin#.gz", False),
    ("https://x.org/model.gz/", False),  # the name is "data"
    ("https://x.org/model.bin", False),
])
def test_is_gzip_url(url, gz):
    assert is_gzip_url(url) is gz


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def server(tmp_path):
    """A local HTTP server over tmp_path/www (it ignores the query string, as file hosts do)."""
    root = tmp_path / "www"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_gz_with_query_string_is_gunzipped_under_its_clean_name(server, tmp_path, log):
    root, base = server
    gz = gzip.compress(PAYLOAD, mtime=0)
    (root / "cc.en.300.bin.gz").write_bytes(gz)
    url = f"{base}/cc.en.300.bin.gz?download=true"
    # the rule's stored name: the clean name, .gz removed (decompressed as it arrives)
    dest = tmp_path / "dl" / url_filename(url).removesuffix(".gz")
    assert dest.name == "cc.en.300.bin"
    download(url, sha(gz), str(dest), log, gunzip="auto")
    assert dest.read_bytes() == PAYLOAD
    # a fragment does not change the decision either
    again = tmp_path / "dl2" / "model.bin"
    download(f"{base}/cc.en.300.bin.gz#top", sha(gz), str(again), log, gunzip="auto")
    assert again.read_bytes() == PAYLOAD


def test_gz_in_the_query_string_only_is_not_gunzipped(server, tmp_path, log):
    root, base = server
    (root / "model.bin").write_bytes(PAYLOAD)
    url = f"{base}/model.bin?format=.gz"
    dest = tmp_path / "dl" / url_filename(url)
    assert dest.name == "model.bin"
    download(url, sha(PAYLOAD), str(dest), log, gunzip="auto")
    assert dest.read_bytes() == PAYLOAD


def test_percent_encoded_file_url(tmp_path, log):
    folder = tmp_path / "a dir"
    folder.mkdir()
    src = folder / "my model.bin.gz"
    gz = gzip.compress(PAYLOAD, mtime=0)
    src.write_bytes(gz)
    url = src.as_uri()
    assert "%20" in url and url_filename(url) == "my model.bin.gz"
    dest = tmp_path / "dl" / url_filename(url).removesuffix(".gz")
    download(url, sha(gz), str(dest), log, gunzip="auto")
    assert dest.read_bytes() == PAYLOAD


def test_gunzip_argument_is_checked(tmp_path, log):
    src = tmp_path / "x.txt"
    src.write_bytes(b"x")
    with pytest.raises(ValueError, match="gunzip must be"):
        download(src.as_uri(), sha(b"x"), str(tmp_path / "y"), log, gunzip="yes")


def download_model_job(url: str, digest: str, out, gunzip) -> None:
    """The download_model job (rules/embed.smk) with the rule's params."""
    run_download_model(make_job(output=[str(out)], params={"url": url, "sha256": digest, "gunzip": gunzip}))


@pytest.mark.parametrize("gunzip, expected", [
    (False, "gz"),          # stored as downloaded
    (True, "payload"),      # decompressed
    ("auto", "payload"),    # by the URL's file name
])
def test_the_model_download_job_gunzips_as_its_param_says(server, tmp_path, gunzip, expected):
    root, base = server
    gz = gzip.compress(PAYLOAD, mtime=0)
    (root / "m.bin.gz").write_bytes(gz)
    out = tmp_path / "out" / "m.bin"
    download_model_job(f"{base}/m.bin.gz?download=true", sha(gz), out, gunzip)
    assert out.read_bytes() == (PAYLOAD if expected == "payload" else gz)


def test_the_rules_gunzip_decision_leaves_a_plain_file(server, tmp_path):
    root, base = server
    (root / "corpus.tsv").write_bytes(b"a\tb\n")
    out = tmp_path / "out" / "corpus.tsv"
    url = f"{base}/corpus.tsv?name=x.gz"
    download_model_job(url, sha(b"a\tb\n"), out, is_gzip_url(url))  # the rule's param: False
    assert out.read_bytes() == b"a\tb\n"
