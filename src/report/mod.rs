//! Reports from a results directory, and from it alone, so any report can
//! be rebuilt later: a terminal table, Markdown (`report.md`), CSV
//! (`report.csv`, one row per trial group; `trials.csv`, one row per trial
//! run), a JSON summary (`report.json`) and one self-contained HTML file
//! (`report.html`: inline SVG charts, no external resources).
//!
//! A directory from an interrupted run or with failed trials still makes a
//! report: every trial the manifest planned is listed, and those without a
//! good record are marked missing, failed or interrupted with the reason.
//!
//! Output is deterministic (sorted, no clock reads) so reports can be
//! compared and snapshot-tested.
//!
//! This file holds the report's types; rows.rs reads a directory into
//! them, json.rs writes report.json, and the other files render.

pub mod ab;
mod budget;
pub mod compare;
mod csv;
mod database;
mod endpoints;
pub mod fit;
pub mod history;
pub mod history_html;
mod html;
mod html_bars;
mod html_breakpoints;
mod html_latency;
mod html_marks;
mod html_runs;
mod html_summary;
mod html_throughput;
mod html_timeline;
mod json;
mod markdown;
mod memory;
pub mod mirror;
pub mod profile;
pub mod profile_diff;
mod restart;
mod rows;
mod runtime;
mod shows;
mod slow;
mod soak;
mod starved;
mod summary;
pub(crate) mod svg;
pub mod sweep;
mod table;
mod text;
mod time_split;

pub use text::{render_summary, table_width};

use crate::lab::trial::TrialRecord;
use crate::load::caveats::Caveats;
use crate::store::records::{front_of, Manifest, PlannedTrial, StoredBreakpoint};
use crate::store::runtime::RanOn;
use crate::store::summary::GroupSummary;
use crate::units::{natural_cmp, num};
use anyhow::Context;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const SCHEMA: &str = "rackbench/report-v1";

/// What became of one planned trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Failed,
    Interrupted,
    /// Planned but no record on disk (not run yet, or unreadable).
    Missing,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Interrupted => "interrupted",
            Status::Missing => "missing",
        }
    }
}

/// One planned trial and what is known of it.
#[derive(Debug, Clone)]
pub struct TrialRow {
    pub planned: PlannedTrial,
    pub status: Status,
    pub reason: Option<String>,
    pub record: Option<TrialRecord>,
}

impl TrialRow {
    pub fn errors(&self) -> u64 {
        self.record.as_ref().map_or(0, |r| r.load.errors.total())
    }
}

/// A trial and its repeats.
#[derive(Debug, Clone)]
pub struct Group {
    pub group: String,
    pub planned: PlannedTrial,
    /// Figures over the good runs; None when no record exists at all.
    pub summary: Option<GroupSummary>,
    pub planned_runs: usize,
    pub ok: usize,
    pub failed: usize,
    pub interrupted: usize,
    pub missing: usize,
    /// The runtimes its records ran on (`store::runtime`); empty when no
    /// record says (made before runtimes).
    pub runtimes: Vec<RanOn>,
    /// Its records' runtime mismatches (asked against ran), once each.
    pub mismatches: Vec<String>,
    /// The budget its runs ran under and what their groups saw
    /// (`store::budget`); None when none ran with one.
    pub budget: Option<crate::store::budget::GroupBudget>,
    /// The slow clients beside its runs and what they saw
    /// (`store::slow`); None when none ran with them.
    pub slow: Option<crate::store::slow::GroupSlow>,
    /// Its figures per endpoint of a mix over its runs
    /// (`store::endpoints`), in the mix's order; empty without a mix.
    pub endpoints: Vec<crate::store::endpoints::GroupEndpoint>,
    /// The database behind its app over its runs (`store::database`);
    /// None when none ran with one.
    pub database: Option<crate::store::database::GroupDatabase>,
    /// Its runs with a fault of the server (`lab::faults`: a worker
    /// died, a worker hung), and each such run's note once.
    pub fault_runs: usize,
    pub fault_notes: Vec<String>,
    /// The connections its good runs left without an answer
    /// (`starved`); None when no good run's record has `load.fairness`.
    pub starved: Option<starved::Starved>,
    /// Each worker's share of the requests (telemetry); None without it.
    pub shares: Option<starved::Shares>,
}

impl Group {
    /// What the good runs' figures cannot be trusted for (see
    /// `load::caveats`); nothing flagged when no run succeeded.
    pub fn caveats(&self) -> Caveats {
        self.good().map_or(Caveats::NONE, |s| s.caveats)
    }

    /// "1 failed, 1 missing" and the caveats in words, or empty.
    pub fn notes(&self) -> String {
        self.notes_with(self.caveats().notes())
    }

    /// [`Group::notes`] with the caveats in a few characters, for labels
    /// drawn on a chart.
    pub fn short_notes(&self) -> String {
        self.notes_with(self.caveats().short().into_iter().collect())
    }

    fn notes_with(&self, caveats: Vec<String>) -> String {
        let mut v = Vec::new();
        if self.failed > 0 {
            v.push(format!("{} failed", self.failed));
        }
        if self.interrupted > 0 {
            v.push(format!("{} interrupted", self.interrupted));
        }
        if self.missing > 0 {
            v.push(format!("{} missing", self.missing));
        }
        let runs = v.join(", ");
        let mut all: Vec<String> = Vec::new();
        if !runs.is_empty() {
            all.push(runs);
        }
        all.extend(self.starved.as_ref().and_then(|s| s.note()));
        all.extend(caveats);
        all.extend(
            self.mismatches
                .iter()
                .map(|m| crate::store::runtime::note(m)),
        );
        all.extend(self.budget.as_ref().and_then(|b| b.kill_note()));
        all.extend(self.fault_note());
        all.join("; ")
    }
    /// "2 of 5 runs disturbed (steal up to 12%)" when the machine
    /// disturbed a good run (`stats::disturbance`). A caveat, not a
    /// failure: kept apart from [`Group::notes`] so a page can show it
    /// quietly; [`Group::all_notes`] joins the two for plain text.
    pub fn disturbed_note(&self) -> Option<String> {
        self.good().and_then(|s| s.disturbance.note())
    }

    /// [`Group::notes`] and [`Group::disturbed_note`], for plain text.
    pub fn all_notes(&self) -> String {
        let mut all: Vec<String> = Some(self.notes())
            .filter(|n| !n.is_empty())
            .into_iter()
            .collect();
        all.extend(self.disturbed_note());
        all.join("; ")
    }

    /// Whether the row is a result: a run succeeded, with at most 1%
    /// errors and some OK response (`Caveats::not_a_result`). Only rows
    /// that are not are painted red; "≥" and "†" are quiet marks. A
    /// group where a worker was killed for memory is not a result either,
    /// nor one whose server had a fault (a worker died or hung), nor one
    /// that left more than 1% of its connections unanswered, as errors
    /// (`starved`).
    pub fn is_result(&self) -> bool {
        self.good().is_some_and(|s| !s.caveats.not_a_result())
            && self.budget.as_ref().is_none_or(|b| b.oom_kills == 0)
            && self.fault_runs == 0
            && self.starved.as_ref().is_none_or(|s| !s.too_many())
    }

    /// Why the row is not a result, in a few words; None when it is one
    /// (or only a kill for memory or a fault says, in its notes).
    pub fn why_not_a_result(&self) -> Option<String> {
        let Some(s) = self.good() else {
            return Some("no good run".into());
        };
        s.caveats.why_not_a_result().or_else(|| {
            (self.starved.as_ref())
                .filter(|s| s.too_many())
                .and_then(|s| s.words())
        })
    }

    /// "fault in 1 of 3 runs: 1 worker died (signal 9)" when a run's
    /// server had a fault (`lab::faults`); None without one.
    pub fn fault_note(&self) -> Option<String> {
        (self.fault_runs > 0).then(|| {
            let runs = self.ok + self.failed + self.interrupted;
            let what: Vec<&str> = (self.fault_notes.iter())
                .map(|n| n.trim_start_matches("fault: "))
                .collect();
            format!(
                "fault in {} of {runs} run{}: {}",
                self.fault_runs,
                if runs == 1 { "" } else { "s" },
                what.join("; ")
            )
        })
    }

    /// The good summary, if any run succeeded.
    pub fn good(&self) -> Option<&GroupSummary> {
        self.summary.as_ref().filter(|s| s.runs > 0)
    }
}

/// Everything a report shows, read from a results directory.
#[derive(Debug, Clone)]
pub struct Report {
    pub manifest: Option<Manifest>,
    /// Sorted like the groups, then by repeat.
    pub trials: Vec<TrialRow>,
    /// Sorted by app, front, load shape, then server variant.
    pub groups: Vec<Group>,
    /// Sorted by group name.
    pub breakpoints: Vec<StoredBreakpoint>,
    /// Break-point searches the manifest planned with no record.
    pub missing_breakpoints: Vec<String>,
    /// Problems reading the directory (unreadable files, no manifest).
    pub warnings: Vec<String>,
    /// The groups with a profiled run (`store::profiles`), by name.
    pub profiles: Vec<crate::store::profiles::GroupProfile>,
}

/// The files `write_all` wrote, and the terminal table.
#[derive(Debug, Clone)]
pub struct Written {
    pub table: String,
    pub markdown: PathBuf,
    pub csv: PathBuf,
    pub trials_csv: PathBuf,
    pub json: PathBuf,
    pub html: PathBuf,
}

impl Written {
    pub fn paths(&self) -> [&Path; 5] {
        [
            &self.markdown,
            &self.csv,
            &self.trials_csv,
            &self.json,
            &self.html,
        ]
    }
}

/// Reads `dir` and writes report.md, report.csv, trials.csv, report.json
/// and the HTML report (to `html`, or `dir/report.html`). Returns the
/// paths and the terminal table (not printed).
pub fn write_all(dir: &Path, html: Option<&Path>) -> anyhow::Result<Written> {
    write_study(&crate::store::study::Study::open(dir)?, html)
}

/// `write_all` for a study already open (the runner's, at the end of a
/// run).
pub fn write_study(
    study: &crate::store::study::Study,
    html: Option<&Path>,
) -> anyhow::Result<Written> {
    let report = Report::of(study)?;
    let dir = study.dir();
    let html_path = html.map_or_else(|| dir.report_html(), Path::to_path_buf);
    let ab = ab::load(study);
    let mut table = report.terminal_with_profiles();
    if let Ok(Some(d)) = &ab {
        table.push_str(&format!("\n{}\n", ab::verdict_line(d)));
    }
    let written = Written {
        table,
        markdown: dir.report_md(),
        csv: dir.report_csv(),
        trials_csv: dir.trials_csv(),
        json: dir.report_json(),
        html: html_path,
    };
    let write = |p: &Path, s: String| {
        if let Some(parent) = p.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(p, s).with_context(|| format!("cannot write {}", p.display()))
    };
    let sweep = sweep::load(study);
    let mut markdown = report.markdown();
    if let Ok(Some(d)) = &ab {
        markdown.push('\n');
        markdown.push_str(&ab::markdown(d));
    }
    if let Ok(Some(s)) = &sweep {
        markdown.push('\n');
        markdown.push_str(&sweep::markdown(s));
    }
    write(&written.markdown, markdown)?;
    write(&written.csv, report.csv())?;
    write(&written.trials_csv, report.trials_csv())?;
    write(&written.json, report.json()?)?;
    let studies = [
        ab::section_in(&ab),
        compare::section_in(study.comparison()),
        sweep::section_in(&sweep),
    ];
    let studies: Vec<String> = studies.into_iter().flatten().collect();
    write(&written.html, report.page(&studies))?;
    Ok(written)
}

/// A break-point search's front: the full label when the record carries
/// its planned trial, "nginx" or "direct" for older records.
pub fn breakpoint_front(b: &StoredBreakpoint) -> String {
    b.planned
        .as_ref()
        .map_or_else(|| front_of(&b.behind), PlannedTrial::front)
}

/// "16 conn" or "500 req/s".
pub fn load_label(p: &PlannedTrial) -> String {
    match p.shape.rate {
        Some(r) => format!("{} req/s", num(r)),
        None => format!("{} conn", p.shape.connections),
    }
}

/// The seconds of a load's timeline that had errors, as "4s: 12, 5s: 3".
pub fn error_seconds(load: &crate::load::LoadReport) -> String {
    let secs: Vec<String> = load
        .timeline
        .iter()
        .filter(|row| row.errors > 0)
        .map(|row| format!("{}s: {}", row.t_s, row.errors))
        .collect();
    secs.join(", ")
}

/// The first line of a reason, at most `max` characters.
pub fn short(reason: &str, max: usize) -> String {
    let line = reason.lines().next().unwrap_or("").trim();
    if line.chars().count() > max {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else if reason.trim().lines().count() > 1 {
        format!("{line} …")
    } else {
        line.to_string()
    }
}

impl Report {
    /// Trials with no good record (failed, interrupted, missing).
    pub fn incomplete(&self) -> Vec<&TrialRow> {
        self.trials
            .iter()
            .filter(|t| t.status != Status::Ok)
            .collect()
    }

    /// Counts of trials by status.
    pub fn counts(&self) -> BTreeMap<Status, usize> {
        let mut m = BTreeMap::new();
        for t in &self.trials {
            *m.entry(t.status).or_insert(0) += 1;
        }
        m
    }

    /// Server variants in sorted order (chart colours follow it).
    pub fn variants(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .groups
            .iter()
            .map(|g| g.planned.variant.clone())
            .collect();
        v.extend(self.breakpoints.iter().map(|b| b.variant.clone()));
        v.sort_by(|a, b| natural_cmp(a, b));
        v.dedup();
        v
    }

    /// (app, front) pairs in order, with their groups.
    pub fn sections(&self) -> Vec<((String, String), Vec<&Group>)> {
        let mut out: Vec<((String, String), Vec<&Group>)> = Vec::new();
        for g in &self.groups {
            let key = (g.planned.app.clone(), g.planned.front());
            match out.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(g),
                None => out.push((key, vec![g])),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::json::trial_json;
    use super::rows::{group_rows, trial_rows};
    use super::*;
    use crate::store::records::StoredTrial;

    /// Issue 36: a run whose worker died is marked in every report: its
    /// group's notes (the terminal's, Markdown's and CSV's), painted as no
    /// result (HTML), its trial's notes (trials.csv) and its `faults` in
    /// report.json. It once read as a clean run.
    #[test]
    fn a_run_with_a_worker_death_is_a_fault_in_every_report() {
        use crate::store::summary::summarize_trials;
        let v = crate::store::figures::tests::stored(|v| {
            v["trial"]["faults"]["worker_deaths"] = serde_json::json!([{
                "pid": 4242, "signal": 9, "exit_status": null, "at_s": 2.1,
                "replaced_by": 4250, "replaced_after_ms": 800,
                "connections_reset": 5, "cmdline": "puma: cluster worker 0: 4240"
            }]);
        });
        let t: StoredTrial = serde_json::from_value(v).unwrap();
        let summaries: BTreeMap<String, GroupSummary> = summarize_trials(std::slice::from_ref(&t))
            .into_iter()
            .map(|s| (s.group.clone(), s))
            .collect();
        let trials = trial_rows(None, BTreeMap::from([(t.id.clone(), t)]), &BTreeMap::new());
        let groups = group_rows(&trials, &summaries);
        let g = &groups[0];
        assert_eq!(g.fault_runs, 1);
        assert!(
            g.all_notes()
                .contains("fault in 1 of 1 run: 1 worker died (signal 9)"),
            "{}",
            g.all_notes()
        );
        assert!(!g.is_result(), "a fault is no clean result");
        let j = trial_json(&trials[0]);
        assert_eq!(j["faults"]["worker_deaths"][0]["pid"], 4242, "{j}");
        assert!(
            j["notes"]
                .to_string()
                .contains("fault: 1 worker died (signal 9)"),
            "{j}"
        );
        let sentence = j["fault_sentences"][0].as_str().unwrap();
        assert!(sentence.starts_with("worker 4242 died at 2.1 s (signal 9); the master replaced it in 800 ms (pid 4250); 5 connections reset"), "{sentence}");
        let record = trials[0].record.as_ref().unwrap();
        assert!(runtime::record_notes(record)
            .iter()
            .any(|n| n.contains("worker died")));
    }
}
