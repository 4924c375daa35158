//! Sampling one row: warm-up, then calls until the budget says stop, each timed alone and,
//! with a floor, alternated call for call with the floor of the same transport (and with
//! the floor taking the row's own request and answering its own answer, when it was handed
//! one).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use majordomus_core::registry::Capability;
use serde_json::Value;

use super::Budget;
use super::clients::{Caller, Outcome};
use super::report::Row;
use super::stats::Summary;

/// One call may take this long before the row is given up as failed.
pub(super) const CALL_BOUND: Duration = Duration::from_secs(10);

/// What one row's calls came to.
pub(super) struct Sampled {
    samples: Vec<Duration>,
    /// The floor's calls made alternately with the row's, when a floor was given.
    floor_samples: Vec<Duration>,
    /// The calls of the floor taking the row's request and answering its answer, made the
    /// same way.
    kept_floor_samples: Vec<Duration>,
    outcomes: BTreeMap<&'static str, usize>,
    first: Outcome,
}

impl Sampled {
    /// `row` with what was measured: its outcome, the count of each, the first refusal's or
    /// failure's message, the distribution.
    pub(super) fn row(self, row: Row) -> Row {
        Row {
            outcome: if self.outcomes.len() > 1 {
                "mixed"
            } else {
                self.first.word()
            },
            outcomes: self
                .outcomes
                .into_iter()
                .map(|(word, n)| (word.to_string(), n))
                .collect(),
            detail: self.first.detail().map(|text| truncate(text, 240)),
            summary: Summary::of(&self.samples),
            floor_p50_ms: (!self.floor_samples.is_empty())
                .then(|| Summary::of(&self.floor_samples).p50_ms),
            answer_floor_p50_ms: (!self.kept_floor_samples.is_empty())
                .then(|| Summary::of(&self.kept_floor_samples).p50_ms),
            ..row
        }
    }
}

/// Warms up, then calls until the budget says stop, timing `call` alone (not `prepare`,
/// which runs before each call untimed). `slow` is added inside every measured span.
///
/// With a `floor`, each measured call is preceded by a timed call of the floor on the same
/// transport, so the row and its floor meet the machine in the same state, call for call: a
/// ratio of two medians taken minutes apart moves with whatever else the machine did in
/// between, one of medians taken together does not. With `kept` (the row's capability and
/// input) as well, every other floor call sends the row's own request to the floor answering
/// what it was handed (the row's own answer), so each floor is measured on half the row's
/// calls, in the same state as the other.
pub(super) async fn sample_calls(
    budget: Budget,
    slow: Option<Duration>,
    floor: Option<&Caller>,
    kept: Option<(&Capability, &Value)>,
    prepare: impl AsyncFn(),
    call: impl AsyncFn() -> Outcome,
) -> Sampled {
    let once = async |measure: bool| -> (Option<Duration>, Outcome) {
        prepare().await;
        let started = Instant::now();
        let outcome = tokio::time::timeout(CALL_BOUND, call())
            .await
            .unwrap_or_else(|_| {
                Outcome::Failure(format!("no answer within {} s", CALL_BOUND.as_secs()))
            });
        if measure && let Some(delay) = slow {
            tokio::time::sleep(delay).await;
        }
        (measure.then(|| started.elapsed()), outcome)
    };
    let warm = Instant::now();
    for _ in 0..budget.warmup {
        let (_, outcome) = once(false).await;
        if matches!(outcome, Outcome::Failure(_)) || warm.elapsed() > budget.hard / 4 {
            break;
        }
    }
    let mut samples = Vec::with_capacity(budget.max);
    let mut floor_samples = Vec::new();
    let mut kept_floor_samples = Vec::new();
    let mut outcomes: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut first: Option<Outcome> = None;
    let clock = Instant::now();
    let mut turn = 0_usize;
    loop {
        if let Some(floor) = floor {
            // Each floor call comes straight after one of the row's, as the row's comes after
            // a floor's: each server has sat idle for one other call before it answers. Called
            // one after the other, the second floor would answer on a server still awake.
            let kept_turn = kept.filter(|_| turn % 2 == 1);
            let started = Instant::now();
            let answered = match kept_turn {
                Some((capability, input)) => {
                    let call = floor.call_kept_floor(capability, input);
                    tokio::time::timeout(CALL_BOUND, call).await
                }
                None => tokio::time::timeout(CALL_BOUND, floor.call_floor()).await,
            };
            let elapsed = started.elapsed();
            if matches!(answered, Ok(Outcome::Answer)) {
                if kept_turn.is_some() {
                    kept_floor_samples.push(elapsed);
                } else {
                    floor_samples.push(elapsed);
                }
            }
            turn += 1;
        }
        let (elapsed, outcome) = once(true).await;
        let failed = matches!(outcome, Outcome::Failure(_));
        *outcomes.entry(outcome.word()).or_default() += 1;
        if !failed {
            samples.extend(elapsed);
        }
        first.get_or_insert(outcome);
        let spent = clock.elapsed();
        if failed
            || samples.len() >= budget.max
            || (samples.len() >= budget.min && spent >= budget.soft)
            || spent >= budget.hard
        {
            break;
        }
    }
    Sampled {
        samples,
        floor_samples,
        kept_floor_samples,
        outcomes,
        first: first.expect("at least one iteration ran"),
    }
}

fn truncate(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_string();
    }
    let cut: String = text.chars().take(limit).collect();
    format!("{cut}…")
}
