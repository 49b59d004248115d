"""The report stage's one job: the steps of report/ in order, from the files and params of the
`report` rule (rules/report.smk)."""
from __future__ import annotations

import os

from workflow_scripts.common import setup_logging


# ---- the jobs of rules/report.smk (workflow_scripts/jobs.py) ----
def run_report(job) -> None:
    """The overview with its heat map and first screen, report.md, the HTML report's first screen,
    table pages and inputs page, the provenance and, last, the runtimes: every benchmarked job is
    upstream of the tables before it."""
    os.environ.setdefault("MPLBACKEND", "Agg")  # before matplotlib is imported: no display here
    from workflow_scripts.report import markdown, overview, pages, provenance

    log = setup_logging(name="report")
    out, params = job.output, job.params
    lengths = job.input.lengths[0] if job.input.lengths else None  # the study's corpora, when it has some
    frame = overview.build(list(job.input.tables), params.models, params.headline_options, out.overview,
                           out.overview_plot, out.first_screen_json, params.first_screen_settings["min_n"],
                           params.first_screen_settings["demo"], list(job.input.differences))
    log.info("overview: %d models x %d headline figures", frame.height, (frame.width - 3) // 3)
    markdown.build(out.md, params.sections, out.overview, lengths, list(job.input.ingest), out.first_screen_json)
    pages.first_screen(out.first_screen_json, out.first_screen, out.overview_plot)
    # the overview's table first: it is a page too
    pages.table_pages([out.overview, *job.input.page_tables], os.path.dirname(out.pages[0]))
    pages.inputs_page(list(job.input.reports), lengths, out.inputs_page)
    provenance.provenance([os.path.join(store, "manifest.json") for store in job.input.stores], params.models,
                          params.data, params.run, list(job.input.generator_reports), out.provenance,
                          code=params.table_code)
    jobs = pages.runtimes(os.path.dirname(out.runtimes), out.runtimes, out.runtimes_csv)
    log.info("%d jobs with a benchmark file", jobs.height)
