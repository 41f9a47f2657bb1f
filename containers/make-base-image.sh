#!/usr/bin/env bash
# Creates the base image debian:trixie-slim locally when no container registry is reachable.
# Skips when the image already exists. Needs root, debootstrap and a running Docker engine.
set -euo pipefail
image="${1:-debian:trixie-slim}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "base image $image already present"
  exit 0
fi
if docker pull "$image" >/dev/null 2>&1; then
  echo "pulled $image"
  exit 0
fi
root="$(mktemp -d /tmp/trixie-rootfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT
echo "building $image with debootstrap into $root (a few minutes)"
debootstrap --variant=minbase trixie "$root" "$mirror" >/dev/null
# Trim what a slim image does not ship.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | docker import - "$image" >/dev/null
echo "created $image"
