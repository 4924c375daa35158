//! What the hook answers, in the client's own contract: the guard's decision by
//! `[hooks] policy` before an edit — under `guard`, the default, a live session's claim stops
//! the edit (asking only where a person can answer), another worktree's uncommitted change or
//! a predicted conflict refuses the first attempt and lets the same edit repeated soon pass,
//! a departed claim is a line — and what is said after an edit and as news. The words are
//! decided here; each client's contract ([`crate::clients::Contract`]) gives them the shape
//! that client honours.

use majordomus_checkout::config::GuardPolicy;
use serde_json::Value;

use crate::clients::{HookClient, NewsMoment, text};

/// What the guard found before an edit, by what each finding calls for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// Live other sessions' claims on the files: under `guard`, they stop the edit.
    pub live: Vec<String>,
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
}

impl Found {
    fn is_empty(&self) -> bool {
        self.live.is_empty() && self.bumps.is_empty() && self.departed.is_empty()
    }

    fn all(&self) -> Vec<String> {
        self.landing
            .iter()
            .chain(&self.live)
            .chain(&self.bumps)
            .chain(&self.departed)
            .cloned()
            .collect()
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
}

/// The answer the client reads on stdout, in its own contract; `None` when it should get no
/// output at all.
pub fn answer(client: HookClient, event: &str, said: &Said) -> Option<Value> {
    match said {
        Said::Claimed { found, .. } if found.is_empty() => None,
        Said::ClaimedAfterEdit(lines) | Said::News { lines, .. } if lines.is_empty() => None,
        Said::Ended => None,
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

/// What a refused edit may do next.
const WAY_FORWARD: &str = "Nothing was written. Wait until the other session is done \
    with the file, talk to it about the change, or ask the person to allow the edit.";

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
    let told = text("other sessions claim files this edit changes:", &all);
    // What a finished session left is information under every policy: it refuses nobody
    // and asks nobody, so a person's next session is never stopped by their last one.
    let policy = match policy {
        GuardPolicy::Ask | GuardPolicy::Deny if found.live.is_empty() && found.bumps.is_empty() => {
            GuardPolicy::Warn
        }
        policy => policy,
    };
    match policy {
        GuardPolicy::Off => None,
        GuardPolicy::Warn => Some(contract.warning(event, &told)),
        GuardPolicy::Ask => Some(contract.policy_asks(event, person, &told, &all)),
        GuardPolicy::Deny => Some(contract.refusal(
            event,
            &text(
                "majordomus refused this edit: this repository's policy (`[hooks] policy = \
                 \"deny\"` in majordomus.toml) refuses edits of files other sessions claim.",
                &all,
            ),
        )),
        GuardPolicy::Guard if found.live.is_empty() && !found.bumps.is_empty() => {
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
        GuardPolicy::Guard if found.live.is_empty() => Some(contract.warning(
            event,
            &text(
                "sessions that have left still claim files this edit changes:",
                &found.departed,
            ),
        )),
        GuardPolicy::Guard => {
            let mut stopped = text(
                "majordomus stopped this tool call before it ran: live sessions work on what it changes.",
                &all,
            );
            stopped.push('\n');
            stopped.push_str(WAY_FORWARD);
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
