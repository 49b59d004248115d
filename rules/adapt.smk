# The adapt stage (seed 003; methods.md §4): models the workflow trains. Each recipe of the `adapt`
# section is a model (rules/common.smk registers it before the probes plan), made by
#   adapt_train   per recipe: its steps in order on its base model — pt (continued masked-LM
#                 pre-training, transformers' Trainer), ft (contrastive fine-tuning with
#                 MultipleNegativesRankingLoss; negatives mined, the set's wrong answers or both:
#                 ft.negatives; sentence-transformers' trainer), merge (weight averaging) — into <results>/models/<recipe>/ with a
#                 manifest. Checkpoints in <results>/models/.work/<recipe>/: a killed job resumes.
# The trained directory is an input of the model's embedding jobs (rules/common.smk, embed_inputs).
# Code: workflow_scripts/adapt/; config: the `adapt` section.

rule adapt_train:
    input: unpack(adapt_inputs)
    output: directory(f"{R}/models/{{recipe}}")
    wildcard_constraints:
        recipe="|".join(ADAPT_RECIPES) or "(?!)",  # recipe names only (none: never matches)
    params:
        # the resolved recipe, its base and merge partner, its data: a change retrains
        plan=adapt_plan,
        work=lambda wc: f"{R}/models/.work/{wc.recipe}",
        device=lambda wc: resolved_device(wc.recipe),
    log: log_path("adapt_train", "{recipe}")
    benchmark: bench_path("adapt_train", "{recipe}")
    threads: adapt_resource("threads")
    priority: CHAIN_HEAD_PRIORITY
    resources:
        mem_mb=adapt_resource("mem_mb"),
        runtime=adapt_resource("runtime"),
        gpu=lambda wc: 1 if resolved_device(wc.recipe) == "cuda" else 0,
        # SLURM: --gpus=<gpu_model>:1 (the plugin ignores an empty model)
        gpu_model=lambda wc: config["models"][wc.recipe].get("gpu_model", "") if resolved_device(wc.recipe) == "cuda" else "",
    conda: "../envs/workflow.yaml"
    shell:
        "TQDM_DISABLE=1 HF_HUB_OFFLINE=${{HF_HUB_OFFLINE:-0}} python -m workflow_scripts.adapt.train --plan {params.plan:q}"
        " --out {output:q} --work {params.work:q} --device {params.device} --threads {threads} > {log:q} 2>&1"
