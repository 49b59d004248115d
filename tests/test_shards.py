"""An unreadable Parquet shard (cut short, damaged) inside a directory output is an error that names
the file, what it is, the rule that wrote it and how to make it again (workflow_scripts/shards.py),
wherever a stage reads shards: derive_corpus reading ingest shards, perturb reading corpus shards,
embed/tfidf reading text partitions; an error no file explains (a missing column) is raised
unchanged. Before (fef8af2), polars said "File out of specification" without a file name."""
import json
import logging

import pytest

from workflow_scripts.ingest import ingest
from workflow_scripts.length_filter import derive_corpus
from workflow_scripts.shards import ShardError

HINT = "and was cut short or damaged after it was written: rerun the rule that made it: snakemake --forcerun {rule} " \
       "(all its jobs), or delete {output} and run snakemake again (this job only)"


@pytest.fixture
def results(tmp_path, log):
    """results/ingest/pc: 100 en-nl pairs in 4 shards of 50 rows, written by ingest()."""
    src = tmp_path / "en-nl.txt"
    src.write_text("".join(f"Sentence number {i} is here.\tZin nummer {i} is hier.\n" for i in range(100)),
                   encoding="utf-8")
    results = tmp_path / "results"
    ingest({"format": "bitext", "languages": ["en", "nl"]}, "pc", str(src), str(results / "ingest" / "pc"), 50, log)
    return results


def cut_in_half(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def damage_the_middle(path):
    """The text column's first page overwritten, the footer intact: the file opens, its texts do not
    decompress. (Not the keys: random numbers do not compress, and zstd stores them raw, unchecked.)"""
    import pyarrow.parquet as pq
    row_group = pq.ParquetFile(path).metadata.row_group(0)
    columns = (row_group.column(c) for c in range(row_group.num_columns))
    text = next(column for column in columns if column.path_in_schema == "text")
    start = text.dictionary_page_offset or text.data_page_offset
    data = bytearray(path.read_bytes())
    data[start + 8:start + 108] = b"\x55" * 100
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [cut_in_half, damage_the_middle])
def test_derive_corpus_names_an_unreadable_ingest_shard_and_its_rule(results, log, damage):
    shard = results / "ingest" / "pc" / "part-00001.parquet"
    damage(shard)
    with pytest.raises(ShardError) as err:
        derive_corpus({"source": "pc", "language": "en"}, "c1", str(results / "ingest" / "pc"),
                      str(results / "corpora" / "c1"), 7, 30, None, log)
    message = str(err.value)
    assert message.startswith(f"{shard}: cannot read this Parquet file (")
    assert message.endswith("; it is one of the ingest shards of source pc, written by rule ingest, "
                            + HINT.format(rule="ingest", output=results / "ingest" / "pc"))
    assert not (results / "corpora" / "c1").exists()
    # an error that no file explains (a shard that reads to its end lacks a column) is raised unchanged
    import polars as pl

    from workflow_scripts.shards import read_parquet
    with pytest.raises(pl.exceptions.ColumnNotFoundError):
        read_parquet(results / "ingest" / "pc" / "part-00000.parquet", columns=["no_such_column"])


def test_perturb_names_an_unreadable_corpus_shard_and_its_rule(results, log):
    derive_corpus({"source": "pc", "language": "en"}, "c1", str(results / "ingest" / "pc"),
                  str(results / "corpora" / "c1"), 7, 30, None, log)
    manifest = json.loads((results / "corpora" / "c1" / "manifest.json").read_text())
    assert [s["rows"] for s in manifest["shards"]] == [30, 30, 30, 10]
    shard = results / "corpora" / "c1" / "part-00002.parquet"
    cut_in_half(shard)
    from workflow_scripts.csc.perturb import perturb_corpus
    out = results / "perturbations" / "c1"
    settings = {"variants_per_sentence": 2, "fuzz_terms": {"en": ["a", "the"]}, "negation_terms": {"en": ["not"]}}
    with pytest.raises(ShardError) as err:
        perturb_corpus(str(results / "corpora" / "c1"), settings, 5, 2, str(out),
                       [str(results / "texts" / "c1" / f"part-{p:03d}.parquet") for p in range(2)],
                       str(results / "reports" / "perturb" / "c1.json"), logging.getLogger("t"))
    message = str(err.value)
    assert message.startswith(f"{shard}: cannot read this Parquet file (")
    assert message.endswith("; it is one of the shards of corpus c1, written by rule derive_corpus, "
                            + HINT.format(rule="derive_corpus", output=results / "corpora" / "c1"))
    assert not out.exists()


@pytest.mark.parametrize("text_set,rule", [("c1", "perturb"), ("retrieval.scifact", "retrieval_build")])
def test_embedding_inputs_name_an_unreadable_text_partition(tmp_path, text_set, rule):
    from workflow_scripts.texts import iter_chunks, unique_rows, write_text_partitions
    files = [tmp_path / "results" / "texts" / text_set / f"part-{p:03d}.parquet" for p in range(2)]
    write_text_partitions([f"text number {i}" for i in range(500)], files)
    masks, n = unique_rows([str(f) for f in files])
    assert n == 500 and sum(len(k) for _, k in iter_chunks([str(f) for f in files], masks, 100)) == 500
    cut_in_half(files[1])
    with pytest.raises(ShardError) as err:
        unique_rows([str(f) for f in files])
    message = str(err.value)
    assert message.startswith(f"{files[1]}: cannot read this Parquet file (")
    assert message.endswith(f"; it is one of the text partitions of text set {text_set}, written by rule {rule}, "
                            + HINT.format(rule=rule, output=files[1]))
    damage_the_middle(files[0])  # opens (its footer is whole), fails while its rows are read
    with pytest.raises(ShardError, match=rf"^{files[0]}: cannot read this Parquet file \(OSError: "):
        list(iter_chunks([str(files[0])], masks[:1], 100))


def test_a_text_partition_is_blamed_on_the_rule_its_probe_declares():
    """The rule named for a text set comes from the probes' declarations (probes.TextSet), shards.py
    lists none: each declared text set's own rule (retrieval's questions their own), a corpus's the
    rule of the probe that writes corpora's text sets, and no rule for a text set nobody declares."""
    from workflow_scripts import probes
    from workflow_scripts.shards import producer

    def rule_of(text_set):
        return producer(f"results/texts/{text_set}/part-000.parquet")[1]

    assert rule_of("retrieval.scifact.query") == "retrieval_query_texts"
    assert rule_of("retrieval.scifact") == "retrieval_build"
    assert rule_of("c1") == "perturb"
    assert rule_of("nosuchprobe.d") is None
    for declared in probes.declarations():
        for text_set in declared.text_sets:
            if not text_set.corpus:
                assert rule_of(f"{declared.name}.{text_set.pattern.replace('*', 'd')}") == text_set.rule
    assert producer("results/perturbations/c1/part-00000.parquet")[:2] == ("perturbation shards of corpus c1", "perturb")
