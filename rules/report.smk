# Shared stage: the report of every probe's tables, plots and the inputs' counts.


rule report:
    input:
        unpack(triplet_report_inputs),
        overlap=f"{R}/tables/csc_overlap.csv",
        table3=f"{R}/tables/csc_table3.csv",
        lengths=f"{R}/tables/length_buckets.csv",
        ingest=expand(f"{R}/reports/ingest/{{source}}.json", source=config["sources"]),
        perturb=expand(f"{R}/reports/perturb/{{corpus}}.json", corpus=config["corpora"]),
        plots=[f"{R}/plots/csc/{p.corpus}/{p.model}.png" for p in CSC_PAIRS],
    output: f"{R}/report.md"
    params: triplets=report_triplet_options
    log: log_path("report", "all")
    threads: res("report", "threads")
    resources: mem_mb=res("report", "mem_mb"), runtime=res("report", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.report --overlap {input.overlap:q} --table3 {input.table3:q} --lengths {input.lengths:q} --ingest {input.ingest:q}"
        " --perturb {input.perturb:q} --plots {input.plots:q} {params.triplets} --out {output:q} > {log:q} 2>&1"
