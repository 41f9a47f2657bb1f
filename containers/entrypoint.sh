#!/bin/bash
# Entrypoint of the cluster image.
#   controller           -> munged + slurmctld
#   nodes NAME[,NAME...] -> munged + one slurmd per emulated node, one supervisor
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
}

run_controller() {
  log "starting slurmctld"
  exec /usr/sbin/slurmctld -D -i
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
  # One supervisor process starts every slurmd of this container and restarts any that
  # dies (harness/cluster/supervisor.py); SIGTERM stops them all.
  exec /opt/harness/bin/python -m harness.cluster.supervisor "$nodes"
}

role="${1:-controller}"
start_munge
prepare_dirs
case "$role" in
  controller) run_controller ;;
  nodes) run_nodes "${2:?usage: nodes NAME[,NAME...]}" ;;
  *) exec "$@" ;;
esac
