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
    resources:
        # a generator with device cuda (or auto resolved to cuda) runs on a GPU
        gpu=lambda wc: 1 if SETTHEORY.device(wc.dataset) == "cuda" else 0,
    params:
        spec=SETTHEORY.samples_spec,
        seed=SEED,
        options=SETTHEORY.samples_options,
    shell:
        "OMP_NUM_THREADS={threads} TQDM_DISABLE=1 HF_HUB_OFFLINE=${{HF_HUB_OFFLINE:-0}} python -m workflow_scripts.settheory.samples"
        " --sampleset {wildcards.dataset:q} --spec {params.spec:q} --seed {params.seed:q} {params.options}"
        " --out {output.samples:q} --texts {output.texts:q} --report {output.report:q} --fusions {output.fusions:q}"
        " > {log:q} 2>&1"


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
    params:
        filter=SETTHEORY.filter_spec,
    shell:
        "python -m workflow_scripts.settheory.operators --samples {input.samples:q} --sampleset {wildcards.dataset:q}"
        " --filter {params.filter:q} --stores {input.stores:q} --out {output.operators:q}"
        " --report {output.report:q} > {log:q} 2>&1"


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
    params:
        spec=SETTHEORY.spec,
        measures=lambda wc: config["settheory"]["measures"],
    shell:
        "python -m workflow_scripts.settheory.criteria --operators {input.operators:q} --stores {input.stores:q}"
        " --model {wildcards.model:q} --spec {params.spec:q} --measures {params.measures:q} --out {output:q}"
        " > {log:q} 2>&1"


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
    params:
        entries=SETTHEORY.aggregate_entries,
        settings=SETTHEORY.criterion_settings,
        seed=SEED,
        tables_dir=lambda wc, output: os.path.dirname(output.shares),
        plots_dir=lambda wc, output: (
            os.path.dirname(os.path.dirname(output.plots[0]))
            if output.plots
            else f"{R}/plots/settheory"
        ),
    shell:
        "MPLBACKEND=Agg python -m workflow_scripts.settheory.tables --entries {params.entries:q}"
        " --settings {params.settings:q} --seed {params.seed:q} --tables-dir {params.tables_dir:q}"
        " --plots-dir {params.plots_dir:q} --replicates {output.replicates:q} > {log:q} 2>&1"
