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

mod budget;
pub mod compare;
mod csv;
mod database;
mod endpoints;
pub mod fit;
mod html;
mod html_bars;
mod html_breakpoints;
mod html_latency;
mod html_marks;
mod html_runs;
mod html_summary;
mod html_throughput;
mod html_timeline;
mod markdown;
mod memory;
pub mod mirror;
mod restart;
mod runtime;
mod shows;
mod slow;
mod soak;
pub(crate) mod svg;
pub mod sweep;
mod table;
mod text;
mod time_split;

pub use text::{render_summary, table_width};

use crate::lab::trial::TrialRecord;
use crate::load::caveats::Caveats;
use crate::store::figures::TrialFigures;
use crate::store::records::{
    front_of, Manifest, Outcome, PlannedTrial, StoredBreakpoint, StoredTrial,
};
use crate::store::runtime::RanOn;
use crate::store::summary::{summarize_trials, GroupSummary};
use crate::store::ResultsDir;
use crate::units::{natural_cmp, num};
use anyhow::{bail, Context};
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
    /// nor one whose server had a fault (a worker died or hung).
    pub fn is_result(&self) -> bool {
        self.good().is_some_and(|s| !s.caveats.not_a_result())
            && self.budget.as_ref().is_none_or(|b| b.oom_kills == 0)
            && self.fault_runs == 0
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
    let report = Report::load(dir)?;
    let html_path = html.map_or_else(|| dir.join("report.html"), Path::to_path_buf);
    let written = Written {
        table: report.terminal(),
        markdown: dir.join("report.md"),
        csv: dir.join("report.csv"),
        trials_csv: dir.join("trials.csv"),
        json: dir.join("report.json"),
        html: html_path,
    };
    let write = |p: &Path, s: String| {
        if let Some(parent) = p.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(p, s).with_context(|| format!("cannot write {}", p.display()))
    };
    let mut markdown = report.markdown();
    if let Ok(Some(s)) = sweep::load(dir) {
        markdown.push('\n');
        markdown.push_str(&sweep::markdown(&s));
    }
    write(&written.markdown, markdown)?;
    write(&written.csv, report.csv())?;
    write(&written.trials_csv, report.trials_csv())?;
    write(&written.json, report.json()?)?;
    let html = compare::with_section(report.html(), dir);
    write(&written.html, sweep::with_section(html, dir))?;
    Ok(written)
}

fn sort_key(p: &PlannedTrial) -> (String, String, String, bool, usize, u64, String) {
    (
        p.app.clone(),
        p.behind.clone(),
        p.front(),
        p.shape.rate.is_some(),
        p.shape.connections,
        p.shape.rate.map_or(0, |r| (r * 1000.0) as u64),
        p.variant.clone(),
    )
}

/// Report order of planned trials: app, front, load shape, then server
/// variant, names in natural order (`units::natural_cmp`: "puma-w2"
/// before "puma-w16").
fn planned_order(a: &PlannedTrial, b: &PlannedTrial) -> std::cmp::Ordering {
    let (x, y) = (sort_key(a), sort_key(b));
    natural_cmp(&x.0, &y.0)
        .then_with(|| natural_cmp(&x.1, &y.1))
        .then_with(|| natural_cmp(&x.2, &y.2))
        .then_with(|| (x.3, x.4, x.5).cmp(&(y.3, y.4, y.5)))
        .then_with(|| natural_cmp(&x.6, &y.6))
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

/// One row per trial the manifest planned, then per record it did not
/// (an older plan's), each with its status and reason, in report order.
fn trial_rows(
    manifest: Option<&Manifest>,
    mut stored: BTreeMap<String, StoredTrial>,
    unreadable: &BTreeMap<String, String>,
) -> Vec<TrialRow> {
    let mut planned: Vec<PlannedTrial> = manifest.map(|m| m.trials.clone()).unwrap_or_default();
    for t in stored.values() {
        if !planned.iter().any(|p| p.id == t.id) {
            planned.push(t.planned.clone());
        }
    }
    let mut trials: Vec<TrialRow> = planned
        .into_iter()
        .map(|p| match stored.remove(&p.id) {
            Some(t) => TrialRow {
                status: match t.outcome {
                    Outcome::Ok => Status::Ok,
                    Outcome::Failed => Status::Failed,
                    Outcome::Interrupted => Status::Interrupted,
                },
                reason: t.error.clone().or_else(|| match t.outcome {
                    Outcome::Ok => None,
                    Outcome::Failed => Some("failed (no reason recorded)".into()),
                    Outcome::Interrupted => Some("interrupted (Ctrl-C)".into()),
                }),
                record: t.trial,
                planned: p,
            },
            None => TrialRow {
                reason: Some(match unreadable.get(&p.id) {
                    Some(e) => format!("record unreadable: {e}"),
                    None => "not run: no record in trials/".into(),
                }),
                status: Status::Missing,
                record: None,
                planned: p,
            },
        })
        .collect();
    trials.sort_by(|a, b| {
        planned_order(&a.planned, &b.planned)
            .then_with(|| natural_cmp(&a.planned.group, &b.planned.group))
            .then(a.planned.repeat.cmp(&b.planned.repeat))
            .then(a.planned.id.cmp(&b.planned.id))
    });
    trials
}

/// The groups of repeats, in the rows' order, with their summary and
/// counts by status.
fn group_rows(trials: &[TrialRow], summaries: &BTreeMap<String, GroupSummary>) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for t in trials {
        if groups.last().is_none_or(|g| g.group != t.planned.group) {
            groups.push(Group {
                group: t.planned.group.clone(),
                planned: t.planned.clone(),
                summary: summaries.get(&t.planned.group).cloned(),
                planned_runs: 0,
                ok: 0,
                failed: 0,
                interrupted: 0,
                missing: 0,
                runtimes: Vec::new(),
                mismatches: Vec::new(),
                budget: None,
                slow: None,
                endpoints: Vec::new(),
                database: None,
                fault_runs: 0,
                fault_notes: Vec::new(),
            });
        }
        let g = groups.last_mut().expect("pushed above");
        g.planned_runs += 1;
        match t.status {
            Status::Ok => g.ok += 1,
            Status::Failed => g.failed += 1,
            Status::Interrupted => g.interrupted += 1,
            Status::Missing => g.missing += 1,
        }
    }
    for g in &mut groups {
        let records: Vec<&TrialRecord> = trials
            .iter()
            .filter(|t| t.planned.group == g.group)
            .filter_map(|t| t.record.as_ref())
            .collect();
        g.runtimes = crate::store::runtime::ran_on(records.iter().copied());
        g.mismatches = crate::store::runtime::mismatches(records.iter().copied());
        for n in records.iter().filter_map(|r| r.faults.note()) {
            g.fault_runs += 1;
            if !g.fault_notes.contains(&n) {
                g.fault_notes.push(n);
            }
        }
        let figs: Vec<TrialFigures> = records.iter().map(|r| TrialFigures::of(r)).collect();
        let runs: Vec<(crate::store::budget::TrialBudget, f64)> = figs
            .iter()
            .filter_map(|f| f.budget.clone().map(|b| (b, f.window_s)))
            .collect();
        g.budget = crate::store::budget::GroupBudget::of(&runs);
        let slow: Vec<crate::store::slow::TrialSlow> =
            figs.iter().filter_map(|f| f.slow.clone()).collect();
        g.slow = crate::store::slow::GroupSlow::of(&slow);
        let endpoints: Vec<Vec<crate::store::endpoints::TrialEndpoint>> =
            figs.iter().map(|f| f.endpoints.clone()).collect();
        g.endpoints = crate::store::endpoints::GroupEndpoint::of(&endpoints);
        let databases: Vec<crate::store::database::DatabaseRun> = figs
            .iter()
            .filter_map(|f| {
                f.database
                    .clone()
                    .map(|database| crate::store::database::DatabaseRun {
                        database,
                        window_s: f.window_s,
                        requests: f.throughput_rps * f.window_s,
                    })
            })
            .collect();
        g.database = crate::store::database::GroupDatabase::of(&databases);
    }
    groups
}

/// The break-point records by group, and the groups the manifest planned
/// a search for that left none.
fn read_breakpoints(
    rd: &ResultsDir,
    manifest: Option<&Manifest>,
    warnings: &mut Vec<String>,
) -> anyhow::Result<(Vec<StoredBreakpoint>, Vec<String>)> {
    let mut breakpoints = rd.read_breakpoints(warnings)?;
    breakpoints.sort_by(|a, b| natural_cmp(&a.group, &b.group));
    let missing = manifest
        .map(|m| {
            let mut v: Vec<String> = m
                .breakpoints
                .iter()
                .filter(|g| !breakpoints.iter().any(|b| &b.group == *g))
                .cloned()
                .collect();
            v.sort_by(|a, b| natural_cmp(a, b));
            v
        })
        .unwrap_or_default();
    Ok((breakpoints, missing))
}

impl Report {
    /// Trials with no good record (failed, interrupted, missing).
    pub fn incomplete(&self) -> Vec<&TrialRow> {
        self.trials
            .iter()
            .filter(|t| t.status != Status::Ok)
            .collect()
    }

    /// Reads the manifest, every trial record and every break point: one
    /// row per planned trial (a record on disk, or why there is none), the
    /// groups with their summaries, the searches and those missing. What
    /// cannot be read becomes a warning, not an error, unless nothing is
    /// left to report.
    pub fn load(dir: &Path) -> anyhow::Result<Report> {
        let rd = ResultsDir::open(dir)?;
        let mut warnings = Vec::new();
        let manifest = rd.read_manifest(&mut warnings);
        let read = rd
            .read_trials()
            .with_context(|| format!("cannot read the trials in {}", dir.display()))?;
        warnings.extend(read.warnings());
        let summaries: BTreeMap<String, GroupSummary> = summarize_trials(&read.stored)
            .into_iter()
            .map(|g| (g.group.clone(), g))
            .collect();
        let unreadable: BTreeMap<String, String> = read.unreadable.into_iter().collect();
        let stored: BTreeMap<String, StoredTrial> =
            read.stored.into_iter().map(|t| (t.id.clone(), t)).collect();
        if manifest.is_none() && stored.is_empty() {
            bail!(
                "{} holds no manifest.json and no trials/*.json: not a rackbench results directory",
                dir.display()
            );
        }
        let trials = trial_rows(manifest.as_ref(), stored, &unreadable);
        let groups = group_rows(&trials, &summaries);
        let (breakpoints, missing_breakpoints) =
            read_breakpoints(&rd, manifest.as_ref(), &mut warnings)?;
        warnings.sort();
        Ok(Report {
            manifest,
            trials,
            groups,
            breakpoints,
            missing_breakpoints,
            warnings,
        })
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

    /// The JSON summary (`rackbench/report-v1`).
    pub fn json(&self) -> anyhow::Result<String> {
        let groups: Vec<serde_json::Value> = self
            .groups
            .iter()
            .map(|g| {
                let mut v = serde_json::json!({
                    "group": g.group,
                    "server": g.planned.server,
                    "variant": g.planned.variant,
                    "app": g.planned.app,
                    "behind": g.planned.behind,
                    "nginx_workers": g.planned.nginx_workers,
                    "nginx_keepalive": g.planned.nginx_keepalive,
                    "nginx_http": g.planned.nginx_http,
                    "instances": g.planned.instances.unwrap_or(1),
                    "front": g.planned.front(),
                    "connections": g.planned.shape.connections,
                    "rate": g.planned.shape.rate,
                    "planned_runs": g.planned_runs,
                    "ok": g.ok,
                    "failed": g.failed,
                    "interrupted": g.interrupted,
                    "missing": g.missing,
                    "runtime": crate::store::runtime::labels(&g.runtimes),
                    "runtime_mismatches": g.mismatches,
                    "summary": g.good(),
                });
                // Only with a budget: a study without one reads as before.
                if let Some(b) = &g.budget {
                    v["budget"] = serde_json::json!(b);
                    v["notes"] = serde_json::json!(g.all_notes());
                }
                // Only with a fault, likewise.
                if g.fault_runs > 0 {
                    v["fault_runs"] = serde_json::json!(g.fault_runs);
                    v["notes"] = serde_json::json!(g.all_notes());
                }
                // Only with slow clients, likewise.
                if let Some(w) = &g.slow {
                    v["slow_clients"] = serde_json::json!(w);
                }
                // Only with a mix, likewise.
                if !g.endpoints.is_empty() {
                    v["endpoints"] = serde_json::json!(g.endpoints);
                }
                // Only with a database, likewise.
                if let Some(d) = &g.database {
                    v["database"] = serde_json::json!(d);
                }
                v
            })
            .collect();
        let trials: Vec<serde_json::Value> = self.trials.iter().map(trial_json).collect();
        let bps: Vec<serde_json::Value> = self
            .breakpoints
            .iter()
            .map(|b| {
                serde_json::json!({
                    "group": b.group,
                    "server": b.server,
                    "variant": b.variant,
                    "app": b.app,
                    "behind": b.behind,
                    "mode": b.mode,
                    "level": b.result.level,
                    "throughput_rps": b.throughput_rps,
                    "failed_at": b.result.failed_at,
                    "capped": b.result.capped,
                    "confirmed": b.result.confirmed,
                    "steps": b.result.steps.len(),
                    "load_seconds": b.load_seconds,
                    "settle_seconds": b.result.settle_seconds(),
                    "why_failed": b.result.why_failed(),
                })
            })
            .collect();
        let counts: BTreeMap<&str, usize> = self
            .counts()
            .into_iter()
            .map(|(k, v)| (k.label(), v))
            .collect();
        let m = self.manifest.as_ref();
        let doc = serde_json::json!({
            "schema": SCHEMA,
            "plan": m.map(|m| &m.plan),
            "follows": m.and_then(|m| m.follows.as_ref()),
            "started_at": m.map(|m| &m.started_at),
            "repeats": m.map(|m| m.repeats),
            "command": m.map(|m| &m.command),
            "environment": m.map(|m| &m.environment),
            "runtimes": self.runtimes(),
            "counts": counts,
            "groups": groups,
            "trials": trials,
            "breakpoints": bps,
            "missing_breakpoints": self.missing_breakpoints,
            "skipped": m.map(|m| &m.skipped),
            "warnings": self.warnings,
        });
        let mut doc = doc;
        if let Some(line) = self.budget_line() {
            doc["budgets"] = serde_json::json!(self.budgets());
            doc["budget_line"] = serde_json::json!(line);
        }
        if let Some(line) = self.slow_line() {
            doc["slow_settings"] = serde_json::json!(self.slow_settings());
            doc["slow_line"] = serde_json::json!(line);
        }
        if let Some(line) = self.database_line() {
            doc["databases"] = serde_json::json!(self.databases());
            doc["database_line"] = serde_json::json!(line);
        }
        Ok(serde_json::to_string_pretty(&doc)? + "\n")
    }
}

/// One trial of report.json: its plan's names, status and headline
/// figures; its budget and slow clients only when it had them.
fn trial_json(t: &TrialRow) -> serde_json::Value {
    let r = t.record.as_ref();
    let mut v = serde_json::json!({
        "id": t.planned.id,
        "group": t.planned.group,
        "repeat": t.planned.repeat,
        "status": t.status,
        "error": t.reason,
        "throughput_rps": r.map(|r| r.load.throughput_rps),
        "latency_p99_us": r
            .filter(|r| r.load.latency_us.has_figures())
            .map(|r| r.load.latency_us.p99),
        "latency_lower_bound": r.map(|r| r.load.latency_lower_bound),
        "errors": r.map(|r| r.load.errors.total()),
        "notes": r.map(|r| {
            let mut v = Caveats::of(&r.load).notes();
            v.extend(crate::store::runtime::notes([r]));
            v.extend(TrialFigures::of(r).budget.and_then(|b| b.kill_note()));
            v.extend(r.faults.note());
            v
        }),
        "runtime": r.and_then(RanOn::of).map(|o| o.label()),
        "disturbance": r.and_then(|r| r.disturbance.as_ref()),
    });
    // Only with a budget or slow clients: a study without reads as before.
    let figures = r.map(TrialFigures::of);
    if let Some(b) = figures.as_ref().and_then(|f| f.budget.as_ref()) {
        v["budget"] = serde_json::json!(b);
    }
    if let Some(w) = figures.as_ref().and_then(|f| f.slow.as_ref()) {
        v["slow_clients"] = serde_json::json!(w);
    }
    if let Some(e) = figures.as_ref().filter(|f| !f.endpoints.is_empty()) {
        v["endpoints"] = serde_json::json!(e.endpoints);
    }
    if let Some(d) = figures.as_ref().and_then(|f| f.database.as_ref()) {
        v["database"] = serde_json::json!(d);
    }
    // Only with a fault: each in a sentence, and the record's lists.
    if let Some(f) = r.map(|r| &r.faults).filter(|f| f.any()) {
        v["faults"] = serde_json::json!(f);
        v["fault_sentences"] = serde_json::json!(f.sentences());
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(keepalive: u32, http: &str) -> PlannedTrial {
        serde_json::from_value(serde_json::json!({
            "id": "t__rep1", "group": "t", "server": "thin", "variant": "thin-x4",
            "workers": null, "threads": null, "settings": {}, "env": {},
            "app": "ip", "behind": "nginx", "nginx_workers": 1,
            "nginx_keepalive": keepalive, "nginx_http": http, "instances": 4,
            "shape": { "connections": 10 }, "repeat": 1
        }))
        .unwrap()
    }

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

    /// Issue 25: names and load levels sort as people read them.
    #[test]
    fn report_rows_sort_numbers_inside_names_as_numbers() {
        let trial = |variant: &str, behind: &str, workers: u32, conns: usize| {
            let mut p = planned(64, "1.1");
            p.variant = variant.into();
            p.behind = behind.into();
            p.nginx_workers = workers;
            p.shape.connections = conns;
            p
        };
        let mut rows = [
            trial("puma-w16", "none", 1, 2),
            trial("puma-w2", "none", 1, 16),
            trial("puma-w2", "none", 1, 2),
            trial("puma-w16", "none", 1, 16),
            trial("puma-w2", "nginx", 16, 2),
            trial("puma-w2", "nginx", 2, 2),
        ];
        rows.sort_by(planned_order);
        let got: Vec<String> = rows
            .iter()
            .map(|p| format!("{} {} {}", p.front(), p.shape.connections, p.variant))
            .collect();
        assert_eq!(
            got,
            [
                // "nginx" sorts before "none", as it always has.
                "nginx×2 2 puma-w2",
                "nginx×16 2 puma-w2",
                "direct 2 puma-w2",
                "direct 2 puma-w16",
                "direct 16 puma-w2",
                "direct 16 puma-w16",
            ]
        );
    }

    #[test]
    fn fronts_that_differ_in_an_nginx_knob_have_different_labels() {
        let seed = planned(0, "1.0");
        let default = planned(64, "1.1");
        assert_eq!(seed.front(), "nginx×1 http/1.0 keepalive off");
        assert_eq!(default.front(), "nginx×1");
        assert_ne!(sort_key(&seed), sort_key(&default));
        // A planned trial stored before the knobs existed reads as the
        // default front it ran behind.
        let mut old = serde_json::to_value(&default).unwrap();
        for k in ["nginx_keepalive", "nginx_http", "instances"] {
            old.as_object_mut().unwrap().remove(k);
        }
        let old: PlannedTrial = serde_json::from_value(old).unwrap();
        assert_eq!(old.front(), "nginx×1");
    }
}
