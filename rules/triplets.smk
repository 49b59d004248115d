# The sentence-triplet probe (Zhu, Li & de Melo, seed 002; methods.md §3), on the probe contract
# (README, "Probes"):
#   triplets_build      a dataset's (S, S+, S*) triplets from its sources, and its texts to embed
#   triplets_score      per (dataset, model): the three cosine similarities and whether it is right
#   triplets_aggregate  accuracy and mean similarities with bootstrapped CIs, Tables 2-6, plots
# Code: workflow_scripts/triplets/; config: the `triplets` section.


rule triplets_build:
    input: unpack(triplet_build_inputs)
    output:
        triplets=f"{R}/triplets/{{dataset}}/triplets.parquet",
        texts=expand(f"{R}/texts/triplets.{{{{dataset}}}}/part-{{part}}.parquet", part=PART_IDS),
        report=f"{R}/reports/triplets/{{dataset}}.json",
    params:
        spec=lambda wc: as_json(config["triplets"]["datasets"][wc.dataset]),
        sources=triplet_sources,
        settings=triplet_settings,
        seed=SEED,
        # NLTK data the transformations use (name@digest): a change rebuilds the dataset
        nltk=triplet_nltk_plan,
        nltk_path=nltk_data_path,
    log: log_path("triplets_build", "{dataset}")
    benchmark: bench_path("triplets_build", "{dataset}")
    threads: res("triplets_build", "threads")
    priority: CHAIN_HEAD_PRIORITY
    resources: mem_mb=res("triplets_build", "mem_mb"), runtime=res("triplets_build", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "NLTK_DATA={params.nltk_path:q} python -m workflow_scripts.triplets.datasets --dataset {wildcards.dataset}"
        " --spec {params.spec:q} --sources {params.sources:q} --settings {params.settings:q} --seed {params.seed}"
        " --out {output.triplets:q} --texts {output.texts:q} --report {output.report:q} > {log:q} 2>&1"


rule triplets_score:
    input:
        triplets=f"{R}/triplets/{{dataset}}/triplets.parquet",
        stores=triplet_stores,
    output: f"{R}/triplets/{{dataset}}/{{model}}/scores.parquet"
    params:
        spec=lambda wc: as_json(embed_spec(wc.model)),
        scoring=lambda wc: triplet_scoring(wc.dataset),
    log: log_path("triplets_score", "{dataset}", "{model}")
    benchmark: bench_path("triplets_score", "{dataset}", "{model}")
    threads: res("triplets_score", "threads")
    resources: mem_mb=res("triplets_score", "mem_mb"), runtime=res("triplets_score", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.triplets.scores score --triplets {input.triplets:q} --stores {input.stores:q}"
        " --model {wildcards.model} --spec {params.spec:q} --scoring {params.scoring} --out {output:q} > {log:q} 2>&1"


rule triplets_aggregate:
    input: [f"{R}/triplets/{p.dataset}/{p.model}/scores.parquet" for p in TRIPLET_PAIRS]
    output:
        accuracy=f"{R}/tables/triplets_accuracy.csv",
        overview=f"{R}/tables/triplets_overview.csv",
        tables=[f"{R}/tables/triplets_{d}.csv" for d in TRIPLET_DATASETS],
        plots=[report(f"{R}/plots/triplets/{d}.png", category=REPORT_CATEGORY["triplets"], subcategory=d,
                      caption="../resources/report/triplets_plot.rst", labels={"dataset": d}) for d in TRIPLET_DATASETS],
    params:
        entries=lambda wc, input: as_json([{"dataset": p.dataset, "model": p.model, "scores": path,
                                            "scoring": triplet_scoring(p.dataset)}
                                           for p, path in zip(TRIPLET_PAIRS, input)]),
        bootstrap_b=lambda wc: config["triplets"]["bootstrap_b"],
        seed=SEED,
        datasets=TRIPLET_DATASETS,
        models=lambda wc: list(dict.fromkeys(p.model for p in TRIPLET_PAIRS)),
        tables_dir=lambda wc, output: os.path.dirname(output.overview),
        plots_dir=lambda wc, output: os.path.dirname(output.plots[0]) if output.plots else f"{R}/plots/triplets",
    log: log_path("triplets_aggregate", "all")
    threads: res("triplets_aggregate", "threads")
    resources: mem_mb=res("triplets_aggregate", "mem_mb"), runtime=res("triplets_aggregate", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "MPLBACKEND=Agg python -m workflow_scripts.triplets.scores aggregate --entries {params.entries:q}"
        " --bootstrap-b {params.bootstrap_b} --seed {params.seed} --out {output.accuracy:q}"
        " --tables-dir {params.tables_dir:q} --plots-dir {params.plots_dir:q} --datasets {params.datasets:q}"
        " --models {params.models:q} > {log:q} 2>&1"
