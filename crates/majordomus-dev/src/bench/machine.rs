//! What the benchmark ran on: a figure means little without it.

use std::collections::BTreeSet;

use serde::Serialize;

/// The machine, the build and the toolchain of one run.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// `model name` from `/proc/cpuinfo`.
    pub cpu_model: Option<String>,
    /// Logical CPUs this process may run on.
    pub logical_cores: usize,
    /// Distinct (physical id, core id) pairs in `/proc/cpuinfo`, when it lists them.
    pub physical_cores: Option<usize>,
    /// `MemTotal` from `/proc/meminfo`, in MiB.
    pub memory_mib: Option<u64>,
    /// `PRETTY_NAME` from `/etc/os-release`.
    pub os: Option<String>,
    /// `/proc/sys/kernel/osrelease`.
    pub kernel: Option<String>,
    /// `rustc --version` of the compiler on `PATH` when the benchmark ran (the one that built
    /// this executable, when the run follows `cargo build` on the same machine).
    pub rustc: Option<String>,
    /// `release` or `debug`: whether this executable (and so the `majordomus` built beside it)
    /// was built with debug assertions.
    pub profile: &'static str,
    /// The workspace's version, which this executable and `majordomus` share.
    pub majordomus_version: &'static str,
}

impl Machine {
    pub fn describe() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        Machine {
            cpu_model: field(&cpuinfo, "model name"),
            logical_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            physical_cores: physical_cores(&cpuinfo),
            memory_mib: field(&meminfo, "MemTotal")
                .and_then(|value| value.split_whitespace().next()?.parse::<u64>().ok())
                .map(|kib| kib / 1024),
            os: std::fs::read_to_string("/etc/os-release")
                .ok()
                .and_then(|text| {
                    text.lines()
                        .find_map(|line| line.strip_prefix("PRETTY_NAME="))
                        .map(|value| value.trim_matches('"').to_string())
                }),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|text| text.trim().to_string()),
            rustc: std::process::Command::new("rustc")
                .arg("--version")
                .output()
                .ok()
                .filter(|output| output.status.success())
                .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string()),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
            majordomus_version: env!("CARGO_PKG_VERSION"),
        }
    }

    /// One line for the top of the table.
    pub fn summary(&self) -> String {
        format!(
            "{} · {} logical cores{} · {} · {} · {} · {} build",
            self.cpu_model.as_deref().unwrap_or("unknown CPU"),
            self.logical_cores,
            self.physical_cores
                .map(|n| format!(" ({n} physical)"))
                .unwrap_or_default(),
            self.memory_mib
                .map(|mib| format!("{:.1} GiB", mib as f64 / 1024.0))
                .unwrap_or_else(|| "unknown memory".into()),
            self.os.as_deref().unwrap_or("unknown OS"),
            self.kernel
                .as_deref()
                .map(|k| format!("Linux {k}"))
                .unwrap_or_default(),
            self.profile,
        )
    }
}

fn field(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then(|| value.trim().to_string())
    })
}

fn physical_cores(cpuinfo: &str) -> Option<usize> {
    let mut cores = BTreeSet::new();
    for block in cpuinfo.split("\n\n") {
        if let (Some(package), Some(core)) = (field(block, "physical id"), field(block, "core id"))
        {
            cores.insert((package, core));
        }
    }
    (!cores.is_empty()).then_some(cores.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cpuinfo_fields_and_counts_cores() {
        let text = "processor\t: 0\nmodel name\t: Some CPU @ 2.0GHz\nphysical id\t: 0\ncore id\t: 0\n\n\
                    processor\t: 1\nmodel name\t: Some CPU @ 2.0GHz\nphysical id\t: 0\ncore id\t: 0\n\n\
                    processor\t: 2\nmodel name\t: Some CPU @ 2.0GHz\nphysical id\t: 0\ncore id\t: 1\n";
        assert_eq!(
            field(text, "model name").as_deref(),
            Some("Some CPU @ 2.0GHz")
        );
        assert_eq!(physical_cores(text), Some(2));
        assert_eq!(physical_cores("processor : 0\n"), None);
    }
}
