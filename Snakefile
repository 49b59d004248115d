# Probing sentence embeddings at corpus scale. Shared stages, one rule file each:
#   ingest -> length_filter -> (probes write their texts) -> embed -> (probes score) -> report
# and nltk_data (NLTK packages a probe needs). Probes, one rule file each, on the contract in the
# README ("Probes"): csc (Concept Separation Curves), triplets (sentence triplets), montague
# (adjective-noun modifier consistency).
# Run: `make run` (sets up .venv), or `snakemake --cores all` inside the environment.

import sys

# `--configfile X` replaces the default config rather than extending it: a study's config must not
# silently inherit the default corpora and models. `--config key=value` still edits the default.
if not workflow.overwrite_configfiles:
    configfile: "config.yaml"

# Jobs run `python -m workflow_scripts.<stage>`: the stage modules come from this checkout, and
# `python` is the interpreter running Snakemake (with --sdm conda the env's bin comes first instead).
from workflow_scripts.common import prepare_job_environment

prepare_job_environment(workflow.basedir, sys.executable)

include: "rules/common.smk"

# The HTML report's first screen (`snakemake --report results/report.html`, `make report`).
report: "resources/report/workflow.rst"

# Seconds of work on small files: on a cluster they run on the submitting node, not through sbatch.
localrules: all, length_buckets, csc_plot, csc_aggregate, triplets_aggregate, montague_phrases, montague_aggregate, retrieval_aggregate, settheory_aggregate, domain_shift_aggregate, report


include: "rules/nltk_data.smk"
include: "rules/ingest.smk"
include: "rules/length_filter.smk"
include: "rules/embed.smk"
include: "rules/csc.smk"
include: "rules/triplets.smk"
include: "rules/montague.smk"
include: "rules/retrieval.smk"
include: "rules/articles.smk"
include: "rules/settheory.smk"
include: "rules/adapt.smk"
include: "rules/domain_shift.smk"
include: "rules/report.smk"


rule all:
    input:
        f"{R}/tables/length_buckets.csv",
        f"{R}/tables/csc_overlap.csv",
        expand(f"{R}/plots/csc/{{pair.corpus}}/{{pair.model}}.png", pair=CSC_PAIRS),
        # results/report.md and every page of the HTML report (rules/report.smk): all of them, so that
        # a missing page is rebuilt
        rules.report.output,
        [f"{R}/tables/triplets_accuracy.csv"] if TRIPLET_PAIRS else [],
        # the heat maps too: a new model's missing plot is what makes Snakemake rerun the aggregate
        [f"{R}/tables/montague_single.csv"] if MONTAGUE_PAIRS else [],
        [f"{R}/plots/montague/{p.dataset}/{p.model}.png" for p in MONTAGUE_PAIRS],
        [f"{R}/tables/retrieval_accuracy.csv"] if RETRIEVAL_PAIRS else [],
        [f"{R}/tables/settheory_shares.csv"] if SETTHEORY_PAIRS else [],
        [f"{R}/models/{r}" for r in ADAPT_RECIPES],  # adapted models, even one that no probe scores
        [f"{R}/tables/domain_shift.csv"] if DOMAIN_SHIFT_PAIRS else [],
        [p["png"] for p in DOMAIN_SHIFT_PLOTS],
    default_target: True
