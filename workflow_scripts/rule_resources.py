"""Threads, memory and runtime of every rule, declared in one place and given to each rule's
`threads:` and `resources:` directives (RuleResources), not written per rule. What a job gets, last
one wins:
  1. the declared default: the shared stages' below, each probe's in its probe.py (`rules=`);
  2. `resources.<rule>` in the config;
  3. a job's own entry where the rule declares one (`per_job`): an embedding job's model
     (`models.<model>.threads`, ...), an adapted recipe (`adapt.recipes.<recipe>.mem_mb`, ...);
  4. Snakemake's `--set-threads` / `--set-resources` (command line or profile): never overwritten.
Memory and runtime grow with the attempt number, so a job retried after running out of either
gets more."""
from __future__ import annotations

from collections.abc import Callable, Mapping

from workflow_scripts import probes
from workflow_scripts.probes import Resources

KEYS = ("threads", "mem_mb", "runtime")
GROWS_WITH_ATTEMPT = ("mem_mb", "runtime")

# the shared stages' rules (rules/<stage>.smk); the probes declare theirs
SHARED = {
    "download": Resources(threads=1, mem_mb=500, runtime=240),
    "ingest": Resources(threads=1, mem_mb=2000, runtime=120, heavy=True),
    "derive_corpus": Resources(threads=2, mem_mb=4000, runtime=60, heavy=True),
    "length_buckets": Resources(threads=1, mem_mb=500, runtime=10),
    "nltk_download": Resources(threads=1, mem_mb=500, runtime=30),
    "fit_tfidf": Resources(threads=1, mem_mb=4000, runtime=60, heavy=True),
    # one thread: parallelism comes from the (model, text set, partition) jobs, and on CPU two
    # one-thread jobs encode more than one two-thread job (../shared/notes/performance.md)
    "embed": Resources(threads=1, mem_mb=6000, runtime=720, heavy=True, per_job=("model", "models")),
    "report": Resources(threads=1, mem_mb=1000, runtime=10),
    "disagreements": Resources(threads=1, mem_mb=2000, runtime=10),
    "articles": Resources(threads=1, mem_mb=3000, runtime=120, heavy=True),
    "probe_differences": Resources(threads=1, mem_mb=2000, runtime=10),
}
# rules whose directive names another rule's resources (Snakemake rule name -> declared name)
ALIASES = {"download_model": "download", "download_source": "download"}


def declared() -> dict[str, Resources]:
    """rule name -> declared defaults, of the shared stages and every probe."""
    return {**SHARED, **probes.declared_rules()}


def _entry(config: Mapping, dotted: str) -> Mapping:
    node = config
    for key in dotted.split("."):
        node = node.get(key, {}) if isinstance(node, Mapping) else {}
    return node


def settings(rule: str, config: Mapping) -> dict[str, object]:
    """threads, mem_mb and runtime of `rule`: a value, or a function of (wildcards, attempt) where
    a job's own entry or the attempt number changes it."""
    decl = declared()[ALIASES.get(rule, rule)]
    overrides = config.get("resources", {}).get(ALIASES.get(rule, rule), {})
    base = {key: overrides.get(key, getattr(decl, key)) for key in KEYS}
    out: dict[str, object] = {}
    for key, value in base.items():
        if decl.per_job is None and key not in GROWS_WITH_ATTEMPT:
            out[key] = value
        else:
            out[key] = _per_job(key, value, decl.per_job, config)
    return out


def _per_job(key: str, default, per_job: tuple[str, str] | None, config: Mapping) -> Callable:
    def get(wildcards, attempt=1):
        value = default
        if per_job is not None:
            wildcard, dotted = per_job
            value = _entry(config, dotted).get(getattr(wildcards, wildcard), {}).get(key, default)
        return value * attempt if key in GROWS_WITH_ATTEMPT else value

    return get


class RuleResources:
    """Every rule's `threads:` and `resources:` directives (rules/common.smk: RESOURCES), Snakemake's
    own interface: `threads: RESOURCES.threads("<rule>")` and `resources: **RESOURCES.sized("<rule>")`.
    Snakemake applies --set-threads and --set-resources over them itself."""

    def __init__(self, config: Mapping):
        self.config = config

    def threads(self, rule: str):
        """The rule's threads: a number, or a function of the job's wildcards (its own entry)."""
        return settings(rule, self.config)["threads"]

    def sized(self, rule: str) -> dict[str, object]:
        """The rule's mem_mb and runtime (minutes): functions of (wildcards, attempt)."""
        return {key: value for key, value in settings(rule, self.config).items() if key != "threads"}
