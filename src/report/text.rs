//! The terminal reports: the report's table with its notes wrapped to
//! the terminal, "what this shows", the conditions' lines, and the run
//! summary's table (Markdown is markdown.rs; report.csv and trials.csv
//! are csv.rs).
//!
//! It never writes Markdown, HTML or a file.

use super::table::{push_row, wrap, MIN_NOTES_WIDTH};
use super::{breakpoint_front, short, Report};
use crate::load::caveats::Caveats;
use crate::stats::spread::Spread;
use crate::store::records::front_of;
use crate::store::summary::GroupSummary;
use crate::units::num;
use std::fmt::Write;

/// Width the terminal tables wrap their notes to when stdout is not a
/// terminal (a file, a pipe, a test): fixed, so the output is the same
/// everywhere.
pub const TABLE_WIDTH: usize = 140;
/// The terminal's width in columns when stdout is one, else
/// [`TABLE_WIDTH`].
pub fn table_width() -> usize {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return TABLE_WIDTH;
    }
    // SAFETY: TIOCGWINSZ fills a winsize the size of the one passed.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col >= 40 {
        usize::from(ws.ws_col)
    } else {
        TABLE_WIDTH
    }
}

/// A latency percentile's median with its marks, or "-" when the runs
/// have no latency figure (every request refused or failed): never 0.
pub(super) fn latency(c: &Caveats, q: f64, v: Option<Spread>, fmt: fn(f64) -> String) -> String {
    v.map_or("-".into(), |v| c.mark_latency(q, fmt(v.median)))
}

impl Report {
    /// The lines under the terminal table for the conditions a study ran
    /// under (budget, slow clients, database, a mix's endpoints, restarts,
    /// soaks), each nothing when no trial had it: `report` prints them
    /// under its table and `run` under its summary.
    pub fn terminal_conditions(&self) -> String {
        let mut s = String::new();
        super::budget::terminal(&mut s, self);
        super::slow::terminal(&mut s, self);
        super::database::terminal(&mut s, self);
        super::endpoints::terminal(&mut s, self);
        super::restart::terminal(&mut s, self);
        super::soak::terminal(&mut s, self);
        s
    }

    /// The table printed on the terminal, then what is missing or failed.
    pub fn terminal(&self) -> String {
        let mut s = String::new();
        let width = table_width();
        s.push_str(&self.terminal_shows(width));
        if !self.groups.is_empty() {
            self.terminal_trials(&mut s, width);
        }
        s.push_str(&self.terminal_conditions());
        let bad = self.incomplete();
        if !bad.is_empty() {
            let _ = writeln!(s, "\nnot completed:");
            for t in bad {
                let _ = writeln!(
                    s,
                    "  {:<12} {}: {}",
                    t.status.label(),
                    t.planned.id,
                    short(t.reason.as_deref().unwrap_or(""), 100)
                );
            }
        }
        if !self.breakpoints.is_empty() {
            let _ = writeln!(s, "\nbreak points:");
            for b in &self.breakpoints {
                let _ = writeln!(
                    s,
                    "  {:<24} {:<8} {:<8} {} {} at {:.0} req/s ({} steps, {:.0} load-seconds){}",
                    b.variant,
                    b.app,
                    breakpoint_front(b),
                    b.mode,
                    b.result.level.map_or("none".into(), num),
                    b.throughput_rps,
                    b.result.steps.len(),
                    b.result.load_seconds,
                    if b.result.capped {
                        "  (no failure up to the plan's max)"
                    } else if !b.result.confirmed {
                        "  (interrupted before its full step: a probe's figures)"
                    } else {
                        ""
                    }
                );
                if let (Some(at), Some(why)) = (b.result.failed_at, b.result.why_failed()) {
                    let _ = writeln!(
                        s,
                        "  {:<24} first failing {}: {}: {}",
                        "",
                        num(at),
                        b.variant,
                        short(why, 120)
                    );
                }
            }
        }
        for id in &self.missing_breakpoints {
            let _ = writeln!(s, "  break point {id}: missing (not run)");
        }
        for w in &self.warnings {
            let _ = writeln!(s, "warning: {w}");
        }
        s
    }

    /// "What this shows" wrapped to `width`, then a blank line; empty when
    /// there is nothing to say. `run` prints it above its summary table.
    pub fn terminal_shows(&self, width: usize) -> String {
        let paragraphs = self.what_it_shows();
        if paragraphs.is_empty() {
            return String::new();
        }
        let mut s = String::from("what this shows:\n");
        // Each paragraph's later lines indented under its first.
        for p in paragraphs {
            for (i, line) in wrap(&p, width.saturating_sub(4).max(MIN_NOTES_WIDTH))
                .iter()
                .enumerate()
            {
                let _ = writeln!(s, "{}{line}", if i == 0 { "  " } else { "    " });
            }
        }
        s.push('\n');
        s
    }

    /// The trial table of [`Report::terminal`], notes wrapped to `width`.
    fn terminal_trials(&self, s: &mut String, width: usize) {
        let groups: Vec<&super::Group> = self.groups.iter().collect();
        s.push_str(&super::summary::table(self, &groups, &[]).terminal(width));
    }
}

/// The terminal table of a summary (what `run` prints at its end).
pub fn render_summary(groups: &[GroupSummary]) -> String {
    use crate::units::{fmt_bytes, fmt_us};
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<28} {:<7} {:<8} {:>6} {:>20} {:>10} {:>10} {:>10} {:>10} {:>6}  notes",
        "server",
        "app",
        "front",
        "conns",
        "req/s (min-max)",
        "p50",
        "p99",
        "RSS peak",
        "PSS peak",
        "errors"
    );
    let width = table_width();
    for g in groups {
        let tp = g.throughput_rps;
        if g.runs == 0 {
            // Nothing ran (or nothing ran to its end): no figure, never 0
            // req/s and "RSS peak 0.0 KiB" (issue 36, after Ctrl-C).
            let row = format!(
                "{:<28} {:<7} {:<8} {:>6} {:>20} {:>10} {:>10} {:>10} {:>10} {:>6}",
                g.variant,
                g.app,
                front_of(&g.behind),
                shape_of(g),
                "-",
                "-",
                "-",
                "-",
                "-",
                "-"
            );
            let note = if g.failed > 0 {
                format!("({} failed)", g.failed)
            } else {
                "not run".into()
            };
            push_row(&mut s, &row, &note, width);
            continue;
        }
        let c = g.caveats;
        let mut notes = Vec::new();
        if g.failed > 0 {
            notes.push(format!("({} failed)", g.failed));
        }
        notes.push(c.notes().join("; "));
        if let Some(n) = g.disturbance.note() {
            notes.push(format!("({n})"));
        }
        let row = format!(
            "{:<28} {:<7} {:<8} {:>6} {:>20} {:>10} {:>10} {:>10} {:>10} {:>6}",
            g.variant,
            g.app,
            front_of(&g.behind),
            shape_of(g),
            c.mark_throughput(if g.runs > 1 {
                format!("{:.0} ({:.0}-{:.0})", tp.median, tp.min, tp.max)
            } else {
                format!("{:.0}", tp.median)
            }),
            latency(&c, 0.5, g.latency_p50_us, fmt_us),
            latency(&c, 0.99, g.latency_p99_us, fmt_us),
            fmt_bytes(g.rss_peak_bytes.median as u64),
            g.pss_peak_bytes
                .map_or("-".into(), |p| fmt_bytes(p.median as u64)),
            g.errors,
        );
        let notes: Vec<String> = notes.into_iter().filter(|n| !n.is_empty()).collect();
        push_row(&mut s, &row, &notes.join(" "), width);
    }
    s
}

/// A group's load in the summary: "16" connections or "500/s".
fn shape_of(g: &GroupSummary) -> String {
    g.rate
        .map_or(g.connections.to_string(), |r| format!("{r}/s"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 36: after Ctrl-C, trials that never ran showed 0 req/s and
    /// "RSS peak 0.0 KiB" in the summary (PSS showed "-"): every figure of
    /// a group with no run is "-", and its note says "not run".
    #[test]
    fn a_group_that_did_not_run_shows_no_figure() {
        let planned: crate::store::records::PlannedTrial =
            serde_json::from_value(serde_json::json!({
                "id": "puma__hello__direct__c16__rep1", "group": "puma__hello__direct__c16",
                "server": "puma", "variant": "puma", "settings": {}, "env": {},
                "app": "hello", "behind": "none", "nginx_workers": 0,
                "shape": { "connections": 16 }, "repeat": 1
            }))
            .unwrap();
        let mut g = GroupSummary::not_run(&planned);
        let text = render_summary(std::slice::from_ref(&g));
        let row = text.lines().nth(1).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells,
            ["puma", "hello", "direct", "16", "-", "-", "-", "-", "-", "-", "not", "run"],
            "{text}"
        );
        g.failed = 2;
        let text = render_summary(&[g]);
        assert!(
            text.lines().nth(1).unwrap().ends_with("-  (2 failed)"),
            "{text}"
        );
        assert!(!text.contains("KiB") && !text.contains("not run"), "{text}");
    }
}
