"""download(): decompression as it arrives (one and several gzip members), truncated streams, and
`unpinned` checksums, over file:// URLs. Nothing may appear at `dest` unless the whole download
was verified."""
import gzip
import hashlib
import random

import pytest

from workflow_scripts.downloads import download


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def assert_nothing_at(dest):
    assert not dest.exists()
    assert not list(dest.parent.glob(".tmp-*"))


def test_gunzip_decompresses_and_verifies_the_compressed_bytes(tmp_path, log):
    payload = b"fastText model bytes\x00\x01\x02" * 1000
    src = tmp_path / "model.bin.gz"
    src.write_bytes(gzip.compress(payload, mtime=0))
    dest = tmp_path / "dl" / "model.bin"
    download(src.as_uri(), sha(src.read_bytes()), str(dest), log, gunzip=True)
    assert dest.read_bytes() == payload
    with pytest.raises(ValueError, match="checksum mismatch"):  # the checksum is of the .gz, not of its content
        download(src.as_uri(), sha(payload), str(tmp_path / "dl" / "again.bin"), log, gunzip=True)
    assert_nothing_at(tmp_path / "dl" / "again.bin")


def test_gunzip_reads_every_member(tmp_path, log):
    # members of 3 MiB of incompressible bytes: the boundary between them falls inside a 4 MiB block
    rng = random.Random(7)
    first, second = rng.randbytes(3 << 20), rng.randbytes(3 << 20)
    src = tmp_path / "multi.gz"
    src.write_bytes(gzip.compress(first, mtime=0) + gzip.compress(second, mtime=0) + gzip.compress(b"end\n"))
    dest = tmp_path / "multi"
    download(src.as_uri(), sha(src.read_bytes()), str(dest), log, gunzip=True)
    assert dest.stat().st_size == 6 * 2**20 + 4
    assert dest.read_bytes() == first + second + b"end\n"


@pytest.mark.parametrize("pin", ["served", "unpinned"])
def test_truncated_gzip_stream_is_an_error_and_leaves_nothing(tmp_path, log, pin):
    whole = gzip.compress(b"a line\n" * 10_000, mtime=0)
    src = tmp_path / "cut.gz"
    src.write_bytes(whole[:-8])  # the stream ends before its trailer
    sha256 = sha(src.read_bytes()) if pin == "served" else "unpinned"  # the checksum cannot catch it
    dest = tmp_path / "dl" / "cut"
    with pytest.raises(ValueError, match=rf"^{src.as_uri()}: the gzip stream ends early \({len(whole) - 8} bytes "
                                         r"downloaded\)$"):
        download(src.as_uri(), sha256, str(dest), log, gunzip=True)
    assert_nothing_at(dest)


def test_truncated_download_fails_its_pinned_checksum(tmp_path, log):
    whole = b"0123456789" * 100
    src = tmp_path / "cut.txt"
    src.write_bytes(whole[:-1])
    dest = tmp_path / "dl" / "cut.txt"
    with pytest.raises(ValueError, match=f"checksum mismatch for {src.as_uri()}: expected sha256 {sha(whole)}"):
        download(src.as_uri(), sha(whole), str(dest), log)
    assert_nothing_at(dest)


def test_unpinned_logs_the_sha256_to_pin(tmp_path, log, records):
    src = tmp_path / "corpus.txt"
    src.write_bytes(b"a\tb\n")
    dest = tmp_path / "dl" / "corpus.txt"
    download(src.as_uri(), "unpinned", str(dest), log)
    assert dest.read_bytes() == b"a\tb\n"
    # the digest from an independent tool: printf 'a\tb\n' | sha256sum
    digest = "5dd1197866f479824d9b483e1b7ae9ad3e518f3b4fd447c6b92d127dda6178c5"
    warnings = [m for level, m in records if level == "WARNING"]
    assert warnings == [f"UNPINNED download {src.as_uri()}: 4 bytes, sha256 {digest}; put `sha256: {digest}` in "
                        "the config so later downloads are verified"]
    download(src.as_uri(), digest, str(tmp_path / "dl" / "pinned.txt"), log)  # the logged value verifies
