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
    threads: res("derive_corpus", "threads")
    resources:
        mem_mb=res("derive_corpus", "mem_mb"),
        runtime=res("derive_corpus", "runtime"),
    params:
        spec=lambda wc: as_json(config["corpora"][wc.corpus]),
        reference=lambda wc, input: cli_options(
            ("--reference-dir", input.get("reference"))
        ),
        seed=SEED,
        shard_rows=SHARD_ROWS,
    shell:
        "POLARS_MAX_THREADS={threads} python -m workflow_scripts.length_filter derive --corpus {wildcards.corpus:q} --spec {params.spec:q}"
        " --source-dir {input.source:q} {params.reference} --out {output:q} --seed {params.seed:q}"
        " --shard-rows {params.shard_rows:q} > {log:q} 2>&1"


rule length_buckets:
    input:
        expand(f"{R}/corpora/{{corpus}}", corpus=config["corpora"]),
    output:
        f"{R}/tables/length_buckets.csv",
    log:
        log_path("length_buckets", "all"),
    conda:
        "../envs/workflow.yaml"
    threads: res("length_buckets", "threads")
    resources:
        mem_mb=res("length_buckets", "mem_mb"),
        runtime=res("length_buckets", "runtime"),
    shell:
        "python -m workflow_scripts.length_filter table --corpus-dirs {input:q} --out {output:q} > {log:q} 2>&1"
