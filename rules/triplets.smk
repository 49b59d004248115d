# The sentence-triplet probe (Zhu, Li & de Melo, seed 002; methods.md §3), on the probe contract
# (docs/adding-a-probe.md):
#   triplets_build      a dataset's (S, S+, S*) triplets from its sources, and its texts to embed
#   triplets_score      per (dataset, model): the three cosine similarities and whether it is right
#   triplets_aggregate  accuracy and mean similarities with bootstrapped CIs, Tables 2-6, plots
# Code: workflow_scripts/triplets/ (declaration: probe.py, planning: plan.py); config: the `triplets` section.
TRIPLETS = PLANS["triplets"]


rule triplets_build:
    input:
        unpack(by_content(TRIPLETS.build_inputs)),
    output:
        triplets=f"{R}/triplets/{{dataset}}/triplets.parquet",
        texts=expand(
            f"{R}/texts/triplets.{{{{dataset}}}}/part-{{part}}.parquet", part=PART_IDS
        ),
        report=f"{R}/reports/triplets/{{dataset}}.json",
    log:
        log_path("triplets_build", "{dataset}"),
    benchmark:
        bench_path("triplets_build", "{dataset}")
    priority: CHAIN_HEAD_PRIORITY
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("triplets_build")
    resources:
        **RESOURCES.sized("triplets_build"),
    params:
        **job_params("triplets.datasets:run_triplets_build"),
        spec=TRIPLETS.build_spec,
        sources=TRIPLETS.sources,
        settings=TRIPLETS.settings,
        seed=SEED,
        # NLTK data the transformations use (name@digest): a change rebuilds the dataset
        nltk=STUDY.nltk_plan,
        nltk_dir=STUDY.nltk_download_dir,
    script:
        "../workflow_scripts/run_job.py"


rule triplets_score:
    input:
        triplets=f"{R}/triplets/{{dataset}}/triplets.parquet",
        stores=TRIPLETS.stores,
    output:
        f"{R}/triplets/{{dataset}}/{{model}}/scores.parquet",
    log:
        log_path("triplets_score", "{dataset}", "{model}"),
    benchmark:
        bench_path("triplets_score", "{dataset}", "{model}")
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("triplets_score")
    resources:
        **RESOURCES.sized("triplets_score"),
    params:
        **job_params("triplets.scores:run_triplets_score"),
        spec=TRIPLETS.spec,
        scoring=lambda wc: TRIPLETS.scoring(wc.dataset),
    script:
        "../workflow_scripts/run_job.py"


rule triplets_aggregate:
    input:
        TRIPLETS.scores(),
    output:
        accuracy=f"{R}/tables/triplets_accuracy.csv",
        overview=f"{R}/tables/triplets_overview.csv",
        replicates=f"{R}/triplets/replicates.parquet",
        tables=[f"{R}/tables/triplets_{d}.csv" for d in TRIPLETS.datasets],
        plots=[
            report(
                f"{R}/plots/triplets/{d}.png",
                category=REPORT_CATEGORY["triplets"],
                subcategory=d,
                caption="../resources/triplets/report/plot.rst",
                labels={"dataset": d},
            )
            for d in TRIPLETS.datasets
        ],
    log:
        log_path("triplets_aggregate", "all"),
    localrule: True
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("triplets_aggregate")
    resources:
        **RESOURCES.sized("triplets_aggregate"),
    params:
        **job_params("triplets.scores:run_triplets_aggregate"),
        entries=TRIPLETS.aggregate_entries,
        bootstrap_b=lambda wc: config["triplets"]["bootstrap_b"],
        bootstrap_unit=lambda wc: config["triplets"].get("bootstrap_unit", "clusters"),
        seed=SEED,
        datasets=TRIPLETS.datasets,
        models=lambda wc: TRIPLETS.models(),
    script:
        "../workflow_scripts/run_job.py"
