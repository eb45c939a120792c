//! The A/B's part of a report (`rackbench ab`, issue 38): when the results
//! directory holds ab.json (rackbench/ab-v1), its verdict in one line for
//! the terminal, a Markdown section with the rounds, and an HTML section
//! drawing the interval narrowing round by round: the band from each
//! round's `ci_low_pct` to `ci_high_pct`, the estimate, ±margin and ±noise
//! dashed, the verdict and its words above.

use super::svg::{esc, Axis, Plot, PALETTE, RED};
use super::table::md_cell;
use crate::ab::document::{AbDocument, PairDoc};
use crate::stats::sequential::Call;
use crate::store::study::Study;
use std::fmt::Write;

/// The directory's ab.json, read; None when it holds no A/B.
pub fn load(study: &Study) -> Result<Option<AbDocument>, String> {
    let Some(text) = study.ab_text() else {
        return Ok(None);
    };
    let path = study.dir().ab_json();
    let text = text.map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| format!("{} is not an ab-v1 document: {e}", path.display()))
}

/// "A/B, A = workers=2, B = workers=3: slower: B is 4.6% slower ...; 6
/// rounds (1 run again, disturbed), 24 s of counted load".
pub fn verdict_line(d: &AbDocument) -> String {
    let mut line = format!(
        "A/B, A = {}, B = {}: {}: {}; {} round{} ({} run again, disturbed), {:.0} s of counted load",
        d.a.label,
        d.b.label,
        d.verdict.word(),
        words(d),
        d.rounds,
        if d.rounds == 1 { "" } else { "s" },
        d.rounds_disturbed_rerun,
        d.load_s
    );
    match (d.end.as_str(), &d.error) {
        ("verdict", _) => {}
        ("failed", Some(why)) => {
            let _ = write!(line, "; stopped: {why}");
        }
        (end, _) => {
            let _ = write!(line, "; {end}");
        }
    }
    line
}

/// The verdict's words without the verdict itself at their start
/// ("undecided: -0.8% ..." is said after "undecided").
fn words(d: &AbDocument) -> &str {
    let word = d.verdict.word();
    (d.reason.strip_prefix(word))
        .and_then(|r| r.strip_prefix(": "))
        .unwrap_or(&d.reason)
}

/// "-3.1% to +0.9%", or "unbounded" before the interval has bounds.
fn interval(lo: Option<f64>, hi: Option<f64>) -> String {
    match (lo, hi) {
        (Some(lo), Some(hi)) => format!("{lo:+.1}% to {hi:+.1}%"),
        _ => "unbounded".into(),
    }
}

fn figure(f: Option<f64>) -> String {
    f.map_or("-".into(), |v| format!("{v:.1}"))
}

/// A round's notes: the counted attempt disturbed, attempts set aside.
fn round_notes(p: &PairDoc) -> String {
    let mut notes: Vec<String> = p
        .set_aside
        .iter()
        .map(|s| format!("set aside: {}", s.why))
        .collect();
    if p.disturbed {
        notes.push("counted disturbed (past --rerun-disturbed)".into());
    }
    notes.join("; ")
}

/// The Markdown section: the verdict line and a table of the rounds.
pub fn markdown(d: &AbDocument) -> String {
    let mut s = format!(
        "## A/B\n\n**{}**: {}\n\nA = {}, B = {}; {} rounds, {} run again (disturbed), {:.0} s of counted load, {:.0} s in all; margin ±{}%, noise ±{}%; {}.\n\n",
        d.verdict.word(),
        words(d),
        d.a.label,
        d.b.label,
        d.rounds,
        d.rounds_disturbed_rerun,
        d.load_s,
        d.wall_s,
        d.margin_pct,
        d.noise_pct,
        d.method
    );
    for w in &d.warnings {
        let _ = writeln!(s, "> warning: {}\n", md_cell(w));
    }
    let _ = writeln!(
        s,
        "| Round | First | A {m} | B {m} | Change | {l:.0}% interval | Notes |\n|---:|:---|---:|---:|---:|:---|:---|",
        m = d.metric,
        l = (1.0 - d.alpha) * 100.0
    );
    for p in &d.pairs {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:+.1}% | {} | {} |",
            p.round,
            p.first,
            figure(p.a.figure),
            figure(p.b.figure),
            p.change_pct,
            interval(p.ci_low_pct, p.ci_high_pct),
            md_cell(&round_notes(p))
        );
    }
    s
}

/// The HTML section: the verdict and its words, the chart, the rounds.
pub fn section(d: &AbDocument) -> String {
    let color = match d.verdict {
        Call::Faster => PALETTE[2],
        Call::Slower => RED,
        Call::Equivalent | Call::Undecided => "#444",
    };
    let mut s = format!(
        "<section class=\"chart\" id=\"ab\"><h2>A/B: {} against {}</h2><p><strong style=\"color:{color}\">{}</strong>: {}</p><p class=\"note\">{} rounds, {} run again (disturbed), {:.0} s of counted load, {:.0} s in all. Each round is one window of A and one of B; the band is the {:.0}% always-valid interval for the change after each round ({}), the line the estimate. B differs once the band leaves out 0 and reaches past ±{}% (noise); equivalent once it lies inside ±{}% (margin).</p>",
        esc(&d.b.label),
        esc(&d.a.label),
        d.verdict.word(),
        esc(words(d)),
        d.rounds,
        d.rounds_disturbed_rerun,
        d.load_s,
        d.wall_s,
        (1.0 - d.alpha) * 100.0,
        esc(&d.method),
        d.noise_pct,
        d.margin_pct
    );
    for w in &d.warnings {
        let _ = write!(s, "<p class=\"warn\">warning: {}</p>", esc(w));
    }
    if let Some(chart) = chart(d) {
        s.push_str(&chart);
    }
    s.push_str(
        "<details><summary>Rounds</summary><table><tr><th>Round</th><th class=\"l\">First</th>",
    );
    let _ = write!(
        s,
        "<th>A {m}</th><th>B {m}</th><th>Change</th><th class=\"l\">Interval</th><th class=\"l\">Notes</th></tr>",
        m = esc(&d.metric)
    );
    for p in &d.pairs {
        let _ = write!(
            s,
            "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{:+.1}%</td><td class=\"l\">{}</td><td class=\"notes\">{}</td></tr>",
            p.round,
            esc(&p.first),
            figure(p.a.figure),
            figure(p.b.figure),
            p.change_pct,
            interval(p.ci_low_pct, p.ci_high_pct),
            esc(&round_notes(p))
        );
    }
    s.push_str("</table></details></section>\n");
    s
}

/// The interval narrowing round by round; None without a round.
fn chart(d: &AbDocument) -> Option<String> {
    let last = d.pairs.last()?;
    let bounded: Vec<(f64, f64, f64)> = (d.pairs.iter())
        .filter_map(|p| Some((p.round as f64, p.ci_low_pct?, p.ci_high_pct?)))
        .collect();
    let estimate: Vec<(f64, f64)> = (d.pairs.iter())
        .map(|p| (p.round as f64, p.change_pct))
        .collect();
    // The first rounds' intervals are wide: the scale is the thresholds'
    // and the estimates', and a band past it is cut at the edge.
    let reach = (estimate.iter().map(|&(_, c)| c.abs()))
        .chain(
            [d.ci_low_pct, d.ci_high_pct]
                .into_iter()
                .flatten()
                .map(f64::abs),
        )
        .fold(2.0 * d.margin_pct.max(d.noise_pct), |m, v| m.max(1.25 * v))
        .min(100.0);
    let y = Axis::linear(
        -reach,
        reach,
        &format!("change in {}, B against A", d.metric),
        &|v| format!("{v:+.0}%"),
    );
    let rounds: Vec<f64> = d.pairs.iter().map(|p| p.round as f64).collect();
    let round = |v: f64| format!("{v:.0}");
    let x = if rounds.len() <= 12 {
        Axis::at(&rounds, false, "round", &round)
    } else {
        Axis::linear(0.0, last.round as f64, "round", &round)
    };
    let (x0, x1) = (x.min, x.max);
    let mut p = Plot::new(760.0, 320.0, x, y);
    let level = format!("{:.0}% interval", (1.0 - d.alpha) * 100.0);
    p.band(&bounded, PALETTE[0], 0.25, &level);
    // A whisker per round too: one bounded round is a band of no width.
    for &(r, lo, hi) in &bounded {
        p.vwhisker_shift(r, 0.0, lo, hi, PALETTE[0]);
    }
    p.legend(&level, PALETTE[0], false);
    p.line(&[(x0, 0.0), (x1, 0.0)], "#444", 1.0, false, "no change");
    for (v, color, name) in [
        (d.margin_pct, PALETTE[2], "margin"),
        (d.noise_pct, "#888", "noise"),
    ] {
        let label = format!("±{v}% {name}");
        for y in [v, -v] {
            p.line(&[(x0, y), (x1, y)], color, 1.2, true, &label);
        }
        p.legend(&label, color, true);
    }
    p.line(&estimate, PALETTE[1], 2.0, false, "the estimate");
    for &(r, c) in &estimate {
        p.point(r, c, 3.0, PALETTE[1], &format!("round {r:.0}: {c:+.1}%"));
    }
    p.legend("estimate", PALETTE[1], false);
    Some(format!(
        "<div class=\"chart\">{}</div>",
        p.finish("the interval for the change, round by round", false)
    ))
}

/// `sweep --until-verdict`'s lines: each value's verdict against the
/// control, with its change, interval, rounds and load.
pub fn sweep_terminal(control: &str, values: &[(&str, &AbDocument)]) -> String {
    let metric = values
        .first()
        .map_or("throughput", |(_, d)| d.metric.as_str());
    let mut s = format!("Each value against {control} in {metric}, until a verdict:\n");
    let width = values
        .iter()
        .map(|(v, _)| v.chars().count())
        .max()
        .unwrap_or(0);
    for (value, d) in values {
        let _ = writeln!(
            s,
            "  {value:<width$}  {:<10}  {:+.1}% ({})  {} rounds ({} run again), {:.0} s of load{}",
            d.verdict.word(),
            d.change_pct,
            interval(d.ci_low_pct, d.ci_high_pct),
            d.rounds,
            d.rounds_disturbed_rerun,
            d.load_s,
            if d.end == "verdict" {
                String::new()
            } else {
                format!("; {}", d.error.as_deref().unwrap_or(&d.end))
            }
        );
    }
    s
}

/// `sweep --until-verdict`'s Markdown: a row per value.
pub fn sweep_markdown(control: &str, values: &[(&str, &AbDocument)]) -> String {
    let mut s = format!(
        "## Each value against {control}, until a verdict\n\n| Value | Verdict | Change | Interval | Rounds | Run again | Load (s) | Why |\n|:---|:---|---:|:---|---:|---:|---:|:---|\n"
    );
    for (value, d) in values {
        let _ = writeln!(
            s,
            "| {} | {} | {:+.1}% | {} | {} | {} | {:.0} | {} |",
            md_cell(value),
            d.verdict.word(),
            d.change_pct,
            interval(d.ci_low_pct, d.ci_high_pct),
            d.rounds,
            d.rounds_disturbed_rerun,
            d.load_s,
            md_cell(words(d))
        );
    }
    s
}

/// The section, or a note when ab.json does not read; nothing without one.
pub fn section_in(loaded: &Result<Option<AbDocument>, String>) -> Option<String> {
    match loaded {
        Ok(None) => None,
        Ok(Some(d)) => Some(section(d)),
        Err(e) => Some(format!(
            "<section id=\"ab\"><h2>A/B</h2><p class=\"note\">No A/B: {}</p></section>",
            esc(e)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contract() -> AbDocument {
        let text = include_str!("../../tests/contracts/ab-v1.json");
        serde_json::from_str(text).expect("the contract's sample reads")
    }

    #[test]
    fn the_chart_draws_one_band_the_estimate_and_the_thresholds() {
        let d = contract();
        let html = section(&d);
        assert!(
            html.contains("id=\"ab\"") && html.contains("<svg"),
            "{html}"
        );
        assert_eq!(html.matches("<polygon").count(), 1, "{html}");
        // Round 1 has no bounds: the band starts at round 2.
        let needle = "<polygon points=\"";
        let band = &html[html.find(needle).unwrap() + needle.len()..];
        let band = &band[..band.find('"').unwrap()];
        let bounded = d.pairs.iter().filter(|p| p.ci_low_pct.is_some()).count();
        assert_eq!(band.split(' ').count(), 2 * bounded, "{band}");
        assert!(html.contains("±2% margin") && html.contains("±1% noise"));
        assert!(html.contains(&esc(&d.reason)));
        assert_eq!(
            html.matches("<circle").count(),
            d.pairs.len(),
            "a point per round"
        );
    }

    #[test]
    fn the_verdict_line_and_markdown_say_the_verdict_and_every_round() {
        let mut d = contract();
        let line = verdict_line(&d);
        assert!(
            line.starts_with("A/B, A = server=base, B = server=slow: slower: B is 5.7% slower"),
            "{line}"
        );
        assert!(line.ends_with("5 rounds (0 run again, disturbed), 10 s of counted load"));
        let md = markdown(&d);
        assert_eq!(md.lines().filter(|l| l.starts_with("| ")).count(), 1 + 5);
        d.end = "interrupted".into();
        assert!(verdict_line(&d).ends_with("; interrupted"));
        let mut undecided = contract();
        undecided.verdict = Call::Undecided;
        undecided.reason = "undecided: -0.8% after 2 min".into();
        let line = verdict_line(&undecided);
        assert!(
            line.contains("B = server=slow: undecided: -0.8% after 2 min;"),
            "{line}"
        );
        let rows = [("server=slow", &d)];
        let term = sweep_terminal("server=base", &rows);
        assert!(
            term.contains("server=slow  slower      -5.7% (-9.1% to -2.2%)  5 rounds"),
            "{term}"
        );
        assert!(term.ends_with("; interrupted\n"), "{term}");
        let md = sweep_markdown("server=base", &rows);
        assert!(md.contains("| server=slow | slower | -5.7% |"), "{md}");
        d.pairs.clear();
        assert!(chart(&d).is_none());
    }
}
