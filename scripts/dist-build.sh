#!/usr/bin/env bash
# Builds, with cargo-dist (installed by scripts/install-dist.sh at the version
# dist-workspace.toml pins), what a release publishes for Linux on x86_64: the archive
# `majordomus-x86_64-unknown-linux-gnu.tar.xz` and its `.sha256`, and the artifacts made once
# per release, for the targets built (the shell installer, the Homebrew formula,
# `sha256.sum`; the PowerShell installer comes with a Windows target), into
# `<cargo target dir>/distrib` (CARGO_TARGET_DIR honoured). tests/release.rs installs from
# them. A release builds every target on its own runner (.github/workflows/release.yml).
# Prints the artifacts' paths.
set -euo pipefail
cd "$(dirname "$0")/.."

dist=$(bash scripts/install-dist.sh)
# The release workflow is the one dist-workspace.toml generates.
"$dist" generate --check
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$dist" build --artifacts=all --target x86_64-unknown-linux-gnu > "$log" 2>&1; then
  cat "$log"
  echo "dist-build: FAILED" >&2
  exit 1
fi
grep -E '^\s+/\S+$' "$log" | sed 's/^ *//' || true
