import os
import stat

import numpy as np
import pytest

from workflow_scripts.common import atomic_path, partition_of, stable_id, text_key

# Literal ids computed once with coreutils, not with Python: `printf '%s' TEXT | b2sum -l 64` prints
# the 8-byte blake2b digest in byte order; the code reads those bytes as a little-endian integer,
# so the hex pairs are reversed before converting (`fold -w2 | tac`, then `bc` with ibase=16).
#   "the cat sleeps on the mat"  b2sum 0449ca31b41253ab -> 0xab5312b431ca4904
#   ""                           b2sum e4a6a0577479b2b4 -> 0xb4b2797457a0a6e4
#   "het is niet koud — café"    b2sum 3160688eb4bbc6fd -> 0xfdc6bbb48e686031   (UTF-8 bytes)
#   "pc_en\x1f42\x1fnegation"    b2sum 70fbe1a2220af4c7 -> 0xc7f40a22a2e1fb70   (parts joined by U+001F)
# A change of hash, digest size, byte order, encoding or separator changes these and fails here.


@pytest.mark.parametrize("text, expected", [
    ("the cat sleeps on the mat", 12345231568691415300),
    ("", 13020603013274838756),
    ("het is niet koud — café", 18286509721142190129),
])
def test_text_key_is_pinned_to_blake2b_64_little_endian(text, expected):
    assert text_key(text) == expected


def test_stable_id_is_pinned_and_joins_parts_with_unit_separator():
    assert stable_id("pc_en", 42, "negation") == 14408152251742944112
    assert stable_id("the cat sleeps on the mat") == 12345231568691415300  # one part: no separator


def test_partition_of_is_the_key_modulo_partitions():
    key = np.uint64(12345231568691415300)  # by bc: this key mod 2 = 0, mod 7 = 4; the next mod 7 = 5
    assert partition_of(key, 2) == 0 and partition_of(key, 7) == 4
    assert partition_of(np.array([key, np.uint64(13020603013274838756)]), 7).tolist() == [4, 5]


def test_stale_tmp_entries_of_the_same_output_are_removed_others_kept(tmp_path):
    """A job killed inside atomic_path leaves `.tmp-<name>-<8 chars>`; the next attempt at the same
    output removes it, and nothing that belongs to another output."""
    stale_file = tmp_path / ".tmp-out.parquet-a1b2c3d4"
    stale_file.write_text("half-written")
    stale_dir = tmp_path / ".tmp-out.parquet-0f0f0f0f"
    (stale_dir / "sub").mkdir(parents=True)
    (stale_dir / "sub" / "x").write_text("x")
    kept = [tmp_path / ".tmp-out.parquet.bak-a1b2c3d4",   # another output's temp
            tmp_path / ".tmp-out-a1b2c3d4",               # another output's temp
            tmp_path / ".tmp-out.parquet-a1b2c3d",        # not the pattern: 7 characters
            tmp_path / ".tmp-out.parquet-a1b2c3d4e",      # not the pattern: 9 characters
            tmp_path / "out.parquet.old"]
    for k in kept:
        k.write_text("keep")
    with atomic_path(tmp_path / "out.parquet") as tmp:
        assert tmp.name.startswith(".tmp-out.parquet-") and len(tmp.name) == len(".tmp-out.parquet-") + 8
        tmp.write_text("new")
    assert not stale_file.exists() and not stale_dir.exists()
    assert all(k.read_text() == "keep" for k in kept)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([k.name for k in kept] + ["out.parquet"])
    assert (tmp_path / "out.parquet").read_text() == "new"


@pytest.mark.parametrize("umask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750),
                                                         (0o002, 0o664, 0o775)])
def test_outputs_get_the_permissions_of_the_current_umask(tmp_path, umask, file_mode, dir_mode):
    old = os.umask(umask)  # set after import: permissions must follow the umask in force now
    try:
        with atomic_path(tmp_path / "f.txt") as tmp:
            tmp.write_text("x")
        with atomic_path(tmp_path / "d", is_dir=True) as tmp:
            (tmp / "inner.txt").write_text("y")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f.txt").stat().st_mode) == file_mode
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == dir_mode


def test_failed_block_leaves_nothing_and_keeps_the_previous_output(tmp_path):
    (tmp_path / "out.txt").write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(tmp_path / "out.txt") as tmp:
            tmp.write_text("partial")
            raise RuntimeError("killed")
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
    assert (tmp_path / "out.txt").read_text() == "old"
