//! Load from many machines as a Kubernetes Indexed Job: `rackbench load`
//! cut into N segments (`--segment $(JOB_COMPLETION_INDEX)/N`), all starting
//! at one wall-clock instant, one pod each, spread over nodes; then each
//! segment's load-v1 document read back from its pod's log and merged
//! exactly by `rackbench merge`.
//!
//! It never drives load and never reads load's types: the pods run the
//! `rackbench` binary, and the merge is this binary run again
//! (`current_exe() merge`), so the two meet only at the command line and
//! the load-v1 document. See docs/SCALING.md.

pub mod cluster;
pub mod job;
pub mod logs;

use anyhow::{bail, Context, Result};
use cluster::Kubectl;
use k8s_openapi::api::batch::v1::Job;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Where a Job stands, from its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JobCounts {
    pub active: i32,
    pub succeeded: i32,
    pub failed: i32,
    pub completions: i32,
    /// The Job's Complete condition is true.
    pub complete: bool,
    /// The Job's Failed condition is true (a segment failed, or the
    /// deadline passed).
    pub failed_for_good: bool,
}

impl JobCounts {
    pub fn of(job: &Job) -> JobCounts {
        let status = job.status.clone().unwrap_or_default();
        let condition = |kind: &str| {
            status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == kind && c.status == "True")
        };
        JobCounts {
            active: status.active.unwrap_or(0),
            succeeded: status.succeeded.unwrap_or(0),
            failed: status.failed.unwrap_or(0),
            completions: job.spec.as_ref().and_then(|s| s.completions).unwrap_or(1),
            complete: condition("Complete"),
            failed_for_good: condition("Failed"),
        }
    }
}

/// Polls the Job until it completes (Ok) or fails (Err naming how to see
/// why), calling `progress` whenever its counts change. Gives up after
/// `limit`.
pub fn wait(
    kubectl: &Kubectl,
    name: &str,
    limit: Duration,
    mut progress: impl FnMut(&JobCounts),
) -> Result<JobCounts> {
    let start = Instant::now();
    let mut last = None;
    loop {
        let counts = JobCounts::of(&kubectl.job(name)?);
        if last != Some(counts) {
            progress(&counts);
            last = Some(counts);
        }
        if counts.complete {
            return Ok(counts);
        }
        if counts.failed_for_good {
            bail!(
                "job {name} failed ({} of {} segments failed, or its deadline passed); see `kubectl describe job {name}` and `kubectl logs -l job-name={name}`",
                counts.failed,
                counts.completions
            );
        }
        if start.elapsed() > limit {
            bail!(
                "job {name} has not finished after {} s; it is still in the cluster: watch it with `kubectl get job {name}`, then `rackbench k8s collect {name}`",
                limit.as_secs()
            );
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// Saves each segment's load-v1 document of Job `name` as
/// `dir/segment-I.json` and returns the files in index order. Fails, after
/// saving what it could, when a segment has no succeeded pod or no
/// document in its log.
pub fn collect(kubectl: &Kubectl, name: &str, dir: &Path) -> Result<Vec<PathBuf>> {
    let job = kubectl.job(name)?;
    let spec = job.spec.clone().unwrap_or_default();
    if spec.completion_mode.as_deref() != Some("Indexed") {
        bail!(
            "job {name} is not an Indexed Job: collect reads Jobs written by `rackbench k8s job`"
        );
    }
    let n = spec.completions.unwrap_or(1).max(0) as usize;
    let pods = kubectl.pods(name)?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut files = Vec::new();
    let mut missing = Vec::new();
    for index in 0..n {
        let succeeded = pods.iter().find(|p| {
            pod_index(p) == Some(index)
                && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded")
        });
        let Some(pod) = succeeded else {
            missing.push(format!("{index} (no succeeded pod)"));
            continue;
        };
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        let log = kubectl.logs(&pod_name)?;
        let Some(doc) = logs::load_document(&log) else {
            missing.push(format!(
                "{index} (pod {pod_name} printed no load-v1 document)"
            ));
            continue;
        };
        let path = dir.join(format!("segment-{index}.json"));
        crate::store::write_json(&path, &doc)
            .with_context(|| format!("cannot write {}", path.display()))?;
        files.push(path);
    }
    if !missing.is_empty() {
        bail!(
            "job {name}: {} of {n} segments cannot be merged: {}; see `kubectl logs -l job-name={name}`",
            missing.len(),
            missing.join(", ")
        );
    }
    Ok(files)
}

/// The completion index the Job controller gave a pod.
fn pod_index(pod: &k8s_openapi::api::core::v1::Pod) -> Option<usize> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(job::INDEX_ANNOTATION)?
        .parse()
        .ok()
}

/// Runs `rackbench merge FILES --json --out OUT` with this same binary;
/// its output goes to ours.
pub fn merge(files: &[PathBuf], out: &Path) -> Result<()> {
    let exe = std::env::current_exe().context("cannot find the rackbench binary to run merge")?;
    let status = Command::new(&exe)
        .arg("merge")
        .args(files)
        .arg("--json")
        .arg("--out")
        .arg(out)
        .status()
        .with_context(|| format!("cannot run {} merge", exe.display()))?;
    if !status.success() {
        bail!(
            "`rackbench merge` of {} segments failed ({status}); the segments are saved beside {}",
            files.len(),
            out.display()
        );
    }
    Ok(())
}
