# Shared stage: the items behind a number (issue 26). Per probe dataset that two or more models
# scored, a page of the items where each compared pair of models disagrees most, with their texts:
#   results/tables/disagreements/<probe>/<dataset>.csv
#   results/report/disagreements/<probe>/<dataset>.html   (a page of the HTML report)
# A probe takes part through its module workflow_scripts/<probe>/items.py; pairs come from the
# `compare:` config (workflow_scripts/paired_statistics.py). Code: workflow_scripts/disagreements.py.
from workflow_scripts.disagreements import DisagreementPlan

DISAGREE = DisagreementPlan(STUDY, list(PLANS.values()), config.get("compare"))


rule disagreements:
    input:
        DISAGREE.inputs,
    output:
        table=f"{R}/tables/disagreements/{{probe}}/{{dataset}}.csv",
        page=report(
            f"{R}/report/disagreements/{{probe}}/{{dataset}}.html",
            category="Disagreements",
            subcategory="{probe}",
            caption="../resources/report/disagreements.rst",
        ),
    log:
        log_path("disagreements", "{probe}", "{dataset}"),
    wildcard_constraints:
        probe=r"[a-z][a-z0-9_]*",
    localrule: True
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("disagreements")
    resources:
        **RESOURCES.sized("disagreements"),
    params:
        **job_params("disagreements:run_disagreements"),
        # model -> its item files (the probe's items.item_files), and the compared pairs [[A, B], ...]
        item_files=DISAGREE.items_param,
        pairs=DISAGREE.pairs_param,
    script:
        "../workflow_scripts/run_job.py"
