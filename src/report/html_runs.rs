//! The HTML page's closing sections, run by run: errors by trial (every
//! kind counted, unfinished requests, connections never answered, the
//! failed requests' latency) and the environment with the command that
//! reproduces the run and each trial's exact commands and config file.
//! It shows what the records and the manifest hold and judges nothing
//! beyond a row's red.

use super::html_marks::status_cell;
use super::svg::esc;
use super::{short, Report, Status};
use crate::load::caveats::Caveats;
use crate::units::fmt_us;
use std::fmt::Write;

/// Every planned run's errors by kind, red when it is no result.
pub(super) fn errors(s: &mut String, report: &Report) {
    s.push_str("<section id=\"errors\"><h2>Errors by trial</h2><p class=\"note\">Every run, by kind of error. Requests unfinished at the end and connections never answered are shown too, and the latency of the failed requests (kept out of the headline figures, so fast error answers never pass for fast service).</p>");
    s.push_str("<table><tr><th class=\"l\">Trial</th><th class=\"l\">Status</th><th>OK</th><th>Errors</th><th>connect</th><th>timeout</th><th>reset</th><th>parse</th><th>status</th><th>body</th><th>unfinished</th><th>never answered</th><th>failed p50 / p99</th><th class=\"l\">Seconds with errors</th></tr>");
    for t in &report.trials {
        // Red only for a run that is not a result (a few errors are
        // counted in their column, not alarmed about).
        let bad = t.status != Status::Ok
            || t.record
                .as_ref()
                .is_some_and(|r| Caveats::of(&r.load).not_a_result());
        let _ = write!(
            s,
            "<tr{}><td class=\"l\">{}</td><td class=\"l\">{}</td>",
            if bad { " class=\"bad\"" } else { "" },
            esc(&t.planned.id),
            status_cell(t.status)
        );
        match &t.record {
            Some(r) => {
                let e = &r.load.errors;
                let _ = write!(
                    s,
                    "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l wrap\">{}</td></tr>",
                    r.load.requests.ok,
                    e.total(),
                    e.connect,
                    e.timeout,
                    e.reset,
                    e.parse,
                    e.status,
                    e.body,
                    r.load.requests.unfinished,
                    r.load.connections.never_answered,
                    r.load.latency_failed_us.as_ref().map_or("–".into(), |f| format!(
                        "{} / {}",
                        fmt_us(f.p50 as f64),
                        fmt_us(f.p99 as f64)
                    )),
                    esc(&super::error_seconds(&r.load))
                );
            }
            None => {
                let _ = write!(
                    s,
                    "<td colspan=\"12\" class=\"l wrap bad-text\">{}</td></tr>",
                    esc(&short(t.reason.as_deref().unwrap_or("no record"), 200))
                );
            }
        }
    }
    s.push_str("</table></section>\n");
}

/// The machine, the command that reproduces the run, the skipped
/// combinations, the runtimes and conditions, each trial's commands.
pub(super) fn environment(s: &mut String, report: &Report) {
    s.push_str("<section id=\"environment\"><h2>Environment and commands</h2>");
    if let Some(m) = &report.manifest {
        let e = &m.environment;
        let _ = write!(
            s,
            "<table><tr><th class=\"l\">CPU</th><td class=\"l\">{}</td></tr><tr><th class=\"l\">Cores</th><td class=\"l\">{}</td></tr><tr><th class=\"l\">Kernel</th><td class=\"l\">{}</td></tr><tr><th class=\"l\">Ruby</th><td class=\"l\">{}</td></tr><tr><th class=\"l\">rackbench</th><td class=\"l\">{}</td></tr><tr><th class=\"l\">Host</th><td class=\"l\">{}</td></tr><tr><th class=\"l\">Started</th><td class=\"l\">{}</td></tr></table>",
            esc(&e.cpu_model),
            e.cores,
            esc(&e.kernel),
            esc(e.ruby_version.as_deref().unwrap_or("unknown")),
            esc(&e.rackbench_version),
            esc(&e.hostname),
            esc(&m.started_at)
        );
        let _ = write!(
            s,
            "<h3>The command that reproduces this run</h3><pre>{}</pre>",
            esc(&m.command)
        );
        if !m.skipped.is_empty() {
            s.push_str("<h3>Combinations skipped by the plan</h3><ul>");
            for k in &m.skipped {
                let _ = write!(s, "<li>{}</li>", esc(k));
            }
            s.push_str("</ul>");
        }
    } else {
        s.push_str("<p class=\"bad-text\">manifest.json is missing: the environment of the run is unknown.</p>");
    }
    super::runtime::html(s, &report.runtimes());
    if let Some(line) = report.budget_line() {
        let _ = write!(s, "<p id=\"budget\">{}</p>", esc(&line));
    }
    if let Some(line) = report.slow_line() {
        let _ = write!(s, "<p id=\"slow\">{}</p>", esc(&line));
    }
    if let Some(line) = report.database_line() {
        let _ = write!(s, "<p id=\"database\">{}</p>", esc(&line));
    }
    s.push_str("<h3>Exact commands of each trial</h3><button type=\"button\" onclick=\"setAll('details.cmd', true)\">Expand all</button><button type=\"button\" onclick=\"setAll('details.cmd', false)\">Collapse all</button>");
    for t in &report.trials {
        let _ = write!(
            s,
            "<details class=\"cmd\"><summary>{} {}</summary>",
            esc(&t.planned.id),
            if t.status == Status::Ok {
                String::new()
            } else {
                status_cell(t.status)
            }
        );
        match &t.record {
            Some(r) => {
                let _ = write!(
                    s,
                    "<p>{} ({}), {} workers × {} threads; started {}</p><pre>{}</pre>",
                    esc(&r.server.name),
                    esc(r.server.version.as_deref().unwrap_or("version unknown")),
                    r.server.workers,
                    r.server.threads,
                    esc(&r.started_at),
                    esc(&r.environment.commands.join("\n"))
                );
                if let Some(cfg) = &r.server.config_file {
                    let _ = write!(s, "<p>Config file:</p><pre>{}</pre>", esc(cfg));
                }
            }
            None => {
                let _ = write!(
                    s,
                    "<p class=\"bad-text\">No record: {}</p>",
                    esc(t.reason.as_deref().unwrap_or(""))
                );
            }
        }
        s.push_str("</details>");
    }
    s.push_str("</section>\n");
}
