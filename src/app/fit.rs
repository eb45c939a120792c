//! Fitting a server into a budget (`rackbench fit`): each candidate
//! measured with real trials (`lab::trial::run_trial`, a fresh server per
//! repeat), the search `search::fit`, the document `report::fit`; and the
//! files a fit keeps. What it says goes to a sink.

use super::sink::Sink;
use crate::lab::trial::{run_trial, TrialRecord, TrialSpec};
use crate::plan::fit::{FitPlan, FitSettings, FitTarget};
use crate::report::fit::{self as page, FitDocument, FitsDocument};
use crate::search::fit::{fit_until, Candidate, FitOptions, Outcome, Repeat, Tried};
use anyhow::{Context, Result};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The budget on one trial's spec.
pub fn with_budget(spec: &mut TrialSpec, memory: Option<u64>, cpus: Option<f64>) {
    spec.budget = (memory.is_some() || cpus.is_some()).then_some(crate::budget::Budget {
        memory_limit_bytes: memory,
        cpus,
    });
}

/// One trial's memory peak and kills for memory: the group's own peak
/// and its kills with a budget, else the tree's PSS peak (pages shared
/// with a parent counted once, as the group counts them; RSS where PSS
/// was unreadable) and no kill.
fn budget_figures(rec: &TrialRecord) -> (u64, u64) {
    let m = &rec.server_metrics;
    if let Some(b) = &rec.budget {
        let peak = b
            .memory_peak_bytes
            .unwrap_or(m.pss_peak_bytes.unwrap_or(m.rss_peak_bytes));
        return (peak, b.oom_kills);
    }
    (m.pss_peak_bytes.unwrap_or(m.rss_peak_bytes), 0)
}

/// The setting in the words a team uses for this server.
fn setting(server: &str, processes: bool, threads: bool, t: &Tried) -> String {
    match server {
        "puma" => format!(
            "WEB_CONCURRENCY={} RAILS_MAX_THREADS={}",
            t.workers, t.threads
        ),
        "unicorn" => format!("worker_processes {}", t.workers),
        "passenger" => format!("--max-pool-size {}", t.workers),
        _ => match (processes, threads) {
            (true, true) => format!("workers={} threads={}", t.workers, t.threads),
            (true, false) => format!("workers={}", t.workers),
            (false, true) => format!("threads={}", t.threads),
            (false, false) => "the server as it is (nothing to vary)".into(),
        },
    }
}

/// One server's search from its base trial (the budget on it), as the
/// fit-v1 document; `name` is the server as the results name it. With
/// `keep`, each trial's record is written beside its directory.
pub fn fit_one(
    name: &str,
    spec: TrialSpec,
    settings: &FitSettings,
    (quiet, keep): (bool, bool),
    interrupt: &Arc<AtomicBool>,
    sink: &dyn Sink,
) -> FitDocument {
    let (processes, threads) = (spec.server.processes, spec.server.threads);
    let (memory, cpus) = spec
        .budget
        .map_or((None, None), |b| (b.memory_limit_bytes, b.cpus));
    let opts = FitOptions {
        memory_limit_bytes: memory,
        headroom: settings.headroom,
        slo_p99_us: settings.slo_p99_us,
        max_workers: settings.max_workers,
        max_threads: settings.max_threads,
        start_threads: spec.server.default_threads.max(1),
        threads,
        processes,
        seed: 0x0f17,
    };
    let server = spec.server.name.clone();
    let app = spec.app.name.clone();
    if !quiet {
        sink.note(&format!(
            "fitting {name} with {app}: up to {} workers × {} threads, {} trials each",
            if processes { settings.max_workers } else { 1 },
            if threads { settings.max_threads } else { 1 },
            settings.repeats
        ));
    }
    let measure = measure(spec, settings.repeats, (quiet, keep), sink);
    let result = fit_until(measure, opts, || interrupt.load(Ordering::Relaxed));
    FitDocument::new(
        (name, &app),
        (
            memory,
            cpus,
            settings.headroom,
            settings.slo_p99_us,
            settings.repeats,
        ),
        result,
        |t| setting(&server, processes, threads, t),
    )
}

/// One candidate's trials: `--repeats` fresh servers at its workers and
/// threads, each in the budget. With `keep` (--out), each trial's
/// rackbench/trial-v1 record goes beside its directory
/// (`trials/w2-t4-r1.json`): the fit document keeps only the figures the
/// search judged, the record keeps the rest (a mix's endpoints among them).
fn measure(
    spec: TrialSpec,
    repeats: usize,
    (quiet, keep): (bool, bool),
    sink: &dyn Sink,
) -> impl FnMut(Candidate) -> Outcome + '_ {
    move |c| {
        let mut out = Outcome::default();
        for r in 1..=repeats {
            let mut s = spec.clone();
            s.workers = spec.server.processes.then_some(c.workers);
            s.threads = spec.server.threads.then_some(c.threads);
            s.dir = spec.dir.join(format!("w{}-t{}-r{r}", c.workers, c.threads));
            let path = s.dir.with_extension("json");
            match run_trial(s) {
                Ok(rec) => {
                    if keep {
                        if let Err(e) = crate::store::write_json(&path, &rec) {
                            sink.note(&format!("  cannot write {}: {e}", path.display()));
                        }
                    }
                    let (memory_peak_bytes, oom_kills) = budget_figures(&rec);
                    let l = &rec.load.latency_us;
                    out.repeats.push(Repeat {
                        throughput_rps: rec.load.throughput_rps,
                        p50_us: l.p50,
                        p90_us: l.p90,
                        p99_us: l.p99,
                        errors: rec.as_step(0.0).errors,
                        memory_peak_bytes,
                        oom_kills,
                    });
                    if rec.interrupted {
                        break;
                    }
                }
                Err(e) => {
                    out.no_start = Some(e.to_string());
                    break;
                }
            }
        }
        if !quiet {
            sink.note(&candidate_line(c, &out));
        }
        out
    }
}

/// One line per candidate, as the search goes.
fn candidate_line(c: Candidate, o: &Outcome) -> String {
    let rps: Vec<String> = o
        .repeats
        .iter()
        .map(|r| format!("{:.0}", r.throughput_rps))
        .collect();
    format!(
        "  {:>3} workers × {:>3} threads: {} req/s{}",
        c.workers,
        c.threads,
        if rps.is_empty() {
            "-".into()
        } else {
            rps.join(", ")
        },
        o.no_start
            .as_ref()
            .map_or(String::new(), |w| format!(" (did not start: {w})"))
    )
}

/// `fit PLAN`'s line: what is fitted, with what, in what; the apps not
/// fitted and the servers skipped.
pub fn announce(name: &str, fits: &FitPlan, s: &FitSettings) -> String {
    let servers: Vec<&str> = fits.targets.iter().map(|t| t.name.as_str()).collect();
    let mut lines = vec![format!(
        "plan {name}: fit {} with {}, up to {} workers × {} threads, {} trials each",
        servers.join(", "),
        fits.app,
        s.max_workers,
        s.max_threads,
        s.repeats
    )];
    if !fits.other_apps.is_empty() {
        lines.push(format!(
            "  not fitted: {} (a fit takes the plan's first app; fit another with --app NAME)",
            fits.other_apps.join(", ")
        ));
    }
    lines.extend(fits.skipped.iter().map(|skip| format!("  skipped: {skip}")));
    lines.join("\n")
}

/// `fit PLAN`: each server's search in turn, until Ctrl-C. With `out`,
/// each server's trials, fit.json and fit.html go under OUT/SERVER/;
/// without, its trials go to a temporary directory.
pub fn fit_targets(
    targets: Vec<FitTarget>,
    settings: &FitSettings,
    out: Option<&Path>,
    quiet: bool,
    interrupt: &Arc<AtomicBool>,
    sink: &dyn Sink,
) -> Result<Vec<FitDocument>> {
    let mut docs = Vec::new();
    for mut t in targets {
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
        let dir = out.map(|o| o.join(crate::plan::slug(&t.name)));
        t.spec.dir = match &dir {
            Some(d) => d.join("trials"),
            None => std::env::temp_dir().join(format!(
                "rackbench-fit-{}-{}",
                std::process::id(),
                crate::plan::slug(&t.name)
            )),
        };
        let doc = fit_one(
            &t.name,
            t.spec,
            settings,
            (quiet, dir.is_some()),
            interrupt,
            sink,
        );
        if let Some(d) = &dir {
            write_server(d, &doc)?;
        }
        docs.push(doc);
    }
    Ok(docs)
}

/// DIR/SERVER/fit.json and fit.html.
pub fn write_server(dir: &Path, doc: &FitDocument) -> Result<()> {
    let json = dir.join("fit.json");
    crate::store::write_json(&json, doc)
        .with_context(|| format!("cannot write {}", json.display()))?;
    let html = dir.join("fit.html");
    std::fs::write(&html, page::page(doc))
        .with_context(|| format!("cannot write {}", html.display()))
}

/// --out's fits.json and fits.md, for a plan's fits.
pub fn write_fits(out: &Path, all: &FitsDocument) -> Result<()> {
    let json = out.join("fits.json");
    crate::store::write_json(&json, all)
        .with_context(|| format!("cannot write {}", json.display()))?;
    let md = out.join("fits.md");
    std::fs::write(&md, page::fits_markdown(all))
        .with_context(|| format!("cannot write {}", md.display()))
}

/// One fit's page (--html) and --out's fit.json.
pub fn write_fit(html: Option<&Path>, out: Option<&Path>, doc: &FitDocument) -> Result<()> {
    if let Some(path) = html {
        std::fs::write(path, page::page(doc))
            .with_context(|| format!("cannot write --html {}", path.display()))?;
    }
    if let Some(out) = out {
        let path = out.join("fit.json");
        crate::store::write_json(&path, doc)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The setting in a team's words, per server.
    #[test]
    fn each_server_gets_its_own_words() {
        let t: Tried = serde_json::from_value(serde_json::json!({
            "workers": 3, "threads": 5, "throughput_rps": 1.0, "throughput_spread": null,
            "throughput_samples_rps": [], "latency_us": {"p50": 1, "p90": 1, "p99": 1},
            "errors": 0, "memory_peak_bytes": 1, "oom_kills": 0, "verdict": "ok", "trials": 1
        }))
        .unwrap();
        let rows = [
            ("puma", true, true, "WEB_CONCURRENCY=3 RAILS_MAX_THREADS=5"),
            ("unicorn", true, false, "worker_processes 3"),
            ("passenger", true, false, "--max-pool-size 3"),
            ("mine", true, true, "workers=3 threads=5"),
            ("mine", true, false, "workers=3"),
        ];
        for (server, p, th, want) in rows {
            assert_eq!(setting(server, p, th, &t), want);
        }
    }
}
