//! The instructions every client is given, in `initialize` and in `server/discover` alike:
//! what majordomus is and when to use its tools.
//!
//! They go into the system prompt of every session and are read once, so they are the same
//! bytes for every session whoever else is attached: no peer's words, no peer id. Who else
//! works here reaches a session at the moment it matters, through its hooks and the tools'
//! answers, where every word another session wrote is quoted and escaped.

/// The instructions, at most [`crate::limits::INSTRUCTIONS_BYTES`] bytes.
pub const INSTRUCTIONS: &str = "majordomus is the shared board of the agents working on \
    this repository, in any of its worktrees. Before starting a piece of work, announce what \
    you are doing and the paths you expect to touch with majordomus_announce: its answer \
    names every claim of another agent that meets yours, with that agent's worktree and \
    intent. majordomus_peers lists who works where across every worktree, what each claims, \
    and where claims and uncommitted changes collide; majordomus_conflicts predicts the merge \
    conflicts between worktrees. Files you edit are recorded as your claim named `edits` by \
    the client's hooks, which also tell you when another agent's claim meets yours.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits;

    #[test]
    fn the_instructions_fit_their_budget_and_name_no_peer() {
        assert!(INSTRUCTIONS.len() <= limits::INSTRUCTIONS_BYTES);
        assert!(!INSTRUCTIONS.contains("you are peer"));
        assert!(!INSTRUCTIONS.contains('\n'));
    }
}
