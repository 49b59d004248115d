# Shared stage: NLTK data packages the probes need (tagger, WordNet, the WSJ treebank sample).
# Planned before any job (rules/common.smk, NLTK_PLAN): what this machine has is used where it is
# (NLTK_DATA, nltk's default folders, <results>/nltk_data); what is missing is fetched by this rule
# with nltk's own downloader and verified against the index's checksums, or, with no connection or
# `nltk_download: never`, the run stops before any job with the packages and how to provide them.


rule nltk_download:
    output:
        NLTK_MANIFEST,
    log:
        log_path("nltk_download", "all"),
    conda:
        "../envs/workflow.yaml"
    threads: RESOURCES.threads("nltk_download")
    resources:
        **RESOURCES.sized("nltk_download"),
    params:
        **job_params("nltk_data:run_nltk_download"),
        packages=lambda wc: sorted(
            {p for pkgs in NLTK_PLAN["missing"].values() for p in pkgs}
        ),
    script:
        "../workflow_scripts/run_job.py"
