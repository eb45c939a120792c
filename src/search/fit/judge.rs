//! One measured candidate judged against the options: the medians of its
//! repeats, its memory peak and kills, and the verdict (no-start, oom,
//! errors, slo, ok) with why in a few words.
//!
//! One candidate at a time: it never chooses what to measure next (the
//! search in `fit` does) and never compares candidates (`conclude` does).

use super::record::{Candidate, FitOptions, LatencyUs, Outcome, Repeat, Tried, Verdict};
use crate::stats::spread::Spread;

/// Judges a measured candidate against the options.
pub fn judge_candidate(c: Candidate, o: &Outcome, opts: &FitOptions) -> Tried {
    let median_u = |f: fn(&Repeat) -> u64| {
        let v: Vec<f64> = o.repeats.iter().map(|r| f(r) as f64).collect();
        Spread::of(&v).map_or(0, |s| s.median.round() as u64)
    };
    let samples: Vec<f64> = o.repeats.iter().map(|r| r.throughput_rps).collect();
    let spread = Spread::of(&samples);
    let mut t = Tried {
        workers: c.workers,
        threads: c.threads,
        throughput_rps: spread.map_or(0.0, |s| s.median),
        throughput_spread: spread,
        throughput_samples_rps: samples,
        latency_us: LatencyUs {
            p50: median_u(|r| r.p50_us),
            p90: median_u(|r| r.p90_us),
            p99: median_u(|r| r.p99_us),
        },
        errors: o.repeats.iter().map(|r| r.errors).sum(),
        memory_peak_bytes: o
            .repeats
            .iter()
            .map(|r| r.memory_peak_bytes)
            .max()
            .unwrap_or(0),
        oom_kills: o.repeats.iter().map(|r| r.oom_kills).sum(),
        verdict: Verdict::Ok,
        why: None,
        trials: o.repeats.len().max(1),
    };
    let (verdict, why) = verdict(&t, o, opts);
    t.verdict = verdict;
    t.why = why;
    t
}

fn verdict(t: &Tried, o: &Outcome, opts: &FitOptions) -> (Verdict, Option<String>) {
    use crate::units::{fmt_bytes, fmt_us};
    if let Some(why) = &o.no_start {
        return (Verdict::NoStart, Some(why.clone()));
    }
    if o.repeats.is_empty() {
        return (Verdict::NoStart, Some("no trial ran".into()));
    }
    if t.oom_kills > 0 {
        return (
            Verdict::Oom,
            Some(format!(
                "{} killed for memory",
                plural(t.oom_kills, "process")
            )),
        );
    }
    if let Some(usable) = opts.usable_bytes().filter(|&u| t.memory_peak_bytes > u) {
        return (
            Verdict::Oom,
            Some(format!(
                "memory peak {} over {} (the limit less {:.0}% headroom)",
                fmt_bytes(t.memory_peak_bytes),
                fmt_bytes(usable),
                opts.headroom * 100.0
            )),
        );
    }
    if t.errors > 0 {
        return (Verdict::Errors, Some(plural(t.errors, "error")));
    }
    match opts.slo_p99_us {
        Some(slo) if t.latency_us.p99 > slo => (
            Verdict::Slo,
            Some(format!(
                "p99 {} over the {} objective",
                fmt_us(t.latency_us.p99 as f64),
                fmt_us(slo as f64)
            )),
        ),
        _ => (Verdict::Ok, None),
    }
}

pub(super) fn plural(n: u64, what: &str) -> String {
    match (n, what) {
        (1, _) => format!("1 {what}"),
        (_, "process") => format!("{n} processes"),
        _ => format!("{n} {what}s"),
    }
}
