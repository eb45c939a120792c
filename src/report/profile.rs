//! "Why: profiles" (issue 40): where a profiled trial's CPU went, from
//! the record's `profile` and its merged on-CPU collapsed stacks. The
//! trial's terminal lines live here too, so the top frames read the same
//! wherever they are shown.

use super::svg::esc;
use super::table::{Align, Cell, Column, Kind, Row, Table, Width};
use super::Report;
use crate::profile::Profile;
use crate::store::profiles::GroupProfile;
use std::fmt::Write;

/// How many frames the terminal and the trial's lines list.
pub const TOP_SHOWN: usize = 5;

/// "1 process", "3 processes".
fn processes(p: &Profile) -> String {
    match p.processes.len() {
        1 => "1 process".into(),
        n => format!("{n} processes"),
    }
}

/// "rbspy used 0.42 CPU-s: 3.1% of the server's CPU, 1.0% of the
/// machine's", or None for a record made before the figure existed.
pub fn cost(p: &Profile) -> Option<String> {
    let o = p.overhead.as_ref()?;
    let server = o.per_server_cpu.map_or(String::new(), |r| {
        format!("{:.1}% of the server's CPU, ", r * 100.0)
    });
    Some(format!(
        "rbspy used {:.2} CPU-s: {server}{:.1}% of the machine's",
        o.profiler_cpu_s,
        o.machine_share * 100.0
    ))
}

/// A trial's profile on the terminal: where its files are, the sample
/// count and rate, and the top frames by on-CPU self share.
pub fn trial_lines(p: &Profile, results_dir: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  profile:     {} on-CPU samples at {} Hz from {} ({}), {} wall-clock",
        p.samples,
        p.rate_hz,
        processes(p),
        p.profiler,
        p.wall_clock.samples
    );
    let dir = (p.files.first())
        .and_then(|f| std::path::Path::new(&f.path).parent())
        .map(|d| format!("{}/{}", results_dir.trim_end_matches('/'), d.display()))
        .unwrap_or_else(|| results_dir.to_string());
    if let Some(cost) = cost(p) {
        let _ = writeln!(s, "               {cost}");
    }
    let _ = writeln!(s, "               files in {dir}");
    let _ = writeln!(s, "               self   total  frame (on-CPU)");
    for t in p.top.iter().take(TOP_SHOWN) {
        let _ = writeln!(
            s,
            "               {:>5.1}% {:>5.1}%  {}",
            t.self_share * 100.0,
            t.total_share * 100.0,
            t.frame
        );
    }
    s
}

/// The top frames as a table: frame, self %, total % (on-CPU).
fn top_table(p: &Profile, n: usize) -> Table {
    let columns = vec![
        Column::new(Kind::Text, Align::Left)
            .term("frame (on-CPU)", Width::Fit)
            .page("Frame (on-CPU)"),
        Column::new(Kind::Percent, Align::Right)
            .term("self", Width::Fit)
            .page("Self"),
        Column::new(Kind::Percent, Align::Right)
            .term("total", Width::Fit)
            .page("Total"),
    ];
    let rows = (p.top.iter().take(n))
        .map(|t| {
            Row::new(vec![
                Cell::text(t.frame.clone()),
                Cell::num(Some(t.self_share)),
                Cell::num(Some(t.total_share)),
            ])
        })
        .collect();
    Table {
        columns,
        rows,
        class: Some("profile-top".into()),
        caption: None,
        wide: true,
    }
}

/// The group's heading: server, app, front, load.
fn title(r: &Report, gp: &GroupProfile) -> String {
    match r.groups.iter().find(|g| g.group == gp.group) {
        Some(g) => format!(
            "{} · {} · {} · {}",
            g.planned.variant,
            g.planned.app,
            g.planned.front(),
            super::load_label(&g.planned)
        ),
        None => gp.group.clone(),
    }
}

/// The figures line under a group's heading.
fn figures(gp: &GroupProfile) -> String {
    let p = &gp.profile;
    let mut s = format!(
        "{} on-CPU samples at {} Hz from {} ({}), {} wall-clock; repeat {}",
        p.samples,
        p.rate_hz,
        processes(p),
        p.profiler,
        p.wall_clock.samples,
        gp.trial
    );
    for note in (cost(p).into_iter())
        .chain(gp.mixed_note())
        .chain(gp.errors.iter().cloned())
    {
        let _ = write!(s, "; {note}");
    }
    s
}

/// The HTML section: per group, its flame graph and its top frames.
pub fn html(s: &mut String, r: &Report) {
    if r.profiles.is_empty() {
        return;
    }
    s.push_str("<section id=\"profiles\"><h2>Why: profiles</h2>");
    s.push_str(
        "<p class=\"note\">Where each server's CPU went over the counted window: every Ruby process of its tree sampled by rbspy, workers merged (docs/PROFILES.md). A box's width is its share of the on-CPU samples; boxes stack from the outermost call up.</p>",
    );
    for gp in in_order(r) {
        let t = title(r, gp);
        let _ = write!(
            s,
            "<h3>{}</h3><p class=\"note\">{}</p>",
            esc(&t),
            esc(&figures(gp))
        );
        flame(s, &gp.on_cpu, &format!("{t}: on-CPU"));
        s.push_str(&top_table(&gp.profile, TOP_TABLE).html());
        s.push_str("<p class=\"note\">Wall clock: every sample, whether the thread ran or waited (on IO, the GVL, a pool, a sleep), so a box's width is its share of the time.</p>");
        flame(s, &gp.wall_clock, &format!("{t}: wall clock"));
    }
    s.push_str("</section>\n");
}

/// A flame graph of a view's merged stacks, or why there is none.
fn flame(s: &mut String, stacks: &Result<String, String>, title: &str) {
    match stacks {
        Ok(text) => s.push_str(&crate::profile::flame::svg(text, title, 960)),
        Err(why) => {
            let _ = write!(s, "<p class=\"note\">no flame graph: {}</p>", esc(why));
        }
    }
}

/// The profiles in the groups' order.
fn in_order(r: &Report) -> Vec<&GroupProfile> {
    (r.groups.iter())
        .filter_map(|g| r.profiles.iter().find(|p| p.group == g.group))
        .collect()
}

/// How many frames the Markdown and HTML tables list.
const TOP_TABLE: usize = 10;

/// The Markdown section: per group, its figures and top frames.
pub fn markdown(s: &mut String, r: &Report) {
    if r.profiles.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Why: profiles\n");
    for gp in in_order(r) {
        let _ = writeln!(s, "### {}\n\n{}\n", title(r, gp), figures(gp));
        s.push_str(&top_table(&gp.profile, TOP_TABLE).markdown());
        s.push('\n');
    }
}

impl Report {
    /// The terminal table (`Report::terminal`), then the profiles' lines.
    pub fn terminal_with_profiles(&self) -> String {
        self.terminal() + &terminal(self)
    }
}

/// The terminal's lines: per group, its figures and top frames.
fn terminal(r: &Report) -> String {
    let mut s = String::new();
    if r.profiles.is_empty() {
        return s;
    }
    let _ = writeln!(s, "\nwhy: profiles (on-CPU, docs/PROFILES.md)");
    for gp in in_order(r) {
        let _ = writeln!(s, "  {}\n  {}", title(r, gp), figures(gp));
        for line in top_table(&gp.profile, TOP_SHOWN).terminal_lines().lines() {
            let _ = writeln!(s, "    {line}");
        }
    }
    s
}
