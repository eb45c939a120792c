//! The mirror section of the HTML report, and a self-contained page with
//! it: per shadow the counts, the paired-difference distribution (shadow −
//! primary latency per request) with its median and 95% interval, and the
//! mismatches by path. Reads only a mirror-v1 document; it lives with the
//! reports (not in `mirror`) so the proxy never imports the report layer.

use super::svg::{esc, Axis, Plot, PALETTE};
use super::table::{Align, Cell, Column, Kind, Row, Table};
use crate::load::report::LatencySummary;
use crate::mirror::doc::MirrorDoc;
use crate::units::fmt_us_short;
use std::fmt::Write;

/// A latency figure, or "-" when there is none (nothing answered): never
/// "0 µs".
fn figure(l: &LatencySummary, at: fn(&LatencySummary) -> u64) -> String {
    if l.has_figures() {
        fmt_us_short(at(l) as f64)
    } else {
        "-".into()
    }
}

/// The `<section>` for one mirror-v1 document.
pub fn section(doc: &MirrorDoc) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<section class=\"mirror\"><h2>Mirror</h2><p>{} requests in {:.0} s, {} mirrored ({}). Primary {}: p50 {}, p99 {}, {} errors.</p>",
        doc.requests,
        doc.elapsed_s,
        doc.mirrored,
        esc(&doc.config.mirror_methods.join(", ")),
        esc(&doc.primary.url),
        figure(&doc.primary.latency_us, |l| l.p50),
        figure(&doc.primary.latency_us, |l| l.p99),
        doc.primary.errors
    );
    s.push_str(&shadows(doc).html());

    let pts: Vec<i64> = doc
        .shadows
        .iter()
        .flat_map(|sh| sh.paired.distribution.iter().map(|p| p.diff_us))
        .collect();
    if let (Some(lo), Some(hi)) = (pts.iter().min(), pts.iter().max()) {
        let (lo, hi) = ((*lo).min(0) as f64, (*hi).max(0) as f64);
        let x = Axis::linear(0.0, 100.0, "percentile of requests", &|v| format!("{v:.0}"));
        let pad = ((hi - lo) * 0.05).max(1.0);
        let y = Axis::linear(lo - pad, hi + pad, "shadow − primary latency", &|v| {
            if v < 0.0 {
                format!("−{}", fmt_us_short(-v))
            } else {
                fmt_us_short(v)
            }
        });
        let mut plot = Plot::new(720.0, 320.0, x, y);
        plot.line(
            &[(0.0, 0.0), (100.0, 0.0)],
            "#999",
            1.0,
            true,
            "no difference",
        );
        for (i, sh) in doc.shadows.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let line: Vec<(f64, f64)> = sh
                .paired
                .distribution
                .iter()
                .map(|p| (p.percentile, p.diff_us as f64))
                .collect();
            plot.line(&line, color, 2.0, false, &sh.name);
            for p in &sh.paired.distribution {
                plot.point(
                    p.percentile,
                    p.diff_us as f64,
                    3.0,
                    color,
                    &format!("{} p{}: {:+} µs", sh.name, p.percentile, p.diff_us),
                );
            }
            plot.legend(&sh.name, color, false);
        }
        s.push_str("<h3>Paired difference, shadow − primary, per request both answered</h3>");
        s.push_str(&plot.finish("Paired latency difference by percentile", true));
    }

    let any_mismatch = doc
        .shadows
        .iter()
        .any(|sh| !sh.mismatches_by_path.is_empty());
    if any_mismatch {
        s.push_str("<h3>Mismatches by path</h3>");
        s.push_str(&mismatches(doc).html());
    } else {
        s.push_str("<p>No status or body mismatches.</p>");
    }
    s.push_str("</section>");
    s
}

/// Per shadow its counts, latency and paired difference (shown in HTML).
fn shadows(doc: &MirrorDoc) -> Table {
    let count = |v: u64| Cell::num(Some(v as f64));
    let rows = (doc.shadows.iter())
        .map(|sh| {
            let paired = match (
                sh.paired.median_us,
                sh.paired.ci95_low_us,
                sh.paired.ci95_high_us,
            ) {
                (Some(m), Some(lo), Some(hi)) => format!("{m:+.0} µs ({lo:+} … {hi:+})"),
                (Some(m), _, _) => format!("{m:+.0} µs (too few pairs for an interval)"),
                _ => "no pairs".into(),
            };
            Row::new(vec![
                Cell::text(&sh.name),
                count(sh.sent),
                count(sh.answered),
                count(sh.dropped),
                count(sh.backed_off),
                count(sh.timeouts),
                count(sh.errors),
                count(sh.status_mismatches),
                count(sh.body_mismatches),
                Cell::text(figure(&sh.latency_us, |l| l.p50)),
                Cell::text(figure(&sh.latency_us, |l| l.p99)),
                Cell::text(paired),
            ])
        })
        .collect();
    let n = |head: &str| Column::new(Kind::Count, Align::Right).html(head);
    let t = |head: &str| Column::new(Kind::Text, Align::Right).html(head);
    Table {
        columns: vec![
            Column::new(Kind::Text, Align::Left).html("shadow"),
            n("sent"),
            n("answered"),
            n("dropped"),
            n("of which backed off"),
            n("timeouts"),
            n("errors"),
            n("status mismatches"),
            n("body mismatches"),
            t("p50"),
            t("p99"),
            t("paired median (95% CI)"),
        ],
        rows,
        ..Table::default()
    }
}

/// Per shadow and path the status and body mismatches (shown in HTML).
fn mismatches(doc: &MirrorDoc) -> Table {
    let rows = (doc.shadows.iter())
        .flat_map(|sh| {
            sh.mismatches_by_path.iter().map(|m| {
                Row::new(vec![
                    Cell::text(&sh.name),
                    Cell::text(&m.path),
                    Cell::num(Some(m.status as f64)),
                    Cell::num(Some(m.body as f64)),
                ])
            })
        })
        .collect();
    let left = |head: &str| Column::new(Kind::Text, Align::Left).html(head);
    let n = |head: &str| Column::new(Kind::Count, Align::Right).html(head);
    Table {
        columns: vec![left("shadow"), left("path"), n("status"), n("body")],
        rows,
        ..Table::default()
    }
}

/// A whole page: no scripts, no external resources.
pub fn page(doc: &MirrorDoc) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>rackbench mirror</title><style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:60em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:.25em .5em;text-align:right}}td.l,th.l{{text-align:left}}</style></head><body><h1>rackbench mirror</h1>{}</body></html>\n",
        section(doc)
    )
}
