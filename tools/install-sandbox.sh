#!/usr/bin/env bash
# Installs bubblewrap (`bwrap`), the sandbox the code-execution tasks (plugins/code) run every
# sample in, and checks that it can create the namespaces it needs on this machine.
# Idempotent: does nothing to the system when `bwrap` is already on PATH.
# Needs apt-get (Debian/Ubuntu); uses sudo only when not run as root.
set -euo pipefail

if command -v bwrap >/dev/null 2>&1; then
  echo "install-sandbox: bwrap already present: $(command -v bwrap) ($(bwrap --version 2>/dev/null || echo 'version unknown'))"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "install-sandbox: installing bubblewrap with apt-get"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq bubblewrap >/dev/null
  echo "install-sandbox: installed $(bwrap --version)"
fi

# bwrap >= 0.5 for --size (the capped tmpfs of /sandbox, /tmp, /dev/shm and the 64 KiB /dev).
version="$(bwrap --version | awk '{print $2}')"
if [ "$(printf '%s\n' 0.5.0 "$version" | sort -V | head -n1)" != 0.5.0 ]; then
  echo "install-sandbox: bubblewrap $version is too old: the sandbox needs 0.5 or newer (--size)" >&2
  exit 1
fi

# Probe: the same namespaces, privilege drop and /dev layout the sandbox uses
# (plugins/code/src/sandbox.rs).
probe_out="$(bwrap --unshare-all --die-with-parent --new-session --clearenv \
  --uid 65534 --gid 65534 \
  --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin \
  --proc /proc --size 65536 --tmpfs /dev --dev-bind /dev/null /dev/null \
  --size 1048576 --tmpfs /dev/shm --remount-ro /dev --size 1048576 --tmpfs /tmp \
  -- /bin/sh -c 'echo ok-$(id -u) > /dev/null && echo ok-$(id -u)' 2>&1)" || {
  echo "install-sandbox: bwrap is installed but cannot create its namespaces here:" >&2
  echo "  $probe_out" >&2
  echo "  Enable unprivileged user namespaces (e.g. sysctl kernel.unprivileged_userns_clone=1," >&2
  echo "  user.max_user_namespaces>0, kernel.apparmor_restrict_unprivileged_userns=0), or run" >&2
  echo "  the container with --privileged / a seccomp profile that allows clone(CLONE_NEWUSER)." >&2
  exit 1
}
if [ "$probe_out" != "ok-65534" ]; then
  echo "install-sandbox: unexpected probe output: $probe_out" >&2
  exit 1
fi
echo "install-sandbox: namespace probe ok (uid 65534 inside, no network, read-only /dev)"

# Which whole-sandbox memory cap the harness will use here (docs/sandbox.md): a memory cgroup
# per sample where this user can make one, else rlimits. Informational; nothing is changed.
cg2="$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup)"
cg1="$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)"
if [ -n "$cg2" ] && grep -qw memory "/sys/fs/cgroup${cg2}/cgroup.subtree_control" 2>/dev/null \
  && [ -w "/sys/fs/cgroup${cg2}" ]; then
  echo "install-sandbox: memory cap: cgroup v2 (/sys/fs/cgroup${cg2})"
elif [ -n "$cg1" ] && [ -w "/sys/fs/cgroup/memory${cg1}" ]; then
  echo "install-sandbox: memory cap: cgroup v1 (/sys/fs/cgroup/memory${cg1})"
else
  echo "install-sandbox: memory cap: rlimits (no writable memory cgroup for this user; see docs/sandbox.md)"
fi
