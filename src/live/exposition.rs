//! `/metrics`: a snapshot of the board in the OpenMetrics text format, or
//! in Prometheus' text format 0.0.4, by the request's Accept header. Both
//! are written by `prometheus-client` (the Prometheus project's Rust
//! client, Apache-2.0 OR MIT) from one collector, so the two formats
//! carry the same families and values. docs/LIVE.md lists every metric.

use super::snapshot::{error_kinds, Series, Snapshot, BUCKETS_S};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

/// The OpenMetrics text format's content type.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Prometheus' text format 0.0.4's content type.
pub const PROMETHEUS_TEXT: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Whether an Accept header asks for OpenMetrics (any range naming it
/// with a weight above zero); anything else gets the 0.0.4 text, which
/// every Prometheus and most other scrapers read.
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',').any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let kind = parts.next().unwrap_or("");
            let q = parts
                .filter_map(|p| p.strip_prefix("q="))
                .find_map(|q| q.parse::<f64>().ok())
                .unwrap_or(1.0);
            kind.eq_ignore_ascii_case("application/openmetrics-text") && q > 0.0
        })
    })
}

/// The snapshot as exposition text and its content type.
pub fn render(snap: Snapshot, openmetrics: bool) -> (String, &'static str) {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Families(snap)));
    let mut out = String::new();
    if openmetrics {
        prometheus_client::encoding::text::encode(&mut out, &registry)
            .expect("writing to a String cannot fail");
        (out, OPENMETRICS)
    } else {
        prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)
            .expect("writing to a String cannot fail");
        (out, PROMETHEUS_TEXT)
    }
}

/// The families of one snapshot, written on each scrape.
#[derive(Debug)]
struct Families(Snapshot);

type Labels = Vec<(String, String)>;

/// One family: its descriptor, then each label set's value.
fn family<M: EncodeMetric>(
    enc: &mut DescriptorEncoder,
    (name, help, unit): (&str, &str, Option<Unit>),
    kind: MetricType,
    values: impl IntoIterator<Item = (Labels, M)>,
) -> Result<(), std::fmt::Error> {
    let mut values = values.into_iter().peekable();
    if values.peek().is_none() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, unit.as_ref(), kind)?;
    for (labels, v) in values {
        v.encode(m.encode_family(&labels)?)?;
    }
    Ok(())
}

fn with(mut labels: Labels, name: &str, value: &str) -> Labels {
    labels.push((name.to_string(), value.to_string()));
    labels
}

impl Families {
    /// Each label set's counters and its latency histogram.
    fn counters(&self, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let series: Vec<(Labels, &Series)> = (self.0.series.iter())
            .map(|(k, s)| (k.as_ref().map(|l| l.pairs()).unwrap_or_default(), s))
            .collect();
        let counter = |f: &dyn Fn(&Series) -> u64| {
            (series.iter())
                .map(|(l, s)| (l.clone(), ConstCounter::new(f(s))))
                .collect::<Vec<_>>()
        };
        family(
            enc,
            (
                "rackbench_requests",
                "Requests that ended, answered or failed, warm-up included.",
                None,
            ),
            MetricType::Counter,
            counter(&|s| s.requests()),
        )?;
        family(
            enc,
            (
                "rackbench_ok",
                "Requests answered as expected (status and body), warm-up included.",
                None,
            ),
            MetricType::Counter,
            counter(&|s| s.ok),
        )?;
        let errors = series.iter().flat_map(|(l, s)| {
            error_kinds(&s.errors)
                .into_iter()
                .map(|(kind, n)| (with(l.clone(), "kind", kind), ConstCounter::new(n)))
        });
        family(
            enc,
            (
                "rackbench_errors",
                "Requests failed, by kind (connect, timeout, reset, parse, status, body).",
                None,
            ),
            MetricType::Counter,
            errors,
        )?;
        self.histogram(enc, &series)?;
        let cpu = (self.0.series.iter())
            .filter_map(|(k, s)| Some((k.as_ref()?.pairs(), ConstCounter::new(s.cpu_s))));
        family(
            enc,
            (
                "rackbench_server_cpu",
                "CPU time of the server's process tree, user and system.",
                Some(Unit::Seconds),
            ),
            MetricType::Counter,
            cpu,
        )
    }

    fn histogram(
        &self,
        enc: &mut DescriptorEncoder,
        series: &[(Labels, &Series)],
    ) -> Result<(), std::fmt::Error> {
        if series.is_empty() {
            return Ok(());
        }
        let mut m = enc.encode_descriptor(
            "rackbench_latency",
            "Latency of the OK answers, from when each request was due, warm-up included.",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for (labels, s) in series {
            let buckets: Vec<(f64, u64)> = (BUCKETS_S.iter().copied())
                .chain([f64::INFINITY])
                .zip(s.buckets)
                .collect();
            m.encode_family(labels)?.encode_histogram::<NoLabelSet>(
                s.latency_sum_s,
                s.ok,
                &buckets,
                None,
            )?;
        }
        Ok(())
    }

    /// The current trial's gauges: its HDR quantiles, the server, the
    /// telemetry and the plan's progress.
    fn gauges(&self, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        let now = s.labels.as_ref().map(|l| l.pairs()).unwrap_or_default();
        let quantiles = s.latency.iter().flat_map(|l| {
            [
                ("0.5", l.p50_ms),
                ("0.9", l.p90_ms),
                ("0.99", l.p99_ms),
                ("0.999", l.p999_ms),
                ("1", l.max_ms),
            ]
            .map(|(q, v)| (with(now.clone(), "quantile", q), ConstGauge::new(v / 1e3)))
        });
        family(
            enc,
            (
                "rackbench_latency_quantile",
                "The current trial's OK latency at a quantile (HDR, counted window; 1 is the maximum).",
                Some(Unit::Seconds),
            ),
            MetricType::Gauge,
            quantiles,
        )?;
        let server = s.server.clone().unwrap_or_default();
        let int = |v: Option<u64>| v.map(|v| (now.clone(), ConstGauge::new(v as i64)));
        for (name, help, unit, v) in [
            (
                "rackbench_server_rss",
                "Resident memory of the server's process tree.",
                Some(Unit::Bytes),
                server.rss_bytes,
            ),
            (
                "rackbench_server_pss",
                "Proportional memory of the server's process tree (shared pages split).",
                Some(Unit::Bytes),
                server.pss_bytes,
            ),
            (
                "rackbench_server_accept_queue",
                "Connections waiting in the server's accept queues.",
                None,
                server.accept_queue.map(u64::from),
            ),
        ] {
            family(enc, (name, help, unit), MetricType::Gauge, int(v))?;
        }
        let t = s.telemetry.unwrap_or_default();
        for (name, what, v) in [
            (
                "rackbench_telemetry_queue",
                "between nginx and the app (behind nginx)",
                t.queue_ms,
            ),
            ("rackbench_telemetry_app", "in the app", t.app_ms),
            ("rackbench_telemetry_gc", "in garbage collection", t.gc_ms),
            ("rackbench_telemetry_db", "in the database", t.db_ms),
        ] {
            let help = format!("The current trial's mean time per request {what} (telemetry).");
            let v = v.map(|ms| (now.clone(), ConstGauge::new(ms / 1e3)));
            family(
                enc,
                (name, &help, Some(Unit::Seconds)),
                MetricType::Gauge,
                v,
            )?;
        }
        family(
            enc,
            (
                "rackbench_trials_done",
                "Trials of the plan ended so far.",
                None,
            ),
            MetricType::Gauge,
            [(Labels::new(), ConstGauge::new(s.trials_done as i64))],
        )?;
        let planned = s
            .trials_total
            .map(|n| (Labels::new(), ConstGauge::new(n as i64)));
        family(
            enc,
            (
                "rackbench_trials_planned",
                "Trials the plan runs in all.",
                None,
            ),
            MetricType::Gauge,
            planned,
        )
    }

    /// A mirror's shadows: counts and paired latency, by shadow.
    fn shadows(&self, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let now = (self.0.labels.as_ref())
            .map(|l| l.pairs())
            .unwrap_or_default();
        let by = |name: &str| with(now.clone(), "shadow", name);
        let shadows = &self.0.shadows;
        for (name, help, f) in [
            (
                "rackbench_shadow_requests",
                "Requests mirrored to a shadow that ended.",
                (|s| s.requests) as fn(&super::snapshot::Shadow) -> u64,
            ),
            (
                "rackbench_shadow_ok",
                "A shadow's answers that matched the primary's status.",
                |s| s.ok,
            ),
            (
                "rackbench_shadow_errors",
                "A shadow's requests that failed or answered another status.",
                |s| s.errors,
            ),
        ] {
            let v = shadows
                .iter()
                .map(|s| (by(&s.name), ConstCounter::new(f(s))));
            family(enc, (name, help, None), MetricType::Counter, v)?;
        }
        let q = shadows.iter().flat_map(|s| {
            [("0.5", s.p50_ms), ("0.99", s.p99_ms)]
                .into_iter()
                .filter_map(|(q, v)| {
                    Some((with(by(&s.name), "quantile", q), ConstGauge::new(v? / 1e3)))
                })
        });
        family(
            enc,
            (
                "rackbench_shadow_latency_quantile",
                "A shadow's latency at a quantile, from sending its copy to its answer.",
                Some(Unit::Seconds),
            ),
            MetricType::Gauge,
            q,
        )?;
        let paired = shadows
            .iter()
            .filter_map(|s| Some((by(&s.name), ConstGauge::new(s.paired_median_ms? / 1e3))));
        family(
            enc,
            (
                "rackbench_shadow_paired_median",
                "Median of shadow minus primary latency over the requests both answered.",
                Some(Unit::Seconds),
            ),
            MetricType::Gauge,
            paired,
        )
    }
}

impl Families {
    /// The proxy's own traffic (`mirror`, `record`).
    fn proxy(&self, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(p) = self.0.proxy else {
            return Ok(());
        };
        for (name, help, n) in [
            (
                "rackbench_proxy_requests",
                "Requests the mirror's proxy received.",
                p.requests,
            ),
            (
                "rackbench_proxy_errors",
                "Requests the proxy answered 502 or 504: the primary failed or timed out.",
                p.errors,
            ),
            (
                "rackbench_proxy_recorded",
                "Requests written to the record file.",
                p.recorded,
            ),
        ] {
            let v = [(Labels::new(), ConstCounter::new(n))];
            family(enc, (name, help, None), MetricType::Counter, v)?;
        }
        let q = [("0.5", p.p50_ms), ("0.99", p.p99_ms)]
            .into_iter()
            .filter_map(|(q, v)| {
                Some((
                    with(Labels::new(), "quantile", q),
                    ConstGauge::new(v? / 1e3),
                ))
            });
        family(
            enc,
            (
                "rackbench_proxy_latency_quantile",
                "The primary's latency at a quantile, from a request's arrival to its answer.",
                Some(Unit::Seconds),
            ),
            MetricType::Gauge,
            q,
        )
    }
}

impl Collector for Families {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.counters(&mut enc)?;
        self.gauges(&mut enc)?;
        self.shadows(&mut enc)?;
        self.proxy(&mut enc)
    }
}
