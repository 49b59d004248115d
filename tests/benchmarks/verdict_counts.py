"""How a finished run's verdicts distribute over the words, per probe (issues 43, 44), from its first
screen (<results>/report/overview.json): every headline cell of a model that is not the baseline.

Usage: python tests/benchmarks/verdict_counts.py RESULTS [RESULTS_BEFORE]
With a second folder (the same study run by an earlier commit), also the cells whose word changed,
as `before -> after` counts. Reads only the JSON, so it works for any commit's first screen.
"""
import json
import sys
from collections import Counter
from pathlib import Path


def words(results: Path) -> dict[tuple[str, str], str]:
    """(figure column, model) -> the cell's verdict as the screen says it (`vs chance: ...` where
    the baseline is degenerate), for every cell that is not a baseline's own."""
    screen = json.loads((results / "report" / "overview.json").read_text())
    out = {}
    for row in screen["rows"]:
        for model, cell in row["cells"].items():
            verdict = cell.get("verdict") or {}
            if cell.get("value") is None or str(verdict.get("reason", "")).startswith("baseline") \
                    and not verdict.get("reference"):
                continue
            ref = verdict.get("reference")
            out[(row["column"], model)] = f"vs {ref['name']}: {ref['verdict']}" if ref else verdict["verdict"]
    return out


def table(counts: Counter, title: str) -> None:
    print(f"{title} ({sum(counts.values())} cells)")
    for word, n in counts.most_common():
        print(f"  {n:4d}  {word}")


def main() -> None:
    after = words(Path(sys.argv[1]))
    table(Counter(after.values()), f"verdicts in {sys.argv[1]}")
    if len(sys.argv) > 2:
        before = words(Path(sys.argv[2]))
        table(Counter(before.values()), f"verdicts in {sys.argv[2]}")
        changed = Counter(f"{before[k]} -> {after[k]}" for k in before.keys() & after.keys() if before[k] != after[k])
        table(changed, "changed word (same figure and model)")
        gone, new = before.keys() - after.keys(), after.keys() - before.keys()
        if gone or new:
            print(f"figures only before: {len(gone)}; only after: {len(new)} (headline statistics that changed)")


if __name__ == "__main__":
    main()
