//! The terminal text of a load report: what ran and what came back, the
//! latencies marked by their caveats, what the generator cost.
//!
//! It reads the report and its caveats and is read by neither: the report
//! is the document, the caveats judge it, this file only prints both (a
//! report that printed itself had to ask the caveats, which read the
//! report: a circle between two files). It never computes a figure.

use super::caveats::Caveats;
use super::report::{unfinished_warning, LatencySummary, LoadReport, NO_ANSWER};
use crate::units::{fmt_bytes, fmt_us};

impl LoadReport {
    /// The human summary printed on a terminal: what ran and what came
    /// back, the latencies with their caveats, then what the generator
    /// cost and how the run ended.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        self.write_outcome(&mut s);
        self.write_latencies(&mut s);
        self.write_endpoints(&mut s);
        self.write_cost_and_end(&mut s);
        s
    }

    /// The run's shape, the requests answered, errors, what was left.
    fn write_outcome(&self, s: &mut String) {
        use std::fmt::Write;
        let c = &self.config;
        // A replay has no rate but keeps a schedule: it is an open loop
        // too (issue 36: its header said "closed loop").
        let shape = match (c.rate_rps, &self.schedule) {
            (Some(r), _) => format!("open loop at {r} req/s"),
            (None, Some(_)) => "open loop on the recorded schedule".to_string(),
            (None, None) => "closed loop".to_string(),
        };
        let _ = writeln!(
            s,
            "{} — {} connections, {} thread(s), {}{}{}",
            self.url,
            c.connections,
            c.threads,
            shape,
            if c.keep_alive { "" } else { ", no keep-alive" },
            if c.pipeline > 1 {
                format!(", pipeline {}", c.pipeline)
            } else {
                String::new()
            },
        );
        let _ = writeln!(
            s,
            "  {} ok of {} requests in {:.2}s{} → {:.1} req/s",
            self.requests.ok,
            self.requests.total,
            self.duration_s,
            if c.warmup_s > 0.0 {
                format!(" (after {:.1}s warm-up)", c.warmup_s)
            } else {
                String::new()
            },
            self.throughput_rps
        );
        let e = &self.errors;
        if self.answered_nothing() {
            let mut parts: Vec<String> = e
                .by_kind()
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            let waiting = self.requests.unfinished + self.requests.unsent;
            if waiting > 0 {
                parts.push(format!("{waiting} still waiting at the end"));
            }
            let _ = writeln!(s, "  errors:      {NO_ANSWER} ({})", parts.join(", "));
        } else if e.total() > 0 {
            let _ = writeln!(
                s,
                "  errors:      connect {} timeout {} reset {} parse {} status {} body {}",
                e.connect, e.timeout, e.reset, e.parse, e.status, e.body
            );
        } else {
            let _ = writeln!(s, "  errors:      none");
        }
        if let Some(f) = self.fairness.as_ref().filter(|f| f.connections_starved > 0) {
            // Issue 39: the answered connections' p50 says nothing of these.
            let _ = writeln!(
                s,
                "  starved:     {} of {} connections never answered in the window ({} served{})",
                f.connections_starved,
                f.connections_starved + f.connections_answered,
                f.connections_answered,
                f.jain_index
                    .map_or(String::new(), |j| format!(", Jain index {j:.2}"))
            );
        }
        if self.requests.unsent > 0 {
            let _ = writeln!(
                s,
                "  at the end:  {} in flight, {} due but unsent (their age so far counts as latency)",
                self.requests.unfinished, self.requests.unsent
            );
        }
    }

    /// The headline latency (marked by its caveats) and what it counts,
    /// the plain uncorrected and failed lines, the caveats' notes.
    fn write_latencies(&self, s: &mut String) {
        use std::fmt::Write;
        let caveats = Caveats::of(self);
        let nothing = self.answered_nothing();
        if nothing {
            write_waited_line(s, &self.latency_us);
        } else {
            write_latency_line(s, "latency", &self.latency_us, Some(&caveats));
            let _ = writeln!(s, "  {:<12} ({})", "", self.headline_says());
        }
        if let Some(u) = &self.latency_uncorrected_us {
            write_latency_line(s, "uncorrected", u, None);
        }
        if let Some(f) = &self.latency_failed_us {
            write_latency_line(s, "failed", f, None);
        }
        if nothing {
            // The errors line said why; the caveats' notes (≥, †, no OK
            // response) would say it three more ways.
            let _ = writeln!(s, "  flag:        not a result");
            return;
        }
        let shown = [(0.5, "p50"), (0.9, "p90"), (0.99, "p99"), (0.999, "p99.9")];
        for note in caveats.notes_for(&shown) {
            let _ = writeln!(s, "  flag:        {note}");
        }
    }

    /// What the headline latency counts, under it.
    fn headline_says(&self) -> &'static str {
        if !self.latency_us.has_figures() {
            if self.errors.status + self.errors.body > 0 {
                "no answer had the expected status or body: their latency is the failed line"
            } else {
                "no OK response"
            }
        } else if self.latency_lower_bound {
            "≥: ages of unanswered requests, too few responses came back"
        } else if self.latency_uncorrected_us.is_some() {
            "OK responses, from each request's scheduled start"
        } else {
            "OK responses"
        }
    }

    /// A mix's table: per endpoint its weight, requests, OK, throughput,
    /// latency and errors (nothing without a mix).
    fn write_endpoints(&self, s: &mut String) {
        use std::fmt::Write;
        if self.endpoints.is_empty() {
            return;
        }
        let width = self
            .endpoints
            .iter()
            .map(|e| e.name.len())
            .max()
            .unwrap_or(0)
            .max(8);
        let _ = writeln!(
            s,
            "  {:<width$}  {:>6}  {:>9}  {:>9}  {:>9}  {:>8}  {:>8}  {:>8}  errors",
            "endpoint", "weight", "requests", "ok", "req/s", "p50", "p90", "p99"
        );
        for e in &self.endpoints {
            let l = &e.latency_us;
            let us = |v: u64| {
                if l.has_figures() {
                    fmt_us(v as f64)
                } else {
                    "-".to_string()
                }
            };
            let x = &e.errors;
            let errors = if x.total() == 0 {
                "none".to_string()
            } else {
                x.by_kind()
                    .iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = writeln!(
                s,
                "  {:<width$}  {:>6}  {:>9}  {:>9}  {:>9.1}  {:>8}  {:>8}  {:>8}  {errors}",
                e.name,
                e.weight,
                e.requests,
                e.ok,
                e.throughput_rps,
                us(l.p50),
                us(l.p90),
                us(l.p99),
            );
        }
    }

    /// The open loop's schedule, the generator's own cost, how the run
    /// ended and the warnings.
    fn write_cost_and_end(&self, s: &mut String) {
        use std::fmt::Write;
        if let Some(w) = &self.slow_clients {
            let _ = writeln!(
                s,
                "  slow:        {} {} clients ({} B every {} ms): {} accepted, {} closed by the server, {} refused; {}; {} open at the end, held at least {:.1}s (in no figure above)",
                w.count,
                w.mode,
                w.bytes_per_step,
                w.every_ms,
                w.accepted,
                w.closed_by_server,
                w.refused,
                held_of_closed(w),
                w.open_at_end,
                w.open_at_end_min_s
            );
        }
        if let Some(sch) = &self.schedule {
            let past = match sch.slack_us {
                Some(slack) => format!("past the {} slack", fmt_us(slack as f64)),
                None => "late".to_string(),
            };
            let _ = writeln!(
                s,
                "  schedule:    {} sends more than 1ms {past}, max lag {}",
                sch.late_sends,
                fmt_us(sch.max_lag_us as f64)
            );
        }
        let g = &self.generator;
        let _ = writeln!(
            s,
            "  generator:   cpu {:.2}s user + {:.2}s sys, peak RSS {}, busiest thread {:.0}%{}",
            g.cpu_user_s,
            g.cpu_sys_s,
            fmt_bytes(g.peak_rss_bytes),
            g.busiest_thread_utilization * 100.0,
            if g.io.is_empty() {
                String::new()
            } else {
                format!(", {}", g.io)
            }
        );
        if let Some(seg) = self.segment.as_ref().filter(|g| g.count > 1) {
            let _ = writeln!(
                s,
                "  segment:     {}/{} of a split load: these are its figures only; merge every \
                 segment's --json document with `rackbench merge`",
                seg.index, seg.count
            );
        }
        if self.interrupted {
            let _ = writeln!(
                s,
                "  interrupted: the figures cover the run up to the interruption"
            );
        }
        if self.stopped_on_error {
            let _ = writeln!(s, "  stopped at the first error, as asked");
        }
        // With no answer in the window the errors line said how many
        // were still waiting.
        let said = self
            .answered_nothing()
            .then(|| unfinished_warning(self.requests.unfinished));
        for w in self.warnings.iter().filter(|w| Some(*w) != said.as_ref()) {
            let _ = writeln!(s, "  warning: {w}");
        }
    }
}

/// One latency line of the terminal summary. Only the headline passes its
/// `caveats`, so only it carries marks (≥ for a lower bound, a flag on a
/// percentile with too few samples); the others are plain.
fn write_latency_line(s: &mut String, label: &str, l: &LatencySummary, caveats: Option<&Caveats>) {
    use std::fmt::Write;
    if l.count == 0 {
        let _ = writeln!(s, "  {label:<12} none");
        return;
    }
    let pct = |q: f64, us: u64| match caveats {
        Some(c) => c.mark_latency(q, fmt_us(us as f64)),
        None => fmt_us(us as f64),
    };
    let bound = |us: f64| match caveats {
        Some(c) if c.lower_bound => format!("≥ {}", fmt_us(us)),
        _ => fmt_us(us),
    };
    let _ = writeln!(
        s,
        "  {label:<12} min {}  mean {} ± {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
        bound(l.min as f64),
        bound(l.mean),
        fmt_us(l.stdev),
        pct(0.5, l.p50),
        pct(0.9, l.p90),
        pct(0.99, l.p99),
        pct(0.999, l.p999),
        bound(l.max as f64),
    );
}

/// The headline of a run with no answer in the window: how long the
/// unanswered requests had waited when it ended, a lower bound of each
/// one's latency. No mean ± stdev: ages are not a measured distribution
/// (issue 36 showed "mean ≥ 996.61ms ± 0us").
fn write_waited_line(s: &mut String, l: &LatencySummary) {
    use std::fmt::Write;
    if !l.has_figures() {
        let _ = writeln!(s, "  {:<12} none", "latency");
        return;
    }
    let _ = writeln!(
        s,
        "  {:<12} ≥ {} (how long the unanswered requests had waited, up to {})",
        "latency",
        fmt_us(l.min as f64),
        fmt_us(l.max as f64)
    );
}

/// The held line of the slow clients the server closed: percentiles of
/// those only (the ones open at the end were cut off by it).
fn held_of_closed(w: &super::slow::SlowClientsReport) -> String {
    if w.held_s.count == 0 {
        "held: none closed".into()
    } else {
        format!(
            "held p50 {:.1}s, max {:.1}s (of {} closed)",
            w.held_s.p50, w.held_s.max, w.held_s.count
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::{empty_report, EndpointReport, LatencySummary};
    use crate::load::ErrorCounts;

    fn endpoint(name: &str, ok: u64, p50: u64, errors: ErrorCounts) -> EndpointReport {
        EndpointReport {
            name: name.into(),
            method: "GET".into(),
            path: format!("/{name}"),
            weight: 2.0,
            requests: ok + errors.total(),
            ok,
            throughput_rps: ok as f64 / 10.0,
            latency_us: LatencySummary {
                count: ok,
                p50,
                p90: p50,
                p99: p50,
                ..Default::default()
            },
            errors,
            latency_histogram: None,
        }
    }

    /// Issue 36: `replay` printed "closed loop" in its header, while the
    /// same output said latency counts from each request's scheduled start.
    #[test]
    fn the_header_names_the_loop_a_run_had() {
        use super::super::report::ScheduleStats;
        let schedule = ScheduleStats {
            late_sends: 0,
            max_lag_us: 0,
            sends: Some(0),
            within_1ms_share: None,
            slack_us: None,
        };
        // (rate, schedule kept, header says)
        let cases = [
            (None, false, "closed loop"),
            (Some(100.0), true, "open loop at 100 req/s"),
            (None, true, "open loop on the recorded schedule"),
        ];
        for (rate, kept, want) in cases {
            let mut r = empty_report();
            r.config.rate_rps = rate;
            r.schedule = kept.then(|| schedule.clone());
            let text = r.render_text();
            let header = text.lines().next().unwrap();
            assert!(header.ends_with(want), "{header}");
        }
    }

    /// Issue 36: a server that never answered in the window printed
    /// "errors: none" (while stderr said "see the errors above"), a mean
    /// ± stdev of the requests' ages, and the same fact as three flags and
    /// a warning. It is said once, in the same words.
    #[test]
    fn no_answer_in_the_window_is_said_once() {
        let mut r = empty_report();
        r.requests.total = 4;
        r.requests.unfinished = 4;
        r.latency_lower_bound = true;
        r.latency_us = LatencySummary {
            count: 4,
            min: 997_380,
            mean: 997_630.0,
            stdev: 0.0,
            p50: 997_890,
            p90: 997_890,
            p99: 997_890,
            p999: 997_890,
            max: 997_890,
        };
        r.warnings = vec![super::unfinished_warning(4)];
        assert!(r.answered_nothing());
        let text = r.render_text();
        assert_eq!(text.matches(super::NO_ANSWER).count(), 1, "{text}");
        assert!(
            text.contains("errors:      no answer in the window (4 still waiting at the end)"),
            "{text}"
        );
        assert!(text.contains("latency      ≥ 997.38ms (how long"), "{text}");
        for never in [
            "errors:      none",
            "±",
            "unanswered when the run ended",
            "†",
        ] {
            assert!(!text.contains(never), "{never}: {text}");
        }
        assert_eq!(text.matches("flag:").count(), 1, "{text}");
        // Timeouts are errors, still no answer: counted by kind beside it.
        r.errors.timeout = 4;
        let text = r.render_text();
        assert!(
            text.contains("no answer in the window (timeout 4, 4 still waiting at the end)"),
            "{text}"
        );
        // One answer with a wrong status is an answer.
        r.errors.status = 1;
        assert!(!r.answered_nothing());
    }

    /// Issue 39: "44 of 80 connections never answered" is said beside
    /// the errors, and nothing when every connection was served.
    #[test]
    fn starved_connections_are_said_beside_the_errors() {
        let mut r = empty_report();
        r.fairness = Some(crate::load::report::Fairness::of(
            [vec![0; 44], vec![9; 36]].concat(),
            false,
        ));
        let text = r.render_text();
        assert!(
            text.contains(
                "starved:     44 of 80 connections never answered in the window (36 served, Jain index 0.45)"
            ),
            "{text}"
        );
        r.fairness = Some(crate::load::report::Fairness::of(vec![9; 80], false));
        assert!(!r.render_text().contains("starved"));
        r.fairness = None;
        assert!(!r.render_text().contains("starved"));
    }

    #[test]
    fn a_mix_prints_a_row_per_endpoint_and_none_without_one() {
        let mut r = empty_report();
        let plain = r.render_text();
        assert!(!plain.contains("endpoint"), "{plain}");
        r.endpoints = vec![
            endpoint("index", 400, 2_000, ErrorCounts::default()),
            endpoint(
                "missing",
                0,
                0,
                ErrorCounts {
                    status: 7,
                    timeout: 1,
                    ..Default::default()
                },
            ),
        ];
        let text = r.render_text();
        let row = |name: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(name))
                .unwrap_or_else(|| panic!("no row {name} in:\n{text}"))
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            row("endpoint"),
            "endpoint weight requests ok req/s p50 p90 p99 errors"
        );
        assert_eq!(
            row("index"),
            "index 2 400 400 40.0 2.00ms 2.00ms 2.00ms none"
        );
        // No OK answer: no latency figure, never 0 ms; errors by kind.
        assert_eq!(
            row("missing"),
            "missing 2 8 0 0.0 - - - timeout 1, status 7"
        );
    }
}
