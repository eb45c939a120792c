//! Paired rounds of an A/B until the answer is known (issue 38).
//!
//! Each round runs one window of A and one of B back to back, in an order
//! drawn per round, and pushes the pair of figures into the always-valid
//! interval of `stats::sequential`; the rounds stop at the first of "B
//! differs", "equivalent" or the budget. A round where either window was
//! disturbed (the record's `disturbance`) is set aside and run again, at
//! most `rerun_disturbed` times; the set-aside windows are kept, marked,
//! and never counted.
//!
//! Like `search`, it knows nothing about servers: the caller passes a
//! closure that runs one window of one side and says what it measured, so
//! the same rounds drive lab trials and are tested with a model server.
//! It never prints: each round is handed to a progress closure.

pub mod document;

use crate::stats::sequential::{Design, Sequence, SequentialError, Verdict};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// One side of the A/B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Side {
    A,
    B,
}

impl Side {
    pub fn letter(self) -> &'static str {
        match self {
            Side::A => "A",
            Side::B => "B",
        }
    }
}

/// What one window of one side measured.
#[derive(Debug, Clone)]
pub struct Window<T> {
    /// The metric's figure; None when the window served nothing to judge
    /// (every request failed), which stops the rounds: a side that fails
    /// is not a slower side.
    pub figure: Option<f64>,
    /// Why the machine disturbed this window (the record's disturbance in
    /// words), or None when it was quiet or unmeasured.
    pub disturbed: Option<String>,
    /// Seconds of counted load in the window.
    pub load_s: f64,
    /// The caller's own record of the window (a trial record), kept with
    /// the round.
    pub record: T,
}

/// How the rounds are run and judged.
#[derive(Debug, Clone)]
pub struct Options {
    /// A metric of compare's METRICS (`throughput`, `p99`, ...).
    pub metric: String,
    pub design: Design,
    /// Reruns of one disturbed round at most; past it the last attempt
    /// counts, marked.
    pub rerun_disturbed: u32,
    /// The seed of the order drawn per round.
    pub seed: u64,
    /// Seconds of load (both sides, set-aside windows included) after
    /// which no round starts: the budget in machine time, beside the
    /// design's rounds. None: the rounds alone.
    pub max_load_s: Option<f64>,
}

/// A round run again because the machine disturbed it: both windows,
/// kept out of the figures.
#[derive(Debug, Clone)]
pub struct SetAside<T> {
    pub a: Window<T>,
    pub b: Window<T>,
    pub why: String,
}

/// One counted round.
#[derive(Debug, Clone)]
pub struct Round<T> {
    /// 1-based.
    pub index: usize,
    /// Which side ran first.
    pub first: Side,
    pub a: Window<T>,
    pub b: Window<T>,
    /// Attempts of this round set aside before it, disturbed.
    pub set_aside: Vec<SetAside<T>>,
    /// The verdict after this round.
    pub verdict: Verdict,
}

impl<T> Round<T> {
    /// ln(B / A) of the round's figures.
    pub fn log_ratio(&self) -> f64 {
        match (self.a.figure, self.b.figure) {
            (Some(a), Some(b)) => (b / a).ln(),
            _ => f64::NAN,
        }
    }

    /// True when the counted attempt itself was disturbed (past the
    /// rerun limit).
    pub fn counted_disturbed(&self) -> bool {
        self.a.disturbed.is_some() || self.b.disturbed.is_some()
    }
}

/// Why the rounds ended.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// Decided, or at the budget: the verdict says which.
    Verdict,
    /// Interrupted (Ctrl-C) between or during rounds: the verdict so far.
    Interrupted,
    /// A window could not run or served nothing: the message names the
    /// side and the fix.
    Failed(String),
}

/// The rounds and where they ended.
#[derive(Debug, Clone)]
pub struct Outcome<T> {
    pub rounds: Vec<Round<T>>,
    /// The verdict after the last counted round (no rounds: undecided at
    /// round 0).
    pub verdict: Verdict,
    pub end: End,
    /// Rounds run again because a window was disturbed.
    pub rounds_disturbed_rerun: usize,
    /// Seconds of counted load over both sides, set-aside windows
    /// included (the machine's time spent).
    pub load_s: f64,
    pub wall_s: f64,
}

impl<T> Outcome<T> {
    /// Every set-aside attempt, with its round's index.
    pub fn set_aside(&self) -> impl Iterator<Item = (usize, &SetAside<T>)> {
        self.rounds
            .iter()
            .flat_map(|r| r.set_aside.iter().map(move |s| (r.index, s)))
    }
}

/// What the caller's window closure may say instead of a window.
#[derive(Debug, Clone, PartialEq)]
pub enum WindowError {
    /// Ctrl-C: stop with what is measured.
    Interrupted,
    /// The side could not run (a server that would not start): the
    /// message names the fix.
    Failed(String),
}

/// Runs paired rounds until the sequence stops. `window(side, round)`
/// runs one window; `progress` sees each counted round and each round set
/// aside (with `None` as its verdict); `interrupted` is asked between
/// windows. Errors only for a design the sequence refuses.
pub fn run<T>(
    opts: &Options,
    mut window: impl FnMut(Side, usize) -> Result<Window<T>, WindowError>,
    mut progress: impl FnMut(Event<'_, T>),
    interrupted: impl Fn() -> bool,
) -> Result<Outcome<T>, SequentialError> {
    let mut sequence = Sequence::new(&opts.metric, opts.design)?;
    let started = Instant::now();
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let mut out = Outcome {
        rounds: Vec::new(),
        verdict: sequence.verdict(),
        end: End::Verdict,
        rounds_disturbed_rerun: 0,
        load_s: 0.0,
        wall_s: 0.0,
    };
    'rounds: while !out.verdict.stopped {
        if opts.max_load_s.is_some_and(|max| out.load_s >= max) {
            out.verdict = sequence.verdict_at_budget();
            break;
        }
        let index = out.rounds.len() + 1;
        let mut set_aside = Vec::new();
        let (first, a, b) = loop {
            if interrupted() {
                out.end = End::Interrupted;
                break 'rounds;
            }
            let first = if rng.gen::<bool>() { Side::A } else { Side::B };
            let pair = match pair(first, index, &mut window, &interrupted) {
                Ok(p) => p,
                Err(e) => {
                    out.end = match e {
                        WindowError::Interrupted => End::Interrupted,
                        WindowError::Failed(why) => End::Failed(why),
                    };
                    break 'rounds;
                }
            };
            let (a, b) = pair;
            out.load_s += a.load_s + b.load_s;
            if let Some(why) = failed(&a, &b) {
                out.end = End::Failed(why);
                break 'rounds;
            }
            let why = disturbed_words(&a, &b);
            match why {
                Some(why) if set_aside.len() < opts.rerun_disturbed as usize => {
                    let s = SetAside { a, b, why };
                    progress(Event::SetAside {
                        round: index,
                        attempt: set_aside.len() + 1,
                        set_aside: &s,
                    });
                    set_aside.push(s);
                    out.rounds_disturbed_rerun += 1;
                }
                _ => break (first, a, b),
            }
        };
        let (fa, fb) = (a.figure.unwrap_or(f64::NAN), b.figure.unwrap_or(f64::NAN));
        let verdict = match sequence.push(fa, fb) {
            Ok(v) => v,
            Err(e) => {
                out.end = End::Failed(e.to_string());
                break;
            }
        };
        out.verdict = verdict.clone();
        out.rounds.push(Round {
            index,
            first,
            a,
            b,
            set_aside,
            verdict,
        });
        out.wall_s = started.elapsed().as_secs_f64();
        progress(Event::Round {
            round: out.rounds.last().expect("just pushed"),
            load_s: out.load_s,
        });
    }
    out.wall_s = started.elapsed().as_secs_f64();
    Ok(out)
}

/// What the progress closure is shown.
pub enum Event<'a, T> {
    /// A counted round and the load so far.
    Round { round: &'a Round<T>, load_s: f64 },
    /// An attempt of round `round` set aside, disturbed; it runs again.
    SetAside {
        round: usize,
        attempt: usize,
        set_aside: &'a SetAside<T>,
    },
}

/// One window of each side in the drawn order; (A, B).
fn pair<T>(
    first: Side,
    index: usize,
    window: &mut impl FnMut(Side, usize) -> Result<Window<T>, WindowError>,
    interrupted: &impl Fn() -> bool,
) -> Result<(Window<T>, Window<T>), WindowError> {
    let second = match first {
        Side::A => Side::B,
        Side::B => Side::A,
    };
    let one = window(first, index)?;
    if interrupted() {
        return Err(WindowError::Interrupted);
    }
    let two = window(second, index)?;
    Ok(match first {
        Side::A => (one, two),
        Side::B => (two, one),
    })
}

/// A side whose window served nothing to judge, in words; None when both
/// have a positive figure.
fn failed<T>(a: &Window<T>, b: &Window<T>) -> Option<String> {
    for (side, w) in [(Side::A, a), (Side::B, b)] {
        if !w.figure.is_some_and(|f| f > 0.0 && f.is_finite()) {
            return Some(format!(
                "side {} served nothing to judge in its window (every request failed, or none \
                 counted): run it alone with `rackbench trial` to see why",
                side.letter()
            ));
        }
    }
    None
}

/// "A: steal up to 12%; B: ..." for the disturbed windows of a pair.
fn disturbed_words<T>(a: &Window<T>, b: &Window<T>) -> Option<String> {
    let parts: Vec<String> = [(Side::A, a), (Side::B, b)]
        .into_iter()
        .filter_map(|(s, w)| w.disturbed.as_ref().map(|d| format!("{}: {d}", s.letter())))
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
mod tests;
