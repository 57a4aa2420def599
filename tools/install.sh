#!/usr/bin/env bash
# Installs dlm-bench with its plugins prebuilt beside it, so that the installed binary never
# runs cargo (a nightly job starts measuring at once; see docs/user-guide.md, "Installing"):
#
#   PREFIX/lib/dlm-bench/dlm-bench        the binary
#   PREFIX/lib/dlm-bench/plugins/lib*.so  every plugin crate under plugins/, release profile
#                                         (.dylib on macOS)
#   PREFIX/lib/dlm-bench/data/            the benchmark data the plugins read (data/)
#   PREFIX/bin/dlm-bench                  a wrapper: DLM_BENCH_DATA defaults to the copy above
#
# Usage: tools/install.sh [PREFIX] [CARGO BUILD ARGS...]   (PREFIX defaults to ~/.local)
#   e.g. tools/install.sh ~/.local --features dlm-neural/wgpu
# Run it again after updating the checkout: the binary and its plugins must come from one
# build (a plugin of another plugin API is refused, naming its folder).
set -euo pipefail
cd "$(dirname "$0")/.."

PREFIX="${1:-$HOME/.local}"
shift || true
TARGET="${CARGO_TARGET_DIR:-target}"

# Plugin crates: every package under plugins/ (test fixtures live elsewhere and are skipped).
crates=()
for manifest in plugins/*/Cargo.toml; do
  crates+=("$(sed -n 's/^name *= *"\(.*\)"/\1/p' "$manifest" | head -n 1)")
done

packages=(-p dlm-bench)
for c in "${crates[@]}"; do packages+=(-p "$c"); done
echo "install: building dlm-bench and ${crates[*]} (release)"
cargo build --release --locked "${packages[@]}" "$@"

case "$(uname -s)" in
  Darwin) suffix=dylib ;;
  *) suffix=so ;;
esac
lib="$PREFIX/lib/dlm-bench"
mkdir -p "$lib/plugins" "$PREFIX/bin"
install -m 755 "$TARGET/release/dlm-bench" "$lib/dlm-bench"
for c in "${crates[@]}"; do
  file="lib${c//-/_}.$suffix"
  install -m 644 "$TARGET/release/$file" "$lib/plugins/$file"
done
rm -rf "$lib/data"
cp -R data "$lib/data"

cat > "$PREFIX/bin/dlm-bench" <<EOF
#!/bin/sh
# Written by dlm-bench's tools/install.sh: the installed binary, reading the installed data.
DLM_BENCH_DATA="\${DLM_BENCH_DATA:-$lib/data}" exec "$lib/dlm-bench" "\$@"
EOF
chmod 755 "$PREFIX/bin/dlm-bench"

echo "install: $PREFIX/bin/dlm-bench (plugins in $lib/plugins); check with: $PREFIX/bin/dlm-bench list"
