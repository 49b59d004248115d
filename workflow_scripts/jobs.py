"""A job is a function. Every rule runs `script: "../workflow_scripts/run_job.py"` and names, in
`params.function`, a function of this package ("module:function", e.g. "length_filter:derive");
`call` gives that function the job as Snakemake hands it to a script: `job.input`, `job.output`,
`job.params`, `job.wildcards` (named lists: `job.input.texts` or `job.input["texts"]`;
`job.input.get("name")` for an optional one: `in` looks at the values, not the names),
`job.threads`, `job.resources` and `job.log`. Nothing goes through a command line: a rule declares
its files once, and structured params (dicts, lists) arrive as they are, not as JSON text.

What the job prints, its logging records and any traceback go to the rule's log (the file is
rewritten, as `> {log} 2>&1` did). Tests build a job with `make_job`."""
from __future__ import annotations

import importlib
import logging
import os
import sys
from types import SimpleNamespace


class JobError(Exception):
    """A rule names a function that does not exist."""


def resolve(name: str):
    """The function `module:function` of workflow_scripts (`csc.curves:score`)."""
    module, sep, attribute = name.partition(":")
    if not sep or not module or not attribute:
        raise JobError(f"params.function must read 'module:function' (within workflow_scripts), got {name!r}")
    try:
        function = getattr(importlib.import_module(f"workflow_scripts.{module}"), attribute)
    except (ModuleNotFoundError, AttributeError) as err:
        raise JobError(f"params.function {name!r}: {err}") from err
    if not callable(function):
        raise JobError(f"params.function {name!r} is not a function")
    return function


def redirect_output(log_path: str) -> None:
    """Send this process's stdout and stderr (file descriptors 1 and 2, so that libraries writing
    to them directly and child processes are caught too) to `log_path`, truncated."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    # line-buffered, so that a long job's progress is in the log as it happens
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.reconfigure(line_buffering=True)


def call(job) -> None:
    """Run the function the rule names with `job` (Snakemake's `snakemake` object in a script)."""
    if job.log:
        redirect_output(str(job.log[0]))
    # the job's declared threads bound polars' pool, as for every library that reads a thread count
    os.environ.setdefault("POLARS_MAX_THREADS", str(job.threads))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s",
                        datefmt="%Y-%m-%d %H:%M:%S", stream=sys.stderr)
    resolve(job.params["function"])(job)


def pair_entries(pairs: list[dict], inputs) -> list[dict]:
    """Each of an aggregate's pairs with its files: pair i's files are the inputs named `<file>_<i>`
    (ProbePlan.pair_inputs); inputs without such a name are not a pair's."""
    entries = [dict(pair) for pair in pairs]
    for name, path in inputs.items():
        file, sep, index = name.rpartition("_")
        if sep and index.isdigit():
            entries[int(index)][file] = path
    return entries


def make_job(input=None, output=None, params=None, wildcards=None, threads: int = 1,
             resources=None, log=None, function: str | None = None) -> SimpleNamespace:
    """A job as a rule would give it to its function, for tests: each of input, output, params,
    wildcards and resources a dict of names, log a path or None. They are Snakemake's own named
    lists, so a function sees in a test what it sees in a job."""
    from snakemake.iocontainers import Namedlist

    params = dict(params or {})
    if function is not None:
        params["function"] = function

    def named(values):
        return Namedlist(fromdict=values) if isinstance(values, dict) else Namedlist(toclone=values or [])

    return SimpleNamespace(
        input=named(input), output=named(output), params=named(params), wildcards=named(wildcards),
        threads=threads, resources=named(resources), log=named([log] if log else []), rule="test")
