//! The terminal reports: the report's table with its notes wrapped to
//! the terminal, "what this shows", the conditions' lines, and the run
//! summary's table (Markdown is markdown.rs; report.csv and trials.csv
//! are csv.rs).
//!
//! It never writes Markdown, HTML or a file.

use super::{breakpoint_front, load_label, short, Report};
use crate::load::caveats::Caveats;
use crate::stats::spread::Spread;
use crate::store::records::front_of;
use crate::store::summary::GroupSummary;
use crate::units::num;
use crate::units::{fmt_bytes, fmt_us};
use std::fmt::Write;

/// "14647 (6967-22327)" or "14647" for one run.
pub(super) fn rps_spread(s: &Spread) -> String {
    if s.n > 1 {
        format!("{:.0} ({:.0}-{:.0})", s.median, s.min, s.max)
    } else {
        format!("{:.0}", s.median)
    }
}

/// Width the terminal tables wrap their notes to when stdout is not a
/// terminal (a file, a pipe, a test): fixed, so the output is the same
/// everywhere.
pub const TABLE_WIDTH: usize = 140;
/// The narrowest a notes column gets, however wide the row before it.
const MIN_NOTES_WIDTH: usize = 36;

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

/// `text` broken at spaces into lines of at most `width` characters (a
/// word longer than that stands alone on its line).
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let need = line.chars().count() + 1 + word.chars().count();
        if !line.is_empty() && need > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// A table row, then its notes two spaces after it, wrapped to `width`
/// with the continuation lines under the notes' first character.
fn push_row(s: &mut String, row: &str, notes: &str, width: usize) {
    s.push_str(row);
    if notes.is_empty() {
        s.push('\n');
        return;
    }
    let indent = row.chars().count() + 2;
    let room = width.saturating_sub(indent).max(MIN_NOTES_WIDTH);
    for (i, line) in wrap(notes, room).iter().enumerate() {
        if i == 0 {
            let _ = writeln!(s, "  {line}");
        } else {
            let _ = writeln!(s, "{:indent$}{line}", "");
        }
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
        // A runtime column only when the study ran on more than one.
        let runtime_cell = |label: String| -> String {
            if self.runtime_varies() {
                let w = self
                    .groups
                    .iter()
                    .map(|g| g.runtime_label().chars().count())
                    .max()
                    .unwrap_or(0);
                format!("{label:<w$} ")
            } else {
                String::new()
            }
        };
        let _ = writeln!(
            s,
            "{:<24} {}{:<8} {:<8} {:>10} {:>5} {:>20} {:>9} {:>9} {:>10} {:>10} {:>6}",
            "server",
            runtime_cell("runtime".into()),
            "app",
            "front",
            "load",
            "runs",
            "req/s (min-max)",
            "p50",
            "p99",
            "RSS peak",
            "PSS peak",
            "errors"
        );
        for g in &self.groups {
            let p = &g.planned;
            let runs = format!("{}/{}", g.ok, g.planned_runs);
            let head = format!(
                "{:<24} {}{:<8} {:<8} {:>10} {:>5}",
                p.variant,
                runtime_cell(g.runtime_label()),
                p.app,
                p.front(),
                load_label(p),
                runs
            );
            let notes = g.all_notes();
            let c = g.caveats();
            match g.good() {
                Some(sum) => {
                    let row = format!(
                        "{head} {:>20} {:>9} {:>9} {:>10} {:>10} {:>6}",
                        c.mark_throughput(rps_spread(&sum.throughput_rps)),
                        latency(&c, 0.5, sum.latency_p50_us, fmt_us),
                        latency(&c, 0.99, sum.latency_p99_us, fmt_us),
                        fmt_bytes(sum.rss_peak_bytes.median as u64),
                        sum.pss_peak_bytes
                            .map_or("-".into(), |p| fmt_bytes(p.median as u64)),
                        sum.errors,
                    );
                    let notes = if notes.is_empty() {
                        notes
                    } else {
                        format!("({notes})")
                    };
                    push_row(s, &row, &notes, width);
                }
                None => {
                    let row = format!("{head} {:>20}", "no data");
                    push_row(s, &row, &format!("({notes})"), width);
                }
            }
        }
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

    #[test]
    fn notes_wrap_at_spaces_within_the_width() {
        // (text, width, lines)
        let cases: &[(&str, usize, &[&str])] = &[
            ("", 10, &[]),
            ("short", 10, &["short"]),
            ("one two three", 7, &["one two", "three"]),
            ("one two three", 8, &["one two", "three"]),
            ("a verylongword b", 4, &["a", "verylongword", "b"]),
            ("  spaced   out  ", 20, &["spaced out"]),
            ("≥: ages ≥ bound", 7, &["≥: ages", "≥ bound"]),
        ];
        for (text, width, want) in cases {
            assert_eq!(wrap(text, *width), *want, "{text:?} at {width}");
        }
    }

    #[test]
    fn a_rows_notes_continue_under_their_first_character() {
        let mut s = String::new();
        let notes = "(†: p99 from 500 latencies, fewer than 10 beyond; †: throughput from 120 responses (under 200))";
        push_row(&mut s, "row", notes, 50);
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines.len() > 1, "{s}");
        assert!(lines[0].starts_with("row  (†"), "{s}");
        for l in &lines[1..] {
            assert!(l.starts_with("     ") && !l.starts_with("      "), "{l:?}");
        }
        // The narrowest notes column is kept however long the row.
        let mut s = String::new();
        push_row(&mut s, &"x".repeat(200), "a b", 50);
        assert_eq!(s, format!("{}  a b\n", "x".repeat(200)));
        let mut s = String::new();
        push_row(&mut s, "row", "", 50);
        assert_eq!(s, "row\n");
    }
}
