#!/usr/bin/env bash
# A real single-node SLURM cluster on this machine (munge, slurmctld, slurmd; no accounting), for
# tests/slurm/run_slurm_test.sh. Usage:
#   tests/slurm/local_cluster.sh install        # Debian packages (root; once per machine)
#   tests/slurm/local_cluster.sh start DIR      # config, state and pid files under DIR
#   tests/slurm/local_cluster.sh stop DIR       # stops the daemons it started, by their PIDs
# Pitfalls handled (../shared/notes/local-slurm.md): the jobstep plugin strips SLURM_CONF, so the
# config must be at /etc/slurm/slurm.conf (a symlink, removed on stop if we made it); no cgroups
# here (proctrack/linuxproc, task/none); without accounting, finished jobs must stay visible to
# squeue (MinJobAge=600) and the profile uses `slurm-status-command: squeue`; a GPU gres needs
# an existing File= or the node is marked INVAL. Finished jobs are logged to DIR/log/jobcomp.txt.
set -euo pipefail
cmd=${1:?install|start|stop}
dir=${2:-}

case "$cmd" in
install)
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null; then
        exit 0
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
    ;;
start)
    [ -n "$dir" ] || { echo "usage: $0 start DIR" >&2; exit 2; }
    mkdir -p "$dir"/{state,spool,log,run}
    dir=$(cd "$dir" && pwd)
    chmod 755 "$dir"
    host=$(hostname -s)
    cpus=$(nproc)
    mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 2048 ))
    touch "$dir/fake_gpu0"
    cat > "$dir/slurm.conf" <<CONF
ClusterName=probing-test
SlurmctldHost=${host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/run/munge.socket.2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MinJobAge=600
ReturnToService=2
AccountingStorageType=accounting_storage/none
# no slurmdbd here: each finished job's Submit/Start/End and request go to a text file, read by
# tests/benchmarks/rehearsal_report.py (scheduler overhead per job)
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
GresTypes=gpu
NodeName=${host} NodeAddr=127.0.0.1 CPUs=${cpus} Boards=1 SocketsPerBoard=1 CoresPerSocket=${cpus} ThreadsPerCore=1 RealMemory=${mem_mb} Gres=gpu:fake:1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
# the same node again, for the profile's per-device partitions (slurm.partitions in a config)
PartitionName=gpu Nodes=ALL MaxTime=INFINITE State=UP
CONF
    echo "NodeName=${host} Name=gpu Type=fake File=$dir/fake_gpu0" > "$dir/gres.conf"
    mkdir -p /etc/slurm
    if [ -e /etc/slurm/slurm.conf ] && [ "$(readlink -f /etc/slurm/slurm.conf)" != "$dir/slurm.conf" ]; then
        echo "/etc/slurm/slurm.conf exists and is not ours; refusing to replace it" >&2; exit 1
    fi
    ln -sfn "$dir/slurm.conf" /etc/slurm/slurm.conf
    ln -sfn "$dir/gres.conf" /etc/slurm/gres.conf
    touch "$dir/run/made_etc_links"
    chown munge: "$dir/run" "$dir/log"
    runuser -u munge -- /usr/sbin/munged --socket="$dir/run/munge.socket.2" \
        --pid-file="$dir/run/munged.pid" --key-file=/etc/munge/munge.key --log-file="$dir/log/munged.log" \
        --seed-file="$dir/run/munged.seed"
    /usr/sbin/slurmctld -f "$dir/slurm.conf"
    /usr/sbin/slurmd -f "$dir/slurm.conf"
    for _ in $(seq 60); do
        state=$(SLURM_CONF="$dir/slurm.conf" sinfo -h -o %T 2>/dev/null || true)
        case "$state" in idle*) echo "slurm cluster up on $host ($cpus CPUs, $mem_mb MB): $state"; exit 0;; esac
        sleep 1
    done
    echo "slurm node did not become idle (state: ${state:-none}); logs in $dir/log" >&2
    tail -20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
    exit 1
    ;;
stop)
    [ -n "$dir" ] || { echo "usage: $0 stop DIR" >&2; exit 2; }
    for name in slurmd slurmctld munged; do
        pidfile="$dir/run/$name.pid"
        if [ -s "$pidfile" ]; then
            pid=$(cat "$pidfile")
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
            kill -9 "$pid" 2>/dev/null || true
            rm -f "$pidfile"
        fi
    done
    if [ -e "$dir/run/made_etc_links" ]; then
        [ "$(readlink -f /etc/slurm/slurm.conf)" = "$dir/slurm.conf" ] && rm -f /etc/slurm/slurm.conf
        [ "$(readlink -f /etc/slurm/gres.conf)" = "$dir/gres.conf" ] && rm -f /etc/slurm/gres.conf
        rm -f "$dir/run/made_etc_links"
    fi
    echo "slurm cluster in $dir stopped"
    ;;
*)
    echo "unknown command $cmd" >&2; exit 2;;
esac
