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

# Probe: the same namespaces and privilege drop the sandbox uses (plugins/code/src/sandbox.rs).
probe_out="$(bwrap --unshare-all --die-with-parent --new-session --clearenv \
  --uid 65534 --gid 65534 \
  --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin \
  --proc /proc --dev /dev --tmpfs /tmp \
  -- /bin/sh -c 'echo ok-$(id -u)' 2>&1)" || {
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
echo "install-sandbox: namespace probe ok (uid 65534 inside, no network)"
