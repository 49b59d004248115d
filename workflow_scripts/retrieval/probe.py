"""Declaration of the retrieval probe (seed 003; methods.md §4): workflow_scripts/probes.py."""
from workflow_scripts.probes import Headline, NltkNeeds, Probe, Resources, TextSet, headline_rows

# Keys each kind of retrieval set reads (workflow_scripts/retrieval/sets.py SPEC_KEYS, plus the
# probe's own `eval_split`), and the qrels splits each built kind writes (None: the user's).
KIND_KEYS = {
    "beir": {"kind", "path", "url", "sha256", "splits", "eval_split"},
    "3gpp": {"kind", "sources", "specs", "questions", "teleqna", "generator", "eval_split"},
    "msrp": {"kind", "path", "url", "sha256", "eval_split"},
    "tatoeba": {"kind", "path", "url", "sha256", "columns", "eval_split"},
}
KIND_SPLITS = {"beir": None, "3gpp": ("train", "test"), "msrp": ("test",), "tatoeba": ("test",)}


def check(config: dict) -> list[str]:
    if "retrieval" not in config:
        return []
    retrieval = config["retrieval"]
    problems = []

    def location(key: str, entry: dict) -> None:
        has_path, has_url = "path" in entry, "url" in entry or "sha256" in entry
        if has_path == has_url or (has_url and not ("url" in entry and "sha256" in entry)):
            problems.append(f"config key `{key}`: needs `path` (a local file or folder), or `url` with `sha256`")

    for name, d in retrieval["datasets"].items():
        key, kind = f"retrieval.datasets.{name}", d["kind"]
        for extra in sorted(set(d) - KIND_KEYS[kind]):
            problems.append(f"config key `{key}.{extra}`: a {kind} set does not read `{extra}` (it reads "
                            f"{', '.join(sorted(KIND_KEYS[kind] - {'kind'}))})")
        if kind == "3gpp":
            if "sources" not in d:
                problems.append(f"config key `{key}.sources`: a 3gpp set needs sources: {{path: <clauses .jsonl or "
                                "folder>}, or {url, sha256}")
            else:
                location(f"{key}.sources", d["sources"])
            methods = d.get("questions", ["templates"])
            for method in ("teleqna", "generator"):
                if method in d and method not in methods:
                    problems.append(f"config key `{key}.{method}`: settings for `{method}` questions, but "
                                    f"`questions` ({', '.join(methods)}) does not ask for them")
            if "teleqna" in methods:
                if "teleqna" not in d:
                    problems.append(f"config key `{key}.teleqna`: `teleqna` questions need the release: "
                                    "{path: <TeleQnA zip>} or {url, sha256}")
                else:
                    location(f"{key}.teleqna", {k: v for k, v in d["teleqna"].items() if k in ("path", "url", "sha256")})
        else:
            location(key, {k: v for k, v in d.items() if k in ("path", "url", "sha256")})
        splits = KIND_SPLITS[kind] or d.get("splits")
        wanted = d.get("eval_split", retrieval["eval_split"])
        for split in [wanted] if isinstance(wanted, str) else wanted:
            if splits is not None and split not in splits:
                where = f"{key}.eval_split" if "eval_split" in d else "retrieval.eval_split"
                problems.append(f"config key `{where}`: set {name!r} ({kind}) has no split {split!r}; expected one of "
                                f"{', '.join(splits)}")
    k = retrieval["k"]
    if k["min"] > k["max"]:
        problems.append(f"config key `retrieval.k`: min {k['min']} > max {k['max']}")
    elif k["max"] > retrieval["top_k"]:
        problems.append(f"config key `retrieval.k.max`: {k['max']} needs at least {k['max']} retrieved documents, "
                        f"but `retrieval.top_k` is {retrieval['top_k']}")
    ks = range(k["min"], k["max"] + 1, k["step"])
    if retrieval["table_k"] not in ks:
        problems.append(f"config key `retrieval.table_k`: {retrieval['table_k']} is not among the k of `retrieval.k` "
                        f"({', '.join(map(str, ks))})")
    return problems


def accuracy_statistics(options: dict) -> tuple[str, ...]:
    """The replicates' statistics of the headline figures: accuracy and NDCG at the table k."""
    k = int(options.get("retrieval_k", 5))
    return (f"accuracy@{k}", f"ndcg@{k}")


def accuracy_headlines(frame, options: dict) -> list[dict]:
    """Retrieval accuracy@k and NDCG@k per set, at the probe's table k, over all questions: the
    full-data figure with its interval (accuracy: Wilson's over the questions; NDCG: the classic
    bootstrap), the figure the paired comparisons test, so that the first screen's value and its
    difference from the baseline subtract on one row (issue 43, point 7). The mean and spread over
    the paper's draws stay in the probe's tables."""
    import polars as pl

    k = int(options.get("retrieval_k", 5))
    rows = frame.filter(pl.col("k").cast(pl.Int64) == k).rename({"set": "dataset"})
    return [row for metric, name, title in (("accuracy", f"acc@{k}", f"accuracy@{k}"), ("ndcg", f"ndcg@{k}", f"NDCG@{k}"))
            for row in metric_headlines(rows, metric, name, title, k)]


def metric_headlines(rows, metric: str, name: str, title: str, k: int) -> list[dict]:
    """One metric's headline rows at k (accuracy_headlines)."""
    figure = f"{metric}_full"
    return headline_rows(rows, lambda r: f"retrieval_{r['dataset']}_{name}",
                         lambda r: f"retrieval {r['dataset']}: {title}, all questions",
                         figure, f"{figure}_ci_low", f"{figure}_ci_high", n="n_queries",
                         # the replicates' statistic (paired classic bootstrap of the full-data figure)
                         dataset="dataset", statistic=lambda r: f"{metric}@{k}")


PROBE = Probe(
    name="retrieval",
    title="Retrieval",
    order=40,
    plan="workflow_scripts.retrieval.plan:RetrievalPlan",
    summary="Exact top-k search of every evaluated question over its set's documents: accuracy@k and NDCG@k "
            "as the mean over the paper's draws of questions with the spread of the draws (2.5th-97.5th "
            "percentile, the paper's definition: not a confidence interval), and over all questions with a "
            "bootstrapped 95% interval (the paired comparisons use these); similarity thresholds, COE/ROE and "
            "isotropy.",
    rules={
        "retrieval_build": Resources(threads=1, mem_mb=4000, runtime=60, heavy=True),
        "retrieval_query_texts": Resources(threads=1, mem_mb=2000, runtime=10),
        "retrieval_search": Resources(threads=2, mem_mb=4000, runtime=120, heavy=True),
        "retrieval_isotropy": Resources(threads=2, mem_mb=4000, runtime=240, heavy=True),
        "retrieval_metrics": Resources(threads=1, mem_mb=2000, runtime=30, heavy=True),
        "retrieval_aggregate": Resources(threads=1, mem_mb=2000, runtime=10),
    },
    check=check,
    nltk=NltkNeeds(by_dataset_kind={"3gpp": ("punkt_tab",)}),  # 3GPP text is split into sentences with punkt
    tables=tuple((f"retrieval_table{i}.csv", "Tables", f"table{i}.rst") for i in (1, 2, 3))
    + (("retrieval_isotropy.csv", "Tables", "isotropy.rst"),
       ("retrieval_correlations.csv", "Tables", "correlations.rst"),
       ("retrieval_accuracy.csv", "Tables", "accuracy.rst")),
    # a set's questions (`<set>.query`) are embedded as queries, the texts they search as documents
    text_sets=(TextSet("retrieval_query_texts", "*.query", role="query"), TextSet("retrieval_build", role="document")),
    n_note="questions",
    headlines=(Headline("retrieval_accuracy.csv", accuracy_headlines, statistics=accuracy_statistics,
                        unit="questions"),),
    margins=(("accuracy@*", 0.05,
              "5 points of top-k accuracy: the seed's fine-tuning gain is 15 points (66.87 -> 81.61) and its draws' "
              "interval widths 14-17 points; a smaller difference is within what the paper's own resampling moves"),
             ("ndcg@*", 0.03,
              "3 NDCG points: binary NDCG@k weighs a hit at rank r by 1/log2(1 + r), so a 5-point change of "
              "accuracy at ranks 2-5 moves NDCG by 2-3 points")),
    shares=("accuracy@*",),
    directions=(("*accuracy@*", "higher"), ("*ndcg@*", "higher")),
)
