//! "What this shows": the few sentences every report opens with (the
//! terminal summary of `run`, report.md, report.html), written from the
//! same typed groups the tables show: per app and front, the fastest
//! server and by how much (or a tie), the servers that ran out of workers,
//! and the rows that are not results.
//!
//! It only reads [`Group`]s and returns sentences; it never formats a
//! table, reads a file or decides a caveat (`load::caveats` does).

use super::{load_label, Group, Report};
use crate::units::natural_cmp;

impl Report {
    /// "What this shows": the paragraphs every report opens with, written
    /// from the groups the tables show. (Here, not in mod.rs, so that
    /// mod.rs need not import this file while it imports mod.rs.)
    pub fn what_it_shows(&self) -> Vec<String> {
        what_it_shows(&self.sections())
    }
}

/// Throughput that grew by less than this factor from a lower to a higher
/// connection count did not grow: the server had no worker to spare.
const FLAT_GROWTH: f64 = 1.10;
/// The p99 must grow by at least this share of the connection ratio to
/// say the added connections only queued ("roughly in proportion").
const PROPORTIONAL: f64 = 0.5;

/// One paragraph per (app, front) section that has something to say,
/// then one naming the rows that are not results; empty when there is
/// nothing at all. `sections` as [`super::Report::sections`] returns them.
pub fn what_it_shows(sections: &[((String, String), Vec<&Group>)]) -> Vec<String> {
    let many = sections.len() > 1;
    let mut out = Vec::new();
    let mut not_results = Vec::new();
    for ((app, front), groups) in sections {
        let mut sentences = Vec::new();
        sentences.extend(fastest(groups));
        sentences.extend(saturated(groups));
        sentences.extend(starved(groups));
        if !sentences.is_empty() {
            out.push(format!("{app}, {front}: {}", sentences.join(" ")));
        }
        for g in groups.iter().filter(|g| !g.is_result()) {
            let why = g.why_not_a_result().unwrap_or_else(|| "no good run".into());
            let place = if many {
                format!(", {app}, {front}")
            } else {
                String::new()
            };
            not_results.push(format!(
                "{} at {}{place} ({why})",
                g.planned.variant,
                load_label(&g.planned)
            ));
        }
    }
    if !not_results.is_empty() {
        out.push(format!(
            "Not {}: {}.",
            if not_results.len() == 1 {
                "a result"
            } else {
                "results"
            },
            not_results.join("; ")
        ));
    }
    out
}

/// The closed-loop groups that are results, by variant (natural order),
/// each variant's in ascending connections.
fn by_variant<'a>(groups: &[&'a Group]) -> Vec<(String, Vec<&'a Group>)> {
    let mut out: Vec<(String, Vec<&'a Group>)> = Vec::new();
    for g in groups
        .iter()
        .filter(|g| g.is_result() && g.planned.shape.rate.is_none())
    {
        match out.iter_mut().find(|(v, _)| *v == g.planned.variant) {
            Some((_, v)) => v.push(g),
            None => out.push((g.planned.variant.clone(), vec![g])),
        }
    }
    out.sort_by(|a, b| natural_cmp(&a.0, &b.0));
    for (_, v) in &mut out {
        v.sort_by_key(|g| g.planned.shape.connections);
    }
    out
}

/// The median throughput of a result group.
fn rps(g: &Group) -> f64 {
    g.good().map_or(0.0, |s| s.throughput_rps.median)
}

/// The fastest server by median throughput at its best load level, and
/// by how much over the next; a tie when their min–max ranges overlap.
fn fastest(groups: &[&Group]) -> Option<String> {
    let mut best: Vec<&Group> = by_variant(groups)
        .into_iter()
        .filter_map(|(_, v)| v.into_iter().max_by(|a, b| rps(a).total_cmp(&rps(b))))
        .collect();
    best.sort_by(|a, b| rps(b).total_cmp(&rps(a)));
    // A result may still have left a few connections unanswered: said.
    let at = |g: &Group| {
        let starved = (g.starved.as_ref()).and_then(|s| s.words());
        format!(
            "{:.0} req/s at {}{}",
            rps(g),
            load_label(&g.planned),
            starved.map_or(String::new(), |w| format!(", where {w}"))
        )
    };
    match best.as_slice() {
        [] => None,
        [only] => Some(format!("{} peaks at {}.", only.planned.variant, at(only))),
        [a, b, ..] => {
            let (sa, sb) = (a.good()?.throughput_rps, b.good()?.throughput_rps);
            if sa.min <= sb.max {
                Some(format!(
                    "{} and {} tie at their best ({} and {}): within each other's min–max range.",
                    a.planned.variant,
                    b.planned.variant,
                    at(a),
                    at(b)
                ))
            } else {
                Some(format!(
                    "{} is the fastest, {}, {:.0}% over {} ({}{}).",
                    a.planned.variant,
                    at(a),
                    (sa.median / sb.median - 1.0) * 100.0,
                    b.planned.variant,
                    at(b),
                    if sa.n < 2 || sb.n < 2 {
                        "; one run: no min–max range to tell a lead from noise"
                    } else {
                        ""
                    }
                ))
            }
        }
    }
}

/// " (2 workers × 5 threads saturated)", " (1 worker saturated)", or
/// nothing when the plan did not say (the server's defaults).
fn capacity(g: &Group) -> String {
    let n = |k: u32, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
    let said = match (g.planned.workers, g.planned.threads) {
        (Some(w), Some(t)) => format!(
            "{} × {}",
            n(w, "worker", "workers"),
            n(t, "thread", "threads")
        ),
        (Some(w), None) => n(w, "worker", "workers"),
        (None, Some(t)) => n(t, "thread", "threads"),
        (None, None) => return String::new(),
    };
    format!(" ({said} saturated)")
}

/// The servers whose throughput stopped growing from a connection count
/// up to the highest while p99 grew roughly in proportion to the added
/// connections (they only queued): one sentence naming each, from the
/// lowest level where that began.
fn saturated(groups: &[&Group]) -> Option<String> {
    let mut found = Vec::new();
    for (variant, levels) in by_variant(groups) {
        let Some(top) = levels.last() else { continue };
        let p99 = |g: &Group| {
            g.good()
                .and_then(|s| s.latency_p99_us)
                .map_or(0.0, |v| v.median)
        };
        let start = levels.iter().find(|lo| {
            let conns = top.planned.shape.connections as f64 / lo.planned.shape.connections as f64;
            let flat = levels
                .iter()
                .filter(|g| g.planned.shape.connections > lo.planned.shape.connections)
                .all(|g| rps(g) < rps(lo) * FLAT_GROWTH);
            conns > 1.0 && flat && p99(lo) > 0.0 && p99(top) / p99(lo) >= PROPORTIONAL * conns
        });
        if let Some(lo) = start {
            let growth = rps(top) / rps(lo) - 1.0;
            found.push(format!(
                "{variant}{}: {}→{} connections added {}, p99 ×{:.1}",
                capacity(lo),
                lo.planned.shape.connections,
                top.planned.shape.connections,
                if growth < -0.1 {
                    format!("no throughput (it fell {:.0}%)", -growth * 100.0)
                } else if growth < 0.02 {
                    "no throughput".to_string()
                } else {
                    format!("only {:.0}% throughput", growth * 100.0)
                },
                p99(top) / p99(lo)
            ));
        }
    }
    (!found.is_empty()).then(|| format!("Ran out of workers: {}.", found.join("; ")))
}

/// The servers that left connections unanswered, each at each load
/// level: "Not everyone was served: puma-6.6 at 80 connections served 36
/// of 80 connections; the rest ...".
fn starved(groups: &[&Group]) -> Option<String> {
    let found: Vec<String> = (groups.iter())
        .filter_map(|g| {
            let served = g.starved.as_ref()?.served()?;
            Some(format!(
                "{} at {} {served}",
                g.planned.variant,
                load_label(&g.planned)
            ))
        })
        .collect();
    (!found.is_empty()).then(|| format!("Not everyone was served: {}.", found.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::caveats::Caveats;
    use crate::stats::spread::Spread;
    use crate::store::records::PlannedTrial;
    use crate::store::summary::GroupSummary;

    /// A group of `variant` at `conns` connections whose runs made
    /// `rps` (median, min, max) req/s at a p99 of `p99_ms`; `ok == 0`
    /// makes it a row with no OK response.
    fn group(
        variant: &str,
        wt: (Option<u32>, Option<u32>),
        conns: usize,
        rps: (f64, f64, f64),
        p99_ms: f64,
        ok: u64,
    ) -> Group {
        let planned: PlannedTrial = serde_json::from_value(serde_json::json!({
            "id": format!("{variant}__c{conns}__rep1"), "group": format!("{variant}__c{conns}"),
            "server": variant, "variant": variant, "workers": wt.0, "threads": wt.1,
            "settings": {}, "env": {}, "app": "hello", "behind": "none", "nginx_workers": 0,
            "shape": { "connections": conns }, "repeat": 1
        }))
        .unwrap();
        let spread = |m: f64, lo: f64, hi: f64| Spread {
            median: m,
            min: lo,
            max: hi,
            n: 3,
        };
        let flat = spread(0.0, 0.0, 0.0);
        let summary = GroupSummary {
            group: planned.group.clone(),
            server: variant.into(),
            variant: variant.into(),
            app: "hello".into(),
            behind: "none".into(),
            connections: conns,
            rate: None,
            runs: 3,
            failed: 0,
            throughput_rps: spread(rps.0, rps.1, rps.2),
            latency_mean_us: None,
            latency_stdev_us: None,
            latency_p50_us: None,
            latency_p99_us: Some(spread(p99_ms * 1000.0, p99_ms * 1000.0, p99_ms * 1000.0)),
            latency_max_us: None,
            rss_peak_bytes: flat,
            pss_peak_bytes: None,
            cpu_ms_per_request: None,
            errors: 0,
            caveats: Caveats {
                ok,
                ..Caveats::NONE
            },
            telemetry: None,
            disturbance: Default::default(),
            per_worker: None,
        };
        Group {
            planned_runs: 3,
            ok: 3,
            ..Group::empty(planned, Some(summary))
        }
    }

    fn one_run(mut g: Group) -> Group {
        if let Some(s) = g.summary.as_mut() {
            s.throughput_rps.n = 1;
        }
        g
    }

    fn shows(groups: &[Group]) -> String {
        let refs: Vec<&Group> = groups.iter().collect();
        what_it_shows(&[(("hello".into(), "direct".into()), refs)]).join("\n")
    }

    const NONE: (Option<u32>, Option<u32>) = (None, None);

    #[test]
    fn the_report_opens_with_what_the_data_shows() {
        // (groups, what the paragraph must say, what it must not)
        let cases: Vec<(Vec<Group>, Vec<&str>, Vec<&str>)> = vec![
            (
                // Clear winner: ranges apart.
                vec![
                    group("puma", NONE, 8, (1000.0, 950.0, 1050.0), 10.0, 3000),
                    group("thin", NONE, 8, (1500.0, 1450.0, 1550.0), 10.0, 4500),
                ],
                vec!["hello, direct: thin is the fastest, 1500 req/s at 8 conn, 50% over puma (1000 req/s at 8 conn)."],
                vec!["tie", "Ran out", "Not"],
            ),
            (
                // Best load level per server: puma's 16 beats its 8.
                vec![
                    group("puma", NONE, 8, (1000.0, 990.0, 1010.0), 10.0, 3000),
                    group("puma", NONE, 16, (2000.0, 1990.0, 2010.0), 10.0, 6000),
                    group("thin", NONE, 8, (1500.0, 1490.0, 1510.0), 10.0, 4500),
                ],
                vec!["puma is the fastest, 2000 req/s at 16 conn, 33% over thin (1500 req/s at 8 conn)"],
                vec!["tie"],
            ),
            (
                // Within each other's range: a tie, no winner.
                vec![
                    group("puma", NONE, 8, (1000.0, 900.0, 1100.0), 10.0, 3000),
                    group("thin", NONE, 8, (1050.0, 950.0, 1150.0), 10.0, 3000),
                ],
                vec!["thin and puma tie at their best (1050 req/s at 8 conn and 1000 req/s at 8 conn)"],
                vec!["fastest", "% over"],
            ),
            (
                // Saturated: flat throughput, p99 ×4 for ×4 connections.
                vec![
                    group("puma-w2", (Some(2), Some(5)), 8, (1000.0, 990.0, 1010.0), 10.0, 3000),
                    group("puma-w2", (Some(2), Some(5)), 32, (1003.0, 990.0, 1010.0), 38.0, 3000),
                ],
                vec!["Ran out of workers: puma-w2 (2 workers × 5 threads saturated): 8→32 connections added no throughput, p99 ×3.8."],
                vec![],
            ),
            (
                // Saturated from the middle level; a little growth said.
                vec![
                    group("unicorn", (Some(1), None), 4, (500.0, 490.0, 510.0), 8.0, 3000),
                    group("unicorn", (Some(1), None), 8, (1000.0, 990.0, 1010.0), 8.0, 3000),
                    group("unicorn", (Some(1), None), 32, (1050.0, 990.0, 1060.0), 30.0, 3000),
                ],
                vec!["unicorn (1 worker saturated): 8→32 connections added only 5% throughput, p99 ×3.8"],
                vec![],
            ),
            (
                // Throughput that fell is said, not hidden.
                vec![
                    group("puma", NONE, 2, (2000.0, 1990.0, 2010.0), 0.2, 3000),
                    group("puma", NONE, 16, (1200.0, 1190.0, 1210.0), 16.0, 3000),
                ],
                vec!["puma: 2→16 connections added no throughput (it fell 40%), p99 ×80.0"],
                vec![],
            ),
            (
                // One run each: a lead is said with its caveat.
                vec![
                    one_run(group("puma", NONE, 8, (1000.0, 1000.0, 1000.0), 10.0, 3000)),
                    one_run(group("thin", NONE, 8, (1050.0, 1050.0, 1050.0), 10.0, 3000)),
                ],
                vec!["thin is the fastest, 1050 req/s at 8 conn, 5% over puma (1000 req/s at 8 conn; one run: no min–max range to tell a lead from noise)."],
                vec!["tie"],
            ),
            (
                // Not saturated: throughput grew with the connections.
                vec![
                    group("puma", NONE, 8, (1000.0, 990.0, 1010.0), 10.0, 3000),
                    group("puma", NONE, 32, (3500.0, 3400.0, 3600.0), 12.0, 3000),
                ],
                vec!["puma peaks at 3500 req/s at 32 conn."],
                vec!["Ran out", "saturated"],
            ),
            (
                // Not saturated: flat throughput but p99 barely moved (the
                // client, not the server, set the pace).
                vec![
                    group("puma", NONE, 8, (1000.0, 990.0, 1010.0), 10.0, 3000),
                    group("puma", NONE, 32, (1000.0, 990.0, 1010.0), 12.0, 3000),
                ],
                vec![],
                vec!["Ran out", "saturated"],
            ),
            (
                // Rows that are not results are named, and left out of
                // the ranking.
                vec![
                    group("puma", NONE, 8, (1000.0, 990.0, 1010.0), 10.0, 3000),
                    group("thin", NONE, 8, (0.0, 0.0, 0.0), 1500.0, 0),
                ],
                vec!["puma peaks at 1000 req/s at 8 conn.", "Not a result: thin at 8 conn (no OK response)."],
                vec!["fastest", "tie"],
            ),
            (vec![], vec![], vec!["hello"]),
        ];
        for (groups, want, not) in cases {
            let text = shows(&groups);
            for w in want {
                assert!(text.contains(w), "wants {w:?} in:\n{text}");
            }
            for n in not {
                assert!(!text.contains(n), "does not want {n:?} in:\n{text}");
            }
        }
    }

    fn starved(mut g: Group, count: u64, of: u64) -> Group {
        use crate::report::starved::{Per, Starved};
        g.starved = Some(Starved {
            count,
            of,
            per: Per::Client,
            runs: 1,
            jain_index: Some(0.5),
        });
        g
    }

    #[test]
    fn a_server_that_left_connections_unanswered_is_named_and_never_the_fastest() {
        let text = shows(&[
            group("puma-5.6", NONE, 80, (100.0, 99.0, 101.0), 0.2, 3000),
            starved(
                group("puma-6.6", NONE, 80, (150.0, 149.0, 151.0), 0.2, 3000),
                44,
                80,
            ),
        ]);
        assert!(
            text.contains(
                "puma-6.6 at 80 conn served 36 of 80 connections; the rest got no answer"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "Not a result: puma-6.6 at 80 conn (44 of 80 connections never answered)."
            ),
            "{text}"
        );
        assert!(text.contains("puma-5.6 peaks at 100 req/s"), "{text}");
        assert!(!text.contains("fastest"), "{text}");
        // 1 of 200 (0.5%) is still a result: the fastest, with it said.
        let text = shows(&[
            group("puma-5.6", NONE, 80, (100.0, 99.0, 101.0), 0.2, 3000),
            starved(
                group("puma-6.6", NONE, 80, (150.0, 149.0, 151.0), 0.2, 3000),
                1,
                200,
            ),
        ]);
        assert!(
            text.contains("puma-6.6 is the fastest, 150 req/s at 80 conn, where 1 of 200 connections never answered"),
            "{text}"
        );
    }
}
