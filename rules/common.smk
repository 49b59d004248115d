# Shared definitions: validated config, result paths, resource declarations.
import json
import os
from collections import namedtuple
from pathlib import Path

from workflow_scripts.config import validate

config = validate(config)  # a bad value stops here with the key and the expected form
R = config["results"]
# adapt recipes become models (family sentence_transformers, path <results>/models/<recipe>;
# rules/adapt.smk trains them) before any probe plans its pairs, so every probe can evaluate them
from workflow_scripts.adapt import models as adapt_models

ADAPT_RECIPES = adapt_models.order(config)
adapt_models.register(config, R)
SEED = config["seed"]
SHARD_ROWS = config["shard_rows"]
PARTS = config["embedding_partitions"]
# the first rule of each long chain (a corpus's perturbation, the fusion generator, training, a
# probe's text set): on a few cores these go before the many embedding and scoring jobs that are
# ready at the same time, so no chain is started last and left to trail the run alone
CHAIN_HEAD_PRIORITY = 10
PART_IDS = [f"{p:03d}" for p in range(PARTS)]
NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"

wildcard_constraints:
    source=NAME,
    # no dots: a text set `<probe>.<dataset>` must never parse as a corpus
    corpus=r"[A-Za-z0-9][A-Za-z0-9_-]*",
    dataset=NAME,
    model=NAME,
    scope=NAME,
    part=r"\d{3}",

Pair = namedtuple("Pair", "corpus model")
DatasetPair = namedtuple("DatasetPair", "dataset model")


# ---- which model runs where: every probe asks these ----
def runs_probe(model, probe):
    """A model runs every probe unless its config entry lists `probes`."""
    return probe in config["models"][model].get("probes", [probe])


def model_corpora(model):
    return config["models"][model].get("corpora") or list(config["corpora"])


def model_datasets(model, probe):
    """The datasets of `probe` (every probe names its datasets, sets or sample sets under
    `<probe>.datasets`) a model scores: all, unless its entry lists `datasets`."""
    wanted = config["models"][model].get("datasets")
    return [d for d in config[probe]["datasets"] if wanted is None or d in wanted]


CSC_PAIRS = [Pair(c, m) for m in config["models"] if runs_probe(m, "csc") for c in model_corpora(m)]
TRIPLETS = "triplets" in config
TRIPLET_PAIRS = [DatasetPair(d, m) for m in config["models"] if TRIPLETS and runs_probe(m, "triplets")
                 for d in model_datasets(m, "triplets")]
# datasets some model scores, in config order (a dataset no model scores is not built)
TRIPLET_DATASETS = [d for d in (config["triplets"]["datasets"] if TRIPLETS else [])
                    if any(p.dataset == d for p in TRIPLET_PAIRS)]
DOMAIN_SHIFT = "domain_shift" in config
DOMAIN_SHIFT_PAIRS = [DatasetPair(d, m) for m in config["models"] if DOMAIN_SHIFT and runs_probe(m, "domain_shift")
                      for d in model_datasets(m, "domain_shift")]
DOMAIN_SHIFT_DATASETS = [d for d in (config["domain_shift"]["datasets"] if DOMAIN_SHIFT else [])
                         if any(p.dataset == d for p in DOMAIN_SHIFT_PAIRS)]
SETTHEORY = "settheory" in config
SETTHEORY_PAIRS = [DatasetPair(d, m) for m in config["models"] if SETTHEORY and runs_probe(m, "settheory")
                   for d in model_datasets(m, "settheory")]
# sample sets some model scores, in config order (a set no model scores is not built)
SETTHEORY_SETS = [d for d in (config["settheory"]["datasets"] if SETTHEORY else [])
                  if any(p.dataset == d for p in SETTHEORY_PAIRS)]
MONTAGUE = "montague" in config
MONTAGUE_PAIRS = [DatasetPair(d, m) for m in config["models"] if MONTAGUE and runs_probe(m, "montague")
                  for d in model_datasets(m, "montague")]
MONTAGUE_DATASETS = [d for d in (config["montague"]["datasets"] if MONTAGUE else [])
                     if any(p.dataset == d for p in MONTAGUE_PAIRS)]
RETRIEVAL = "retrieval" in config
RETRIEVAL_PAIRS = [DatasetPair(d, m) for m in config["models"] if RETRIEVAL and runs_probe(m, "retrieval")
                   for d in model_datasets(m, "retrieval")]
RETRIEVAL_DATASETS = [d for d in (config["retrieval"]["datasets"] if RETRIEVAL else [])
                      if any(p.dataset == d for p in RETRIEVAL_PAIRS)]


# ---- text sets: what the probes hand to the embedding stage (README, "Probes") ----
# A text set is a corpus (its originals and variants, written by CSC's perturb) or a probe's
# dataset (scope `<probe>.<dataset>`). Each has its own texts/<scope>/ files and, per model, its
# own store embeddings/<model>/<scope>/, so adding a corpus, a dataset or a probe adds jobs and
# never changes an existing embedding job's inputs.
def dataset_scope(probe, dataset):
    return f"{probe}.{dataset}"


def scope_corpus(scope):
    """The corpus a text set is, or None for a probe dataset."""
    return scope if scope in config["corpora"] else None


DERIVING_KEYS = ("min_tokens", "max_tokens", "match_lengths_of", "max_sentences")


def parent_corpus(corpus):
    """The configured corpus a derived corpus (a token range, a length-matched or capped subset) was
    cut from: the first unfiltered corpus of the same source and language. Its sentences, and so
    its variants (seeded per sentence), are the parent's, so its vectors are copied, not encoded."""
    spec = config["corpora"][corpus]
    if not any(spec.get(k) is not None for k in DERIVING_KEYS):
        return None
    for name, other in config["corpora"].items():
        if (name != corpus and other["source"] == spec["source"] and other["language"] == spec["language"]
                and not any(other.get(k) is not None for k in DERIVING_KEYS)):
            return name
    return None


def reuse_scope(model, scope):
    """The store this model's store of `scope` copies vectors from, or None. TF-IDF is fitted per
    text set, so its vectors are never shared."""
    corpus = scope_corpus(scope)
    parent = parent_corpus(corpus) if corpus else None
    if parent is None or config["models"][model]["family"] == "tfidf" or parent not in model_corpora(model):
        return None
    return parent


# ---- NLTK data the probes need, planned before any job ----
NLTK_MANIFEST = f"{R}/nltk_data/manifest.json"


def plan_nltk():
    """{"missing": probe -> packages this machine lacks, "fingerprint": package -> name@digest}.
    Looked for in <results>/nltk_data (the download rule's folder), NLTK_DATA and nltk's defaults."""
    from workflow_scripts import nltk_data

    paths = [os.path.abspath(f"{R}/nltk_data")] + nltk_data.search_paths()
    needed = nltk_data.required_packages(config)
    missing = {probe: nltk_data.missing_packages(pkgs, paths) for probe, pkgs in needed.items()}
    missing = {probe: pkgs for probe, pkgs in missing.items() if pkgs}
    fingerprint = {}
    for pkg in sorted({p for pkgs in needed.values() for p in pkgs}):
        found = nltk_data.find_package(pkg, paths)
        if found is None or Path(found).is_relative_to(paths[0]):
            # fetched by the download rule: its manifest (md5 per package) is the jobs' input
            fingerprint[pkg] = "nltk_download"
        else:
            fingerprint[pkg] = nltk_data.package_digest(found)
    return {"missing": missing, "fingerprint": fingerprint}


NLTK_PLAN = plan_nltk()
if NLTK_PLAN["missing"]:
    from snakemake.exceptions import WorkflowError
    from workflow_scripts import nltk_data as _nltk_data

    if config["nltk_download"] != "auto" or not _nltk_data.server_reachable():
        # before any job: a run that would fail half-way in a probe's first job stops here instead
        raise WorkflowError(_nltk_data.offline_message(NLTK_PLAN["missing"]))
# Once the workflow has downloaded NLTK data, the jobs that use it keep it as an input (else the
# next run, finding the packages, would see the inputs change and rebuild).
NLTK_DOWNLOAD = bool(NLTK_PLAN["missing"]) or os.path.exists(NLTK_MANIFEST)


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


def embed_priority(wildcards):
    """Neural models' embedding jobs (10 s to minutes each) before TF-IDF's and the other cheap
    encoders' (a few seconds): longest first, so that no long job is left to run alone at the end."""
    from workflow_scripts.common import TORCH_FAMILIES

    return 1 if config["models"][wildcards.model]["family"] in TORCH_FAMILIES else 0


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


# Default resources per rule; `resources:` in config overrides them. Memory and runtime grow with
# the attempt number, so a job retried after running out of either gets more.
DEFAULT_RESOURCES = {
    "download": dict(threads=1, mem_mb=500, runtime=240),
    "ingest": dict(threads=1, mem_mb=2000, runtime=120),
    "derive_corpus": dict(threads=2, mem_mb=4000, runtime=60),
    "length_buckets": dict(threads=1, mem_mb=500, runtime=10),
    "perturb": dict(threads=1, mem_mb=3000, runtime=240),
    "triplets_build": dict(threads=1, mem_mb=2000, runtime=30),
    "triplets_score": dict(threads=1, mem_mb=2000, runtime=30),
    "triplets_aggregate": dict(threads=1, mem_mb=1000, runtime=10),
    "montague_phrases": dict(threads=1, mem_mb=1000, runtime=10),
    "montague_score": dict(threads=1, mem_mb=3000, runtime=60),
    "montague_aggregate": dict(threads=1, mem_mb=1000, runtime=10),
    "retrieval_build": dict(threads=1, mem_mb=4000, runtime=60),
    "retrieval_search": dict(threads=2, mem_mb=4000, runtime=120),
    "retrieval_isotropy": dict(threads=2, mem_mb=4000, runtime=240),
    "retrieval_metrics": dict(threads=1, mem_mb=2000, runtime=30),
    "retrieval_aggregate": dict(threads=1, mem_mb=2000, runtime=10),
    "nltk_download": dict(threads=1, mem_mb=500, runtime=30),
    "fit_tfidf": dict(threads=1, mem_mb=4000, runtime=60),
    # one thread: parallelism comes from the (model, text set, partition) jobs, and on CPU two
    # one-thread jobs encode more than one two-thread job (../shared/notes/performance.md)
    "embed": dict(threads=1, mem_mb=6000, runtime=720),
    "csc_score": dict(threads=1, mem_mb=3000, runtime=120),
    "csc_plot": dict(threads=1, mem_mb=1000, runtime=10),
    "csc_aggregate": dict(threads=1, mem_mb=500, runtime=10),
    "report": dict(threads=1, mem_mb=1000, runtime=10),
    "articles": dict(threads=1, mem_mb=3000, runtime=120),
    "settheory_samples": dict(threads=2, mem_mb=4000, runtime=240),
    "settheory_filter": dict(threads=1, mem_mb=2000, runtime=30),
    "settheory_measures": dict(threads=1, mem_mb=3000, runtime=60),
    "settheory_aggregate": dict(threads=1, mem_mb=2000, runtime=30),
    "adapt_train": dict(threads=2, mem_mb=8000, runtime=240),
    "domain_shift_build": dict(threads=1, mem_mb=2000, runtime=30),
    "domain_shift_score": dict(threads=1, mem_mb=3000, runtime=30),
    "domain_shift_aggregate": dict(threads=1, mem_mb=2000, runtime=10),
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
def source_spec(name):
    """A corpus source, or a probe's source (names are unique across both: config.py checks)."""
    if name in config["sources"]:
        return config["sources"][name]
    if name in config.get("articles", {}):  # article collections (rules/articles.smk)
        return config["articles"][name]
    return config["triplets"]["sources"][name]


def source_file(name):
    """The local file of a source: its path, or where its verified download lands; None for
    sources that are NLTK data (the treebank)."""
    spec = source_spec(name)
    if "url" in spec:
        return f"{R}/downloads/sources/{name}/{os.path.basename(spec['url']) or 'data'}"
    return spec.get("path")


def source_input(wildcards):
    return source_file(wildcards.source)


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
    inputs = {"texts": f"{R}/texts/{wildcards.scope}/part-{wildcards.part}.parquet"}
    if spec["family"] == "tfidf":
        inputs["fitted"] = f"{R}/models/{wildcards.model}/tfidf-{wildcards.scope}.json"
    if spec["family"] in ("fasttext", "word_vectors"):
        inputs["model_file"] = model_file(wildcards.model)
    if spec.get("adapted"):  # a model the workflow trains (rules/adapt.smk): its directory
        inputs["model_dir"] = spec["path"]
    parent = reuse_scope(wildcards.model, wildcards.scope)
    if parent:
        inputs["reuse"] = f"{R}/embeddings/{wildcards.model}/{parent}/part-{wildcards.part}"
    return inputs


def embed_options(wildcards, input):
    opts = []
    if "fitted" in input.keys():
        opts.append(f"--fitted {input.fitted}")
    if "model_file" in input.keys():
        opts.append(f"--model-file {input.model_file}")
    if "reuse" in input.keys():
        opts.append(f"--reuse {input.reuse}")
    return " ".join(opts)


def model_resource(key):
    def get(wildcards, attempt=1):
        spec = config["models"][wildcards.model]
        base = spec.get(key, config.get("resources", {}).get("embed", {}).get(key, DEFAULT_RESOURCES["embed"][key]))
        return base * attempt if key in ("mem_mb", "runtime") else base
    return get


def tfidf_fit_inputs(wildcards):
    """A corpus: its directory (the originals), and unless fitted on the originals alone its text
    partitions and its variants (whose insertions are counted from their originals); a probe
    dataset: its text partitions."""
    texts = [f"{R}/texts/{wildcards.scope}/part-{p}.parquet" for p in PART_IDS]
    if scope_corpus(wildcards.scope) is None:
        return {"texts": texts}
    inputs = {"corpus": f"{R}/corpora/{wildcards.scope}"}
    if config["models"][wildcards.model].get("fit_on", "originals_and_variants") != "originals":
        inputs.update(texts=texts, variants=f"{R}/perturbations/{wildcards.scope}")
    return inputs


def tfidf_fit_options(wildcards, input):
    opts = [f"--scope {wildcards.scope}"]
    if "corpus" in input.keys():
        opts.append(f"--corpus-dir {input.corpus}")
    if "texts" in input.keys():
        opts.append("--texts " + " ".join(input.texts))
    if "variants" in input.keys():
        opts.append(f"--variants-dir {input.variants}")
    return " ".join(opts)


# ---- input functions of rules/csc.smk ----
def csc_perturb_settings(wildcards):
    """The part of `csc.perturb` a corpus's variants depend on: its language's terms only, so
    editing another language's terms reruns nothing here."""
    settings = config["csc"]["perturb"]
    language = config["corpora"][wildcards.corpus]["language"]
    return as_json({**settings, "fuzz_terms": {language: settings["fuzz_terms"][language]},
                    "negation_terms": {language: settings["negation_terms"][language]}})


def nltk_plan(wildcards):
    """NLTK data and version the corpus's grammatical negation would use (package name@digest, no
    paths; null where it gets none): a param, so that installing, removing or changing them reruns
    its perturbation and what follows. Cheap: stats and checksums, no nltk import."""
    from workflow_scripts.csc.negation import grammatical_negation_plan

    language = config["corpora"][wildcards.corpus]["language"]
    return as_json(grammatical_negation_plan(config["csc"]["perturb"], language))


def csc_stores(wildcards):
    return [f"{R}/embeddings/{wildcards.model}/{wildcards.corpus}/part-{p}" for p in PART_IDS]


# ---- input functions of rules/triplets.smk ----
def triplet_dataset_sources(dataset):
    return config["triplets"]["datasets"][dataset].get("sources", [])


def triplet_build_inputs(wildcards):
    spec = config["triplets"]["datasets"][wildcards.dataset]
    inputs = {"sources": [f for f in map(source_file, triplet_dataset_sources(wildcards.dataset)) if f]}
    if "file" in spec:
        inputs["file"] = spec["file"]
    if NLTK_DOWNLOAD:
        inputs["nltk"] = NLTK_MANIFEST
    return inputs


def triplet_sources(wildcards):
    return as_json({name: {"format": source_spec(name)["format"], "file": source_file(name)}
                    for name in triplet_dataset_sources(wildcards.dataset)})


def triplet_settings(wildcards):
    keys = ("fixed_point_pivot", "passive_agent", "clause_max_tokens", "sick_partners", "templates")
    return as_json({k: config["triplets"][k] for k in keys if k in config["triplets"]})


def triplet_scoring(dataset):
    spec = config["triplets"]["datasets"][dataset]
    if "file" in spec:
        return spec.get("scoring", "strict")
    return "negation_variants" if spec.get("kind", dataset) == "negation_variants" else "strict"


def triplet_nltk_plan(wildcards):
    return as_json(NLTK_PLAN.get("fingerprint", {}))


def nltk_data_path(wildcards):
    """NLTK_DATA for a job: the workflow's own download folder first, then the user's."""
    return os.pathsep.join(p for p in (os.path.abspath(f"{R}/nltk_data"), os.environ.get("NLTK_DATA")) if p)


def triplet_stores(wildcards):
    scope = dataset_scope("triplets", wildcards.dataset)
    return [f"{R}/embeddings/{wildcards.model}/{scope}/part-{p}" for p in PART_IDS]


# ---- input functions of rules/report.smk ----
from workflow_scripts.report_pages import CATEGORIES as REPORT_CATEGORY  # report(category=...) of every probe


def report_data_sources(wildcards=None):
    """Name -> local file or folder of every input the probes that ran read (provenance: sha256)."""
    data = {s: source_file(s) for s in config["sources"]}
    for d in TRIPLET_DATASETS:
        data.update({s: source_file(s) for s in triplet_dataset_sources(d)})
        data[f"triplets.{d}"] = config["triplets"]["datasets"][d].get("file")
    for d in MONTAGUE_DATASETS:
        data[f"montague.{d}"] = config["montague"]["datasets"][d].get("file")
    for d in RETRIEVAL_DATASETS:
        for i, path in enumerate(retrieval_paths(config["retrieval"]["datasets"][d])):
            data[f"retrieval.{d}" + (f".{i}" if i else "")] = path
    for d in SETTHEORY_SETS:
        spec = config["settheory"]["datasets"][d]
        data[f"settheory.{d}"] = spec.get("file") or source_file(spec["articles"])
    for d in DOMAIN_SHIFT_DATASETS:  # files read in place (sets and corpora are the workflow's own outputs)
        data.update({f"domain_shift.{d}.{label}": path for label, path in domain_shift_source_paths(d).items()
                     if not path.startswith(f"{R}/")})
    for m in REPORT_STORES:  # the model files the embedding jobs read as inputs (a hub model's origin is in its manifest)
        spec = config["models"][m]
        if spec["family"] in ("fasttext", "word_vectors") or spec.get("adapted"):
            data[f"model {m}"] = model_file(m)
    return {name: path for name, path in data.items() if path}


def report_data_inputs(wildcards):
    return {"data": sorted(set(report_data_sources().values()))}


def report_overview_options():
    measures = config["settheory"]["measures"] if SETTHEORY else []
    return {"retrieval_k": config["retrieval"]["table_k"] if RETRIEVAL else 5,
            "settheory_measure": "cosine" if "cosine" in measures or not measures else measures[0]}


def triplet_report_inputs(wildcards):
    if not TRIPLET_PAIRS:
        return {}
    return {"triplets_overview": f"{R}/tables/triplets_overview.csv",
            "triplet_tables": [f"{R}/tables/triplets_{d}.csv" for d in TRIPLET_DATASETS],
            "triplet_reports": [f"{R}/reports/triplets/{d}.json" for d in TRIPLET_DATASETS],
            "triplet_plots": [f"{R}/plots/triplets/{d}.png" for d in TRIPLET_DATASETS]}


def report_triplet_options(wildcards, input):
    if "triplets_overview" not in input.keys():
        return ""
    from shlex import quote

    opts = [f"--triplets-overview {quote(input.triplets_overview)}"]
    for key in ("triplet_tables", "triplet_reports", "triplet_plots"):
        opts.append(f"--{key.replace('_', '-')} " + " ".join(quote(p) for p in input[key]))
    return " ".join(opts)


# ---- input functions of rules/montague.smk ----
def montague_phrase_inputs(wildcards):
    """A word list read from a CSV: the file (a change rebuilds the phrases); lists given in the
    config are params."""
    spec = config["montague"]["datasets"][wildcards.dataset]
    return {"file": spec["file"]} if "file" in spec else {}


def montague_stores(wildcards):
    scope = dataset_scope("montague", wildcards.dataset)
    return [f"{R}/embeddings/{wildcards.model}/{scope}/part-{p}" for p in PART_IDS]


# ---- input functions of rules/retrieval.smk ----
def retrieval_paths(value):
    """Every local `path` in a retrieval set's spec (its sources, TeleQnA's zip, ...): inputs of its build."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in ([v] if k == "path" and isinstance(v, str) else retrieval_paths(v))]
    if isinstance(value, list):
        return [p for v in value for p in retrieval_paths(v)]
    return []


def retrieval_build_inputs(wildcards):
    inputs = {"sources": retrieval_paths(config["retrieval"]["datasets"][wildcards.dataset])}
    if NLTK_DOWNLOAD:
        inputs["nltk"] = NLTK_MANIFEST
    return inputs


def retrieval_build_spec(wildcards):
    """The set's config entry as the builder reads it (the evaluation split is the probe's)."""
    spec = {k: v for k, v in config["retrieval"]["datasets"][wildcards.dataset].items() if k != "eval_split"}
    return as_json(spec)


def retrieval_nltk_plan(wildcards):
    return as_json(NLTK_PLAN.get("fingerprint", {}))


def retrieval_build_gpu(wildcards):
    spec = config["retrieval"]["datasets"][wildcards.dataset]
    uses = "generator" in spec.get("questions", [])
    return 1 if uses and (spec.get("generator") or {}).get("device") == "cuda" else 0


def retrieval_stores(wildcards):
    scope = dataset_scope("retrieval", wildcards.dataset)
    return [f"{R}/embeddings/{wildcards.model}/{scope}/part-{p}" for p in PART_IDS]


def retrieval_eval_split(dataset):
    return config["retrieval"]["datasets"][dataset].get("eval_split", config["retrieval"]["eval_split"])


def retrieval_ks():
    k = config["retrieval"]["k"]
    return list(range(k["min"], k["max"] + 1, k["step"]))


def retrieval_search_settings(wildcards):
    r = config["retrieval"]
    return as_json({"eval_split": retrieval_eval_split(wildcards.dataset), "top_k": r["top_k"],
                    "random_per_query": r["coe"]["random_per_query"]})


def retrieval_search_option(key):
    return lambda wildcards: config["retrieval"]["search"][key]


def retrieval_isotropy_settings(wildcards):
    r = config["retrieval"]
    return as_json({"eval_split": retrieval_eval_split(wildcards.dataset), "ks": [r["top_k"]], **r["isotropy"]})


def retrieval_metric_settings():
    r = config["retrieval"]
    return as_json({"ks": retrieval_ks(), "top_k": r["top_k"], "bootstrap_b": r["bootstrap_b"], "draws": r["draws"],
                    "thresholds": r["thresholds"], "coe": r["coe"]})


def retrieval_aggregate_settings():
    r = config["retrieval"]
    return as_json({"table_k": r["table_k"], "correlations_k": r["table_k"], "bootstrap_b": r["bootstrap_b"],
                    "transforms": r["isotropy"]["transforms"]})


def retrieval_pair_files(pair):
    base = f"{R}/retrieval/{pair.dataset}/{pair.model}"
    return {"summary": f"{base}/summary.parquet", "isotropy": f"{base}/isotropy.parquet",
            "similarities": f"{base}/similarities.parquet", "topk": f"{base}/topk.parquet"}


def retrieval_aggregate_inputs(wildcards):
    return {f"{key}_{i}": path for i, pair in enumerate(RETRIEVAL_PAIRS)
            for key, path in retrieval_pair_files(pair).items()}


def retrieval_aggregate_entries(wildcards, input):
    return as_json([{"dataset": p.dataset, "model": p.model, **retrieval_pair_files(p)} for p in RETRIEVAL_PAIRS])


# ---- input functions of rules/articles.smk ----
def articles_inputs(wildcards):
    inputs = {"release": source_file(wildcards.collection)}
    if NLTK_DOWNLOAD:
        inputs["nltk"] = NLTK_MANIFEST
    return inputs


def articles_punkt_plan(wildcards):
    return as_json({k: v for k, v in NLTK_PLAN.get("fingerprint", {}).items() if k.startswith("punkt")})


# ---- input functions of rules/settheory.smk ----
SETTHEORY_SET_NAME = r"(?!samples$)[A-Za-z0-9][A-Za-z0-9_.-]*"


def settheory_generator(dataset):
    """(name, entry) of a built sample set's generator: settheory.generators over the built-in ones."""
    from workflow_scripts.settheory.samples import DEFAULT_GENERATORS, DEFAULT_SET

    name = config["settheory"]["datasets"][dataset].get("generator", DEFAULT_SET["generator"])
    return name, {**DEFAULT_GENERATORS, **config["settheory"]["generators"]}[name]


def settheory_prompt(dataset):
    from workflow_scripts.settheory.samples import DEFAULT_PROMPTS, DEFAULT_SET

    name = config["settheory"]["datasets"][dataset].get("prompt", DEFAULT_SET["prompt"])
    return {**DEFAULT_PROMPTS, **config["settheory"]["prompts"]}[name]


_GENERATOR_DEVICE = []


def settheory_device(dataset):
    """The device a built sample set's generator runs on (`auto`: cuda when the planning process
    sees a GPU); imported sets need none."""
    if "file" in config["settheory"]["datasets"][dataset]:
        return "cpu"
    device = settheory_generator(dataset)[1].get("device", "cpu")
    if device != "auto":
        return device
    if not _GENERATOR_DEVICE:
        import torch

        _GENERATOR_DEVICE.append("cuda" if torch.cuda.is_available() else "cpu")
    return _GENERATOR_DEVICE[0]


def settheory_samples_inputs(wildcards):
    spec = config["settheory"]["datasets"][wildcards.dataset]
    if "file" in spec:
        return {"file": spec["file"]}
    return {"articles": f"{R}/articles/{spec['articles']}"}


def settheory_samples_options(wildcards, input):
    from shlex import quote
    from workflow_scripts.generator import spec_digest

    if "file" in input.keys():
        return ""
    name, spec = settheory_generator(wildcards.dataset)
    cache_dir = config["settheory"].get("generation_cache") or f"{R}/cache/generations"
    cache = os.path.join(cache_dir, f"{name}-{spec_digest(spec)}.jsonl")
    return " ".join([f"--articles {quote(input.articles)}", f"--generator {quote(as_json({'name': name, 'spec': spec}))}",
                     f"--prompt {quote(as_json(settheory_prompt(wildcards.dataset)))}",
                     f"--device {settheory_device(wildcards.dataset)}", f"--cache {quote(cache)}"])


def settheory_filter_inputs(wildcards):
    scope = dataset_scope("settheory", wildcards.dataset)
    return {"samples": f"{R}/settheory/samples/{wildcards.dataset}.parquet",
            "stores": [f"{R}/embeddings/{m}/{scope}/part-{p}" for m in config["settheory"]["filter"]["encoders"]
                       for p in PART_IDS]}


def settheory_filter_spec(wildcards):
    f = config["settheory"]["filter"]
    return as_json({"rule": f["rule"], "threshold": f["threshold"],
                    "encoders": [{"name": m, "spec": embed_spec(m)} for m in f["encoders"]]})


def settheory_stores(wildcards):
    scope = dataset_scope("settheory", wildcards.dataset)
    return [f"{R}/embeddings/{wildcards.model}/{scope}/part-{p}" for p in PART_IDS]


def settheory_pair_files(pair):
    return {"measures": f"{R}/settheory/{pair.dataset}/{pair.model}/measures.parquet",
            "samples": f"{R}/settheory/samples/{pair.dataset}.parquet",
            "filter": f"{R}/reports/settheory_filter/{pair.dataset}.json"}


def settheory_aggregate_inputs(wildcards):
    return {f"{key}_{i}": path for i, pair in enumerate(SETTHEORY_PAIRS)
            for key, path in settheory_pair_files(pair).items()}


def settheory_aggregate_entries(wildcards, input):
    return as_json([{"sampleset": p.dataset, "model": p.model, **settheory_pair_files(p)} for p in SETTHEORY_PAIRS])


def settheory_criterion_settings():
    keys = ("measures", "fixed_bounds", "middle_tolerance", "c5", "c6", "histogram_bins", "bootstrap_b")
    return as_json({k: config["settheory"][k] for k in keys})


def montague_spec(wildcards):
    """A word list's config entry as JSON, its adjective types as a list of [type, words] pairs:
    as_json sorts mapping keys, and the types' order is the order of the tables' columns."""
    spec = dict(config["montague"]["datasets"][wildcards.dataset])
    if "adjectives" in spec:
        spec["adjectives"] = [[t, words] for t, words in spec["adjectives"].items()]
    return as_json(spec)


# ---- input functions of rules/adapt.smk ----
def adapt_plan(wildcards):
    """What the recipe's training computes from (workflow_scripts/adapt/models.py plan): a param,
    so any change to the recipe, its base or its data retrains it."""
    return as_json(adapt_models.plan(config, wildcards.recipe, R))


def adapt_inputs(wildcards):
    return adapt_models.inputs(config, wildcards.recipe, R)


def adapt_resource(key):
    """A recipe's own threads/mem_mb/runtime, else resources.adapt_train, else the default."""
    def get(wildcards, attempt=1):
        spec = config["adapt"]["recipes"][wildcards.recipe]
        base = spec.get(key, config.get("resources", {}).get("adapt_train", {}).get(key, DEFAULT_RESOURCES["adapt_train"][key]))
        return base * attempt if key in ("mem_mb", "runtime") else base
    return get


# ---- input functions of rules/domain_shift.smk ----
def domain_shift_source_paths(dataset):
    """source label -> the local file or folder it is read from (workflow_scripts/domain_shift/texts.py)."""
    from workflow_scripts.domain_shift.texts import source_label

    spec = config["domain_shift"]["datasets"][dataset]
    paths = {}
    for src in spec["specific"] + spec["agnostic"]:
        if "retrieval" in src:
            paths[source_label(src)] = f"{R}/retrieval/sets/{src['retrieval']}"
        elif "corpus" in src:
            paths[source_label(src)] = f"{R}/corpora/{src['corpus']}"
        else:
            paths[source_label(src)] = src["file"]
    return paths


def domain_shift_stores(wildcards):
    scope = dataset_scope("domain_shift", wildcards.dataset)
    return [f"{R}/embeddings/{wildcards.model}/{scope}/part-{p}" for p in PART_IDS]


def domain_shift_settings():
    settings = {k: config["domain_shift"][k] for k in ("bootstrap_b", "grid_step", "exact_kde_max_n")}
    k = config["domain_shift"].get("table_k", (config.get("retrieval") or {}).get("table_k", 5))
    return as_json({**settings, "table_k": k})


def domain_shift_pair_files(pair):
    base = f"{R}/domain_shift/{pair.dataset}/{pair.model}"
    return {"summary": f"{base}/summary.json", "curves": f"{base}/curves.parquet"}


# a plot per (dataset, adapted model) whose root base model scores the dataset too
DOMAIN_SHIFT_PLOTS = [
    {"dataset": p.dataset, "model": p.model, "base": adapt_models.root_base(config, p.model),
     "png": f"{R}/plots/domain_shift/{p.dataset}/{p.model}.png"}
    for p in DOMAIN_SHIFT_PAIRS
    if p.model in ADAPT_RECIPES and DatasetPair(p.dataset, adapt_models.root_base(config, p.model)) in DOMAIN_SHIFT_PAIRS]


def domain_shift_aggregate_inputs(wildcards):
    inputs = {f"{key}_{i}": path for i, pair in enumerate(DOMAIN_SHIFT_PAIRS)
              for key, path in domain_shift_pair_files(pair).items()}
    if RETRIEVAL_PAIRS:  # the side-by-side table reads the retrieval probe's tables
        inputs["retrieval_accuracy"] = f"{R}/tables/retrieval_accuracy.csv"
        inputs["retrieval_isotropy"] = f"{R}/tables/retrieval_isotropy.csv"
    return inputs


def domain_shift_entries(wildcards, input):
    return as_json([{"dataset": p.dataset, "model": p.model, "base": adapt_models.root_base(config, p.model),
                     "adaptation": adapt_models.adaptation(config, p.model), **domain_shift_pair_files(p)}
                    for p in DOMAIN_SHIFT_PAIRS])


def domain_shift_models():
    """Every model of the study with its root base and how it was made (the side-by-side table)."""
    return as_json([{"model": m, "root": adapt_models.root_base(config, m), "adaptation": adapt_models.adaptation(config, m)}
                    for m in config["models"]])


def domain_shift_retrieval_options(wildcards, input):
    from shlex import quote

    if "retrieval_accuracy" not in input.keys():
        return ""
    return (f"--retrieval-accuracy {quote(input.retrieval_accuracy)} "
            f"--retrieval-isotropy {quote(input.retrieval_isotropy)}")
