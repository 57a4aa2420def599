#!/usr/bin/env bash
# Checks that each vendored crate, patches/<crate>, is exactly the published crate plus
# patches/<crate>.diff (burn-flex and burn-tch): it fetches the published crate through cargo
# (crates.io), applies the diff to it, and compares the result with the vendored tree file by
# file. The vendored Cargo.toml's trailing `[workspace]` table (vendoring only, see
# patches/README.md) is the one allowed difference. Then it runs burn-flex's patch's own tests
# (the kernels it changes) in release mode. burn-tch's patch needs LibTorch to build, so its
# checks are dlm-neural's and dlm-hf's tests on the tch device (tools/tch/test.sh).
#   tools/check-vendored.sh            both
#   tools/check-vendored.sh --diff     only the comparison
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
works=()
trap 'rm -rf "${works[@]}"' EXIT

check_crate() {
  local crate=$1 version work published
  version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "patches/$crate/Cargo.toml" | head -1)
  work=$(mktemp -d)
  works+=("$work")

  # The published .crate, through cargo's own download (no other host is reached).
  mkdir -p "$work/fetch/src"
  touch "$work/fetch/src/lib.rs"
  cat > "$work/fetch/Cargo.toml" <<TOML
[package]
name = "fetch-published-$crate"
version = "0.0.0"
edition = "2021"

[dependencies]
$crate = "=$version"

[workspace]
TOML
  (cd "$work/fetch" && cargo fetch --quiet)
  archive=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"$crate-$version.crate" | head -1)
  mkdir -p "$work/published"
  tar -xzf "$archive" -C "$work/published"
  published="$work/published/$crate-$version"

  # Published + our diff. The diff's paths are upstream's (`crates/<crate>/...`): strip three.
  # Packaging metadata and the lockfile cargo publishes, which the vendored copy leaves out.
  rm -f "$published/.cargo_vcs_info.json" "$published/Cargo.lock"
  if [ -s "patches/$crate.diff" ]; then
    (cd "$published" && git apply -p3 "$root/patches/$crate.diff")
  fi

  # The vendored tree without its `[workspace]` table and the comment lines just above it.
  mkdir -p "$work/vendored"
  cp -r "patches/$crate/." "$work/vendored/"
  # The lockfile running its tests leaves behind (ignored by git) is not part of the crate.
  rm -rf "$work/vendored/target" "$work/vendored/Cargo.lock"
  awk '/^# Vendoring \(not part of the upstream diff\)/ {skip=1} !skip {print}' \
    "patches/$crate/Cargo.toml" > "$work/vendored/Cargo.toml"
  # Trailing blank lines left where the table was.
  sed -i -e :a -e '/^\n*$/{$d;N;ba' -e '}' "$work/vendored/Cargo.toml"

  if diff -r "$published" "$work/vendored" > "$work/differences"; then
    echo "patches/$crate = published $crate $version + patches/$crate.diff (every file compared)"
  else
    echo "patches/$crate differs from published $crate $version + patches/$crate.diff:" >&2
    head -50 "$work/differences" >&2
    echo "Regenerate the diff from the vendored tree (see patches/README.md), or revert the stray edit." >&2
    exit 1
  fi
}

for crate in burn-flex burn-tch; do
  check_crate "$crate"
done

if [ "${1:-}" = "--diff" ]; then exit 0; fi
# The patch's own tests: the kernels it changes (their tests compare bits with the unpatched
# algorithms). Its own target dir, removed afterwards: nothing is shared with our workspace.
# They run from a copy that carries our Cargo.lock, so the crate is tested with the dependency
# versions the workspace builds it with, not whatever is newest on crates.io.
tested=$(mktemp -d)
works+=("$tested")
cp -r patches/burn-flex/. "$tested/crate"
rm -rf "$tested/crate/target"
cp Cargo.lock "$tested/crate/Cargo.lock"
(cd "$tested/crate" && CARGO_TARGET_DIR="$tested/target" \
  cargo test --release --lib -- attention_bf16_kv ops::attention ops::unary ops::activation)
