//! The fit-v1 document (`rackbench fit --json`), a plan's fits-v1 (one
//! fit-v1 per server, with their table in text and Markdown), and a fit's
//! page: a heatmap of
//! workers × threads coloured by throughput, the configurations that broke
//! the objective or were killed marked, the recommendation outlined. The
//! page is built from the document alone (no scripts, no external
//! resources), so it can be rebuilt from a saved fit.json; it never runs
//! a trial.

use super::svg::esc;
use super::table::{Align, Table};
use crate::search::fit::{Difference, FitResult, MemoryModel, Tried, Verdict};
use crate::units::{fmt_bytes, fmt_us};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// A candidate as recommended: the candidate and the setting a team
/// writes for it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recommended {
    /// "WEB_CONCURRENCY=3 RAILS_MAX_THREADS=5", "worker_processes 3", ...
    pub setting: String,
    #[serde(flatten)]
    pub tried: Tried,
}

/// The `rackbench/fit-v1` document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FitDocument {
    pub schema: String,
    pub server: String,
    pub app: String,
    pub memory_limit_bytes: Option<u64>,
    pub cpus: Option<f64>,
    /// Share of the limit kept free under the peak (0.1 = 10%).
    pub headroom: f64,
    pub slo_p99_us: Option<u64>,
    pub repeats: usize,
    pub recommendation: Option<Recommended>,
    pub runner_up: Option<Recommended>,
    /// The recommendation and the runner-up differ significantly in
    /// throughput (false without a runner-up).
    pub significant: bool,
    pub difference: Option<Difference>,
    pub memory_model: Option<MemoryModel>,
    pub candidates: Vec<Tried>,
    pub trials: usize,
    pub stopped_because: String,
}

impl FitDocument {
    /// The document of a search; `setting` words a candidate for the server.
    pub fn new(
        head: (&str, &str),
        budget: (Option<u64>, Option<f64>, f64, Option<u64>, usize),
        result: FitResult,
        setting: impl Fn(&Tried) -> String,
    ) -> FitDocument {
        let (memory_limit_bytes, cpus, headroom, slo_p99_us, repeats) = budget;
        let recommended = |t: Option<Tried>| {
            t.map(|t| Recommended {
                setting: setting(&t),
                tried: t,
            })
        };
        FitDocument {
            schema: crate::search::fit::SCHEMA.into(),
            server: head.0.into(),
            app: head.1.into(),
            memory_limit_bytes,
            cpus,
            headroom,
            slo_p99_us,
            repeats,
            significant: result.difference.as_ref().is_some_and(|d| d.significant),
            recommendation: recommended(result.recommendation),
            runner_up: recommended(result.runner_up),
            difference: result.difference,
            memory_model: result.memory_model,
            candidates: result.candidates,
            trials: result.trials,
            stopped_because: result.stopped_because,
        }
    }

    /// The budget in words: "512.0 MiB, 1 CPU, p99 ≤ 200ms".
    pub fn budget_words(&self) -> String {
        let mut parts = Vec::new();
        if let Some(m) = self.memory_limit_bytes {
            parts.push(format!(
                "{} ({:.0}% headroom)",
                fmt_bytes(m),
                self.headroom * 100.0
            ));
        }
        if let Some(c) = self.cpus {
            parts.push(format!("{c} CPU"));
        }
        if let Some(s) = self.slo_p99_us {
            parts.push(format!("p99 ≤ {}", fmt_us(s as f64)));
        }
        if parts.is_empty() {
            "no limit".into()
        } else {
            parts.join(", ")
        }
    }
}

/// The text report: the recommendation, its figures, the runner-up, the
/// memory against the limit, the candidates, and why the search stopped.
pub fn text(doc: &FitDocument) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fit: {} with {} in {}",
        doc.server,
        doc.app,
        doc.budget_words()
    );
    match &doc.recommendation {
        Some(r) => {
            let _ = writeln!(s, "recommendation: {}", r.setting);
            let _ = writeln!(s, "  {}", figures(&r.tried, doc.memory_limit_bytes));
        }
        None => {
            let _ = writeln!(s, "recommendation: none held (see the candidates below)");
        }
    }
    if let (Some(r), Some(d)) = (&doc.runner_up, &doc.difference) {
        let _ = writeln!(
            s,
            "runner-up: {} at {:.0} req/s; the recommendation: {}",
            r.setting, r.tried.throughput_rps, d.words
        );
    }
    let _ = writeln!(
        s,
        "  workers threads      req/s        p99     memory  verdict"
    );
    for t in &doc.candidates {
        let _ = writeln!(
            s,
            "  {:>7} {:>7} {:>10.0} {:>10} {:>10}  {}{}",
            t.workers,
            t.threads,
            t.throughput_rps,
            fmt_us(t.latency_us.p99 as f64),
            fmt_bytes(t.memory_peak_bytes),
            t.verdict.word(),
            t.why.as_ref().map_or(String::new(), |w| format!(" ({w})"))
        );
    }
    let _ = writeln!(
        s,
        "{} trials over {} configurations; stopped: {}",
        doc.trials,
        doc.candidates.len(),
        doc.stopped_because
    );
    s
}

/// "1234 req/s (1200–1250 over 3 repeats), p99 12.3ms, memory peak 300
/// MiB of 512 MiB (58%)".
fn figures(t: &Tried, limit: Option<u64>) -> String {
    let spread = t
        .throughput_spread
        .filter(|s| s.n > 1)
        .map_or(String::new(), |s| {
            format!(" ({:.0}–{:.0} over {} repeats)", s.min, s.max, s.n)
        });
    let memory = match limit {
        Some(l) => format!(
            "{} of {} ({:.0}%)",
            fmt_bytes(t.memory_peak_bytes),
            fmt_bytes(l),
            t.memory_peak_bytes as f64 / l as f64 * 100.0
        ),
        None => fmt_bytes(t.memory_peak_bytes),
    };
    format!(
        "{:.0} req/s{spread}, p50 {}, p99 {}, memory peak {memory}",
        t.throughput_rps,
        fmt_us(t.latency_us.p50 as f64),
        fmt_us(t.latency_us.p99 as f64)
    )
}

/// The `rackbench/fits-v1` document: a plan's fits, one fit-v1 per server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FitsDocument {
    pub schema: String,
    /// The plan's name.
    pub plan: String,
    pub fits: Vec<FitDocument>,
}

pub const FITS_SCHEMA: &str = "rackbench/fits-v1";

impl FitsDocument {
    pub fn new(plan: &str, fits: Vec<FitDocument>) -> FitsDocument {
        FitsDocument {
            schema: FITS_SCHEMA.into(),
            plan: plan.into(),
            fits,
        }
    }

    /// The head of the table: the plan and its budget (the first fit's:
    /// a plan has one).
    fn head(&self) -> String {
        let budget = self.fits.first().map_or("no fit ran".into(), |d| {
            format!(
                "{} servers with {} in {}",
                self.fits.len(),
                d.app,
                d.budget_words()
            )
        });
        format!("fits of plan {}: {budget}", self.plan)
    }

    /// One row per server: the recommendation in its own words, its
    /// throughput (spread), p99, memory peak against the limit, trials
    /// run, and the runner-up with the verdict on the two.
    fn rows(&self) -> Vec<[String; 7]> {
        self.fits
            .iter()
            .map(|d| {
                let Some(r) = &d.recommendation else {
                    return [
                        d.server.clone(),
                        "none held".into(),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                        d.trials.to_string(),
                        "-".into(),
                    ];
                };
                let t = &r.tried;
                let spread = t
                    .throughput_spread
                    .filter(|s| s.n > 1)
                    .map_or(String::new(), |s| format!(" ({:.0}–{:.0})", s.min, s.max));
                let memory = match d.memory_limit_bytes {
                    Some(l) => format!(
                        "{} of {} ({:.0}%)",
                        fmt_bytes(t.memory_peak_bytes),
                        fmt_bytes(l),
                        t.memory_peak_bytes as f64 / l as f64 * 100.0
                    ),
                    None => fmt_bytes(t.memory_peak_bytes),
                };
                let runner_up = match (&d.runner_up, &d.difference) {
                    (Some(u), Some(diff)) => format!("{}; the best: {}", u.setting, diff.words),
                    (Some(u), None) => u.setting.clone(),
                    _ => "none".into(),
                };
                [
                    d.server.clone(),
                    r.setting.clone(),
                    format!("{:.0}{spread}", t.throughput_rps),
                    fmt_us(t.latency_us.p99 as f64),
                    memory,
                    d.trials.to_string(),
                    runner_up,
                ]
            })
            .collect()
    }
}

const FITS_COLUMNS: [&str; 7] = [
    "server",
    "recommendation",
    "req/s (spread)",
    "p99",
    "memory peak",
    "trials",
    "runner-up",
];

/// The fits, a row per server, every column left.
fn fits_table(doc: &FitsDocument) -> Table {
    let heads = FITS_COLUMNS.map(|h| (h, Align::Left));
    Table::of_text(&heads, doc.rows().into_iter().map(Vec::from).collect())
}

/// The fits as a text table, columns aligned.
pub fn fits_text(doc: &FitsDocument) -> String {
    format!("{}\n{}", doc.head(), fits_table(doc).terminal_lines())
}

/// The fits as a Markdown table (fits.md; docs/BUDGETS.md shows one).
pub fn fits_markdown(doc: &FitsDocument) -> String {
    format!("{}\n\n{}", doc.head(), fits_table(doc).markdown())
}

/// A colour from pale to deep blue by `x` in 0..=1.
fn shade(x: f64) -> String {
    let x = x.clamp(0.0, 1.0);
    let mix = |pale: f64, deep: f64| (pale + (deep - pale) * x).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(239.0, 8.0),
        mix(243.0, 69.0),
        mix(255.0, 148.0)
    )
}

/// The heatmap: one cell per workers × threads tried, its throughput as
/// colour and number; a cell that broke a rule crossed in red with its
/// verdict; the recommendation outlined.
fn heatmap(doc: &FitDocument) -> String {
    let mut workers: Vec<u32> = doc.candidates.iter().map(|t| t.workers).collect();
    let mut threads: Vec<u32> = doc.candidates.iter().map(|t| t.threads).collect();
    for v in [&mut workers, &mut threads] {
        v.sort_unstable();
        v.dedup();
    }
    let best = doc.recommendation.as_ref().map(|r| r.tried.candidate());
    let top = doc
        .candidates
        .iter()
        .map(|t| t.throughput_rps)
        .fold(0.0, f64::max)
        .max(1.0);
    let (cell_w, cell_h, left, head) = (84.0, 44.0, 90.0, 40.0);
    let width = left + cell_w * threads.len() as f64 + 10.0;
    let height = head + cell_h * workers.len() as f64 + 10.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\" aria-label=\"throughput by workers and threads\">"
    );
    let _ = write!(
        s,
        "<text x=\"{left}\" y=\"14\">threads →</text><text x=\"4\" y=\"{}\">workers ↓</text>",
        head - 6.0
    );
    for (j, t) in threads.iter().enumerate() {
        let x = left + cell_w * (j as f64 + 0.5);
        let _ = write!(
            s,
            "<text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{t}</text>",
            head - 6.0
        );
    }
    for (i, w) in workers.iter().enumerate() {
        let y = head + cell_h * i as f64;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{w}</text>",
            left - 8.0,
            y + cell_h / 2.0 + 4.0
        );
        for (j, th) in threads.iter().enumerate() {
            let x = left + cell_w * j as f64;
            let Some(t) = doc
                .candidates
                .iter()
                .find(|c| c.workers == *w && c.threads == *th)
            else {
                let _ = write!(s, "<rect x=\"{x}\" y=\"{y}\" width=\"{cell_w}\" height=\"{cell_h}\" fill=\"#f4f4f4\" stroke=\"#fff\"/>");
                continue;
            };
            s.push_str(&cell(
                t,
                (x, y, cell_w, cell_h),
                top,
                best == Some(t.candidate()),
            ));
        }
    }
    s.push_str("</svg>");
    s
}

/// One tried candidate's cell.
fn cell(t: &Tried, (x, y, w, h): (f64, f64, f64, f64), top: f64, best: bool) -> String {
    let share = t.throughput_rps / top;
    let ink = if share > 0.55 { "#fff" } else { "#111" };
    let mut s = format!(
        "<g><title>{} workers × {} threads: {:.0} req/s, p99 {}, memory {}, {}{}</title><rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" fill=\"{}\" stroke=\"#fff\"/>",
        t.workers,
        t.threads,
        t.throughput_rps,
        fmt_us(t.latency_us.p99 as f64),
        fmt_bytes(t.memory_peak_bytes),
        t.verdict.word(),
        esc(&t.why.as_ref().map_or(String::new(), |w| format!(": {w}"))),
        shade(share)
    );
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{ink}\">{:.0}</text>",
        x + w / 2.0,
        y + h / 2.0,
        t.throughput_rps
    );
    if t.verdict != Verdict::Ok {
        let _ = write!(
            s,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{red}\" stroke-width=\"2\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{red}\" font-weight=\"bold\">{}</text>",
            x + 3.0,
            y + h - 3.0,
            x + w - 3.0,
            y + 3.0,
            x + w / 2.0,
            y + h - 6.0,
            t.verdict.word(),
            red = super::svg::RED
        );
    }
    if best {
        let _ = write!(
            s,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#f28e2b\" stroke-width=\"4\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{ink}\" font-weight=\"bold\">best</text>",
            x + 2.0,
            y + 2.0,
            w - 4.0,
            h - 4.0,
            x + w / 2.0,
            y + h - 6.0
        );
    }
    s.push_str("</g>");
    s
}

/// The whole page.
pub fn page(doc: &FitDocument) -> String {
    let title = format!("rackbench fit: {} with {}", doc.server, doc.app);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>body{{font-family:sans-serif;margin:24px;max-width:1000px}}.note{{color:#555}}pre{{background:#f8f8f8;padding:8px;overflow-x:auto}}</style></head><body><h1>{t}</h1><p>Budget: {}.</p><h2>Throughput by workers × threads</h2>{}<p class=\"note\">Each cell is a configuration tried, its colour and number the median throughput (req/s) over its repeats. Crossed in red: it broke the objective (slo), failed requests (errors), was killed for memory or left less headroom than asked (oom), or did not start (no-start). Outlined: the recommendation. Blank: not tried.</p><h2>Result</h2><pre>{}</pre></body></html>\n",
        esc(&doc.budget_words()),
        heatmap(doc),
        esc(&text(doc)),
        t = esc(&title),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> FitDocument {
        serde_json::from_str(include_str!("../../tests/contracts/fit-v1.json")).unwrap()
    }

    /// The page shows every tried configuration, marks each that broke a
    /// rule with its verdict, and outlines the recommendation.
    #[test]
    fn the_page_marks_broken_configurations_and_the_recommendation() {
        let doc = sample();
        let html = page(&doc);
        assert!(html.contains("<svg"), "{html}");
        assert_eq!(html.matches("<g><title>").count(), doc.candidates.len());
        for t in doc.candidates.iter().filter(|t| t.verdict != Verdict::Ok) {
            assert!(html.contains(&format!(">{}</text>", t.verdict.word())));
        }
        assert_eq!(
            html.matches(">best</text>").count(),
            usize::from(doc.recommendation.is_some())
        );
        assert!(!html.contains("<script") && !html.contains("src="));
    }

    /// The fits' table has one row per server, the recommendation in its
    /// own words, and says "none held" where nothing fitted.
    #[test]
    fn the_fits_table_has_a_row_per_server_in_its_own_words() {
        let held = sample();
        let mut none = sample();
        none.server = "unicorn".into();
        none.recommendation = None;
        let doc = FitsDocument::new("budget-512", vec![held.clone(), none]);
        let text = fits_text(&doc);
        let md = fits_markdown(&doc);
        let r = held.recommendation.as_ref().unwrap();
        for out in [&text, &md] {
            assert!(
                out.starts_with("fits of plan budget-512: 2 servers with"),
                "{out}"
            );
            assert!(out.contains(&r.setting), "{out}");
            assert!(out.contains("none held"), "{out}");
            assert!(
                out.contains(&format!("{:.0}", r.tried.throughput_rps)),
                "{out}"
            );
        }
        assert_eq!(text.lines().count(), 4, "{text}");
        let table: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(table.len(), 4, "{md}");
        for row in [table[0], table[2], table[3]] {
            assert_eq!(row.matches(" | ").count(), FITS_COLUMNS.len() - 1, "{md}");
        }
    }

    /// The text says the setting in the words a team uses and why the
    /// search stopped.
    #[test]
    fn the_text_says_the_setting_and_why_it_stopped() {
        let doc = sample();
        let text = text(&doc);
        let r = doc.recommendation.as_ref().unwrap();
        assert!(
            text.contains(&format!("recommendation: {}", r.setting)),
            "{text}"
        );
        assert!(text.contains(&doc.stopped_because), "{text}");
    }
}
