//! The load flags every load-driving subcommand shares (`LoadOptions`:
//! the URL's requests, connections, rate, length, checks; `--segment`'s
//! share of a load several generators make), each turned into the
//! engine's `LoadConfig`.

use super::{parse, usage};
use crate::load::segment::{self, Segment};
use crate::load::target::{self, parse_header, render_request, Endpoint, RequestSpec, Url};
use crate::load::{ExpectStatus, IoMode, LoadConfig, Pacing};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Load options, shared by every subcommand that drives load.
#[derive(Debug, Clone, Args)]
pub struct LoadOptions {
    /// Connections kept open (closed loop: each kept busy).
    #[arg(short = 'c', long, default_value_t = 10)]
    pub connections: usize,
    /// Length of the counted window, e.g. 10s, 500ms, 2m [default: 10s].
    #[arg(short = 'd', long, value_parser = parse::duration)]
    pub duration: Option<Duration>,
    /// Stop after this many counted requests.
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// Open loop: requests per second on a fixed schedule; latency is
    /// measured from each request's scheduled start.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Open loop: send a request up to this late (e.g. 1ms) so the ones
    /// due together go out on one wake-up; costs less CPU per request,
    /// adds up to this much to latency (still counted from the due time)
    /// and sends in bursts [default: 0, each at its due time].
    #[arg(long, value_parser = parse::duration, default_value = "0s", hide_default_value = true)]
    pub slack: Duration,
    /// Load applied before the counted window, shown only in the timeline.
    #[arg(long, value_parser = parse::duration, default_value = "0s")]
    pub warmup: Duration,
    /// End the warm-up once throughput is steady (3 s within 5%); --warmup is then its ceiling.
    #[arg(long, requires = "warmup")]
    pub warmup_until_steady: bool,
    /// Send `Connection: close` and open a new connection per request.
    #[arg(long)]
    pub no_keepalive: bool,
    /// Requests written back to back on each connection before waiting.
    #[arg(long, default_value_t = 1)]
    pub pipeline: usize,
    /// HTTP method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Extra request header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Request body.
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Request body read from a file.
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// Connect to this unix socket instead of the URL's host and port.
    #[arg(long)]
    pub unix_socket: Option<PathBuf>,
    /// A request unanswered this long counts as a timeout.
    #[arg(long, value_parser = parse::duration, default_value = "10s")]
    pub timeout: Duration,
    /// Statuses that count as OK, e.g. 200 or 2xx,304 [default: 2xx,3xx].
    #[arg(long, value_parser = parse::expect_status)]
    pub expect_status: Option<ExpectStatus>,
    /// The body must contain this text.
    #[arg(long)]
    pub expect_body: Option<String>,
    /// Pin load threads to these CPUs, e.g. 0 or 0-1.
    #[arg(long, value_parser = parse::cpu_list)]
    // The full path keeps clap from reading `Vec` as "the flag repeated"
    // (it panicked on any use): the value is one list.
    pub load_cpus: Option<::std::vec::Vec<usize>>,
    /// What the connection loop waits on: auto = io_uring where the
    /// kernel has it (Linux 6.1+), epoll otherwise.
    #[arg(long, value_enum, default_value_t = IoArg::Auto)]
    pub io: IoArg,
    /// A request mix (docs/MIX_FORMAT.md): each request drawn by weight
    /// from its endpoints, each judged by its own `expect`; the URL then
    /// gives only the host.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["headers", "body", "body_file", "expect_status", "expect_body"])]
    pub mix: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum IoArg {
    Auto,
    Epoll,
    #[value(name = "io_uring", alias = "uring")]
    IoUring,
}

/// Running one share of a load that several generators make together
/// (docs/SCALING.md).
#[derive(Debug, Clone, Args)]
pub struct SegmentOptions {
    /// Run segment I of N (I from 0, e.g. 0/4; a Kubernetes Indexed Job's
    /// JOB_COMPLETION_INDEX is I): its share of -c, --rate and -n, on the
    /// whole schedule's slots; the JSON carries what `rackbench merge` needs.
    #[arg(long, value_parser = parse_segment)]
    pub segment: Option<Segment>,
    /// Start (warm-up first) at this wall-clock time: RFC 3339 UTC like
    /// 2026-11-23T21:00:00Z, or unix seconds like 1795467600.5.
    #[arg(long)]
    pub start_at: Option<String>,
    /// Also write the latency histograms as an HdrHistogram interval log
    /// (one interval per second, compressed V2) for HdrHistogram's tools.
    #[arg(long)]
    pub hist_out: Option<PathBuf>,
}

fn parse_segment(text: &str) -> Result<Segment, String> {
    Segment::parse(text)
}

impl SegmentOptions {
    /// Narrows `config` to this segment's share and sets its start; every
    /// share that comes out empty is a usage error naming the fix.
    pub fn apply(&self, config: &mut LoadConfig) -> Result<()> {
        if let Some(text) = &self.start_at {
            let at = segment::parse_start_at(text, std::time::SystemTime::now()).map_err(usage)?;
            config.start_at = Some(at);
        }
        // A start time alone embeds them too: the document then says
        // where on the wall clock it ran, and how late (`segment.late_ms`).
        config.keep_histograms =
            self.segment.is_some() || self.hist_out.is_some() || self.start_at.is_some();
        let Some(seg) = self.segment else {
            return Ok(());
        };
        let connections = seg.share(config.connections as u64) as usize;
        if connections == 0 {
            return Err(usage(format!(
                "--segment {seg} gets no connections of -c {}: give at least -c {} (one per segment), or fewer segments",
                config.connections, seg.count
            )));
        }
        config.connections = connections;
        if let Some(n) = config.requests {
            let mine = seg.share(n);
            if mine == 0 {
                return Err(usage(format!(
                    "--segment {seg} gets no requests of -n {n}: give at least -n {} (one per segment), or fewer segments",
                    seg.count
                )));
            }
            config.requests = Some(mine);
        }
        if let Pacing::Rate(r) = config.pacing {
            config.pacing = Pacing::Rate(r / f64::from(seg.count));
        }
        config.segment = Some(seg);
        Ok(())
    }
}

impl LoadOptions {
    /// `--mix FILE` read, checked and rendered for `url`'s host; a
    /// mistake in it, or a flag it replaces, is a usage error naming the fix.
    fn read_mix(&self, url: &Url) -> Result<Option<Arc<crate::load::mix::Mix>>> {
        let Some(path) = &self.mix else {
            return Ok(None);
        };
        if !self.method.eq_ignore_ascii_case("GET") {
            return Err(usage(
                "--mix gives each endpoint its method: drop --method (or set method in the mix file)"
                    .into(),
            ));
        }
        if url.path != "/" {
            return Err(usage(format!(
                "--mix gives the paths: write the URL as http://{}/ (its path {} would be ignored)",
                url.host_header(),
                url.path
            )));
        }
        let mix = crate::load::mix::Mix::load(path).map_err(|e| usage(e.to_string()))?;
        let mix = mix
            .render(url, !self.no_keepalive)
            .map_err(|e| usage(e.to_string()))?;
        Ok(Some(Arc::new(mix)))
    }

    /// Checks the options and renders the request: every mistake a user
    /// can make here is a [`super::UsageError`] naming the fix.
    pub fn to_config(&self, url: &str, threads: usize) -> Result<LoadConfig> {
        if self.connections == 0 {
            return Err(usage("--connections must be at least 1".into()));
        }
        if threads == 0 {
            return Err(usage("--threads must be at least 1".into()));
        }
        let io = match self.io {
            IoArg::Auto => IoMode::Auto,
            IoArg::Epoll => IoMode::Epoll,
            IoArg::IoUring => IoMode::Uring,
        };
        let pacing = self.rate.map_or(Pacing::Closed, Pacing::Rate);
        if self.pipeline == 0 {
            return Err(usage(
                "--pipeline must be at least 1 (1 means no pipelining)".into(),
            ));
        }
        if self.pipeline > 1 && self.no_keepalive {
            return Err(usage(
                "--pipeline needs keep-alive: drop --no-keepalive or --pipeline".into(),
            ));
        }
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0) {
                return Err(usage(format!(
                    "--rate {r} must be a positive number of requests per second"
                )));
            }
        }
        if self.requests == Some(0) {
            return Err(usage("--requests must be at least 1".into()));
        }
        if self.duration.is_some_and(|d| d.is_zero()) {
            return Err(usage(
                "--duration must be longer than zero, e.g. 10s".into(),
            ));
        }
        if self.timeout.is_zero() {
            return Err(usage("--timeout must be longer than zero, e.g. 10s".into()));
        }
        if let Some(cpus) = &self.load_cpus {
            crate::load::cpus::check(cpus, "--load-cpus").map_err(usage)?;
        }
        let parsed = Url::parse(url).map_err(|e| usage(e.to_string()))?;
        let endpoint = match &self.unix_socket {
            Some(p) => Endpoint::Unix(p.clone()),
            None => Endpoint::Tcp(parsed.resolve().map_err(|e| usage(e.to_string()))?),
        };
        let headers = self
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<Vec<_>, target::TargetError>>()
            .map_err(|e| usage(e.to_string()))?;
        let body = match (&self.body, &self.body_file) {
            (Some(b), _) => b.clone().into_bytes(),
            (None, Some(path)) => crate::app::load::read_body(path)?,
            (None, None) => Vec::new(),
        };
        let method = self.method.to_ascii_uppercase();
        let spec = RequestSpec {
            method: method.clone(),
            headers,
            body,
            keep_alive: !self.no_keepalive,
        };
        let request = render_request(&parsed, &spec).map_err(|e| usage(e.to_string()))?;
        let mix = self.read_mix(&parsed)?;
        Ok(LoadConfig {
            url: url.to_string(),
            endpoint,
            request,
            head_request: method == "HEAD",
            stop_on_error: false,
            connections: self.connections,
            threads,
            pacing,
            slack: self.slack,
            duration: match (self.duration, self.requests) {
                (None, None) => Some(Duration::from_secs(10)),
                (d, _) => d,
            },
            requests: self.requests,
            warmup: self.warmup,
            warmup_until_steady: self.warmup_until_steady,
            pipeline: self.pipeline,
            keep_alive: !self.no_keepalive,
            timeout: self.timeout,
            expect_status: self.expect_status.clone().unwrap_or(ExpectStatus::Success),
            expect_body: self.expect_body.clone().unwrap_or_default().into_bytes(),
            cpus: self.load_cpus.clone().unwrap_or_default(),
            interrupt: Arc::new(AtomicBool::new(false)),
            io,
            schedule: None,
            segment: None,
            start_at: None,
            keep_histograms: false,
            slow: None,
            mix,
            observer: crate::load::installed_observer(),
        })
    }
}

/// `--slack` without an open loop is a usage error that says what to add
/// (`open_with`) instead of a flag silently ignored.
pub(crate) fn slack_needs_open_loop(slack: &Duration, open: bool, open_with: &str) -> Result<()> {
    if slack.is_zero() || open {
        return Ok(());
    }
    Err(usage(format!(
        "--slack applies to an open loop: add {open_with} (a closed loop sends each request \
         when the previous answer comes, so there is no schedule to be late to)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::UsageError;

    fn config(c: usize, n: Option<u64>, rate: Option<f64>) -> LoadConfig {
        let mut cfg = LoadConfig::get("http://127.0.0.1:9/").unwrap();
        cfg.connections = c;
        cfg.requests = n;
        cfg.pacing = rate.map_or(Pacing::Closed, Pacing::Rate);
        cfg
    }

    fn opts(seg: &str) -> SegmentOptions {
        SegmentOptions {
            segment: Some(Segment::parse(seg).unwrap()),
            start_at: None,
            hist_out: None,
        }
    }

    #[test]
    fn a_segment_takes_its_share_and_an_empty_share_is_refused() {
        let mut cfg = config(7, Some(10), Some(300.0));
        opts("0/3").apply(&mut cfg).unwrap();
        assert_eq!((cfg.connections, cfg.requests), (3, Some(4)));
        assert_eq!(cfg.pacing, Pacing::Rate(100.0));
        assert!(cfg.keep_histograms);
        let mut cfg = config(7, Some(10), None);
        opts("2/3").apply(&mut cfg).unwrap();
        assert_eq!((cfg.connections, cfg.requests), (2, Some(3)));
        assert_eq!(cfg.pacing, Pacing::Closed);

        let err = opts("3/4").apply(&mut config(3, None, None)).unwrap_err();
        assert!(
            err.to_string()
                .contains("--segment 3/4 gets no connections of -c 3"),
            "{err}"
        );
        assert!(err.downcast_ref::<UsageError>().is_some());
        let err = opts("2/3")
            .apply(&mut config(3, Some(2), None))
            .unwrap_err();
        assert!(
            err.to_string().contains("gets no requests of -n 2"),
            "{err}"
        );
    }

    #[test]
    fn a_start_time_alone_keeps_what_says_how_late() {
        let o = SegmentOptions {
            segment: None,
            start_at: Some(format!(
                "{}",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_secs()
                    + 60
            )),
            hist_out: None,
        };
        let mut cfg = config(2, None, None);
        o.apply(&mut cfg).unwrap();
        assert!(cfg.keep_histograms && cfg.start_at.is_some() && cfg.segment.is_none());
        assert_eq!(cfg.connections, 2);
    }

    #[test]
    fn a_start_time_far_off_is_a_usage_error() {
        let mut o = opts("0/2");
        o.start_at = Some("2020-01-01T00:00:00Z".into());
        let err = o.apply(&mut config(2, None, None)).unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some());
        assert!(err.to_string().contains("h ago"), "{err}");
    }
}
