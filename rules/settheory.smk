# Set-theoretic compositionality (seed 001; methods.md §2), on the probe contract (docs/adding-a-probe.md):
#   settheory_samples    a sample set: windows (previous, S0, next) of its articles (rules/articles.smk)
#                        and their fusions S1, S2 by a generator (cached), or an imported table; and
#                        its texts to embed (text set settheory.<set>)
#   settheory_filter     its operator samples (overlap, union, difference); difference samples kept
#                        when cos(B, D) < threshold under the filter encoders
#   settheory_measures   per (sample set, model): cosine, dot, L1, L2, NED and the projections
#   settheory_aggregate  pooled bounds, C1-C6 shares with bootstrapped CIs, tables, histogram plots,
#                        every share's paired bootstrap replicates per sample set
# Code: workflow_scripts/settheory/ (declaration: probe.py, planning: plan.py); config: the `settheory` section.
SETTHEORY = PLANS["settheory"]
from workflow_scripts.settheory.plan import SET_NAME as SETTHEORY_SET_NAME_PATTERN


rule settheory_samples:
    input:
        unpack(by_content(SETTHEORY.samples_inputs)),
    output:
        samples=f"{R}/settheory/samples/{{dataset}}.parquet",
        texts=expand(
            f"{R}/texts/settheory.{{{{dataset}}}}/part-{{part}}.parquet", part=PART_IDS
        ),
        report=f"{R}/reports/settheory/{{dataset}}.json",
        fusions=f"{R}/tables/settheory_fusions_{{dataset}}.csv",
    log:
        log_path("settheory_samples", "{dataset}"),
    benchmark:
        bench_path("settheory_samples", "{dataset}")
    priority: CHAIN_HEAD_PRIORITY
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("settheory_samples")
    resources:
        **RESOURCES.sized("settheory_samples"),
        # a generator with device cuda (or auto resolved to cuda) runs on a GPU
        gpu=lambda wc: 1 if SETTHEORY.device(wc.dataset) == "cuda" else 0,
    params:
        **job_params("settheory.samples:run_settheory_samples"),
        spec=SETTHEORY.samples_spec,
        seed=SEED,
        # a built set's generator, prompt, device and generation cache (read and appended)
        generation=SETTHEORY.samples_generation,
    script:
        "../workflow_scripts/run_job.py"


rule settheory_filter:
    input:
        unpack(SETTHEORY.filter_inputs),
    output:
        operators=f"{R}/settheory/{{dataset}}/operators.parquet",
        report=f"{R}/reports/settheory_filter/{{dataset}}.json",
    log:
        log_path("settheory_filter", "{dataset}"),
    benchmark:
        bench_path("settheory_filter", "{dataset}")
    # results/settheory/samples/ holds the sample tables: never a sample set's folder
    wildcard_constraints:
        dataset=SETTHEORY_SET_NAME_PATTERN,
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("settheory_filter")
    resources:
        **RESOURCES.sized("settheory_filter"),
    params:
        **job_params("settheory.operators:run_settheory_filter"),
        filter=SETTHEORY.filter_spec,
    script:
        "../workflow_scripts/run_job.py"


rule settheory_measures:
    input:
        operators=f"{R}/settheory/{{dataset}}/operators.parquet",
        stores=SETTHEORY.stores,
    output:
        f"{R}/settheory/{{dataset}}/{{model}}/measures.parquet",
    log:
        log_path("settheory_measures", "{dataset}", "{model}"),
    benchmark:
        bench_path("settheory_measures", "{dataset}", "{model}")
    wildcard_constraints:
        dataset=SETTHEORY_SET_NAME_PATTERN,
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("settheory_measures")
    resources:
        **RESOURCES.sized("settheory_measures"),
    params:
        **job_params("settheory.criteria:run_settheory_measures"),
        spec=SETTHEORY.spec,
        measures=lambda wc: config["settheory"]["measures"],
    script:
        "../workflow_scripts/run_job.py"


rule settheory_aggregate:
    input:
        unpack(SETTHEORY.aggregate_inputs),
    output:
        shares=f"{R}/tables/settheory_shares.csv",
        tables=[f"{R}/tables/settheory_c{i}.csv" for i in range(1, 7)],
        histograms=f"{R}/tables/settheory_histograms.csv",
        # every share's paired bootstrap replicates, per sample set (differences tables)
        replicates=SETTHEORY.replicate_files(),
        plots=[
            report(
                f"{R}/plots/settheory/{p.dataset}/{p.model}.png",
                category=REPORT_CATEGORY["settheory"],
                subcategory=p.dataset,
                caption="../resources/settheory/report/plot.rst",
                labels={"sample set": p.dataset, "model": p.model},
            )
            for p in SETTHEORY.pairs
        ],
    log:
        log_path("settheory_aggregate", "all"),
    localrule: True
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("settheory_aggregate")
    resources:
        **RESOURCES.sized("settheory_aggregate"),
    params:
        **job_params("settheory.tables:run_settheory_aggregate"),
        # (sample set, model) of the inputs measures_<i>, samples_<i>, filter_<i>
        pairs=SETTHEORY.aggregate_pairs,
        settings=SETTHEORY.criterion_settings,
        seed=SEED,
    script:
        "../workflow_scripts/run_job.py"
