#!/usr/bin/env bash
# The workflow on a real SLURM scheduler: start a single-node cluster (tests/slurm/local_cluster.sh),
# run the small test config once with `--cores` and once through profiles/slurm (executor plugin,
# sbatch, squeue), and require identical results. Stops the daemons it started, by PID.
# Usage: tests/slurm/run_slurm_test.sh [WORKDIR]      (root: it installs Debian's SLURM if missing)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
work=${1:-$(mktemp -d /tmp/slurm-test.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
chmod 755 "$work"  # mktemp makes 0700; munged runs as user munge and must reach its socket dir
config=resources/configs/test_small.yaml
snakemake=${SNAKEMAKE:-snakemake}
started=$(date +%s)

tests/slurm/local_cluster.sh install
trap 'tests/slurm/local_cluster.sh stop "$work/cluster"' EXIT
tests/slurm/local_cluster.sh start "$work/cluster"

echo "== local run (--cores 2)"
t0=$(date +%s)
$snakemake --cores 2 --configfile "$config" --config results="$work/local" --quiet rules \
    > "$work/local.log" 2>&1 || { tail -50 "$work/local.log"; exit 1; }
t_local=$(( $(date +%s) - t0 ))
echo "$t_local" > "$work/local.seconds"  # tests/interrupt_rerun.py --reference "$work/local" reuses this run

echo "== SLURM run (--profile profiles/slurm)"
# the real profile, with this cluster's account and partition filled in; no accounting here, so
# job states come from squeue (finished jobs stay visible for MinJobAge=600 s)
t0=$(date +%s)
# --cores and --resources: what one group submission (the profile groups small jobs) may ask for,
# here this one node's cores and half its memory; unbounded, a group asked for 3 CPUs of 2 and
# stayed pending for good (PartitionConfig)
node_mem_mb=$(( ($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 2048) / 2 ))
$snakemake --profile profiles/slurm --jobs 4 --cores "$(nproc)" --resources mem_mb="$node_mem_mb" \
    --default-resources slurm_account=test slurm_partition=debug mem_mb=2000 runtime=60 \
    --slurm-status-command squeue --slurm-init-seconds-before-status-checks 2 \
    --configfile "$config" --config results="$work/slurm" \
    > "$work/slurm.log" 2>&1 || { tail -80 "$work/slurm.log"; exit 1; }
t_slurm=$(( $(date +%s) - t0 ))
submitted=$(grep -c "Job .* has been submitted with SLURM jobid" "$work/slurm.log" || true)
echo "SLURM: $submitted jobs submitted through sbatch"
squeue -h -o "%i %j %T" | head -5 || true

echo "== comparing results"
python tests/diff_results.py "$work/local" "$work/slurm"
echo "SLURM test passed: local run ${t_local} s, SLURM run ${t_slurm} s, total $(( $(date +%s) - started )) s"
