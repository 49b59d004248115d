#!/usr/bin/env bash
# Dress rehearsal of the full ParaCrawl study through SLURM (`make rehearse-slurm`): the full study's
# job graph (resources/configs/full_paracrawl.yaml) on a generated ParaCrawl-like corpus of PAIRS
# pairs with stand-in models (tests/benchmarks/rehearsal_config.py), run through profiles/slurm on
# the local single-node cluster of `make test-slurm`, report included; then the figures
# (tests/benchmarks/rehearsal_report.py). Not part of CI.
# Usage: tests/slurm/rehearse_slurm.sh PAIRS [WORKDIR]
# Environment: LOCAL=1 also runs the same config with --cores 2 and compares every table (sha256);
# PARTITIONS=N overrides the embedding partitions (development only: it changes the job graph);
# STAND_IN_DIM=D gives every stand-in D dimensions (the real widths need about 100 GB of vector
# stores per million pairs; D=64 about a tenth);
# SNAKEMAKE_EXTRA: more arguments for the SLURM run (e.g. --group-components embed_small=1);
# SUBMIT_CORES: the SLURM run's --cores, the most a submission asks for (default 1, see below).
set -euo pipefail
cd "$(dirname "$0")/../.."
pairs=${1:?PAIRS}
work=${2:-/tmp/rehearse-slurm/pairs-$pairs}
mkdir -p "$work"
work=$(cd "$work" && pwd)
chmod 755 "$work"  # munged runs as user munge and must reach its socket dir
snakemake=${SNAKEMAKE:-snakemake}
python=${PYTHON:-python}
corpus="$work/en-nl.txt.zip"
echo "$pairs" > "$work/pairs"
if [ ! -s "$corpus" ]; then
    $python tests/benchmarks/make_paracrawl_like.py "$corpus" --pairs "$pairs"
fi
# requests capped at half the node: two jobs side by side, as its 2 cores allow
node_mem_mb=$(( ($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 2048) / 2 ))
extra=()
[ -n "${PARTITIONS:-}" ] && extra=(--partitions "$PARTITIONS")
[ -n "${STAND_IN_DIM:-}" ] && extra+=(--stand-in-dim "$STAND_IN_DIM")
for run in slurm local; do
    $python tests/benchmarks/rehearsal_config.py "$corpus" "$work/config-$run.yaml" --results "$work/$run" \
        --node-cpus "$(nproc)" --node-mem-mb "$node_mem_mb" "${extra[@]}" >/dev/null
done

tests/slurm/local_cluster.sh install
trap 'tests/slurm/local_cluster.sh stop "$work/cluster"' EXIT
rm -f "$work/cluster/log/jobcomp.txt"
tests/slurm/local_cluster.sh start "$work/cluster"
sdiag --reset >/dev/null 2>&1 || true

echo "== SLURM run (--profile profiles/slurm), $pairs pairs"
# the real profile with this cluster's account and partition; no accounting here, so job states
# come from squeue (finished jobs stay visible for MinJobAge=600 s)
t0=$(date +%s)
# --cores and --resources: what one group submission may ask for. One core: the slurm-jobstep plugin
# runs a group's members one after another (its inner snakemake has --jobs 1), so a group asking for
# the node's 2 cores used one of them and kept every other submission off the node (every rehearsal
# rule but perturbation and the derived corpora runs on one thread; those two are capped to one here)
$snakemake --profile profiles/slurm --jobs 8 --cores "${SUBMIT_CORES:-1}" --resources mem_mb="$node_mem_mb" \
    --default-resources slurm_account=rehearsal slurm_partition=debug mem_mb=2000 runtime=60 \
    --slurm-status-command squeue --slurm-init-seconds-before-status-checks 2 \
    --configfile "$work/config-slurm.yaml" \
    ${SNAKEMAKE_EXTRA:-} > "$work/slurm.log" 2>&1 || { tail -80 "$work/slurm.log"; exit 1; }
echo $(( $(date +%s) - t0 )) > "$work/slurm.seconds"
sdiag > "$work/sdiag.txt" 2>&1 || true
cp "$work/cluster/log/jobcomp.txt" "$work/jobcomp.txt" 2>/dev/null || true

if [ "${LOCAL:-0}" = 1 ]; then
    echo "== local run (--cores $(nproc)), same config"
    t0=$(date +%s)
    $snakemake --cores "$(nproc)" --configfile "$work/config-local.yaml" --quiet rules \
        > "$work/local.log" 2>&1 || { tail -50 "$work/local.log"; exit 1; }
    echo $(( $(date +%s) - t0 )) > "$work/local.seconds"
fi
$python tests/benchmarks/rehearsal_report.py "$work" --json "$work/rehearsal.json" | tee "$work/rehearsal_report.txt"
$python tests/benchmarks/project_full_study.py --rehearsal "$work" | tee "$work/projection.txt"
