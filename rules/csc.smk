# The Concept Separation Curves probe (methods.md §1), on the probe contract (docs/adding-a-probe.md):
#   perturb     its texts: fuzzing / negation / grammatical negation variants of a corpus, and the
#               texts to embed, hash-partitioned so that each embedding job reads only its own
#   csc_score   similarities from the vector stores, KDE curves, overlap with bootstrapped CI
#   csc_plot, csc_aggregate   plots, the overlap table and the seed paper's Table 3 layout
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
    params:
        settings=CSC.perturb_settings,
        seed=SEED,
        partitions=PARTS,
        nltk=CSC.nltk_plan,
    shell:
        "python -m workflow_scripts.csc.perturb --corpus-dir {input:q} --settings {params.settings:q} --seed {params.seed:q}"
        " --partitions {params.partitions:q} --out-variants {output.variants:q} --out-texts {output.texts:q}"
        " --report {output.report:q} --workers {threads} --nltk {params.nltk:q} > {log:q} 2>&1"


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
    params:
        exact_max_n=config["csc"]["exact_kde_max_n"],
        grid_step=config["csc"]["grid_step"],
        bootstrap_b=config["csc"]["bootstrap_b"],
        bootstrap_groups=config["csc"]["bootstrap_groups"],
        seed=SEED,
        # what decides the model's vectors (not batch size or threads): the stores must match it
        spec=CSC.spec,
        out_dir=lambda wc: f"{R}/csc/{wc.corpus}/{wc.model}",
    shell:
        "python -m workflow_scripts.csc.curves score --variants-dir {input.variants:q} --stores {input.stores:q} --model {wildcards.model:q}"
        " --corpus {wildcards.corpus:q} --spec {params.spec:q} --exact-max-n {params.exact_max_n:q} --grid-step {params.grid_step:q}"
        " --bootstrap-b {params.bootstrap_b:q} --bootstrap-groups {params.bootstrap_groups:q} --seed {params.seed:q}"
        " --out-dir {params.out_dir:q} > {log:q} 2>&1"


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
    shell:
        "MPLBACKEND=Agg python -m workflow_scripts.csc.curves plot --curves {input.curves:q} --summary {input.summary:q}"
        " --png {output.png:q} --svg {output.svg:q} > {log:q} 2>&1"


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
    params:
        corpora=list(config["corpora"]),
        models=list(config["models"]),
    shell:
        "python -m workflow_scripts.csc.curves aggregate --summaries {input:q} --out {output.overlap:q} --table3 {output.table3:q}"
        " --corpora {params.corpora:q} --models {params.models:q} > {log:q} 2>&1"
