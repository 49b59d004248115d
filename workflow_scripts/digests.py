"""Digests of files and folders, one helper for each thing they compute:

- `file_sha256(path)`: a file's sha256 (hex), read in blocks;
- `tree_sha256(files, file_digest)`: one sha256 over (name, file) pairs, a line `name NUL sha256 LF`
  each, in the order given. Which files a folder holds, and in which order, is its caller's: the
  report's data sources (report/provenance.py) count every file, sorted by path; a model's files
  and the content stamps of local data (model_settings.ModelDigests) leave out hidden files and
  model cards, in walk order, each file's sha256 cached. Either listing is part of digests that
  results and stamps record, so neither is changed into the other;
- `crc_digest(entries)`: a short fingerprint of (name, size, CRC-32) entries, the identity of an
  NLTK package read from a zip's directory without decompressing it (nltk_data.py, csc/tagger.py):
  cheap enough for every Snakemake start, and no sha256 of the bytes.

Other digests stay with their own semantics: a download's sha256 is of the bytes as they arrive,
before decompression (downloads.py); a vector store's sampled digest reads spaced blocks of large
files (vector_store.file_digest); NLTK archives are checked against md5 and sha256 in one read
(nltk_data._hashes); ids and cache keys hash values, not files.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Iterable


def file_sha256(path: str | Path) -> str:
    """The sha256 (hex) of the file at `path`."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def tree_sha256(files: Iterable[tuple[str, Path]], file_digest: Callable[[Path], str] = file_sha256) -> str:
    """One sha256 over `files` ((name, path) pairs, in the order given): a line `name NUL digest LF`
    per file, its digest by `file_digest` (default file_sha256; a cached one gives the same)."""
    h = hashlib.sha256()
    for name, path in files:
        h.update(f"{name}\0{file_digest(path)}\n".encode())
    return h.hexdigest()


def crc_digest(entries: Iterable[tuple[str, int, int]]) -> str:
    """16 hex digits of blake2b over (name, size, CRC-32) entries, sorted by name: `name:size:crc`
    joined by `;`."""
    text = ";".join(f"{name}:{size}:{crc:08x}" for name, size, crc in sorted(entries))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
