# Stage 2: derived corpora (one language of a source, token range, length-matched subset) and
# the length-bucket table (seed paper's Table 2 layout).


rule derive_corpus:
    input:
        unpack(reference_corpus),
        source=lambda wc: f"{R}/ingest/{config['corpora'][wc.corpus]['source']}",
    output:
        directory(f"{R}/corpora/{{corpus}}"),
    log:
        log_path("derive_corpus", "{corpus}"),
    benchmark:
        bench_path("derive_corpus", "{corpus}")
    priority: CHAIN_HEAD_PRIORITY
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("derive_corpus")
    resources:
        **RESOURCES.sized("derive_corpus"),
    params:
        **job_params("length_filter:run_derive_corpus"),
        spec=lambda wc: config["corpora"][wc.corpus],
        seed=SEED,
        shard_rows=SHARD_ROWS,
    script:
        "../workflow_scripts/run_job.py"


rule length_buckets:
    input:
        expand(f"{R}/corpora/{{corpus}}", corpus=config["corpora"]),
    output:
        f"{R}/tables/length_buckets.csv",
    log:
        log_path("length_buckets", "all"),
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("length_buckets")
    resources:
        **RESOURCES.sized("length_buckets"),
    params:
        **job_params("length_filter:run_length_buckets"),
    script:
        "../workflow_scripts/run_job.py"
