#!/usr/bin/env node
// Runs the majordomus executable that the platform's package (an optional dependency of this
// one, chosen by npm from its `os` and `cpu`) carries, passing the arguments, stdio, exit
// code and signals through.
"use strict";

const { spawnSync } = require("node:child_process");
const path = require("node:path");

const platformPackage = `majordomus-${process.platform}-${process.arch}`;
const executable = process.platform === "win32" ? "majordomus.exe" : "majordomus";

let binary;
try {
  binary = require.resolve(`${platformPackage}/bin/${executable}`);
} catch {
  process.stderr.write(
    `majordomus: the package ${platformPackage} is not installed, so there is no majordomus ` +
      `executable for ${process.platform}-${process.arch} here. Reinstall majordomus without ` +
      `--omit=optional, or install the executable another way (cargo install majordomus) and ` +
      `put it on PATH.\n`,
  );
  process.exit(1);
}

const result = spawnSync(binary, process.argv.slice(2), { stdio: "inherit" });
if (result.error) {
  process.stderr.write(`majordomus: could not run ${path.normalize(binary)}: ${result.error.message}\n`);
  process.exit(1);
}
if (result.signal) {
  process.kill(process.pid, result.signal);
}
process.exit(result.status ?? 1);
