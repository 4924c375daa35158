//! `[leases]`: which shell commands need which of the repository's leases, bounded as every
//! setting of a repository's file is, and matched word by word.

use std::collections::{BTreeMap, HashMap};

use majordomus_domain::leases::Resource;
use majordomus_domain::limits::{
    LEASE_COMMAND_BYTES, LEASE_COMMAND_PREFIXES, LEASE_COMMAND_WORDS, LEASES_DECLARED,
};
use serde::Deserialize;

/// `[leases]`: the repository's shared resources as its commands need them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LeasesConfig {
    /// Which commands need which lease: a lease's name, and the commands that need it as
    /// the shell writes them, program first (`test-suite = ["cargo test", "npm test"]`). A
    /// shell command an agent runs is held back while another session holds the lease when
    /// one of its simple commands starts with these words (`cargo test --workspace`, `FOO=1
    /// cargo test`, the `cargo test` of `cd x && cargo test`). At most [`LEASES_DECLARED`]
    /// leases, [`LEASE_COMMAND_PREFIXES`] commands each, [`LEASE_COMMAND_WORDS`] words and
    /// [`LEASE_COMMAND_BYTES`] bytes a command.
    pub commands: BTreeMap<String, Vec<String>>,
}

/// The words that end one simple command and start another: a declared command is one
/// simple command, so it holds none.
const SHELL_SEPARATORS: [&str; 5] = ["&&", "||", ";", "|", "&"];

impl LeasesConfig {
    /// What is wrong with the declarations, if anything, in words naming the setting and
    /// the bound.
    pub(super) fn problem(&self) -> Option<String> {
        use majordomus_domain::text::for_terminal;
        if self.commands.len() > LEASES_DECLARED {
            return Some(format!(
                "leases.commands declares {} leases: at most {LEASES_DECLARED}",
                self.commands.len()
            ));
        }
        for (name, prefixes) in &self.commands {
            let setting = format!("leases.commands.{}", for_terminal(name));
            match Resource::parse(name) {
                Err(error) => return Some(format!("{setting}: {error}")),
                Ok(Resource::PortRange { .. }) => {
                    return Some(format!(
                        "{setting}: a port range hands each worktree a port of its own, so no \
                         command waits for it; declare commands for a lease such as \
                         `test-suite` or `port:5432`"
                    ));
                }
                Ok(Resource::Named(_)) => {}
            }
            if prefixes.is_empty() || prefixes.len() > LEASE_COMMAND_PREFIXES {
                return Some(format!(
                    "{setting} lists {} commands: between 1 and {LEASE_COMMAND_PREFIXES}",
                    prefixes.len()
                ));
            }
            for prefix in prefixes {
                let shown = for_terminal(prefix);
                if prefix.len() > LEASE_COMMAND_BYTES {
                    return Some(format!(
                        "{setting}: a command is at most {LEASE_COMMAND_BYTES} bytes; one has {}",
                        prefix.len()
                    ));
                }
                if majordomus_domain::text::find_refused(prefix).is_some() {
                    return Some(format!(
                        "{setting}: `{shown}` is not one line of plain text"
                    ));
                }
                let Some(words) = shlex::split(prefix) else {
                    return Some(format!(
                        "{setting}: `{shown}` is not shell words (a quote is left open)"
                    ));
                };
                if words.is_empty() || words.len() > LEASE_COMMAND_WORDS {
                    return Some(format!(
                        "{setting}: `{shown}` has {} words: between 1 and {LEASE_COMMAND_WORDS}",
                        words.len()
                    ));
                }
                if words
                    .iter()
                    .any(|word| SHELL_SEPARATORS.contains(&word.as_str()) || word.ends_with(';'))
                {
                    return Some(format!(
                        "{setting}: `{shown}` is more than one command; declare each simple \
                         command on its own"
                    ));
                }
            }
        }
        None
    }

    /// The declared commands, ready to be matched.
    pub fn matcher(&self) -> LeaseCommands {
        let mut commands = LeaseCommands::default();
        for (name, prefixes) in &self.commands {
            for words in prefixes.iter().filter_map(|prefix| shlex::split(prefix)) {
                let mut node = &mut commands.root;
                for word in words {
                    node = node.next.entry(word).or_default();
                }
                if !node.leases.contains(name) {
                    node.leases.push(name.clone());
                }
            }
        }
        commands
    }
}

/// The declared commands as a tree of their words: a command is looked up word by word, so
/// matching it costs as many lookups as it has words (at most [`LEASE_COMMAND_WORDS`]),
/// however many commands the repository declares.
#[derive(Debug, Default)]
pub struct LeaseCommands {
    root: WordNode,
}

#[derive(Debug, Default)]
struct WordNode {
    /// The leases of the commands that end at this word.
    leases: Vec<String>,
    next: HashMap<String, WordNode>,
}

impl LeaseCommands {
    /// The leases a simple command needs: those declaring a command its words start with.
    /// `command` is the program and its arguments as the shell splits them, assignments and
    /// redirections left out; its program matches a declared program as written or by its
    /// file name (`/usr/bin/cargo` is `cargo`).
    pub fn needed_by(&self, command: &[String]) -> Vec<&str> {
        let mut needed: Vec<&str> = Vec::new();
        let Some((program, arguments)) = command.split_first() else {
            return needed;
        };
        let file_name = program.rsplit('/').next().unwrap_or(program);
        let mut starts = vec![program.as_str()];
        if file_name != program {
            starts.push(file_name);
        }
        for start in starts {
            let Some(mut node) = self.root.next.get(start) else {
                continue;
            };
            needed.extend(node.leases.iter().map(String::as_str));
            for word in arguments {
                let Some(next) = node.next.get(word) else {
                    break;
                };
                node = next;
                needed.extend(node.leases.iter().map(String::as_str));
            }
        }
        let mut seen = std::collections::HashSet::new();
        needed.retain(|name| seen.insert(*name));
        needed
    }
}
