# Stage 3: fuzzing / negation / grammatical negation variants, and the texts to embed,
# hash-partitioned so that each embedding job reads only its own partition.


rule perturb:
    input: f"{R}/corpora/{{corpus}}"
    output:
        variants=directory(f"{R}/perturbations/{{corpus}}"),
        texts=expand(f"{R}/texts/{{{{corpus}}}}/part-{{part}}.parquet", part=PART_IDS),
        report=f"{R}/reports/perturb/{{corpus}}.json",
    params:
        settings=lambda wc: as_json(config["perturb"]),
        seed=SEED,
        partitions=PARTS,
        nltk=nltk_plan,
    log: log_path("perturb", "{corpus}")
    benchmark: bench_path("perturb", "{corpus}")
    threads: res("perturb", "threads")
    resources: mem_mb=res("perturb", "mem_mb"), runtime=res("perturb", "runtime")
    conda: "../envs/workflow.yaml"
    shell:
        "python -m workflow_scripts.perturb --corpus-dir {input:q} --settings {params.settings:q} --seed {params.seed}"
        " --partitions {params.partitions} --out-variants {output.variants:q} --out-texts {output.texts:q}"
        " --report {output.report:q} --workers {threads} --nltk {params.nltk:q} > {log:q} 2>&1"
