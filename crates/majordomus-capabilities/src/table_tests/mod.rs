//! Every capability whose work is the board port's, called through the registry on JSON
//! input as every transport calls it, against the port kept in memory
//! ([`super::testing::MemoryPort`]): one table per capability, each row an input, who calls,
//! and the answer or the refusal expected. A row runs in a repository of its own, so rows
//! never see one another's board.

mod episodes;
mod hooks;
mod peers;
mod server;

use serde_json::Value;

use super::testing::{Caller, World};
use majordomus_core::api::ErrorKind;

/// One row of a table.
struct Case {
    /// What the row is about, named when it fails.
    name: &'static str,
    caller: Caller,
    /// Calls the same caller makes first, each a capability id and its input; each must be
    /// answered.
    before: Vec<(&'static str, Value)>,
    input: Value,
    expect: Expect,
}

impl Case {
    fn new(name: &'static str, caller: Caller, input: Value, expect: Expect) -> Case {
        Case {
            name,
            caller,
            before: Vec::new(),
            input,
            expect,
        }
    }

    /// The row with one more call its caller makes first, after those given before.
    fn after(mut self, capability: &'static str, input: Value) -> Case {
        self.before.push((capability, input));
        self
    }
}

/// What a row expects.
enum Expect {
    /// An answer holding every field given here, as given: an object may hold more fields
    /// than it names, an array holds exactly the items given, and `null` stands also for a
    /// field left out. The worktree's root is written `<worktree>`.
    Answer(Value),
    /// A refusal of this kind whose message says each of these words.
    Refusal(ErrorKind, &'static [&'static str]),
}

/// Runs every row of `cases` against `capability` and fails naming each row that did not
/// answer as expected.
fn check(capability: &str, cases: Vec<Case>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let failures: Vec<String> = cases
        .into_iter()
        .filter_map(|case| runtime.block_on(run(capability, case)).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{capability}:\n\n{}",
        failures.join("\n\n")
    );
}

/// One row, in a world of its own; why it failed, when it did.
async fn run(capability: &str, case: Case) -> Result<(), String> {
    let world = World::empty();
    let ctx = world.context(case.caller);
    let registry = super::registry();
    for (before, input) in case.before {
        let called = registry.by_id(before).expect("a capability of this build");
        if let Err(error) = called.call(&ctx, input).await {
            return Err(format!(
                "{}: `{before}` before it was refused: {error}",
                case.name
            ));
        }
    }
    let called = registry
        .by_id(capability)
        .expect("a capability of this build");
    let root = world.site.checkout.root.display().to_string();
    let answer = called
        .call(&ctx, case.input)
        .await
        .map(|answer| in_words(answer, &root));
    let name = case.name;
    match (case.expect, answer) {
        (Expect::Answer(expected), Ok(answer)) if holds(&answer, &expected) => Ok(()),
        (Expect::Answer(expected), Ok(answer)) => Err(format!(
            "{name}: expected an answer holding\n{}\nbut it was\n{}",
            pretty(&expected),
            pretty(&answer)
        )),
        (Expect::Answer(_), Err(error)) => Err(format!(
            "{name}: expected an answer but it was refused ({:?}): {error}",
            error.kind
        )),
        (Expect::Refusal(kind, words), Err(error))
            if error.kind == kind && words.iter().all(|word| error.message.contains(word)) =>
        {
            Ok(())
        }
        (Expect::Refusal(kind, words), Err(error)) => Err(format!(
            "{name}: expected a refusal ({kind:?}) saying {words:?} but it was ({:?}): {error}",
            error.kind
        )),
        (Expect::Refusal(kind, words), Ok(answer)) => Err(format!(
            "{name}: expected a refusal ({kind:?}) saying {words:?} but it answered\n{}",
            pretty(&answer)
        )),
    }
}

/// The answer with the worktree's root written `<worktree>`, as a row can expect it: the
/// root is a temporary directory's, another on every run.
fn in_words(answer: Value, root: &str) -> Value {
    match answer {
        Value::String(text) => Value::String(text.replace(root, WORKTREE)),
        Value::Array(items) => items.into_iter().map(|item| in_words(item, root)).collect(),
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(key, value)| (key, in_words(value, root)))
                .collect(),
        ),
        other => other,
    }
}

/// How a row names the worktree of its world.
const WORKTREE: &str = "<worktree>";

/// Whether `actual` holds `expected` as [`Expect::Answer`] says.
fn holds(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(actual), Value::Object(expected)) => {
            expected.iter().all(|(key, want)| match actual.get(key) {
                Some(got) => holds(got, want),
                None => want.is_null(),
            })
        }
        (Value::Array(actual), Value::Array(expected)) => {
            actual.len() == expected.len()
                && actual
                    .iter()
                    .zip(expected)
                    .all(|(got, want)| holds(got, want))
        }
        _ => actual == expected,
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// A text of `chars` characters.
fn long(chars: usize) -> String {
    "x".repeat(chars)
}
