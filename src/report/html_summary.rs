//! The summary section of the HTML page: per app and front, one table row
//! per trial group (throughput with its min–max, latency, memory, CPU,
//! errors, notes), then each condition's own table (budget, slow clients,
//! database, endpoints, restarts) from the file that owns it. It draws no
//! chart and computes no figure: the groups carry them.

use super::svg::{color, esc};
use super::{load_label, Group, Report};
use crate::stats::spread::Spread;
use crate::units::{fmt_bytes, fmt_us};
use std::fmt::Write;

/// The summary section: a table per (app, front), the conditions' tables
/// under each.
pub(super) fn section(s: &mut String, report: &Report, variants: &[String]) {
    s.push_str("<section id=\"summary\"><h2>Summary</h2>");
    for ((app, fr), groups) in report.sections() {
        let _ = write!(s, "<h3>{}, {}</h3>", esc(&app), esc(&fr));
        let varies = report.runtime_varies();
        s.push_str("<table><tr><th class=\"l\">Server</th>");
        if varies {
            s.push_str("<th class=\"l\">Runtime</th>");
        }
        s.push_str("<th>Load</th><th>Runs</th><th>Throughput (req/s), min–max</th><th>Latency avg</th><th>stdev</th><th>max</th><th>p99</th><th>RSS peak</th><th>PSS peak</th><th>CPU (ms/req)</th><th>Errors</th><th class=\"l\">Notes</th></tr>");
        for g in &groups {
            let p = &g.planned;
            let cls = if g.is_result() { "" } else { " class=\"bad\"" };
            let runtime = if varies {
                format!("<td class=\"l\">{}</td>", esc(&g.runtime_label()))
            } else {
                String::new()
            };
            let _ = write!(
                s,
                "<tr{cls}><td class=\"l\"><span style=\"color:{}\">■</span> {}</td>{runtime}<td>{}</td><td>{}/{}</td>",
                color(variants, &p.variant),
                esc(&p.variant),
                esc(&load_label(p)),
                g.ok,
                g.planned_runs
            );
            match g.good() {
                Some(m) => {
                    let c = g.caveats();
                    // No latency figure (every request refused or
                    // failed) is a dash, never 0.
                    let bound = |v: Option<Spread>| {
                        v.map_or("–".into(), |v| {
                            if c.lower_bound {
                                format!("≥ {}", fmt_us(v.median))
                            } else {
                                fmt_us(v.median)
                            }
                        })
                    };
                    let _ = write!(
                        s,
                        "<td><b>{}</b>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td{}>{}</td>",
                        esc(&c.mark_throughput(format!("{:.0}", m.throughput_rps.median))),
                        range(&m.throughput_rps),
                        esc(&bound(m.latency_mean_us)),
                        m.latency_stdev_us.map_or("–".into(), |v| fmt_us(v.median)),
                        esc(&bound(m.latency_max_us)),
                        esc(&m.latency_p99_us.map_or("–".into(), |v| c
                            .mark_latency(0.99, fmt_us(v.median)))),
                        fmt_bytes(m.rss_peak_bytes.median as u64),
                        m.pss_peak_bytes
                            .map_or("–".into(), |p| fmt_bytes(p.median as u64)),
                        m.cpu_ms_per_request
                            .map_or("–".into(), |c| format!("{:.3}", c.median)),
                        if m.errors > 0 { " class=\"bad-text\"" } else { "" },
                        m.errors
                    );
                }
                None => s.push_str("<td colspan=\"9\" class=\"bad-text\">no data</td>"),
            }
            let _ = write!(
                s,
                "<td class=\"l notes{}\">{}",
                if g.is_result() { "" } else { " bad-text" },
                esc(&g.notes())
            );
            disturbed_mark(s, g);
            s.push_str("</td></tr>");
        }
        s.push_str("</table>");
        super::budget::html(s, report, &groups);
        super::slow::html(s, report, &groups);
        super::database::html(s, report, &groups);
        super::endpoints::html(s, &groups, variants);
        super::restart::html(s, report, &groups);
    }
    s.push_str("</section>\n");
}

/// A throughput's min–max across repeats under its median, small (the
/// notes column keeps the room a column of its own took); nothing for
/// one run.
fn range(t: &Spread) -> String {
    if t.n > 1 {
        format!("<br><small>{:.0}–{:.0}</small>", t.min, t.max)
    } else {
        String::new()
    }
}

/// The machine's caveat on a group (`Group::disturbed_note`), quiet: a
/// note beside the figures, not the red of a failure.
fn disturbed_mark(s: &mut String, g: &Group) {
    if let Some(n) = g.disturbed_note() {
        let _ = write!(
            s,
            " <span class=\"note\" title=\"steal or other processes' CPU on the server's and the generator's CPUs passed its threshold (docs/STATISTICS.md)\">⚠ {}</span>",
            esc(&n)
        );
    }
}
