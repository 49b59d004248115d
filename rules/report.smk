# Shared stage: the report of every probe. One rule, `report`, after every probe's tables:
#   results/report.md                 the tables as Markdown, opening with the overview
#   results/tables/overview.csv       model x probe headline figures with intervals, and its heat map
#   results/report/tables/*.html      every probe table as a page (workflow_scripts/report_pages.TABLES)
#   results/report/inputs.html        input quality, perturbation and dataset counts
#   results/report/provenance.rst     models with origin, generators and prompts, data with sha256,
#                                     seed, package versions, stand-ins flagged
#   results/benchmarks/jobs.html|csv  each job's time and memory from the benchmark files (these vary
#                                     run to run; result comparisons leave results/benchmarks/ out)
# `snakemake --report results/report.html` (`make report`) then builds Snakemake's HTML report from
# the outputs marked report(...) here and in the probes' rule files; its first screen is
# resources/report/workflow.rst, which includes the provenance.
# Code: workflow_scripts/report.py, report_overview.py, report_pages.py. A probe joins the report
# with a line in REPORT_PROBES, entries in report_pages.TABLES and report_overview.HEADLINES, and
# report(...) marks on its plots (README, "Probes").
from workflow_scripts.report_overview import headline_tables
from workflow_scripts.report_pages import DATASET_TABLES as REPORT_DATASET_TABLE_SPECS, TABLES as REPORT_TABLE_SPECS

# The probes that ran (some model scores them), in report order.
REPORT_PAIRS = (("csc", CSC_PAIRS), ("triplets", TRIPLET_PAIRS), ("montague", MONTAGUE_PAIRS),
                ("retrieval", RETRIEVAL_PAIRS), ("settheory", SETTHEORY_PAIRS), ("domain_shift", DOMAIN_SHIFT_PAIRS))
REPORT_PROBES = [probe for probe, pairs in REPORT_PAIRS if pairs]
# Dataset reports that may name a text generator and its prompt (the provenance lists them).
REPORT_GENERATOR_JSONS = ([f"{R}/reports/retrieval/{d}.json" for d in RETRIEVAL_DATASETS]
                          + [f"{R}/reports/settheory/{d}.json" for d in SETTHEORY_SETS])
# Every input and dataset report: their counts are the Inputs page.
REPORT_JSONS = (
    [f"{R}/reports/ingest/{s}.json" for s in config["sources"]]
    + [f"{R}/reports/perturb/{c}.json" for c in config["corpora"]]
    + [f"{R}/reports/triplets/{d}.json" for d in TRIPLET_DATASETS]
    + [f"{R}/reports/montague/{d}.json" for d in MONTAGUE_DATASETS]
    + [f"{R}/reports/retrieval/{d}.json" for d in RETRIEVAL_DATASETS]
    + [f"{R}/reports/articles/{a}.json" for a in dict.fromkeys(
        config["settheory"]["datasets"][s]["articles"] for s in SETTHEORY_SETS
        if "articles" in config["settheory"]["datasets"][s])]
    + [f"{R}/reports/settheory/{d}.json" for d in SETTHEORY_SETS]
    + [f"{R}/reports/settheory_filter/{d}.json" for d in SETTHEORY_SETS]
    + [f"{R}/reports/domain_shift/{d}.json" for d in DOMAIN_SHIFT_DATASETS]
)
# The datasets of the probes with per-dataset tables (report_pages.DATASET_TABLES).
REPORT_DATASETS = {"triplets": TRIPLET_DATASETS}
# (probe, table, page, subcategory, caption) of every table shown as a page; the overview's own first,
# then each probe's tables, then its per-dataset tables in the dataset's subcategory.
REPORT_PAGES = [(probe, f"{R}/tables/{name}", f"{R}/report/tables/{name.removesuffix('.csv')}.html", sub, caption)
                for probe in ["overview"] + REPORT_PROBES
                for name, sub, caption in REPORT_TABLE_SPECS[probe] + [
                    (pattern.format(dataset=d), d, caption)
                    for pattern, caption in REPORT_DATASET_TABLE_SPECS.get(probe, []) for d in REPORT_DATASETS[probe]]]
# The probes' tables the report reads: the overview's headline tables and the pages' tables.
REPORT_TABLES = list(dict.fromkeys([f"{R}/tables/{name}" for name in headline_tables(REPORT_PROBES)]
                                   + [t for probe, t, _, _, _ in REPORT_PAGES if probe != "overview"]))
# One embedding store per model (its manifest names the model's origin and device).
REPORT_STORES = {}
for _probe, _pairs in REPORT_PAIRS:
    for _p in _pairs:
        _scope = _p.corpus if _probe == "csc" else dataset_scope(_probe, _p.dataset)
        REPORT_STORES.setdefault(_p.model, f"{R}/embeddings/{_p.model}/{_scope}/part-{PART_IDS[0]}")


rule report:
    input:
        unpack(triplet_report_inputs),
        unpack(report_data_inputs),
        overlap=f"{R}/tables/csc_overlap.csv",
        table3=f"{R}/tables/csc_table3.csv",
        lengths=f"{R}/tables/length_buckets.csv",
        ingest=expand(f"{R}/reports/ingest/{{source}}.json", source=config["sources"]),
        perturb=expand(f"{R}/reports/perturb/{{corpus}}.json", corpus=config["corpora"]),
        plots=[f"{R}/plots/csc/{p.corpus}/{p.model}.png" for p in CSC_PAIRS],
        tables=REPORT_TABLES,
        reports=REPORT_JSONS,
        generator_reports=REPORT_GENERATOR_JSONS,
        stores=list(REPORT_STORES.values()),
    output:
        md=f"{R}/report.md",
        overview=f"{R}/tables/overview.csv",
        overview_plot=report(f"{R}/plots/overview.png", category=REPORT_CATEGORY["overview"], subcategory="Overview",
                             caption="../resources/report/overview_plot.rst"),
        pages=[report(page, category=REPORT_CATEGORY[probe], subcategory=sub, caption=f"../resources/report/{caption}")
               for probe, _, page, sub, caption in REPORT_PAGES],
        inputs_page=report(f"{R}/report/inputs.html", category=REPORT_CATEGORY["inputs"], subcategory="Counts",
                           caption="../resources/report/inputs.rst"),
        provenance=f"{R}/report/provenance.rst",
        runtimes=report(f"{R}/benchmarks/jobs.html", category=REPORT_CATEGORY["runtime"], subcategory="Jobs",
                        caption="../resources/report/runtimes.rst"),
        runtimes_csv=f"{R}/benchmarks/jobs.csv",
    params:
        triplets=report_triplet_options,
        # what decides each model's vectors (family, name/path/revision, ...), not how its jobs run
        models=lambda wc: as_json([[m, embed_spec(m)] for m in config["models"]]),  # pairs: config order
        overview_options=lambda wc: as_json(report_overview_options()),
        data=lambda wc: as_json(report_data_sources()),
        run=lambda wc: as_json({k: config[k] for k in ("seed", "embedding_partitions")}),
        manifests=lambda wc, input: [os.path.join(s, "manifest.json") for s in input.stores],
        # the overview's table first: it is a page too
        page_tables=lambda wc, output: [output.overview] + [t for probe, t, _, _, _ in REPORT_PAGES if probe != "overview"],
        pages_dir=lambda wc, output: os.path.dirname(output.pages[0]),
        benchmarks=lambda wc, output: os.path.dirname(output.runtimes),
    log: log_path("report", "all")
    threads: res("report", "threads")
    resources: mem_mb=res("report", "mem_mb"), runtime=res("report", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "MPLBACKEND=Agg python -m workflow_scripts.report_overview --tables {input.tables:q} --models {params.models:q}"
        " --options {params.overview_options:q} --out {output.overview:q} --plot {output.overview_plot:q} > {log:q} 2>&1"
        " && python -m workflow_scripts.report --overlap {input.overlap:q} --table3 {input.table3:q} --lengths {input.lengths:q}"
        " --ingest {input.ingest:q} --perturb {input.perturb:q} --plots {input.plots:q} {params.triplets}"
        " --overview {output.overview:q} --out {output.md:q} >> {log:q} 2>&1"
        " && python -m workflow_scripts.report_pages tables --tables {params.page_tables:q} --out-dir {params.pages_dir:q} >> {log:q} 2>&1"
        " && python -m workflow_scripts.report_pages inputs --reports {input.reports:q} --lengths {input.lengths:q}"
        " --out {output.inputs_page:q} >> {log:q} 2>&1"
        " && python -m workflow_scripts.report_pages provenance --manifests {params.manifests:q} --models {params.models:q}"
        " --data {params.data:q} --config {params.run:q} --reports {input.generator_reports:q}"
        " --overview-plot {output.overview_plot:q} --out {output.provenance:q} >> {log:q} 2>&1"
        # last: every benchmarked job is upstream of the tables above
        " && python -m workflow_scripts.report_pages runtimes --benchmarks {params.benchmarks:q}"
        " --out-html {output.runtimes:q} --out-csv {output.runtimes_csv:q} >> {log:q} 2>&1"
