//! The plain-text reports: the terminal table and Markdown (report.csv
//! and trials.csv are csv.rs).

use super::{breakpoint_front, load_label, short, Group, Report, TrialRow};
use crate::load::caveats::Caveats;
use crate::stats::spread::Spread;
use crate::store::records::front_of;
use crate::store::summary::GroupSummary;
use crate::units::{fmt_bytes, fmt_us};
use crate::units::{fmt_mib, fmt_ms, num};
use std::fmt::Write;

/// "14647 (6967-22327)" or "14647" for one run.
fn rps_spread(s: &Spread) -> String {
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
fn latency(c: &Caveats, q: f64, v: Option<Spread>, fmt: fn(f64) -> String) -> String {
    v.map_or("-".into(), |v| c.mark_latency(q, fmt(v.median)))
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// The client's mean latency split by telemetry, µs. Means add up where
/// percentiles do not.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeSplit {
    /// Between nginx and the app (0 without nginx).
    pub queue_us: f64,
    /// The app's own time, GC, SQL and pool wait included.
    pub app_us: f64,
    /// The GC part of `app_us`.
    pub gc_us: f64,
    /// The parts of `app_us` waiting for a pool connection and in SQL
    /// (0 for an app without ActiveRecord).
    pub pool_us: f64,
    pub db_us: f64,
    /// The rest: the server's parsing and writing, nginx, the network and
    /// the client.
    pub rest_us: f64,
}

impl TimeSplit {
    /// The bar's parts in order, each at least 0, adding up to the mean:
    /// queue, pool wait, SQL, the app's other time, GC, the rest. GC
    /// during a query is also SQL time; the GC part is what the app time
    /// has left after the pool wait and SQL, so nothing counts twice.
    pub fn parts(&self) -> [(&'static str, f64); 6] {
        let pool = self.pool_us.min(self.app_us);
        let db = self.db_us.min(self.app_us - pool);
        let gc = self.gc_us.min(self.app_us - pool - db);
        [
            ("queue", self.queue_us),
            ("pool wait", pool),
            ("SQL", db),
            ("app", self.app_us - pool - db - gc),
            ("GC", gc),
            ("rest", self.rest_us),
        ]
    }
}

pub(crate) fn time_split(sum: &GroupSummary) -> Option<TimeSplit> {
    let t = sum.telemetry.as_ref()?;
    let queue_us = t.queue_mean_us.map_or(0.0, |q| q.median);
    let app_us = t.app_mean_us.median;
    let median = |s: Option<crate::stats::spread::Spread>| s.map_or(0.0, |s| s.median);
    Some(TimeSplit {
        queue_us,
        app_us,
        gc_us: median(t.gc_mean_us).min(app_us),
        pool_us: median(t.pool_wait_mean_us),
        db_us: median(t.db_mean_us),
        rest_us: (sum.latency_mean_us?.median - queue_us - app_us).max(0.0),
    })
}

/// "Where the time goes" under a section's table, for the groups that had
/// telemetry on (nothing when none had); SQL and pool-wait columns when
/// one of them ran an app with ActiveRecord.
fn md_time_split(s: &mut String, groups: &[&Group]) {
    let with: Vec<(&Group, &GroupSummary)> = groups
        .iter()
        .filter_map(|g| {
            g.good()
                .filter(|sum| sum.telemetry.is_some())
                .map(|sum| (*g, sum))
        })
        .collect();
    if with.is_empty() {
        return;
    }
    let db = with.iter().any(|(_, sum)| {
        sum.telemetry
            .as_ref()
            .is_some_and(|t| t.db_mean_us.is_some())
    });
    let _ = writeln!(
        s,
        "Where the time goes (telemetry: inside the server; the rest is the server's own parsing and writing, nginx, the network and the client{}):\n",
        if db {
            "; pool wait is the time a request waited for a database connection, SQL its time in queries, both inside the app's time"
        } else {
            ""
        }
    );
    if db {
        let _ = writeln!(
            s,
            "| Server | Load | queue p50 (ms) | app p50 (ms) | SQL p50 (ms) | pool wait p50 / p99 (ms) | GC/1k req | GC time % | Mean: queue / app (pool wait, SQL, GC) / rest (ms) | Notes |\n|:--|--:|--:|--:|--:|--:|--:|--:|--:|:--|"
        );
    } else {
        let _ = writeln!(
            s,
            "| Server | Load | queue p50 (ms) | app p50 (ms) | GC/1k req | GC time % | Mean: queue / app (GC) / rest (ms) | Notes |\n|:--|--:|--:|--:|--:|--:|--:|:--|"
        );
    }
    let ms = |v: Option<crate::stats::spread::Spread>| v.map_or("-".into(), |v| fmt_ms(v.median));
    for (g, sum) in with {
        let t = sum.telemetry.as_ref().expect("filtered");
        let v = time_split(sum).expect("has telemetry");
        let mut cells = vec![
            md_cell(&g.planned.variant),
            load_label(&g.planned),
            ms(t.queue_p50_us),
            fmt_ms(t.app_p50_us.median),
        ];
        if db {
            cells.push(ms(t.db_p50_us));
            cells.push(match (t.pool_wait_p50_us, t.pool_wait_p99_us) {
                (Some(a), Some(b)) => format!("{} / {}", fmt_ms(a.median), fmt_ms(b.median)),
                _ => "-".into(),
            });
        }
        cells.push(format!("{:.1}", t.gc_runs_per_1k_requests.median));
        cells.push(
            t.gc_time_share
                .map_or("-".into(), |g| format!("{:.1}", g.median * 100.0)),
        );
        let queue = if t.queue_mean_us.is_some() {
            fmt_ms(v.queue_us)
        } else {
            "-".into()
        };
        let [_, pool, sql, _, gc, _] = v.parts();
        cells.push(if db {
            format!(
                "{queue} / {} ({}, {}, {}) / {}",
                fmt_ms(v.app_us),
                fmt_ms(pool.1),
                fmt_ms(sql.1),
                fmt_ms(gc.1),
                fmt_ms(v.rest_us)
            )
        } else {
            format!(
                "{queue} / {} ({}) / {}",
                fmt_ms(v.app_us),
                fmt_ms(v.gc_us),
                fmt_ms(v.rest_us)
            )
        });
        cells.push(md_cell(&g.short_notes()));
        let _ = writeln!(s, "| {} |", cells.join(" | "));
    }
    s.push('\n');
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

    /// Markdown in the style of costajob's README tables.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        self.md_header(&mut s);
        self.md_groups(&mut s);
        super::soak::markdown(&mut s, self);
        self.md_incomplete(&mut s);
        self.md_errors(&mut s);
        self.md_disturbed(&mut s);
        self.md_breakpoints(&mut s);
        self.md_skipped_and_warnings(&mut s);
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    }

    /// The plan, the machine, the command, the trial counts and how to
    /// read the tables.
    fn md_header(&self, s: &mut String) {
        let m = self.manifest.as_ref();
        let _ = writeln!(
            s,
            "# rackbench report: {}\n",
            m.map_or("(no manifest)", |m| m.plan.as_str())
        );
        if self.md_shows(s) {
            let _ = writeln!(s, "## The run\n");
        }
        if let Some(m) = m {
            let _ = writeln!(
                s,
                "- Plan `{}`{}, started {}, {} repeat{}",
                m.plan,
                m.follows
                    .as_ref()
                    .map_or(String::new(), |f| format!(" (follows {f})")),
                m.started_at,
                m.repeats,
                if m.repeats == 1 { "" } else { "s" }
            );
            let e = &m.environment;
            let _ = writeln!(
                s,
                "- Machine: {} ({} cores), Linux {}, {}, rackbench {}",
                e.cpu_model,
                e.cores,
                e.kernel,
                e.ruby_version.as_deref().unwrap_or("Ruby unknown"),
                e.rackbench_version
            );
            let _ = writeln!(s, "- Command: `{}`", m.command);
        }
        super::runtime::markdown(s, &self.runtimes());
        if let Some(line) = self.budget_line() {
            let _ = writeln!(s, "- {line}");
        }
        if let Some(line) = self.slow_line() {
            let _ = writeln!(s, "- {line}");
        }
        if let Some(line) = self.database_line() {
            let _ = writeln!(s, "- {line}");
        }
        let counts = self.counts();
        let _ = writeln!(
            s,
            "- Trials: {} planned; {}",
            self.trials.len(),
            counts
                .iter()
                .map(|(k, v)| format!("{v} {}", k.label()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(
            s,
            "\nFigures are medians across the good runs of each trial (min-max in brackets). \
             Latency in milliseconds, memory in MiB (peak over the measured window), \
             CPU in server milliseconds per OK response. Throughput and latency count OK \
             responses only; failed requests are in the errors. Marks: ≥ a latency that is the \
             age of requests still unanswered (too few came back: a lower bound); † a percentile \
             with fewer than 10 responses beyond it, or a throughput from fewer than 200; a row \
             with more than 1% errors, or with no OK response, is not a result (the only rows \
             to alarm about; the marks are read with their note). The notes say which.\n"
        );
    }

    /// "What this shows", one paragraph per section, right under the
    /// title; whether there was anything to say.
    fn md_shows(&self, s: &mut String) -> bool {
        let paragraphs = self.what_it_shows();
        if !paragraphs.is_empty() {
            let _ = writeln!(s, "## What this shows\n");
            for p in &paragraphs {
                let _ = writeln!(s, "{}\n", p.replace(['\n', '\r'], " "));
            }
        }
        !paragraphs.is_empty()
    }

    /// One table per app and front, one row per trial group, and where
    /// the time went when telemetry was on.
    fn md_groups(&self, s: &mut String) {
        let varies = self.runtime_varies();
        let (runtime_head, runtime_align) = if varies {
            ("| Runtime ", "|:--")
        } else {
            ("", "")
        };
        for ((app, fr), groups) in self.sections() {
            let _ = writeln!(s, "## {app}, {fr}\n");
            let _ = writeln!(
                s,
                "| Server {runtime_head}| Load | Runs | Throughput (req/s) | Latency avg / stdev / max (ms) | p99 (ms) | RSS peak (MiB) | PSS peak (MiB) | CPU (ms/req) | Errors | Notes |"
            );
            let _ = writeln!(
                s,
                "|:--{runtime_align}|--:|--:|--:|--:|--:|--:|--:|--:|--:|:--|"
            );
            for g in &groups {
                let p = &g.planned;
                let runtime = if varies {
                    format!("| {} ", md_cell(&g.runtime_label()))
                } else {
                    String::new()
                };
                let lead = format!(
                    "| {} {runtime}| {} | {}/{} ",
                    md_cell(&p.variant),
                    load_label(p),
                    g.ok,
                    g.planned_runs
                );
                let c = g.caveats();
                let bound = |v: Option<Spread>| {
                    v.map_or("-".into(), |v| {
                        if c.lower_bound {
                            format!("≥ {}", fmt_ms(v.median))
                        } else {
                            fmt_ms(v.median)
                        }
                    })
                };
                match g.good() {
                    Some(sum) => {
                        let _ = writeln!(
                            s,
                            "{lead}| {} | {} / {} / {} | {} | {} | {} | {} | {} | {} |",
                            c.mark_throughput(rps_spread(&sum.throughput_rps)),
                            bound(sum.latency_mean_us),
                            sum.latency_stdev_us
                                .map_or("-".into(), |v| fmt_ms(v.median)),
                            bound(sum.latency_max_us),
                            latency(&c, 0.99, sum.latency_p99_us, fmt_ms),
                            fmt_mib(sum.rss_peak_bytes.median),
                            sum.pss_peak_bytes.map_or("-".into(), |p| fmt_mib(p.median)),
                            sum.cpu_ms_per_request
                                .map_or("-".into(), |c| format!("{:.3}", c.median)),
                            sum.errors,
                            md_cell(&g.all_notes())
                        );
                    }
                    None => {
                        let _ = writeln!(
                            s,
                            "{lead}| - | - | - | - | - | - | - | **no data: {}** |",
                            g.notes()
                        );
                    }
                }
            }
            s.push('\n');
            md_time_split(s, &groups);
            super::memory::markdown(s, &groups);
            super::budget::markdown(s, self, &groups);
            super::slow::markdown(s, self, &groups);
            super::database::markdown(s, self, &groups);
            super::endpoints::markdown(s, &groups);
            super::restart::markdown(s, self, &groups);
        }
    }

    fn md_incomplete(&self, s: &mut String) {
        let bad = self.incomplete();
        if !bad.is_empty() {
            let _ = writeln!(s, "## Trials not completed\n");
            let _ = writeln!(s, "| Trial | Status | Reason |\n|:--|:--|:--|");
            for t in bad {
                let _ = writeln!(
                    s,
                    "| {} | **{}** | {} |",
                    t.planned.id,
                    t.status.label(),
                    md_cell(&short(t.reason.as_deref().unwrap_or(""), 160))
                );
            }
            s.push('\n');
        }
    }

    /// The trials the machine disturbed, with who was busy (a caveat:
    /// sampler::disturbance).
    fn md_disturbed(&self, s: &mut String) {
        let disturbed: Vec<(&TrialRow, &crate::sampler::Disturbance)> = self
            .trials
            .iter()
            .filter_map(|t| Some((t, t.record.as_ref()?.disturbance.as_ref()?)))
            .filter(|(_, d)| d.disturbed)
            .collect();
        if disturbed.is_empty() {
            return;
        }
        let _ = writeln!(
            s,
            "## Disturbed trials\n\nSteal or other processes' CPU on the server's and the generator's CPUs passed its threshold during the counted window: their figures may be the host's (docs/STATISTICS.md).\n\n| Trial | Steal | Foreign CPU | CPUs | Busiest foreign processes |\n|:--|--:|--:|:--|:--|"
        );
        for (t, d) in disturbed {
            let top: Vec<String> = d
                .foreign_top
                .iter()
                .take(3)
                .map(|p| format!("{} ({:.1} s)", p.name, p.cpu_s))
                .collect();
            let _ = writeln!(
                s,
                "| {} | {:.1}% | {:.1}% | {} | {} |",
                t.planned.id,
                d.steal_share * 100.0,
                d.foreign_cpu_share * 100.0,
                crate::load::cpus::format_list(&d.cpus),
                md_cell(&top.join(", "))
            );
        }
        s.push('\n');
    }

    fn md_errors(&self, s: &mut String) {
        let with_errors: Vec<_> = self
            .trials
            .iter()
            .filter(|t| t.errors() > 0)
            .filter_map(|t| t.record.as_ref().map(|r| (t, r)))
            .collect();
        if !with_errors.is_empty() {
            let _ = writeln!(s, "## Errors\n");
            let _ = writeln!(
                s,
                "| Trial | Total | connect | timeout | reset | parse | status | body | Failed p50 / p99 (ms) | Seconds with errors |\n|:--|--:|--:|--:|--:|--:|--:|--:|--:|:--|"
            );
            for (t, r) in with_errors {
                let e = &r.load.errors;
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    t.planned.id,
                    e.total(),
                    e.connect,
                    e.timeout,
                    e.reset,
                    e.parse,
                    e.status,
                    e.body,
                    r.load
                        .latency_failed_us
                        .as_ref()
                        .map_or("-".into(), |f| format!(
                            "{} / {}",
                            fmt_ms(f.p50 as f64),
                            fmt_ms(f.p99 as f64)
                        )),
                    super::error_seconds(&r.load)
                );
            }
            s.push('\n');
        }
    }

    fn md_breakpoints(&self, s: &mut String) {
        if !self.breakpoints.is_empty() || !self.missing_breakpoints.is_empty() {
            let _ = writeln!(s, "## Break points\n");
            let _ = writeln!(
                s,
                "| Server | App | Front | Mode | Break point | Throughput (req/s) | First failing | Steps | Load (s) | Why it failed |\n|:--|:--|:--|:--|--:|--:|--:|--:|--:|:--|"
            );
            for b in &self.breakpoints {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {:.0} | {} | {} | {:.1} | {} |",
                    md_cell(&b.variant),
                    b.app,
                    breakpoint_front(b),
                    b.mode,
                    b.result.level.map_or("none".into(), num)
                        + if b.result.confirmed {
                            ""
                        } else {
                            " (unconfirmed)"
                        },
                    b.throughput_rps,
                    b.result.failed_at.map_or(
                        if b.result.capped {
                            "none (capped)".into()
                        } else {
                            "-".into()
                        },
                        num
                    ),
                    b.result.steps.len(),
                    b.load_seconds,
                    b.result
                        .why_failed()
                        .map_or(String::new(), |w| md_cell(&format!("{}: {w}", b.variant)))
                );
            }
            for id in &self.missing_breakpoints {
                let _ = writeln!(s, "| {id} | | | | **missing** | | | | | |");
            }
            s.push('\n');
        }
    }

    fn md_skipped_and_warnings(&self, s: &mut String) {
        if let Some(m) = self.manifest.as_ref().filter(|m| !m.skipped.is_empty()) {
            let _ = writeln!(s, "## Skipped combinations\n");
            for k in &m.skipped {
                let _ = writeln!(s, "- {}", md_cell(k));
            }
            s.push('\n');
        }
        if !self.warnings.is_empty() {
            let _ = writeln!(s, "## Warnings\n");
            for w in &self.warnings {
                let _ = writeln!(s, "- {}", md_cell(w));
            }
            s.push('\n');
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
        let c = if g.runs > 0 { g.caveats } else { Caveats::NONE };
        let mut notes = Vec::new();
        if g.failed > 0 {
            notes.push(format!("({} failed)", g.failed));
        } else if g.runs == 0 {
            notes.push("(no run)".into());
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
            g.rate
                .map_or(g.connections.to_string(), |r| format!("{r}/s")),
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

#[cfg(test)]
mod tests {
    use super::*;

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
