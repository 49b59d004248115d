# Shared stage: each probe's differences table (issue 26), the paired model comparisons of its
# statistics, for every probe that ran and writes replicates files (ProbePlan.replicate_files):
#   results/tables/<probe>_differences.csv   A - B with its paired 95% interval, p-value, its family
#                                            (confirmatory: each model vs the surface-form baseline on
#                                            a headline figure, Holm; exploratory: the rest, BH q),
#                                            the better model and, per confirmatory row, the verdict
#                                            word from its family-adjusted interval and the margin;
#                                            a share of right/wrong items with per-item files
#                                            (ProbePlan.outcome_entries: triplets' accuracy,
#                                            retrieval's accuracy@k) is tested by McNemar's exact test
#   results/tables/<probe>_ranks.csv         every model's rank confidence set per headline figure
# The pairs come from the config's `compare.against` (default: every model against the surface-form
# baselines and against the first listed model). Code: workflow_scripts/differences.py, paired_statistics.py.
COMPARED = {
    name: plan
    for name, plan in PLANS.items()
    if plan.ran and not plan.probe.is_stage and plan.replicate_files()
}


rule probe_differences:
    input:
        replicates=lambda wc: COMPARED[wc.probe].replicate_files(),
        # per-item right/wrong files of the shares (triplets' accuracy, retrieval's hits): McNemar's exact test
        outcomes=lambda wc: COMPARED[wc.probe].outcome_files(),
    output:
        differences=f"{R}/tables/{{probe}}_differences.csv",
        ranks=f"{R}/tables/{{probe}}_ranks.csv",
    log:
        log_path("probe_differences", "{probe}"),
    benchmark:
        bench_path("probe_differences", "{probe}")
    wildcard_constraints:
        # only the probes that ran (an empty study: a pattern that matches nothing)
        probe="|".join(COMPARED) or "(?!)",
    localrule: True
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("probe_differences")
    resources:
        **RESOURCES.sized("probe_differences"),
    params:
        **job_params("differences:run_probe_differences"),
        # the families decide the baselines; nothing else of a model's entry matters here. Only the
        # models that ran the probe, in config order: a model added for other probes leaves this
        # table as it was
        models=lambda wc: {
            m: {"family": spec["family"]}
            for m, spec in config["models"].items()
            if m in {p.model for p in COMPARED[wc.probe].pairs}
        },
        # against, family, error rates and the study's margins (compare.margins)
        compare=config["compare"],
        # which statistics are headline figures (retrieval's table k, ...): the confirmatory family
        headline_options=lambda wc: COMPARED[wc.probe].headline_options(),
        # {dataset, statistic, model, path[, cluster]} of each per-item file among the outcomes
        outcomes=lambda wc: COMPARED[wc.probe].outcome_entries(),
    script:
        "../workflow_scripts/run_job.py"
