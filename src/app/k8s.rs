//! `k8s`: load from many nodes as a Kubernetes Indexed Job (see k8s and
//! docs/SCALING.md). The manifest written; a Job submitted, waited for
//! and collected; a finished Job's segments saved and merged.

use super::sink::Sink;
use crate::k8s::cluster::{ClusterError, Kubectl};
use crate::k8s::job::{self, LoadJob};
use crate::k8s::{self as kube_jobs, JobCounts};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The Job's manifest (YAML), written to `out` when given.
pub fn write_job(load: &LoadJob, out: Option<&Path>) -> Result<String> {
    let yaml = job::to_yaml(&load.to_job());
    if let Some(path) = out {
        std::fs::write(path, &yaml).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(yaml)
}

/// Submits the Job to the current kubeconfig's cluster (its manifest kept
/// as `dir`/job.yaml), waits for it to end (its counts as notes), then
/// saves and merges its segments in `dir` (by default k8s-NAME).
/// `start_in` is how long after now the segments start.
pub fn run_job(
    load: &LoadJob,
    dir: Option<PathBuf>,
    start_in: Duration,
    sink: &dyn Sink,
) -> Result<()> {
    Kubectl::check_config()?;
    let kubectl = Kubectl {
        namespace: load.namespace.clone(),
    };
    let dir = dir.unwrap_or_else(|| default_dir(&load.name));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let yaml = job::to_yaml(&load.to_job());
    let manifest = dir.join("job.yaml");
    std::fs::write(&manifest, &yaml)
        .with_context(|| format!("cannot write {}", manifest.display()))?;
    kubectl
        .create(&yaml)
        .map_err(|e| already_exists_hint(e, &load.name))?;
    sink.note(&format!(
        "created job {}: {} segments start at {} (in {} s)",
        load.name,
        load.segments,
        load.start_at(),
        start_in.as_secs()
    ));
    // The Job's own deadline ends it; the extra minute is for the
    // controller to say so.
    let limit = start_in + Duration::from_secs(load.deadline_secs + 60);
    kube_jobs::wait(&kubectl, &load.name, limit, |c| {
        sink.note(&progress_line(&load.name, c))
    })?;
    collect_and_merge(&kubectl, &load.name, &dir, sink)
}

/// Saves each segment's document of the finished Job `name` in `dir` (by
/// default k8s-NAME) and merges them into merged.json there.
pub fn collect(
    namespace: Option<String>,
    name: &str,
    dir: Option<PathBuf>,
    sink: &dyn Sink,
) -> Result<()> {
    Kubectl::check_config()?;
    let kubectl = Kubectl { namespace };
    let dir = dir.unwrap_or_else(|| default_dir(name));
    collect_and_merge(&kubectl, name, &dir, sink)
}

fn collect_and_merge(kubectl: &Kubectl, name: &str, dir: &Path, sink: &dyn Sink) -> Result<()> {
    let files = kube_jobs::collect(kubectl, name, dir)?;
    sink.note(&format!(
        "saved {} segments in {}",
        files.len(),
        dir.display()
    ));
    let merged = dir.join("merged.json");
    kube_jobs::merge(&files, &merged)?;
    sink.note(&format!("merged into {}", merged.display()));
    Ok(())
}

fn default_dir(job: &str) -> PathBuf {
    PathBuf::from(format!("k8s-{job}"))
}

fn progress_line(name: &str, c: &JobCounts) -> String {
    format!(
        "job {name}: {} running, {} succeeded, {} failed of {}",
        c.active, c.succeeded, c.failed, c.completions
    )
}

fn already_exists_hint(e: ClusterError, name: &str) -> anyhow::Error {
    match e {
        ClusterError::Kubectl(_, detail) if detail.contains("AlreadyExists") => anyhow::anyhow!(
            "job {name} already exists: delete it (kubectl delete job {name}) or give another --name"
        ),
        other => other.into(),
    }
}
