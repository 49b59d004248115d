"""The overview printed at the end of `make run`: per headline figure, a row per model with its value
and interval, n, its verdict against the surface-form baseline with the paired difference, and marks;
the demo banner where the run is on the shipped samples, and where the report is. Read from the
report's first screen (<results>/report/overview.json, written by report/overview.py); nothing is
recomputed.

Usage: python -m workflow_scripts.report.console RESULTS
       python -m workflow_scripts.report.console --configfile config.yaml [overlay.yaml ...]
           (the results folder is the configs' `results`, the later file's winning, default results/)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap

from workflow_scripts.report.overview import VERDICT_HEAD, shown_legend, verdict_rows

WIDTH = 132  # a wide terminal line: the summaries, the legend and notes wrap at it
TABLE_WIDTH = 160  # the verdict tables' rows, ten short columns, are not wrapped: at most this wide


def table_lines(head: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    """Left-aligned columns as wide as their widest entry."""
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    return [(indent + "  ".join(f"{text:<{w}}" for text, w in zip(row, widths))).rstrip() for row in [head, *rows]]


def summary(screen: dict, results: str, width: int = WIDTH) -> str:
    """The console text of the first screen (overview.first_screen) of the run in `results`: the
    answer in one line per model, the legend of the words and marks shown, then per probe and
    headline figure a row per model with its value, n, rank, verdict against the surface-form
    baseline (the words of report.md and the HTML report), difference, margin and marks. Long, not
    wide: every model is readable however many there are."""
    lines = ["", "=== Overview: every model against the surface-form baseline ==="]
    if screen["demo"]:
        lines += textwrap.wrap("!! " + screen["banner"], width)
    lines.append("")
    for line in screen.get("summaries", []):
        lines += textwrap.wrap(line, width, initial_indent="  ", subsequent_indent="      ")
    rows = screen["rows"]
    groups = verdict_rows(screen)
    # the meaning of the verdicts and marks shown, above the tables: a short screen stays short
    words, marks = shown_legend(screen)
    lines.append("")
    for key, meaning in {**words, **marks}.items():
        lines += textwrap.wrap(f"{key}: {meaning}", width, subsequent_indent="   ")
    for probe, group in groups.items():
        lines += ["", f"{probe}:"]
        for figure in dict.fromkeys(row[0] for row in group):
            lines += [f"  {figure}"]
            lines += table_lines(list(VERDICT_HEAD[1:]), [row[1:] for row in group if row[0] == figure], "    ")
    lines.append("")
    notes: dict[str, list[str]] = {}
    for r in rows:
        if r.get("interval"):
            notes.setdefault(r["interval"], []).append(r["label"])
    for note, labels in notes.items():
        lines += textwrap.wrap(f"* {', '.join(labels)}: {note}", width, subsequent_indent="   ")
    lines += [f"Report: {os.path.join(results, 'report.md')} (tables/ and plots/ beside it); "
              f"`make report` builds the HTML report, {os.path.join(results, 'report.html')}."]
    return "\n".join(lines) + "\n"


def results_of(configfiles: list[str]) -> str:
    """The study's results folder from its config files: their `results`, else the study's own
    folder (workflow_scripts/study_folders.py: results/<config name>/, results/ for config.yaml)."""
    from workflow_scripts.study_folders import results_folder
    return results_folder(list(configfiles))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="?", help="the study's results folder")
    ap.add_argument("--configfile", nargs="+", default=[], help="the study's config files (their `results`)")
    a = ap.parse_args(argv)
    results = a.results or results_of(a.configfile or ["config.yaml"])
    path = os.path.join(results, "report", "overview.json")
    if not os.path.exists(path):
        print(f"No overview yet: {path} is missing (did the run finish?).")
        return 1
    with open(path, encoding="utf-8") as f:
        sys.stdout.write(summary(json.load(f), results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
