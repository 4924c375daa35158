#!/usr/bin/env bash
# Installs what the test suite needs beyond Rust, from Debian's packages: `chromium`, which the
# dashboard's end-to-end test drives headless, and `nats-server`, which the federation tests
# and benchmarks start on a loopback port of their own. Installs only what is missing, so it
# is safe to run before every test run. Needs root (or sudo) on Debian or Ubuntu.
set -euo pipefail

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] || missing+=(nats-server)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo)
else
  echo "install-test-deps: ${missing[*]} missing, and installing needs root (or sudo)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
