//! Memory per worker in the reports: one table per app and front, a row
//! per trial group, with the worker count, PSS, USS and RSS per worker
//! (the mean over workers of each one's mean in the counted window), the
//! master's PSS and USS, and the whole tree's PSS and USS peaks beside
//! them, so what one more worker costs (issue 27: YJIT's memory is paid
//! in every worker) reads next to what the server costs in all.
//!
//! One set of rows feeds the Markdown and the HTML tables. Groups whose
//! records predate memory per worker have no row, and a section without
//! any row gets no table, so older reports read as they did. It formats
//! figures `store::summary` computed; it never computes one.

use super::svg::esc;
use super::table::{Align, Cell, Column, Format, Kind, Row, Table};
use super::{load_label, Group};
use crate::sampler::Role;
use crate::stats::spread::Spread;
use std::fmt::Write;

/// The table's columns: the server, its load and worker count, then
/// memory in MiB.
fn columns() -> Vec<Column> {
    let mib = |h: &str| Column::new(Kind::Mib, Align::Right).page(h);
    vec![
        Column::new(Kind::Text, Align::Left).page("Server"),
        Column::new(Kind::Text, Align::Right).page("Load"),
        Column::new(Kind::Text, Align::Right).page("Workers"),
        mib("PSS/worker (MiB)"),
        mib("USS/worker (MiB)"),
        mib("RSS/worker (MiB)"),
        Column::new(Kind::Text, Align::Right).page("Master PSS / USS (MiB)"),
        mib("Tree PSS peak (MiB)"),
        mib("Tree USS peak (MiB)"),
    ]
}

fn median(s: Option<Spread>) -> Cell {
    Cell::num(s.map(|s| s.median))
}

/// The table of the groups that have memory per worker, medians over
/// runs; None when no group has.
fn table(groups: &[&Group]) -> Option<Table> {
    // Who answered (telemetry): only when a group has the counts, so
    // older reports read as they did.
    let told = groups.iter().any(|g| g.shares.is_some());
    let rows: Vec<Row> = groups
        .iter()
        .filter_map(|g| {
            let sum = g.good()?;
            let w = sum.per_worker.as_ref()?;
            let workers = match w.role {
                Role::Single => "1 (single process)".to_string(),
                _ => format!("{}", w.workers.median),
            };
            let master = match (w.master_pss_mean_bytes, w.master_uss_mean_bytes) {
                (None, None) => "-".to_string(),
                (p, u) => format!("{} / {}", mib(p), mib(u)),
            };
            let mut cells = vec![
                Cell::text(g.planned.variant.clone()),
                Cell::text(load_label(&g.planned)),
                Cell::text(workers),
                median(w.pss_mean_bytes),
                median(w.uss_mean_bytes),
                median(Some(w.rss_mean_bytes)),
                Cell::text(master),
                median(sum.pss_peak_bytes),
                median(w.uss_peak_bytes),
            ];
            if told {
                let s = g.shares.as_ref();
                cells.push(s.map_or(Cell::num(None), |s| Cell::text(s.words())));
                cells.push(Cell::num(s.map(|s| s.deviation)));
            }
            Some(Row::new(cells))
        })
        .collect();
    let mut columns = columns();
    if told {
        columns.push(Column::new(Kind::Text, Align::Right).page("Requests per worker"));
        columns.push(Column::new(Kind::Percent, Align::Right).page("Deviation"));
    }
    (!rows.is_empty()).then(|| Table {
        columns,
        rows,
        ..Table::default()
    })
}

/// A median in MiB, "-" without one (the master's cell, two in one).
fn mib(s: Option<Spread>) -> String {
    s.map_or("-".into(), |s| Kind::Mib.figure(Format::Markdown, s.median))
}

const NOTE: &str = "Memory per worker: the mean over workers of each worker's mean over the counted window (a server without workers: its one process); medians across runs. USS is a worker's private memory, what one more worker costs; PSS adds its share of the pages it shares with its master and siblings.";

/// What the requests' columns are, when telemetry counted them.
const SHARES: &str = "Requests per worker: each app process's share of the requests telemetry counted, busiest first, and puma's \"% deviation\", the largest |share − 1/n| over 1/n (0% when n workers answered as many); the run with the largest deviation.";

/// The note over a table: memory's, and the requests' when it has them.
fn note(t: &Table) -> String {
    if t.columns.len() > columns().len() {
        format!("{NOTE} {SHARES}")
    } else {
        NOTE.to_string()
    }
}

/// The Markdown table of a section (nothing when no group has the figures).
pub fn markdown(s: &mut String, groups: &[&Group]) {
    let Some(t) = table(groups) else { return };
    let _ = writeln!(s, "{}\n", note(&t));
    s.push_str(&t.markdown());
    s.push('\n');
}

/// The HTML table of a section, under `title` (empty when no group has
/// the figures).
pub fn html(title: &str, groups: &[&Group]) -> String {
    let Some(t) = table(groups) else {
        return String::new();
    };
    format!(
        "<h3>{}</h3><p class=\"note\">{}</p>{}",
        esc(title),
        esc(&note(&t)),
        t.html()
    )
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::store::figures::tests::stored;
    use crate::store::records::StoredTrial;
    use crate::store::summary::summarize_trials;

    /// The group of the committed stored trial (puma, one process), its
    /// sample changed by `edit`.
    pub(in crate::report) fn group(edit: impl FnOnce(&mut serde_json::Value)) -> Group {
        let t: StoredTrial = serde_json::from_value(stored(edit)).unwrap();
        let summary = summarize_trials(std::slice::from_ref(&t)).remove(0);
        Group {
            group: summary.group.clone(),
            planned_runs: 1,
            ok: 1,
            ..Group::empty(t.planned.clone(), Some(summary))
        }
    }

    /// A puma cluster: a master and two workers of 14 and 16 MiB USS.
    fn cluster(v: &mut serde_json::Value) {
        let mib = |m: u64| m << 20;
        v["trial"]["server_metrics"]["samples"]["per_worker"] = serde_json::json!({
            "workers": 2, "role": "worker",
            "rss_mean_bytes": mib(28), "pss_mean_bytes": mib(19), "uss_mean_bytes": mib(15),
            "rss_max_bytes": mib(29), "pss_max_bytes": mib(20), "uss_max_bytes": mib(16),
            "master": {"masters": 1, "rss_mean_bytes": mib(24), "pss_mean_bytes": mib(13),
                       "uss_mean_bytes": mib(9), "rss_max_bytes": mib(24),
                       "pss_max_bytes": mib(13), "uss_max_bytes": mib(9)}
        });
    }

    #[test]
    fn a_cluster_shows_its_workers_and_its_master_beside_the_trees_peaks() {
        let g = group(cluster);
        let mut md = String::new();
        markdown(&mut md, &[&g]);
        assert!(
            md.contains("| Workers | PSS/worker (MiB) | USS/worker (MiB) |"),
            "{md}"
        );
        assert!(
            md.contains("| 2 | 19.0 | 15.0 | 28.0 | 13.0 / 9.0 |"),
            "{md}"
        );
        let html = html("Memory per worker, hello, direct", &[&g]);
        assert!(
            html.contains("<td>19.0</td><td>15.0</td><td>28.0</td><td>13.0 / 9.0</td>"),
            "{html}"
        );
    }

    #[test]
    fn a_lone_process_is_its_own_worker_and_has_no_master() {
        let g = group(|_| {});
        let mut md = String::new();
        markdown(&mut md, &[&g]);
        assert!(md.contains("| 1 (single process) |"), "{md}");
        assert!(md.contains(" | - | "), "no master: {md}");
    }

    #[test]
    fn with_telemetry_each_workers_share_and_the_deviation_are_shown() {
        use crate::report::starved::Shares;
        let mut g = group(cluster);
        let plain = group(cluster);
        let mut md = String::new();
        markdown(&mut md, &[&plain]);
        assert!(!md.contains("Deviation"), "no telemetry, no column: {md}");
        g.shares = Some(Shares {
            shares: vec![0.6, 0.4],
            deviation: 0.2,
        });
        let mut md = String::new();
        markdown(&mut md, &[&g, &plain]);
        assert!(md.contains("| Requests per worker | Deviation |"), "{md}");
        assert!(md.contains("| 60.0 / 40.0% | 20.0% |"), "{md}");
        assert!(md.contains("| - | - |"), "the group without: {md}");
        assert!(md.contains("puma's \"% deviation\""), "{md}");
    }

    #[test]
    fn records_without_memory_per_worker_get_no_table() {
        let old = group(|v| {
            let s = v["trial"]["server_metrics"]["samples"]
                .as_object_mut()
                .unwrap();
            s.remove("per_worker");
        });
        assert!(old.good().unwrap().per_worker.is_none());
        let mut md = String::new();
        markdown(&mut md, &[&old]);
        assert_eq!(md, "");
        assert_eq!(html("t", &[&old]), "");
    }
}
