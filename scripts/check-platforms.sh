#!/usr/bin/env bash
# Checks that majordomus compiles, lint-clean, for macOS and Windows as well as Linux: clippy
# over the macOS target (every crate and test) and the Windows target (the product's crates:
# library, binary and unit tests; the integration tests and the benchmark drive Unix processes
# and stay Unix-only). Nothing is linked or run; the project's CI workflow builds and tests
# on real macOS and Windows machines.
#
# Installs what it needs when missing: the two Rust targets (rustup), and C compilers for
# `ring`'s few C files (Debian's `clang` for macOS, `gcc-mingw-w64-x86-64` for Windows). No
# macOS SDK is available here, so `ring` is compiled against a handful of stand-in headers
# written under the target directory: enough for a compile check, never for a binary.
set -euo pipefail
cd "$(dirname "$0")/.."

darwin=x86_64-apple-darwin
windows=x86_64-pc-windows-gnu

installed=$(rustup target list --installed)
for target in "$darwin" "$windows"; do
  grep -qx "$target" <<<"$installed" || rustup target add "$target" >/dev/null
done

missing=()
command -v clang >/dev/null 2>&1 || missing+=(clang)
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || missing+=(gcc-mingw-w64-x86-64)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then as_root=(); else as_root=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

target_dir=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
stubs="$target_dir/platform-stubs/$darwin"
mkdir -p "$stubs"
printf '#define TARGET_OS_OSX 1\n#define TARGET_OS_IPHONE 0\n#define TARGET_OS_MAC 1\n' \
  > "$stubs/TargetConditionals.h"
cat > "$stubs/string.h" <<'STUB'
typedef __SIZE_TYPE__ size_t;
void *memcpy(void *, const void *, size_t);
void *memset(void *, int, size_t);
void *memmove(void *, const void *, size_t);
int memcmp(const void *, const void *, size_t);
STUB
printf '#define assert(x) ((void)0)\n' > "$stubs/assert.h"
builtin_headers=$(clang -print-resource-dir)/include

CC_x86_64_apple_darwin=clang \
CFLAGS_x86_64_apple_darwin="-ffreestanding -nostdinc -isystem $builtin_headers -I$stubs" \
  cargo clippy --quiet --workspace --all-targets --target "$darwin" -- -D warnings
cargo clippy --quiet -p majordomus -p majordomus-server -p majordomus-capabilities -p majordomus-core \
  -p majordomus-federation -p majordomus-checkout -p majordomus-domain --lib --bins --target "$windows" -- -D warnings
cargo clippy --quiet -p majordomus -p majordomus-server -p majordomus-capabilities -p majordomus-core \
  -p majordomus-federation -p majordomus-checkout -p majordomus-domain --lib --profile test --target "$windows" -- -D warnings
