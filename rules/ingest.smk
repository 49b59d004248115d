# Stage 1: corpus sources (local files, or URLs verified by sha256) -> Parquet shards + report.
# download_source fetches probe sources (SICK, MSRP, ...) too.


rule download_source:
    output:
        f"{R}/downloads/sources/{{source}}/{{filename}}",
    log:
        log_path("download", "{source}", "{filename}"),
    conda:
        "../envs/workflow.yaml"
    params:
        url=lambda wc: STUDY.source_spec(wc.source)["url"],
        sha256=lambda wc: STUDY.source_spec(wc.source)["sha256"],
    shell:
        "python -m workflow_scripts.ingest download --url {params.url:q} --sha256 {params.sha256:q} --out {output:q} > {log:q} 2>&1"


rule ingest:
    input:
        source_input,
    output:
        shards=directory(f"{R}/ingest/{{source}}"),
        report=f"{R}/reports/ingest/{{source}}.json",
    log:
        log_path("ingest", "{source}"),
    benchmark:
        bench_path("ingest", "{source}")
    priority: CHAIN_HEAD_PRIORITY
    conda:
        "../envs/workflow.yaml"
    params:
        spec=lambda wc: as_json(config["sources"][wc.source]),
        shard_rows=SHARD_ROWS,
    shell:
        "python -m workflow_scripts.ingest ingest --source {wildcards.source:q} --spec {params.spec:q} --input {input:q}"
        " --out {output.shards:q} --report {output.report:q} --shard-rows {params.shard_rows:q} > {log:q} 2>&1"
