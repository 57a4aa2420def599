#!/usr/bin/env bash
# Installs a one-node Slurm (slurmctld, slurmd, the client commands, munge) from Debian for
# tests/slurm.rs, which starts the daemons itself on loopback with a private config and stops
# them by PID. Recipe and timings: shared/reference/slurm-single-node.md (≈ 10 s to install).
set -euo pipefail
if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
  && command -v munged >/dev/null; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  slurmctld slurmd slurm-client munge >/dev/null
