#!/usr/bin/env bash
# Runs schemathesis (every check, a few hundred generated requests, bounded in time) against
# the OpenAPI document of a real server. Installs schemathesis from PyPI into a scratch
# directory. Any failed check fails the run; a 5xx is one.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
  --target "$work/py" "schemathesis==$SCHEMATHESIS_VERSION"

cargo build --quiet -p majordomus
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
binary="$target_dir/debug/majordomus"
repo="$work/repo"
git init --quiet -b main "$repo"
git -C "$repo" -c user.name=ci -c user.email=ci@localhost commit --quiet --allow-empty -m init
"$binary" serve --repo "$repo" > "$work/serve.out" 2> "$work/serve.err" &
server_pid=$!
lease="$repo/.git/majordomus/lease.json"
for _ in $(seq 1 100); do
  if [ -s "$lease" ] && grep -q '"url": "http' "$lease"; then break; fi
  sleep 0.1
done
url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$lease")
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$lease")

status=0
config="$PWD/scripts/schemathesis.toml"
(cd "$work" && PYTHONPATH="$work/py" timeout 600 python3 -m schemathesis.cli --no-color \
  --config-file "$config" run "$url/openapi.json" \
  -H "Authorization: Bearer $token" --checks all --max-examples 60 \
  --workers 1 --seed 1) > "$work/schemathesis.log" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  cat "$work/schemathesis.log"
  echo "schemathesis: FAILED (exit $status)"
  exit 1
fi
grep -E "generated|passed|failures" "$work/schemathesis.log" | tail -n 3
if ! kill -0 "$server_pid" 2>/dev/null; then
  echo "schemathesis: the server died during the run"
  cat "$work/serve.err"
  exit 1
fi
echo "schemathesis: every check passed"
