#!/usr/bin/env bash
# One-time host set-up, idempotent: Docker engine, debootstrap, the harness package,
# a running engine, and the debian:trixie-slim base image (built locally when no
# registry is reachable). Debian/Ubuntu hosts, run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
command -v dockerd >/dev/null || need_pkgs+=(docker.io)
command -v debootstrap >/dev/null || need_pkgs+=(debootstrap)
command -v docker-compose >/dev/null || need_pkgs+=(docker-compose)
command -v ssh >/dev/null || need_pkgs+=(openssh-client)
if ((${#need_pkgs[@]})); then
  echo "installing ${need_pkgs[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

if ! python3 -c 'import harness, pytest, fabric' 2>/dev/null || ! command -v harness >/dev/null \
   || ! command -v ansible-playbook >/dev/null || ! command -v ansible-lint >/dev/null; then
  echo "installing the harness Python package (with Ansible for the cloud path and its tests)"
  python3 -m pip install --quiet -e '.[dev,ansible]'
fi

if ! docker info >/dev/null 2>&1; then
  echo "starting dockerd (host networking only: no bridge, no iptables)"
  nohup dockerd --bridge=none --iptables=false --ip-masq=false >/var/log/dockerd-harness.log 2>&1 &
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start:"; tail -20 /var/log/dockerd-harness.log; exit 1; }
fi

bash containers/make-base-image.sh debian:trixie-slim
