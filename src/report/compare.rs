//! How a comparison (compare-v1) is shown: a terminal table, Markdown, and
//! an HTML section with a forest plot (one row per group and metric: the
//! change as a dot, its 95% interval as a line, zero as a dashed rule).
//!
//! It renders a `Comparison` it is given and reads nothing but `compare.json`
//! beside a report; the statistics live in `stats::compare`.

use super::svg::esc;
use super::table::{Align, Table};
use crate::stats::compare::{metric_words, pct, split_endpoint_metric, Comparison, Row};
use std::fmt::Write;

/// A figure in the metric's own unit, short (a per-endpoint row's in
/// its metric's).
pub(super) fn figure(metric: &str, v: f64) -> String {
    let metric = split_endpoint_metric(metric).map_or(metric, |(_, m)| m);
    match metric {
        "throughput" => format!("{v:.0} rps"),
        "p50" | "p90" | "p99" => {
            if v >= 10_000.0 {
                format!("{:.1} ms", v / 1000.0)
            } else {
                format!("{v:.0} µs")
            }
        }
        "rss_peak" | "pss_peak" => format!("{:.1} MiB", v / 1048576.0),
        "cpu_per_request" => format!("{v:.3} ms"),
        "error_rate" => format!("{:.2}%", v * 100.0),
        "gc_runs_per_1k_requests" => format!("{v:.1}"),
        "gc_time_share" => format!("{:.1}%", v * 100.0),
        "queue_us_mean" | "app_us_mean" | "db_us_mean" | "pool_wait_us_mean" => {
            format!("{v:.0} µs")
        }
        _ => format!("{v}"),
    }
}

fn ci(r: &Row) -> String {
    match (r.ci_low_pct, r.ci_high_pct) {
        (Some(lo), Some(hi)) => format!("{} … {}", pct(lo), pct(hi)),
        _ => "–".into(),
    }
}

fn mark(r: &Row) -> &'static str {
    match r.direction.as_str() {
        "better" => "better",
        "worse" => "WORSE",
        _ if !r.judged => "?",
        _ => "~",
    }
}

/// The metric's name, marked primary or secondary when the comparison
/// names a primary metric.
fn metric_cell(c: &Comparison, r: &Row) -> String {
    match (&c.primary_metric, r.primary) {
        (None, _) => r.metric.clone(),
        (Some(_), true) => format!("{} (primary)", r.metric),
        (Some(_), false) => format!("{} (secondary)", r.metric),
    }
}

/// What the `~` mark means, families named.
fn legend(c: &Comparison) -> String {
    let family = match &c.primary_metric {
        None => "Holm-adjusted over all rows".to_string(),
        Some(m) => format!(
            "{m} is the primary metric, Holm-adjusted over its own rows only; the secondary rows Holm-adjusted among themselves"
        ),
    };
    let endpoints = if c
        .rows
        .iter()
        .any(|r| split_endpoint_metric(&r.metric).is_some())
    {
        ", the per-endpoint rows (endpoint:NAME:METRIC) in the same family as the other metrics"
    } else {
        ""
    };
    format!("no significant difference (Mann-Whitney U, {family}{endpoints}, 5% level; the 95% bootstrap interval must leave out 0 too)")
}

fn cells(c: &Comparison, r: &Row) -> [String; 8] {
    [
        r.group.clone(),
        metric_cell(c, r),
        figure(&r.metric, r.a),
        figure(&r.metric, r.b),
        r.change_pct.map(pct).unwrap_or_else(|| "–".into()),
        ci(r),
        format!("{}+{}", r.n_a, r.n_b),
        mark(r).to_string(),
    ]
}

/// The table's heads: the figures, change, interval and counts right,
/// the names and the mark left.
const HEAD: [(&str, Align); 8] = [
    ("group", Align::Left),
    ("metric", Align::Left),
    ("A", Align::Right),
    ("B", Align::Right),
    ("change", Align::Right),
    ("95% CI", Align::Right),
    ("n", Align::Right),
    ("", Align::Left),
];

/// A row per group and metric.
fn table(c: &Comparison) -> Table {
    Table::of_text(&HEAD, c.rows.iter().map(|r| cells(c, r).to_vec()).collect())
}

/// The terminal table, then one verdict line per group and the overall one.
pub fn terminal(c: &Comparison) -> String {
    let mut s = format!("A: {}\nB: {}\n\n", c.side_shown(false), c.side_shown(true));
    s.push_str(&table(c).terminal_lines());
    let _ = write!(s, "\n~ {}; ? too few repeats to tell\n\n", legend(c));
    for v in &c.verdicts {
        let _ = writeln!(s, "{v}");
    }
    for g in &c.unpaired {
        let _ = writeln!(s, "{g}: on one side only, not compared");
    }
    let _ = writeln!(s, "\nOverall: {}", c.verdict);
    s
}

/// The same as a Markdown document.
pub fn markdown(c: &Comparison) -> String {
    let mut s = format!(
        "# rackbench compare\n\nA: `{}`  \nB: `{}`\n\n{}",
        c.side_shown(false),
        c.side_shown(true),
        table(c).markdown()
    );
    let _ = write!(s, "\n`~` {}; `?` too few repeats to tell.\n\n", legend(c));
    for v in &c.verdicts {
        let _ = writeln!(s, "- {v}");
    }
    let _ = writeln!(s, "\n**Overall:** {}", c.verdict);
    s
}

/// The forest plot: one row per group and metric.
pub fn forest_svg(rows: &[Row]) -> String {
    let label_w = 330.0;
    let plot_w = 420.0;
    let row_h = 20.0;
    let top = 24.0;
    let h = top + row_h * rows.len() as f64 + 30.0;
    let extent = rows
        .iter()
        .flat_map(|r| [r.change_pct, r.ci_low_pct, r.ci_high_pct])
        .flatten()
        .map(f64::abs)
        .fold(5.0f64, f64::max)
        .min(200.0)
        * 1.1;
    let x = |v: f64| label_w + (v.clamp(-extent, extent) + extent) / (2.0 * extent) * plot_w;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{h}\" role=\"img\" aria-label=\"Change of B against A per metric, with 95% intervals\" font-family=\"sans-serif\" font-size=\"12\">",
        label_w + plot_w + 130.0
    );
    let _ = write!(
        s,
        "<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#444\" stroke-dasharray=\"4 3\"/>",
        x(0.0),
        top - 8.0,
        h - 26.0
    );
    // Ticks at a round step, two or three each side of zero.
    let raw = extent / 1.1 / 2.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag);
    let ticks: Vec<f64> = (1..=3)
        .map(|i| i as f64 * step)
        .filter(|&v| v <= extent)
        .flat_map(|v| [-v, v])
        .collect();
    for v in ticks {
        let _ = write!(
            s,
            "<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#ddd\"/><text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>",
            x(v),
            top - 8.0,
            h - 26.0,
            h - 10.0,
            esc(&format!("{v:+}%"))
        );
    }
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">0</text><text x=\"{}\" y=\"12\" text-anchor=\"middle\">change of B against A (95% CI)</text>",
        x(0.0),
        h - 10.0,
        label_w + plot_w / 2.0
    );
    for (i, r) in rows.iter().enumerate() {
        let y = top + row_h * i as f64 + row_h / 2.0;
        let colour = match r.direction.as_str() {
            "better" => "#2ca02c",
            "worse" => "#d62728",
            _ => "#777",
        };
        let words = metric_words(&r.metric);
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{} · {}{}</text>",
            label_w - 8.0,
            y + 4.0,
            esc(&r.group),
            esc(&words),
            if r.primary { " (primary)" } else { "" }
        );
        if let (Some(lo), Some(hi)) = (r.ci_low_pct, r.ci_high_pct) {
            let _ = write!(
                s,
                "<line x1=\"{}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"{colour}\" stroke-width=\"2\"/>",
                x(lo),
                x(hi)
            );
        }
        if let Some(c) = r.change_pct {
            let fill = if r.ci_low_pct.is_some() {
                colour
            } else {
                "white"
            };
            let _ = write!(
                s,
                "<circle cx=\"{}\" cy=\"{y}\" r=\"4\" fill=\"{fill}\" stroke=\"{colour}\"><title>{}</title></circle><text x=\"{}\" y=\"{}\">{}</text>",
                x(c),
                esc(&r.verdict),
                label_w + plot_w + 8.0,
                y + 4.0,
                esc(&format!("{} {}", pct(c), mark(r)))
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// The comparison section of an HTML report.
pub fn section(c: &Comparison) -> String {
    let mut s = String::from("<section class=\"chart\" id=\"comparison\"><h2>Comparison</h2>");
    let _ = write!(
        s,
        "<p class=\"note\">A: {} · B: {}. Each row is one metric of one group: the dot is the change of B's median against A's, the line its 95% bootstrap interval. Green is a significant improvement, red a significant regression, grey {}. A hollow dot has no interval (too few repeats, or a zero baseline).</p>",
        esc(&c.side_shown(false)),
        esc(&c.side_shown(true)),
        esc(&legend(c))
    );
    s.push_str(&forest_svg(&c.rows));
    s.push_str("<ul>");
    for v in &c.verdicts {
        let _ = write!(s, "<li>{}</li>", esc(v));
    }
    let _ = write!(
        s,
        "</ul><p><b>Overall:</b> {}</p></section>",
        esc(&c.verdict)
    );
    s
}

/// A self-contained page holding only the comparison section.
pub fn page(c: &Comparison) -> String {
    page_with(c, "")
}

/// The page with `more` (HTML sections) after the comparison.
pub fn page_with(c: &Comparison, more: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rackbench compare</title><style>body{{font-family:sans-serif;margin:24px;max-width:1000px}}.note{{color:#555}}</style></head><body><h1>rackbench compare</h1>{}{more}</body></html>\n",
        section(c)
    )
}

/// The comparison section of a study's comparison (written by
/// `rackbench run --aa`) for the report page; None without one.
pub fn section_in(c: Option<&Comparison>) -> Option<String> {
    c.map(section)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::compare::{compare, GroupSamples, Side, SideSamples};

    /// One group, 8 repeats: throughput 1000 rps and show's p99 `p99_us`,
    /// each jittered by up to ±3%.
    fn samples(p99_us: f64) -> SideSamples {
        let mut g = GroupSamples {
            variant: "v".into(),
            ..Default::default()
        };
        for j in [0.97, 1.01, 1.03, 0.99, 1.00, 0.98, 1.02, 1.00] {
            g.figures.entry("throughput").or_default().push(1000.0 * j);
            g.add_endpoint("endpoint:show:p99".into(), p99_us * j);
        }
        let mut s = SideSamples::default();
        s.groups.insert("hello direct c=4".into(), g);
        s
    }

    #[test]
    fn endpoint_rows_show_their_unit_their_words_and_their_family() {
        let side = |d: &str| Side {
            dir: d.into(),
            selector: None,
        };
        let c = compare(
            (&side("a"), &samples(4000.0)),
            (&side("b"), &samples(8000.0)),
            1,
            None,
        )
        .unwrap();
        let t = terminal(&c);
        assert!(t.contains("endpoint:show:p99"), "{t}");
        assert!(t.contains("4000 µs") && t.contains("8000 µs"), "{t}");
        assert!(t.contains("WORSE"), "{t}");
        assert!(
            t.contains("the per-endpoint rows (endpoint:NAME:METRIC) in the same family"),
            "{t}"
        );
        assert!(markdown(&c).contains("| hello direct c=4 | endpoint:show:p99 |"));
        assert!(section(&c).contains("hello direct c=4 · p99 latency of show"));
        let without = compare(
            (
                &side("a"),
                &SideSamples {
                    groups: samples(1.0)
                        .groups
                        .into_iter()
                        .map(|(k, mut g)| {
                            g.endpoints.clear();
                            (k, g)
                        })
                        .collect(),
                    ..Default::default()
                },
            ),
            (&side("b"), &samples(1.0)),
            1,
            None,
        )
        .unwrap();
        assert!(
            !terminal(&without).contains("per-endpoint"),
            "one side without a mix: no endpoint rows"
        );
    }
}
