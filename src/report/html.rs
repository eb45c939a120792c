//! The self-contained HTML report: the page's head with its inline CSS and
//! the few lines of inline JS for expanding and collapsing, the navigation,
//! the title, "what this shows" and the header (plan, trial counts, the
//! box of incomplete results), then the sections in their order, each
//! written by the file that holds it: html_summary.rs, html_throughput.rs,
//! html_latency.rs, html_bars.rs (time split, memory, CPU, repeats),
//! html_timeline.rs, soak.rs, html_breakpoints.rs, html_runs.rs (errors,
//! environment). This file draws no chart and writes no section's body;
//! nothing on the page is fetched.

use super::html_marks::status_cell;
use super::svg::esc;
use super::{html_bars, html_breakpoints, html_latency, html_runs, html_summary};
use super::{html_throughput, html_timeline, Report, Status};
use std::fmt::Write;

const STYLE: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;background:#fafafa;line-height:1.45}
main{max-width:1200px;margin:0 auto;padding:16px 24px 64px}
h1{font-size:1.6em;margin:.4em 0}
h2{font-size:1.3em;margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:1.05em;margin:1.2em 0 .4em}
nav{position:sticky;top:0;background:#fafafa;border-bottom:1px solid #ddd;padding:6px 0;z-index:2}
nav a{margin-right:14px;color:#1f5f9f;text-decoration:none;font-size:.92em}
table{border-collapse:collapse;font-size:.88em;margin:.5em 0;background:#fff}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right;vertical-align:top;white-space:nowrap}
td.wrap{white-space:normal;min-width:150px}
td.notes{white-space:normal;min-width:9em;max-width:30em;color:#555;font-size:.92em}
td.notes.bad-text{color:#b00020;font-weight:normal}
th{white-space:normal}
table{display:block;overflow-x:auto;max-width:100%}
th{background:#f0f0f0}
td.l,th.l{text-align:left}
tr.bad td{background:#fdecea}
.status-failed,.status-interrupted,.status-missing,.bad-text{color:#b00020;font-weight:600}
.note{color:#555;font-size:.9em}
.shows{background:#fff;border:1px solid #e4e4e4;border-left:4px solid #1f5f9f;border-radius:4px;padding:2px 14px;margin:8px 0}
.shows h2{border:none;margin:.5em 0 .2em;font-size:1.1em}
.shows p{margin:.4em 0;max-width:60em}
.warn{background:#fff4e5;border:1px solid #f0b37e;padding:8px 12px;border-radius:4px;margin:8px 0}
.chart svg{max-width:100%;height:auto;background:#fff;border:1px solid #e4e4e4;border-radius:4px;margin:4px 0}
.pair{display:flex;flex-wrap:wrap;gap:10px}
.pair>div{flex:1 1 560px;min-width:0}
details{margin:6px 0;background:#fff;border:1px solid #e4e4e4;border-radius:4px;padding:4px 10px}
summary{cursor:pointer;font-weight:600}
pre{white-space:pre-wrap;word-break:break-all;background:#f4f4f4;padding:6px 8px;border-radius:4px;font-size:.85em;margin:4px 0}
code{font-size:.92em}
button{font:inherit;font-size:.85em;margin:4px 6px 4px 0}
"#;

const SCRIPT: &str = r#"
function setAll(sel, open) {
  document.querySelectorAll(sel).forEach(function (d) { d.open = open; });
}
"#;

/// A section of the page: it writes its whole `<section>` (or nothing)
/// from the report and the variants in colour order.
type Section = fn(&mut String, &Report, &[String]);

/// The sections of a study with trials, in the page's order.
const TRIAL_SECTIONS: [Section; 10] = [
    html_summary::section,
    html_throughput::section,
    html_latency::section,
    |s, r, _| html_bars::time_split(s, r),
    |s, r, _| html_timeline::section(s, r),
    html_bars::memory,
    |s, r, _| super::soak::html(s, r),
    html_bars::cpu,
    html_bars::spread,
    |s, r, _| super::profile::html(s, r),
];

impl Report {
    /// The whole HTML document.
    pub fn html(&self) -> String {
        self.page(&[])
    }

    /// The whole HTML document with `studies`' sections (a comparison,
    /// a sweep: what the directory holds beside its trials) after the
    /// report's own and before the errors and the environment. The
    /// sections' order is decided here.
    pub fn page(&self, studies: &[String]) -> String {
        let variants = self.variants();
        let mut s = String::new();
        let title = format!(
            "rackbench report: {}",
            self.manifest
                .as_ref()
                .map_or("(no manifest)", |m| m.plan.as_str())
        );
        let _ = write!(
            s,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{STYLE}</style><script>{SCRIPT}</script></head><body>\n",
            esc(&title)
        );
        // A break-point-only run has no trials: their sections would be
        // empty, so they are left out.
        let has_trials = !self.trials.is_empty();
        s.push_str("<nav><main style=\"padding:0 24px\">");
        if has_trials {
            s.push_str("<a href=\"#summary\">Summary</a><a href=\"#throughput\">Throughput</a><a href=\"#latency\">Latency</a>");
            if self.has_telemetry() {
                s.push_str("<a href=\"#time-split\">Where the time goes</a>");
            }
            s.push_str("<a href=\"#timeline\">Timeline</a><a href=\"#memory\">Memory</a>");
            if self.has_soak() {
                s.push_str("<a href=\"#soak\">Soak</a>");
            }
            s.push_str("<a href=\"#cpu\">CPU</a><a href=\"#spread\">Repeats</a>");
        }
        if !self.breakpoints.is_empty() || !self.missing_breakpoints.is_empty() {
            s.push_str("<a href=\"#breakpoints\">Break points</a>");
        }
        s.push_str("<a href=\"#errors\">Errors</a><a href=\"#environment\">Environment</a></main></nav>\n<main>\n");
        let _ = writeln!(s, "<h1>{}</h1>", esc(&title));
        self.shows(&mut s);
        self.header(&mut s);
        if has_trials {
            for section in TRIAL_SECTIONS {
                section(&mut s, self, &variants);
            }
        }
        if !self.breakpoints.is_empty() || !self.missing_breakpoints.is_empty() {
            html_breakpoints::section(&mut s, self, &variants);
        }
        for study in studies {
            s.push_str(study);
        }
        html_runs::errors(&mut s, self);
        html_runs::environment(&mut s, self);
        s.push_str("</main></body></html>\n");
        s
    }

    /// "What this shows", right under the title (nothing when there is
    /// nothing to say).
    fn shows(&self, s: &mut String) {
        let paragraphs = self.what_it_shows();
        if paragraphs.is_empty() {
            return;
        }
        s.push_str("<section id=\"shows\" class=\"shows\"><h2>What this shows</h2>");
        for p in paragraphs {
            let _ = write!(s, "<p>{}</p>", esc(&p));
        }
        s.push_str("</section>\n");
    }

    /// "N trials planned: k ok, ..." and the note on how figures are made.
    fn trial_counts(&self, s: &mut String) {
        let counts = self.counts();
        let _ = write!(s, "{} trials planned: ", self.trials.len());
        let parts: Vec<String> = counts
            .iter()
            .map(|(k, v)| {
                if *k == Status::Ok {
                    format!("{v} ok")
                } else {
                    format!("<span class=\"status-{0}\">{v} {0}</span>", k.label())
                }
            })
            .collect();
        let _ = writeln!(s, "{}.</p>", parts.join(", "));
        let _ = writeln!(
            s,
            "<p class=\"note\">Figures are medians across the good runs of each trial, with min–max across repeats as whiskers. Throughput and latency count OK responses only (failed requests are in the errors); ≥ marks a latency that is the age of unanswered requests (a lower bound), † a figure resting on too few responses, and a row with more than 1% errors or no OK response is not a result (shaded red; the marks alone are quiet notes): the notes say why; memory is the peak of the whole server process tree over the measured window.</p>"
        );
    }

    /// The plan line, the trial counts (or the break-point searches), and
    /// the box of incomplete results when a trial, search or warning needs it.
    fn header(&self, s: &mut String) {
        let _ = write!(s, "<p>");
        if let Some(m) = &self.manifest {
            let _ = write!(
                s,
                "Plan <code>{}</code>{}, started {}, {} repeat{}. ",
                esc(&m.plan),
                m.follows
                    .as_ref()
                    .map_or(String::new(), |f| format!(" (follows {})", esc(f))),
                esc(&m.started_at),
                m.repeats,
                if m.repeats == 1 { "" } else { "s" }
            );
        }
        if self.trials.is_empty() {
            let n = self.breakpoints.len() + self.missing_breakpoints.len();
            let _ = writeln!(
                s,
                "Break-point searches only: {n} planned, no fixed-load trials.</p>"
            );
        } else {
            self.trial_counts(s);
        }
        let bad = self.incomplete();
        if !bad.is_empty() || !self.warnings.is_empty() || !self.missing_breakpoints.is_empty() {
            let _ = write!(
                s,
                "<div class=\"warn\" id=\"incomplete\"><strong>Incomplete results.</strong> {} of {} planned trials have no good record; they are marked in every table and chart.",
                bad.len(),
                self.trials.len()
            );
            if !bad.is_empty() {
                s.push_str("<table><tr><th class=\"l\">Trial</th><th class=\"l\">Status</th><th class=\"l\">Reason</th></tr>");
                for t in &bad {
                    let _ = write!(
                        s,
                        "<tr class=\"bad\"><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l wrap\"><pre>{}</pre></td></tr>",
                        esc(&t.planned.id),
                        status_cell(t.status),
                        esc(t.reason.as_deref().unwrap_or(""))
                    );
                }
                s.push_str("</table>");
            }
            for id in &self.missing_breakpoints {
                let _ = write!(
                    s,
                    "<p><span class=\"status-missing\">missing</span> break-point search {}: not run</p>",
                    esc(id)
                );
            }
            for w in &self.warnings {
                let _ = write!(s, "<p>warning: {}</p>", esc(w));
            }
            s.push_str("</div>\n");
        }
    }
}
