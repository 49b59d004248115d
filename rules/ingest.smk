# Stage 1: corpus sources (local files, or URLs verified by sha256) -> Parquet shards + report.
# download_source fetches probe sources (SICK, MSRP, ...) too (workflow_scripts/downloads.py).


rule download_source:
    output:
        f"{R}/downloads/sources/{{source}}/{{filename}}",
    log:
        log_path("download", "{source}", "{filename}"),
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("download_source")
    resources:
        **RESOURCES.sized("download_source"),
    params:
        **job_params("downloads:run_download_source"),
        url=lambda wc: STUDY.source_spec(wc.source)["url"],
        sha256=lambda wc: STUDY.source_spec(wc.source)["sha256"],
    script:
        "../workflow_scripts/run_job.py"


rule ingest:
    input:
        unpack(by_content(source_input)),
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
    threads: RESOURCES.threads("ingest")
    resources:
        **RESOURCES.sized("ingest"),
    params:
        **job_params("ingest:run_ingest"),
        spec=lambda wc: config["sources"][wc.source],
        shard_rows=SHARD_ROWS,
    script:
        "../workflow_scripts/run_job.py"
