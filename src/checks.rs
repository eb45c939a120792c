//! Pass/fail thresholds on a load's figures, as k6 users write them:
//! `p99<200ms`, `errors<1%`, `rps>5000`.
//!
//! One parser and one evaluator serve `load --check`, `trial --check` and a
//! plan's `checks`, so a threshold means the same everywhere. It only reads
//! a finished [`LoadReport`]; it never stops a run or prints.

use crate::load::report::LoadReport;
use crate::units::fmt_us;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a check looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metric {
    P50,
    P90,
    P99,
    P999,
    Max,
    Mean,
    /// Requests that did not end OK, in percent of the counted requests.
    Errors,
    /// OK responses per second over the counted window.
    Rps,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

/// One parsed threshold. Serialized as the text the user wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Check {
    text: String,
    metric: Metric,
    op: Op,
    /// Microseconds for latency, percent for errors, req/s for rps.
    threshold: f64,
}

/// How one check came out, as stored in records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The check as written, e.g. "p99<200ms".
    pub check: String,
    pub met: bool,
    /// The figure compared, in `unit`; absent when there was none (no OK
    /// response, so no latency).
    pub observed: Option<f64>,
    /// "us", "%" or "req/s".
    pub unit: String,
}

const USAGE: &str = "write it like p99<200ms, errors<1% or rps>5000 (metrics: p50, p90, p99, p999, max, mean, errors, rps; operators < <= > >=)";

impl Check {
    pub fn parse(text: &str) -> Result<Check, String> {
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let at = t
            .find(['<', '>'])
            .ok_or_else(|| format!("check '{text}' has no < or >: {USAGE}"))?;
        let (name, rest) = t.split_at(at);
        let (op, value) = if let Some(v) = rest.strip_prefix("<=") {
            (Op::Le, v)
        } else if let Some(v) = rest.strip_prefix(">=") {
            (Op::Ge, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Op::Lt, v)
        } else {
            (Op::Gt, &rest[1..])
        };
        if value.is_empty() {
            return Err(format!("check '{text}' has no threshold: {USAGE}"));
        }
        let metric = match name.to_ascii_lowercase().as_str() {
            "p50" => Metric::P50,
            "p90" => Metric::P90,
            "p99" => Metric::P99,
            "p999" | "p99.9" => Metric::P999,
            "max" => Metric::Max,
            "mean" | "avg" => Metric::Mean,
            "errors" => Metric::Errors,
            "rps" => Metric::Rps,
            other => return Err(format!("check '{text}': unknown metric '{other}'; {USAGE}")),
        };
        let threshold = match metric {
            Metric::Errors => {
                let pct = value.strip_suffix('%').ok_or_else(|| {
                    format!("check '{text}': give errors in percent, e.g. errors<1%")
                })?;
                pct.parse::<f64>()
                    .ok()
                    .filter(|p| p.is_finite() && (0.0..=100.0).contains(p))
                    .ok_or_else(|| {
                        format!("check '{text}': '{value}' is not a percentage from 0% to 100%")
                    })?
            }
            Metric::Rps => value
                .parse::<f64>()
                .ok()
                .filter(|r| r.is_finite() && *r >= 0.0)
                .ok_or_else(|| {
                    format!("check '{text}': '{value}' is not a number of requests per second, e.g. rps>5000")
                })?,
            _ => {
                if value.chars().all(|c| c.is_ascii_digit() || c == '.') {
                    return Err(format!(
                        "check '{text}': give the latency a unit, e.g. {name}<200ms"
                    ));
                }
                crate::units::duration(value)
                    .map_err(|e| format!("check '{text}': {e}"))?
                    .as_secs_f64()
                    * 1e6
            }
        };
        Ok(Check {
            text: text.trim().to_string(),
            metric,
            op,
            threshold,
        })
    }

    /// Compares the report's figure with the threshold.
    pub fn evaluate(&self, r: &LoadReport) -> CheckResult {
        let l = &r.latency_us;
        let latency = |v: f64| (l.count > 0).then_some(v);
        let (observed, unit) = match self.metric {
            Metric::P50 => (latency(l.p50 as f64), "us"),
            Metric::P90 => (latency(l.p90 as f64), "us"),
            Metric::P99 => (latency(l.p99 as f64), "us"),
            Metric::P999 => (latency(l.p999 as f64), "us"),
            Metric::Max => (latency(l.max as f64), "us"),
            Metric::Mean => (latency(l.mean), "us"),
            Metric::Errors => (Some(error_percent(r)), "%"),
            Metric::Rps => (Some(r.throughput_rps), "req/s"),
        };
        let met = observed.is_some_and(|v| match self.op {
            Op::Lt => v < self.threshold,
            Op::Le => v <= self.threshold,
            Op::Gt => v > self.threshold,
            Op::Ge => v >= self.threshold,
        });
        CheckResult {
            check: self.text.clone(),
            met,
            observed,
            unit: unit.into(),
        }
    }
}

/// Counted requests that did not end OK (errors, unanswered, unsent), in
/// percent; 100% when nothing was counted at all.
fn error_percent(r: &LoadReport) -> f64 {
    let total = r.requests.total.max(r.requests.ok + r.errors.total());
    if total == 0 {
        return 100.0;
    }
    (total - r.requests.ok.min(total)) as f64 * 100.0 / total as f64
}

impl TryFrom<String> for Check {
    type Error = String;
    fn try_from(s: String) -> Result<Check, String> {
        Check::parse(&s)
    }
}

impl From<Check> for String {
    fn from(c: Check) -> String {
        c.text
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Display for CheckResult {
    /// "check p99<200ms: met (p99 12.3ms)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let metric: String = self
            .check
            .chars()
            .take_while(|c| !matches!(c, '<' | '>'))
            .filter(|c| !c.is_whitespace())
            .collect();
        let seen = match (self.observed, self.unit.as_str()) {
            (None, _) => "no OK response to measure".to_string(),
            (Some(v), "us") => format!("{metric} {}", fmt_us(v)),
            (Some(v), "%") => format!("{metric} {v:.2}%"),
            (Some(v), _) => format!("{metric} {v:.0}"),
        };
        let verdict = if self.met { "met" } else { "NOT met" };
        write!(f, "check {}: {verdict} ({seen})", self.check)
    }
}

/// Every check against one report.
pub fn evaluate_all(checks: &[Check], r: &LoadReport) -> Vec<CheckResult> {
    checks.iter().map(|c| c.evaluate(r)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(ok: u64, errors: u64, p99_us: u64, rps: f64) -> LoadReport {
        let mut r = crate::load::report::empty_report();
        r.requests.ok = ok;
        r.requests.total = ok + errors;
        r.errors.status = errors;
        r.latency_us.count = ok;
        r.latency_us.p99 = p99_us;
        r.throughput_rps = rps;
        r
    }

    #[test]
    fn parses_what_k6_users_write_and_refuses_the_rest() {
        let good: &[(&str, f64)] = &[
            ("p99<200ms", 200_000.0),
            ("p50 <= 1.5ms", 1_500.0),
            ("max<2s", 2_000_000.0),
            ("p999<900us", 900.0),
            ("errors<1%", 1.0),
            ("errors<=0%", 0.0),
            ("rps>5000", 5000.0),
            ("rps >= 10", 10.0),
        ];
        for (text, want) in good {
            let c = Check::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(c.threshold, *want, "{text}");
        }
        let bad: &[(&str, &str)] = &[
            ("p99 200ms", "no < or >"),
            ("p99<", "no threshold"),
            ("p98<200ms", "unknown metric 'p98'"),
            ("p99<200", "give the latency a unit"),
            ("p99<200xs", "unknown unit"),
            ("errors<1", "in percent"),
            ("errors<150%", "0% to 100%"),
            ("rps>lots", "requests per second"),
        ];
        for (text, want) in bad {
            let err = Check::parse(text).unwrap_err();
            assert!(err.contains(want), "{text}: want '{want}' in {err}");
        }
    }

    #[test]
    fn evaluates_each_metric_with_its_operator() {
        let r = report(990, 10, 12_300, 4321.0);
        let cases: &[(&str, bool)] = &[
            ("p99<200ms", true),
            ("p99<12ms", false),
            ("p99<=12.3ms", true),
            ("errors<1%", false),
            ("errors<=1%", true),
            ("rps>5000", false),
            ("rps>=4321", true),
        ];
        for (text, met) in cases {
            let res = Check::parse(text).unwrap().evaluate(&r);
            assert_eq!(res.met, *met, "{text}: {res}");
        }
        let line = Check::parse("p99<200ms").unwrap().evaluate(&r).to_string();
        assert_eq!(line, "check p99<200ms: met (p99 12.30ms)");
    }

    #[test]
    fn a_run_with_no_ok_response_meets_no_latency_check() {
        // Zero latency from an empty histogram must not pass p99<200ms.
        let r = report(0, 0, 0, 0.0);
        let res = Check::parse("p99<200ms").unwrap().evaluate(&r);
        assert!(!res.met && res.observed.is_none(), "{res}");
        let res = Check::parse("errors<1%").unwrap().evaluate(&r);
        assert!(!res.met, "nothing counted is 100% errors: {res}");
    }

    #[test]
    fn a_check_is_stored_as_its_text() {
        let c = Check::parse("rps>5000").unwrap();
        assert_eq!(serde_json::to_string(&c).unwrap(), "\"rps>5000\"");
        let back: Check = serde_json::from_str("\"rps>5000\"").unwrap();
        assert_eq!(back, c);
        assert!(serde_json::from_str::<Check>("\"rps>x\"").is_err());
    }
}
