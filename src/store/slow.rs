//! A trial's slow clients as reports show them (issue 29), read from its
//! load's `slow_clients` (`load::slow::SlowClientsReport`): [`TrialSlow`]
//! is one trial's, [`GroupSlow`] a group's over its runs. The label ("4
//! headers") names the setting in headers and columns; the figures are
//! what the slow connections saw: how many the server accepted, how many
//! it closed, how long the closed ones were held, and how many were still
//! open when the run ended (cut off by the end, never a `held_s` sample).
//!
//! It never reads a file (`read` does) and never opens a connection
//! (`load::slow`). A record without slow clients has none here: no
//! column, no line, the reports as they were.

use crate::load::slow::SlowClientsReport;
use serde::Serialize;

/// One trial's slow clients and what they saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialSlow {
    pub count: usize,
    pub mode: String,
    pub bytes_per_step: usize,
    pub every_ms: u64,
    pub accepted: u64,
    pub closed_by_server: u64,
    pub refused: u64,
    /// The median time the connections the server closed were held,
    /// seconds; None when it closed none.
    pub held_p50_s: Option<f64>,
    /// Connections still open at the end, and the shortest time among
    /// them (each was held at least that long), seconds.
    pub open_at_end: u64,
    pub open_at_end_min_s: f64,
}

impl TrialSlow {
    pub fn of(r: &SlowClientsReport) -> TrialSlow {
        TrialSlow {
            count: r.count,
            mode: r.mode.name().into(),
            bytes_per_step: r.bytes_per_step,
            every_ms: r.every_ms,
            accepted: r.accepted,
            closed_by_server: r.closed_by_server,
            refused: r.refused,
            held_p50_s: (r.held_s.count > 0).then_some(r.held_s.p50),
            open_at_end: r.open_at_end,
            open_at_end_min_s: r.open_at_end_min_s,
        }
    }

    /// "4 headers": the setting, as rows and headers name it.
    pub fn label(&self) -> String {
        label(self.count, &self.mode)
    }

    /// "4 headers (4 B every 1 s)": the setting with its pace, for the
    /// header line.
    pub fn label_with_pace(&self) -> String {
        format!(
            "{} ({} B every {})",
            self.label(),
            self.bytes_per_step,
            every(self.every_ms)
        )
    }
}

/// "4 headers".
pub fn label(count: usize, mode: &str) -> String {
    format!("{count} {mode}")
}

/// "1 s", "250 ms".
fn every(ms: u64) -> String {
    if ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

/// A group's slow clients over its runs that had them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupSlow {
    /// [`label`]; several joined by " / " when its runs disagree.
    pub label: String,
    /// Over all its runs: connections accepted, closed by the server,
    /// refused, and still open at the end.
    pub accepted: u64,
    pub closed_by_server: u64,
    pub refused: u64,
    pub open_at_end: u64,
    /// The median over runs of each run's held p50 (connections the
    /// server closed), seconds; None when it closed none in any run.
    pub held_p50_s: Option<f64>,
    /// The shortest time any connection open at the end had been held,
    /// over its runs, seconds; None when none was open at the end.
    pub open_at_end_min_s: Option<f64>,
    /// Its runs whose record has slow clients.
    pub runs: usize,
}

impl GroupSlow {
    /// Over each run's; None when no run had slow clients.
    pub fn of(runs: &[TrialSlow]) -> Option<GroupSlow> {
        runs.first()?;
        let mut labels: Vec<String> = Vec::new();
        for t in runs {
            if !labels.contains(&t.label()) {
                labels.push(t.label());
            }
        }
        let mut held: Vec<f64> = runs.iter().filter_map(|t| t.held_p50_s).collect();
        held.sort_by(f64::total_cmp);
        let held_p50_s = match held.len() {
            0 => None,
            n if n % 2 == 1 => Some(held[n / 2]),
            n => Some((held[n / 2 - 1] + held[n / 2]) / 2.0),
        };
        Some(GroupSlow {
            label: labels.join(" / "),
            accepted: runs.iter().map(|t| t.accepted).sum(),
            closed_by_server: runs.iter().map(|t| t.closed_by_server).sum(),
            refused: runs.iter().map(|t| t.refused).sum(),
            open_at_end: runs.iter().map(|t| t.open_at_end).sum(),
            held_p50_s,
            open_at_end_min_s: runs
                .iter()
                .filter(|t| t.open_at_end > 0)
                .map(|t| t.open_at_end_min_s)
                .min_by(f64::total_cmp),
            runs: runs.len(),
        })
    }

    /// "held p50 2.0 s (closed ones)", or "none closed".
    pub fn held(&self) -> String {
        self.held_p50_s
            .map_or_else(|| "none closed".into(), |h| format!("{h:.1} s"))
    }

    /// "4, held >= 5.9 s", or "0".
    pub fn open(&self) -> String {
        match self.open_at_end_min_s {
            Some(m) if self.open_at_end > 0 => format!("{}, held ≥ {m:.1} s", self.open_at_end),
            _ => self.open_at_end.to_string(),
        }
    }

    /// "12 accepted, 0 closed by the server, held p50 none closed; 12
    /// open at the end, held ≥ 5.9 s": the terminal's line.
    pub fn figures(&self) -> String {
        format!(
            "{} accepted, {} closed by the server, held p50 {}; {} open at the end{}",
            self.accepted,
            self.closed_by_server,
            self.held(),
            self.open_at_end,
            self.open_at_end_min_s
                .filter(|_| self.open_at_end > 0)
                .map_or(String::new(), |m| format!(", held ≥ {m:.1} s")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(accepted: u64, closed: u64, held: Option<f64>, open: u64, min: f64) -> TrialSlow {
        TrialSlow {
            count: 4,
            mode: "headers".into(),
            bytes_per_step: 4,
            every_ms: 1000,
            accepted,
            closed_by_server: closed,
            refused: 0,
            held_p50_s: held,
            open_at_end: open,
            open_at_end_min_s: min,
        }
    }

    #[test]
    fn the_setting_is_named_by_count_and_mode_and_its_pace() {
        let t = trial(4, 0, None, 4, 6.0);
        assert_eq!(t.label(), "4 headers");
        assert_eq!(t.label_with_pace(), "4 headers (4 B every 1 s)");
        let quick = TrialSlow { every_ms: 250, ..t };
        assert_eq!(quick.label_with_pace(), "4 headers (4 B every 250 ms)");
    }

    #[test]
    fn a_group_sums_its_runs_and_takes_the_median_held_of_closed_ones() {
        let g = GroupSlow::of(&[
            trial(4, 0, None, 4, 6.0),
            trial(10, 6, Some(1.0), 4, 5.8),
            trial(12, 8, Some(3.0), 4, 5.9),
        ])
        .unwrap();
        assert_eq!(g.label, "4 headers");
        assert_eq!(
            (g.accepted, g.closed_by_server, g.open_at_end, g.runs),
            (26, 14, 12, 3)
        );
        assert_eq!(g.held_p50_s, Some(2.0), "the runs with a closed one only");
        assert_eq!(g.open_at_end_min_s, Some(5.8));
        assert_eq!(
            g.figures(),
            "26 accepted, 14 closed by the server, held p50 2.0 s; 12 open at the end, held ≥ 5.8 s"
        );
        assert!(GroupSlow::of(&[]).is_none());
    }

    #[test]
    fn a_server_that_closes_every_one_has_none_open_and_one_that_closes_none_no_held() {
        let all_closed = GroupSlow::of(&[trial(40, 40, Some(0.1), 0, 0.0)]).unwrap();
        assert_eq!(all_closed.open(), "0");
        assert_eq!(all_closed.open_at_end_min_s, None);
        assert_eq!(all_closed.held(), "0.1 s");
        let none_closed = GroupSlow::of(&[trial(4, 0, None, 4, 6.0)]).unwrap();
        assert_eq!(none_closed.held(), "none closed");
        assert_eq!(none_closed.open(), "4, held ≥ 6.0 s");
    }
}
