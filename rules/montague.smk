# The Montague modifier probe (Carvalho et al., seed 004; methods.md §5), on the probe contract
# (docs/adding-a-probe.md):
#   montague_phrases    a word list's AN/AAN phrases, and every string the tests compare (its texts)
#   montague_score      per (dataset, model): distances, the three tests, shares with bootstrap CIs
#   montague_aggregate  tables in the seed's Tables 2-5 layout, heat maps of the k x k grids
# Code: workflow_scripts/montague/ (declaration: probe.py, planning: plan.py); config: the `montague` section.
MONTAGUE = PLANS["montague"]


rule montague_phrases:
    input:
        unpack(by_content(MONTAGUE.phrase_inputs)),
    output:
        phrases=f"{R}/montague/{{dataset}}/phrases.parquet",
        texts=expand(
            f"{R}/texts/montague.{{{{dataset}}}}/part-{{part}}.parquet", part=PART_IDS
        ),
        report=f"{R}/reports/montague/{{dataset}}.json",
    log:
        log_path("montague_phrases", "{dataset}"),
    benchmark:
        bench_path("montague_phrases", "{dataset}")
    priority: CHAIN_HEAD_PRIORITY
    localrule: True
    conda:
        "../envs/workflow.yaml"
    params:
        spec=MONTAGUE.word_lists,  # the word lists, adjective types in config order
    shell:
        "python -m workflow_scripts.montague.phrases --dataset {wildcards.dataset:q} --spec {params.spec:q}"
        " --out {output.phrases:q} --texts {output.texts:q} --report {output.report:q} > {log:q} 2>&1"


rule montague_score:
    input:
        phrases=f"{R}/montague/{{dataset}}/phrases.parquet",
        stores=MONTAGUE.stores,
    output:
        distances=f"{R}/montague/{{dataset}}/{{model}}/distances.parquet",
        pairs=f"{R}/montague/{{dataset}}/{{model}}/pair_distances.parquet",
        shares=f"{R}/montague/{{dataset}}/{{model}}/shares.parquet",
        summary=f"{R}/montague/{{dataset}}/{{model}}/summary.json",
        replicates=f"{R}/montague/{{dataset}}/{{model}}/replicates.parquet",
    log:
        log_path("montague_score", "{dataset}", "{model}"),
    benchmark:
        bench_path("montague_score", "{dataset}", "{model}")
    conda:
        "../envs/workflow.yaml"
    params:
        spec=MONTAGUE.spec,
        bootstrap_b=lambda wc: config["montague"]["bootstrap_b"],
        unit=lambda wc: config["montague"]["bootstrap_unit"],
        seed=SEED,
        out_dir=lambda wc, output: os.path.dirname(output.shares),
    shell:
        "python -m workflow_scripts.montague.scores score --phrases {input.phrases:q} --stores {input.stores:q}"
        " --dataset {wildcards.dataset:q} --model {wildcards.model:q} --spec {params.spec:q}"
        " --bootstrap-b {params.bootstrap_b:q} --bootstrap-unit {params.unit:q} --seed {params.seed:q}"
        " --out-dir {params.out_dir:q} > {log:q} 2>&1"


rule montague_aggregate:
    input:
        MONTAGUE.shares(),
    output:
        tables=[
            f"{R}/tables/montague_{t}.csv" for t in ("single", "pair", "nonsubsective")
        ],
        layout=f"{R}/tables/montague_tables.md",
        plots=[
            (
                report(
                    f"{R}/plots/montague/{p.dataset}/{p.model}.png",
                    category=REPORT_CATEGORY["montague"],
                    subcategory=p.dataset,
                    caption="../resources/montague/report/plot.rst",
                    labels={"dataset": p.dataset, "model": p.model},
                )
                if ext == "png"
                else f"{R}/plots/montague/{p.dataset}/{p.model}.{ext}"
            )
            for p in MONTAGUE.pairs
            for ext in ("png", "svg")
        ],
    log:
        log_path("montague_aggregate", "all"),
    benchmark:
        bench_path("montague_aggregate", "all")
    localrule: True
    conda:
        "../envs/workflow.yaml"
    params:
        entries=MONTAGUE.aggregate_entries,
        datasets=MONTAGUE.datasets,
        models=lambda wc: MONTAGUE.models(),
        tables_dir=lambda wc, output: os.path.dirname(output.layout),
        # plots/montague/<dataset>/<model>.png: two levels up from any of them
        plots_dir=lambda wc, output: os.path.dirname(os.path.dirname(output.plots[0])),
    shell:
        "MPLBACKEND=Agg python -m workflow_scripts.montague.scores aggregate --entries {params.entries:q}"
        " --tables-dir {params.tables_dir:q} --plots-dir {params.plots_dir:q} --datasets {params.datasets:q}"
        " --models {params.models:q} > {log:q} 2>&1"
