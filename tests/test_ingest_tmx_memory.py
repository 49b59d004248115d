"""SLOW (about 30 s on 2 cores): TMX is read in bounded memory.

The TMX reader runs in a fresh process over generated files of 100,000 and 1,000,000 translation
units, and each process reports its own peak RSS: VmHWM from /proc, which starts afresh at exec,
not ru_maxrss, which Linux carries over from the forking test process and so would hide a leak.
Before the fix every <tu>, cleared but still attached to <body>, stayed in memory (+78 MB at 1M
units); after it the two peaks are equal within noise. Only the reader runs: the rest of ingest
(Parquet shards of `shard_rows` rows) is bounded by construction, and would add a minute of
hashing and writing to the test."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GROWTH_LIMIT_KB = 30_000  # the leak measured +78,000 KB at 1M units; bounded reading measured +0

CHILD = r"""
import json, re, sys
from pathlib import Path
from workflow_scripts.ingest import BadRecord, read_tmx
good = bad = 0
for _, rec in read_tmx(sys.argv[1], ["en", "nl"]):
    bad += isinstance(rec, BadRecord)
    good += not isinstance(rec, BadRecord)
peak_kb = int(re.search(r"VmHWM:\s+(\d+) kB", Path("/proc/self/status").read_text()).group(1))
print(json.dumps({"good": good, "bad": bad, "peak_kb": peak_kb}))
"""


def write_tmx(path: Path, units: int) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4"><header srclang="en"/><body>\n')
        for start in range(0, units, 10_000):
            f.write("".join(f'<tu><tuv xml:lang="en"><seg>Sentence number {i} here.</seg></tuv>'
                            f'<tuv xml:lang="nl"><seg>Zin nummer {i} hier.</seg></tuv></tu>\n'
                            for i in range(start, min(units, start + 10_000))))
        f.write("</body></tmx>\n")


def read_in_child(path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], env=env, check=True, capture_output=True,
                         text=True, timeout=300)
    return json.loads(out.stdout)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc for VmHWM")
def test_tmx_peak_memory_does_not_grow_with_the_file(tmp_path):
    small, large = tmp_path / "100k.tmx", tmp_path / "1m.tmx"
    write_tmx(small, 100_000)
    write_tmx(large, 1_000_000)
    a, b = read_in_child(small), read_in_child(large)
    assert (a["good"], a["bad"], b["good"], b["bad"]) == (100_000, 0, 1_000_000, 0)
    print(f"peak RSS: {a['peak_kb']} KB at 100k units, {b['peak_kb']} KB at 1M units")
    assert b["peak_kb"] - a["peak_kb"] < GROWTH_LIMIT_KB, (a, b)
