# Stage 2: derived corpora (one language of a source, token range, length-matched subset) and
# the length-bucket table (seed paper's Table 2 layout).


rule derive_corpus:
    input:
        unpack(reference_corpus),
        source=lambda wc: f"{R}/ingest/{config['corpora'][wc.corpus]['source']}",
    output: directory(f"{R}/corpora/{{corpus}}")
    params:
        spec=lambda wc: as_json(config["corpora"][wc.corpus]),
        reference=lambda wc, input: f"--reference-dir {input.reference}" if "reference" in input.keys() else "",
        seed=SEED,
        shard_rows=SHARD_ROWS,
    log: log_path("derive_corpus", "{corpus}")
    benchmark: bench_path("derive_corpus", "{corpus}")
    threads: res("derive_corpus", "threads")
    priority: CHAIN_HEAD_PRIORITY
    resources: mem_mb=res("derive_corpus", "mem_mb"), runtime=res("derive_corpus", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "POLARS_MAX_THREADS={threads} python -m workflow_scripts.length_filter derive --corpus {wildcards.corpus} --spec {params.spec:q}"
        " --source-dir {input.source:q} {params.reference} --out {output:q} --seed {params.seed}"
        " --shard-rows {params.shard_rows} > {log:q} 2>&1"


rule length_buckets:
    input: expand(f"{R}/corpora/{{corpus}}", corpus=config["corpora"])
    output: f"{R}/tables/length_buckets.csv"
    log: log_path("length_buckets", "all")
    threads: res("length_buckets", "threads")
    resources: mem_mb=res("length_buckets", "mem_mb"), runtime=res("length_buckets", "runtime")
    conda: "../envs/workflow.yaml"
    shell: "python -m workflow_scripts.length_filter table --corpus-dirs {input:q} --out {output:q} > {log:q} 2>&1"
