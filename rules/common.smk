# Shared definitions only: validated config, results paths, the study's planning and the probes'
# plans, wildcard constraints, NLTK data, resources, logs, the jobs' code digests, and the input
# functions of the shared stages (ingest, length filter, articles, embed). Each probe's planning
# lives in its own package (workflow_scripts/<probe>/plan.py), found through its declaration
# (workflow_scripts/probes.py).
import os
import sys

from workflow_scripts import probes, study_folders
from workflow_scripts.code_digest import CodeDigests
from workflow_scripts.config import check_duplicate_keys, validate
from workflow_scripts.downloads import is_gzip_url
from workflow_scripts.encoders import family_of, job_resources, run_resource_names
from workflow_scripts.study import plan_study

# Snakemake has read the config files already, keeping the last of a key given twice: refuse that,
# naming the key and both lines (the default config.yaml, or every --configfile).
for _configfile in workflow.configfiles:
    check_duplicate_keys(_configfile)
# The study (workflow_scripts/study_folders.py): named by `study:` or its first config file (an overlay
# after it keeps both); a config without `results:` gets a folder of its own, results/<name>/.
STUDY_ID = study_folders.identity(config, workflow.configfiles)
if not config.get("results"):
    config["results"] = study_folders.default_results(STUDY_ID)
# a bad value stops here with the key and the expected form; the local folders a config names are
# checked by the main process, not again by each job's re-read of the Snakefile
config = validate(config, check_paths=workflow.is_main_process)
R = config["results"]
# a folder another study made is refused before anything is planned (dry runs and --report too)
if workflow.is_main_process:
    try:
        study_folders.check(R, STUDY_ID)
    except study_folders.StudyConflict as _err:
        from snakemake.exceptions import WorkflowError

        raise WorkflowError(str(_err)) from None


# One run at a time per results folder (workflow_scripts/results_lock.py): taken when the run starts
# executing jobs, held until Snakemake exits; then the folder is marked as this study's (.study.json). `onstart` is called by Snakemake's main process only,
# after planning, and not for dry runs, --lint, --report, --unlock, --summary and the like; the
# jobs' own Snakemake processes run with --no-hooks.
def take_results_lock():
    from snakemake.exceptions import WorkflowError
    from workflow_scripts import results_lock

    try:
        results_lock.take_for_run(R, workflow)
        if workflow.is_main_process:
            # under the lock: of two studies starting on one folder, the second is refused here
            study_folders.claim(R, STUDY_ID)
    except (results_lock.ResultsInUse, study_folders.StudyConflict) as err:
        raise WorkflowError(str(err)) from None


onstart:
    take_results_lock()
    # Ctrl-C (SIGINT) ends the running jobs too: Snakemake alone would wait for them
    from workflow_scripts.job_processes import end_jobs_on_interrupt

    end_jobs_on_interrupt()


# the study and the probes' plans (pairs, datasets, input functions: workflow_scripts/<probe>/plan.py),
# by the one entry point the plan summary uses too (study.plan_study)
STUDY, PLANS = plan_study(config, R)
SEED = config["seed"]
SHARD_ROWS = config["shard_rows"]
PARTS = config["embedding_partitions"]
PART_IDS = STUDY.part_ids
# the first rule of each long chain (a corpus's perturbation, the fusion generator, training, a
# probe's text set): on a few cores these go before the many embedding and scoring jobs that are
# ready at the same time, so no chain is started last and left to trail the run alone
CHAIN_HEAD_PRIORITY = 10
NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"


wildcard_constraints:
    source=NAME,
    # no dots: a text set `<probe>.<dataset>` must never parse as a corpus
    corpus=r"[A-Za-z0-9][A-Za-z0-9_-]*",
    dataset=NAME,
    model=NAME,
    scope=NAME,
    part=r"\d{3}",


# ---- NLTK data the probes need, planned before any job ----
from snakemake.exceptions import WorkflowError
from workflow_scripts import nltk_data as _nltk_data

NLTK_MANIFEST = STUDY.nltk_manifest


def plan_nltk():
    """{"missing": probe -> packages this machine lacks, "fingerprint": package -> name@digest}.
    Looked for in <results>/nltk_data (the download rule's folder), NLTK_DATA and nltk's defaults.
    """
    from pathlib import Path
    from workflow_scripts import nltk_data

    paths = [os.path.abspath(f"{R}/nltk_data")] + nltk_data.search_paths()
    needed = nltk_data.required_packages(config)
    missing = {
        probe: nltk_data.missing_packages(pkgs, paths) for probe, pkgs in needed.items()
    }
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
    if config["nltk_download"] != "auto" or not _nltk_data.server_reachable():
        # before any job: a run that would fail half-way in a probe's first job stops here instead
        raise WorkflowError(_nltk_data.offline_message(NLTK_PLAN["missing"]))
STUDY.nltk_fingerprint = NLTK_PLAN["fingerprint"]
# Once the workflow has downloaded NLTK data, the jobs that use it keep it as an input.
STUDY.nltk_download = bool(NLTK_PLAN["missing"]) or os.path.exists(NLTK_MANIFEST)

# ---- the probes' report categories and NLTK methods ----
REPORT_CATEGORY = probes.categories()  # report(category=...) of every probe's plots
# NLTK data that chooses a method (CSC's English grammatical negation: tagger or rules), where the
# study runs that method: missing data stops the plan unless the config asks for the fallback, so a
# study gives the same numbers however it is started (make or snakemake, NLTK_DATA set or not);
# the console says which method is used.
NLTK_METHODS = _nltk_data.method_choices(
    config, applies={name: plan.nltk_method_applies() for name, plan in PLANS.items()}
)
if _nltk_data.method_message(NLTK_METHODS):
    raise WorkflowError(_nltk_data.method_message(NLTK_METHODS))
if workflow.is_main_process:
    for _line in _nltk_data.method_lines(NLTK_METHODS):
        print(_line, file=sys.stderr)


# ---- threads, memory and runtime of every rule: `threads: RESOURCES.threads("<rule>")` and
# `resources: **RESOURCES.sized("<rule>")`, from the declarations and the config's `resources:`
# (workflow_scripts/rule_resources.py); --set-threads and --set-resources win ----
from workflow_scripts.rule_resources import RuleResources

RESOURCES = RuleResources(config)


# ---- logs and benchmarks ----
def log_path(rule_name, *parts):
    return os.path.join(R, "logs", rule_name, *parts) + ".log"


def bench_path(rule_name, *parts):
    return os.path.join(R, "benchmarks", rule_name, *parts) + ".tsv"


# ---- the code each job runs (workflow_scripts/code_digest.py) ----
# Every rule's params start with `**job_params("<module>:run_<rule>")`: the function its job runs and
# the digest of that code, which the params trigger compares, so a change to what the code does
# reruns the rule's jobs (docs/reproducibility.md). Each module's scan is kept by its content in
# <results>/.cache/code/: the next Snakemake process (a cluster job's) parses none again.
CODE = CodeDigests(cache=f"{R}/.cache/code")


def job_params(function):
    return CODE.job_params(function)


def code_of(paths):
    """Param function (the report's provenance): each of `paths` -> the rule that writes it and the
    digest of its code, once every rule is defined."""
    return lambda wildcards: CODE.writers(paths, workflow.rules, R)


# ---- local data: judged by content, so that results travel ----
def by_content(inputs):
    """Input function (for `unpack`) of the jobs that read local data. `inputs`: a function of
    wildcards or fixed inputs (a path, a list or a dict of them; a bare path or list becomes `data`).
    Snakemake judges a folder, or a file over its checksum limit, by its mtime alone, and every file
    so where no `.snakemake/` metadata holds its sha256 (results copied without it): a fresh clone
    or a copy resets the mtimes. Each local input outside the results folder is marked ancient and
    joined, under `content_stamps`, by its content stamp (Study.content_stamp), whose mtime moves
    only when the data's content does. The workflow's own outputs are passed on as they are.
    """
    from snakemake.io import ancient

    def judged(wildcards):
        found = inputs(wildcards) if callable(inputs) else inputs
        if not isinstance(found, dict):
            found = {"data": [found] if isinstance(found, str) else list(found)}
        stamps = []

        def mark(path):
            if not STUDY.judged_by_content(path):
                return path
            stamps.append(STUDY.content_stamp(path))
            return ancient(path)

        found = {
            key: [mark(p) for p in value] if isinstance(value, list) else mark(value)
            for key, value in found.items()
        }
        # a file listed twice (a page's table among the tables) has one stamp
        return (
            {**found, "content_stamps": list(dict.fromkeys(stamps))}
            if stamps
            else found
        )

    return judged


# ---- input functions of rules/ingest.smk and rules/length_filter.smk ----
def source_input(wildcards):
    return STUDY.source_file(wildcards.source)


def reference_corpus(wildcards):
    ref = config["corpora"][wildcards.corpus].get("match_lengths_of")
    return {"reference": f"{R}/corpora/{ref}"} if ref else {}


# ---- input functions of rules/articles.smk ----
def articles_inputs(wildcards):
    return {"release": STUDY.source_file(wildcards.collection), **STUDY.nltk_inputs()}


# ---- input functions of rules/embed.smk ----
def embed_inputs(wildcards):
    spec = config["models"][wildcards.model]
    # the text partitions of this store partition (one, unless the model's device has fewer store
    # partitions: embedding_partitions_per_device)
    inputs = {
        "texts": STUDY.store_texts(wildcards.model, wildcards.scope, wildcards.part)
    }
    needs = family_of(spec).needs
    if "fitted" in needs:  # the fit job's vocabulary and idf of this text set (TF-IDF)
        inputs["fitted"] = f"{R}/models/{wildcards.model}/tfidf-{wildcards.scope}.json"
    # the whole text set: the features of every partition number the columns of each
    if "text_set" in needs:
        inputs["vocabulary_texts"] = STUDY.texts(wildcards.scope)
    if family_of(spec).model_file:
        inputs["model_file"] = STUDY.model_file(wildcards.model)
    if spec.get(
        "adapted"
    ):  # a model the workflow trains (rules/adapt.smk): its directory
        inputs["model_dir"] = spec["path"]
    parent = STUDY.reuse_scope(wildcards.model, wildcards.scope)
    if parent:
        inputs["reuse"] = (
            f"{R}/embeddings/{wildcards.model}/{parent}/part-{wildcards.part}"
        )
    return inputs


def embed_cache(wildcards):
    """The model's vector cache, shared by its jobs (not an output: it grows), for a family that
    needs one (a served model); None for the other families."""
    if "vector_cache" not in family_of(config["models"][wildcards.model]).needs:
        return None
    return f"{R}/.cache/embeddings/{wildcards.model}.jsonl"


def endpoint_resource(name):
    """The embedding job's resource `name` of a served model's run settings (None: unset)."""
    return lambda wc: job_resources(config["models"][wc.model]).get(name)


ENDPOINT_RESOURCES = {name: endpoint_resource(name) for name in run_resource_names()}


def embed_priority(wildcards):
    """Neural models' embedding jobs (10 s to minutes each) before TF-IDF's and the other cheap
    encoders' (a few seconds): longest first, so that no long job is left to run alone at the end.
    """
    return 1 if family_of(config["models"][wildcards.model]).uses_torch else 0


# ---- cluster placement of embedding jobs (config `slurm`; a local run ignores both) ----
SLURM = config.get("slurm", {})


def embed_slurm_partition(wildcards):
    """The partition by the model's device (`slurm.partitions`): a CPU-only model's jobs never wait
    for a GPU partition because a GPU model shares the rule."""
    device = STUDY.resolved_device(wildcards.model)
    return SLURM["partitions"]["gpu" if device == "cuda" else "cpu"]


# with `slurm.partitions` the embed rule names a partition per job; without, the profile's holds
EMBED_PARTITION = (
    {"slurm_partition": embed_slurm_partition} if "partitions" in SLURM else {}
)


def embed_group(wildcards):
    """A CPU model's embedding job shares a submission on a cluster: its work is seconds at full
    size (a partition of 2.56M pairs: about 560k texts, 2-17 s for TF-IDF or hashing), less than a
    SLURM job's own start-up (docs/timings.md, SLURM dress rehearsal). `embed_small`: a text set
    listed in `slurm.small_text_sets`, or a derived corpus copying its parent's vectors;
    `embed_cpu`: every other job of a CPU model. GPU jobs stay alone (a group of them would ask for
    one GPU per member)."""
    if STUDY.resolved_device(wildcards.model) == "cuda":
        return None
    small = wildcards.scope in SLURM.get("small_text_sets", [])
    return (
        "embed_small"
        if small or STUDY.reuse_scope(wildcards.model, wildcards.scope)
        else "embed_cpu"
    )


def tfidf_fit_inputs(wildcards):
    """A corpus: its directory (the originals), and unless fitted on the originals alone its text
    partitions and its variants (whose insertions are counted from their originals; the folder
    the probe that writes them declares, probes.corpus_variants); a probe dataset: its text
    partitions."""
    texts = STUDY.texts(wildcards.scope)
    if STUDY.scope_corpus(wildcards.scope) is None:
        return {"texts": texts}
    inputs = {"corpus": f"{R}/corpora/{wildcards.scope}"}
    if (
        config["models"][wildcards.model].get("fit_on", "originals_and_variants")
        != "originals"
    ):
        inputs["texts"] = texts
        if probes.corpus_variants():
            inputs["variants"] = f"{R}/{probes.corpus_variants()}/{wildcards.scope}"
    return inputs
