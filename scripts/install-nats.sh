#!/usr/bin/env bash
# Installs `nats-server` (Debian's package) for the federation tests and benchmarks, unless
# one is already on PATH. Safe to run again: it does nothing when the server is there.
set -euo pipefail

if command -v nats-server >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    sudo=sudo
else
    sudo=
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq nats-server >/dev/null
command -v nats-server >/dev/null
