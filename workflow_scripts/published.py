"""The seed papers' own result tables, transcribed in `resources/<probe>/published.csv`: load and check them,
and arrange them as labelled reference blocks (the Markdown report here; the report page per probe in
report/pages.py), never mixed into our tables. Our inputs are not the papers' (their corpora are larger, internal or unpublished), so a published
row is a point of reference for where a model sits, not a figure to compare with ours cell by cell.

A file has the columns `paper, table, model, statistic, value, data` (the data the figure was measured on)
and the key columns a probe needs to line a row up with its tables (`dataset`, `condition`, `k`, `transform`,
`test`, `kind`, `key`), then `unit` and `note` (where the seed text lost a header, the note says how the key
was inferred). Values are kept as printed (`0.50`, `97.42`); each must read as a number.
"""
from __future__ import annotations

import csv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# each probe's file lies in its own folder: resources/<probe>/published.csv
RESOURCES = ROOT / "resources"
FILE_NAME = "published.csv"
REQUIRED = ("paper", "table", "model", "statistic", "value", "data")
META = ("paper", "table", "statistic", "value", "unit", "data", "note")
# Each paper a file may name: its seed text (`../shared/seeds/<prefix>_*.txt`) and its full title.
PAPERS = {
    "Keuren, Ponsen & Bagheri (2026)": ("000", "Finding Meaning in Embeddings: Concept Separation Curves"),
    "Bansal, Mahajan, Sinha & Karmaker (2025)": ("001", "Set-Theoretic Compositionality of Sentence Embeddings"),
    "Zhu, Li & de Melo (2018)": ("002", "Exploring Semantic Properties of Sentence Embeddings"),
    "Roychowdhury et al. (2025)": ("003", "Investigating Distributions of Telecom Adapted Sentence Embeddings for "
                                          "Document Retrieval"),
    "Carvalho et al. (2025)": ("004", "Montague semantics and modifier consistency measurement in neural language "
                                      "models"),
}


def path(probe: str, resources: Path = RESOURCES) -> Path:
    return resources / probe / FILE_NAME


def files(resources: Path = RESOURCES) -> list[Path]:
    """Every probe's published-figures file."""
    return sorted(resources.glob(f"*/{FILE_NAME}"))


def is_published(file: str | Path) -> bool:
    """Whether a table file is a published-figures file (the report renders those on their own page)."""
    return Path(file).name == FILE_NAME


def probe_of(file: str | Path) -> str:
    """The probe a published-figures file belongs to: its folder's name (resources/<probe>/published.csv)."""
    return Path(file).parent.name


def validate(rows: list[dict], source: str) -> list[dict]:
    """The rows, checked: the required columns present and filled, every value a finite number, every
    paper one of PAPERS. A bad row raises ValueError naming the file, its line and the column."""
    if rows:
        missing = [c for c in REQUIRED if c not in rows[0]]
        if missing:
            raise ValueError(f"{source}: missing column(s) {', '.join(missing)}; expected at least {', '.join(REQUIRED)}")
    for line, r in enumerate(rows, start=2):
        for c in REQUIRED:
            if c != "model" and not (r.get(c) or "").strip():
                raise ValueError(f"{source}, line {line}: `{c}` is empty")
        try:
            v = float(r["value"])
        except ValueError:
            raise ValueError(f"{source}, line {line}: value {r['value']!r} is not a number") from None
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError(f"{source}, line {line}: value {r['value']!r} is not a finite number")
        if r["paper"] not in PAPERS:
            raise ValueError(f"{source}, line {line}: unknown paper {r['paper']!r}; expected one of {sorted(PAPERS)}")
    return rows


def load(probe: str, resources: Path = RESOURCES) -> list[dict]:
    """The probe's published rows in file order, checked; [] when the papers published none."""
    file = path(probe, resources)
    if not file.exists():
        return []
    with open(file, newline="", encoding="utf-8") as f:
        return validate(list(csv.DictReader(f)), str(file))


def blocks(rows: list[dict]) -> list[dict]:
    """One block per (paper, table), in file order: a model per row and a column per combination of the
    key columns and statistic that vary within the table; what is the same throughout goes in `fixed`."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["paper"], r["table"]), []).append(r)
    out = []
    for (paper, table), rs in groups.items():
        keys = [c for c in rs[0] if c not in META and c != "model"] + ["statistic"]
        varying = [c for c in keys if len({r[c] for r in rs}) > 1]
        fixed = {c: rs[0][c] for c in keys + ["unit"] if c not in varying and rs[0].get(c)}
        columns: list[str] = []
        cells: dict[str, dict[str, str]] = {}
        for r in rs:
            col = " ".join(r[c] for c in varying) or r["statistic"]
            if col not in columns:
                columns.append(col)
            cells.setdefault(r["model"] or "(across models)", {})[col] = r["value"]
        out.append({"paper": paper, "table": table, "fixed": fixed, "columns": columns,
                    "rows": [[m, *(v.get(c, "") for c in columns)] for m, v in cells.items()],
                    "data": list(dict.fromkeys(r["data"] for r in rs)),
                    "notes": list(dict.fromkeys(r["note"] for r in rs if r.get("note")))})
    return out


def caption(block: dict) -> str:
    fixed = "; ".join(f"{k}: {v}" for k, v in block["fixed"].items())
    title = PAPERS[block["paper"]][1]
    return (f"{block['paper']}, {block['table']} (\"{title}\"): published figures, not this run's"
            + (f"; {fixed}" if fixed else "") + ". Measured on: " + " | ".join(block["data"]) + ".")


def markdown(probe: str, resources: Path = RESOURCES) -> list[str]:
    """The report's "Published figures" block for a probe: each (paper, table) under its own label, as the
    paper printed it; [] when there is nothing to show."""
    rows = load(probe, resources)
    if not rows:
        return []
    parts = ["## Published figures (the papers' own tables, for reference)", "",
             f"Transcribed from the seed papers (`resources/{probe}/{FILE_NAME}`): other models, measured on "
             "the papers' data, without intervals. They are not part of this run's tables above.", ""]
    for b in blocks(rows):
        parts += [f"### Published: {b['paper']}, {b['table']}", "", caption(b), ""]
        parts += ["| model | " + " | ".join(b["columns"]) + " |", "|" + "---|" * (len(b["columns"]) + 1)]
        parts += ["| " + " | ".join(r) + " |" for r in b["rows"]]
        parts += [""] + [f"Note: {n}" for n in b["notes"]] + ([""] if b["notes"] else [])
    return parts

