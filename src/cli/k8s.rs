//! `rackbench k8s job|run|collect`: load from many nodes as a Kubernetes
//! Indexed Job (see k8s and docs/SCALING.md).
//!
//! The flags become a `LoadJob`; app::k8s writes it (`job`), submits,
//! waits and collects (`run`), or saves and merges a finished Job's
//! segments (`collect`).

use super::{parse, usage};
use crate::app::k8s;
use crate::app::sink::Terminal;
use crate::k8s::job::{LoadJob, Spread};
use anyhow::Result;
use clap::{Args, FromArgMatches, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct K8sArgs {
    #[command(subcommand)]
    command: K8sCommand,
}

#[derive(Debug, Subcommand)]
enum K8sCommand {
    /// Write an Indexed Job (YAML) that runs the load as N segments, one pod each.
    Job(JobArgs),
    /// Submit that Job to the current kubeconfig's cluster, wait, then collect.
    Run(RunArgs),
    /// Save each segment's load-v1 document of a finished Job and merge them.
    Collect(CollectArgs),
}

/// What the Job is made of; shared by `job` and `run`.
#[derive(Debug, Args)]
pub struct JobOptions {
    /// Segments, one pod each (the load's connections, rate and -n are cut N ways).
    #[arg(long)]
    segments: u32,
    /// Container image with the rackbench binary (see the Dockerfile).
    #[arg(long)]
    image: String,
    /// The Job's name (a DNS label; its pods are NAME-<index>-<suffix>).
    #[arg(long, default_value = "rackbench-load")]
    name: String,
    /// Namespace [default: the kubeconfig's].
    #[arg(long)]
    namespace: Option<String>,
    /// Every segment starts at now + this (time for the pods to be scheduled and pull the image).
    #[arg(long, value_parser = parse::duration, default_value = "60s")]
    start_in: Duration,
    /// CPU per segment, request = limit (e.g. 1, 2, 500m); whole CPUs get a core of their own under the static CPU manager.
    #[arg(long, default_value = "1")]
    cpu: String,
    /// Memory per segment, request = limit (e.g. 256Mi, 1Gi).
    #[arg(long, default_value = "256Mi")]
    memory: String,
    /// preferred: one segment per node where there are enough nodes; required: one per node or the pod waits.
    #[arg(long, value_enum, default_value_t = SpreadArg::Preferred)]
    spread: SpreadArg,
    /// The Job (pods included) is stopped this long after it is created, whatever it is doing.
    #[arg(long, value_parser = parse::duration, default_value = "1h")]
    deadline: Duration,
    /// The pods use their node's network (hostNetwork): for a cluster without a pod network, or a server at a node's address.
    #[arg(long)]
    host_network: bool,
    /// The load each segment runs: `load URL [flags]` (without --segment, --start-at, --json).
    #[arg(last = true, value_name = "LOAD")]
    load: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SpreadArg {
    Preferred,
    Required,
}

#[derive(Debug, Args)]
pub struct JobArgs {
    #[command(flatten)]
    job: JobOptions,
    /// Write the YAML here instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    job: JobOptions,
    /// Directory for job.yaml, segment-I.json and merged.json [default: k8s-NAME].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CollectArgs {
    /// The Job's name.
    job: String,
    /// Namespace [default: the kubeconfig's].
    #[arg(long)]
    namespace: Option<String>,
    /// Directory for segment-I.json and merged.json [default: k8s-JOB].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub fn run(args: K8sArgs) -> Result<ExitCode> {
    match args.command {
        K8sCommand::Job(a) => write_job(a),
        K8sCommand::Run(a) => run_job(a),
        K8sCommand::Collect(a) => collect(a),
    }
}

impl JobOptions {
    /// The Job's data, checked: every mistake is a usage error.
    fn to_load_job(&self) -> Result<LoadJob> {
        check_quantity("--cpu", &self.cpu, &["m"], "1, 2 or 500m")?;
        check_quantity(
            "--memory",
            &self.memory,
            &["Ki", "Mi", "Gi", "Ti", "k", "M", "G", "T"],
            "256Mi or 1Gi",
        )?;
        let load = LoadJob {
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            image: self.image.clone(),
            segments: self.segments,
            start_at_unix: crate::host::unix_now() + self.start_in.as_secs(),
            cpu: self.cpu.clone(),
            memory: self.memory.clone(),
            spread: match self.spread {
                SpreadArg::Preferred => Spread::Preferred,
                SpreadArg::Required => Spread::Required,
            },
            deadline_secs: self.deadline.as_secs().max(1),
            host_network: self.host_network,
            load_args: self.load.clone(),
        };
        load.validate().map_err(|e| usage(e.to_string()))?;
        check_load_flags(&self.load)?;
        Ok(load)
    }
}

/// The load flags as `rackbench load` would read them, so that a typo is
/// caught here rather than in N pods on a cluster.
fn check_load_flags(load: &[String]) -> Result<()> {
    use clap::Args as _;
    let cmd = super::load::LoadArgs::augment_args(clap::Command::new("load"));
    if let Some(why) = super::negative::check(load, || cmd.clone()) {
        return Err(usage(format!("the load after '--': {why}")));
    }
    let matches = cmd.try_get_matches_from(load).map_err(|e| {
        let text = e.to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        usage(format!("the load after '--': {first}"))
    })?;
    let args =
        super::load::LoadArgs::from_arg_matches(&matches).map_err(|e| usage(e.to_string()))?;
    if args.options.mix.is_some() {
        // The pods run the image, which holds no file of this machine.
        return Err(usage(
            "the load after '--': --mix reads a file on this machine, which the pods do not \
             have: run the mix with `rackbench load` here, or drop --mix"
                .into(),
        ));
    }
    Ok(())
}

/// A Kubernetes quantity: a number with one of `suffixes` (or none).
fn check_quantity(flag: &str, value: &str, suffixes: &[&str], example: &str) -> Result<()> {
    let number = suffixes
        .iter()
        .find_map(|s| value.strip_suffix(s))
        .unwrap_or(value);
    let ok = number.parse::<f64>().is_ok_and(|v| v > 0.0)
        && number.chars().all(|c| c.is_ascii_digit() || c == '.');
    if ok {
        Ok(())
    } else {
        Err(usage(format!(
            "{flag} '{value}' is not a Kubernetes quantity: write it like {example}"
        )))
    }
}

fn write_job(args: JobArgs) -> Result<ExitCode> {
    let load = args.job.to_load_job()?;
    let yaml = k8s::write_job(&load, args.out.as_deref())?;
    match &args.out {
        Some(path) => eprintln!(
            "wrote {}: {} segments starting at {} (submit within {} s: kubectl create -f {})",
            path.display(),
            load.segments,
            load.start_at(),
            args.job.start_in.as_secs(),
            path.display()
        ),
        None => print!("{yaml}"),
    }
    Ok(ExitCode::SUCCESS)
}

fn run_job(args: RunArgs) -> Result<ExitCode> {
    let load = args.job.to_load_job()?;
    k8s::run_job(&load, args.out, args.job.start_in, &Terminal::new())?;
    Ok(ExitCode::SUCCESS)
}

fn collect(args: CollectArgs) -> Result<ExitCode> {
    k8s::collect(args.namespace, &args.job, args.out, &Terminal::new())?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_checked() {
        let cpu = |v| check_quantity("--cpu", v, &["m"], "1").is_ok();
        assert!(cpu("1") && cpu("500m") && cpu("1.5"));
        assert!(!cpu("") && !cpu("0") && !cpu("one") && !cpu("1Gi") && !cpu("-1"));
        let mem = |v| check_quantity("--memory", v, &["Mi", "Gi"], "256Mi").is_ok();
        assert!(mem("256Mi") && mem("1Gi") && mem("1000000"));
        assert!(!mem("256MB") && !mem("Mi"));
    }
}
