//! `rackbench history`'s use case: the runs found and read (in date
//! order, `--since` applied), the baseline's directory read when it is
//! one, the history built (`history::build`), the `--fail-if` rules
//! judged against the newest run; warnings go to the sink.

use super::sink::Sink;
use super::usage::usage;
use crate::history::{self, read, Baseline, History, Run};
use crate::stats::compare::{check_metric, FailIf, Row};
use crate::store::study::Study;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// What `history` is asked.
#[derive(Debug, Clone)]
pub struct HistoryRequest {
    /// Results directories, or directories of them.
    pub dirs: Vec<PathBuf>,
    pub since: Option<String>,
    /// Compare's primary metric: judged alone, the only one shown.
    pub metric: Option<String>,
    pub baseline: Baseline,
    pub fail_if: Vec<String>,
    pub seed: u64,
}

/// The history, and what crossed a `--fail-if` rule: (rule, group,
/// metric, verdict).
#[derive(Debug, Clone)]
pub struct HistoryResult {
    pub history: History,
    pub breaches: Vec<(String, String, String, String)>,
}

/// The primary metric: `--metric`, else the newest run's plan's.
fn primary(req: &HistoryRequest, runs: &[Run]) -> Result<Option<String>> {
    if let Some(m) = &req.metric {
        check_metric("--metric", m).map_err(usage)?;
        return Ok(Some(m.clone()));
    }
    let plan = runs
        .last()
        .and_then(|r| Study::open(&r.dir).ok())
        .and_then(|s| s.primary_metric());
    match plan {
        Some(m) => {
            check_metric("primary_metric", &m).map_err(|e| {
                usage(format!(
                    "{e} (in the newest run's plan.toml); or give --metric"
                ))
            })?;
            Ok(Some(m))
        }
        None => Ok(None),
    }
}

/// Whether two paths name one directory (`runs/a` and `./runs/a/`).
fn same_dir(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Run `history`.
pub fn run(req: &HistoryRequest, sink: &dyn Sink) -> Result<HistoryResult> {
    let rules = req
        .fail_if
        .iter()
        .map(|r| FailIf::parse(r))
        .collect::<Result<Vec<_>, _>>()
        .map_err(usage)?;
    if let Some(s) = &req.since {
        read::check_since(s).map_err(usage)?;
    }
    let dirs = read::find(&req.dirs).map_err(usage)?;
    let mut warnings = Vec::new();
    let mut runs = Vec::new();
    for d in &dirs {
        match read::open(d, &mut warnings) {
            Ok(r) => runs.push(r),
            Err(e) => warnings.push(format!("{}: left out: {e}", d.display())),
        }
    }
    let runs = read::since(runs, req.since.as_deref());
    let base_dir = match &req.baseline {
        Baseline::Dir(d) => Some(match runs.iter().find(|r| same_dir(&r.dir, d)) {
            Some(r) => r.clone(),
            None => read::open(d, &mut warnings)
                .map_err(|e| usage(format!("--baseline {}: {e}", d.display())))?,
        }),
        _ => None,
    };
    for w in &warnings {
        sink.note(&format!("warning: {w}"));
    }
    if runs.is_empty() {
        return Err(usage(match &req.since {
            Some(s) => format!("no run started at or after {s}"),
            None => "no run with a finished trial".into(),
        }));
    }
    let metric = primary(req, &runs)?;
    let (history, newest) = history::build(
        &runs,
        &req.baseline,
        base_dir.as_ref(),
        req.seed,
        metric.as_deref(),
    );
    let newest: Vec<Row> = newest.unwrap_or_default();
    let breaches = history::breaches(&newest, &rules)
        .into_iter()
        .map(|(rule, row)| {
            (
                format!(
                    "{}{}{}%",
                    rule.metric,
                    if rule.above { ">" } else { "<" },
                    rule.threshold_pct
                ),
                row.group.clone(),
                row.metric.clone(),
                row.verdict.clone(),
            )
        })
        .collect();
    Ok(HistoryResult { history, breaches })
}

/// The history's HTML page: one chart per metric over time.
pub fn write_page(h: &History, path: &Path) -> Result<()> {
    std::fs::write(path, crate::report::history_html::page(h))
        .with_context(|| format!("cannot write {}", path.display()))
}
