# The retrieval probe (seed 003; methods.md §4), on the probe contract (README, "Probes"):
#   retrieval_build      a set in BEIR's layout (your folder or archive, 3GPP specifications with
#                        questions, MSRP, Tatoeba) and its texts to embed (documents' `text`, queries)
#   retrieval_search     per (set, model): exact top-K of every evaluated question (FAISS IndexFlatIP,
#                        GPU when the model's device is cuda, float64 rescoring), C and R similarities
#   retrieval_isotropy   per (set, model): I1 and IsoScore before and after standardise/whiten/PCA,
#                        with the search repeated after each transformation
#   retrieval_metrics    per (set, model): accuracy and NDCG per k and draw, thresholds, COE/ROE
#   retrieval_aggregate  the tables (accuracy, isotropy, correlations, Tables I-III) and plots
# Code: workflow_scripts/retrieval/; config: the `retrieval` section.


rule retrieval_build:
    input: unpack(retrieval_build_inputs)
    output:
        set=directory(f"{R}/retrieval/sets/{{dataset}}"),
        texts=expand(f"{R}/texts/retrieval.{{{{dataset}}}}/part-{{part}}.parquet", part=PART_IDS),
        report=f"{R}/reports/retrieval/{{dataset}}.json",
    params:
        spec=retrieval_build_spec,
        settings=lambda wc: as_json({"build": config["retrieval"]["build"]}),
        seed=SEED,
        # NLTK data the sentence splitter uses (name@digest): a change rebuilds the set
        nltk=retrieval_nltk_plan,
        nltk_path=nltk_data_path,
        # generated questions are cached across runs and killed jobs (workflow_scripts/generator.py)
        cache=lambda wc: f"{R}/cache/generations/retrieval.{wc.dataset}.jsonl",
    log: log_path("retrieval_build", "{dataset}")
    benchmark: bench_path("retrieval_build", "{dataset}")
    threads: res("retrieval_build", "threads")
    priority: CHAIN_HEAD_PRIORITY
    resources:
        mem_mb=res("retrieval_build", "mem_mb"),
        runtime=res("retrieval_build", "runtime"),
        gpu=retrieval_build_gpu,  # 1 when the set's question generator runs on cuda
    conda: "../envs/workflow.yaml"
    shell:
        "NLTK_DATA={params.nltk_path:q} python -m workflow_scripts.retrieval.sets --dataset {wildcards.dataset}"
        " --spec {params.spec:q} --settings {params.settings:q} --seed {params.seed} --out-dir {output.set:q}"
        " --texts {output.texts:q} --report {output.report:q} --cache {params.cache:q} > {log:q} 2>&1"


rule retrieval_search:
    input:
        set=f"{R}/retrieval/sets/{{dataset}}",
        stores=retrieval_stores,
    output:
        topk=f"{R}/retrieval/{{dataset}}/{{model}}/topk.parquet",
        similarities=f"{R}/retrieval/{{dataset}}/{{model}}/similarities.parquet",
        summary=f"{R}/retrieval/{{dataset}}/{{model}}/search.json",
    params:
        spec=lambda wc: as_json(embed_spec(wc.model)),
        settings=retrieval_search_settings,
        seed=SEED,
        # the GPU index when the model's device is cuda (identical results: float64 rescoring)
        device=lambda wc: resolved_device(wc.model),
    log: log_path("retrieval_search", "{dataset}", "{model}")
    benchmark: bench_path("retrieval_search", "{dataset}", "{model}")
    threads: res("retrieval_search", "threads")
    resources:
        mem_mb=res("retrieval_search", "mem_mb"),
        runtime=res("retrieval_search", "runtime"),
        gpu=lambda wc: 1 if resolved_device(wc.model) == "cuda" else 0,
        # how the search runs, not what it finds: resources, so a change reruns nothing
        shard_rows=retrieval_search_option("shard_rows"),
        query_batch=retrieval_search_option("query_batch"),
        extra_candidates=retrieval_search_option("extra_candidates"),
    conda: "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.retrieval.search --set {input.set:q} --stores {input.stores:q}"
        " --model {wildcards.model} --spec {params.spec:q} --dataset {wildcards.dataset} --settings {params.settings:q}"
        " --seed {params.seed} --device {params.device} --threads {threads} --shard-rows {resources.shard_rows}"
        " --query-batch {resources.query_batch} --extra-candidates {resources.extra_candidates}"
        " --topk {output.topk:q} --similarities {output.similarities:q} --summary {output.summary:q} > {log:q} 2>&1"


rule retrieval_isotropy:
    input:
        set=f"{R}/retrieval/sets/{{dataset}}",
        stores=retrieval_stores,
    output:
        isotropy=f"{R}/retrieval/{{dataset}}/{{model}}/isotropy.parquet",
        topk=f"{R}/retrieval/{{dataset}}/{{model}}/transform_topk.parquet",
    params:
        spec=lambda wc: as_json(embed_spec(wc.model)),
        settings=retrieval_isotropy_settings,
        device=lambda wc: resolved_device(wc.model),
    log: log_path("retrieval_isotropy", "{dataset}", "{model}")
    benchmark: bench_path("retrieval_isotropy", "{dataset}", "{model}")
    threads: res("retrieval_isotropy", "threads")
    resources:
        mem_mb=res("retrieval_isotropy", "mem_mb"),
        runtime=res("retrieval_isotropy", "runtime"),
        gpu=lambda wc: 1 if resolved_device(wc.model) == "cuda" else 0,
        shard_rows=retrieval_search_option("shard_rows"),
        query_batch=retrieval_search_option("query_batch"),
        extra_candidates=retrieval_search_option("extra_candidates"),
    conda: "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.retrieval.isotropy --set {input.set:q} --stores {input.stores:q}"
        " --model {wildcards.model} --spec {params.spec:q} --dataset {wildcards.dataset} --settings {params.settings:q}"
        " --device {params.device} --threads {threads} --shard-rows {resources.shard_rows}"
        " --query-batch {resources.query_batch} --extra-candidates {resources.extra_candidates}"
        " --isotropy {output.isotropy:q} --transform-topk {output.topk:q} > {log:q} 2>&1"


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
    params:
        settings=lambda wc: retrieval_metric_settings(),
        seed=SEED,
    log: log_path("retrieval_metrics", "{dataset}", "{model}")
    benchmark: bench_path("retrieval_metrics", "{dataset}", "{model}")
    threads: res("retrieval_metrics", "threads")
    resources: mem_mb=res("retrieval_metrics", "mem_mb"), runtime=res("retrieval_metrics", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.retrieval.metrics metrics --topk {input.topk:q} --similarities {input.similarities:q}"
        " --search-summary {input.search:q} --transform-topk {input.transform_topk:q} --dataset {wildcards.dataset}"
        " --model {wildcards.model} --settings {params.settings:q} --seed {params.seed} --metrics {output.metrics:q}"
        " --thresholds {output.thresholds:q} --summary {output.summary:q} > {log:q} 2>&1"


rule retrieval_aggregate:
    input: unpack(retrieval_aggregate_inputs)
    output:
        accuracy=f"{R}/tables/retrieval_accuracy.csv",
        isotropy=f"{R}/tables/retrieval_isotropy.csv",
        correlations=f"{R}/tables/retrieval_correlations.csv",
        tables=[f"{R}/tables/retrieval_table{i}.csv" for i in (1, 2, 3)],
        plots=[report(f"{R}/plots/retrieval/{d}/{name}.png", category=REPORT_CATEGORY["retrieval"], subcategory=d,
                      caption=f"../resources/report/retrieval_{name}.rst", labels={"set": d, "plot": name})
               for d in RETRIEVAL_DATASETS for name in ("accuracy_vs_k", "similarities")],
    params:
        entries=retrieval_aggregate_entries,
        settings=lambda wc: retrieval_aggregate_settings(),
        seed=SEED,
        datasets=RETRIEVAL_DATASETS,
        tables_dir=lambda wc, output: os.path.dirname(output.accuracy),
        plots_dir=lambda wc, output: (os.path.dirname(os.path.dirname(output.plots[0])) if output.plots
                                      else f"{R}/plots/retrieval"),
    log: log_path("retrieval_aggregate", "all")
    threads: res("retrieval_aggregate", "threads")
    resources: mem_mb=res("retrieval_aggregate", "mem_mb"), runtime=res("retrieval_aggregate", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "MPLBACKEND=Agg python -m workflow_scripts.retrieval.metrics aggregate --entries {params.entries:q}"
        " --settings {params.settings:q} --seed {params.seed} --accuracy {output.accuracy:q}"
        " --isotropy {output.isotropy:q} --correlations {output.correlations:q} --tables-dir {params.tables_dir:q}"
        " --plots-dir {params.plots_dir:q} --datasets {params.datasets:q} > {log:q} 2>&1"
