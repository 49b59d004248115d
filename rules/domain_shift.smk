# The domain-shift probe (seed 003; methods.md §4), on the probe contract (README, "Probes"):
#   domain_shift_build      a dataset's domain-specific and domain-agnostic texts (text set
#                           domain_shift.<dataset>)
#   domain_shift_score      per (dataset, model): cosine similarity distributions within each group
#                           and between them, CSC densities, overlaps and means with bootstrapped CIs
#   domain_shift_aggregate  results/tables/domain_shift*.csv (with the retrieval probe's measures of
#                           base vs adapted models side by side, and correlations across models), a
#                           plot per (dataset, adapted model) against its base
# Code: workflow_scripts/domain_shift/; config: the `domain_shift` section.


rule domain_shift_build:
    input: lambda wc: sorted(set(domain_shift_source_paths(wc.dataset).values()))
    output:
        texts=f"{R}/domain_shift/{{dataset}}/texts.parquet",
        parts=expand(f"{R}/texts/domain_shift.{{{{dataset}}}}/part-{{part}}.parquet", part=PART_IDS),
        report=f"{R}/reports/domain_shift/{{dataset}}.json",
    params:
        spec=lambda wc: as_json(config["domain_shift"]["datasets"][wc.dataset]),
        paths=lambda wc: as_json(domain_shift_source_paths(wc.dataset)),
        seed=SEED,
    log: log_path("domain_shift_build", "{dataset}")
    threads: res("domain_shift_build", "threads")
    priority: CHAIN_HEAD_PRIORITY
    resources: mem_mb=res("domain_shift_build", "mem_mb"), runtime=res("domain_shift_build", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.domain_shift.texts --dataset {wildcards.dataset} --spec {params.spec:q}"
        " --paths {params.paths:q} --seed {params.seed} --out {output.texts:q} --texts {output.parts:q}"
        " --report {output.report:q} > {log:q} 2>&1"


rule domain_shift_score:
    input:
        texts=f"{R}/domain_shift/{{dataset}}/texts.parquet",
        stores=domain_shift_stores,
    output:
        summary=f"{R}/domain_shift/{{dataset}}/{{model}}/summary.json",
        curves=f"{R}/domain_shift/{{dataset}}/{{model}}/curves.parquet",
    params:
        spec=lambda wc: as_json(embed_spec(wc.model)),
        settings=lambda wc: domain_shift_settings(),
        seed=SEED,
    log: log_path("domain_shift_score", "{dataset}", "{model}")
    benchmark: bench_path("domain_shift_score", "{dataset}", "{model}")
    threads: res("domain_shift_score", "threads")
    resources: mem_mb=res("domain_shift_score", "mem_mb"), runtime=res("domain_shift_score", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.domain_shift.scores score --texts {input.texts:q} --stores {input.stores:q}"
        " --dataset {wildcards.dataset} --model {wildcards.model} --spec {params.spec:q} --settings {params.settings:q}"
        " --seed {params.seed} --summary {output.summary:q} --curves {output.curves:q} > {log:q} 2>&1"


rule domain_shift_aggregate:
    input: unpack(domain_shift_aggregate_inputs)
    output:
        table=f"{R}/tables/domain_shift.csv",
        adaptation=f"{R}/tables/domain_shift_adaptation.csv",
        correlations=f"{R}/tables/domain_shift_correlations.csv",
        plots=[report(p["png"], category=REPORT_CATEGORY["domain_shift"], subcategory=p["dataset"],
                      labels={"model": p["model"], "base": p["base"]}, caption="../resources/report/domain_shift_plot.rst")
               for p in DOMAIN_SHIFT_PLOTS],
    params:
        entries=domain_shift_entries,
        models=lambda wc: domain_shift_models(),
        plots=lambda wc: as_json(DOMAIN_SHIFT_PLOTS),
        settings=lambda wc: domain_shift_settings(),
        retrieval=domain_shift_retrieval_options,
        seed=SEED,
    log: log_path("domain_shift_aggregate", "all")
    threads: res("domain_shift_aggregate", "threads")
    resources: mem_mb=res("domain_shift_aggregate", "mem_mb"), runtime=res("domain_shift_aggregate", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "MPLBACKEND=Agg python -m workflow_scripts.domain_shift.scores aggregate --entries {params.entries:q}"
        " --models {params.models:q} --plots {params.plots:q} {params.retrieval} --settings {params.settings:q}"
        " --seed {params.seed} --table {output.table:q} --adaptation {output.adaptation:q}"
        " --correlations {output.correlations:q} > {log:q} 2>&1"
