"""Declaration of the Concept Separation Curves probe (seed 000; methods.md §1): workflow_scripts/probes.py."""
from workflow_scripts.probes import Headline, NltkNeeds, Probe, Resources, TextSet, headline_rows


def check(config: dict) -> list[str]:
    """Every corpus's language has fuzzing and negation terms; the grid step divides 2."""
    problems = []
    perturb = config["csc"]["perturb"]
    for name, c in (config.get("corpora") or {}).items():
        for key in ("fuzz_terms", "negation_terms"):
            if c["language"] not in perturb[key]:
                problems.append(f"config key `csc.perturb.{key}`: no terms for language {c['language']!r} "
                                f"(needed by corpus {name!r}); expected e.g. {{{c['language']}: [...]}}")
    step = config["csc"]["grid_step"]
    if abs(round(2.0 / step) * step - 2.0) > 1e-9:
        problems.append(f"config key `csc.grid_step`: {step} does not divide 2; expected a step that divides "
                        "2, e.g. 0.001 (the paper's 2001 points) or 0.0001")
    return problems


def uses_tagger(section: dict) -> bool:
    """Whether the grammatical negation is on for English and asks for the tagger (its defaults:
    all three)."""
    negation = (section.get("perturb") or {}).get("grammatical_negation") or {}
    return bool(negation.get("enabled", True) and "en" in negation.get("languages", ["en"])
                and negation.get("use_tagger", True))


def overlap_headlines(frame, options: dict) -> list[dict]:
    """CSC overlap per corpus and condition (lower = better separation of meaning from form)."""
    return headline_rows(frame, lambda r: f"csc_{r['corpus']}_{r['condition']}",
                         lambda r: f"CSC {r['corpus']} {r['condition'].replace('grammatical_negation', 'gram. negation')}",
                         "overlap", "overlap_ci_low", "overlap_ci_high",
                         # the resampling unit, not the variants nested in it (issue 32, point 6): the
                         # sentences (or hashed groups of them) behind the smaller of the two curves
                         n="n_units", unit=lambda r: r.get("unit") or "",
                         dataset="corpus", statistic=lambda r: f"{r['condition']}/overlap",
                         # the overlap is unsigned: where the negated variants sit no farther from the
                         # original than the fuzzed ones (gap <= 0), a low overlap separates the wrong
                         # way (first screen: W, never better than the baseline); tables written
                         # before the gap existed have no such column
                         extra=lambda r: {"wrong_direction": r.get("direction_ok") is False})


PROBE = Probe(
    name="csc",
    title="Concept Separation Curves",
    order=10,
    plan="workflow_scripts.csc.plan:CscPlan",
    summary="Overlap of the normalised densities of fuzzed and negated similarities (equation 2; lower = the "
            "two curves are better separated), with its bootstrapped 95% interval (original sentences resampled, "
            "their variants with them; n counts those sentences, not the variants). The overlap has no sign: the gap (mean fuzzed minus mean negated "
            "similarity) and AUC = P(fuzzed > negated) beside it say which way the curves separate; only a "
            "positive gap (negations pushed farther from the original than fuzzing) is separation of meaning "
            "from surface form, and a gap <= 0 is marked W.",
    needs_corpora=True,
    rules={
        "perturb": Resources(threads=1, mem_mb=3000, runtime=240, heavy=True),
        "csc_score": Resources(threads=1, mem_mb=3000, runtime=120, heavy=True),
        "csc_plot": Resources(threads=1, mem_mb=1000, runtime=10),
        "csc_aggregate": Resources(threads=1, mem_mb=500, runtime=10),
    },
    check=check,
    # they choose the method: without the tagger and WordNet the grammatical negation counts the
    # cases it cannot handle instead of negating them (csc/negation.py), other numbers; so missing
    # data stops the plan unless the config asks for the rules (`use_tagger: false`)
    nltk=NltkNeeds(optional=("averaged_perceptron_tagger_eng", "wordnet"), optional_if=uses_tagger,
                   switch="perturb.grammatical_negation.use_tagger", fallback="false",
                   methods=("English grammatical negation with NLTK's tagger and WordNet",
                            "English grammatical negation by rules only (sentences that need tags are counted, "
                            "not negated)")),
    tables=(("csc_table3.csv", "Tables", "table3.rst"), ("csc_overlap.csv", "Tables", "overlap.rst")),
    # it writes each corpus's text set: the originals and their variants, the variants also by corpus
    text_sets=(TextSet("perturb", corpus=True, variants="perturbations"),),
    shard_folders={"perturbations": ("perturbation shards of corpus {name}", "perturb")},
    n_note="CSC: original sentences, or hashed groups of them at corpus scale, for the smaller of the two curves",
    headlines=(Headline("csc_overlap.csv", overlap_headlines, lower_is_better=True, unit="sentences",
                       statistics=("*/overlap",)),),  # gap and AUC: exploratory rows, not verdicts
    # gap = mean fuzzed - mean negated similarity, auc = P(fuzzed > negated): higher separates more
    directions=(("*/overlap", "lower"), ("*/gap", "higher"), ("*/auc", "higher")),
    # the KDE overlap is biased (its resamples sit off the estimate): BCa, with a grouped jackknife
    # over the resampled sentences (groups); the gap (a difference of means) and the AUC (a
    # U statistic) are unbiased: percentile
    intervals=(("*/overlap", "bca"),),
)
