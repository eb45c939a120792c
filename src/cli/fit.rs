//! `rackbench fit`: the workers × threads that give the most throughput
//! inside a memory (and CPU) budget, under a latency objective, with no
//! errors and no worker killed for memory. Each candidate is measured with
//! real trials (`lab::trial::run_trial`, a fresh server per repeat); the
//! search is `search::fit`, the document and page `report::fit`.

use super::load::{stop_on_signals, LoadOptions};
use super::trial::ServerOptions;
use super::usage;
use crate::lab::trial::{run_trial, TrialRecord, TrialSpec};
use crate::report::fit::{self as page, FitDocument};
use crate::search::fit::{fit_until, Candidate, FitOptions, Outcome, Repeat, Tried};
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct FitArgs {
    #[command(flatten)]
    pub server: ServerOptions,
    /// Load options; --duration is each trial's counted length [default: 5s].
    #[command(flatten)]
    pub load: LoadOptions,
    /// Load generator threads.
    #[arg(long, default_value_t = 1)]
    pub load_threads: usize,
    /// Memory to keep free under the peak, a share of --memory: 10% or 0.1.
    #[arg(long, default_value = "10%", value_parser = parse_share)]
    pub headroom: f64,
    /// The latency objective, e.g. p99=200ms.
    #[arg(long, value_parser = crate::search::parse_slo)]
    pub slo: Option<u64>,
    /// Trials per configuration (compare's test needs 4 a side to tell
    /// the best from its runner-up).
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// The most worker processes tried.
    #[arg(long, default_value_t = 8)]
    pub max_workers: u32,
    /// The most threads per worker tried.
    #[arg(long, default_value_t = 16)]
    pub max_threads: u32,
    /// Print one JSON document (rackbench/fit-v1).
    #[arg(long)]
    pub json: bool,
    /// Write the page (a heatmap of workers × threads) to this file.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Keep fit.json, each trial's record and the servers' logs here.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// "10%" or "0.1": a share in 0..1.
fn parse_share(s: &str) -> Result<f64, String> {
    let v = match s.trim().strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => s.trim().parse::<f64>(),
    };
    match v {
        Ok(v) if (0.0..1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}' is not a headroom: give a share under 100%, e.g. 10% or 0.1"
        )),
    }
}

/// The budget on one trial's spec.
fn with_budget(spec: &mut TrialSpec, memory: Option<u64>, cpus: Option<f64>) {
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

pub fn run(args: FitArgs) -> Result<ExitCode> {
    check(&args)?;
    let interrupt = Arc::new(AtomicBool::new(false));
    stop_on_signals(&interrupt, false);
    crate::load::raise_open_files_limit();
    let mut spec = args
        .server
        .to_spec(&args.load, args.load_threads, Arc::clone(&interrupt))?;
    if args.load.duration.is_none() {
        spec.load.duration = Some(Duration::from_secs(5));
    }
    if let Some(out) = &args.out {
        spec.dir = out.join("trials");
    }
    let (processes, threads) = (spec.server.processes, spec.server.threads);
    let opts = FitOptions {
        memory_limit_bytes: args.memory(),
        headroom: args.headroom,
        slo_p99_us: args.slo,
        max_workers: args.max_workers,
        max_threads: args.max_threads,
        start_threads: spec.server.default_threads.max(1),
        threads,
        processes,
        seed: 0x0f17,
    };
    let name = spec.server.name.clone();
    let app = spec.app.name.clone();
    if !args.json {
        eprintln!(
            "fitting {name} with {app}: up to {} workers × {} threads, {} trials each",
            if processes { args.max_workers } else { 1 },
            if threads { args.max_threads } else { 1 },
            args.repeats
        );
    }
    let measure = measure(spec, &args);
    let result = fit_until(measure, opts, || interrupt.load(Ordering::Relaxed));
    let doc = FitDocument::new(
        (&name, &app),
        (
            args.memory(),
            args.cpus(),
            args.headroom,
            args.slo,
            args.repeats,
        ),
        result,
        |t| setting(&name, processes, threads, t),
    );
    write_outputs(&doc, &args)?;
    Ok(if interrupt.load(Ordering::Relaxed) {
        ExitCode::from(130)
    } else if doc.recommendation.is_none() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

impl FitArgs {
    /// --memory (the server options' budget flag), in bytes.
    fn memory(&self) -> Option<u64> {
        self.server
            .budget
            .budget()
            .and_then(|b| b.memory_limit_bytes)
    }

    /// --cpus (the server options' budget flag).
    fn cpus(&self) -> Option<f64> {
        self.server.budget.budget().and_then(|b| b.cpus)
    }
}

/// Flags that cannot make a search, refused with the fix.
fn check(args: &FitArgs) -> Result<()> {
    if args.server.workers.is_some() || args.server.threads.is_some() {
        return Err(usage(
            "fit searches the workers and threads itself: bound them with --max-workers and --max-threads instead of --workers/--threads".into(),
        ));
    }
    if args.repeats == 0 || args.max_workers == 0 || args.max_threads == 0 {
        return Err(usage(
            "--repeats, --max-workers and --max-threads need 1 or more".into(),
        ));
    }
    Ok(())
}

/// One candidate's trials: `--repeats` fresh servers at its workers and
/// threads, each in the budget.
fn measure(spec: TrialSpec, args: &FitArgs) -> impl FnMut(Candidate) -> Outcome {
    let (memory, cpus, repeats, quiet) = (args.memory(), args.cpus(), args.repeats, args.json);
    move |c| {
        let mut out = Outcome::default();
        for r in 1..=repeats {
            let mut s = spec.clone();
            s.workers = spec.server.processes.then_some(c.workers);
            s.threads = spec.server.threads.then_some(c.threads);
            s.dir = spec.dir.join(format!("w{}-t{}-r{r}", c.workers, c.threads));
            with_budget(&mut s, memory, cpus);
            match run_trial(s) {
                Ok(rec) => {
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
            print_candidate(c, &out);
        }
        out
    }
}

/// One line per candidate on stderr, as the search goes.
fn print_candidate(c: Candidate, o: &Outcome) {
    let rps: Vec<String> = o
        .repeats
        .iter()
        .map(|r| format!("{:.0}", r.throughput_rps))
        .collect();
    eprintln!(
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
    );
}

/// The document on stdout (or the text), the page, and --out's fit.json.
fn write_outputs(doc: &FitDocument, args: &FitArgs) -> Result<()> {
    if args.json {
        println!("{}", serde_json::to_string_pretty(doc)?);
    } else {
        print!("{}", page::text(doc));
    }
    if let Some(path) = &args.html {
        std::fs::write(path, page::page(doc))
            .with_context(|| format!("cannot write --html {}", path.display()))?;
    }
    if let Some(out) = &args.out {
        let path = out.join("fit.json");
        crate::store::write_json(&path, doc)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_parse_and_bad_ones_name_the_fix() {
        assert_eq!(parse_share("10%").unwrap(), 0.1);
        assert_eq!(parse_share("0.25").unwrap(), 0.25);
        assert!(parse_share("100%").is_err());
        assert!(parse_share("-1").is_err());
    }

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
