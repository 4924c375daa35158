//! Every capability whose work is the board port's, called through the registry on JSON
//! input as every transport calls it, against the port kept in memory
//! ([`super::testing::MemoryPort`]): one table per capability, each row an input, who calls,
//! and the answer or the refusal expected. A row runs in a repository of its own, so rows
//! never see one another's board.

mod conflicts;
mod episodes;
mod hooks;
mod leases;
mod messages;
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
    /// Worktrees added beside the served one before any call, each by its directory's name,
    /// which is also its branch's.
    worktrees: Vec<&'static str>,
    /// Files written before any call and left uncommitted: the worktree's directory name,
    /// the path in it, and the text.
    files: Vec<(&'static str, &'static str, String)>,
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
            worktrees: Vec::new(),
            files: Vec::new(),
            before: Vec::new(),
            input,
            expect,
        }
    }

    /// The row with the worktree `name` added beside the served one first.
    fn worktree(mut self, name: &'static str) -> Case {
        self.worktrees.push(name);
        self
    }

    /// The row with `text` written to `path` of the worktree `worktree` (its directory's
    /// name) first, after the worktrees are added.
    fn write(
        mut self,
        worktree: &'static str,
        path: &'static str,
        text: impl Into<String>,
    ) -> Case {
        self.files.push((worktree, path, text.into()));
        self
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
    /// field left out. Written as in [`Words`].
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
    for name in case.worktrees {
        world.add_worktree(name);
    }
    for (worktree, path, text) in &case.files {
        world.write(worktree, path, text);
    }
    let words = Words::of(&world);
    let ctx = world.context(case.caller);
    let registry = super::registry();
    for (before, input) in case.before {
        let called = registry.by_id(before).expect("a capability of this build");
        if let Err(error) = called.call(&ctx, words.input(input)).await {
            return Err(format!(
                "{}: `{before}` before it was refused: {error}",
                case.name
            ));
        }
    }
    let called = registry
        .by_id(capability)
        .expect("a capability of this build");
    let answer = called
        .call(&ctx, words.input(case.input))
        .await
        .map(|answer| words.answer(answer));
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

/// How a row writes what differs on every run, in its inputs and in the answer it expects:
/// `<worktree>` for the served worktree's root, `<dir>` for the directory the worktrees lie
/// in (a worktree added beside is `<dir>/beta`), and `<checkout>` for the checkout's id. An
/// answer's `<checkout>` is the whole id or the first 8 digits a qualified id takes
/// (`p2@<checkout>`); an input's is those 8 digits, as an input names a session by its
/// qualified id.
struct Words {
    root: String,
    dir: String,
    checkout: String,
    short: String,
}

impl Words {
    fn of(world: &World) -> Words {
        let checkout = world.site.checkout.id.clone();
        Words {
            root: world.site.checkout.root.display().to_string(),
            dir: world.dir().display().to_string(),
            short: checkout.chars().take(8).collect(),
            checkout,
        }
    }

    /// The input as the capability is given it.
    fn input(&self, input: Value) -> Value {
        each_text(input, &|text| {
            text.replace(WORKTREE, &self.root)
                .replace(CHECKOUT, &self.short)
        })
    }

    /// The answer as a row can expect it.
    fn answer(&self, answer: Value) -> Value {
        each_text(answer, &|text| {
            text.replace(&self.root, WORKTREE)
                .replace(&self.dir, DIR)
                .replace(&self.checkout, CHECKOUT)
                .replace(&self.short, CHECKOUT)
        })
    }
}

/// `value` with `change` made to each of its texts.
fn each_text(value: Value, change: &dyn Fn(&str) -> String) -> Value {
    match value {
        Value::String(text) => Value::String(change(&text)),
        Value::Array(items) => items
            .into_iter()
            .map(|item| each_text(item, change))
            .collect(),
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(key, value)| (key, each_text(value, change)))
                .collect(),
        ),
        other => other,
    }
}

/// How a row names the served worktree's root.
const WORKTREE: &str = "<worktree>";

/// How a row names the directory the worktrees lie in.
const DIR: &str = "<dir>";

/// How a row names the checkout's id.
const CHECKOUT: &str = "<checkout>";

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
