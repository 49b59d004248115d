# The Concept Separation Curves probe (methods.md §1), on the probe contract (README, "Probes"):
#   perturb     its texts: fuzzing / negation / grammatical negation variants of a corpus, and the
#               texts to embed, hash-partitioned so that each embedding job reads only its own
#   csc_score   similarities from the vector stores, KDE curves, overlap with bootstrapped CI
#   csc_plot, csc_aggregate   plots, the overlap table and the seed paper's Table 3 layout
# Code: workflow_scripts/csc/; config: the `csc` section.


rule perturb:
    input: f"{R}/corpora/{{corpus}}"
    output:
        variants=directory(f"{R}/perturbations/{{corpus}}"),
        texts=expand(f"{R}/texts/{{{{corpus}}}}/part-{{part}}.parquet", part=PART_IDS),
        report=f"{R}/reports/perturb/{{corpus}}.json",
    params:
        settings=csc_perturb_settings,
        seed=SEED,
        partitions=PARTS,
        nltk=nltk_plan,
    log: log_path("perturb", "{corpus}")
    benchmark: bench_path("perturb", "{corpus}")
    threads: res("perturb", "threads")
    priority: CHAIN_HEAD_PRIORITY
    resources: mem_mb=res("perturb", "mem_mb"), runtime=res("perturb", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.csc.perturb --corpus-dir {input:q} --settings {params.settings:q} --seed {params.seed}"
        " --partitions {params.partitions} --out-variants {output.variants:q} --out-texts {output.texts:q}"
        " --report {output.report:q} --workers {threads} --nltk {params.nltk:q} > {log:q} 2>&1"


rule csc_score:
    input:
        variants=f"{R}/perturbations/{{corpus}}",
        stores=csc_stores,
    output:
        similarities=f"{R}/csc/{{corpus}}/{{model}}/similarities.parquet",
        curves=f"{R}/csc/{{corpus}}/{{model}}/curves.parquet",
        summary=f"{R}/csc/{{corpus}}/{{model}}/summary.json",
    params:
        exact_max_n=config["csc"]["exact_kde_max_n"],
        grid_step=config["csc"]["grid_step"],
        bootstrap_b=config["csc"]["bootstrap_b"],
        bootstrap_groups=config["csc"]["bootstrap_groups"],
        seed=SEED,
        # what decides the model's vectors (not batch size or threads): the stores must match it
        spec=lambda wc: as_json(embed_spec(wc.model)),
        out_dir=lambda wc: f"{R}/csc/{wc.corpus}/{wc.model}",
    log: log_path("csc_score", "{corpus}", "{model}")
    benchmark: bench_path("csc_score", "{corpus}", "{model}")
    threads: res("csc_score", "threads")
    resources: mem_mb=res("csc_score", "mem_mb"), runtime=res("csc_score", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.csc.curves score --variants-dir {input.variants:q} --stores {input.stores:q} --model {wildcards.model}"
        " --corpus {wildcards.corpus} --spec {params.spec:q} --exact-max-n {params.exact_max_n} --grid-step {params.grid_step}"
        " --bootstrap-b {params.bootstrap_b} --bootstrap-groups {params.bootstrap_groups} --seed {params.seed}"
        " --out-dir {params.out_dir:q} > {log:q} 2>&1"


rule csc_plot:
    input:
        curves=f"{R}/csc/{{corpus}}/{{model}}/curves.parquet",
        summary=f"{R}/csc/{{corpus}}/{{model}}/summary.json",
    output:
        png=report(f"{R}/plots/csc/{{corpus}}/{{model}}.png", category=REPORT_CATEGORY["csc"], subcategory="{corpus}",
                   caption="../resources/report/csc_curve.rst", labels={"corpus": "{corpus}", "model": "{model}"}),
        svg=f"{R}/plots/csc/{{corpus}}/{{model}}.svg",
    log: log_path("csc_plot", "{corpus}", "{model}")
    threads: res("csc_plot", "threads")
    resources: mem_mb=res("csc_plot", "mem_mb"), runtime=res("csc_plot", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "MPLBACKEND=Agg python -m workflow_scripts.csc.curves plot --curves {input.curves:q} --summary {input.summary:q}"
        " --png {output.png:q} --svg {output.svg:q} > {log:q} 2>&1"


rule csc_aggregate:
    input: [f"{R}/csc/{p.corpus}/{p.model}/summary.json" for p in CSC_PAIRS]
    output:
        overlap=f"{R}/tables/csc_overlap.csv",
        table3=f"{R}/tables/csc_table3.csv",
    params:
        corpora=list(config["corpora"]),
        models=list(config["models"]),
    log: log_path("csc_aggregate", "all")
    threads: res("csc_aggregate", "threads")
    resources: mem_mb=res("csc_aggregate", "mem_mb"), runtime=res("csc_aggregate", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.csc.curves aggregate --summaries {input:q} --out {output.overlap:q} --table3 {output.table3:q}"
        " --corpora {params.corpora:q} --models {params.models:q} > {log:q} 2>&1"
