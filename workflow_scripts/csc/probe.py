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


CONDITION_NAMES = {"negation": "inserted negation", "grammatical_negation": "grammatical negation"}


def within_auc_headlines(frame, options: dict) -> list[dict]:
    """CSC per corpus and condition: the within-sentence AUC (higher = negations pushed farther from
    the original than fuzzing, each sentence weighing the same; 1/2 = no separation), the statistic
    the verdict rests on: it does not depend on the KDE's bandwidth, as the overlap does."""
    return headline_rows(frame, lambda r: f"csc_{r['corpus']}_{r['condition']}",
                         lambda r: f"CSC {r['corpus']}, {CONDITION_NAMES.get(r['condition'], r['condition'])}: "
                                   "within-sentence AUC",
                         "within_auc", "within_auc_ci_low", "within_auc_ci_high",
                         # the sentences with both a fuzzed and a negated variant (the AUC's units; at
                         # corpus scale the bootstrap draws hashed groups of them, still sentences here)
                         n=lambda r: r.get("n_within", r.get("n_units")),
                         unit=lambda r: "sentences" if r.get("n_within") is not None else r.get("unit") or "",
                         dataset="corpus", statistic=lambda r: f"{r['condition']}/within_auc",
                         # where the within-sentence AUC is below 1/2 by the margin, the negations sit
                         # closer to the original than fuzzing: W, never better than the baseline
                         extra=lambda r: {"wrong_direction": r.get("separation") == "wrong"})


PROBE = Probe(
    name="csc",
    title="Concept Separation Curves",
    order=10,
    plan="workflow_scripts.csc.plan:CscPlan",
    summary="Overlap of the normalised densities of fuzzed and negated similarities (equation 2, the paper's "
            "figure; lower = the two curves are better separated), with its bootstrapped 95% interval (original "
            "sentences resampled, their variants with them; n counts those sentences, not the variants) and the "
            "KDE bandwidth it rides on. The overlap has no sign, and pooled over variants it weighs short "
            "sentences more in the fuzzed curve (2n fuzzing against n negation candidates); the verdict rests on "
            "the within-sentence AUC instead: per sentence, P(a fuzzed variant is closer to the original than a "
            "negated one), averaged over the sentences that have both, 1/2 meaning no separation. Below 1/2 by "
            "the margin the curves separate the wrong way (mark W).",
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
    headlines=(Headline("csc_overlap.csv", within_auc_headlines, lower_is_better=False, unit="sentences",
                        statistics=("*/within_auc",)),),  # the overlap, pooled gap and AUC: exploratory rows
    # gap = mean fuzzed - mean negated similarity, auc = P(fuzzed > negated): higher separates more
    directions=(("*/overlap", "lower"), ("*/gap", "higher"), ("*/auc", "higher"), ("*/within_gap", "higher"),
                ("*/within_auc", "higher")),
    margins=(("*/within_auc", 0.05,
              "AUC units: 0.556 is Cohen's small effect d = 0.2 as an AUC (Rice & Harris 2005), so a difference "
              "below 0.05 is less than a small effect"),
             ("*/auc", 0.05, "as the within-sentence AUC"),
             ("*/overlap", 0.05,
              "below 0.05 the overlap moves with the KDE bandwidth: MiniLM - form_only on pc_nl is +0.129 / +0.041 "
              "/ -0.018 at covariance factors 0.1 / 0.2 / 0.3 (issue 43)")),
    # AUC's chance level: the direction check of the within-sentence AUC, and the comparator where
    # the baseline's AUC never varies
    references=(("*/within_auc", 0.5, "chance"),),
    separations=("*/within_auc",),
    # the KDE overlap is biased (its resamples sit off the estimate): BCa, with a grouped jackknife
    # over the resampled sentences (groups); the gap (a difference of means) and the AUC (a
    # U statistic) are unbiased: percentile
    intervals=(("*/overlap", "bca"),),
)
