//! A results directory read into a report's rows: one row per trial the
//! manifest planned (or why it has no good record), one per group with its
//! summary, the break-point searches; in report order, numbers inside
//! names sorted as numbers.
//!
//! It renders nothing, and reads only a `store::study::Study`.

use super::{Group, Report, Status, TrialRow};
use crate::lab::trial::TrialRecord;
use crate::store::figures::TrialFigures;
use crate::store::records::{Manifest, Outcome, PlannedTrial, StoredBreakpoint, StoredTrial};
use crate::store::study::Study;
use crate::store::summary::{summarize_trials, GroupSummary};
use crate::units::natural_cmp;
use anyhow::{bail, Context};
use std::collections::BTreeMap;
use std::path::Path;

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

impl Report {
    /// The report of the results directory `dir` (`Study::open`, then
    /// [`Report::of`]).
    pub fn load(dir: &Path) -> anyhow::Result<Report> {
        Report::of(&Study::open(dir)?)
    }

    /// The study's manifest, every trial record and every break point: one
    /// row per planned trial (a record on disk, or why there is none), the
    /// groups with their summaries, the searches and those missing. What
    /// cannot be read becomes a warning, not an error, unless nothing is
    /// left to report.
    pub fn of(study: &Study) -> anyhow::Result<Report> {
        let dir = study.root();
        let mut warnings: Vec<String> = study
            .manifest_warning()
            .map(String::from)
            .into_iter()
            .collect();
        let manifest = study.manifest().cloned();
        let read = study
            .trials()
            .with_context(|| format!("cannot read the trials in {}", dir.display()))?;
        warnings.extend(read.warnings());
        let summaries: BTreeMap<String, GroupSummary> = summarize_trials(&read.stored)
            .into_iter()
            .map(|g| (g.group.clone(), g))
            .collect();
        let unreadable: BTreeMap<String, String> = read.unreadable.iter().cloned().collect();
        let stored: BTreeMap<String, StoredTrial> = read
            .stored
            .iter()
            .map(|t| (t.id.clone(), t.clone()))
            .collect();
        if manifest.is_none() && stored.is_empty() {
            bail!(
                "{} holds no manifest.json and no trials/*.json: not a rackbench results directory",
                dir.display()
            );
        }
        let trials = trial_rows(manifest.as_ref(), stored, &unreadable);
        let groups = group_rows(&trials, &summaries);
        let (breakpoints, missing_breakpoints) =
            read_breakpoints(study, manifest.as_ref(), &mut warnings)?;
        warnings.sort();
        let profiles = crate::store::profiles::group_profiles(study);
        Ok(Report {
            manifest,
            trials,
            groups,
            breakpoints,
            missing_breakpoints,
            warnings,
            profiles,
        })
    }
}

/// One row per trial the manifest planned, then per record it did not
/// (an older plan's), each with its status and reason, in report order.
pub(super) fn trial_rows(
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
impl Group {
    /// The group of `planned` before any of its runs is counted: no
    /// counts, no conditions, no notes.
    pub(super) fn empty(planned: PlannedTrial, summary: Option<GroupSummary>) -> Group {
        Group {
            group: planned.group.clone(),
            planned,
            summary,
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
            starved: None,
            shares: None,
        }
    }
}

pub(super) fn group_rows(
    trials: &[TrialRow],
    summaries: &BTreeMap<String, GroupSummary>,
) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for t in trials {
        if groups.last().is_none_or(|g| g.group != t.planned.group) {
            groups.push(Group::empty(
                t.planned.clone(),
                summaries.get(&t.planned.group).cloned(),
            ));
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
        let good: Vec<TrialFigures> = (trials.iter())
            .filter(|t| t.planned.group == g.group && t.status == Status::Ok)
            .filter_map(|t| t.record.as_ref().map(TrialFigures::of))
            .collect();
        g.starved = super::starved::Starved::of_runs(&good);
        g.shares = super::starved::Shares::of_runs(&good);
    }
    groups
}

/// The break-point records by group, and the groups the manifest planned
/// a search for that left none.
pub(super) fn read_breakpoints(
    study: &Study,
    manifest: Option<&Manifest>,
    warnings: &mut Vec<String>,
) -> anyhow::Result<(Vec<StoredBreakpoint>, Vec<String>)> {
    warnings.extend(study.breakpoint_warnings().iter().cloned());
    let mut breakpoints = study.breakpoints()?.to_vec();
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
