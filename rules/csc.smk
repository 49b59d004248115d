# The Concept Separation Curves probe (methods.md §1), on the probe contract (docs/adding-a-probe.md):
#   perturb         its texts: fuzzing / negation / grammatical negation variants of a corpus, and
#                   the texts to embed, hash-partitioned so that each embedding job reads only its own
#   csc_score       similarities from the vector stores, KDE curves, overlap with bootstrapped CI
#   csc_plot        a (corpus, model)'s curves and their shared area
#   csc_aggregate   the overlap table and the seed paper's Table 3 layout
# Code: workflow_scripts/csc/ (declaration: probe.py, planning: plan.py); config: the `csc` section.
CSC = PLANS["csc"]


rule perturb:
    input:
        f"{R}/corpora/{{corpus}}",
    output:
        variants=directory(f"{R}/perturbations/{{corpus}}"),
        texts=expand(f"{R}/texts/{{{{corpus}}}}/part-{{part}}.parquet", part=PART_IDS),
        report=f"{R}/reports/perturb/{{corpus}}.json",
    log:
        log_path("perturb", "{corpus}"),
    benchmark:
        bench_path("perturb", "{corpus}")
    priority: CHAIN_HEAD_PRIORITY
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("perturb")
    resources:
        **RESOURCES.sized("perturb"),
    params:
        **job_params("csc.perturb:run_perturb"),
        settings=CSC.perturb_settings,
        seed=SEED,
        partitions=PARTS,
        # what the grammatical negation was planned with: the job refuses other NLTK resources
        nltk=CSC.nltk_plan,
    script:
        "../workflow_scripts/run_job.py"


rule csc_score:
    input:
        variants=f"{R}/perturbations/{{corpus}}",
        stores=CSC.stores,
    output:
        similarities=f"{R}/csc/{{corpus}}/{{model}}/similarities.parquet",
        curves=f"{R}/csc/{{corpus}}/{{model}}/curves.parquet",
        summary=f"{R}/csc/{{corpus}}/{{model}}/summary.json",
        replicates=f"{R}/csc/{{corpus}}/{{model}}/replicates.parquet",
    log:
        log_path("csc_score", "{corpus}", "{model}"),
    benchmark:
        bench_path("csc_score", "{corpus}", "{model}")
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("csc_score")
    resources:
        **RESOURCES.sized("csc_score"),
    params:
        **job_params("csc.curves:run_csc_score"),
        exact_max_n=config["csc"]["exact_kde_max_n"],
        grid_step=config["csc"]["grid_step"],
        kde_covariance_factor=config["csc"]["kde_covariance_factor"],
        bootstrap_b=config["csc"]["bootstrap_b"],
        bootstrap_groups=config["csc"]["bootstrap_groups"],
        seed=SEED,
        # what decides the model's vectors (not batch size or threads): the stores must match it
        spec=CSC.spec,
    script:
        "../workflow_scripts/run_job.py"


rule csc_plot:
    input:
        curves=f"{R}/csc/{{corpus}}/{{model}}/curves.parquet",
        summary=f"{R}/csc/{{corpus}}/{{model}}/summary.json",
    output:
        png=report(
            f"{R}/plots/csc/{{corpus}}/{{model}}.png",
            category=REPORT_CATEGORY["csc"],
            subcategory="{corpus}",
            caption="../resources/csc/report/curve.rst",
            labels={"corpus": "{corpus}", "model": "{model}"},
        ),
        svg=f"{R}/plots/csc/{{corpus}}/{{model}}.svg",
    log:
        log_path("csc_plot", "{corpus}", "{model}"),
    localrule: True
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("csc_plot")
    resources:
        **RESOURCES.sized("csc_plot"),
    params:
        **job_params("csc.plots:run_csc_plot"),
    script:
        "../workflow_scripts/run_job.py"


rule csc_aggregate:
    input:
        CSC.summaries(),
    output:
        overlap=f"{R}/tables/csc_overlap.csv",
        table3=f"{R}/tables/csc_table3.csv",
    log:
        log_path("csc_aggregate", "all"),
    localrule: True
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("csc_aggregate")
    resources:
        **RESOURCES.sized("csc_aggregate"),
    params:
        **job_params("csc.tables:run_csc_aggregate"),
        corpora=list(config["corpora"]),
        models=list(config["models"]),
        # the margin of each condition's within-sentence AUC: its separation (W) against chance
        margins=CSC.within_margins,
    script:
        "../workflow_scripts/run_job.py"
