# Probing sentence embeddings at corpus scale. Shared stages, one rule file each:
#   ingest -> length_filter -> (probes write their texts) -> embed -> (probes score) -> report
# and nltk_data (NLTK packages a probe needs), articles (news collections). Each probe is a package
# `workflow_scripts/<probe>/` that declares itself (probe.py: config section, rules and resources,
# report entries; plan.py: its pairs and input functions) and a rule file included below: adding a
# probe is its package, its rule file and one `include:` (docs/adding-a-probe.md). Any subset of probes
# is a study; `rule all` asks for what the probes that some model runs make.
# Run: `make run` (sets up .venv), or `snakemake --cores all` inside the environment.

import sys

from snakemake.utils import min_version

# The version the workflow is pinned to and tested with (envs/requirements.txt): it reads Snakemake
# 9's workflow attributes (is_main_process, dag_settings, overwrite_configfiles) and relies on its
# workflow profile, rerun triggers and params comparison; an older Snakemake stops here, by name.
min_version("9.27.1")

# `--configfile X` replaces the default config rather than extending it: a study's config must not
# silently inherit the default corpora and models. `--config key=value` still edits the default.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


# Jobs run functions of workflow_scripts (Snakemake's `script:` runs workflow_scripts/run_job.py,
# which calls the function a rule names: workflow_scripts/jobs.py): the package comes from this
# checkout, and `python` is the interpreter running Snakemake (with --sdm conda the env's instead).
from workflow_scripts.common import prepare_job_environment

prepare_job_environment(workflow.basedir, sys.executable)


include: "rules/common.smk"


# The HTML report's first screen (`snakemake --report results/report.html`, `make report`).
report: "resources/report/workflow.rst"


# Seconds of work on small files run on the submitting node on a cluster, not through sbatch: these,
# and every rule marked `localrule: True` in its rule file (the probes' aggregates, the report).
localrules:
    all,
    length_buckets,


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
include: "rules/disagreements.smk"
include: "rules/differences.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        REPORT.lengths,  # the length buckets, when the study has corpora
        # results/report.md and every page of the HTML report (rules/report.smk): all of them, so that
        # a missing page is rebuilt
        rules.report.output,
        # each probe's tables and plots (its plan's targets: a new model's missing plot is what makes
        # Snakemake rerun an aggregate), and the adapted models, even one that no probe scores
        [target for plan in PLANS.values() for target in plan.targets()],
        # the items where compared models disagree most, per probe dataset (rules/disagreements.smk)
        DISAGREE.targets(),
        # the paired model comparisons of every probe that writes replicates (rules/differences.smk)
        REPORT.differences,
