//! The rackbench/tune-v1 document (`rackbench tune gc --json`) and its
//! terminal and Markdown forms. Field names are a contract
//! (schema/tune-v1.schema.json): add, never rename.

use crate::stats::sequential::Call;
use crate::telemetry::GcDetail;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA: &str = "rackbench/tune-v1";

/// The control trial's GC figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Control {
    pub requests: u64,
    pub gc_runs: u64,
    pub gc_minor_runs: u64,
    pub gc_major_runs: u64,
    pub gc_runs_per_1k: f64,
    pub gc_time_share: Option<f64>,
    pub allocated_objects_per_request: f64,
    pub gc: GcDetail,
    /// The control's record, relative to the results directory.
    pub record: Option<String>,
}

/// One proposal and what its A/B against the control said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposalDoc {
    pub rule: String,
    pub env: BTreeMap<String, String>,
    pub evidence: String,
    pub rubies: String,
    /// ab-v1's verdict of B (the proposal) against A (the control).
    pub verdict: Call,
    pub change_pct: f64,
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    /// Mean GC runs per 1,000 requests over the A/B's windows, control
    /// side and proposal side (None without telemetry in them).
    pub gc_runs_per_1k_before: Option<f64>,
    pub gc_runs_per_1k_after: Option<f64>,
    pub gc_time_share_before: Option<f64>,
    pub gc_time_share_after: Option<f64>,
    /// Significantly better and no secondary worse beyond the margin.
    pub kept: bool,
    /// Why it was kept or not, in words.
    pub why: String,
    /// The A/B's verdict document, relative to the results directory.
    pub ab: String,
}

/// The environment to paste, and the A/B that proved it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// Empty when nothing proved better.
    pub env: BTreeMap<String, String>,
    /// The verdict of these settings together against the control (a
    /// single kept proposal's own), None when there is none.
    pub verdict: Option<Call>,
    pub change_pct: Option<f64>,
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    pub gc_runs_per_1k_before: Option<f64>,
    pub gc_runs_per_1k_after: Option<f64>,
    /// The combined A/B's verdict document, when one ran.
    pub ab: Option<String>,
}

/// The whole document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneDocument {
    pub schema: String,
    pub ruby_version: String,
    /// The A/Bs' primary metric.
    pub metric: String,
    pub margin_pct: f64,
    pub control: Control,
    pub proposals: Vec<ProposalDoc>,
    /// Rules that fired whose variables this Ruby ignores.
    pub not_for_this_ruby: Vec<String>,
    pub recommendation: Recommendation,
    /// "the GC took 0.4% of the time (under 2.0%)", when nothing was tried
    /// or nothing proved better.
    pub nothing_to_gain: Option<String>,
    /// The last line: the settings to paste and what they gave, or
    /// "nothing to gain: ...".
    pub line: String,
}

fn opt_pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:+.1}%"))
}

fn runs(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.0}"))
}

fn env_line(env: &BTreeMap<String, String>) -> String {
    env.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The line to paste: "ENV...: 7.8% more throughput (95% CI +5.1% to
/// +10.4%), GC runs per 1,000 requests 41 → 6".
pub fn paste_line(r: &Recommendation, metric: &str, alpha: f64, nothing: Option<&str>) -> String {
    let (Some(change), false) = (r.change_pct, r.env.is_empty()) else {
        return format!("nothing to gain: {}", nothing.unwrap_or("no proposal"));
    };
    let what = if metric == "throughput" {
        format!("{:.1}% more throughput", change)
    } else {
        format!("{metric} {change:+.1}%")
    };
    let ci = match (r.ci_low_pct, r.ci_high_pct) {
        (Some(l), Some(h)) => format!(" ({:.0}% CI {l:+.1}% to {h:+.1}%)", (1.0 - alpha) * 100.0),
        _ => String::new(),
    };
    format!(
        "{}: {what}{ci}, GC runs per 1,000 requests {} → {}",
        env_line(&r.env),
        runs(r.gc_runs_per_1k_before),
        runs(r.gc_runs_per_1k_after)
    )
}

/// The terminal form.
pub fn render_text(d: &TuneDocument) -> String {
    let c = &d.control;
    let mut out = format!(
        "control: Ruby {}, {} requests, GC {:.1} runs per 1,000 requests, {} of the time\n",
        d.ruby_version,
        c.requests,
        c.gc_runs_per_1k,
        c.gc_time_share.map_or("-".into(), super::pct)
    );
    for p in &d.proposals {
        out.push_str(&format!(
            "{} {}: {} {} (CI {} to {}), GC runs per 1,000 requests {} -> {}: {}\n  because {}\n",
            if p.kept { "kept   " } else { "dropped" },
            env_line(&p.env),
            p.verdict.word(),
            opt_pct(Some(p.change_pct)),
            opt_pct(p.ci_low_pct),
            opt_pct(p.ci_high_pct),
            runs(p.gc_runs_per_1k_before),
            runs(p.gc_runs_per_1k_after),
            p.why,
            p.evidence
        ));
    }
    for n in &d.not_for_this_ruby {
        out.push_str(&format!("not for this Ruby: {n}\n"));
    }
    out.push_str(&d.line);
    out.push('\n');
    out
}

/// The Markdown form.
pub fn render_markdown(d: &TuneDocument) -> String {
    let c = &d.control;
    let mut out = format!(
        "# rackbench tune gc\n\nControl: Ruby {}, {} requests, {:.1} GC runs per 1,000 requests, \
         GC {} of the time, {:.0} objects allocated per request.\n\n",
        d.ruby_version,
        c.requests,
        c.gc_runs_per_1k,
        c.gc_time_share.map_or("-".into(), super::pct),
        c.allocated_objects_per_request
    );
    if !d.proposals.is_empty() {
        out.push_str(&format!(
            "| rule | env | {} | CI | GC runs / 1k before | after | kept | why |\n|---|---|---|---|---|---|---|---|\n",
            d.metric
        ));
        for p in &d.proposals {
            out.push_str(&format!(
                "| {} | `{}` | {} {} | {} to {} | {} | {} | {} | {} |\n",
                p.rule,
                env_line(&p.env),
                p.verdict.word(),
                opt_pct(Some(p.change_pct)),
                opt_pct(p.ci_low_pct),
                opt_pct(p.ci_high_pct),
                runs(p.gc_runs_per_1k_before),
                runs(p.gc_runs_per_1k_after),
                if p.kept { "yes" } else { "no" },
                p.why
            ));
        }
        out.push('\n');
        for p in &d.proposals {
            out.push_str(&format!("- {}: {}\n", p.rule, p.evidence));
        }
        out.push('\n');
    }
    for n in &d.not_for_this_ruby {
        out.push_str(&format!("- not for this Ruby: {n}\n"));
    }
    out.push_str(&format!("\n```\n{}\n```\n", d.line));
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The HTML form: one page, no script, the same table as the Markdown.
pub fn render_html(d: &TuneDocument) -> String {
    let c = &d.control;
    let mut rows = String::new();
    for p in &d.proposals {
        rows.push_str(&format!(
            "<tr><td>{}</td><td><code>{}</code></td><td>{} {}</td><td>{} to {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(&p.rule),
            esc(&env_line(&p.env)),
            p.verdict.word(),
            opt_pct(Some(p.change_pct)),
            opt_pct(p.ci_low_pct),
            opt_pct(p.ci_high_pct),
            runs(p.gc_runs_per_1k_before),
            runs(p.gc_runs_per_1k_after),
            if p.kept { "yes" } else { "no" },
            esc(&format!("{}; because {}", p.why, p.evidence)),
        ));
    }
    let not_for: String = d
        .not_for_this_ruby
        .iter()
        .map(|n| format!("<li>not for this Ruby: {}</li>\n", esc(n)))
        .collect();
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>rackbench tune gc</title>\
         <style>body{{font-family:sans-serif;max-width:70em;margin:2em auto}}td,th{{border:1px solid #ccc;\
         padding:.3em}}table{{border-collapse:collapse}}pre{{background:#f4f4f4;padding:.6em}}</style>\
         </head><body>\n<h1>rackbench tune gc</h1>\n<p>Control: Ruby {}, {} requests, {:.1} GC runs per \
         1,000 requests, GC {} of the time, {:.0} objects allocated per request.</p>\n<table><tr><th>rule\
         </th><th>env</th><th>{}</th><th>CI</th><th>GC runs / 1k before</th><th>after</th><th>kept</th>\
         <th>why</th></tr>\n{rows}</table>\n<ul>{not_for}</ul>\n<pre>{}</pre>\n</body></html>\n",
        esc(&d.ruby_version),
        c.requests,
        c.gc_runs_per_1k,
        c.gc_time_share.map_or("-".into(), super::pct),
        c.allocated_objects_per_request,
        esc(&d.metric),
        esc(&d.line)
    )
}
