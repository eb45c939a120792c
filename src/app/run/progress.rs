//! What a run says while it runs: the plan's line with its length, each
//! trial's progress line, and the summary at the end.
//!
//! Words only, handed back as text for a sink: it decides nothing, prints
//! nothing and writes no file.

use crate::lab::trial::TrialRecord;
use crate::load::caveats::Caveats;
use crate::plan::runner::{estimate, Progress};
use crate::plan::Plan;
use crate::report::render_summary;
use crate::store::records::Outcome;

/// The plan's line: its name, how many trials and searches, about how
/// long; then each combination skipped and why.
pub(super) fn announce(plan: &Plan, expanded: &crate::plan::Expanded) -> Vec<String> {
    let eta = estimate(expanded, plan);
    let fixed = plan.breakpoint.as_ref().is_none_or(|b| b.and_fixed_loads);
    let searches = if plan.breakpoint.is_some() {
        crate::plan::runner::breakpoint_groups(expanded).len()
    } else {
        0
    };
    let mut lines = vec![format!(
        "plan {}{}: {} trials{}, about {}",
        plan.name,
        plan.follows
            .as_deref()
            .map_or(String::new(), |f| format!(" ({f})")),
        if fixed { expanded.trials.len() } else { 0 },
        if searches > 0 {
            format!(" and {searches} break-point searches")
        } else {
            String::new()
        },
        about(eta)
    )];
    for s in &expanded.skipped {
        lines.push(format!("  skipped: {s}"));
    }
    lines
}

/// A plan's length as its announcement says it: "4 s" under a minute
/// (a 1 s trial once read "about 1 min"), "3 min" under an hour, "2 h 5
/// min" beyond.
fn about(d: std::time::Duration) -> String {
    let secs = d.as_secs_f64().ceil().max(1.0) as u64;
    if secs < 60 {
        return format!("{secs} s");
    }
    let min = (secs + 30) / 60;
    if min < 60 {
        return format!("{min} min");
    }
    format!("{} h {} min", min / 60, min % 60)
}

/// The lines a terminal shows for one of the runner's progress events.
pub fn lines(p: &Progress) -> Vec<String> {
    match p {
        Progress::Rerun {
            trial: t,
            attempt,
            of,
            why,
        } => vec![format!(
            "[rerun] {} · {} · repeat {}: disturbed ({why}), run again at the round's end (attempt {attempt} of at most {of})",
            t.variant, t.app, t.repeat
        )],
        Progress::Trial {
            n,
            total,
            trial: t,
            eta,
        } => vec![format!(
            "[{n}/{total}] {} · {} · {} · {} (repeat {}){}",
            t.variant,
            t.app,
            t.front(),
            t.shape
                .rate
                .map_or(format!("{} connections", t.shape.connections), |r| format!(
                    "{r} req/s"
                )),
            t.repeat,
            if eta.is_zero() {
                String::new()
            } else {
                format!(" · about {}s left", eta.as_secs())
            },
        )],
        Progress::TrialDone(stored) => trial_done(stored),
        Progress::Breakpoint { n, total, trial: t } => vec![format!(
            "[{n}/{total}] break point of {} · {} · {}",
            t.variant,
            t.app,
            t.front()
        )],
        Progress::BreakpointDone(record) => {
            let mut out = vec![format!(
                "        {} {} at {:.0} req/s ({:.0} load-seconds, {} steps)",
                record.mode,
                record
                    .result
                    .level
                    .map_or("none".into(), |l| format!("{l:.0}")),
                record.throughput_rps,
                record.load_seconds,
                record.result.steps.len()
            )];
            if let (Some(at), Some(why)) = (record.result.failed_at, record.result.why_failed()) {
                out.push(format!("        first failing level {at:.0}: {why}"));
            }
            out
        }
    }
}

/// The lines under a trial that ended: its figures, a restart's verdict,
/// a disturbance, faults, a soak's verdicts (or why it failed), and each
/// check it missed.
fn trial_done(stored: &crate::store::records::StoredTrial) -> Vec<String> {
    let mut out = Vec::new();
    match &stored.trial {
        Some(rec) => {
            out.push(format!("        {}", progress_line(rec)));
            if let Some(x) = &rec.restart {
                out.push(format!(
                    "        {} restart at {:.1}s: {}",
                    x.kind, x.at_s, x.verdict
                ));
            }
            if let Some(n) = rec.disturbance.as_ref().and_then(|d| d.note()) {
                out.push(format!("        {n}"));
            }
            for f in rec.faults.sentences() {
                out.push(format!("        FAULT: {f}"));
            }
            if let Some(soak) = &rec.soak {
                for w in &soak.workers {
                    out.push(format!("        soak: {}", w.verdict));
                }
                out.push(format!("        soak: {}", soak.rackbench.verdict));
            }
        }
        None => out.push(format!(
            "        {}: {}",
            if stored.outcome == Outcome::Interrupted {
                "interrupted"
            } else {
                "failed"
            },
            stored.error.as_deref().unwrap_or("")
        )),
    }
    for c in stored.checks.iter().filter(|c| !c.met) {
        out.push(format!("        {c}"));
    }
    out
}

/// The summary after a run: what the data shows, the table, and the
/// lines of the conditions it ran under (budget, slow clients, database,
/// endpoints, restarts, soaks; nothing without them). What the data shows
/// and those lines are rebuilt from the run's study like every report, so
/// a record that cannot be read costs only them.
pub(super) fn summary_text(
    study: &crate::store::study::Study,
    summary: &[crate::store::summary::GroupSummary],
) -> String {
    use crate::store::summary::GroupSummary;
    let report = crate::report::Report::of(study).ok();
    let mut text = String::new();
    if let Some(report) = &report {
        text.push_str(&report.terminal_shows(crate::report::table_width()));
    }
    // The planned groups an interruption kept from running have no record:
    // a row each, "not run", so the table shows the whole plan.
    let mut rows = summary.to_vec();
    for g in report.iter().flat_map(|r| &r.groups) {
        if !rows.iter().any(|s| s.group == g.group) {
            rows.push(GroupSummary::not_run(&g.planned));
        }
    }
    rows.sort_by(|a, b| crate::units::natural_cmp(&a.group, &b.group));
    text.push_str(&render_summary(&rows));
    text.push('\n');
    if let Some(report) = &report {
        text.push_str(&report.terminal_conditions());
    }
    text
}

/// One trial's figures for the progress output, with the same marks and
/// notes as every report (seed 001 printed "19 req/s, p99 18.46ms,
/// errors 347494" for a server answering 503 at once). A trial Ctrl-C
/// cut short mid-load says so first (issue 36: its figures read as a
/// whole trial's).
fn progress_line(rec: &TrialRecord) -> String {
    use crate::units::{fmt_bytes, fmt_us};
    let c = Caveats::of(&rec.load);
    // In the load summary's words, once, rather than as ≥, † and "no OK
    // response" notes.
    let notes = if rec.load.answered_nothing() {
        vec![format!("{}: not a result", crate::load::report::NO_ANSWER)]
    } else {
        c.notes()
    };
    format!(
        "{}{} req/s, p99 {}, errors {}, RSS peak {}{}",
        if rec.interrupted || rec.load.interrupted {
            format!(
                "interrupted after {:.1}s of load: ",
                rec.load.load_seconds()
            )
        } else {
            String::new()
        },
        c.mark_throughput(format!("{:.0}", rec.load.throughput_rps)),
        if rec.load.latency_us.has_figures() {
            c.mark_latency(0.99, fmt_us(rec.load.latency_us.p99 as f64))
        } else {
            "none".into()
        },
        rec.load.errors.total(),
        fmt_bytes(rec.server_metrics.rss_peak_bytes),
        if notes.is_empty() {
            String::new()
        } else {
            format!("  ({})", notes.join("; "))
        }
    )
}

#[cfg(test)]
mod tests {
    use super::{about, progress_line};
    use crate::lab::record::TrialRecord;
    use std::time::Duration;

    /// Issue 36: a trial Ctrl-C interrupted mid-load printed its figures
    /// on its progress line like any finished trial's.
    #[test]
    fn an_interrupted_trial_says_so_on_its_progress_line() {
        let sample = include_str!("../../../tests/contracts/trial-v1.json");
        let mut rec: TrialRecord = serde_json::from_str(sample).unwrap();
        rec.interrupted = false;
        rec.load.interrupted = false;
        assert!(!progress_line(&rec).contains("interrupted"));
        rec.interrupted = true;
        rec.load.interrupted = true;
        rec.load.elapsed_s = 2.34;
        let line = progress_line(&rec);
        assert!(
            line.starts_with("interrupted after 2.3s of load: "),
            "{line}"
        );
    }

    /// Issue 36: a trial with no answer in its window says it in the load
    /// summary's words, once, not as three notes.
    #[test]
    fn no_answer_in_the_window_is_one_note_on_the_progress_line() {
        let sample = include_str!("../../../tests/contracts/trial-v1.json");
        let mut rec: TrialRecord = serde_json::from_str(sample).unwrap();
        let l = &mut rec.load;
        (l.requests.ok, l.requests.unfinished, l.throughput_rps) = (0, 4, 0.0);
        l.errors = Default::default();
        l.latency_lower_bound = true;
        let line = progress_line(&rec);
        assert!(
            line.ends_with("  (no answer in the window: not a result)"),
            "{line}"
        );
    }

    #[test]
    fn a_plans_length_is_said_in_the_unit_that_fits() {
        let rows = [
            (0.0, "1 s"),
            (3.6, "4 s"),
            (4.75, "5 s"),
            (59.0, "59 s"),
            (59.2, "1 min"),
            (60.0, "1 min"),
            (89.0, "1 min"),
            (90.0, "2 min"),
            (3569.0, "59 min"),
            (3570.0, "1 h 0 min"),
            (7500.0, "2 h 5 min"),
        ];
        for (secs, want) in rows {
            assert_eq!(about(Duration::from_secs_f64(secs)), want, "{secs}");
        }
    }
}
