//! The summary table, one row per trial group, in every format from one
//! list of columns: the terminal's table (server, app, front, load,
//! throughput, p50/p99, memory, errors, requests per worker, notes), Markdown's and HTML's
//! table per app and front (latency avg/stdev/max, CPU per request too)
//! and report.csv's fixed columns (medians, ranges, run counts,
//! telemetry). A column is added here once, with a head in each format
//! it shows in; the table model (table/) writes it.
//!
//! The figures are the groups' summaries (`store::summary`, from
//! `store::figures`); nothing is computed here but which mark a figure
//! carries.

use super::table::{Align, Aside, Cell, Column, Kind, Row, Table, Value, Width};
use super::{load_label, Group, Report, Status, TrialRow};
use crate::load::caveats::Caveats;
use crate::stats::spread::Spread;
use crate::store::figures::TrialFigures;
use crate::store::summary::{GroupSummary, TelemetrySummary};
use crate::units::fmt_ms;

/// What the HTML page says of a disturbed group's quiet mark.
const DISTURBED: &str = "steal or other processes' CPU on the server's and the generator's CPUs passed its threshold (docs/STATISTICS.md)";

/// What "requests per worker" is (the HTML head's title).
const PER_WORKER: &str = "requests counted in the window ÷ the server's workers (its one process without workers), the median over the runs that recorded their workers";

type CellOf<'a> = Box<dyn Fn(&Group) -> Cell + 'a>;

/// The summary table of `groups`; `variants` colour the servers (HTML).
/// A runtime column when the study ran on more than one.
pub(super) fn table(report: &Report, groups: &[&Group], variants: &[String]) -> Table {
    let columns = columns(report, variants);
    let rows = (groups.iter())
        .map(|g| Row {
            bad: !g.is_result(),
            no_data: g.good().is_none(),
            ..Row::new(columns.iter().map(|(_, cell)| cell(g)).collect())
        })
        .collect();
    Table {
        columns: columns.into_iter().map(|(c, _)| c).collect(),
        rows,
        class: None,
        caption: None,
        wide: false,
    }
}

fn col(kind: Kind, align: Align) -> Column {
    Column::new(kind, align)
}

/// A figure of the group's good runs; no figure without one.
fn good(g: &Group, figure: impl Fn(&GroupSummary) -> Option<f64>) -> Cell {
    Cell::num(g.good().and_then(figure))
}

/// A figure of the group's telemetry; none without it.
fn told(g: &Group, figure: impl Fn(&TelemetrySummary) -> Option<f64>) -> Cell {
    Cell::num(g.good().and_then(|m| m.telemetry.as_ref()).and_then(figure))
}

/// A latency with its marks: "≥ " when it is a lower bound, "†" when
/// percentile `q` rests on few responses (no "†" for None: the mean, the
/// max).
fn latency(g: &Group, q: Option<f64>, v: impl Fn(&GroupSummary) -> Option<Spread>) -> Cell {
    let c: Caveats = g.caveats();
    let cell = Cell::num(g.good().and_then(v).map(|s| s.median));
    cell.marked(
        if c.lower_bound { "≥ " } else { "" },
        if q.is_some_and(|q| c.thin(q)) {
            "†"
        } else {
            ""
        },
    )
}

/// The group's plan, its run counts and figures, then its notes.
fn columns<'a>(report: &'a Report, variants: &'a [String]) -> Vec<(Column, CellOf<'a>)> {
    let text = |f: fn(&Group) -> String| -> CellOf<'a> { Box::new(move |g| Cell::text(f(g))) };
    let count = |n: usize| Cell::num(Some(n as f64));
    let mut v: Vec<(Column, CellOf<'a>)> = vec![
        (
            col(Kind::Text, Align::Left).csv("group"),
            text(|g| g.group.clone()),
        ),
        (
            col(Kind::Text, Align::Left).csv("server"),
            text(|g| g.planned.server.clone()),
        ),
        (
            col(Kind::Text, Align::Left)
                .term("server", Width::Min(24))
                .page("Server")
                .csv("variant"),
            Box::new(move |g| {
                let colour = super::svg::color(variants, &g.planned.variant);
                Cell::text(g.planned.variant.clone()).swatch(colour.to_string())
            }),
        ),
    ];
    if report.runtime_varies() {
        v.push((
            col(Kind::Text, Align::Left)
                .term("runtime", Width::Fit)
                .page("Runtime"),
            text(|g| g.runtime_label()),
        ));
    }
    let plan: Vec<(Column, CellOf<'a>)> = vec![
        (
            col(Kind::Text, Align::Left)
                .term("app", Width::Min(8))
                .csv("app"),
            text(|g| g.planned.app.clone()),
        ),
        (
            col(Kind::Text, Align::Left).csv("behind"),
            text(|g| g.planned.behind.clone()),
        ),
        (
            col(Kind::Text, Align::Left).term("front", Width::Min(8)),
            text(|g| g.planned.front()),
        ),
        (
            col(Kind::Count, Align::Right).csv("nginx_workers"),
            Box::new(move |g| count(g.planned.nginx_workers as usize)),
        ),
        (
            col(Kind::Count, Align::Right).csv("connections"),
            Box::new(move |g| count(g.planned.shape.connections)),
        ),
        (
            col(Kind::Text, Align::Right).csv("rate"),
            text(|g| {
                g.planned
                    .shape
                    .rate
                    .map_or(String::new(), |r| r.to_string())
            }),
        ),
        (
            col(Kind::Text, Align::Right)
                .term("load", Width::Min(10))
                .page("Load"),
            text(|g| load_label(&g.planned)),
        ),
        (
            col(Kind::Text, Align::Right)
                .term("runs", Width::Min(5))
                .page("Runs"),
            text(|g| format!("{}/{}", g.ok, g.planned_runs)),
        ),
        (
            col(Kind::Count, Align::Right).csv("planned_runs"),
            Box::new(move |g| count(g.planned_runs)),
        ),
        (
            col(Kind::Count, Align::Right).csv("ok"),
            Box::new(move |g| count(g.ok)),
        ),
        (
            col(Kind::Count, Align::Right).csv("failed"),
            Box::new(move |g| count(g.failed)),
        ),
        (
            col(Kind::Count, Align::Right).csv("interrupted"),
            Box::new(move |g| count(g.interrupted)),
        ),
        (
            col(Kind::Count, Align::Right).csv("missing"),
            Box::new(move |g| count(g.missing)),
        ),
        (
            col(Kind::Rate, Align::Right)
                .term("req/s (min-max)", Width::Min(20))
                .md("Throughput (req/s)")
                .html("Throughput (req/s), min–max")
                .csv("throughput_rps_median"),
            Box::new(|g| {
                let thin = g.caveats().thin_throughput();
                Cell::spread(g.good().map(|m| m.throughput_rps))
                    .marked("", if thin { "†" } else { "" })
            }),
        ),
    ];
    v.extend(plan);
    v.extend(figures());
    v.extend(counts_and_notes(&report.trials));
    if report.groups.iter().any(|g| g.starved.is_some()) {
        // Before the notes, which have no CSV head.
        let notes = v.pop().expect("the notes column");
        v.extend(fairness());
        v.push(notes);
    }
    v
}

/// Who got served (issue 39; report/starved.rs), in report.csv only when
/// a group's records have `load.fairness`, so older reports read as
/// they did: the starved count by starved.rs's rule, what it is of, and
/// the median Jain's index.
fn fairness<'a>() -> Vec<(Column, CellOf<'a>)> {
    vec![
        (
            col(Kind::Count, Align::Right).csv("connections_starved"),
            Box::new(|g| Cell::num(g.starved.as_ref().map(|s| s.count as f64))),
        ),
        (
            col(Kind::Count, Align::Right).csv("connections_starved_of"),
            Box::new(|g| Cell::num(g.starved.as_ref().map(|s| s.of as f64))),
        ),
        (
            col(Kind::Fixed(3), Align::Right).csv("jain_index"),
            Box::new(|g| Cell::num(g.starved.as_ref().and_then(|s| s.jain_index))),
        ),
    ]
}

/// The figures after the throughput's median, to the PSS peak.
fn figures<'a>() -> Vec<(Column, CellOf<'a>)> {
    let lat = |k| col(Kind::Latency, Align::Right).term(k, Width::Min(9));
    let bytes = |k| col(Kind::Bytes, Align::Right).term(k, Width::Min(10));
    vec![
        (
            col(Kind::Rate, Align::Right).csv("throughput_rps_min"),
            Box::new(|g| good(g, |m| Some(m.throughput_rps.min))),
        ),
        (
            col(Kind::Rate, Align::Right).csv("throughput_rps_max"),
            Box::new(|g| good(g, |m| Some(m.throughput_rps.max))),
        ),
        (
            col(Kind::Latency, Align::Right)
                .html("Latency avg")
                .csv("latency_mean_us"),
            Box::new(|g| latency(g, None, |m| m.latency_mean_us)),
        ),
        (
            col(Kind::Latency, Align::Right).md("Latency avg / stdev / max (ms)"),
            Box::new(avg_stdev_max),
        ),
        (
            col(Kind::Latency, Align::Right)
                .html("stdev")
                .csv("latency_stdev_us"),
            Box::new(|g| good(g, |m| m.latency_stdev_us.map(|v| v.median))),
        ),
        (
            lat("p50").csv("latency_p50_us"),
            Box::new(|g| latency(g, Some(0.5), |m| m.latency_p50_us)),
        ),
        (
            col(Kind::Latency, Align::Right).html("max"),
            Box::new(|g| latency(g, None, |m| m.latency_max_us)),
        ),
        (
            lat("p99").md("p99 (ms)").html("p99").csv("latency_p99_us"),
            Box::new(|g| latency(g, Some(0.99), |m| m.latency_p99_us)),
        ),
        (
            col(Kind::Latency, Align::Right).csv("latency_p99_us_min"),
            Box::new(|g| good(g, |m| m.latency_p99_us.map(|v| v.min))),
        ),
        (
            col(Kind::Latency, Align::Right).csv("latency_p99_us_max"),
            Box::new(|g| good(g, |m| m.latency_p99_us.map(|v| v.max))),
        ),
        (
            col(Kind::Latency, Align::Right).csv("latency_max_us"),
            Box::new(|g| good(g, |m| m.latency_max_us.map(|v| v.median))),
        ),
        (
            bytes("RSS peak")
                .md("RSS peak (MiB)")
                .html("RSS peak")
                .csv("rss_peak_bytes"),
            Box::new(|g| good(g, |m| Some(m.rss_peak_bytes.median))),
        ),
        (
            col(Kind::Bytes, Align::Right).csv("rss_peak_bytes_min"),
            Box::new(|g| good(g, |m| Some(m.rss_peak_bytes.min))),
        ),
        (
            col(Kind::Bytes, Align::Right).csv("rss_peak_bytes_max"),
            Box::new(|g| good(g, |m| Some(m.rss_peak_bytes.max))),
        ),
        (
            bytes("PSS peak")
                .md("PSS peak (MiB)")
                .html("PSS peak")
                .csv("pss_peak_bytes"),
            Box::new(|g| good(g, |m| m.pss_peak_bytes.map(|p| p.median))),
        ),
    ]
}

/// CPU per request, errors, the notes of report.csv, telemetry, the
/// machine, requests per worker (of `trials`, the group's good runs),
/// then the notes.
fn counts_and_notes<'a>(trials: &'a [TrialRow]) -> Vec<(Column, CellOf<'a>)> {
    vec![
        (
            col(Kind::Fixed(3), Align::Right).page("CPU (ms/req)"),
            Box::new(|g| good(g, |m| m.cpu_ms_per_request.map(|c| c.median))),
        ),
        (
            col(Kind::Fixed(4), Align::Right).csv("cpu_ms_per_request"),
            Box::new(|g| good(g, |m| m.cpu_ms_per_request.map(|c| c.median))),
        ),
        (
            col(Kind::Count, Align::Right)
                .term("errors", Width::Min(6))
                .page("Errors")
                .csv("errors"),
            Box::new(|g| {
                good(g, |m| Some(m.errors as f64)).bad(g.good().is_some_and(|m| m.errors > 0))
            }),
        ),
        (
            col(Kind::Text, Align::Left).csv("latency_lower_bound"),
            Box::new(|g| {
                Cell::text(
                    g.good()
                        .map_or(String::new(), |m| m.caveats.lower_bound.to_string()),
                )
            }),
        ),
        (
            col(Kind::Text, Align::Left).csv("notes"),
            Box::new(|g| Cell::text(g.all_notes())),
        ),
        // Telemetry (issue 15), after the older columns so readers by
        // position keep working; empty for groups that ran without it.
        (
            col(Kind::Latency, Align::Right).csv("queue_p50_us"),
            Box::new(|g| told(g, |t| t.queue_p50_us.map(|q| q.median))),
        ),
        (
            col(Kind::Latency, Align::Right).csv("app_p50_us"),
            Box::new(|g| told(g, |t| Some(t.app_p50_us.median))),
        ),
        (
            col(Kind::Fixed(1), Align::Right).csv("gc_runs_per_1k_requests"),
            Box::new(|g| told(g, |t| Some(t.gc_runs_per_1k_requests.median))),
        ),
        (
            col(Kind::Fixed(1), Align::Right).csv("gc_time_pct"),
            Box::new(|g| told(g, |t| t.gc_time_share.map(|s| s.median * 100.0))),
        ),
        // The machine (sampler::disturbance): good runs it disturbed.
        (
            col(Kind::Count, Align::Right).csv("disturbed_runs"),
            Box::new(|g| good(g, |m| Some(m.disturbance.disturbed as f64))),
        ),
        (
            {
                let mut c = col(Kind::Count, Align::Right)
                    .term("req/worker", Width::Min(10))
                    .page("Requests per worker")
                    .csv("requests_per_worker");
                c.note = Some(PER_WORKER.into());
                c
            },
            Box::new(move |g| {
                let runs = (trials.iter())
                    .filter(|t| t.planned.group == g.group && t.status == Status::Ok)
                    .filter_map(|t| TrialFigures::of(t.record.as_ref()?).requests_per_worker());
                Cell::num(Spread::of(&runs.collect::<Vec<f64>>()).map(|s| s.median))
            }),
        ),
        (
            col(Kind::Text, Align::Left)
                .term("", Width::Fit)
                .page("Notes")
                .class("notes")
                .wrapped(),
            Box::new(|g| {
                let aside = g.disturbed_note().map(|text| Aside {
                    text,
                    title: DISTURBED,
                });
                Cell::text(g.notes()).bad(!g.is_result()).aside(aside)
            }),
        ),
    ]
}

/// Markdown's "avg / stdev / max" cell, in ms; the average and the max
/// "≥ " when they are lower bounds.
fn avg_stdev_max(g: &Group) -> Cell {
    let Some(m) = g.good() else {
        return Cell::new(Value::None);
    };
    let bound = if g.caveats().lower_bound { "≥ " } else { "" };
    let ms = |v: Option<Spread>, mark: &str| {
        v.map_or("-".into(), |v| format!("{mark}{}", fmt_ms(v.median)))
    };
    Cell::text(format!(
        "{} / {} / {}",
        ms(m.latency_mean_us, bound),
        ms(m.latency_stdev_us, ""),
        ms(m.latency_max_us, bound)
    ))
}
