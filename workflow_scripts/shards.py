"""Reading the Parquet files that rules wrote, with errors that name the file and the rule.

A shard cut short (a full disk, a copy between machines killed half-way, a file system that lost
its tail) or damaged makes polars and pyarrow fail with "File out of specification" or "Parquet
magic bytes not found in footer", without the file's name: with hundreds of shards, nobody knows
which output to make again. Reads of shard directories go through `reading(files)` (or
`read_parquet`): an Arrow or polars error there is checked against each file, and the first file
that cannot be read to its end is named in a ShardError, with what it is (from where it lies under
the results folder: `results/ingest/<source>/` holds the ingest shards of <source>, written by rule
`ingest`) and how to make it again. An error that no file explains (a missing column, a bug) is
raised unchanged.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterable, Iterator

# results/<folder>/<name>/<file>: what the directories in <folder> hold, and the rule that writes them
# (the shared stages'; a probe declares its own, probes.shard_folders)
PRODUCERS = {
    "ingest": ("ingest shards of source {name}", "ingest"),
    "corpora": ("shards of corpus {name}", "derive_corpus"),
    "articles": ("shards of article collection {name}", "articles"),
}


class ShardError(ValueError):
    """A Parquet file that a rule wrote cannot be read."""


def producer(path: str | os.PathLike) -> tuple[str, str | None, Path | None]:
    """(what the file is, the rule that writes it, the output to delete so that only its job
    reruns), from where the file lies; ("a Parquet input", None, None) where that is not known."""
    from workflow_scripts import probes

    path = Path(path)
    folder, name = path.parent.parent.name, path.parent.name
    producers = {**PRODUCERS, **probes.shard_folders()}
    if folder in producers:
        what, rule = producers[folder]
        return what.format(name=name), rule, path.parent
    if folder == "texts" and (declared := probes.text_set(name)) is not None:
        # results/texts/<text set>/part-NNN.parquet: the rule its probe declares
        return f"text partitions of text set {name}", declared.rule, path
    return "a Parquet input", None, None


def unreadable(path: str | os.PathLike) -> BaseException | None:
    """The error reading every row group of `path` raises, or None if it reads to its end."""
    import pyarrow.parquet as pq
    try:
        with pq.ParquetFile(path) as pf:
            for _ in pf.iter_batches(batch_size=1 << 16):
                pass
    except Exception as err:  # noqa: BLE001 - whatever stops the read is the answer
        return err
    return None


def shard_error(path: str | os.PathLike, err: BaseException) -> ShardError:
    what, rule, output = producer(path)
    message = f"{path}: cannot read this Parquet file ({type(err).__name__}: {err})"
    if rule is None:
        return ShardError(f"{message}; it was cut short or damaged after it was written: make it again")
    return ShardError(f"{message}; it is one of the {what}, written by rule {rule}, and was cut short or damaged "
                      f"after it was written: rerun the rule that made it: snakemake --forcerun {rule} (all its "
                      f"jobs), or delete {output} and run snakemake again (this job only)")


def _is_read_error(err: BaseException) -> bool:
    import pyarrow as pa
    return isinstance(err, (OSError, pa.ArrowException)) or type(err).__module__.split(".")[0] == "polars"


@contextlib.contextmanager
def reading(files: str | os.PathLike | Iterable[str | os.PathLike]) -> Iterator[None]:
    """Run the block that reads `files` (one path or several); an Arrow/polars/OS error in it that
    one of them explains (it cannot be read to its end) becomes a ShardError naming that file."""
    files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    try:
        yield
    except ShardError:
        raise
    except Exception as err:
        if not _is_read_error(err):
            raise
        for path in files:
            problem = unreadable(path)
            if problem is not None:
                raise shard_error(path, problem) from err
        raise


def read_parquet(path: str | os.PathLike, **kwargs):
    """polars.read_parquet of one file, a ShardError naming it if it cannot be read."""
    import polars as pl
    with reading(path):
        return pl.read_parquet(path, **kwargs)
