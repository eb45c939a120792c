//! `--fail-if` rules (`METRIC>+5%`, `METRIC<-3%`): parsed from the
//! command line's text, and the judged rows whose significant change
//! crosses one.
//!
//! It never judges a row and never sets an exit code: `cli::compare`
//! turns a breach into one.

use super::metrics::{split_endpoint_metric, ENDPOINT_METRICS, METRICS};
use super::row::Row;

/// A `--fail-if` rule: `METRIC>+5%` or `METRIC<-3%`.
#[derive(Debug, Clone, PartialEq)]
pub struct FailIf {
    pub metric: String,
    /// true for `>`, false for `<`.
    pub above: bool,
    pub threshold_pct: f64,
}

impl FailIf {
    pub fn parse(s: &str) -> Result<FailIf, String> {
        let bad = || {
            format!(
                "--fail-if `{s}`: write METRIC>+N% or METRIC<-N% (e.g. 'p99>+5%', 'throughput<-3%'); metrics: {}, and with a mix endpoint:NAME:throughput|p50|p99",
                METRICS.iter().map(|m| m.0).collect::<Vec<_>>().join(", ")
            )
        };
        let (metric, rest, above) = if let Some((m, r)) = s.split_once('>') {
            (m, r, true)
        } else if let Some((m, r)) = s.split_once('<') {
            (m, r, false)
        } else {
            return Err(bad());
        };
        let metric = metric.trim();
        let per_endpoint = split_endpoint_metric(metric)
            .is_some_and(|(e, m)| !e.is_empty() && ENDPOINT_METRICS.iter().any(|x| x.0 == m));
        if !METRICS.iter().any(|m| m.0 == metric) && !per_endpoint {
            return Err(bad());
        }
        let number = rest.trim().strip_suffix('%').ok_or_else(bad)?;
        let threshold_pct: f64 = number.trim().parse().map_err(|_| bad())?;
        Ok(FailIf {
            metric: metric.to_string(),
            above,
            threshold_pct,
        })
    }

    /// Rows whose *significant* change crosses this line.
    pub fn breaches<'a>(&self, rows: &'a [Row]) -> Vec<&'a Row> {
        rows.iter()
            .filter(|r| r.metric == self.metric && r.significant)
            .filter(|r| match r.change_pct {
                Some(c) if self.above => c > self.threshold_pct,
                Some(c) => c < self.threshold_pct,
                // A significant rise from zero crosses any "more than" line.
                None => self.above && r.b > r.a,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::judge::judge;
    use super::super::row::tests::row;
    use super::*;

    #[test]
    fn fail_if_parses_and_only_fires_on_significant_crossings() {
        let f = FailIf::parse("p99>+5%").unwrap();
        assert_eq!(
            f,
            FailIf {
                metric: "p99".into(),
                above: true,
                threshold_pct: 5.0
            }
        );
        let g = FailIf::parse("throughput<-3%").unwrap();
        assert!(!g.above && g.threshold_pct == -3.0);
        for bad in [
            "p99>5",
            "p98>+5%",
            "p99=+5%",
            "throughput<-x%",
            "endpoint:show:p90>+5%",
            "endpoint::p99>+5%",
        ] {
            assert!(FailIf::parse(bad).is_err(), "{bad}");
        }
        let e = FailIf::parse("endpoint:show:p99>+10%").unwrap();
        assert_eq!(
            e.metric, "endpoint:show:p99",
            "a mix's endpoint gates alone"
        );
        let a = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2];
        let worse: Vec<f64> = a.iter().map(|x| x * 1.10).collect();
        let mut rows = vec![row("p99", &a, &worse)];
        judge(&mut rows);
        assert_eq!(f.breaches(&rows).len(), 1);
        assert_eq!(FailIf::parse("p99>+15%").unwrap().breaches(&rows).len(), 0);
        // The same 10% from two runs per side is noise as far as we know: no failure.
        let mut noisy = vec![row("p99", &a[..2], &worse[..2])];
        judge(&mut noisy);
        assert!(f.breaches(&noisy).is_empty());
    }
}
