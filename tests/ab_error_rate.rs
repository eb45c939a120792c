//! The A/B's always-valid interval against this machine's own rounds:
//! 10,000 A/A sequences drawn from the log-ratios two real A/A runs
//! measured (bench/runs/2026-11-28-ab-kept, aa-d1: unicorn, one worker,
//! 1 s windows with the servers kept running), not from a normal law.
//! Those rounds have heavy tails (kurtosis 6.6: the VM slows for seconds
//! with no steal on record) and, in run 1, a lag-1 autocorrelation of
//! 0.31, so the draws keep runs of consecutive rounds together (a moving
//! block bootstrap) rather than draw each round on its own.
//!
//! Each run's rounds are centred on their own mean first: an A/A's truth
//! is no difference, and what is left is the spread as measured. Drawn
//! one by one, the false verdicts stay under 5%; drawn in blocks, they
//! do not (docs/STATISTICS.md, "Sequential A/B").

use rackbench::stats::sequential::{Call, Design, Sequence};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// aa-d1/run-1.json, `pairs[].log_ratio` in round order.
const RUN_1: [f64; 60] = [
    -0.06870, -0.08589, -0.13071, -0.33913, 0.01053, 0.06811, 0.08961, 0.00873, -0.18153, -0.12095,
    0.15280, 0.14310, 0.02935, 0.09901, 0.05475, 0.10677, -0.09490, 0.07934, -0.02278, 0.04064,
    -0.02169, -0.07203, -0.02875, -0.04692, -0.01279, -0.07441, 0.03213, -0.05545, 0.11452,
    0.05362, -0.00421, 0.12464, 0.00414, 0.02715, 0.08913, 0.08072, 0.00995, 0.00000, -0.01724,
    0.01263, -0.01263, 0.05288, 0.10361, 0.00000, -0.03509, 0.02875, -0.02020, -0.01600, -0.06735,
    -0.18385, -0.06291, 0.05407, 0.04537, 0.10581, 0.06544, 0.01538, 0.10074, 0.00447, 0.00000,
    -0.02998,
];

/// aa-d1/run-2.json, `pairs[].log_ratio` in round order.
const RUN_2: [f64; 60] = [
    -0.39030, -0.08422, -0.02875, -0.05475, -0.08885, -0.12136, -0.02687, 0.05311, 0.14556,
    0.05196, -0.02097, -0.03774, -0.18157, 0.10592, -0.31493, 0.19587, -0.18721, -0.14073,
    -0.06762, -0.43951, -0.03743, 0.05475, 0.21706, -0.05492, 0.03138, -0.11394, -0.05475, 0.04066,
    -0.04859, -0.04001, 0.03150, 0.00401, -0.06870, -0.00791, 0.03279, -0.01550, -0.02783,
    -0.09414, 0.00398, 0.06762, 0.05001, 0.10754, -0.01232, -0.02469, -0.02828, -0.05452, -0.02828,
    0.00837, -0.11729, 0.01927, -0.02062, -0.03449, -0.05001, -0.06567, 0.03077, -0.10746,
    -0.04202, -0.09774, -0.07872, -0.04556,
];

/// Rounds of the default budget at 1 s windows: `--max-load 2m` is 120 s
/// of load, 2 s a round.
const BUDGET: usize = 60;

/// Sequences simulated per test.
const SEQUENCES: usize = 10_000;

fn centred(x: &[f64]) -> Vec<f64> {
    let m = x.iter().sum::<f64>() / x.len() as f64;
    x.iter().map(|v| v - m).collect()
}

/// One A/A sequence run to its verdict: blocks of `block` consecutive
/// rounds, each from a run and a start drawn at random, until it stops.
fn one_sequence(runs: &[Vec<f64>], block: usize, rng: &mut ChaCha8Rng) -> Call {
    let mut s = Sequence::new("throughput", Design::with_budget(BUDGET)).unwrap();
    loop {
        let run = &runs[rng.gen_range(0..runs.len())];
        let start = rng.gen_range(0..=run.len() - block);
        for &lr in &run[start..start + block] {
            let v = s.push(1.0, lr.exp()).unwrap();
            if v.stopped {
                return v.verdict;
            }
        }
    }
}

/// The share of SEQUENCES A/A sequences called faster or slower.
fn false_verdicts(block: usize, seed: u64) -> f64 {
    let runs = [centred(&RUN_1), centred(&RUN_2)];
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut wrong, mut equivalent) = (0, 0);
    for _ in 0..SEQUENCES {
        match one_sequence(&runs, block, &mut rng) {
            Call::Faster | Call::Slower => wrong += 1,
            Call::Equivalent => equivalent += 1,
            Call::Undecided => {}
        }
    }
    let share = wrong as f64 / SEQUENCES as f64;
    println!(
        "A/A from measured rounds, blocks of {block}: {:.2}% faster or slower, \
         {:.1}% equivalent, the rest undecided at {BUDGET} rounds",
        share * 100.0,
        equivalent as f64 / SEQUENCES as f64 * 100.0
    );
    share
}

/// Rounds drawn one by one: the measured tails, without their order.
/// The seed is fixed, so the test cannot fail by chance.
#[test]
fn aa_sequences_of_this_machines_rounds_drawn_independently_call_a_difference_at_most_5pct() {
    // 5% plus three standard errors of a 5% rate over SEQUENCES.
    let bound = 0.05 + 3.0 * (0.05f64 * 0.95 / SEQUENCES as f64).sqrt();
    let share = false_verdicts(1, 20261128);
    assert!(share <= bound, "{share} over {bound}");
}

/// Rounds drawn five at a time, keeping the slow stretches that span
/// several rounds: the interval assumes independent rounds, and here it
/// calls a difference in 9.7% of A/A sequences with this seed (7.5% to
/// 9.7% for blocks of 3 to 10), not 5%. docs/STATISTICS.md states this
/// excess; the bound keeps it from growing unseen.
#[test]
fn aa_sequences_keeping_this_machines_slow_stretches_exceed_5pct_by_a_bounded_amount() {
    let share = false_verdicts(5, 20261128);
    assert!(share <= 0.12, "{share}");
}
