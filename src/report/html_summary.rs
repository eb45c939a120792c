//! The summary section of the HTML page: per app and front, one table row
//! per trial group (throughput with its min–max, latency, memory, CPU,
//! errors, notes), then each condition's own table (budget, slow clients,
//! database, endpoints, restarts) from the file that owns it. It draws no
//! chart and computes no figure: the groups carry them.

use super::svg::esc;
use super::Report;
use std::fmt::Write;

/// The summary section: a table per (app, front), the conditions' tables
/// under each.
pub(super) fn section(s: &mut String, report: &Report, variants: &[String]) {
    s.push_str("<section id=\"summary\"><h2>Summary</h2>");
    for ((app, fr), groups) in report.sections() {
        let _ = write!(s, "<h3>{}, {}</h3>", esc(&app), esc(&fr));
        s.push_str(&super::summary::table(report, &groups, variants).html());
        super::budget::html(s, report, &groups);
        super::slow::html(s, report, &groups);
        super::database::html(s, report, &groups);
        super::endpoints::html(s, &groups, variants);
        super::restart::html(s, report, &groups);
    }
    s.push_str("</section>\n");
}
