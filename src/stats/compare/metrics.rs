//! The metrics a comparison judges: the headline list (`METRICS`, in
//! table order, each with its words and whether higher is better), the
//! few judged per endpoint of a mix (`ENDPOINT_METRICS`, named
//! `endpoint:NAME:METRIC`), and the check of a metric's name.
//!
//! Names and words only: it never holds a figure, never judges a row and
//! never reads where a figure comes from (`store::figures` does).

/// Metrics compared, in table order: (name in compare-v1, words, higher is better).
pub const METRICS: &[(&str, &str, bool)] = &[
    ("throughput", "throughput", true),
    ("p50", "p50 latency", false),
    ("p90", "p90 latency", false),
    ("p99", "p99 latency", false),
    ("rss_peak", "RSS peak", false),
    ("pss_peak", "PSS peak", false),
    ("cpu_per_request", "server CPU per request", false),
    ("error_rate", "error rate", false),
    // Who got served (`load.fairness`), only when both sides have it.
    ("connections_starved", "connections never answered", false),
    ("jain_index", "fairness (Jain's index)", true),
    // Telemetry (`server_metrics.telemetry`), only when both sides have it.
    (
        "gc_runs_per_1k_requests",
        "GC runs per 1,000 requests",
        false,
    ),
    ("gc_time_share", "GC time share", false),
    ("queue_us_mean", "queue time", false),
    ("app_us_mean", "app time", false),
    // ActiveRecord's share of the app time (an app that loads it).
    ("db_us_mean", "SQL time", false),
    ("pool_wait_us_mean", "pool wait", false),
];

/// The metrics judged per endpoint of a mix, each row named
/// `endpoint:NAME:METRIC` ([`endpoint_metric`]): (METRIC, words, higher
/// is better). Three, not every figure: every row joins the family of the
/// headline rows (so the multiple-comparison control covers them) and so
/// raises the repeats each row needs to come out significant.
pub const ENDPOINT_METRICS: &[(&str, &str, bool)] = &[
    ("throughput", "throughput", true),
    ("p50", "p50 latency", false),
    ("p99", "p99 latency", false),
];

/// `endpoint:NAME:METRIC`, a per-endpoint row's metric in compare-v1.
pub fn endpoint_metric(endpoint: &str, metric: &str) -> String {
    format!("endpoint:{endpoint}:{metric}")
}

/// (endpoint, METRIC) of a per-endpoint row's metric; None for the
/// headline metrics.
pub fn split_endpoint_metric(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix("endpoint:")?.rsplit_once(':')
}

/// A metric in words: "p99 latency", "p99 latency of show"; "?" for a
/// name neither list knows.
pub fn metric_words(metric: &str) -> String {
    let (list, short, of) = match split_endpoint_metric(metric) {
        Some((e, m)) => (ENDPOINT_METRICS, m, Some(e)),
        None => (METRICS, metric, None),
    };
    let words = list.iter().find(|m| m.0 == short).map_or("?", |m| m.1);
    match of {
        Some(e) => format!("{words} of {e}"),
        None => words.to_string(),
    }
}

/// Whether a higher figure of this metric is better.
pub fn higher_is_better(metric: &str) -> bool {
    let (list, short) = match split_endpoint_metric(metric) {
        Some((_, m)) => (ENDPOINT_METRICS, m),
        None => (METRICS, metric),
    };
    list.iter().any(|m| m.0 == short && m.2)
}

/// `name` is a metric of `METRICS`, or a one-line error listing them
/// (`what` says where the name came from: `--metric`, `primary_metric`).
pub fn check_metric(what: &str, name: &str) -> Result<(), String> {
    if METRICS.iter().any(|m| m.0 == name) {
        return Ok(());
    }
    Err(format!(
        "{what} \"{name}\" is not a metric: use one of {}",
        METRICS.iter().map(|m| m.0).collect::<Vec<_>>().join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (metric, words, higher is better)
    #[test]
    fn endpoint_metrics_read_as_their_metric_of_the_endpoint() {
        let rows = [
            ("p99", "p99 latency", false),
            ("throughput", "throughput", true),
            ("endpoint:show:p99", "p99 latency of show", false),
            ("endpoint:show-2:throughput", "throughput of show-2", true),
            ("endpoint:show:rss_peak", "? of show", false),
            ("nonsense", "?", false),
        ];
        for (metric, words, higher) in rows {
            assert_eq!(metric_words(metric), words, "{metric}");
            assert_eq!(higher_is_better(metric), higher, "{metric}");
        }
        assert_eq!(
            split_endpoint_metric(&endpoint_metric("a", "p50")),
            Some(("a", "p50"))
        );
    }
}
