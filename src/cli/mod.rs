//! The command line. Each subcommand has its own file with its clap type
//! and a `run` that calls into the library and prints the result.
//!
//! Exit codes: 0 success, 1 a run that failed, 2 bad usage (a flag, URL or
//! header that cannot work; the message names the fix), 141 standard output
//! closed early (`rackbench servers | head`: as a tool killed by SIGPIPE,
//! and quietly, after the servers it started were stopped).

mod ab;
mod breakpoint;
mod compare;
mod doctor;
mod fit;
mod flags;
mod history;
mod k8s;
mod load;
mod load_options;
mod merge;
mod mirror;
mod mix;
pub mod negative;
mod output;
mod parse;
mod replay;
mod report;
mod run;
mod runtime;
mod serve_test;
mod server_options;
mod servers;
mod sweep;
mod trial;
mod tune;
mod usage;

use clap::{Parser, Subcommand};
use std::process::ExitCode;
pub use usage::{usage, UsageError};

#[derive(Debug, Parser)]
#[command(
    name = "rackbench",
    version,
    about = "A lab for benchmarking Ruby Rack application servers"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Drive HTTP load at a URL and report throughput, latency and errors.
    Load(Box<load::LoadArgs>),
    /// Merge segment documents (`load --segment I/N --json`) exactly: counts add, histograms merge.
    Merge(merge::MergeArgs),
    /// List the server adapters, whether each is installed, and its version.
    Servers(servers::ServersArgs),
    /// The places servers run from: add (a Debian release root, JRuby, your own Ruby), list, remove.
    Runtime(runtime::RuntimeArgs),
    /// Check this machine before a study: each finding with its fix; exit 1 on a problem.
    Doctor(doctor::DoctorArgs),
    /// Start a server with an app, verify it, load it, sample it, stop it.
    Trial(Box<trial::TrialArgs>),
    /// Run a plan (or the built-in default): every trial, results on disk.
    Run(run::RunArgs),
    /// Find the highest load with no errors (and under a latency ceiling).
    Breakpoint(Box<breakpoint::BreakpointArgs>),
    /// The workers × threads with the most throughput inside a memory and CPU budget, under a latency objective.
    Fit(Box<fit::FitArgs>),
    /// Write terminal, Markdown, CSV, JSON and HTML reports from a results directory.
    Report(report::ReportArgs),
    /// Compare two results directories (or two variants of one): change, 95% interval, significance.
    Compare(compare::CompareArgs),
    /// The same groups over many runs in date order, each against a baseline; exit 1 on a significant regression.
    History(history::HistoryArgs),
    /// Is B better than A? Paired rounds until the answer is known: faster, slower, equivalent or undecided.
    Ab(Box<ab::AbArgs>),
    /// The GC settings a server's own GC statistics call for, each proven by an A/B against the control (docs/TUNING.md).
    Tune(tune::TuneArgs),
    /// Vary one thing (workers, threads, a setting, an env variable, nginx workers): each value vs the first, the knee, the USL fit.
    Sweep(Box<sweep::SweepArgs>),
    /// Proxy to a primary, copying each request to shadow servers (bounded, never slowing the primary).
    Mirror(Box<mirror::MirrorArgs>),
    /// Proxy to a primary and write each request to a record file.
    Record(Box<mirror::MirrorArgs>),
    /// Write a request mix (TOML) from a record file or an nginx log, in the recorded proportions.
    Mix(mix::MixArgs),
    /// Send recorded requests (or an nginx log's) again at their recorded times, open loop.
    Replay(Box<replay::ReplayArgs>),
    /// Load from many nodes as a Kubernetes Indexed Job: write it, run it, collect and merge its segments.
    K8s(k8s::K8sArgs),
    /// Run the built-in test HTTP server (for benchmarks of rackbench itself).
    #[command(hide = true)]
    ServeTest(serve_test::ServeTestArgs),
}

pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if let Some(why) = negative::check(&args, <Cli as clap::CommandFactory>::command) {
        eprintln!("error: {why}");
        return ExitCode::from(2);
    }
    let matches = <Cli as clap::CommandFactory>::command().get_matches();
    let mut cli = <Cli as clap::FromArgMatches>::from_arg_matches(&matches)
        .map_err(|e| e.format(&mut <Cli as clap::CommandFactory>::command()))
        .unwrap_or_else(|e| e.exit());
    // `fit PLAN` lets only the flags given override the plan.
    if let (Command::Fit(args), Some(m)) = (&mut cli.command, matches.subcommand_matches("fit")) {
        args.given = fit::given(m);
    }
    quiet_broken_pipe();
    // A closed standard output panics the print that meets it; the panic
    // unwinds through the command, whose guards stop what it started.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(cli)));
    match result {
        Ok(code) => code,
        Err(payload) if is_broken_pipe(payload.as_ref()) => ExitCode::from(141),
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// The panic message of a print to a standard output nobody reads.
fn is_broken_pipe(payload: &(dyn std::any::Any + Send)) -> bool {
    let msg = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe")
}

/// Keeps the panic of a print to a closed standard output off stderr (the
/// reader left on purpose); every other panic is reported as usual.
fn quiet_broken_pipe() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !is_broken_pipe(info.payload()) {
            report(info);
        }
    }));
}

fn dispatch(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Load(args) => load::run(*args),
        Command::Merge(args) => merge::run(args),
        Command::Servers(args) => servers::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Runtime(args) => runtime::run(args),
        Command::Trial(args) => trial::run(*args),
        Command::Run(args) => run::run(args),
        Command::Breakpoint(args) => breakpoint::run(*args),
        Command::Fit(args) => fit::run(*args),
        Command::Report(args) => report::run(args),
        Command::Compare(args) => compare::run(args),
        Command::History(args) => history::run(args),
        Command::Sweep(args) => sweep::run(*args),
        Command::Ab(args) => ab::run(*args),
        Command::Tune(args) => tune::run(args),
        Command::ServeTest(args) => serve_test::run(args),
        Command::Mirror(args) => mirror::run(*args),
        Command::Record(args) => mirror::run_record(*args),
        Command::Replay(args) => replay::run(*args),
        Command::Mix(args) => mix::run(args),
        Command::K8s(args) => k8s::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            if let Some(usage) = err.downcast_ref::<UsageError>() {
                eprintln!("error: {usage}");
                return ExitCode::from(2);
            }
            for line in error_lines(&err) {
                eprintln!("{line}");
            }
            ExitCode::from(1)
        }
    }
}

/// The lines an error prints: "error: " and its message, then each cause
/// that says something not said yet. A wrapper that shows its source in
/// its own message (`#[error("{0}")]` over a `#[from]`) would otherwise
/// print the same words, log excerpt and all, again after "caused by:".
fn error_lines(err: &anyhow::Error) -> Vec<String> {
    let mut said: Vec<String> = vec![err.to_string()];
    let mut lines = vec![format!("error: {err}")];
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        if said.iter().any(|s| s.contains(&text)) {
            continue;
        }
        lines.push(format!("  caused by: {text}"));
        said.push(text);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::error_lines;

    #[derive(Debug, thiserror::Error)]
    enum Inner {
        #[error("puma exited during start-up (exit status: 3); last lines of its log:\n  | boom")]
        Exited,
        #[error("connection refused")]
        Refused,
    }

    #[derive(Debug, thiserror::Error)]
    enum Outer {
        /// Shows its source: the cause says nothing new.
        #[error("{0}")]
        Shown(#[from] Inner),
        /// Names its source's kind only: the cause is news.
        #[error("load run failed")]
        Hidden(#[source] Inner),
    }

    /// Issue 36: every "exited during start-up" / "did not answer" error
    /// printed its message and log excerpt twice, the second time after
    /// "caused by:". A cause is printed only when it says something new.
    #[test]
    fn a_cause_already_in_the_message_is_not_printed_again() {
        let cases: Vec<(anyhow::Error, Vec<&str>)> = vec![
            (
                Outer::Shown(Inner::Exited).into(),
                vec!["error: puma exited during start-up (exit status: 3); last lines of its log:\n  | boom"],
            ),
            (
                Outer::Hidden(Inner::Refused).into(),
                vec!["error: load run failed", "  caused by: connection refused"],
            ),
            (
                anyhow::Error::from(Outer::Shown(Inner::Refused)).context("trial puma failed"),
                vec!["error: trial puma failed", "  caused by: connection refused"],
            ),
            (
                anyhow::anyhow!("plain"),
                vec!["error: plain"],
            ),
        ];
        for (err, want) in cases {
            assert_eq!(error_lines(&err), want, "{err:?}");
        }
    }
}
