"""Config values reach the shell through the rules' `shell:` strings: every one must arrive as one
quoted word. A small CSC study whose `results` folder and word-vectors `path` hold a space and a
command substitution (`$(touch <tmp>/MARKER<n>)`) must run to the end, write its tables under that
folder, and never run the substitution; every printed shell command must keep the odd paths single
quoted. A length-matched corpus (`match_lengths_of`) takes derive_corpus's `--reference-dir` path.

SHELL_QUOTING_PLAIN=1 runs the same study with plain folder names (no space, no `$(...)`): the check
that a failure of these tests is the quoting, not the study or the harness."""
import os
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from workflow_runner import ROOT, snakemake, write_config

PLAIN = os.environ.get("SHELL_QUOTING_PLAIN") == "1"
CORPUS_LINES = 40  # of the default EN-NL sample: the run stays well under a minute on 2 cores


def odd(name: str, marker: Path) -> str:
    """A folder name with a space and a command substitution that would create `marker`."""
    return name.replace(" ", "_") if PLAIN else f"{name} $(touch {marker})"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    base = tmp_path_factory.mktemp("quoting")
    markers = [base / "MARKER1", base / "MARKER2"]
    bitext = base / "bitext.txt"
    lines = (ROOT / "resources" / "corpora" / "en_nl_sample.txt").read_text().splitlines()[:CORPUS_LINES]
    bitext.write_text("\n".join(lines) + "\n")
    # word vectors for the English side: every word of the corpus and the inserted terms
    words = sorted({w for line in lines for w in line.split("\t")[0].split()} | {"a", "the", "not"})
    rng = np.random.default_rng(0)
    vec_dir = base / odd("word vectors", markers[1])
    vec_dir.mkdir(parents=True)
    vectors = vec_dir / "vectors.vec"
    vectors.write_text(f"{len(words)} 8\n" + "".join(
        w + " " + " ".join(f"{x:.5f}" for x in rng.standard_normal(8)) + "\n" for w in words))
    results = odd("odd results", markers[0])
    config = {
        "seed": 3, "embedding_partitions": 1, "results": results,
        "sources": {"sample": {"format": "bitext", "path": str(bitext), "languages": ["en", "nl"]}},
        "corpora": {"pc_en": {"source": "sample", "language": "en"},
                    # length-matched: derive_corpus gets --reference-dir <results>/corpora/pc_en; a subset
                    # of pc_en, so the word vectors' embed job copies pc_en's (--reuse <results>/...)
                    "pc_en_matched": {"source": "sample", "language": "en", "match_lengths_of": "pc_en"}},
        "models": {"tfidf": {"family": "tfidf", "corpora": ["pc_en_matched"]},  # --fitted, --corpus-dir, ...
                   "wv": {"family": "word_vectors", "path": str(vectors)}},  # --model-file
        "csc": {"bootstrap_b": 10, "perturb": {"grammatical_negation": {"enabled": False}}},
    }
    run = base / "run"
    run.mkdir()
    return {"base": base, "run": run, "cfg": write_config(run, config), "results": run / results,
            "results_value": results, "markers": markers, "vectors": vectors}


def markers_found(base: Path) -> list[Path]:
    """Files a command substitution created (folders named `MARKER1)` are the odd paths themselves)."""
    return [p for p in base.rglob("MARKER*") if p.is_file()]


def test_odd_results_and_model_paths_run_to_the_end(study):
    proc = snakemake(study["run"], study["cfg"], check=False)
    found = markers_found(study["base"])
    failed = re.findall(r"^Error in rule (\w+):", proc.stdout + proc.stderr, re.M)
    assert not found and proc.returncode == 0, (
        f"command substitutions run by the shell: {[p.name for p in found]}; snakemake exit {proc.returncode}, "
        f"failed rules {sorted(set(failed))}\n{proc.stderr[-3000:]}")
    res = study["results"]
    for table in ("csc_overlap.csv", "csc_table3.csv", "length_buckets.csv"):
        assert (res / "tables" / table).is_file(), table
    assert (res / "report.md").is_file()
    overlap = (res / "tables" / "csc_overlap.csv").read_text()
    assert "pc_en_matched,wv," in overlap and "pc_en_matched,tfidf," in overlap and "pc_en,wv," in overlap
    assert (res / "corpora" / "pc_en_matched").is_dir()
    assert not markers_found(study["base"])


def printed_commands(text: str) -> list[str]:
    """The shell commands of `snakemake --dry-run --printshellcmds`: each job block ends with
    `Shell command: <command>` (`None` for a rule without one), up to the next blank line."""
    commands = re.findall(r"^Shell command: (.*?)(?=\n\s*\n|\n\[|\nJob stats:|\Z)", text, re.M | re.S)
    return [c.strip() for c in commands if c.strip() != "None"]


def unquoted_text(command: str) -> str:
    """The command with every single-quoted span removed (what the shell still interprets), read as
    the shell reads quotes: shlex.quote writes a value holding `'` as '...'"'"'...', where the middle
    `'` is double-quoted, so single quotes cannot be paired by a regular expression. Text inside
    double quotes is kept: the shell still expands `$(...)` there."""
    out, state, i = [], None, 0
    while i < len(command):
        c = command[i]
        if state == "'":
            state = None if c == "'" else state
        elif c == "\\":
            out.append(command[i:i + 2])
            i += 1
        elif c == "'" and state is None:
            state = "'"
            out.append("''")
        elif c == '"':
            state = None if state == '"' else '"'
        else:
            out.append(c)
        i += 1
    return "".join(out)


def unquoted_options(command: str, needle: str) -> list[str]:
    """The options (`--reference-dir`, ...) followed by an unquoted occurrence of `needle`."""
    text = unquoted_text(command)
    return [(re.findall(r"--[\w-]+", text[:m.start()]) or ["?"])[-1] for m in re.finditer(re.escape(needle), text)]


@pytest.fixture(scope="module")
def dry_run(study):
    proc = snakemake(study["run"], study["cfg"], "--dry-run", "--printshellcmds", "--forceall")
    commands = printed_commands(proc.stdout + proc.stderr)
    assert len(commands) >= 10, proc.stdout[-3000:]
    return commands


def test_dry_run_prints_a_command_per_shell_rule(dry_run):
    joined = "\n".join(dry_run)
    for module in ("workflow_scripts.ingest ingest", "workflow_scripts.length_filter derive", "workflow_scripts.csc.perturb",
                   "workflow_scripts.embed fit-tfidf", "workflow_scripts.embed embed", "workflow_scripts.csc.curves score",
                   "workflow_scripts.length_filter table", "workflow_scripts.csc.curves aggregate"):
        assert module in joined, module
    for option in ("--reference-dir", "--model-file", "--reuse", "--fitted", "--corpus-dir", "--variants-dir"):
        assert option in joined, option


@pytest.mark.parametrize("value", ["results", "vectors"])
def test_printed_commands_quote_the_odd_paths(study, dry_run, value):
    """Every printed command that mentions the odd folder keeps it as (part of) one shell word, and
    `$(touch` appears only inside single quotes."""
    needle = study["results_value"] if value == "results" else str(study["vectors"].parent)
    bad = []
    for command in dry_run:
        if needle not in command:
            continue
        words = shlex.split(command)
        # each occurrence survives inside one word (a path under it, a JSON value): never split by the shell
        if sum(w.count(needle) for w in words) != command.count(needle):
            bad.append(("split into words", command))
        if not PLAIN and "$(touch" in unquoted_text(command):
            bad.append(("$( outside single quotes", command))
    options = sorted({f"{cmd.split(' -m ')[1].split(' --')[0]} {o}" for _, cmd in bad for o in unquoted_options(cmd, needle)})
    assert not bad, (f"unquoted in the shell commands: {options}\n\n"
                     + "\n\n".join(f"{why}:\n{cmd}" for why, cmd in bad))
    assert any(needle in c for c in dry_run), f"no printed command mentions {needle!r}"
