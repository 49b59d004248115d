# Stage 4: vector stores. One job per (model, text set, store partition): a text set is a corpus or
# a probe's dataset (rules/common.smk, "text sets"); a model has its device's number of store
# partitions (embedding_partitions_per_device, e.g. a few large ones on a GPU: one model load each),
# each holding one or more text partitions (Study.store_texts). Every unique text is embedded once
# per model; a derived corpus copies its parent's vectors instead of encoding them again.


rule download_model:
    output:
        f"{R}/downloads/models/{{model}}/{{filename}}",
    log:
        log_path("download", "model-{model}", "{filename}"),
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("download_model")
    resources:
        **RESOURCES.sized("download_model"),
    params:
        **job_params("downloads:run_download_model"),
        url=lambda wc: config["models"][wc.model]["url"],
        sha256=lambda wc: config["models"][wc.model]["sha256"],
        # a `.gz` file (by the URL's file name, its query string aside) is stored decompressed
        gunzip=lambda wc: is_gzip_url(config["models"][wc.model]["url"]),
    script:
        "../workflow_scripts/run_job.py"


rule fit_tfidf:
    input:
        unpack(tfidf_fit_inputs),
    output:
        f"{R}/models/{{model}}/tfidf-{{scope}}.json",
    log:
        log_path("fit_tfidf", "{model}", "{scope}"),
    benchmark:
        bench_path("fit_tfidf", "{model}", "{scope}")
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("fit_tfidf")
    resources:
        **RESOURCES.sized("fit_tfidf"),
    params:
        **job_params("embed:run_fit_tfidf"),
        spec=lambda wc: STUDY.embed_spec(wc.model),
    script:
        "../workflow_scripts/run_job.py"


rule embed:
    input:
        unpack(by_content(embed_inputs)),
    output:
        directory(f"{R}/embeddings/{{model}}/{{scope}}/part-{{part}}"),
    log:
        log_path("embed", "{model}", "{scope}", "part-{part}"),
    benchmark:
        bench_path("embed", "{model}", "{scope}", "part-{part}")
    priority: embed_priority
    # on a cluster only: small CPU jobs share one submission (`group-components` in profiles/slurm)
    group:
        embed_group
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("embed")
    resources:
        **RESOURCES.sized("embed"),
        # SLURM: the partition by the model's device, where the config names them
        **EMBED_PARTITION,
        # family openai_embeddings: how requests run (retries, backoff, deadline, concurrency, token
        # budget, answer bound, the key's variable: encoders.job_resources); unset for others
        **ENDPOINT_RESOURCES,
        gpu=lambda wc: 1 if STUDY.resolved_device(wc.model) == "cuda" else 0,
        # SLURM: --gpus=<gpu_model>:1 (the plugin ignores an empty model)
        gpu_model=lambda wc: (
            config["models"][wc.model].get("gpu_model", "")
            if STUDY.resolved_device(wc.model) == "cuda"
            else ""
        ),
        # how the job runs, not what it computes (fp32: float-rounding changes only; in bf16/fp16
        # the batch size is in the spec too): resources, like threads, are not compared when
        # Snakemake decides what to rerun (params, input, shell template, software env, mtime are)
        batch_size=lambda wc: config["models"][wc.model].get("batch_size", 32),
        cpu_workers=lambda wc: config["models"][wc.model].get("cpu_workers", 1),
    params:
        **job_params("embed:run_embed"),
        # what decides the vectors, resolved device, local model digest and the text set's role
        # (its template or prompt) included: a change reruns the job
        spec=lambda wc: STUDY.embed_spec(wc.model, wc.scope),
        partitions=lambda wc: STUDY.store_parts(wc.model),
        cache=embed_cache,
    script:
        "../workflow_scripts/run_job.py"
