# Shared stage: the report of every probe that ran. One rule, `report`, after every probe's tables:
#   results/report.md                 the overview, then a section per probe (title, summary, tables
#                                     with their captions, plots), then the inputs' quality
#   results/tables/overview.csv       model x probe headline figures with intervals, and its heat map
#   results/report/overview.json      the first screen: per figure its direction and n, per cell its
#                                     marks (zero-width interval, n < report.min_n, ceiling or floor),
#                                     the demo banner when every input is a shipped sample; report.md,
#                                     the HTML report's first screen (report/first_screen.rst) and
#                                     `python -m workflow_scripts.report_console` (after `make run`) show it
#   results/report/tables/*.html      every probe table as a page
#   results/report/inputs.html        input quality, perturbation and dataset counts
#   results/report/provenance.rst     models with origin, generators and prompts, data with sha256,
#                                     seed, package versions, stand-ins flagged
#   results/benchmarks/jobs.html|csv  each job's time and memory from the benchmark files (these vary
#                                     run to run; result comparisons leave results/benchmarks/ out)
# `snakemake --report results/report.html` (`make report`) then builds Snakemake's HTML report from
# the outputs marked report(...) here and in the probes' rule files; its first screen is
# resources/report/workflow.rst, which includes the provenance.
# Everything a probe shows comes from its declaration and its plan (workflow_scripts/probes.py,
# <probe>/probe.py, <probe>/plan.py): no probe is named here.
# Code: workflow_scripts/report.py, report_overview.py, report_pages.py.
from workflow_scripts.report_plan import ReportPlan

REPORT = ReportPlan(STUDY, list(PLANS.values()))


rule report:
    input:
        unpack(by_content({"data": REPORT.data_files()})),
        lengths=REPORT.lengths,
        ingest=REPORT.ingest,
        plots=REPORT.plots,
        tables=REPORT.tables,
        differences=REPORT.differences,
        reports=REPORT.jsons,
        generator_reports=REPORT.generator_jsons,
        stores=list(REPORT.stores.values()),
    output:
        md=f"{R}/report.md",
        overview=f"{R}/tables/overview.csv",
        overview_plot=report(
            f"{R}/plots/overview.png",
            category=REPORT_CATEGORY["overview"],
            subcategory="Overview",
            caption="../resources/report/overview_plot.rst",
        ),
        pages=[
            report(
                page,
                category=REPORT_CATEGORY[probe],
                subcategory=sub,
                caption=f"../{caption}",
            )
            for probe, _, page, sub, caption in REPORT.pages
        ],
        inputs_page=report(
            f"{R}/report/inputs.html",
            category=REPORT_CATEGORY["inputs"],
            subcategory="Counts",
            caption="../resources/report/inputs.rst",
        ),
        provenance=f"{R}/report/provenance.rst",
        first_screen_json=f"{R}/report/overview.json",
        first_screen=f"{R}/report/first_screen.rst",
        runtimes=report(
            f"{R}/benchmarks/jobs.html",
            category=REPORT_CATEGORY["runtime"],
            subcategory="Jobs",
            caption="../resources/report/runtimes.rst",
        ),
        runtimes_csv=f"{R}/benchmarks/jobs.csv",
    log:
        log_path("report", "all"),
    localrule: True
    conda:
        "../envs/workflow.yaml"
    params:
        sections=REPORT.sections,
        # the corpora's inputs, when the study has some
        inputs=lambda wc, input: cli_options(
            ("--lengths", input.lengths), ("--ingest", input.ingest)
        ),
        lengths=lambda wc, input: cli_options(("--lengths", input.lengths)),
        # what decides each model's vectors (family, name/path/revision, ...), not how its jobs run
        models=lambda wc: as_json([[m, STUDY.embed_spec(m)] for m in config["models"]]),  # pairs: config order
        overview_options=REPORT.headline_options,
        first_screen=REPORT.first_screen_options,
        data=lambda wc: as_json(REPORT.data_sources()),
        run=lambda wc: as_json({k: config[k] for k in ("seed", "embedding_partitions")}),
        manifests=lambda wc, input: [
            os.path.join(s, "manifest.json") for s in input.stores
        ],
        # the overview's table first: it is a page too
        page_tables=lambda wc, output: [output.overview] + REPORT.page_tables,
        pages_dir=lambda wc, output: os.path.dirname(output.pages[0]),
        benchmarks=lambda wc, output: os.path.dirname(output.runtimes),
    shell:
        "MPLBACKEND=Agg python -m workflow_scripts.report_overview --tables {input.tables:q} --models {params.models:q}"
        " --options {params.overview_options:q} --out {output.overview:q} --plot {output.overview_plot:q}"
        " --first-screen {output.first_screen_json:q} {params.first_screen}"
        " --differences {input.differences:q} > {log:q} 2>&1"
        " && python -m workflow_scripts.report --sections {params.sections:q} {params.inputs}"
        " --overview {output.overview:q} --first-screen {output.first_screen_json:q} --out {output.md:q} >> {log:q} 2>&1"
        " && python -m workflow_scripts.report_pages first-screen --overview {output.first_screen_json:q}"
        " --overview-plot {output.overview_plot:q} --out {output.first_screen:q} >> {log:q} 2>&1"
        " && python -m workflow_scripts.report_pages tables --tables {params.page_tables:q} --out-dir {params.pages_dir:q} >> {log:q} 2>&1"
        " && python -m workflow_scripts.report_pages inputs --reports {input.reports:q} {params.lengths}"
        " --out {output.inputs_page:q} >> {log:q} 2>&1"
        " && python -m workflow_scripts.report_pages provenance --manifests {params.manifests:q} --models {params.models:q}"
        " --data {params.data:q} --config {params.run:q} --reports {input.generator_reports:q}"
        " --out {output.provenance:q} >> {log:q} 2>&1"
        # last: every benchmarked job is upstream of the tables above
        " && python -m workflow_scripts.report_pages runtimes --benchmarks {params.benchmarks:q}"
        " --out-html {output.runtimes:q} --out-csv {output.runtimes_csv:q} >> {log:q} 2>&1"
