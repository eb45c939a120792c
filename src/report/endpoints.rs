//! Figures per endpoint of a mix in every report (issue 30): per group a
//! table with a row per endpoint (requests and their share, throughput,
//! p50/p90/p99 as the median across repeats with the range, errors) on
//! the terminal, in Markdown and in HTML; columns per endpoint in
//! report.csv; and in HTML each endpoint's p50 and p99 as bars, a row per
//! group and endpoint.
//!
//! A study without a mix gets nothing from here: no line, no column, its
//! reports byte for byte as before. It never reads a record's JSON: the
//! figures come from `store::endpoints`, through `Group::endpoints`.

use super::svg::{color, esc, hbar_rows, Bar, BarRow};
use super::table::{md_cell, Align, Cell, Column, Kind, Row, Table};
use super::{load_label, Group, Report};
use crate::stats::spread::Spread;
use crate::store::endpoints::GroupEndpoint;
use crate::units::fmt_us;
use std::fmt::Write;

/// What the tables' columns count, said once above them.
const NOTE: &str = "Each endpoint of the mix over the group's runs: the requests issued to it and their share of the group's requests, its throughput (OK responses per second), the latency of its OK responses (the median across repeats, the range in brackets), and its failed requests by kind. With telemetry, its time inside the app (App p50) and, for an app with ActiveRecord, its time in SQL and waiting for a database connection from the pool.";

const HEADS: [&str; 8] = [
    "Endpoint",
    "Requests",
    "Share",
    "Throughput (rps)",
    "p50",
    "p90",
    "p99",
    "Errors",
];

/// The columns after HEADS when telemetry timed the group inside the
/// app, and with ActiveRecord its SQL and pool wait too.
const INSIDE_HEADS: [&str; 1] = ["App p50"];
const DATABASE_HEADS: [&str; 2] = ["SQL p50", "Pool wait p50 / p99"];

/// Which of the extra columns a group's table has.
#[derive(Clone, Copy)]
struct Extra {
    inside: bool,
    database: bool,
}

impl Extra {
    fn of(g: &Group) -> Extra {
        Extra {
            inside: g.endpoints.iter().any(|e| e.has_inside()),
            database: g.endpoints.iter().any(|e| e.has_database()),
        }
    }

    fn heads(self) -> Vec<&'static str> {
        let mut h = HEADS.to_vec();
        if self.inside {
            h.extend(INSIDE_HEADS);
        }
        if self.database {
            h.extend(DATABASE_HEADS);
        }
        h
    }
}

/// "1.20ms (1.10ms–1.31ms)", or the median alone for one run; "-" for none.
fn latency(s: Option<Spread>) -> String {
    match s {
        None => "-".into(),
        Some(s) if s.n > 1 => format!("{} ({}–{})", fmt_us(s.median), fmt_us(s.min), fmt_us(s.max)),
        Some(s) => fmt_us(s.median),
    }
}

/// The median alone, "-" for none (the terminal's short lines).
fn median_us(s: Option<Spread>) -> String {
    s.map_or("-".into(), |s| fmt_us(s.median))
}

/// "1234 (1200–1250)", or the median alone for one run.
fn rps(s: &Spread) -> String {
    if s.n > 1 {
        format!("{:.0} ({:.0}–{:.0})", s.median, s.min, s.max)
    } else {
        format!("{:.0}", s.median)
    }
}

/// The cells of one endpoint's row.
fn cells(e: &GroupEndpoint, extra: Extra) -> Vec<String> {
    let mut out = vec![
        format!("{} ({} {})", e.name, e.method, e.path),
        e.requests.to_string(),
        format!("{:.1}%", e.share * 100.0),
        rps(&e.throughput_rps),
        latency(e.latency_p50_us),
        latency(e.latency_p90_us),
        latency(e.latency_p99_us),
        errors(e),
    ];
    if extra.inside {
        out.push(latency(e.app_p50_us));
    }
    if extra.database {
        out.push(latency(e.db_p50_us));
        out.push(match (e.pool_wait_p50_us, e.pool_wait_p99_us) {
            (Some(a), Some(b)) => format!("{} / {}", fmt_us(a.median), fmt_us(b.median)),
            _ => "-".into(),
        });
    }
    out
}

/// "; app p50 4.1ms, SQL p50 1.2ms, pool wait p50 0µs p99 8.0ms": the
/// terminal's words for what telemetry saw inside; empty without it.
fn inside(e: &GroupEndpoint) -> String {
    let mut s = String::new();
    if let Some(a) = e.app_p50_us {
        s.push_str(&format!("; app p50 {}", fmt_us(a.median)));
    }
    if let Some(d) = e.db_p50_us {
        s.push_str(&format!(", SQL p50 {}", fmt_us(d.median)));
    }
    if let (Some(a), Some(b)) = (e.pool_wait_p50_us, e.pool_wait_p99_us) {
        s.push_str(&format!(
            ", pool wait p50 {} p99 {}",
            fmt_us(a.median),
            fmt_us(b.median)
        ));
    }
    s
}

/// "0", or "3 (status 2, timeout 1)".
fn errors(e: &GroupEndpoint) -> String {
    if e.errors == 0 || e.errors_by_kind.is_empty() {
        return e.errors.to_string();
    }
    let kinds: Vec<String> = e
        .errors_by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    format!("{} ({})", e.errors, kinds.join(", "))
}

/// "puma-t5 · c=10": how a group is named above its table.
fn title(g: &Group) -> String {
    format!("{} · {}", g.planned.variant, load_label(&g.planned))
}

impl Report {
    /// Whether any group ran a mix.
    pub fn has_endpoints(&self) -> bool {
        self.groups.iter().any(|g| !g.endpoints.is_empty())
    }

    /// Every endpoint name of the study, in the order first met.
    pub fn endpoint_names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for e in self.groups.iter().flat_map(|g| &g.endpoints) {
            if !out.contains(&e.name) {
                out.push(e.name.clone());
            }
        }
        out
    }
}

/// Under the terminal table, per group with a mix, one line per
/// endpoint; nothing without one.
pub(super) fn terminal(s: &mut String, report: &Report) {
    if !report.has_endpoints() {
        return;
    }
    let _ = writeln!(
        s,
        "\nEndpoints (median over repeats; share of the group's requests):"
    );
    for g in report.groups.iter().filter(|g| !g.endpoints.is_empty()) {
        let _ = writeln!(
            s,
            "  {}, {}, {}, {}:",
            g.planned.variant,
            g.planned.app,
            g.planned.front(),
            load_label(&g.planned)
        );
        let width = g.endpoints.iter().map(|e| e.name.len()).max().unwrap_or(0);
        for e in &g.endpoints {
            let _ = writeln!(
                s,
                "    {:<width$}  {:>5.1}%  {:>8.0} rps  p50 {}  p90 {}  p99 {}  {} errors{}",
                e.name,
                e.share * 100.0,
                e.throughput_rps.median,
                median_us(e.latency_p50_us),
                median_us(e.latency_p90_us),
                median_us(e.latency_p99_us),
                errors(e),
                inside(e)
            );
        }
    }
}

/// The section's endpoint tables in Markdown, one per group with a mix.
pub(super) fn markdown(s: &mut String, groups: &[&Group]) {
    if groups.iter().all(|g| g.endpoints.is_empty()) {
        return;
    }
    let _ = writeln!(s, "### Endpoints\n\n{NOTE}\n");
    for g in groups.iter().filter(|g| !g.endpoints.is_empty()) {
        let _ = writeln!(s, "**{}**\n", md_cell(&title(g)));
        s.push_str(&table(g).markdown());
        s.push('\n');
    }
}

/// A group's endpoint table: the endpoint and its request (under it in
/// HTML), then its figures; errors red when there are any.
fn table(g: &Group) -> Table {
    let extra = Extra::of(g);
    let columns = (extra.heads().into_iter().enumerate())
        .map(|(i, h)| {
            Column::new(Kind::Text, if i == 0 { Align::Left } else { Align::Right }).page(h)
        })
        .collect();
    let rows = (g.endpoints.iter())
        .map(|e| {
            let mut cells: Vec<Cell> = cells(e, extra).into_iter().map(Cell::text).collect();
            cells[0] = Cell::text(e.name.clone()).sub(format!("{} {}", e.method, e.path));
            cells[7] = Cell::text(errors(e)).bad(e.errors > 0);
            Row::new(cells)
        })
        .collect();
    Table {
        columns,
        rows,
        class: Some("endpoints".into()),
        caption: Some(title(g)),
        wide: false,
    }
}

/// The section's endpoint tables in HTML, then the chart of each
/// endpoint's p50 and p99; nothing without a mix.
pub(super) fn html(s: &mut String, groups: &[&Group], variants: &[String]) {
    if groups.iter().all(|g| g.endpoints.is_empty()) {
        return;
    }
    let _ = write!(s, "<h3>Endpoints</h3><p class=\"note\">{}</p>", esc(NOTE));
    for g in groups.iter().filter(|g| !g.endpoints.is_empty()) {
        s.push_str(&table(g).html());
    }
    s.push_str("<p class=\"note\">Per group and endpoint: its p50 (solid) and p99 (pale) latency, the median across repeats, whiskers from the lowest to the highest repeat.</p>");
    s.push_str(&chart(groups, variants));
}

/// Each endpoint's p50 (solid) and p99 (pale) latency, medians across
/// repeats with their range as a whisker, a row per group and endpoint.
fn chart(groups: &[&Group], variants: &[String]) -> String {
    let spread = |s: Option<Spread>| s.map(|s| (s.median, s.min, s.max));
    let rows: Vec<BarRow> = groups
        .iter()
        .flat_map(|g| g.endpoints.iter().map(move |e| (*g, e)))
        .map(|(g, e)| BarRow {
            label: format!("{} · {}", title(g), e.name),
            color: color(variants, &g.planned.variant).to_string(),
            bars: vec![
                Bar {
                    name: "p50",
                    opacity: 1.0,
                    value: spread(e.latency_p50_us),
                },
                Bar {
                    name: "p99",
                    opacity: 0.45,
                    value: spread(e.latency_p99_us),
                },
            ],
            empty: "no OK response".into(),
            note: (String::new(), ""),
        })
        .collect();
    hbar_rows(
        &rows,
        300.0,
        "Latency per endpoint: p50 and p99",
        "latency",
        &fmt_us,
    )
}

/// The columns report.csv gains per endpoint of the study: requests,
/// share, throughput and p50/p90/p99 (medians, µs) and errors; with
/// telemetry its app p50, and with ActiveRecord its SQL p50 and pool
/// wait p50/p99 (µs).
pub(super) fn csv_heads(report: &Report) -> Vec<String> {
    let extra = csv_extra(report);
    report
        .endpoint_names()
        .iter()
        .flat_map(|n| {
            let mut m = vec![
                "requests",
                "share",
                "throughput_rps",
                "p50_us",
                "p90_us",
                "p99_us",
                "errors",
            ];
            if extra.inside {
                m.push("app_p50_us");
            }
            if extra.database {
                m.extend(["db_p50_us", "pool_wait_p50_us", "pool_wait_p99_us"]);
            }
            m.into_iter()
                .map(|m| format!("endpoint_{n}_{m}"))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The extra CSV columns: the study's, so every row has the same.
fn csv_extra(report: &Report) -> Extra {
    let all = report.groups.iter().map(Extra::of);
    all.fold(
        Extra {
            inside: false,
            database: false,
        },
        |a, b| Extra {
            inside: a.inside || b.inside,
            database: a.database || b.database,
        },
    )
}

/// A group's cells under [`csv_heads`]; empty where it lacks the endpoint.
pub(super) fn csv_cells(report: &Report, g: &Group) -> Vec<String> {
    let extra = csv_extra(report);
    let med = |v: Option<Spread>| v.map_or(String::new(), |v| format!("{:.0}", v.median));
    let width = 7 + usize::from(extra.inside) + 3 * usize::from(extra.database);
    report
        .endpoint_names()
        .iter()
        .flat_map(|n| match g.endpoints.iter().find(|e| &e.name == n) {
            Some(e) => {
                let mut c = vec![
                    e.requests.to_string(),
                    format!("{:.4}", e.share),
                    format!("{:.1}", e.throughput_rps.median),
                    med(e.latency_p50_us),
                    med(e.latency_p90_us),
                    med(e.latency_p99_us),
                    e.errors.to_string(),
                ];
                if extra.inside {
                    c.push(med(e.app_p50_us));
                }
                if extra.database {
                    c.extend([
                        med(e.db_p50_us),
                        med(e.pool_wait_p50_us),
                        med(e.pool_wait_p99_us),
                    ]);
                }
                c
            }
            None => vec![String::new(); width],
        })
        .collect()
}
