#!/bin/bash
# Entrypoint of the cluster image.
#   controller           -> munged + slurmctld
#   nodes NAME[,NAME...] -> munged + one slurmd per emulated node, supervised
# Expects /etc/slurm (rendered configs), /cluster/munge/munge.key, /var/log/slurm,
# /var/spool/slurm and /shared mounted by the harness (or compose).
set -euo pipefail

log() { echo "[$(date +%H:%M:%S.%3N)] $*"; }

start_munge() {
  install -d -o munge -g munge -m 0700 /etc/munge
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
  install -o munge -g munge -m 0400 /cluster/munge/munge.key /etc/munge/munge.key
  runuser -u munge -- /usr/sbin/munged --force
}

prepare_dirs() {
  mkdir -p /run/slurm /var/spool/slurm/ctld /var/spool/slurm/d /var/log/slurm /shared/log /shared/jobs
  chmod 1777 /shared/log /shared/jobs
  # a container stopped and started again keeps its files: forget the last stop
  rm -f /run/slurm/stopping "$CTLD_HOLD" /run/slurm/hold-*
}

# slurmctld is supervised like the slurmd: when it dies (or is killed to emulate a crash,
# harness.cluster.faults) it starts again from its saved state (StateSaveLocation), and the
# replay running beside it in this container lives on. While $CTLD_HOLD exists it stays down.
CTLD_HOLD=/run/slurm/ctld-hold
run_controller() {
  local ctld=""
  trap 'touch /run/slurm/stopping; [[ -n "$ctld" ]] && kill -TERM "$ctld" 2>/dev/null; wait' TERM INT
  while true; do
    while [[ -f "$CTLD_HOLD" ]]; do sleep 0.2; done
    log "starting slurmctld"
    /usr/sbin/slurmctld -D -i &
    ctld=$!
    wait "$ctld" || true
    [[ -f /run/slurm/stopping ]] && return
    log "slurmctld exited; restarting"
    sleep 0.5
  done
}

# Restart a node's slurmd if it dies, so one crash does not silently shrink the cluster.
supervise_node() {
  local node="$1"
  mkdir -p "/var/spool/slurm/d/$node"
  while true; do
    /usr/sbin/slurmd -D -N "$node" || true
    [[ -f /run/slurm/stopping ]] && return
    # a node held down (harness.cluster.faults: a crashed node) stays down until released
    while [[ -f "/run/slurm/hold-$node" ]]; do sleep 0.2; done
    log "slurmd $node exited; restarting in 1 s"
    sleep 1
  done
}

run_nodes() {
  local nodes="$1"
  # One malloc arena per slurmd: ~100 daemons on one host otherwise each reserve several.
  export MALLOC_ARENA_MAX=1
  # slurmd reads the CPU topology through hwloc, which dlopens every plugin of
  # libhwloc-plugins; the Level Zero one pulls in libze_loader and libstdc++ and they stay
  # mapped: 1.9 MB of RSS per slurmd. Emulated nodes declare their CPUs
  # (config_overrides) and have no GPUs or PCI devices to discover, so load none of them.
  export HWLOC_PLUGINS_BLACKLIST=hwloc_levelzero,hwloc_opencl,hwloc_gl,hwloc_pci,hwloc_xml_libxml
  local -a pids=()
  trap 'touch /run/slurm/stopping; kill $(jobs -p) 2>/dev/null; pkill -TERM -x slurmd; wait' TERM INT
  IFS=',' read -ra names <<<"$nodes"
  log "starting ${#names[@]} slurmd: ${names[0]} .. ${names[-1]}"
  for node in "${names[@]}"; do
    supervise_node "$node" &
    pids+=("$!")
  done
  wait
}

role="${1:-controller}"
start_munge
prepare_dirs
case "$role" in
  controller) run_controller ;;
  nodes) run_nodes "${2:?usage: nodes NAME[,NAME...]}" ;;
  *) exec "$@" ;;
esac
