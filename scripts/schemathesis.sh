#!/usr/bin/env bash
# Runs schemathesis (every check, a few hundred generated requests, bounded in time) against
# the OpenAPI document of a real server. Installs schemathesis from PyPI into a scratch
# directory. Any failed check fails the run; a 5xx is one.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
source scripts/scratch-work.sh

python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
  --target "$work/py" "schemathesis==$SCHEMATHESIS_VERSION"

source scripts/serve-scratch.sh

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
