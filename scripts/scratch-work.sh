# Sourced first by the scripts that test a running server: makes the scratch directory
# "$work" and an EXIT trap that ends `server_pid` (which serve-scratch.sh sets) and removes
# "$work".
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
