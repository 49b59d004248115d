"""Declaration of the Montague modifier probe (Carvalho et al., seed 004; methods.md §5):
workflow_scripts/probes.py."""
from workflow_scripts.probes import Headline, Probe, Resources, TextSet, headline_rows


TEST_NAMES = {"single": "single-phrase intersectivity", "pair": "phrase-pair intersectivity",
              "nonsubsective": "non-subsectivity"}
UNIT = "nouns or adjectives"  # the fewer of the crossed factors, per role
TABLE_KIND = {"single": "AN", "pair": "pair", "nonsubsective": "AN"}  # where a table has no kind column


def consistency_headlines(test: str, key: str, kind: str | None = None):
    """Montague consistency of one test at one key (the per-key shares are the probe's figures; there
    is no pooled share per test, so the overview shows the key the test is about)."""
    def extract(frame, options: dict) -> list[dict]:
        import polars as pl

        rows = frame.filter(pl.col("key") == key)
        if kind is not None and "kind" in rows.columns:
            rows = rows.filter(pl.col("kind") == kind)
        return headline_rows(rows, lambda r: f"montague_{r['dataset']}_{test}_{key.replace('|', '_')}",
                             lambda r: f"Montague {r['dataset']}, {TEST_NAMES[test]} ({key.replace('|', ' vs ')})",
                             "consistency", "ci_low", "ci_high",
                             # the independent units: the fewest nouns or adjectives of a role
                             # (scores.unit_interval); tables written before them count the phrases
                             n=lambda r: r.get("n_units", r.get("n")), dataset="dataset",
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
    n_note="Montague: the fewest nouns or adjectives of a role behind a share (a crossed design)",
    # n: the independent units of the crossed design nouns x adjectives, the fewest levels of a factor
    # (per adjective role) behind the share, not its phrases (scores.unit_interval)
    headlines=(Headline("montague_single.csv", consistency_headlines("single", "intersective", kind="AN"),
                        statistics=("single/AN/intersective",), unit=UNIT),
               Headline("montague_pair.csv", consistency_headlines("pair", "intersective|privative"),
                        statistics=("pair/pair/intersective|privative",), unit=UNIT),
               Headline("montague_nonsubsective.csv", consistency_headlines("nonsubsective", "privative"),
                        statistics=("nonsubsective/AN/privative",), unit=UNIT)),
    directions=(("*", "higher"),),  # consistency and the mean of noun means: shares that pass
    margins=(("*", 0.10,
              "10 share points: the published consistencies of single-phrase intersectivity differ between model "
              "families by 0.07-0.33 (LaBSE, GloVe 1.0; DPR 0.86-0.97; NV-Embed-v2 0.67-0.85), and a share within "
              "0.10 of chance or of its ceiling is no distinct behaviour at the lists' 6-12 nouns"),),
    # the surface-form baseline's distances tie by construction (d(AN, A) = d(AN, N), every pair
    # distance 0.5): its single share is 1 and its pair and non-subsective shares 0 whatever the data,
    # so where its figure never varies a model is compared with what the test itself makes of it
    references=(("single/*", 1.0, "ceiling"), ("pair/*", 0.5, "chance"), ("nonsubsective/*", 0.5, "chance")),
    shares=("*",),
)
