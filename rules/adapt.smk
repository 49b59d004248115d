# The adapt stage (seed 003; methods.md §4): models the workflow trains. Each recipe of the `adapt`
# section is a model (rules/common.smk registers it before the probes plan), made by
#   adapt_train   per recipe: its steps in order on its base model — pt (continued masked-LM
#                 pre-training, transformers' Trainer), ft (contrastive fine-tuning with
#                 MultipleNegativesRankingLoss; negatives mined, the set's wrong answers or both:
#                 ft.negatives; sentence-transformers' trainer), merge (weight averaging) — into <results>/models/<recipe>/ with a
#                 manifest. Checkpoints in <results>/models/.work/<recipe>/: a killed job resumes.
# The trained directory is an input of the model's embedding jobs (rules/common.smk, embed_inputs).
# Code: workflow_scripts/adapt/ (declaration: probe.py, planning: plan.py); config: the `adapt` section.
ADAPT = PLANS["adapt"]


rule adapt_train:
    input:
        unpack(by_content(ADAPT.inputs)),
    output:
        directory(f"{R}/models/{{recipe}}"),
    log:
        log_path("adapt_train", "{recipe}"),
    benchmark:
        bench_path("adapt_train", "{recipe}")
    wildcard_constraints:
        recipe="|".join(ADAPT.recipes) or "(?!)",  # recipe names only (none: never matches)
    priority: CHAIN_HEAD_PRIORITY
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("adapt_train")
    resources:
        **RESOURCES.sized("adapt_train"),
        gpu=lambda wc: 1 if STUDY.resolved_device(wc.recipe) == "cuda" else 0,
        # SLURM: --gpus=<gpu_model>:1 (the plugin ignores an empty model)
        gpu_model=lambda wc: (
            config["models"][wc.recipe].get("gpu_model", "")
            if STUDY.resolved_device(wc.recipe) == "cuda"
            else ""
        ),
    params:
        **job_params("adapt.train:run_adapt_train"),
        # the resolved recipe, its base and merge partner, its data: a change retrains
        plan=ADAPT.train_plan,
        device=lambda wc: STUDY.resolved_device(wc.recipe),
    script:
        "../workflow_scripts/run_job.py"
