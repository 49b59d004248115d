"""The digest helpers (workflow_scripts/digests.py) and what each caller lists: a file's sha256, one
sha256 over (name, file) lines, the CRC fingerprint of an NLTK package. The expected values come
from hashlib and sha256sum directly, and the two folder listings (the report's, the model digests')
are pinned apart: each is part of digests that finished results record."""
import hashlib
import zipfile
import zlib

from workflow_scripts.digests import crc_digest, file_sha256, tree_sha256


def lines_sha256(pairs) -> str:
    return hashlib.sha256("".join(f"{name}\0{hashlib.sha256(data).hexdigest()}\n" for name, data in pairs)
                          .encode()).hexdigest()


def test_file_sha256_is_sha256sum(tmp_path):
    (tmp_path / "f").write_bytes(b"a\tb\n")
    # printf 'a\tb\n' | sha256sum
    assert file_sha256(tmp_path / "f") == "5dd1197866f479824d9b483e1b7ae9ad3e518f3b4fd447c6b92d127dda6178c5"
    big = bytes(range(256)) * 20_000  # several read blocks
    (tmp_path / "big").write_bytes(big)
    assert file_sha256(str(tmp_path / "big")) == hashlib.sha256(big).hexdigest()


def test_tree_sha256_is_one_line_per_file_in_the_order_given(tmp_path):
    (tmp_path / "x").write_bytes(b"one")
    (tmp_path / "y").write_bytes(b"two")
    pairs = [("b/x", tmp_path / "x"), ("a", tmp_path / "y")]
    assert tree_sha256(pairs) == lines_sha256([("b/x", b"one"), ("a", b"two")])
    assert tree_sha256(pairs[::-1]) != tree_sha256(pairs)  # the caller's order counts
    assert tree_sha256(pairs, lambda p: hashlib.sha256(p.read_bytes()).hexdigest()) == tree_sha256(pairs)
    assert tree_sha256([]) == hashlib.sha256().hexdigest()


def folder(tmp_path):
    """Files whose order as paths, as strings and in a walk all differ, a hidden file and a model card."""
    root = tmp_path / "data"
    files = {"z": b"z", "a/b": b"ab", "a-b/x": b"abx", ".h": b"hidden", "card.md": b"card"}
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root, files


def test_the_reports_folder_digest_lists_every_file_sorted_as_paths(tmp_path):
    from workflow_scripts.report.provenance import sha256_of
    root, files = folder(tmp_path)
    order = [".h", "a/b", "a-b/x", "card.md", "z"]  # ("a", "b") < ("a-b", "x"), though "a-b/x" < "a/b"
    assert sha256_of(str(root)) == "tree:" + lines_sha256([(n, files[n]) for n in order])
    assert sha256_of(str(root / "z")) == hashlib.sha256(b"z").hexdigest()


def test_the_model_digest_walks_the_folder_without_hidden_files_and_cards(tmp_path):
    from workflow_scripts.model_settings import ModelDigests
    root, files = folder(tmp_path)
    order = ["z", "a/b", "a-b/x"]  # a folder's own files before its subfolders', each sorted
    assert ModelDigests(None).digest([root]) == lines_sha256([(n, files[n]) for n in order])
    # the content stamps of local data keep the model cards
    with_cards = ["card.md", "z", "a/b", "a-b/x"]
    assert ModelDigests(None).digest([root], ignored_suffixes=()) == lines_sha256([(n, files[n]) for n in with_cards])


def test_crc_digest_is_the_nltk_package_and_the_taggers_fingerprint(tmp_path):
    from workflow_scripts.csc.tagger import _digest
    from workflow_scripts.nltk_data import package_digest
    data = {"b.txt": b"second", "a.txt": b"first"}
    entries = [(name, len(d), zlib.crc32(d)) for name, d in data.items()]
    text = ";".join(f"{n}:{s}:{c:08x}" for n, s, c in sorted(entries))
    expected = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
    assert crc_digest(entries) == crc_digest(entries[::-1]) == expected
    assert _digest({n: (s, c) for n, s, c in entries}) == expected
    with zipfile.ZipFile(tmp_path / "pkg.zip", "w") as z:
        for name, d in data.items():
            z.writestr(f"pkg/{name}", d)
    assert package_digest(tmp_path / "pkg.zip") == f"pkg@{expected}"
