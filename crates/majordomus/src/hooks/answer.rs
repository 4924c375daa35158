//! What the hook answers, in the client's own contract: the guard's decision by
//! `[hooks] policy` before an edit — under `guard`, the default, a live session's claim stops
//! the edit (asking only where a person can answer), and so does a lease another session
//! holds that a shell command needs (`[leases.commands]`), with the way to wait its turn;
//! another worktree's uncommitted change or a predicted conflict refuses the first attempt
//! and lets the same edit repeated soon pass, a departed claim is a line — and what is said
//! after an edit and as news. The words are
//! decided here; each client's contract ([`majordomus_core::clients::Contract`]) gives them the shape
//! that client honours.

use majordomus_checkout::config::GuardPolicy;
use majordomus_domain::peers::WaitHolder;
use serde_json::Value;

use majordomus_core::clients::{HookClient, NewsMoment, text};

/// What the guard found before an edit, by what each finding calls for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// Live other sessions' claims on the files: under `guard`, they stop the edit.
    pub live: Vec<String>,
    /// Leases the command needs that another session or process holds: under `guard`, they
    /// stop it as a live claim does.
    pub leases: Vec<LeaseHeld>,
    /// Other worktrees' uncommitted changes to the files and conflicts predicted on them:
    /// under `guard`, the first attempt is refused and the same edit repeated soon passes.
    pub bumps: Vec<String>,
    /// Whether this edit is the repetition that passes the speed bumps.
    pub bump_passed: bool,
    /// Departed sessions' claims on the files: a line of context under `guard`.
    pub departed: Vec<String>,
    /// For a write that lands in another worktree than the session's own, a line naming
    /// it: said with the findings, never alone.
    pub landing: Vec<String>,
    /// The first live session whose claim the files meet: the one a stopped session waits on.
    pub holder: Option<WaitHolder>,
}

/// A lease a shell command needs that someone else holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseHeld {
    /// The lease, as `[leases.commands]` names it.
    pub name: String,
    /// The holder, its grant and who waits, as a line.
    pub line: String,
    /// The simple command that needs it, as shell words.
    pub command: Vec<String>,
}

impl Found {
    fn is_empty(&self) -> bool {
        !self.stops() && self.bumps.is_empty() && self.departed.is_empty()
    }

    /// Whether it holds what stops a tool call under `guard`: a live claim, a lease held.
    fn stops(&self) -> bool {
        !(self.live.is_empty() && self.leases.is_empty())
    }

    fn all(&self) -> Vec<String> {
        self.landing
            .iter()
            .chain(&self.live)
            .chain(self.leases.iter().map(|lease| &lease.line))
            .chain(&self.bumps)
            .chain(&self.departed)
            .cloned()
            .collect()
    }

    /// What the guard's words are about: the files, the leases, or both.
    fn header(
        &self,
        files: &'static str,
        leases: &'static str,
        both: &'static str,
    ) -> &'static str {
        match (
            self.leases.is_empty(),
            self.live.is_empty() && self.bumps.is_empty() && self.departed.is_empty(),
        ) {
            (true, _) => files,
            (false, true) => leases,
            (false, false) => both,
        }
    }
}

/// What majordomus has to say about one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Said {
    /// Other sessions claim files of an edit about to happen; the policy says what to do,
    /// and `person` whether the client has a person at hand to ask.
    Claimed {
        policy: GuardPolicy,
        person: bool,
        found: Found,
    },
    /// Other sessions claim files of an edit just made.
    ClaimedAfterEdit(Vec<String>),
    /// News for the session.
    News {
        moment: NewsMoment,
        lines: Vec<String>,
    },
    /// The server heard the session end; the client is told nothing.
    Ended,
    /// The server heard the session wait for the person; the client is told nothing.
    Waiting,
}

/// The live session whose claim stops the tool call, when the answer to `said` stops it:
/// under `guard` and `deny` always, under `ask` where a person is asked. A lease held
/// elsewhere stops a command too, but names no session of the board.
pub fn blocked_by(said: &Said) -> Option<&WaitHolder> {
    let Said::Claimed {
        policy,
        person,
        found,
    } = said
    else {
        return None;
    };
    let stops = match policy {
        GuardPolicy::Guard | GuardPolicy::Deny => true,
        GuardPolicy::Ask => *person,
        GuardPolicy::Warn | GuardPolicy::Off => false,
    };
    found
        .holder
        .as_ref()
        .filter(|_| stops && !found.live.is_empty())
}

/// The answer the client reads on stdout, in its own contract; `None` when it should get no
/// output at all.
pub fn answer(client: HookClient, event: &str, said: &Said) -> Option<Value> {
    match said {
        Said::Claimed { found, .. } if found.is_empty() => None,
        Said::ClaimedAfterEdit(lines) | Said::News { lines, .. } if lines.is_empty() => None,
        Said::Ended | Said::Waiting => None,
        Said::Claimed {
            policy,
            person,
            found,
        } => guard_answer(client, event, *policy, *person, found),
        Said::ClaimedAfterEdit(lines) => client.contract().after_edit(
            event,
            &text("other sessions claim the file just edited:", lines),
        ),
        Said::News { moment, lines } => {
            let header = match moment {
                NewsMoment::SessionStart => "who else works on this repository:",
                NewsMoment::Prompt => "new on this repository's board since your last prompt:",
            };
            client.contract().news(event, &text(header, lines))
        }
    }
}

/// What a hook prints: its answer, and whether that answer carries the messages handed to it.
pub struct WithInbox {
    pub answer: Option<Value>,
    /// Whether the messages are in the answer, so that printing it delivers them.
    pub carried: bool,
}

/// `answered` with the messages handed to the session added as context the model reads:
/// after what majordomus itself says, or alone where it says nothing. An answer with no place
/// for context does not carry them.
pub fn with_inbox(
    client: HookClient,
    event: &str,
    answered: Option<Value>,
    inbox: Option<&str>,
) -> WithInbox {
    let Some(inbox) = inbox else {
        return WithInbox {
            answer: answered,
            carried: false,
        };
    };
    match answered {
        Some(mut value) => {
            let context = value
                .get_mut("hookSpecificOutput")
                .and_then(|output| output.as_object_mut());
            let carried = context.is_some();
            if let Some(output) = context {
                let before = output
                    .get("additionalContext")
                    .and_then(Value::as_str)
                    .map(|told| format!("{told}\n\n"))
                    .unwrap_or_default();
                output.insert(
                    "additionalContext".to_owned(),
                    Value::String(format!("{before}{inbox}")),
                );
            }
            WithInbox {
                answer: Some(value),
                carried,
            }
        }
        None => {
            let answer = client.contract().news(event, inbox);
            WithInbox {
                carried: answer.is_some(),
                answer,
            }
        }
    }
}

/// What a refused edit may do next.
const WAY_FORWARD: &str = "Nothing was written. Wait until the other session is done \
    with the file, talk to it about the change, or ask the person to allow the edit.";

/// The longest command the way forward repeats; a longer one is named `COMMAND`.
const COMMAND_SHOWN_BYTES: usize = 200;

/// What a command stopped for the leases it needs may do next: wait its turn, through the
/// tool or through `majordomus lease`, which holds each lease for the command's run.
fn lease_way_forward(leases: &[LeaseHeld]) -> String {
    let names: Vec<String> = leases
        .iter()
        .map(|lease| format!("`{}`", lease.name))
        .collect();
    let command = leases
        .first()
        .and_then(|lease| shlex::try_join(lease.command.iter().map(String::as_str)).ok())
        .filter(|command| {
            command.len() <= COMMAND_SHOWN_BYTES
                && majordomus_domain::text::find_refused(command).is_none()
        })
        .unwrap_or_else(|| "COMMAND".to_owned());
    let held_for_the_run: String = leases
        .iter()
        .map(|lease| format!("majordomus lease {} -- ", lease.name))
        .collect();
    format!(
        "Nothing ran. Wait your turn: call `majordomus_lease` for {} with `wait_secs`, run \
         the command once granted and `majordomus_release` after; or run `{held_for_the_run}{command}`, \
         which waits for the lease, holds it while the command runs and releases it when the \
         command exits.",
        names.join(" and ")
    )
}

/// The guard's answer before an edit, by policy, in what the client honours.
fn guard_answer(
    client: HookClient,
    event: &str,
    policy: GuardPolicy,
    person: bool,
    found: &Found,
) -> Option<Value> {
    let contract = client.contract();
    let all = found.all();
    let told = text(
        found.header(
            "other sessions claim files this edit changes:",
            "another session holds a lease this command needs:",
            "other sessions claim files this command changes or hold leases it needs:",
        ),
        &all,
    );
    // What a finished session left is information under every policy: it refuses nobody
    // and asks nobody, so a person's next session is never stopped by their last one.
    let policy = match policy {
        GuardPolicy::Ask | GuardPolicy::Deny if !found.stops() && found.bumps.is_empty() => {
            GuardPolicy::Warn
        }
        policy => policy,
    };
    match policy {
        GuardPolicy::Off => None,
        GuardPolicy::Warn => Some(contract.warning(event, &told)),
        GuardPolicy::Ask => Some(contract.policy_asks(event, person, &told, &all)),
        GuardPolicy::Deny => {
            let mut refused = text(
                found.header(
                    "majordomus refused this edit: this repository's policy (`[hooks] policy = \
                     \"deny\"` in majordomus.toml) refuses edits of files other sessions claim.",
                    "majordomus refused this command: this repository's policy (`[hooks] policy \
                     = \"deny\"` in majordomus.toml) refuses a command while another session \
                     holds a lease it needs.",
                    "majordomus refused this command: this repository's policy (`[hooks] policy \
                     = \"deny\"` in majordomus.toml) refuses it while other sessions claim \
                     files it changes or hold leases it needs.",
                ),
                &all,
            );
            if !found.leases.is_empty() {
                refused.push('\n');
                refused.push_str(&lease_way_forward(&found.leases));
            }
            Some(contract.refusal(event, &refused))
        }
        GuardPolicy::Guard if !found.stops() && !found.bumps.is_empty() => {
            Some(if found.bump_passed {
                contract.warning(
                    event,
                    &text(
                        "this edit was stopped once and repeated, so it goes ahead:",
                        &all,
                    ),
                )
            } else {
                let mut stopped = text(
                    "majordomus stopped this edit once, before it ran: it meets other \
                     worktrees' work.",
                    &all,
                );
                stopped.push_str(
                    "\nNothing was written. Repeat the same edit within five minutes and it \
                     goes ahead; or look at the other worktree's work first.",
                );
                contract.refusal(event, &stopped)
            })
        }
        GuardPolicy::Guard if !found.stops() => Some(contract.warning(
            event,
            &text(
                "sessions that have left still claim files this edit changes:",
                &found.departed,
            ),
        )),
        GuardPolicy::Guard => {
            let mut stopped = text(
                if found.live.is_empty() {
                    "majordomus stopped this command before it ran: another session holds a \
                     lease it needs."
                } else {
                    "majordomus stopped this tool call before it ran: live sessions work on what it changes."
                },
                &all,
            );
            if !found.live.is_empty() {
                stopped.push('\n');
                stopped.push_str(WAY_FORWARD);
            }
            if !found.leases.is_empty() {
                stopped.push('\n');
                stopped.push_str(&lease_way_forward(&found.leases));
            }
            Some(if person {
                contract.asking(event, &stopped)
            } else {
                contract.refusal(event, &stopped)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `client` has a person to ask when Claude Code's entry point is `entrypoint`.
    fn can_ask_person(client: HookClient, entrypoint: Option<&str>) -> bool {
        client.contract().can_ask_person(&|name| {
            (name == "CLAUDE_CODE_ENTRYPOINT")
                .then(|| entrypoint.map(str::to_owned))
                .flatten()
        })
    }

    fn found(live: bool) -> Found {
        let line = "\"src/x.rs\" lies in the claim of p2".to_owned();
        if live {
            Found {
                live: vec![line],
                ..Found::default()
            }
        } else {
            Found {
                departed: vec![line],
                ..Found::default()
            }
        }
    }

    #[test]
    fn codex_is_never_answered_allow_or_ask() {
        for policy in [
            GuardPolicy::Guard,
            GuardPolicy::Warn,
            GuardPolicy::Ask,
            GuardPolicy::Deny,
        ] {
            for person in [false, true] {
                let said = Said::Claimed {
                    policy,
                    person: person && can_ask_person(HookClient::Codex, Some("cli")),
                    found: found(true),
                };
                let answer = answer(HookClient::Codex, "PreToolUse", &said).unwrap();
                let decision = &answer["hookSpecificOutput"]["permissionDecision"];
                match policy {
                    GuardPolicy::Deny | GuardPolicy::Guard => assert_eq!(decision, "deny"),
                    _ => assert!(decision.is_null(), "{answer}"),
                }
            }
        }
    }

    #[test]
    fn the_default_guard_stops_a_live_claim_asking_only_where_a_person_can_answer() {
        let person = can_ask_person(HookClient::ClaudeCode, Some("cli"));
        assert!(person);
        assert!(!can_ask_person(HookClient::ClaudeCode, Some("sdk-cli")));
        assert!(!can_ask_person(HookClient::ClaudeCode, None));
        assert!(!can_ask_person(HookClient::GeminiCli, Some("cli")));
        let said = |person| Said::Claimed {
            policy: GuardPolicy::Guard,
            person,
            found: found(true),
        };
        let asked = answer(HookClient::ClaudeCode, "PreToolUse", &said(true)).unwrap();
        assert_eq!(asked["hookSpecificOutput"]["permissionDecision"], "ask");
        let refused = answer(HookClient::ClaudeCode, "PreToolUse", &said(false)).unwrap();
        assert_eq!(refused["hookSpecificOutput"]["permissionDecision"], "deny");
        let reason = refused["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap();
        assert!(
            reason.contains("claim of p2") && reason.contains("Nothing was written"),
            "{reason}"
        );
        let gemini = answer(HookClient::GeminiCli, "BeforeTool", &said(false)).unwrap();
        assert_eq!(gemini["decision"], "deny");
        // a departed session's claim is a line of context, never a refusal
        let departed = Said::Claimed {
            policy: GuardPolicy::Guard,
            person: false,
            found: found(false),
        };
        let told = answer(HookClient::ClaudeCode, "PreToolUse", &departed).unwrap();
        assert!(told["hookSpecificOutput"]["permissionDecision"].is_null());
        assert!(
            told["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .unwrap()
                .contains("have left")
        );
        let bump = |bump_passed| Said::Claimed {
            policy: GuardPolicy::Guard,
            person: true,
            found: Found {
                bumps: vec!["worktree \"/w/b\" has uncommitted changes to \"src/x.rs\"".into()],
                bump_passed,
                ..Found::default()
            },
        };
        let first = answer(HookClient::ClaudeCode, "PreToolUse", &bump(false)).unwrap();
        assert_eq!(first["hookSpecificOutput"]["permissionDecision"], "deny");
        let again = answer(HookClient::ClaudeCode, "PreToolUse", &bump(true)).unwrap();
        assert!(again["hookSpecificOutput"]["permissionDecision"].is_null());
        assert!(
            again["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .unwrap()
                .contains("goes ahead")
        );
        let off = Said::Claimed {
            policy: GuardPolicy::Off,
            person: true,
            found: found(true),
        };
        assert_eq!(answer(HookClient::ClaudeCode, "PreToolUse", &off), None);
    }

    #[test]
    fn a_lease_held_elsewhere_is_decided_as_a_live_claim_with_the_way_to_wait() {
        let held = |policy, person| Said::Claimed {
            policy,
            person,
            found: Found {
                leases: vec![LeaseHeld {
                    name: "test-suite".into(),
                    line: "the lease \"test-suite\" is held by \"p2 codex in beta\"".into(),
                    command: vec!["cargo".into(), "test".into(), "--workspace".into()],
                }],
                ..Found::default()
            },
        };
        let reason = |answer: &Value| {
            answer["hookSpecificOutput"]["permissionDecisionReason"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        let asked = answer(
            HookClient::ClaudeCode,
            "PreToolUse",
            &held(GuardPolicy::Guard, true),
        )
        .unwrap();
        assert_eq!(asked["hookSpecificOutput"]["permissionDecision"], "ask");
        let refused = answer(
            HookClient::ClaudeCode,
            "PreToolUse",
            &held(GuardPolicy::Guard, false),
        )
        .unwrap();
        assert_eq!(refused["hookSpecificOutput"]["permissionDecision"], "deny");
        let refusal = reason(&refused);
        for part in [
            "stopped this command before it ran",
            "p2 codex in beta",
            "`majordomus_lease` for `test-suite` with `wait_secs`",
            "`majordomus lease test-suite -- cargo test --workspace`",
        ] {
            assert!(refusal.contains(part), "{part}: {refusal}");
        }
        assert!(!refusal.contains("Nothing was written"), "{refusal}");
        let denied = answer(
            HookClient::ClaudeCode,
            "PreToolUse",
            &held(GuardPolicy::Deny, true),
        )
        .unwrap();
        assert!(reason(&denied).contains("refused this command"), "{denied}");
        let warned = answer(
            HookClient::ClaudeCode,
            "PreToolUse",
            &held(GuardPolicy::Warn, true),
        )
        .unwrap();
        assert!(warned["hookSpecificOutput"]["permissionDecision"].is_null());
        assert!(
            warned["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .unwrap()
                .contains("holds a lease this command needs")
        );
        assert_eq!(
            answer(
                HookClient::ClaudeCode,
                "PreToolUse",
                &held(GuardPolicy::Off, true)
            ),
            None
        );
        let codex = answer(
            HookClient::Codex,
            "PreToolUse",
            &held(
                GuardPolicy::Guard,
                can_ask_person(HookClient::Codex, Some("cli")),
            ),
        )
        .unwrap();
        assert_eq!(codex["hookSpecificOutput"]["permissionDecision"], "deny");
    }

    #[test]
    fn nothing_found_is_no_answer_at_all() {
        for client in HookClient::ALL {
            for said in [
                Said::Claimed {
                    policy: GuardPolicy::Deny,
                    person: false,
                    found: Found::default(),
                },
                Said::ClaimedAfterEdit(vec![]),
                Said::News {
                    moment: NewsMoment::Prompt,
                    lines: vec![],
                },
            ] {
                assert_eq!(answer(client, "PreToolUse", &said), None);
            }
        }
    }
}
