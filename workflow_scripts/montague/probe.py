"""Declaration of the Montague modifier probe (Carvalho et al., seed 004; methods.md §5):
workflow_scripts/probes.py."""
from workflow_scripts.probes import Headline, Probe, Resources, TextSet, headline_rows


TABLE_KIND = {"single": "AN", "pair": "pair", "nonsubsective": "AN"}  # where a table has no kind column


def exact_at_the_bounds(r: dict) -> str:
    """The first screen's note where a share of 0 or 1 carries the exact interval (scores.bounded_interval)."""
    if r.get("ci_method") == "clopper_pearson_min_factor":
        return ("exact (Clopper-Pearson) interval where the share is 0 or 1, over n = the fewer of the distinct "
                "adjectives and nouns (a conservative effective n for the crossed design)")
    return ""


def consistency_headlines(test: str, key: str, kind: str | None = None):
    """Montague consistency of one test at one key (the per-key shares are the probe's figures; there
    is no pooled share per test, so the overview shows the key the test is about)."""
    def extract(frame, options: dict) -> list[dict]:
        import polars as pl

        rows = frame.filter(pl.col("key") == key)
        if kind is not None and "kind" in rows.columns:
            rows = rows.filter(pl.col("kind") == kind)
        return headline_rows(rows, lambda r: f"montague_{r['dataset']}_{test}_{key.replace('|', '_')}",
                             lambda r: f"Montague {r['dataset']} {test} ({key})", "consistency", "ci_low", "ci_high",
                             n="n", interval=exact_at_the_bounds, dataset="dataset",
                             # the figure's statistic in the replicates (scores.share_rows)
                             statistic=lambda r: f"{test}/{r.get('kind') or TABLE_KIND[test]}/{key}")
    extract.__doc__ = f"Montague {test} consistency, key {key}."
    return extract


PROBE = Probe(
    name="montague",
    title="Montague modifiers",
    order=30,
    plan="workflow_scripts.montague.plan:MontaguePlan",
    summary="Share of adjective-noun phrases whose distances behave as Montague's modifier types predict "
            "(single, pair and non-subsective tests), with bootstrapped 95% intervals.",
    rules={
        "montague_phrases": Resources(threads=1, mem_mb=1000, runtime=10),
        "montague_score": Resources(threads=1, mem_mb=3000, runtime=60, heavy=True),
        "montague_aggregate": Resources(threads=1, mem_mb=1000, runtime=10),
    },
    tables=(("montague_single.csv", "Tables", "single.rst"),
            ("montague_pair.csv", "Tables", "pair.rst"),
            ("montague_nonsubsective.csv", "Tables", "nonsubsective.rst")),
    text_sets=(TextSet("montague_phrases"),),
    n_note="Montague: phrases, resampled by adjective and noun",
    # n: the phrases (pairs of phrases) behind a share; the bootstrap draws their nouns and adjectives
    # (two-way), so a phrase is not resampled alone
    headlines=(Headline("montague_single.csv", consistency_headlines("single", "intersective", kind="AN"),
                        statistics=("single/AN/intersective",), unit="phrases (adjectives x nouns)"),
               Headline("montague_pair.csv", consistency_headlines("pair", "intersective|privative"),
                        statistics=("pair/pair/intersective|privative",), unit="phrase pairs (adjectives x nouns)"),
               Headline("montague_nonsubsective.csv", consistency_headlines("nonsubsective", "privative"),
                        statistics=("nonsubsective/AN/privative",), unit="phrases (adjectives x nouns)")),
    directions=(("*", "higher"),),  # consistency and the mean of noun means: shares that pass
)
