//! What a load run's figures cannot be trusted for, decided in one place.
//!
//! Every report (the `load` and `run` terminal summaries, Markdown, CSV,
//! HTML) asks [`Caveats::of`] about a run, or [`Caveats::merge`]s the runs
//! of a trial group, and renders the marks and notes it returns, so the
//! same run is flagged the same way everywhere. It only reads a
//! [`LoadReport`]; it never prints.
//!
//! The rules:
//! - more than [`ERROR_SHARE`] of the counted requests failed: the row is
//!   not a result (a full queue's instant 503s are not fast answers);
//! - the headline latency rests on unanswered requests' ages
//!   (`latency_lower_bound`): shown "≥ 1.50s";
//! - a percentile with fewer than [`BEYOND`] responses beyond it (p99 from
//!   under 1000 responses is close to the maximum): marked "†";
//! - a throughput from fewer than [`THIN_THROUGHPUT`] OK responses: "†";
//! - no OK response in the window at all: not a result either.
//!
//! Only "not a result" ([`Caveats::not_a_result`]) paints a report's row
//! red; "≥" and "†" are quiet marks with their note: the figure is still
//! the row's result, read with care.

use super::report::LoadReport;
use serde::{Deserialize, Serialize};

/// Share of failed requests above which a row is flagged.
pub const ERROR_SHARE: f64 = 0.01;
/// Responses a percentile needs beyond it to be more than an extreme value.
pub const BEYOND: f64 = 10.0;
/// OK responses below which a throughput is flagged as resting on few.
pub const THIN_THROUGHPUT: u64 = 200;

/// A run's (or a group's) caveats. Over a group: the worst run decides.
/// The default flags nothing (a summary with no runs, or read from a
/// record older than the field).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Caveats {
    /// Failed requests over counted requests (0..1); the highest run's.
    pub error_share: f64,
    /// The headline latency is a lower bound (unanswered requests' ages).
    pub lower_bound: bool,
    /// Responses the headline latency rests on; the fewest of any run.
    pub latency_count: u64,
    /// OK responses the throughput rests on; the fewest of any run.
    pub ok: u64,
}

impl Default for Caveats {
    fn default() -> Caveats {
        Caveats::NONE
    }
}

impl Caveats {
    /// Nothing to flag.
    pub const NONE: Caveats = Caveats {
        error_share: 0.0,
        lower_bound: false,
        latency_count: u64::MAX,
        ok: u64::MAX,
    };

    pub fn of(r: &LoadReport) -> Caveats {
        let failed = r.errors.total();
        let total = r.requests.total.max(failed);
        Caveats {
            error_share: if total == 0 {
                0.0
            } else {
                failed as f64 / total as f64
            },
            lower_bound: r.latency_lower_bound,
            latency_count: r.latency_us.count,
            ok: r.ok_in_window(),
        }
    }

    /// The caveats of several runs together: the worst of each.
    pub fn merge<'a>(runs: impl IntoIterator<Item = &'a LoadReport>) -> Option<Caveats> {
        runs.into_iter().map(Caveats::of).reduce(Caveats::worst)
    }

    fn worst(self, b: Caveats) -> Caveats {
        Caveats {
            error_share: self.error_share.max(b.error_share),
            lower_bound: self.lower_bound || b.lower_bound,
            latency_count: self.latency_count.min(b.latency_count),
            ok: self.ok.min(b.ok),
        }
    }

    /// More than 1% of requests failed.
    pub fn too_many_errors(&self) -> bool {
        self.error_share > ERROR_SHARE
    }

    /// Whether the percentile at quantile `q` (0.99 for p99) has fewer than
    /// [`BEYOND`] responses beyond it.
    pub fn thin(&self, q: f64) -> bool {
        (self.latency_count as f64) * (1.0 - q) < BEYOND - 1e-9
    }

    /// The row is not a result: more than [`ERROR_SHARE`] of requests
    /// failed, or no OK response came back in the window. Reports paint
    /// only these rows red.
    pub fn not_a_result(&self) -> bool {
        self.too_many_errors() || self.ok == 0
    }

    /// Why the row is not a result, in a few words ("95% of requests
    /// failed", "no OK response"); None when it is one.
    pub fn why_not_a_result(&self) -> Option<String> {
        if self.too_many_errors() {
            Some(format!("{} of requests failed", pct(self.error_share)))
        } else if self.ok == 0 {
            Some("no OK response".into())
        } else {
            None
        }
    }

    pub fn thin_throughput(&self) -> bool {
        self.ok < THIN_THROUGHPUT
    }

    /// Whether anything is flagged.
    pub fn any(&self) -> bool {
        self.too_many_errors()
            || self.lower_bound
            || self.thin(0.5)
            || self.thin(0.99)
            || self.thin_throughput()
    }

    /// A formatted percentile with its marks: "≥ 1.50s" for a lower bound,
    /// "18.46ms†" when it rests on too few responses beyond it.
    pub fn mark_latency(&self, q: f64, text: String) -> String {
        let text = if self.lower_bound {
            format!("≥ {text}")
        } else {
            text
        };
        if self.thin(q) {
            text + "†"
        } else {
            text
        }
    }

    /// A formatted throughput, marked "†" when it rests on few responses.
    pub fn mark_throughput(&self, text: String) -> String {
        if self.thin_throughput() {
            text + "†"
        } else {
            text
        }
    }

    /// The flags in words, for a notes column. Percentiles named are those
    /// the reports show (p50, p90, p99).
    pub fn notes(&self) -> Vec<String> {
        self.notes_for(&[(0.5, "p50"), (0.9, "p90"), (0.99, "p99")])
    }

    /// [`Caveats::notes`] naming these percentiles, the ones shown.
    pub fn notes_for(&self, shown: &[(f64, &str)]) -> Vec<String> {
        let mut v = Vec::new();
        if self.too_many_errors() {
            v.push(format!(
                "{} of requests failed: not a result",
                pct(self.error_share)
            ));
        }
        if self.lower_bound {
            v.push(
                "≥: too few responses, latency is the age of unanswered requests (a lower bound)"
                    .into(),
            );
        }
        let thin: Vec<&str> = shown
            .iter()
            .filter(|(q, _)| self.thin(*q))
            .map(|(_, n)| *n)
            .collect();
        // With no latency at all there is no figure to mark ("-").
        if !thin.is_empty() && self.latency_count > 0 {
            v.push(format!(
                "†: {} from {} latencies, fewer than {} beyond",
                thin.join("/"),
                self.latency_count,
                BEYOND as u64
            ));
        }
        if self.ok == 0 {
            v.push("no OK response in the window: not a result".into());
        } else if self.thin_throughput() {
            v.push(format!(
                "†: throughput from {} responses (under {THIN_THROUGHPUT})",
                self.ok
            ));
        }
        v
    }
}

impl Caveats {
    /// The flags in a few characters ("95% errors, ≥, † few"), for chart
    /// labels; None when nothing is flagged.
    pub fn short(&self) -> Option<String> {
        let mut v = Vec::new();
        if self.too_many_errors() {
            v.push(format!("{} errors", pct(self.error_share)));
        }
        if self.lower_bound {
            v.push("≥ no answers".to_string());
        }
        if self.thin(0.5) || self.thin(0.99) || self.thin_throughput() {
            v.push("† few".to_string());
        }
        (!v.is_empty()).then(|| v.join(", "))
    }
}

/// "3.2%", "100%", or ">99.9%" when a few did succeed.
fn pct(share: f64) -> String {
    let p = share * 100.0;
    if p >= 99.95 && share < 1.0 {
        ">99.9%".into()
    } else if p.fract() == 0.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caveats(error_share: f64, lower_bound: bool, latency_count: u64, ok: u64) -> Caveats {
        Caveats {
            error_share,
            lower_bound,
            latency_count,
            ok,
        }
    }

    #[test]
    fn percentiles_need_ten_responses_beyond_them() {
        // (count, q, thin)
        let cases = [
            (1000, 0.99, false),
            (999, 0.99, true),
            (100, 0.99, true),
            (100, 0.9, false),
            (99, 0.9, true),
            (20, 0.5, false),
            (19, 0.5, true),
            (0, 0.5, true),
            (10_000, 0.999, false),
        ];
        for (count, q, want) in cases {
            assert_eq!(
                caveats(0.0, false, count, count).thin(q),
                want,
                "{count} at {q}"
            );
        }
    }

    #[test]
    fn a_clean_large_run_has_no_flags() {
        let c = caveats(0.01, false, 5000, 5000);
        assert!(!c.any(), "{c:?}");
        assert!(!Caveats::default().any());
        assert!(c.notes().is_empty());
        assert_eq!(c.mark_latency(0.99, "1.00ms".into()), "1.00ms");
        assert_eq!(c.mark_throughput("5000".into()), "5000");
    }

    #[test]
    fn more_than_one_percent_errors_is_not_a_result() {
        let c = caveats(0.95, false, 5000, 5000);
        assert!(c.too_many_errors() && c.any() && c.not_a_result());
        assert_eq!(c.notes(), vec!["95% of requests failed: not a result"]);
        assert!(caveats(0.0101, false, 5000, 5000).too_many_errors());
        assert_eq!(pct(347_494.0 / 347_551.0), ">99.9%");
        assert_eq!(pct(0.032), "3.2%");
        assert_eq!(pct(1.0), "100%");
    }

    #[test]
    fn small_samples_and_lower_bounds_are_marked_and_said() {
        let c = caveats(0.0, true, 101, 101);
        assert_eq!(c.mark_latency(0.99, "1.50s".into()), "≥ 1.50s†");
        assert_eq!(c.mark_latency(0.5, "1.50s".into()), "≥ 1.50s");
        assert_eq!(c.mark_throughput("67".into()), "67†");
        let notes = c.notes().join("; ");
        assert!(notes.contains("lower bound"), "{notes}");
        assert!(notes.contains("p99 from 101 latencies"), "{notes}");
        assert!(notes.contains("throughput from 101 responses"), "{notes}");
    }

    /// Regression: unicorn with 2 workers, a 100 ms app, 32 connections,
    /// a 1.5 s window (`make run`): 30 answers in the window, none to a
    /// request sent in it. The note said "throughput from 0 responses"
    /// beside a throughput of 20 req/s.
    #[test]
    fn a_throughput_rests_on_the_answers_in_its_window() {
        let mut r = super::super::report::empty_report();
        r.requests.total = 30;
        r.requests.unfinished = 30;
        r.throughput_rps = 20.0;
        r.duration_s = 1.5;
        r.latency_us.count = 30;
        r.latency_us.p50 = 777_000;
        r.latency_lower_bound = true;
        let c = Caveats::of(&r);
        assert_eq!(c.ok, 30);
        let notes = c.notes().join("; ");
        assert!(notes.contains("throughput from 30 responses"), "{notes}");
        // Enough answers in the window: no mark, however few of them
        // answer requests sent in it.
        r.throughput_rps = 200.0;
        assert!(!Caveats::of(&r).thin_throughput());
    }

    #[test]
    fn only_errors_or_no_answer_make_a_row_not_a_result() {
        // (error_share, lower_bound, latency_count, ok, not a result)
        let cases = [
            (0.0, false, 5000, 5000, false),
            (0.0, true, 101, 101, false), // ≥ and †: quiet marks
            (0.0, false, 50, 40, false),
            (0.01, false, 5000, 5000, false),
            (0.0101, false, 5000, 5000, true),
            (0.0, true, 30, 0, true), // nothing completed
            (1.0, false, 0, 0, true),
        ];
        for (e, lb, n, ok, want) in cases {
            assert_eq!(
                caveats(e, lb, n, ok).not_a_result(),
                want,
                "{e} {lb} {n} {ok}"
            );
        }
        assert!(!Caveats::NONE.not_a_result());
        assert_eq!(Caveats::NONE.why_not_a_result(), None);
        assert_eq!(
            caveats(0.95, false, 5000, 0).why_not_a_result().as_deref(),
            Some("95% of requests failed")
        );
        assert_eq!(
            caveats(0.0, true, 30, 0).why_not_a_result().as_deref(),
            Some("no OK response")
        );
        let none = caveats(0.0, true, 30, 0).notes().join("; ");
        assert!(
            none.contains("no OK response in the window: not a result"),
            "{none}"
        );
        assert!(!none.contains("throughput from 0"), "{none}");
    }

    #[test]
    fn a_group_takes_the_worst_of_its_runs() {
        let a = caveats(0.0, false, 5000, 5000);
        let b = caveats(0.2, true, 50, 40);
        let m = a.worst(b);
        assert_eq!(m, b.worst(a));
        assert!(m.too_many_errors() && m.lower_bound && m.thin(0.9) && m.thin_throughput());
    }
}
