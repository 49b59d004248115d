"""The overview printed at the end of `make run`: models x headline figures with their intervals and
marks, which direction is better and n per figure, the demo banner where the run is on the shipped
samples, and where the report is. Read from the report's first screen (<results>/report/overview.json,
written by report_overview); nothing is recomputed.

Usage: python -m workflow_scripts.report_console RESULTS
       python -m workflow_scripts.report_console --configfile config.yaml [overlay.yaml ...]
           (the results folder is the configs' `results`, the later file's winning, default results/)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap

from workflow_scripts.report_overview import cell_text, n_text

WIDTH = 132  # a wide terminal line; wider blocks are split by models


def summary(screen: dict, results: str, width: int = WIDTH) -> str:
    """The console text of the first screen (report_overview.first_screen) of the run in `results`:
    a block per probe with the models that have a figure in it (wider blocks split by models)."""
    lines = ["", "=== Overview: headline figure per probe and model, [95% interval], marks ==="]
    if screen["demo"]:
        lines += textwrap.wrap("!! " + screen["banner"], width)
    rows = screen["rows"]
    label = {r["column"]: r["label"] + ("*" if r.get("interval") else "") for r in rows}
    for probe in dict.fromkeys(r["probe"] for r in rows):
        group = [r for r in rows if r["probe"] == probe]
        label_w = max([len("figure")] + [len(label[r["column"]]) for r in group])
        n_w = max([len("n")] + [len(n_text(r)) for r in group])
        fixed = label_w + 2 + len("better") + 2 + n_w
        models = [m for m in screen["models"] if any(m["model"] in r["cells"] for r in group)]
        names = {m["model"]: m["model"] + (" (stand-in)" if m["stand_in"] else "") for m in models}
        cell_w = {m: max([len(names[m])] + [len(cell_text(r["cells"].get(m))) for r in group]) for m in names}
        blocks, block, used = [], [], fixed
        for m in names:  # blocks of models that fit the line
            if block and used + 2 + cell_w[m] > width:
                blocks.append(block)
                block, used = [], fixed
            block.append(m)
            used += 2 + cell_w[m]
        blocks.append(block)
        for block in blocks:
            head = [f"{'figure':<{label_w}}", "better", f"{'n':>{n_w}}", *(f"{names[m]:<{cell_w[m]}}" for m in block)]
            lines += ["", "  ".join(head).rstrip()]
            for r in group:
                cells = [f"{label[r['column']]:<{label_w}}", f"{r['better']:<6}", f"{n_text(r):>{n_w}}",
                         *(f"{cell_text(r['cells'].get(m)):<{cell_w[m]}}" for m in block)]
                lines.append("  ".join(cells).rstrip())
    lines.append("")
    for mark in screen["marks_used"]:
        lines += textwrap.wrap(f"{mark}: {screen['legend'][mark]}", width, subsequent_indent="   ")
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
    folder (workflow_scripts/studies.py: results/<config name>/, results/ for config.yaml)."""
    from workflow_scripts.studies import results_folder
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
