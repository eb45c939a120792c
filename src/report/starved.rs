//! Starved connections (issue 39): a group whose load left connections
//! without an answer, in words for every format's notes, "what this
//! shows" and report.csv.
//!
//! Two counts are real and differ when the server closes kept-alive
//! connections (the client connects again): per client, the slots that
//! carried a request and got no answer in the window
//! (`load.fairness.connections_starved` of `load.connections.configured`);
//! per connection opened, the sockets that carried a request and never
//! got a byte back (`load.connections.never_answered` of `opened`). One
//! rule: a run's count is the one with the larger share (per client on a
//! tie), and a group's is that of its good run with the largest share.
//! More than [`ERROR_SHARE`] starved makes the row not a result, as
//! errors do. Only records with `load.fairness` are judged (older ones
//! have no per-client count to weigh the other against).

use crate::load::caveats::ERROR_SHARE;
use crate::stats::spread::Spread;
use crate::store::figures::TrialFigures;

/// Which count a [`Starved`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    /// Slots: a client counted once however often it reconnects.
    Client,
    /// Sockets opened, reconnects included.
    Connection,
}

/// The connections a group's worst good run left without an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Starved {
    /// Starved, of `of`.
    pub count: u64,
    pub of: u64,
    pub per: Per,
    /// The group's good runs with fairness figures.
    pub runs: usize,
    /// The median Jain's index over those runs; None when no answer came
    /// back.
    pub jain_index: Option<f64>,
}

impl Starved {
    /// The count of one run by the rule above; None without
    /// `load.fairness` or a connection.
    fn of_run(f: &TrialFigures) -> Option<(u64, u64, Per)> {
        let starved = f.connections_starved?;
        let client = (starved, f.connections_configured);
        let socket = (f.never_answered, f.connections_opened);
        let share = |(n, of): (f64, f64)| if of > 0.0 { n / of } else { 0.0 };
        let ((n, of), per) = if share(socket) > share(client) {
            (socket, Per::Connection)
        } else {
            (client, Per::Client)
        };
        (of > 0.0).then_some((n as u64, of as u64, per))
    }

    /// The group's figure over its good runs' `figs`; None when none has
    /// fairness figures.
    pub fn of_runs(figs: &[TrialFigures]) -> Option<Starved> {
        let runs: Vec<(u64, u64, Per)> = figs.iter().filter_map(Starved::of_run).collect();
        let &(count, of, per) = runs
            .iter()
            .max_by(|a, b| (a.0 as f64 / a.1 as f64).total_cmp(&(b.0 as f64 / b.1 as f64)))?;
        let jain: Vec<f64> = figs.iter().filter_map(|f| f.jain_index).collect();
        Some(Starved {
            count,
            of,
            per,
            runs: runs.len(),
            jain_index: Spread::of(&jain).map(|s| s.median),
        })
    }

    pub fn share(&self) -> f64 {
        self.count as f64 / self.of as f64
    }

    /// More than [`ERROR_SHARE`] starved: not a result.
    pub fn too_many(&self) -> bool {
        self.share() > ERROR_SHARE
    }

    fn noun(&self) -> &'static str {
        match self.per {
            Per::Client => "connections",
            Per::Connection => "connections opened",
        }
    }

    fn worst(&self) -> String {
        if self.runs > 1 {
            format!(" in the worst of {} runs", self.runs)
        } else {
            String::new()
        }
    }

    /// "44 of 80 connections never answered", "40 of 135 connections
    /// opened never answered in the worst of 2 runs"; None when none
    /// starved.
    pub fn words(&self) -> Option<String> {
        (self.count > 0).then(|| {
            format!(
                "{} of {} {} never answered{}",
                self.count,
                self.of,
                self.noun(),
                self.worst()
            )
        })
    }

    /// A row's note: [`Starved::words`], and ": not a result" when more
    /// than [`ERROR_SHARE`] starved (as errors say it).
    pub fn note(&self) -> Option<String> {
        let w = self.words()?;
        Some(if self.too_many() {
            format!("{w}: not a result")
        } else {
            w
        })
    }

    /// "served 36 of 80 connections; the rest got no answer, waiting in
    /// the accept queue or behind kept-alive connections"; None when
    /// none starved.
    pub fn served(&self) -> Option<String> {
        (self.count > 0).then(|| {
            format!(
                "served {} of {} {}{}; the rest got no answer, waiting in the accept queue or behind kept-alive connections",
                self.of - self.count,
                self.of,
                self.noun(),
                self.worst()
            )
        })
    }
}

/// Each worker's share of the requests (telemetry) in the group's good
/// run with the largest deviation.
#[derive(Debug, Clone, PartialEq)]
pub struct Shares {
    /// Busiest first.
    pub shares: Vec<f64>,
    /// Puma's "% deviation": max |share − 1/n| over 1/n.
    pub deviation: f64,
}

impl Shares {
    /// None when no good run had telemetry's counts per worker.
    pub fn of_runs(figs: &[TrialFigures]) -> Option<Shares> {
        (figs.iter())
            .filter_map(|f| {
                let deviation = crate::store::figures::worker_deviation(&f.worker_shares)?;
                Some(Shares {
                    shares: f.worker_shares.clone(),
                    deviation,
                })
            })
            .max_by(|a, b| a.deviation.total_cmp(&b.deviation))
    }

    /// "31.0 / 25.0 / 24.0 / 20.0%".
    pub fn words(&self) -> String {
        let v: Vec<String> = (self.shares.iter())
            .map(|s| format!("{:.1}", s * 100.0))
            .collect();
        format!("{}%", v.join(" / "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Figures of a run: `starved` per client of `configured` (None: no
    /// fairness), `never` of `opened` sockets.
    fn run(starved: Option<u64>, configured: u64, never: u64, opened: u64) -> TrialFigures {
        let f = crate::store::figures::tests::stored(|_| {});
        let t: crate::store::records::StoredTrial = serde_json::from_value(f).unwrap();
        let mut f = TrialFigures::of(t.trial.as_ref().unwrap());
        f.connections_starved = starved.map(|n| n as f64);
        f.jain_index = starved.map(|_| 0.8);
        f.connections_configured = configured as f64;
        f.never_answered = never as f64;
        f.connections_opened = opened as f64;
        f
    }

    #[test]
    fn the_count_with_the_larger_share_is_said_and_the_worst_run_is_the_groups() {
        // Per client 5 of 80 (6%), per socket 40 of 135 (30%): per socket.
        let s = Starved::of_runs(&[run(Some(5), 80, 40, 135)]).unwrap();
        assert_eq!((s.count, s.of, s.per), (40, 135, Per::Connection));
        assert_eq!(
            s.words().unwrap(),
            "40 of 135 connections opened never answered"
        );
        assert!(s.too_many());
        assert_eq!(
            s.note().unwrap(),
            "40 of 135 connections opened never answered: not a result"
        );
        // Kept-alive sockets never reopened: 44 of 80 both ways, per client.
        let s = Starved::of_runs(&[run(Some(44), 80, 44, 80), run(Some(1), 80, 1, 80)]).unwrap();
        assert_eq!((s.count, s.of, s.per, s.runs), (44, 80, Per::Client, 2));
        assert_eq!(
            s.words().unwrap(),
            "44 of 80 connections never answered in the worst of 2 runs"
        );
        assert!(s
            .served()
            .unwrap()
            .starts_with("served 36 of 80 connections"));
        assert_eq!(s.jain_index, Some(0.8));
    }

    #[test]
    fn none_starved_says_nothing_and_one_in_a_thousand_is_still_a_result() {
        let s = Starved::of_runs(&[run(Some(0), 80, 0, 80)]).unwrap();
        assert_eq!((s.words(), s.served()), (None, None));
        assert!(!s.too_many());
        let s = Starved::of_runs(&[run(Some(1), 1000, 1, 1000)]).unwrap();
        assert!(s.words().is_some() && !s.too_many(), "0.1%: at most 1%");
        assert_eq!(s.note().unwrap(), "1 of 1000 connections never answered");
    }

    #[test]
    fn the_shares_shown_are_the_most_uneven_runs() {
        let mut a = run(Some(0), 80, 0, 80);
        a.worker_shares = vec![0.3, 0.25, 0.25, 0.2];
        let mut b = a.clone();
        b.worker_shares = vec![0.31, 0.25, 0.24, 0.2];
        let s = Shares::of_runs(&[a, b.clone()]).unwrap();
        assert_eq!(s.shares, b.worker_shares);
        assert!((s.deviation - 0.24).abs() < 1e-9);
        assert_eq!(s.words(), "31.0 / 25.0 / 24.0 / 20.0%");
        b.worker_shares.clear();
        assert_eq!(Shares::of_runs(&[b]), None);
    }

    #[test]
    fn records_without_fairness_are_not_judged() {
        assert_eq!(Starved::of_runs(&[run(None, 80, 40, 80)]), None);
        assert_eq!(Starved::of_runs(&[]), None);
    }
}
