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
    threads: RESOURCES.threads("montague_phrases")
    resources:
        **RESOURCES.sized("montague_phrases"),
    params:
        **job_params("montague.phrases:run_montague_phrases"),
        spec=MONTAGUE.word_lists,  # the word lists, adjective types in config order
    script:
        "../workflow_scripts/run_job.py"


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
    threads: RESOURCES.threads("montague_score")
    resources:
        **RESOURCES.sized("montague_score"),
    params:
        **job_params("montague.scores:run_montague_score"),
        spec=MONTAGUE.spec,
        bootstrap_b=lambda wc: config["montague"]["bootstrap_b"],
        unit=lambda wc: config["montague"]["bootstrap_unit"],
        seed=SEED,
    script:
        "../workflow_scripts/run_job.py"


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
    threads: RESOURCES.threads("montague_aggregate")
    resources:
        **RESOURCES.sized("montague_aggregate"),
    params:
        **job_params("montague.tables:run_montague_aggregate"),
        entries=MONTAGUE.aggregate_entries,
        datasets=MONTAGUE.datasets,
        models=lambda wc: MONTAGUE.models(),
    script:
        "../workflow_scripts/run_job.py"
