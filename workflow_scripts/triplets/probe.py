"""Declaration of the sentence-triplet probe (Zhu, Li & de Melo, seed 002; methods.md §3):
workflow_scripts/probes.py."""
from workflow_scripts.probes import Headline, NltkNeeds, Probe, Resources, TextSet, headline_rows

# The source formats each kind of triplet dataset can be built from (methods.md §3).
SOURCE_FORMATS = {
    "negation_detection": {"sick", "msrp", "treebank", "lines"},
    "negation_variants": {"sick", "msrp", "treebank", "lines"},
    "clause_relatedness": {"msrp", "treebank", "lines"},
    "argument_sensitivity": set(),  # templates
    "fixed_point_reorder": {"sick"},  # needs SICK's pairs, labels and relatedness
}


def check(config: dict) -> list[str]:
    if "triplets" not in config:
        return []
    triplets = config["triplets"]
    problems = []
    sources = triplets.get("sources", {})
    for name in sorted(set(sources) & set(config.get("sources") or {})):
        problems.append(f"config key `triplets.sources.{name}`: the name is taken by `sources.{name}`; "
                        "expected a name of its own (downloads are kept per source name)")
    for name, d in triplets["datasets"].items():
        key = f"triplets.datasets.{name}"
        if "file" in d:
            for other in ("kind", "sources", "max_triplets"):
                if other in d:
                    problems.append(f"config key `{key}.{other}`: a dataset read from `file` is not built; "
                                    f"drop `{other}` or `file`")
            continue
        for other in ("format", "columns", "scoring"):
            if other in d:
                problems.append(f"config key `{key}.{other}`: only a dataset read from `file` takes `{other}`")
        kind = d.get("kind", name)
        if kind not in SOURCE_FORMATS:
            problems.append(f"config key `{key}`: {name!r} is not a built-in dataset; expected `kind: <one of "
                            f"{', '.join(SOURCE_FORMATS)}>` or `file: <your triplets>`")
            continue
        allowed = SOURCE_FORMATS[kind]
        if not allowed:
            if d.get("sources"):
                problems.append(f"config key `{key}.sources`: {kind} is built from templates "
                                "(triplets.templates), not from sources")
            continue
        if not d.get("sources"):
            problems.append(f"config key `{key}.sources`: {kind} needs sources: names under triplets.sources "
                            f"of format {', '.join(sorted(allowed))}")
        for src in d.get("sources", []):
            if src not in sources:
                problems.append(f"config key `{key}.sources`: no source {src!r} under triplets.sources")
            elif sources[src]["format"] not in allowed:
                problems.append(f"config key `{key}.sources`: {src!r} is a {sources[src]['format']} source; "
                                f"{kind} takes {', '.join(sorted(allowed))}")
    return problems


def resampled_count(r: dict):
    """n on the first screen: the units the bootstrap resampled (subjects for template clusters);
    tables written before the `unit` column count triplets."""
    return r.get("n_units", r.get("n"))


def resampled_unit(r: dict) -> str:
    """What n counts where the row resampled clusters ("subjects x verbs": n counts subjects)."""
    unit = r.get("unit") or ""
    return "" if unit in ("", "triplets") else unit


def accuracy_headlines(frame, options: dict) -> list[dict]:
    """Triplet accuracy per dataset."""
    return headline_rows(frame, lambda r: f"triplets_{r['dataset']}",
                         lambda r: f"triplets {r['dataset'].replace('_', ' ')}: accuracy",
                         "accuracy", "accuracy_ci_low", "accuracy_ci_high", n=resampled_count,
                         unit=resampled_unit,
                         dataset="dataset", statistic=lambda r: "accuracy")


PROBE = Probe(
    name="triplets",
    title="Sentence triplets",
    order=20,
    plan="workflow_scripts.triplets.plan:TripletsPlan",
    summary="Share of triplets (S, S+, S*) where cos(S, S+) > cos(S, S*) (Negation Variants: cos(S+, S*) above "
            "both), with bootstrapped 95% intervals.",
    rules={
        "triplets_build": Resources(threads=1, mem_mb=2000, runtime=30, heavy=True),
        "triplets_score": Resources(threads=1, mem_mb=2000, runtime=30, heavy=True),
        "triplets_aggregate": Resources(threads=1, mem_mb=1000, runtime=10),
    },
    check=check,
    # the transformations tag and lemmatise; the WSJ sample is a source format
    nltk=NltkNeeds(always=("averaged_perceptron_tagger_eng", "wordnet"), by_source_format={"treebank": ("treebank",)}),
    tables=(("triplets_overview.csv", "Tables", "overview.rst"),
            ("triplets_accuracy.csv", "Tables", "accuracy.rst")),
    dataset_tables=(("triplets_{dataset}.csv", "dataset.rst"),),
    text_sets=(TextSet("triplets_build"),),
    n_note="triplets",
    headlines=(Headline("triplets_accuracy.csv", accuracy_headlines, statistics=("accuracy",), unit="triplets"),),
    directions=(("accuracy", "higher"),),  # the mean cosines describe; neither way is better
    margins=(("accuracy", 0.05,
              "5 accuracy points: the seed's Tables 2-6 discuss differences between encoders of 10 to 80 points, "
              "and at the paper's sizes (445-674 triplets) about 5 points is the smallest difference a paired "
              "comparison can detect (MDE 0.05-0.07); Benavoli et al. (2017) take 1 point for classifiers on "
              "test sets a hundred times larger"),),
    shares=("accuracy",),  # right/wrong triplets: score intervals over the independent units
)
