//! `mirror` and `record`: the proxy run until stopped or for its
//! duration (a summary line a second), a shadow server of the lab among
//! its shadows; the `--out` directory, made before the proxy starts (so a
//! bad one fails first), and the mirror-v1 document and its page written
//! there at the end.

use super::sink::Sink;
use super::usage::usage;
use crate::lab::trial::LabServer;
use crate::load::Endpoint;
use crate::mirror::doc::{MirrorDoc, ShadowServerDoc};
use crate::mirror::{Mirror, MirrorConfig, Upstream};
use crate::report;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Runs the proxy of `cfg` until `stop` is set or `duration` has passed,
/// and returns its document. `shadow`, a server the lab started (stopped
/// here, or dropped on an error), is one more shadow, and its CPU, memory
/// and telemetry go into its shadow's entry.
pub fn serve(
    mut cfg: MirrorConfig,
    shadow: Option<(String, LabServer)>,
    duration: Option<Duration>,
    stop: &AtomicBool,
    sink: &dyn Sink,
) -> Result<MirrorDoc> {
    if let Some((name, server)) = &shadow {
        let url = match &server.endpoint {
            Endpoint::Tcp(a) => format!("http://{a}"),
            Endpoint::Unix(p) => {
                return Err(usage(format!(
                    "the shadow server listens on {} only; mirror to it over TCP (drop --behind's unix socket: --nginx-tcp)",
                    p.display()
                )))
            }
        };
        sink.note(&format!("shadow server {name} answering on {url}"));
        let u = Upstream::parse(&url).map_err(|e| usage(format!("--shadow-server: {e}")))?;
        cfg.shadows.push((name.clone(), u));
    }
    let mirror = Mirror::start(cfg)?;
    sink.note(&format!("mirror listening on http://{}/", mirror.addr));
    let t0 = Instant::now();
    let mut next = Duration::from_secs(1);
    loop {
        std::thread::sleep(Duration::from_millis(50));
        if stop.load(Ordering::Relaxed) || duration.is_some_and(|d| t0.elapsed() >= d) {
            break;
        }
        if t0.elapsed() >= next {
            let now = mirror.snapshot();
            now.publish_live();
            sink.note(&now.summary_line());
            next += Duration::from_secs(1);
        }
    }
    let mut doc = mirror.stop();
    doc.publish_live();
    if let Some((name, server)) = shadow {
        let commands = server.commands.clone();
        let (r, telemetry) = server.stop_with_telemetry(Some(t0));
        if let Some(sh) = doc.shadows.iter_mut().find(|s| s.name == name) {
            sh.server = Some(ShadowServerDoc {
                commands,
                cpu_user_s: r.cpu_user_s,
                cpu_sys_s: r.cpu_sys_s,
                rss_peak_bytes: r.rss_peak_bytes,
                rss_mean_bytes: r.rss_mean_bytes,
                processes_peak: r.processes_peak,
                samples: r.samples,
                telemetry,
            });
        }
    }
    Ok(doc)
}

/// Makes `--out`'s directory; failing, names the flag.
pub fn create_out(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create {}; pick a writable --out", dir.display()))
}

/// Writes `dir`/mirror.json (atomically) and `dir`/mirror.html; returns
/// their paths.
pub fn write_out(dir: &Path, doc: &MirrorDoc) -> Result<(PathBuf, PathBuf)> {
    let json = dir.join("mirror.json");
    crate::store::write_json(&json, doc)
        .with_context(|| format!("cannot write {}", json.display()))?;
    let page = dir.join("mirror.html");
    std::fs::write(&page, report::mirror::page(doc))
        .with_context(|| format!("cannot write {}", page.display()))?;
    Ok((json, page))
}
