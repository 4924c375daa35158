//! The providers a worker can run under, from the `providers.toml` shipped inside the
//! executable: which `clientInfo.name` values identify each, where a project configures its
//! MCP servers for it, and whether it has session hooks.

use std::collections::HashSet;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The provider every client that no entry names maps to.
pub const GENERIC: &str = "generic";

/// The shipped list, as written.
pub const PROVIDERS_TOML: &str = include_str!("../../providers.toml");

/// The format of a provider's project MCP configuration file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigFormat {
    Json,
    Toml,
    Yaml,
}

/// Where a project configures its MCP servers for a provider.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// The file, relative to the repository root.
    pub file: String,
    /// What it is written in.
    pub format: ConfigFormat,
}

/// One provider.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provider {
    /// Its id, as journals write it: `claude-code`, `codex`, …
    pub id: String,
    /// Its name for a person.
    pub title: String,
    /// The `clientInfo.name` values its client sends.
    #[serde(default)]
    pub client_names: Vec<String>,
    /// Its project MCP configuration file, when it has one.
    #[serde(default)]
    pub project_config: Option<ProjectConfig>,
    /// Whether it can run a command when a session starts or ends.
    pub session_hooks: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    providers: Vec<Provider>,
}

/// Every provider, in the file's order.
#[derive(Clone, Debug)]
pub struct Providers {
    list: Vec<Provider>,
}

impl Providers {
    /// Reads a providers document, refusing one that would make the mapping ambiguous: a
    /// repeated id, a client name claimed twice, or no `generic` entry to fall back on.
    pub fn parse(text: &str) -> Result<Providers, String> {
        let document: Document = toml::from_str(text)
            .map_err(|error| format!("the providers list cannot be read: {error}"))?;
        let mut ids = HashSet::new();
        let mut names = HashSet::new();
        for provider in &document.providers {
            if provider.id.trim().is_empty() {
                return Err("a provider has a blank id".into());
            }
            if !ids.insert(provider.id.as_str()) {
                return Err(format!("the provider `{}` is listed twice", provider.id));
            }
            for name in &provider.client_names {
                if !names.insert(name.trim().to_lowercase()) {
                    return Err(format!(
                        "the client name `{name}` is claimed by more than one provider"
                    ));
                }
            }
        }
        if !ids.contains(GENERIC) {
            return Err(format!(
                "there is no `{GENERIC}` provider for unknown clients to map to"
            ));
        }
        Ok(Providers {
            list: document.providers,
        })
    }

    /// The list shipped with this executable, parsed on first use.
    pub fn builtin() -> &'static Providers {
        static PROVIDERS: OnceLock<Providers> = OnceLock::new();
        PROVIDERS.get_or_init(|| {
            Providers::parse(PROVIDERS_TOML)
                .unwrap_or_else(|error| panic!("the shipped providers.toml is broken: {error}"))
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = &Provider> {
        self.list.iter()
    }

    pub fn get(&self, id: &str) -> Option<&Provider> {
        self.list.iter().find(|provider| provider.id == id)
    }

    /// The provider a client is running under, by the `clientInfo.name` it sent; `generic`
    /// when no provider lists that name.
    pub fn for_client(&self, client_name: &str) -> &Provider {
        let wanted = client_name.trim();
        self.list
            .iter()
            .find(|provider| {
                provider
                    .client_names
                    .iter()
                    .any(|name| name.trim().eq_ignore_ascii_case(wanted))
            })
            .or_else(|| self.get(GENERIC))
            .expect("parse refuses a list without `generic`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_list_names_the_known_clients() {
        let providers = Providers::builtin();
        let ids: Vec<&str> = providers.iter().map(|p| p.id.as_str()).collect();
        for id in ["claude-code", "codex", "gemini-cli", "cursor", "generic"] {
            assert!(ids.contains(&id), "{id} is missing from {ids:?}");
        }
        let claude = providers.get("claude-code").unwrap();
        assert_eq!(claude.title, "Claude Code");
        assert!(claude.session_hooks);
        assert_eq!(
            claude.project_config,
            Some(ProjectConfig {
                file: ".mcp.json".into(),
                format: ConfigFormat::Json
            })
        );
        let codex = providers.get("codex").unwrap();
        assert_eq!(
            codex.project_config.as_ref().unwrap().format,
            ConfigFormat::Toml
        );
        assert_eq!(
            codex.project_config.as_ref().unwrap().file,
            ".codex/config.toml"
        );
        assert_eq!(
            providers
                .get("gemini-cli")
                .unwrap()
                .project_config
                .as_ref()
                .unwrap()
                .file,
            ".gemini/settings.json"
        );
        assert_eq!(
            providers
                .get("cursor")
                .unwrap()
                .project_config
                .as_ref()
                .unwrap()
                .file,
            ".cursor/mcp.json"
        );
        assert!(providers.get(GENERIC).unwrap().project_config.is_none());
    }

    #[test]
    fn client_names_map_to_their_provider() {
        let providers = Providers::builtin();
        for (name, id) in [
            ("claude-code", "claude-code"),
            ("claude-ai", "claude-code"),
            ("codex-mcp-client", "codex"),
            ("Codex", "codex"),
            ("gemini-cli-mcp-client", "gemini-cli"),
            ("cursor-vscode", "cursor"),
            (" cursor ", "cursor"),
            ("my-own-agent", GENERIC),
            ("(not initialized)", GENERIC),
            ("", GENERIC),
        ] {
            assert_eq!(providers.for_client(name).id, id, "{name}");
        }
    }

    #[test]
    fn an_ambiguous_or_incomplete_list_is_refused() {
        let no_generic = r#"providers = [{ id = "a", title = "A", client_names = ["x"], session_hooks = false }]"#;
        assert!(
            Providers::parse(no_generic)
                .unwrap_err()
                .contains("generic")
        );
        let twice = r#"providers = [
            { id = "a", title = "A", client_names = ["x"], session_hooks = false },
            { id = "b", title = "B", client_names = ["X"], session_hooks = false },
            { id = "generic", title = "G", session_hooks = false },
        ]"#;
        assert!(Providers::parse(twice).unwrap_err().contains("`X`"));
        let same_id = r#"providers = [
            { id = "generic", title = "A", session_hooks = false },
            { id = "generic", title = "B", session_hooks = false },
        ]"#;
        assert!(Providers::parse(same_id).unwrap_err().contains("twice"));
        let unknown_field = r#"providers = [{ id = "generic", title = "A", session_hooks = false, colour = "red" }]"#;
        assert!(
            Providers::parse(unknown_field)
                .unwrap_err()
                .contains("colour")
        );
        let bad_format = r#"providers = [{ id = "generic", title = "A", session_hooks = false, project_config = { file = "x", format = "ini" } }]"#;
        assert!(Providers::parse(bad_format).is_err());
        assert!(Providers::parse("providers = [").is_err());
    }
}
