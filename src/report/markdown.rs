//! The Markdown report (report.md): its header, "what this shows", a
//! table per section with "where the time goes" under it, then the
//! incomplete, disturbed and errored trials, break points, skips and
//! warnings.
//!
//! It never computes a figure of its own: the groups' summaries, the
//! time split (time_split.rs) and the terminal's cells (text.rs) give
//! them.

use super::table::{md_cell, Align, Cell, Column, Kind, Row, Table};
use super::time_split::time_split;
use super::{breakpoint_front, load_label, short, Group, Report, TrialRow};
use crate::stats::spread::Spread;
use crate::store::summary::GroupSummary;
use crate::units::{fmt_ms, num};
use std::fmt::Write;

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
    let mut heads = vec![
        ("Server", Kind::Text, Align::Left),
        ("Load", Kind::Text, Align::Right),
        ("queue p50 (ms)", Kind::Latency, Align::Right),
        ("app p50 (ms)", Kind::Latency, Align::Right),
    ];
    if db {
        heads.push(("SQL p50 (ms)", Kind::Latency, Align::Right));
        heads.push(("pool wait p50 / p99 (ms)", Kind::Text, Align::Right));
    }
    heads.extend([
        ("GC/1k req", Kind::Fixed(1), Align::Right),
        ("GC time %", Kind::Fixed(1), Align::Right),
        (
            if db {
                "Mean: queue / app (pool wait, SQL, GC) / rest (ms)"
            } else {
                "Mean: queue / app (GC) / rest (ms)"
            },
            Kind::Text,
            Align::Right,
        ),
        ("Notes", Kind::Text, Align::Left),
    ]);
    let rows = with
        .into_iter()
        .map(|(g, sum)| Row::new(split_cells(g, sum, db)));
    s.push_str(&md_table(&heads, rows.collect()));
    s.push('\n');
}

/// A Markdown table of these columns (head, kind, alignment) and rows.
fn md_table(heads: &[(&str, Kind, Align)], rows: Vec<Row>) -> String {
    let columns = (heads.iter())
        .map(|(h, kind, align)| Column::new(*kind, *align).md(h))
        .collect();
    Table {
        columns,
        rows,
        ..Table::default()
    }
    .markdown()
}

/// A group's row of "where the time goes".
fn split_cells(g: &Group, sum: &GroupSummary, db: bool) -> Vec<Cell> {
    let t = sum.telemetry.as_ref().expect("filtered");
    let v = time_split(sum).expect("has telemetry");
    let median = |v: Option<Spread>| Cell::num(v.map(|v| v.median));
    let mut cells = vec![
        Cell::text(g.planned.variant.clone()),
        Cell::text(load_label(&g.planned)),
        median(t.queue_p50_us),
        median(Some(t.app_p50_us)),
    ];
    if db {
        cells.push(median(t.db_p50_us));
        cells.push(Cell::text(match (t.pool_wait_p50_us, t.pool_wait_p99_us) {
            (Some(a), Some(b)) => format!("{} / {}", fmt_ms(a.median), fmt_ms(b.median)),
            _ => "-".into(),
        }));
    }
    cells.push(median(Some(t.gc_runs_per_1k_requests)));
    cells.push(Cell::num(t.gc_time_share.map(|g| g.median * 100.0)));
    let queue = if t.queue_mean_us.is_some() {
        fmt_ms(v.queue_us)
    } else {
        "-".into()
    };
    let [_, pool, sql, _, gc, _] = v.parts();
    cells.push(Cell::text(if db {
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
    }));
    cells.push(Cell::text(g.short_notes()));
    cells
}

impl Report {
    /// Markdown in the style of costajob's README tables.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        self.md_header(&mut s);
        self.md_groups(&mut s);
        super::soak::markdown(&mut s, self);
        super::profile::markdown(&mut s, self);
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
        for ((app, fr), groups) in self.sections() {
            let _ = writeln!(s, "## {app}, {fr}\n");
            s.push_str(&super::summary::table(self, &groups, &[]).markdown());
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
            let rows = bad.iter().map(|t| {
                Row::new(vec![
                    Cell::text(t.planned.id.clone()),
                    Cell::text(format!("**{}**", t.status.label())),
                    Cell::text(short(t.reason.as_deref().unwrap_or(""), 160)),
                ])
            });
            let heads = [
                ("Trial", Kind::Text, Align::Left),
                ("Status", Kind::Text, Align::Left),
                ("Reason", Kind::Text, Align::Left),
            ];
            s.push_str(&md_table(&heads, rows.collect()));
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
            "## Disturbed trials\n\nSteal or other processes' CPU on the server's and the generator's CPUs passed its threshold during the counted window: their figures may be the host's (docs/STATISTICS.md).\n"
        );
        let rows = disturbed.into_iter().map(|(t, d)| {
            let top: Vec<String> = (d.foreign_top.iter().take(3))
                .map(|p| format!("{} ({:.1} s)", p.name, p.cpu_s))
                .collect();
            Row::new(vec![
                Cell::text(t.planned.id.clone()),
                Cell::num(Some(d.steal_share)),
                Cell::num(Some(d.foreign_cpu_share)),
                Cell::text(crate::load::cpus::format_list(&d.cpus)),
                Cell::text(top.join(", ")),
            ])
        });
        let heads = [
            ("Trial", Kind::Text, Align::Left),
            ("Steal", Kind::Percent, Align::Right),
            ("Foreign CPU", Kind::Percent, Align::Right),
            ("CPUs", Kind::Text, Align::Left),
            ("Busiest foreign processes", Kind::Text, Align::Left),
        ];
        s.push_str(&md_table(&heads, rows.collect()));
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
            let count = |n: u64| Cell::num(Some(n as f64));
            let rows = with_errors.into_iter().map(|(t, r)| {
                let e = &r.load.errors;
                let failed = r.load.latency_failed_us.as_ref().map_or("-".into(), |f| {
                    format!("{} / {}", fmt_ms(f.p50 as f64), fmt_ms(f.p99 as f64))
                });
                let mut cells = vec![Cell::text(t.planned.id.clone())];
                cells.extend(
                    [
                        e.total(),
                        e.connect,
                        e.timeout,
                        e.reset,
                        e.parse,
                        e.status,
                        e.body,
                    ]
                    .map(count),
                );
                cells.push(Cell::text(failed));
                cells.push(Cell::text(super::error_seconds(&r.load)));
                Row::new(cells)
            });
            let mut heads = vec![("Trial", Kind::Text, Align::Left)];
            for h in [
                "Total", "connect", "timeout", "reset", "parse", "status", "body",
            ] {
                heads.push((h, Kind::Count, Align::Right));
            }
            heads.push(("Failed p50 / p99 (ms)", Kind::Text, Align::Right));
            heads.push(("Seconds with errors", Kind::Text, Align::Left));
            s.push_str(&md_table(&heads, rows.collect()));
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
