# Shared definitions: validated config, result paths, resource declarations.
import json
from collections import namedtuple

from workflow_scripts.config import validate

config = validate(config)  # a bad value stops here with the key and the expected form
R = config["results"]
SEED = config["seed"]
SHARD_ROWS = config["shard_rows"]
PARTS = config["embedding_partitions"]
PART_IDS = [f"{p:03d}" for p in range(PARTS)]
NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
PY = "python -m workflow_scripts"

wildcard_constraints:
    source=NAME,
    corpus=NAME,
    model=NAME,
    scope=NAME,
    part=r"\d{3}",

Pair = namedtuple("Pair", "corpus model")


def model_corpora(model):
    return config["models"][model].get("corpora") or list(config["corpora"])


CSC_PAIRS = [Pair(c, m) for m in config["models"] for c in model_corpora(m)]


def store_scope(model, corpus):
    """TF-IDF is fitted per corpus, so its vectors belong to that corpus; every other encoder maps
    a text to one vector, so its store is shared by all the corpora it runs on."""
    return corpus if config["models"][model]["family"] == "tfidf" else "shared"


def as_json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


# Default resources per rule; `resources:` in config overrides them. Memory and runtime grow with
# the attempt number, so a job retried after running out of either gets more.
DEFAULT_RESOURCES = {
    "download": dict(threads=1, mem_mb=500, runtime=240),
    "ingest": dict(threads=1, mem_mb=2000, runtime=120),
    "derive_corpus": dict(threads=2, mem_mb=4000, runtime=60),
    "length_buckets": dict(threads=1, mem_mb=500, runtime=10),
    "perturb": dict(threads=1, mem_mb=3000, runtime=240),
    "fit_tfidf": dict(threads=1, mem_mb=4000, runtime=60),
    "embed": dict(threads=2, mem_mb=6000, runtime=720),
    "csc_score": dict(threads=1, mem_mb=3000, runtime=120),
    "csc_plot": dict(threads=1, mem_mb=1000, runtime=10),
    "csc_aggregate": dict(threads=1, mem_mb=500, runtime=10),
    "report": dict(threads=1, mem_mb=500, runtime=10),
}


def res(rule_name, key):
    value = config.get("resources", {}).get(rule_name, {}).get(key, DEFAULT_RESOURCES[rule_name][key])
    if key in ("mem_mb", "runtime"):
        return lambda wildcards, attempt: value * attempt
    return value


def log_path(rule_name, *parts):
    return f"{R}/logs/{rule_name}/" + "/".join(parts) + ".log"


def bench_path(rule_name, *parts):
    return f"{R}/benchmarks/{rule_name}/" + "/".join(parts) + ".tsv"
