//! The JSON summary, `report.json` (`rackbench/report-v1`, a contract:
//! fields are added, never renamed): the groups, each trial with its
//! headline figures, and what it had only when it had it.
//!
//! It decides no status and no figure: Report and the store did.

use super::{Report, TrialRow, SCHEMA};
use crate::load::caveats::Caveats;
use crate::store::figures::TrialFigures;
use crate::store::runtime::RanOn;
use std::collections::BTreeMap;

impl Report {
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
pub(super) fn trial_json(t: &TrialRow) -> serde_json::Value {
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
