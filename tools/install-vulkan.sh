#!/usr/bin/env bash
# Installs Mesa's software Vulkan driver (lavapipe, Debian package `mesa-vulkan-drivers`), so
# that Burn's `wgpu` backend — dlm-neural built with `--features wgpu` — runs on a machine
# without a GPU. A correctness path, about 40× slower than `flex`; not for speed figures.
# Idempotent: installs only when no lavapipe ICD file is present. Needs apt-get (Debian/Ubuntu);
# uses sudo only when not run as root. wgpu also needs XDG_RUNTIME_DIR to name a directory:
#   export XDG_RUNTIME_DIR=$(mktemp -d)
set -euo pipefail

if ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1; then
  echo "install-vulkan: lavapipe already present: $(ls /usr/share/vulkan/icd.d/lvp_icd*.json | head -1)"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "install-vulkan: installing mesa-vulkan-drivers with apt-get"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mesa-vulkan-drivers >/dev/null
  ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || {
    echo "install-vulkan: mesa-vulkan-drivers installed no lavapipe ICD under /usr/share/vulkan/icd.d" >&2
    exit 1
  }
  echo "install-vulkan: installed $(ls /usr/share/vulkan/icd.d/lvp_icd*.json | head -1)"
fi
