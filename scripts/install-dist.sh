#!/usr/bin/env bash
# Installs cargo-dist, the tool that builds majordomus's release archives, installers and
# Homebrew formula from dist-workspace.toml, at the version that file pins: the prebuilt
# executable PyPI carries (`astral-dev-toolchain-cargo-dist`, cargo-dist's own release
# repackaged), into `<cargo target dir>/tools/cargo-dist-<version>` (CARGO_TARGET_DIR
# honoured). Idempotent: does nothing when that version is there. Prints the executable's path.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^cargo-dist-version = "\(.*\)"$/\1/p' dist-workspace.toml)
if [ -z "$version" ]; then
  echo "install-dist: dist-workspace.toml pins no cargo-dist-version" >&2
  exit 1
fi

target_dir=$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
dir="$target_dir/tools/cargo-dist-$version"
dist="$dir/bin/dist"

if [ -x "$dist" ] && [ "$("$dist" --version 2>/dev/null)" = "cargo-dist $version" ]; then
  echo "$dist"
  exit 0
fi

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "install-dist: PyPI carries cargo-dist for Linux on x86_64 only; elsewhere run \`cargo install cargo-dist --locked --version $version\`" >&2
  exit 1
fi

partial="$dir.partial"
rm -rf "$partial"
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
  --no-deps --target "$partial" "astral-dev-toolchain-cargo-dist==$version"
rm -rf "$dir"
mv "$partial" "$dir"
echo "$dist"
