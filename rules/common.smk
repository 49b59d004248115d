# Shared definitions: validated config, result paths, resource declarations.
import json
import os
from collections import namedtuple

from workflow_scripts.config import validate

config = validate(config)  # a bad value stops here with the key and the expected form
R = config["results"]
SEED = config["seed"]
SHARD_ROWS = config["shard_rows"]
PARTS = config["embedding_partitions"]
PART_IDS = [f"{p:03d}" for p in range(PARTS)]
NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"

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


_AUTO_DEVICE = []  # `device: auto` resolved once per planning, torch imported only if a model asks


def resolved_device(model):
    """The device a model's embedding jobs run on: `auto` becomes cuda when this process, which
    plans the jobs, sees a GPU, else cpu. Resolved here, not in the job, so that it is a param
    (a change reruns the model) and the `gpu` resource follows it; a job asked for cuda on a
    machine without one refuses to run. Families that are not torch run on the CPU."""
    from workflow_scripts.common import TORCH_FAMILIES

    spec = config["models"][model]
    if spec["family"] not in TORCH_FAMILIES:
        return "cpu"
    if spec.get("device", "auto") != "auto":
        return spec["device"]
    if not _AUTO_DEVICE:
        import torch

        _AUTO_DEVICE.append("cuda" if torch.cuda.is_available() else "cpu")
    return _AUTO_DEVICE[0]


def embed_spec(model):
    """What decides a model's vectors: its config entry without the settings that only say how the
    job runs (batch size, threads, workers, resources, corpora; see RUN_SETTINGS), with the
    resolved device for torch families. As a param, it reruns exactly what changes vectors."""
    from workflow_scripts.common import TORCH_FAMILIES, vector_settings

    spec = vector_settings(config["models"][model])
    spec.pop("device", None)
    if spec["family"] in TORCH_FAMILIES:
        spec["device"] = resolved_device(model)
    return spec


def nltk_plan(wildcards):
    """NLTK data and version the corpus's grammatical negation would use (package name@digest, no
    paths; null where it gets none): a param, so that installing, removing or changing them reruns
    its perturbation and what follows. Cheap: stats and checksums, no nltk import."""
    from workflow_scripts.negation import grammatical_negation_plan

    language = config["corpora"][wildcards.corpus]["language"]
    return as_json(grammatical_negation_plan(config["perturb"], language))


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
    return os.path.join(R, "logs", rule_name, *parts) + ".log"


def bench_path(rule_name, *parts):
    return os.path.join(R, "benchmarks", rule_name, *parts) + ".tsv"


# ---- input functions of rules/ingest.smk ----
def source_input(wildcards):
    spec = config["sources"][wildcards.source]
    if "url" in spec:
        return f"{R}/downloads/sources/{wildcards.source}/{os.path.basename(spec['url']) or 'data'}"
    return spec["path"]


# ---- input functions of rules/length_filter.smk ----
def reference_corpus(wildcards):
    ref = config["corpora"][wildcards.corpus].get("match_lengths_of")
    return {"reference": f"{R}/corpora/{ref}"} if ref else {}


# ---- input functions of rules/embed.smk ----
def model_file(model):
    spec = config["models"][model]
    if "url" in spec:
        # a .gz download is verified, then stored decompressed (fastText's cc.*.300.bin.gz)
        return f"{R}/downloads/models/{model}/{os.path.basename(spec['url']).removesuffix('.gz')}"
    return spec.get("path")


def embed_inputs(wildcards):
    spec = config["models"][wildcards.model]
    if spec["family"] == "tfidf":
        return {"texts": [f"{R}/texts/{wildcards.scope}/part-{wildcards.part}.parquet"],
                "fitted": f"{R}/models/{wildcards.model}/tfidf-{wildcards.scope}.json"}
    inputs = {"texts": [f"{R}/texts/{c}/part-{wildcards.part}.parquet" for c in model_corpora(wildcards.model)]}
    if spec["family"] == "fasttext":
        inputs["model_file"] = model_file(wildcards.model)
    return inputs


def embed_options(wildcards, input):
    opts = []
    if "fitted" in input.keys():
        opts.append(f"--fitted {input.fitted}")
    if "model_file" in input.keys():
        opts.append(f"--model-file {input.model_file}")
    return " ".join(opts)


def model_resource(key):
    def get(wildcards, attempt=1):
        spec = config["models"][wildcards.model]
        base = spec.get(key, config.get("resources", {}).get("embed", {}).get(key, DEFAULT_RESOURCES["embed"][key]))
        return base * attempt if key in ("mem_mb", "runtime") else base
    return get


def tfidf_fit_texts(wildcards):
    if config["models"][wildcards.model].get("fit_on", "originals_and_variants") == "originals":
        return []
    return [f"{R}/texts/{wildcards.corpus}/part-{p}.parquet" for p in PART_IDS]


# ---- input functions of rules/csc.smk ----
def csc_stores(wildcards):
    scope = store_scope(wildcards.model, wildcards.corpus)
    return [f"{R}/embeddings/{wildcards.model}/{scope}/part-{p}" for p in PART_IDS]
