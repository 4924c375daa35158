#!/usr/bin/env bash
# Builds, with cargo-dist (installed by scripts/install-dist.sh at the version
# dist-workspace.toml pins), what a release publishes for Linux on x86_64: the archive
# `majordomus-x86_64-unknown-linux-gnu.tar.xz` and its `.sha256`, and the artifacts made once
# per release, for the targets built (the shell installer, the Homebrew formula,
# `sha256.sum`; the PowerShell installer comes with a Windows target), into
# `<cargo target dir>/distrib` (CARGO_TARGET_DIR honoured). tests/release.rs installs from
# them. A release builds every target on its own runner (.github/workflows/release.yml).
# Prints the artifacts' paths.
#
# `--unoptimized` (what scripts/test.sh asks for) makes the same archive, sums and installers
# around an executable compiled without optimisation or link-time optimisation: the
# installation tests look at how the release is packed and installed, never at the speed of
# the code inside, and the build takes a fraction of a release build's time.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  "") ;;
  --unoptimized)
    export CARGO_PROFILE_DIST_OPT_LEVEL=0 CARGO_PROFILE_DIST_LTO=false \
      CARGO_PROFILE_DIST_CODEGEN_UNITS=256
    ;;
  *)
    echo "usage: bash scripts/dist-build.sh [--unoptimized]" >&2
    exit 2
    ;;
esac

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
