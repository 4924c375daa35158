//! The `majordomus` executable the benchmark spawns. The benchmark is not part of it, so it has
//! to find one: the executable cargo builds beside this one in the target directory, built
//! first when cargo runs the benchmark, so that the figures are those of the code as it is and
//! of the same profile as the in-process rows.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The executable's file name in a target directory.
const NAME: &str = "majordomus";

/// The executable to spawn: `explicit` when given, else `majordomus` beside this executable,
/// (re)built first when cargo launched this process (it says so in `CARGO`).
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(path) = explicit {
        return if path.is_file() {
            Ok(path.to_path_buf())
        } else {
            Err(format!("--majordomus {}: no such file", path.display()))
        };
    }
    let this =
        std::env::current_exe().map_err(|error| format!("cannot find this executable: {error}"))?;
    let dir = this
        .parent()
        .ok_or_else(|| format!("{} has no directory", this.display()))?;
    if let Some(cargo) = std::env::var_os("CARGO") {
        build(&cargo, dir, Output::Shown)?;
    }
    let beside = dir.join(NAME);
    if beside.is_file() {
        Ok(beside)
    } else {
        Err(format!(
            "there is no {} to spawn: build it (`cargo build -p majordomus -p majordomus-dev`, with --release for a release build of this tool), run this tool through cargo (`cargo xtask bench`), which builds it, or name one with --majordomus",
            beside.display()
        ))
    }
}

/// Whether cargo's output is shown as it builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// On this process's stderr: a person waiting for a benchmark sees what it waits for.
    Shown,
    /// Kept, and told only in the error if the build fails: a test's output stays its own.
    OnFailure,
}

/// Builds `majordomus` with `cargo` into `dir`, a profile's directory of a target directory
/// (`target/debug`, `target/release`), with that profile. This crate is built alongside, as
/// cargo selects features for every package it builds together: built alone, `majordomus`
/// would compile its libraries again with fewer features rather than link the ones this
/// tool was just built with.
pub fn build(cargo: &OsStr, dir: &Path, output: Output) -> Result<(), String> {
    let profile = match dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") => "dev",
        Some(name) => name,
        None => return Err(format!("{} names no profile", dir.display())),
    };
    let target = dir
        .parent()
        .ok_or_else(|| format!("{} is not in a target directory", dir.display()))?;
    if output == Output::Shown {
        eprintln!("building `majordomus` ({profile} profile) for the rows that spawn it");
    }
    let mut command = std::process::Command::new(cargo);
    command
        .args(["build", "-p", "majordomus", "-p", "majordomus-dev"])
        .args(["--bin", NAME, "--profile", profile])
        .arg("--target-dir")
        .arg(target)
        // The workspace this tool belongs to, wherever it was started from.
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    // What cargo told this process about this package: build scripts that read such a
    // variable (ring's does) are run again when its value changes, so passing this crate's
    // on would rebuild them, and then rebuild them again at the next ordinary build.
    for (key, _) in std::env::vars_os() {
        let key_text = key.to_string_lossy();
        if key_text.starts_with("CARGO_PKG_")
            || key_text.starts_with("CARGO_MANIFEST_")
            || matches!(
                key_text.as_ref(),
                "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
                    | "CARGO_RUSTC_CURRENT_DIR"
            )
        {
            command.env_remove(&key);
        }
    }
    let (status, told) = match output {
        Output::Shown => command.status().map(|status| (status, String::new())),
        Output::OnFailure => command.output().map(|output| {
            (
                output.status,
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        }),
    }
    .map_err(|error| format!("could not run cargo: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "`cargo build -p majordomus` failed ({status})\n{told}"
        ))
    }
}
