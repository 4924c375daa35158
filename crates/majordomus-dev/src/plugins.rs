//! The plugin and package manifests (`cargo xtask plugins [--check]`): the Claude Code
//! marketplace and plugin, the Codex marketplace and plugin, the Gemini CLI extension, the MCP
//! Registry `server.json` and the npm packages (the launcher and one package a platform, with
//! the table `npm/platforms.tsv` that `scripts/npm-pack.sh` packs them by), generated from
//! the declarations `majordomus install` writes from — the hook events, their edit-tool matchers and their timeout, the server's
//! name — and the workspace's version, so that a plugin wires a client exactly as
//! `majordomus install` does.
//!
//! Codex reads a repository's `.agents/plugins/marketplace.json` before its
//! `.claude-plugin/marketplace.json`, so each client installs its own plugin from the one
//! repository. Codex's plugin brings the server only: Codex 0.171.0 lists a plugin's hooks
//! and reports each one failed without starting its command, so its hooks come from
//! `majordomus install codex`.
//!
//! A plugin's hook must not break the client when `majordomus` is not installed: each one
//! runs through `sh`, ends quietly when `majordomus` is not on PATH, and otherwise execs it.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use majordomus_core::clients::HookClient;
use majordomus_core::clients::wiring::{Program, SERVER_NAME};

/// The version every manifest carries: the workspace's.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What every manifest says majordomus is.
const DESCRIPTION: &str = "Every AI coding agent session working on one git repository sees who else works where, and where their claimed paths collide.";

/// The name the MCP Registry lists the server under (the npm package's `mcpName`); the
/// registry grants an `io.github.<owner>/` name to that GitHub owner.
const REGISTRY_NAME: &str = "io.github.majordomus/majordomus";

/// The repository's public address: the workspace's `repository`, which the registry name's
/// owner matches.
const REPOSITORY: &str = env!("CARGO_PKG_REPOSITORY");

/// One platform an npm package carries the executable for: npm installs the one whose `os`
/// and `cpu` match the machine, and the launcher runs `majordomus-<os>-<cpu>`'s executable.
struct NpmPlatform {
    /// The release target whose archive the package's executable comes from.
    target: &'static str,
    /// Node's `process.platform`.
    os: &'static str,
    /// Node's `process.arch`.
    cpu: &'static str,
    /// The platform as people name it.
    named: &'static str,
}

/// The platforms of the npm packages: every target a release builds (`dist-workspace.toml`),
/// which a test holds them to.
const NPM_PLATFORMS: &[NpmPlatform] = &[
    NpmPlatform {
        target: "aarch64-apple-darwin",
        os: "darwin",
        cpu: "arm64",
        named: "macOS on Apple silicon",
    },
    NpmPlatform {
        target: "aarch64-unknown-linux-gnu",
        os: "linux",
        cpu: "arm64",
        named: "Linux on arm64",
    },
    NpmPlatform {
        target: "x86_64-apple-darwin",
        os: "darwin",
        cpu: "x64",
        named: "macOS on x86_64",
    },
    NpmPlatform {
        target: "x86_64-unknown-linux-gnu",
        os: "linux",
        cpu: "x64",
        named: "Linux on x86_64",
    },
    NpmPlatform {
        target: "x86_64-pc-windows-msvc",
        os: "win32",
        cpu: "x64",
        named: "Windows on x86_64",
    },
];

impl NpmPlatform {
    fn package(&self) -> String {
        format!("{SERVER_NAME}-{}-{}", self.os, self.cpu)
    }

    fn executable(&self) -> String {
        if self.os == "win32" {
            format!("{SERVER_NAME}.exe")
        } else {
            SERVER_NAME.to_owned()
        }
    }
}

/// One generated file, relative to the workspace root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    pub path: PathBuf,
    pub text: String,
}

/// The workspace root, where the manifests live.
pub fn default_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the crate lives at crates/majordomus-dev of the workspace")
        .to_path_buf()
}

/// The `hooks` object of a client's hook file: one entry per event majordomus answers, as
/// `majordomus install` writes it, running the `majordomus` found on PATH through a command
/// that ends quietly, letting the client go on, when there is none.
fn hooks(client: HookClient) -> Value {
    let contract = client.contract();
    let program = Program::at(Path::new(SERVER_NAME));
    let mut by_event = serde_json::Map::new();
    for hook in contract.hooks() {
        let entry = contract.hook_entry(hook, program.hook(client, hook.event));
        by_event.insert(hook.event.to_owned(), json!([entry]));
    }
    Value::Object(by_event)
}

fn server() -> Value {
    json!({"command": SERVER_NAME, "args": ["mcp"]})
}

/// A manifest that publishes majordomus: its name, version, description, licence and home
/// page, as every such manifest gives them, and the manifest's own fields `more`.
fn publishing(more: Value) -> Value {
    let mut manifest = json!({
        "name": SERVER_NAME,
        "version": VERSION,
        "description": DESCRIPTION,
        "license": "MIT OR Apache-2.0",
        "homepage": REPOSITORY,
    });
    if let (Value::Object(fields), Value::Object(more)) = (&mut manifest, more) {
        fields.extend(more);
    }
    manifest
}

/// Every manifest, in a stable order.
pub fn manifests() -> Vec<Manifest> {
    let claude_plugin = "plugins/claude-code";
    let codex_plugin = "plugins/codex";
    let gemini_extension = "plugins/gemini-cli";
    let files = [
        (
            ".claude-plugin/marketplace.json".to_owned(),
            json!({
                "name": SERVER_NAME,
                "owner": {"name": "majordomus"},
                "metadata": {"description": "The majordomus plugin for Claude Code", "version": VERSION},
                "plugins": [{
                    "name": SERVER_NAME,
                    "source": format!("./{claude_plugin}"),
                    "description": DESCRIPTION,
                    "version": VERSION,
                }],
            }),
        ),
        (
            format!("{claude_plugin}/.claude-plugin/plugin.json"),
            publishing(json!({"repository": REPOSITORY})),
        ),
        (
            format!("{claude_plugin}/.mcp.json"),
            json!({"mcpServers": {SERVER_NAME: server()}}),
        ),
        (
            format!("{claude_plugin}/hooks/hooks.json"),
            json!({"hooks": hooks(HookClient::ClaudeCode)}),
        ),
        (
            ".agents/plugins/marketplace.json".to_owned(),
            json!({
                "name": SERVER_NAME,
                "interface": {"displayName": SERVER_NAME},
                "plugins": [{
                    "name": SERVER_NAME,
                    "source": {"source": "local", "path": format!("./{codex_plugin}")},
                    "policy": {"installation": "AVAILABLE", "authentication": "ON_INSTALL"},
                    "category": "Coding",
                }],
            }),
        ),
        (
            format!("{codex_plugin}/.codex-plugin/plugin.json"),
            publishing(json!({"repository": REPOSITORY, "mcpServers": "./.mcp.json"})),
        ),
        (
            format!("{codex_plugin}/.mcp.json"),
            json!({"mcpServers": {SERVER_NAME: server()}}),
        ),
        (
            format!("{gemini_extension}/gemini-extension.json"),
            json!({
                "name": SERVER_NAME,
                "version": VERSION,
                "description": DESCRIPTION,
                "mcpServers": {SERVER_NAME: server()},
            }),
        ),
        (
            format!("{gemini_extension}/hooks/hooks.json"),
            json!({"hooks": hooks(HookClient::GeminiCli)}),
        ),
        (
            "server.json".to_owned(),
            json!({
                "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
                "name": REGISTRY_NAME,
                "title": SERVER_NAME,
                "description": "The board of the AI coding agents working on one git repository: who works where, and where their paths collide.",
                "version": VERSION,
                "repository": {"url": REPOSITORY, "source": "github"},
                "websiteUrl": REPOSITORY,
                "packages": [{
                    "registryType": "npm",
                    "identifier": SERVER_NAME,
                    "version": VERSION,
                    "transport": {"type": "stdio"},
                    "packageArguments": [{"type": "positional", "value": "mcp"}],
                }],
            }),
        ),
        (
            "npm/majordomus/package.json".to_owned(),
            publishing(json!({
                "repository": {"type": "git", "url": format!("git+{REPOSITORY}.git")},
                "mcpName": REGISTRY_NAME,
                "bin": {SERVER_NAME: "bin/majordomus.js"},
                "files": ["bin/majordomus.js"],
                "engines": {"node": ">=18"},
                "optionalDependencies": NPM_PLATFORMS
                    .iter()
                    .map(|platform| (platform.package(), json!(VERSION)))
                    .collect::<serde_json::Map<_, _>>(),
            })),
        ),
    ];
    let mut manifests: Vec<Manifest> = files
        .into_iter()
        .map(|(path, value)| Manifest {
            path: PathBuf::from(path),
            text: json_text(&value),
        })
        .collect();
    manifests.extend(npm_platform_packages());
    manifests
}

fn json_text(value: &Value) -> String {
    serde_json::to_string_pretty(value).expect("a JSON value serialises") + "\n"
}

/// Each platform's npm package (its `package.json` and README) and the table
/// `npm/platforms.tsv` — package, release target, executable — that `scripts/npm-pack.sh`
/// packs them by.
fn npm_platform_packages() -> Vec<Manifest> {
    let mut table = String::from(
        "# Generated by `cargo xtask plugins`: the npm package of each release target and the \
         executable it carries.\n",
    );
    let mut manifests = Vec::new();
    for platform in NPM_PLATFORMS {
        let package = platform.package();
        let executable = platform.executable();
        table.push_str(&format!("{package}\t{}\t{executable}\n", platform.target));
        manifests.push(Manifest {
            path: PathBuf::from(format!("npm/{package}/package.json")),
            text: json_text(&json!({
                "name": package,
                "version": VERSION,
                "description": format!(
                    "The majordomus executable for {} (installed by the majordomus package).",
                    platform.named
                ),
                "license": "MIT OR Apache-2.0",
                "repository": {"type": "git", "url": format!("git+{REPOSITORY}.git")},
                "os": [platform.os],
                "cpu": [platform.cpu],
                "files": [format!("bin/{executable}")],
                "preferUnplugged": true,
            })),
        });
        manifests.push(Manifest {
            path: PathBuf::from(format!("npm/{package}/README.md")),
            text: format!(
                "# {package}\n\nThe `majordomus` executable for {}. Install the `majordomus` \
                 package instead:\nnpm picks this one for you on a matching machine.\n",
                platform.named
            ),
        });
    }
    manifests.push(Manifest {
        path: PathBuf::from("npm/platforms.tsv"),
        text: table,
    });
    manifests
}

/// The manifests under `root` that differ from what the code generates, each named.
pub fn check(root: &Path, manifests: &[Manifest]) -> Vec<String> {
    manifests
        .iter()
        .filter_map(|manifest| {
            let path = root.join(&manifest.path);
            match std::fs::read_to_string(&path) {
                Ok(text) if text == manifest.text => None,
                Ok(_) => Some(format!(
                    "{} differs from what the code generates",
                    path.display()
                )),
                Err(error) => Some(format!("{} cannot be read: {error}", path.display())),
            }
        })
        .collect()
}

/// `cargo xtask plugins [--check]`: writes the manifests under `root`, or only compares them.
pub fn command(root: &Path, check_only: bool) -> Result<(), String> {
    let manifests = manifests();
    if check_only {
        let problems = check(root, &manifests);
        if problems.is_empty() {
            println!(
                "{}: all {} plugin and package manifests are what the code generates",
                root.display(),
                manifests.len()
            );
            return Ok(());
        }
        for problem in &problems {
            eprintln!("{problem}");
        }
        return Err(format!(
            "{} of the plugin and package manifests are not what the code generates; run `cargo xtask plugins` and commit the result",
            problems.len()
        ));
    }
    for manifest in &manifests {
        let path = root.join(&manifest.path);
        let parent = path.parent().expect("a manifest lives in a directory");
        std::fs::create_dir_all(parent)
            .and_then(|()| std::fs::write(&path, &manifest.text))
            .map_err(|error| format!("could not write {}: {error}", path.display()))?;
    }
    println!(
        "wrote {} plugin and package manifests under {}",
        manifests.len(),
        root.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_npm_package_carries_each_target_a_release_builds() {
        let config = std::fs::read_to_string(default_root().join("dist-workspace.toml")).unwrap();
        let config: toml_edit::DocumentMut = config.parse().unwrap();
        let mut released: Vec<&str> = config["dist"]["targets"]
            .as_array()
            .expect("dist-workspace.toml lists the release targets")
            .iter()
            .map(|target| target.as_str().unwrap())
            .collect();
        released.sort_unstable();
        let mut packaged: Vec<&str> = NPM_PLATFORMS.iter().map(|p| p.target).collect();
        packaged.sort_unstable();
        assert_eq!(packaged, released);
    }

    #[test]
    fn the_committed_manifests_are_what_the_code_generates() {
        let problems = check(&default_root(), &manifests());
        assert!(
            problems.is_empty(),
            "run `cargo xtask plugins`:\n{}",
            problems.join("\n")
        );
    }

    #[test]
    fn each_plugin_hook_answers_the_events_install_wires() {
        let manifests = manifests();
        for (client, file) in [
            (
                HookClient::ClaudeCode,
                "plugins/claude-code/hooks/hooks.json",
            ),
            (HookClient::GeminiCli, "plugins/gemini-cli/hooks/hooks.json"),
        ] {
            let manifest = manifests
                .iter()
                .find(|manifest| manifest.path == Path::new(file))
                .expect("the hook file is generated");
            let hooks: Value = serde_json::from_str(&manifest.text).unwrap();
            let wired: Vec<&str> = hooks["hooks"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            let mut expected: Vec<&str> = client
                .contract()
                .hooks()
                .iter()
                .map(|hook| hook.event)
                .collect();
            expected.sort_unstable();
            let mut wired = wired;
            wired.sort_unstable();
            assert_eq!(wired, expected, "{client}");
        }
    }
}
