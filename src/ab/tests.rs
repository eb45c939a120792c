//! The rounds against a model server whose truth is known: B's figure is
//! A's times a fixed factor, both moved by a drift shared within a round
//! (the machine) and by each window's own noise.

use super::*;
use crate::stats::sequential::{Call, Design};
use rand::Rng;
use std::cell::{Cell, RefCell};

fn options(budget: usize, rerun: u32) -> Options {
    Options {
        metric: "throughput".into(),
        design: Design::with_budget(budget),
        rerun_disturbed: rerun,
        seed: 38,
        max_load_s: None,
    }
}

/// A model: throughput 1000 req/s for A, `factor` × that for B, each
/// window × (1 + drift of its round) × (1 + its own noise).
struct Model {
    factor: f64,
    noise: f64,
    drift: f64,
    rng: RefCell<ChaCha8Rng>,
    round_drift: Cell<(usize, f64)>,
}

impl Model {
    fn new(factor: f64, noise: f64, drift: f64) -> Model {
        Model {
            factor,
            noise,
            drift,
            rng: RefCell::new(ChaCha8Rng::seed_from_u64(7)),
            round_drift: Cell::new((0, 0.0)),
        }
    }

    fn figure(&self, side: Side, round: usize) -> f64 {
        let mut rng = self.rng.borrow_mut();
        if self.round_drift.get().0 != round {
            let d = rng.gen_range(-self.drift..=self.drift);
            self.round_drift.set((round, d));
        }
        let drift = self.round_drift.get().1;
        let own = rng.gen_range(-self.noise..=self.noise);
        let base = if side == Side::B { self.factor } else { 1.0 };
        1000.0 * base * (1.0 + drift) * (1.0 + own)
    }

    fn window(&self, side: Side, round: usize) -> Result<Window<(Side, usize)>, WindowError> {
        Ok(Window {
            figure: Some(self.figure(side, round)),
            disturbed: None,
            load_s: 2.0,
            record: (side, round),
        })
    }
}

fn quiet(_: Event<'_, (Side, usize)>) {}

#[test]
fn a_five_percent_slower_b_is_called_slower_and_stops_early() {
    let m = Model::new(0.95, 0.01, 0.0);
    let out = run(&options(40, 3), |s, r| m.window(s, r), quiet, || false).unwrap();
    assert_eq!(out.end, End::Verdict);
    assert_eq!(out.verdict.verdict, Call::Slower, "{}", out.verdict.reason);
    assert!(
        out.rounds.len() < 40,
        "stopped at the budget: {}",
        out.verdict.reason
    );
    let (lo, hi) = (
        out.verdict.ci_low_pct.unwrap(),
        out.verdict.ci_high_pct.unwrap(),
    );
    assert!(
        lo <= -5.0 && -5.0 <= hi,
        "the interval misses the truth: {lo} {hi}"
    );
    assert_eq!(out.load_s, 4.0 * out.rounds.len() as f64);
}

#[test]
fn pairing_cancels_a_drift_that_moves_both_windows_of_a_round() {
    // The machine moves a round's figures by up to ±20%; each window's own
    // noise is 1%. Judged as two independent samples the 5% would drown;
    // paired, it is found.
    let m = Model::new(0.95, 0.01, 0.20);
    let out = run(&options(40, 3), |s, r| m.window(s, r), quiet, || false).unwrap();
    assert_eq!(out.verdict.verdict, Call::Slower, "{}", out.verdict.reason);
}

#[test]
fn identical_sides_are_never_called_faster_or_slower() {
    for seed in 0..20 {
        let m = Model::new(1.0, 0.01, 0.05);
        let mut o = options(30, 3);
        o.seed = seed;
        let out = run(&o, |s, r| m.window(s, r), quiet, || false).unwrap();
        assert!(
            matches!(out.verdict.verdict, Call::Equivalent | Call::Undecided),
            "seed {seed}: {}",
            out.verdict.reason
        );
    }
}

#[test]
fn the_order_is_drawn_per_round_and_a_seed_replays_it() {
    let order = |seed: u64| {
        let m = Model::new(1.0, 0.01, 0.0);
        let mut o = options(12, 0);
        o.design.margin_pct = 0.001; // never equivalent: run all 12
        o.seed = seed;
        let out = run(&o, |s, r| m.window(s, r), quiet, || false).unwrap();
        out.rounds.iter().map(|r| r.first).collect::<Vec<_>>()
    };
    let first = order(1);
    assert_eq!(first.len(), 12);
    assert!(
        first.contains(&Side::A) && first.contains(&Side::B),
        "{first:?}"
    );
    assert_eq!(first, order(1));
}

#[test]
fn a_disturbed_round_is_set_aside_and_run_again_out_of_the_figures() {
    let m = Model::new(0.95, 0.01, 0.0);
    let calls = Cell::new(0usize);
    let seen = RefCell::new(Vec::new());
    let window = |s: Side, r: usize| {
        calls.set(calls.get() + 1);
        let mut w = m.window(s, r)?;
        // The third round's first attempt: B disturbed, and absurdly fast.
        if r == 3 && s == Side::B && seen.borrow().iter().all(|&(round, _)| round != 3) {
            w.disturbed = Some("foreign CPU up to 60%".into());
            w.figure = Some(1_000_000.0);
        }
        Ok(w)
    };
    let progress = |e: Event<'_, (Side, usize)>| {
        if let Event::SetAside { round, attempt, .. } = e {
            seen.borrow_mut().push((round, attempt));
        }
    };
    let out = run(&options(40, 3), window, progress, || false).unwrap();
    assert_eq!(out.rounds_disturbed_rerun, 1);
    assert_eq!(*seen.borrow(), vec![(3, 1)]);
    let third = &out.rounds[2];
    assert_eq!(third.set_aside.len(), 1);
    assert!(third.set_aside[0].why.contains("B: foreign CPU"));
    assert!(third.b.figure.unwrap() < 2000.0, "the rerun is what counts");
    assert!(!third.counted_disturbed());
    assert_eq!(out.verdict.verdict, Call::Slower, "{}", out.verdict.reason);
    // Every window ran, the set-aside pair included, and its load counts.
    assert_eq!(calls.get(), 2 * out.rounds.len() + 2);
    assert_eq!(out.load_s, 2.0 * calls.get() as f64);
}

#[test]
fn past_the_rerun_limit_a_disturbed_round_counts_marked() {
    let m = Model::new(0.95, 0.01, 0.0);
    let window = |s: Side, r: usize| {
        let mut w = m.window(s, r)?;
        if r == 1 && s == Side::A {
            w.disturbed = Some("steal up to 20%".into());
        }
        Ok(w)
    };
    let out = run(&options(40, 2), window, quiet, || false).unwrap();
    assert_eq!(out.rounds[0].set_aside.len(), 2);
    assert!(out.rounds[0].counted_disturbed());
    assert_eq!(out.rounds_disturbed_rerun, 2);
}

#[test]
fn a_side_that_serves_nothing_stops_the_rounds_naming_it() {
    let m = Model::new(0.95, 0.01, 0.0);
    let window = |s: Side, r: usize| {
        let mut w = m.window(s, r)?;
        if r == 2 && s == Side::B {
            w.figure = None;
        }
        Ok(w)
    };
    let out = run(&options(40, 3), window, quiet, || false).unwrap();
    assert_eq!(out.rounds.len(), 1);
    match &out.end {
        End::Failed(why) => assert!(why.contains("side B served nothing"), "{why}"),
        e => panic!("{e:?}"),
    }
    assert_eq!(out.verdict.rounds, 1);
}

#[test]
fn a_side_that_cannot_start_is_the_rounds_end_with_its_message() {
    let window = |s: Side, _r: usize| -> Result<Window<(Side, usize)>, WindowError> {
        match s {
            Side::A => Ok(Window {
                figure: Some(1.0),
                disturbed: None,
                load_s: 1.0,
                record: (s, 0),
            }),
            Side::B => Err(WindowError::Failed(
                "puma did not start: port in use".into(),
            )),
        }
    };
    let out = run(&options(40, 3), window, quiet, || false).unwrap();
    assert!(out.rounds.is_empty());
    assert_eq!(
        out.end,
        End::Failed("puma did not start: port in use".into())
    );
}

#[test]
fn interrupted_keeps_every_counted_round_and_the_interval_so_far() {
    let m = Model::new(0.95, 0.01, 0.0);
    let windows = Cell::new(0usize);
    let window = |s: Side, r: usize| {
        windows.set(windows.get() + 1);
        m.window(s, r)
    };
    // Ctrl-C arrives during the third round's first window.
    let out = run(&options(40, 3), window, quiet, || windows.get() >= 5).unwrap();
    assert_eq!(out.end, End::Interrupted);
    assert_eq!(out.rounds.len(), 2);
    assert_eq!(out.verdict.rounds, 2);
}

#[test]
fn a_budget_of_one_round_is_refused_before_any_window() {
    let ran = Cell::new(false);
    let window = |s: Side, r: usize| {
        ran.set(true);
        Model::new(1.0, 0.0, 0.0).window(s, r)
    };
    let e = run(&options(1, 3), window, quiet, || false).unwrap_err();
    assert!(e.to_string().contains("at least 2 rounds"), "{e}");
    assert!(!ran.get());
}

#[test]
fn the_document_carries_the_contract_fields_and_every_pair() {
    let m = Model::new(0.95, 0.01, 0.0);
    let o = options(40, 3);
    let out = run(&o, |s, r| m.window(s, r), quiet, || false).unwrap();
    let doc = document::document(&out, ("workers=2", "workers=3"), &o, |(s, r)| {
        Some(format!("trials/{}-{r}.json", s.letter()))
    });
    let v = serde_json::to_value(&doc).unwrap();
    for field in [
        "verdict",
        "metric",
        "change_pct",
        "ci_low_pct",
        "ci_high_pct",
        "rounds",
        "rounds_disturbed_rerun",
        "load_s",
        "wall_s",
        "margin_pct",
        "method",
        "pairs",
    ] {
        assert!(v.get(field).is_some(), "ab-v1 lacks {field}");
    }
    assert_eq!(v["schema"], "rackbench/ab-v1");
    assert_eq!(v["verdict"], "slower");
    assert_eq!(doc.pairs.len(), out.rounds.len());
    assert_eq!(doc.pairs[0].a.record.as_deref(), Some("trials/A-1.json"));
}

#[test]
fn a_budget_of_load_stops_the_rounds_undecided_and_counts_set_aside_windows() {
    // Every round's first attempt disturbed and set aside: each round
    // costs two pairs of 2 s windows, 8 s; no round starts at 20 s or
    // more, so the third (ending at 24 s) is the last.
    let m = Model::new(1.0, 0.05, 0.0);
    let seen = RefCell::new(std::collections::BTreeSet::new());
    let window = |s: Side, r: usize| {
        let mut w = m.window(s, r)?;
        if s == Side::B && seen.borrow_mut().insert(r) {
            w.disturbed = Some("steal 30%".into());
        }
        Ok(w)
    };
    let mut o = options(40, 1);
    o.max_load_s = Some(20.0);
    let out = run(&o, window, quiet, || false).unwrap();
    assert_eq!(out.end, End::Verdict);
    assert_eq!(out.rounds.len(), 3, "{}", out.verdict.reason);
    assert_eq!(out.load_s, 24.0);
    assert_eq!(out.rounds_disturbed_rerun, 3);
    assert_eq!(out.verdict.verdict, Call::Undecided);
    assert!(
        out.verdict.stopped && out.verdict.reason.contains("budget"),
        "{}",
        out.verdict.reason
    );
}
