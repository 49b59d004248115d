# The script of every rule (`script: "../workflow_scripts/run_job.py"`): Snakemake runs it with the
# job as `snakemake`, and workflow_scripts/jobs.py calls the function the rule names in
# params.function. What reruns a job is the digest of the code it runs (params.code,
# workflow_scripts/code_digest.py), this file included, not this file's mtime.
from workflow_scripts.jobs import call

# guarded: a process pool started with `spawn` (embed, perturb with threads) re-runs this file as
# __mp_main__ in each worker, which must not call the job again
if __name__ == "__main__":
    call(snakemake)  # noqa: F821 (defined by Snakemake's script preamble)
