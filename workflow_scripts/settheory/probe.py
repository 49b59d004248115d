"""Declaration of the set-theoretic compositionality probe (seed 001; methods.md §2):
workflow_scripts/probes.py."""
from workflow_scripts.probes import Headline, Probe, Resources, TextSet, headline_rows

# the fields of a fusion prompt's user template: the two sentences to fuse
FUSION_FIELDS = ("first", "second")


def check(config: dict) -> list[str]:
    """The `settheory` section: what the schema cannot say (sample sets, generators, prompts, bounds)."""
    problems = []
    st = config.get("settheory")
    if not st:
        return problems
    articles = config.get("articles") or {}
    from workflow_scripts.settheory.defaults import DEFAULT_GENERATORS, DEFAULT_PROMPTS
    generators = {**DEFAULT_GENERATORS, **st.get("generators", {})}
    prompts = {**DEFAULT_PROMPTS, **st.get("prompts", {})}
    from workflow_scripts.generator import template_problems
    for name, prompt in st.get("prompts", {}).items():
        # the job fills them (generator.fill): a bad template must stop the plan, naming its key
        texts = [("system", prompt.get("system"), ())] + [
            (f"shots.{i}.{j}", text, ()) for i, shot in enumerate(prompt.get("shots", [])) for j, text in enumerate(shot)]
        texts.append(("user", prompt["user"], FUSION_FIELDS))
        for where, text, fields in texts:
            for problem in template_problems(text, fields) if isinstance(text, str) else []:
                problems.append(f"config key `settheory.prompts.{name}.{where}`: {problem}"
                                + ("" if fields else "; the system text and shots take no field"))
    for name, d in st["datasets"].items():
        key = f"settheory.datasets.{name}"
        if name == "samples":
            problems.append(f"config key `{key}`: `samples` is reserved (results/settheory/samples/ holds every "
                            "sample set's table); expected another name")
        if ("file" in d) == ("articles" in d):
            problems.append(f"config key `{key}`: needs exactly one of `articles` (build the samples from an "
                            "article collection) or `file` (import a table of samples)")
            continue
        if "file" in d:
            if "max_articles" in d:
                problems.append(f"config key `{key}.max_articles`: an imported sample set (`file`) reads no articles")
            continue
        for other in ("format", "columns"):
            if other in d:
                problems.append(f"config key `{key}.{other}`: only an imported sample set (`file`) takes `{other}`")
        if d["articles"] not in articles:
            problems.append(f"config key `{key}.articles`: no collection {d['articles']!r} under `articles` "
                            f"(configured: {sorted(articles) or 'none'})")
        if d.get("generator", "smollm2") not in generators:
            problems.append(f"config key `{key}.generator`: no generator {d['generator']!r} (settheory.generators "
                            f"and the built-in: {', '.join(sorted(generators))})")
        if d.get("prompt", "fuse_fewshot") not in prompts:
            problems.append(f"config key `{key}.prompt`: no prompt {d['prompt']!r} (settheory.prompts and the "
                            f"built-in: {', '.join(sorted(prompts))})")
        if d.get("generator", "smollm2") in generators:
            from workflow_scripts.generator import api_key_problem
            problem = api_key_problem(d.get("generator", "smollm2"), generators[d.get("generator", "smollm2")])
            where = f"config key `settheory.generators.{d.get('generator', 'smollm2')}.api_key_env`"
            if problem and not any(p.startswith(where) for p in problems):
                problems.append(f"{where}: {problem}")
        if d["min_words"] > d["max_words"]:
            problems.append(f"config key `{key}`: min_words {d['min_words']} > max_words {d['max_words']}")
    problems += filter_problems(config)
    for criterion, per_measure in st["fixed_bounds"].items():
        for measure, bounds in per_measure.items():
            for pair in ([bounds] if criterion == "c4" else bounds):
                if not pair[0] < pair[1]:
                    problems.append(f"config key `settheory.fixed_bounds.{criterion}.{measure}`: {pair} is not "
                                    "[low, high] with low < high")
    return problems


def filter_problems(config: dict) -> list[str]:
    """The sample filter must not select on a compared model (issue 43, point 6): samples kept by one
    model's own cos(B, D) < threshold favour that model. A filter encoder is refused where it runs
    this probe, or where its vectors are those of a model that does (the same entry under another
    name)."""
    from workflow_scripts.common import vector_settings

    models = config["models"]
    compared = {m: vector_settings(spec) for m, spec in models.items()
                if "settheory" in spec.get("probes", ["settheory"])}
    problems = []
    for encoder in config["settheory"]["filter"]["encoders"]:
        if encoder not in models:
            problems.append(f"config key `settheory.filter.encoders`: no model {encoder!r} under `models`")
            continue
        copy = next((m for m, v in compared.items() if v == vector_settings(models[encoder])), None)
        if encoder in compared or copy is not None:
            what = "is compared on settheory" if encoder in compared else f"gives the vectors of {copy!r}, which is compared"
            problems.append(f"config key `settheory.filter.encoders`: {encoder!r} {what}: a filter on a compared "
                            "model keeps the samples that favour it; expected an encoder the study does not compare "
                            "on settheory (a model whose `probes` leave settheory out), or `[]` (no filter)")
    return problems


def share_statistics(options: dict) -> tuple[str, ...]:
    """The replicates' statistics of the headline figures: C1 and C3 of (T,T) under the headline measure."""
    measure = options.get("settheory_measure", "cosine")
    return (f"c1/{measure}/T,T", f"c3/{measure}/T,T")


def share_headlines(frame, options: dict) -> list[dict]:
    """Set-theoretic C1 and C3 shares of the (T,T) case per sample set, under the headline measure."""
    import polars as pl

    measure = options.get("settheory_measure", "cosine")
    rows = frame.filter(pl.col("criterion").is_in(["c1", "c3"]) & (pl.col("case") == "T,T")
                        & (pl.col("measure") == measure))
    return headline_rows(rows, lambda r: f"settheory_{r['sampleset']}_{r['criterion']}_TT",
                         lambda r: f"set theory {r['sampleset']} {r['criterion'].upper()} (T,T)", "share", "ci_low",
                         # the bootstrap resamples the samples (clusters of fusions), so n counts them
                         "ci_high", n="n_samples",
                         dataset="sampleset", statistic=lambda r: f"{r['criterion']}/{measure}/T,T")


PROBE = Probe(
    name="settheory",
    title="Set-theoretic compositionality",
    order=50,
    plan="workflow_scripts.settheory.plan:SettheoryPlan",
    summary="Shares of operator samples (TextOverlap, TextDifference, TextUnion of generated fusions) that meet "
            "the criteria C1-C6 under each measure, with bootstrapped 95% intervals.",
    rules={
        "settheory_samples": Resources(threads=2, mem_mb=4000, runtime=240, heavy=True),
        "settheory_filter": Resources(threads=1, mem_mb=2000, runtime=30, heavy=True),
        "settheory_measures": Resources(threads=1, mem_mb=3000, runtime=60, heavy=True),
        "settheory_aggregate": Resources(threads=1, mem_mb=2000, runtime=30),
    },
    check=check,
    tables=tuple((f"settheory_c{i}.csv", "Tables", "criteria.rst") for i in range(1, 7))
    + (("settheory_shares.csv", "Tables", "shares.rst"),
       ("settheory_histograms.csv", "Tables", "histograms.rst")),
    # a page per sample set: 20 accepted and 10 rejected fusions beside their inputs (the quality gate)
    dataset_tables=(("settheory_fusions_{dataset}.csv", "fusions.rst"),),
    text_sets=(TextSet("settheory_samples"),),
    n_note="set theory: samples",
    headlines=(Headline("settheory_shares.csv", share_headlines, statistics=share_statistics, unit="samples"),),
    # the (T,T) shares: fusions whose embedding satisfies the criterion; the other cases describe
    directions=(("c1/*/T,T", "higher"), ("c3/*/T,T", "higher")),
    margins=(("*", 0.05,
              "5 share points: no value of the seed's tables survives extraction, so the margin is the accuracy "
              "margin of the triplet probe in the same units (a share of samples); the default run's spread of "
              "C1/C3 shares between models is 0.04-0.12"),),
)
