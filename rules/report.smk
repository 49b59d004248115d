# Shared stage: the report of every probe that ran. One rule, `report`, after every probe's tables:
#   results/report.md                 the overview, then a section per probe (title, summary, tables
#                                     with their captions, plots), then the inputs' quality
#   results/tables/overview.csv       model x probe headline figures with intervals, and its heat map
#   results/report/overview.json      the first screen: per figure its direction and n, per cell its
#                                     marks (zero-width interval, n < report.min_n, ceiling or floor),
#                                     the demo banner when every input is a shipped sample; report.md,
#                                     the HTML report's first screen (report/first_screen.rst) and
#                                     `python -m workflow_scripts.report.console` (after `make run`) show it
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
# Code: the package workflow_scripts/report/ (its job: report/build.py, run_report; what it reads
# and shows: report/plan.py).
from workflow_scripts.report.plan import ReportPlan

REPORT = ReportPlan(STUDY, list(PLANS.values()))


rule report:
    input:
        # the probes' tables shown as pages are among `tables` (the papers' published figures, from
        # the checkout, judged by content as the data are)
        unpack(
            by_content(
                {
                    "data": REPORT.data_files(),
                    "tables": REPORT.tables,
                    "page_tables": REPORT.page_tables,
                }
            )
        ),
        lengths=REPORT.lengths,
        ingest=REPORT.ingest,
        plots=REPORT.plots,
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
    threads: RESOURCES.threads("report")
    resources:
        **RESOURCES.sized("report"),
    params:
        **job_params("report.build:run_report"),
        sections=REPORT.sections,
        # what decides each model's vectors (family, name/path/revision, ...), not how its jobs run
        models=REPORT.model_specs,
        headline_options=REPORT.headline_options,
        first_screen_settings=REPORT.first_screen_settings,
        data=REPORT.data_sources,
        run=REPORT.run_settings,
        # the rule and the code digest of the job that wrote each table
        table_code=code_of(REPORT.written_tables()),
    script:
        "../workflow_scripts/run_job.py"
