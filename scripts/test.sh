#!/usr/bin/env bash
# The whole test suite, as the README gives it and CI runs it. First installs what the tests
# need beyond Rust when it is missing (scripts/install-test-deps.sh: Debian packages; the
# scripts below fetch their npm and PyPI tools into scratch directories; install-clients.sh
# keeps Claude Code, Codex CLI and Gemini CLI under the target dir for cargo's tests;
# dist-build.sh installs cargo-dist and builds the Linux x86_64 release archive and the
# installers tests/release.rs installs from, around an unoptimised executable), then runs the
# MCP conformance suite, schemathesis against the OpenAPI document, the real clients (Claude
# Code and Gemini CLI) against what `majordomus install` wrote, and cargo's tests.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-test-deps.sh
bash scripts/install-clients.sh > /dev/null   # the real clients tests/real_clients.rs drives
bash scripts/dist-build.sh --unoptimized > /dev/null   # the release artifacts tests/release.rs installs
bash scripts/conformance.sh
bash scripts/schemathesis.sh
bash scripts/real-clients.sh   # Claude Code and Gemini CLI start the server `majordomus install` wired
cargo test --workspace
