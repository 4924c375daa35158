#!/usr/bin/env bash
# Installs what the test suite needs beyond Rust: Debian's `chromium`, which the dashboard's
# end-to-end test drives headless. Does nothing when /usr/bin/chromium is already there, so it
# is safe to run before every test run. Needs root (or sudo) on Debian or Ubuntu.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo)
else
  echo "install-test-deps: /usr/bin/chromium is missing and installing it needs root (or sudo)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends chromium >/dev/null
/usr/bin/chromium --version
