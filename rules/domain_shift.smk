# The domain-shift probe (seed 003; methods.md §4), on the probe contract (docs/adding-a-probe.md):
#   domain_shift_build      a dataset's domain-specific and domain-agnostic texts (text set
#                           domain_shift.<dataset>)
#   domain_shift_score      per (dataset, model): cosine similarity distributions within each group
#                           and between them, CSC densities, overlaps and means with bootstrapped CIs
#                           and their paired bootstrap replicates
#   domain_shift_aggregate  results/tables/domain_shift*.csv (with the retrieval probe's measures of
#                           base vs adapted models side by side, and correlations across models), a
#                           plot per (dataset, adapted model) against its base
# Code: workflow_scripts/domain_shift/ (declaration: probe.py, planning: plan.py); config: the `domain_shift` section.
DOMAIN_SHIFT = PLANS["domain_shift"]


rule domain_shift_build:
    input:
        unpack(by_content(DOMAIN_SHIFT.build_inputs)),
    output:
        texts=f"{R}/domain_shift/{{dataset}}/texts.parquet",
        parts=expand(
            f"{R}/texts/domain_shift.{{{{dataset}}}}/part-{{part}}.parquet",
            part=PART_IDS,
        ),
        report=f"{R}/reports/domain_shift/{{dataset}}.json",
    log:
        log_path("domain_shift_build", "{dataset}"),
    priority: CHAIN_HEAD_PRIORITY
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("domain_shift_build")
    resources:
        **RESOURCES.sized("domain_shift_build"),
    params:
        **job_params("domain_shift.texts:run_domain_shift_build"),
        spec=DOMAIN_SHIFT.build_spec,
        # source label -> its file or folder (among the inputs)
        paths=DOMAIN_SHIFT.build_paths,
        seed=SEED,
    script:
        "../workflow_scripts/run_job.py"


rule domain_shift_score:
    input:
        texts=f"{R}/domain_shift/{{dataset}}/texts.parquet",
        stores=DOMAIN_SHIFT.stores,
    output:
        summary=f"{R}/domain_shift/{{dataset}}/{{model}}/summary.json",
        curves=f"{R}/domain_shift/{{dataset}}/{{model}}/curves.parquet",
        # the paired bootstrap replicates of the means, gaps and overlaps (differences tables)
        replicates=f"{R}/domain_shift/{{dataset}}/{{model}}/replicates.parquet",
    log:
        log_path("domain_shift_score", "{dataset}", "{model}"),
    benchmark:
        bench_path("domain_shift_score", "{dataset}", "{model}")
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("domain_shift_score")
    resources:
        **RESOURCES.sized("domain_shift_score"),
    params:
        **job_params("domain_shift.scores:run_domain_shift_score"),
        spec=DOMAIN_SHIFT.spec,
        settings=DOMAIN_SHIFT.settings,
        seed=SEED,
    script:
        "../workflow_scripts/run_job.py"


rule domain_shift_aggregate:
    input:
        unpack(DOMAIN_SHIFT.aggregate_inputs),
    output:
        table=f"{R}/tables/domain_shift.csv",
        adaptation=f"{R}/tables/domain_shift_adaptation.csv",
        correlations=f"{R}/tables/domain_shift_correlations.csv",
        plots=[
            report(
                p["png"],
                category=REPORT_CATEGORY["domain_shift"],
                subcategory=p["dataset"],
                labels={"model": p["model"], "base": p["base"]},
                caption="../resources/domain_shift/report/plot.rst",
            )
            for p in DOMAIN_SHIFT.plot_entries
        ],
    log:
        log_path("domain_shift_aggregate", "all"),
    localrule: True
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("domain_shift_aggregate")
    resources:
        **RESOURCES.sized("domain_shift_aggregate"),
    params:
        **job_params("domain_shift.scores:run_domain_shift_aggregate"),
        entries=DOMAIN_SHIFT.aggregate_entries,
        models=DOMAIN_SHIFT.models,
        plots=DOMAIN_SHIFT.plots_param,
        settings=DOMAIN_SHIFT.settings,
        seed=SEED,
    script:
        "../workflow_scripts/run_job.py"
