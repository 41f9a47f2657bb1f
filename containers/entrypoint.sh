#!/bin/bash
# Entrypoint of the cluster image.
#   controller           -> munged + slurmctld
#   nodes NAME[,NAME...] -> munged + one slurmd per emulated node, one supervisor
#   dbd ACCOUNT USER     -> munged + MariaDB (unix socket only) + slurmdbd; registers the
#                           cluster, ACCOUNT and USER's association (accounting enabled)
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
# harness.cluster.containers.faults) it starts again from its saved state (StateSaveLocation), and the
# replay running beside it in this container lives on. While $CTLD_HOLD exists it stays down.
CTLD_HOLD=/run/slurm/ctld-hold
run_controller() {
  local ctld=""
  trap 'touch /run/slurm/stopping; [[ -n "$ctld" ]] && kill -TERM "$ctld" 2>/dev/null; wait' TERM INT
  while true; do
    while [[ -f "$CTLD_HOLD" ]]; do sleep 0.2; done
    log "starting slurmctld"
    env $(daemon_env) /usr/sbin/slurmctld -D -i &
    ctld=$!
    wait "$ctld" || true
    [[ -f /run/slurm/stopping ]] && return
    log "slurmctld exited; restarting"
    sleep 0.5
  done
}

# With burst_buffer/lua (the io-aware model) the contention service runs beside slurmctld:
# it gives every job's checkpoint and I/O transfers their fair share of the platform's links
# (harness/emulation/iolive/contention.py). It keeps no state (the flow files in /shared/io/flows
# are the state), so when it dies it is simply started again; the jobs keep their last rate.
# On the virtual clock it moves the drains on the clock page (it stays off the preload).
run_contention() {
  local clock=()
  [[ -f "$CLOCK_ENV" ]] && clock=(--clock-page /shared/clock/page)
  mkdir -p /shared/io/flows
  chmod 1777 /shared/io /shared/io/flows
  while [[ ! -f /run/slurm/stopping ]]; do
    /opt/harness/bin/python -m harness.emulation.iolive.contention --platform /etc/slurm/platform.toml \
      --dir /shared/io --squeue "${clock[@]}" >>/var/log/slurm/contention.log 2>&1 || true
    [[ -f /run/slurm/stopping ]] && return
    log "contention service exited; restarting" >>/var/log/slurm/contention.log
    sleep 0.5
  done
}

# A cluster on the virtual clock (harness/model/clock.py, docs/virtual-time.md): the daemons
# (slurmctld, every slurmd and, through them, slurmstepd) read it through libfaketime, with
# the environment of $CLOCK_ENV; munged, the harness's services and the jobs stay on the real
# clock. The clock ticker beside slurmctld keeps libfaketime's file on the clock page.
CLOCK_ENV=/etc/slurm/clock.env
NODES_CLOCK_ENV=/etc/slurm/clock-nodes.env
daemon_env() { [[ -f "$CLOCK_ENV" ]] && grep -v '^#' "$CLOCK_ENV" || true; }

run_clock_ticker() {
  while [[ ! -f /run/slurm/stopping ]]; do
    /opt/harness/bin/python -m harness.cluster.node.clock_ticker /shared/clock/page /shared/clock/faketime \
      >>/var/log/slurm/clock.log 2>&1 || true
    [[ -f /run/slurm/stopping ]] && return
    log "clock ticker exited; restarting" >>/var/log/slurm/clock.log
    sleep 0.2
  done
}

run_nodes() {
  local nodes="$1" clock=()
  # slurmd's own environment leaves out FAKETIME_WAIT_MS (harness/model/clock.py: preload_env)
  if [[ -f "$NODES_CLOCK_ENV" ]]; then clock=(--env-file "$NODES_CLOCK_ENV")
  elif [[ -f "$CLOCK_ENV" ]]; then clock=(--env-file "$CLOCK_ENV"); fi
  # an own-node deployment: each slurmd reads nodes/slurm-<node>.conf, its own node only
  clock+=(--conf-dir /etc/slurm/nodes)
  # One malloc arena per slurmd: ~100 daemons on one host otherwise each reserve several.
  export MALLOC_ARENA_MAX=1
  # slurmd reads the CPU topology through hwloc, which dlopens every plugin of
  # libhwloc-plugins; the Level Zero one pulls in libze_loader and libstdc++ and they stay
  # mapped: 1.9 MB of RSS per slurmd. Emulated nodes declare their CPUs
  # (config_overrides) and have no GPUs or PCI devices to discover, so load none of them.
  export HWLOC_PLUGINS_BLACKLIST=hwloc_levelzero,hwloc_opencl,hwloc_gl,hwloc_pci,hwloc_xml_libxml
  # One supervisor process starts every slurmd of this container and restarts any that
  # dies (harness/cluster/node/supervisor.py); SIGTERM stops them all.
  exec /opt/harness/bin/python -m harness.cluster.node.supervisor "$nodes" "${clock[@]}"
}

# Accounting: /cluster/etc (slurm.conf), /cluster/dbd (slurmdbd.conf with the cluster's
# generated password, mariadb.cnf) and /var/lib/mysql (the data, in the state directory).
run_dbd() {
  local account="$1" user="$2" cluster
  mkdir -p /etc/slurm /run/slurm
  rm -f /run/slurm/dbd-ready  # a restarted container keeps its /run
  cp /cluster/etc/slurm.conf /etc/slurm/slurm.conf
  install -m 0600 /cluster/dbd/slurmdbd.conf /etc/slurm/slurmdbd.conf
  install -d -o mysql -g mysql -m 0755 /run/mysqld
  chown mysql:mysql /var/lib/mysql
  local cnf=/cluster/dbd/mariadb.cnf
  if [[ ! -d /var/lib/mysql/mysql ]]; then
    log "initialising the database"
    if [[ -d /usr/share/harness/mysql-template/mysql ]]; then
      cp -a /usr/share/harness/mysql-template/. /var/lib/mysql/
    else
      mariadb-install-db --defaults-file="$cnf" --skip-test-db --auth-root-authentication-method=socket \
        >/var/log/slurm/mariadb-install.log 2>&1
    fi
  fi
  mariadbd --defaults-file="$cnf" &
  local db_pid=$! dbd_pid=""
  trap 'kill -TERM $dbd_pid 2>/dev/null; wait $dbd_pid; mariadb-admin --defaults-file='"$cnf"' shutdown; wait $db_pid; exit 0' TERM INT
  until mariadb-admin --defaults-file="$cnf" --silent ping >/dev/null 2>&1; do sleep 0.05; done
  local pass
  pass="$(sed -n 's/^StoragePass=//p' /etc/slurm/slurmdbd.conf)"
  # The database is created here: slurmdbd 24.11 creating it itself, then reusing its
  # connection, fails with libmariadb 3.4 of MariaDB 11.8.9 (error 5027 "Number of columns
  # in result (=1) set exceeds maximum allowed number of columns (=0)").
  mariadb --defaults-file="$cnf" <<SQL
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$pass';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$pass';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
SQL
  log "starting slurmdbd"
  /usr/sbin/slurmdbd -D &
  dbd_pid=$!
  until sacctmgr -n list cluster format=cluster >/dev/null 2>&1; do sleep 0.05; done
  cluster="$(sed -n 's/^ClusterName=//p' /etc/slurm/slurm.conf)"
  sacctmgr -i add cluster "$cluster" >/dev/null 2>&1 || true
  sacctmgr -i add account "$account" cluster="$cluster" description="replayed workloads" \
    organization=harness >/dev/null 2>&1 || true
  sacctmgr -i add user "$user" account="$account" cluster="$cluster" >/dev/null 2>&1 || true
  touch /run/slurm/dbd-ready
  log "slurmdbd ready: cluster $cluster, account $account, user $user"
  wait $dbd_pid
}

role="${1:-controller}"
start_munge
case "$role" in
  dbd) run_dbd "${2:?usage: dbd ACCOUNT USER}" "${3:?usage: dbd ACCOUNT USER}"; exit 0 ;;
esac
prepare_dirs
case "$role" in
  controller)
    if [[ -f /etc/slurm/burst_buffer.lua && -f /etc/slurm/platform.toml ]]; then run_contention & fi
    if [[ -f "$CLOCK_ENV" ]]; then run_clock_ticker & fi
    run_controller ;;
  nodes) run_nodes "${2:?usage: nodes NAME[,NAME...]}" ;;
  *) exec "$@" ;;
esac
