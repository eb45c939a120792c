//! report.csv and trials.csv: a row per trial group (medians, ranges,
//! run counts) and a row per planned trial run (the missing and failed
//! included), each column a header and its cell on one line; the
//! conditions' columns (runtime, budget, slow clients, database, a mix's
//! endpoints) last, only when a study ran under them, so a study without
//! them reads as before.
//!
//! It never reads a file: the figures come from the Report.

use super::table::{CsvColumn as Column, Table};
use super::{Group, Report, TrialRow};
use crate::lab::trial::TrialRecord;
use crate::store::figures::TrialFigures;

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

fn f1(v: f64) -> String {
    format!("{v:.1}")
}

fn f3(v: f64) -> String {
    format!("{v:.4}")
}

impl Report {
    /// One row per trial group: medians, ranges and run counts (the
    /// summary table's CSV columns), then the conditions'.
    pub fn csv(&self) -> String {
        let groups: Vec<&Group> = self.groups.iter().collect();
        let mut t = super::summary::table(self, &groups, &[]);
        let mut extra: Vec<Column<Group>> = Vec::new();
        if self.runtime_varies() {
            extra.extend_from_slice(GROUP_RUNTIME_COLUMNS);
        }
        if !self.budgets().is_empty() {
            extra.extend_from_slice(GROUP_BUDGET_COLUMNS);
        }
        if !self.slow_settings().is_empty() {
            extra.extend_from_slice(GROUP_SLOW_COLUMNS);
        }
        if !self.databases().is_empty() {
            extra.extend_from_slice(super::database::GROUP_COLUMNS);
        }
        for (head, cell) in extra {
            t.push_text_column(head, self.groups.iter().map(cell).collect());
        }
        if self.has_endpoints() {
            // Columns per endpoint of the mix, after every fixed one.
            let cells: Vec<Vec<String>> = (self.groups.iter())
                .map(|g| super::endpoints::csv_cells(self, g))
                .collect();
            for (i, head) in super::endpoints::csv_heads(self).iter().enumerate() {
                t.push_text_column(head, cells.iter().map(|c| c[i].clone()).collect());
            }
        }
        t.csv()
    }

    /// One row per planned trial run, the missing and failed included.
    pub fn trials_csv(&self) -> String {
        let mut columns = TRIAL_COLUMNS.to_vec();
        if self.runtime_varies() {
            columns.extend_from_slice(TRIAL_RUNTIME_COLUMNS);
        }
        if !self.budgets().is_empty() {
            columns.extend_from_slice(TRIAL_BUDGET_COLUMNS);
        }
        if !self.slow_settings().is_empty() {
            columns.extend_from_slice(TRIAL_SLOW_COLUMNS);
        }
        if !self.databases().is_empty() {
            columns.extend_from_slice(super::database::TRIAL_COLUMNS);
        }
        let fair = |t: &TrialRow| t.record.as_ref().is_some_and(|r| r.load.fairness.is_some());
        if self.trials.iter().any(fair) {
            columns.extend_from_slice(TRIAL_FAIRNESS_COLUMNS);
        }
        Table::of_csv(&columns, &self.trials).csv()
    }
}

/// A figure of a trial's record (`store::figures`, where the reports
/// take their numbers); empty when it has none (failed, missing).
fn figured(t: &TrialRow, figure: impl Fn(&TrialFigures) -> String) -> String {
    t.record
        .as_ref()
        .map_or(String::new(), |r| figure(&TrialFigures::of(r)))
}

/// A field of a trial's record that `store::figures` does not carry;
/// empty when it has none (failed, missing).
fn recorded(t: &TrialRow, figure: impl Fn(&TrialRecord) -> String) -> String {
    t.record.as_ref().map_or(String::new(), figure)
}

/// A latency figure of a trial's headline; empty when it has none (no
/// record, or every request refused or failed: never 0).
fn measured(
    t: &TrialRow,
    figure: impl Fn(&crate::load::report::LatencySummary) -> String,
) -> String {
    t.record
        .as_ref()
        .map(|r| &r.load.latency_us)
        .filter(|l| l.has_figures())
        .map_or(String::new(), figure)
}

/// A telemetry figure of a trial's record; empty without telemetry.
fn inside(t: &TrialRow, figure: impl Fn(&crate::telemetry::Telemetry) -> String) -> String {
    t.record
        .as_ref()
        .and_then(|r| r.server_metrics.telemetry.as_ref())
        .map_or(String::new(), figure)
}

/// Who got served in a trial (`load.fairness`, `load.connections`,
/// telemetry's requests per worker), last, only when a trial's record
/// has fairness figures; see report/starved.rs.
const TRIAL_FAIRNESS_COLUMNS: &[Column<TrialRow>] = &[
    ("connections_answered", |t| {
        figured(t, |f| opt(f.connections_answered))
    }),
    ("connections_starved", |t| {
        figured(t, |f| opt(f.connections_starved))
    }),
    ("connections_opened", |t| {
        figured(t, |f| f.connections_opened.to_string())
    }),
    ("never_answered", |t| {
        figured(t, |f| f.never_answered.to_string())
    }),
    ("jain_index", |t| figured(t, |f| opt(f.jain_index.map(f3)))),
    ("worker_deviation", |t| {
        figured(t, |f| {
            opt(crate::store::figures::worker_deviation(&f.worker_shares).map(f3))
        })
    }),
];

/// The runtime of a group's runs, last, only when a study ran on more
/// than one (`report::runtime`).
const GROUP_RUNTIME_COLUMNS: &[Column<Group>] = &[("runtime", |g| g.runtime_label())];

/// The runtime of a trial, last, only when a study ran on more than one.
const TRIAL_RUNTIME_COLUMNS: &[Column<TrialRow>] = &[("runtime", |t| {
    super::runtime::trial_label(t).unwrap_or_else(|| "unknown".into())
})];

/// A group's budget (`store::budget`), last, only when a study ran with
/// budgets; empty for a group that ran without one.
const GROUP_BUDGET_COLUMNS: &[Column<Group>] = &[
    ("budget", |g| budgeted(g, |b| b.label.clone())),
    ("memory_limit_bytes", |g| {
        budgeted(g, |b| opt(b.memory_limit_bytes))
    }),
    ("memory_peak_bytes", |g| {
        budgeted(g, |b| opt(b.memory_peak_bytes))
    }),
    ("memory_peak_share", |g| {
        budgeted(g, |b| opt(b.memory_peak_share.map(f3)))
    }),
    ("cpus", |g| budgeted(g, |b| opt(b.cpus))),
    ("cpu_throttled_s_per_s", |g| {
        budgeted(g, |b| opt(b.cpu_throttled_s_per_s.map(f3)))
    }),
    ("oom_kills", |g| budgeted(g, |b| b.oom_kills.to_string())),
];

/// A trial's budget, last, only when a study ran with budgets.
const TRIAL_BUDGET_COLUMNS: &[Column<TrialRow>] = &[
    ("memory_limit_bytes", |t| {
        budget_of(t, |b| opt(b.memory_limit_bytes))
    }),
    ("memory_peak_bytes", |t| {
        budget_of(t, |b| opt(b.memory_peak_bytes))
    }),
    ("cpus", |t| budget_of(t, |b| opt(b.cpus))),
    ("cpu_throttled_s", |t| {
        budget_of(t, |b| f3(b.cpu_throttled_s))
    }),
    ("oom_kills", |t| budget_of(t, |b| b.oom_kills.to_string())),
];

/// A group's slow clients (`store::slow`), last, only when a study ran
/// with them; "none" and empty figures for a group that ran without.
const GROUP_SLOW_COLUMNS: &[Column<Group>] = &[
    ("slow", |g| {
        g.slow
            .as_ref()
            .map_or_else(|| "none".into(), |w| w.label.clone())
    }),
    ("slow_accepted", |g| slowed(g, |w| w.accepted.to_string())),
    ("slow_closed_by_server", |g| {
        slowed(g, |w| w.closed_by_server.to_string())
    }),
    ("slow_held_p50_s", |g| {
        slowed(g, |w| opt(w.held_p50_s.map(f3)))
    }),
    ("slow_open_at_end", |g| {
        slowed(g, |w| w.open_at_end.to_string())
    }),
    ("slow_open_at_end_min_s", |g| {
        slowed(g, |w| opt(w.open_at_end_min_s.map(f3)))
    }),
];

/// A trial's slow clients, last, only when a study ran with them.
const TRIAL_SLOW_COLUMNS: &[Column<TrialRow>] = &[
    ("slow", |t| {
        super::slow::of_trial(t).map_or_else(|| "none".into(), |w| w.label())
    }),
    ("slow_accepted", |t| slow_of(t, |w| w.accepted.to_string())),
    ("slow_closed_by_server", |t| {
        slow_of(t, |w| w.closed_by_server.to_string())
    }),
    ("slow_held_p50_s", |t| {
        slow_of(t, |w| opt(w.held_p50_s.map(f3)))
    }),
    ("slow_open_at_end", |t| {
        slow_of(t, |w| w.open_at_end.to_string())
    }),
    ("slow_open_at_end_min_s", |t| {
        slow_of(t, |w| f3(w.open_at_end_min_s))
    }),
];

/// A figure of a group's slow clients; empty without them.
fn slowed(g: &Group, figure: impl Fn(&crate::store::slow::GroupSlow) -> String) -> String {
    g.slow.as_ref().map_or(String::new(), figure)
}

/// A figure of a trial's slow clients; empty without them.
fn slow_of(t: &TrialRow, figure: impl Fn(&crate::store::slow::TrialSlow) -> String) -> String {
    super::slow::of_trial(t).map_or(String::new(), |w| figure(&w))
}

/// A figure of a group's budget; empty without one.
fn budgeted(g: &Group, figure: impl Fn(&crate::store::budget::GroupBudget) -> String) -> String {
    g.budget.as_ref().map_or(String::new(), figure)
}

/// A figure of a trial's budget; empty without one.
fn budget_of(
    t: &TrialRow,
    figure: impl Fn(&crate::store::budget::TrialBudget) -> String,
) -> String {
    t.record
        .as_ref()
        .and_then(super::budget::of_record)
        .map_or(String::new(), |b| figure(&b))
}

/// `trials.csv`: a trial's plan and status, then its record's figures.
const TRIAL_COLUMNS: &[Column<TrialRow>] = &[
    ("id", |t| t.planned.id.clone()),
    ("group", |t| t.planned.group.clone()),
    ("repeat", |t| t.planned.repeat.to_string()),
    ("server", |t| t.planned.server.clone()),
    ("variant", |t| t.planned.variant.clone()),
    ("app", |t| t.planned.app.clone()),
    ("behind", |t| t.planned.behind.clone()),
    ("connections", |t| t.planned.shape.connections.to_string()),
    ("rate", |t| opt(t.planned.shape.rate)),
    ("status", |t| t.status.label().to_string()),
    ("error", |t| t.reason.clone().unwrap_or_default()),
    ("throughput_rps", |t| figured(t, |f| f1(f.throughput_rps))),
    ("requests_ok", |t| {
        recorded(t, |r| r.load.requests.ok.to_string())
    }),
    ("errors", |t| figured(t, |f| f.errors.to_string())),
    ("latency_mean_us", |t| {
        figured(t, |f| opt(f.latency_mean_us.map(f1)))
    }),
    ("latency_stdev_us", |t| {
        figured(t, |f| opt(f.latency_stdev_us.map(f1)))
    }),
    ("latency_p50_us", |t| figured(t, |f| opt(f.latency_p50_us))),
    ("latency_p90_us", |t| figured(t, |f| opt(f.latency_p90_us))),
    ("latency_p99_us", |t| figured(t, |f| opt(f.latency_p99_us))),
    ("latency_p999_us", |t| measured(t, |l| l.p999.to_string())),
    ("latency_max_us", |t| figured(t, |f| opt(f.latency_max_us))),
    ("rss_peak_bytes", |t| {
        figured(t, |f| f.rss_peak_bytes.to_string())
    }),
    ("pss_peak_bytes", |t| figured(t, |f| opt(f.pss_peak_bytes))),
    ("cpu_ms_per_request", |t| {
        figured(t, |f| opt(f.cpu_ms_per_request.map(f3)))
    }),
    ("latency_lower_bound", |t| {
        recorded(t, |r| r.load.latency_lower_bound.to_string())
    }),
    ("notes", |t| {
        recorded(t, |r| super::runtime::record_notes(r).join("; "))
    }),
    ("queue_p50_us", |t| {
        inside(t, |x| opt(x.queue_us.map(|q| f1(q.p50))))
    }),
    ("app_p50_us", |t| inside(t, |x| f1(x.app_us.p50))),
    ("gc_runs_per_1k_requests", |t| {
        figured(t, |f| opt(f.gc_runs_per_1k_requests.map(f1)))
    }),
    ("gc_time_pct", |t| {
        figured(t, |f| opt(f.gc_time_share.map(|s| f1(s * 100.0))))
    }),
    // The machine during the window (sampler::disturbance); empty for
    // records made before it was measured.
    ("disturbed", |t| {
        figured(t, |f| opt(f.disturbance.as_ref().map(|d| d.disturbed)))
    }),
    ("steal_share", |t| {
        figured(t, |f| {
            opt(f.disturbance.as_ref().map(|d| f3(d.steal_share)))
        })
    }),
    ("foreign_cpu_share", |t| {
        figured(t, |f| {
            opt(f.disturbance.as_ref().map(|d| f3(d.foreign_cpu_share)))
        })
    }),
];
