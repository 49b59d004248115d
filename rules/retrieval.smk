# The retrieval probe (seed 003; methods.md §4), on the probe contract (docs/adding-a-probe.md):
#   retrieval_build      a set in BEIR's layout (your folder or archive, 3GPP specifications with
#                        questions, MSRP, Tatoeba) and its texts to embed (documents' `text`, queries)
#   retrieval_search     per (set, model): exact top-K of every evaluated question (FAISS IndexFlatIP,
#                        GPU when the model's device is cuda, float64 rescoring), C and R similarities
#   retrieval_isotropy   per (set, model): I1 and IsoScore before and after standardise/whiten/PCA,
#                        with the search repeated after each transformation
#   retrieval_metrics    per (set, model): accuracy and NDCG per k and draw, thresholds, COE/ROE, and
#                        the paired bootstrap replicates of the full-data accuracy and NDCG
#   retrieval_aggregate  the tables (accuracy, isotropy, correlations, Tables I-III) and plots
# Code: workflow_scripts/retrieval/ (declaration: probe.py, planning: plan.py); config: the `retrieval` section.
RETRIEVAL = PLANS["retrieval"]


rule retrieval_build:
    input:
        unpack(by_content(RETRIEVAL.build_inputs)),
    output:
        set=directory(f"{R}/retrieval/sets/{{dataset}}"),
        texts=expand(
            f"{R}/texts/retrieval.{{{{dataset}}}}/part-{{part}}.parquet", part=PART_IDS
        ),
        report=f"{R}/reports/retrieval/{{dataset}}.json",
    log:
        log_path("retrieval_build", "{dataset}"),
    benchmark:
        bench_path("retrieval_build", "{dataset}")
    wildcard_constraints:
        dataset=RETRIEVAL.dataset_pattern(),  # the sets' names: `<set>.query` is a question set
    priority: CHAIN_HEAD_PRIORITY
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("retrieval_build")
    resources:
        **RESOURCES.sized("retrieval_build"),
        gpu=RETRIEVAL.build_gpu,  # 1 when the set's question generator runs on cuda
    params:
        **job_params("retrieval.sets:run_retrieval_build"),
        spec=RETRIEVAL.build_spec,
        settings=RETRIEVAL.build_settings,
        seed=SEED,
        # NLTK data the sentence splitter uses (name@digest): a change rebuilds the set
        nltk=STUDY.nltk_plan,
        nltk_dir=STUDY.nltk_download_dir,
        # generated questions are cached across runs and killed jobs (workflow_scripts/generator.py)
        cache=lambda wc: f"{R}/cache/generations/retrieval.{wc.dataset}.jsonl",
    script:
        "../workflow_scripts/run_job.py"


rule retrieval_query_texts:
    # a model with a query template or prompt embeds the questions as a text set of their own
    input:
        set=f"{R}/retrieval/sets/{{dataset}}",
    output:
        texts=expand(
            f"{R}/texts/retrieval.{{{{dataset}}}}.query/part-{{part}}.parquet",
            part=PART_IDS,
        ),
    log:
        log_path("retrieval_query_texts", "{dataset}"),
    wildcard_constraints:
        dataset=RETRIEVAL.dataset_pattern(),
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("retrieval_query_texts")
    resources:
        **RESOURCES.sized("retrieval_query_texts"),
    params:
        **job_params("retrieval.query_texts:run_retrieval_query_texts"),
    script:
        "../workflow_scripts/run_job.py"


rule retrieval_search:
    input:
        set=f"{R}/retrieval/sets/{{dataset}}",
        stores=RETRIEVAL.stores,
    output:
        topk=f"{R}/retrieval/{{dataset}}/{{model}}/topk.parquet",
        similarities=f"{R}/retrieval/{{dataset}}/{{model}}/similarities.parquet",
        summary=f"{R}/retrieval/{{dataset}}/{{model}}/search.json",
    log:
        log_path("retrieval_search", "{dataset}", "{model}"),
    benchmark:
        bench_path("retrieval_search", "{dataset}", "{model}")
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("retrieval_search")
    resources:
        **RESOURCES.sized("retrieval_search"),
        gpu=lambda wc: 1 if STUDY.resolved_device(wc.model) == "cuda" else 0,
        # how the search runs, not what it finds: resources, so a change reruns nothing
        shard_rows=RETRIEVAL.search_option("shard_rows"),
        query_batch=RETRIEVAL.search_option("query_batch"),
        extra_candidates=RETRIEVAL.search_option("extra_candidates"),
    params:
        **job_params("retrieval.search:run_retrieval_search"),
        spec=RETRIEVAL.spec,
        settings=RETRIEVAL.search_settings,
        seed=SEED,
        # the GPU index when the model's device is cuda (identical results: float64 rescoring)
        device=lambda wc: STUDY.resolved_device(wc.model),
    script:
        "../workflow_scripts/run_job.py"


rule retrieval_isotropy:
    input:
        set=f"{R}/retrieval/sets/{{dataset}}",
        stores=RETRIEVAL.stores,
    output:
        isotropy=f"{R}/retrieval/{{dataset}}/{{model}}/isotropy.parquet",
        topk=f"{R}/retrieval/{{dataset}}/{{model}}/transform_topk.parquet",
    log:
        log_path("retrieval_isotropy", "{dataset}", "{model}"),
    benchmark:
        bench_path("retrieval_isotropy", "{dataset}", "{model}")
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("retrieval_isotropy")
    resources:
        **RESOURCES.sized("retrieval_isotropy"),
        gpu=lambda wc: 1 if STUDY.resolved_device(wc.model) == "cuda" else 0,
        shard_rows=RETRIEVAL.search_option("shard_rows"),
        query_batch=RETRIEVAL.search_option("query_batch"),
        extra_candidates=RETRIEVAL.search_option("extra_candidates"),
    params:
        **job_params("retrieval.isotropy:run_retrieval_isotropy"),
        spec=RETRIEVAL.spec,
        settings=RETRIEVAL.isotropy_settings,
        device=lambda wc: STUDY.resolved_device(wc.model),
    script:
        "../workflow_scripts/run_job.py"


rule retrieval_metrics:
    input:
        topk=f"{R}/retrieval/{{dataset}}/{{model}}/topk.parquet",
        similarities=f"{R}/retrieval/{{dataset}}/{{model}}/similarities.parquet",
        search=f"{R}/retrieval/{{dataset}}/{{model}}/search.json",
        transform_topk=f"{R}/retrieval/{{dataset}}/{{model}}/transform_topk.parquet",
    output:
        metrics=f"{R}/retrieval/{{dataset}}/{{model}}/metrics.parquet",
        thresholds=f"{R}/retrieval/{{dataset}}/{{model}}/thresholds.parquet",
        summary=f"{R}/retrieval/{{dataset}}/{{model}}/summary.parquet",
        # the paired bootstrap replicates of the full-data accuracy and NDCG (differences tables)
        replicates=f"{R}/retrieval/{{dataset}}/{{model}}/replicates.parquet",
        # each question's hit at every k: McNemar's exact test of two models' accuracies
        outcomes=f"{R}/retrieval/{{dataset}}/{{model}}/outcomes.parquet",
    log:
        log_path("retrieval_metrics", "{dataset}", "{model}"),
    benchmark:
        bench_path("retrieval_metrics", "{dataset}", "{model}")
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("retrieval_metrics")
    resources:
        **RESOURCES.sized("retrieval_metrics"),
    params:
        **job_params("retrieval.metrics:run_retrieval_metrics"),
        settings=RETRIEVAL.metric_settings,
        seed=SEED,
    script:
        "../workflow_scripts/run_job.py"


rule retrieval_aggregate:
    input:
        unpack(RETRIEVAL.aggregate_inputs),
    output:
        accuracy=f"{R}/tables/retrieval_accuracy.csv",
        isotropy=f"{R}/tables/retrieval_isotropy.csv",
        correlations=f"{R}/tables/retrieval_correlations.csv",
        tables=[f"{R}/tables/retrieval_table{i}.csv" for i in (1, 2, 3)],
        plots=[
            report(
                f"{R}/plots/retrieval/{d}/{name}.png",
                category=REPORT_CATEGORY["retrieval"],
                subcategory=d,
                caption=f"../resources/retrieval/report/{name}.rst",
                labels={"set": d, "plot": name},
            )
            for d, name in RETRIEVAL.plots()
        ],
    log:
        log_path("retrieval_aggregate", "all"),
    localrule: True
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("retrieval_aggregate")
    resources:
        **RESOURCES.sized("retrieval_aggregate"),
    params:
        **job_params("retrieval.tables:run_retrieval_aggregate"),
        # pair i's files are the inputs `<file>_i` (RetrievalPlan.aggregate_inputs)
        pairs=RETRIEVAL.aggregate_pairs,
        settings=RETRIEVAL.aggregate_settings,
        seed=SEED,
        datasets=RETRIEVAL.datasets,
    script:
        "../workflow_scripts/run_job.py"
