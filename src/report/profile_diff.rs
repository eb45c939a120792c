//! "Why: the difference" (issue 40): per group both sides profiled
//! (`compare`'s A and B, the A/B's sides), the frames whose own CPU moved
//! most from A to B, in points of self share and in CPU per request (the
//! share times the side's server CPU per request: a frame that keeps its
//! work while another grows keeps its milliseconds, though its share
//! falls), as a table in every format and, in HTML, B's flame graph
//! coloured by the change (red grew, blue shrank).

use super::svg::esc;
use super::table::{Align, Cell, Column, Kind, Row, Table, Width};
use crate::profile::flame::diff_svg;
use crate::store::profiles::{ProfileDifference, SideStacks};
use std::fmt::Write;

fn signed(v: Option<f64>, decimals: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:+.decimals$}"))
}

/// Milliseconds: two decimals, four under 1 ms (hello's whole request
/// takes a few hundredths).
fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.*}", ms_decimals(v)))
}

fn ms_decimals(v: f64) -> usize {
    if v.abs() < 1.0 {
        4
    } else {
        2
    }
}

/// The changes as a table.
fn table(d: &ProfileDifference) -> Table {
    let text = |align, term: &str, page: &str| {
        Column::new(Kind::Text, align)
            .term(term, Width::Fit)
            .page(page)
    };
    let share = |term: &str, page: &str| {
        Column::new(Kind::Percent, Align::Right)
            .term(term, Width::Fit)
            .page(page)
    };
    let columns = vec![
        text(
            Align::Left,
            "frame (own on-CPU work)",
            "Frame (own on-CPU work)",
        ),
        share("self A", "Self A"),
        share("self B", "Self B"),
        text(Align::Right, "points", "Change (points)"),
        text(Align::Right, "ms/req A", "CPU ms/request A"),
        text(Align::Right, "ms/req B", "CPU ms/request B"),
        text(Align::Right, "ms/req", "Change (ms/request)"),
    ];
    let rows = (d.changes.iter())
        .map(|c| {
            Row::new(vec![
                Cell::text(c.readable()),
                Cell::num(Some(c.self_share_a)),
                Cell::num(Some(c.self_share_b)),
                Cell::text(signed(Some(c.self_change_points), 1)),
                Cell::text(ms(c.cpu_ms_per_request_a)),
                Cell::text(ms(c.cpu_ms_per_request_b)),
                Cell::text(signed(
                    c.cpu_change_ms(),
                    c.cpu_change_ms().map_or(2, ms_decimals),
                )),
            ])
        })
        .collect();
    Table {
        columns,
        rows,
        class: Some("profile-difference".into()),
        caption: None,
        wide: true,
    }
}

/// One side in words: runs, samples' CPU per request.
fn side(name: &str, s: &SideStacks) -> String {
    let mut out = format!(
        "{name}: {} profiled run{}, server CPU {} ms/request",
        s.runs,
        if s.runs == 1 { "" } else { "s" },
        ms(s.cpu_ms_per_request)
    );
    for why in &s.unreadable {
        let _ = write!(out, " ({why})");
    }
    out
}

/// The line under a group's heading.
fn figures(d: &ProfileDifference) -> String {
    format!(
        "{}; {}. Ranked by the change of each frame's own CPU per request (its self share × its side's server CPU per request), or of its self share where a side's CPU is not known.",
        side("A", &d.a),
        side("B", &d.b)
    )
}

/// The terminal's lines; nothing without a difference.
pub fn terminal(ds: &[ProfileDifference]) -> String {
    let mut s = String::new();
    if ds.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "\nwhy: where the CPU moved from A to B (profiles, docs/PROFILES.md)"
    );
    for d in ds {
        let _ = writeln!(s, "  {}\n  {}", d.group, figures(d));
        for line in table(d).terminal_lines().lines() {
            let _ = writeln!(s, "    {line}");
        }
    }
    s
}

/// The Markdown section; nothing without a difference.
pub fn markdown(ds: &[ProfileDifference]) -> String {
    let mut s = String::new();
    if ds.is_empty() {
        return s;
    }
    let _ = writeln!(s, "\n## Why: where the CPU moved from A to B\n");
    for d in ds {
        let _ = writeln!(s, "### {}\n\n{}\n", d.group, figures(d));
        s.push_str(&table(d).markdown());
        s.push('\n');
    }
    s
}

/// The HTML section: per group, the differential flame graph and the
/// table; nothing without a difference.
pub fn html(ds: &[ProfileDifference]) -> String {
    let mut s = String::new();
    if ds.is_empty() {
        return s;
    }
    s.push_str("<section id=\"profile-difference\"><h2>Why: where the CPU moved from A to B</h2>");
    s.push_str(
        "<p class=\"note\">B's on-CPU flame graph, each frame coloured by how its share of the samples moved from A's: red grew, blue shrank, white kept its share (docs/PROFILES.md).</p>",
    );
    for d in ds {
        let _ = write!(
            s,
            "<h3>{}</h3><p class=\"note\">{}</p>",
            esc(&d.group),
            esc(&figures(d))
        );
        s.push_str(&diff_svg(
            &d.a.collapsed,
            &d.b.collapsed,
            &format!("{}: A to B, on-CPU", d.group),
            960,
        ));
        s.push_str(&table(d).html());
    }
    s.push_str("</section>\n");
    s
}

/// The A/B's difference (side A's group against side B's, each named
/// by its label), written beside its report as profile-difference.md and
/// profile-difference.html; the terminal's lines, or None when the two
/// sides were not both profiled.
pub fn write_ab(
    study: &crate::store::study::Study,
    (a_group, a_label): (&str, &str),
    (b_group, b_label): (&str, &str),
) -> anyhow::Result<Option<String>> {
    use crate::store::profiles::{difference, side_stacks};
    let merged = |group: &str| -> anyhow::Result<Option<SideStacks>> {
        let by_key = side_stacks(study, |t| t.group == group).map_err(anyhow::Error::msg)?;
        Ok(by_key.into_values().next())
    };
    let (Some(a), Some(b)) = (merged(a_group)?, merged(b_group)?) else {
        return Ok(None);
    };
    let d = vec![difference(&format!("A = {a_label}, B = {b_label}"), a, b)];
    let root = study.root();
    let write = |name: &str, text: String| {
        let path = root.join(name);
        std::fs::write(&path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
    };
    write("profile-difference.md", markdown(&d))?;
    write(
        "profile-difference.html",
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rackbench ab: profile difference</title><style>body{{font-family:sans-serif;margin:24px;max-width:1000px}}.note{{color:#555}}</style></head><body>{}</body></html>\n",
            html(&d)
        ),
    )?;
    Ok(Some(terminal(&d)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::profiles::difference;

    fn stacks(text: &str, cpu: f64) -> SideStacks {
        SideStacks {
            collapsed: text.into(),
            runs: 1,
            cpu_ms_per_request: Some(cpu),
            unreadable: Vec::new(),
        }
    }

    fn sample() -> ProfileDifference {
        let a = "<main>_-_app.ru;spend_a_-_app.ru 30\n<main>_-_app.ru;spend_b_-_app.ru 10\n";
        let b = "<main>_-_app.ru;spend_a_-_app.ru 30\n<main>_-_app.ru;spend_b_-_app.ru 30\n";
        difference(
            "two_methods direct connections=2",
            stacks(a, 8.0),
            stacks(b, 12.0),
        )
    }

    #[test]
    fn the_frame_that_grew_leads_in_every_format_with_its_milliseconds() {
        let d = vec![sample()];
        let term = terminal(&d);
        let first = term.lines().find(|l| l.contains("app.ru")).unwrap();
        assert!(first.contains("spend_b - app.ru"), "{term}");
        // spend_b: 25% of 8 ms → 50% of 12 ms: 2 → 6 ms, +25 points.
        assert!(
            first.contains("+25.0") && first.contains("+4.00"),
            "{first}"
        );
        let md = markdown(&d);
        assert!(md.contains("| spend_b - app.ru | 25.0% | 50.0% | +25.0 | 2.00 | 6.00 | +4.00 |"));
        // spend_a: 75% of 8 ms → 50% of 12 ms, unchanged: four decimals.
        assert!(
            md.contains("| spend_a - app.ru | 75.0% | 50.0% | -25.0 | 6.00 | 6.00 | +0.0000 |"),
            "{md}"
        );
        let html = html(&d);
        assert!(html.contains("class=\"flame\"") && html.contains("profile-difference"));
        assert!(!html.contains("<main>_") && !html.contains("<main> -"));
    }

    #[test]
    fn no_difference_no_section() {
        assert_eq!(terminal(&[]), "");
        assert_eq!(markdown(&[]), "");
        assert_eq!(html(&[]), "");
    }
}
