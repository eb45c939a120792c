//! Talking to the cluster of the current kubeconfig, through `kubectl`:
//! create the Job, watch it, read each segment's pod log.
//!
//! Why kubectl and not the `kube` crate: kube with rustls added 163 s to a
//! release build here on top of k8s-openapi, tokio and hyper (ring, rustls,
//! tower, a JSONPath parser, the deprecated serde_yaml), paid again for clippy and the test build,
//! while kubectl is already where Kubernetes is used and knows every
//! kubeconfig auth plugin (exec credentials, OIDC) that kube would need
//! extra features for. The objects are still k8s-openapi types both ways:
//! the Job goes in as YAML built from them, and what kubectl prints with
//! `-o json` is read back into them.
//!
//! Every call is bounded: `--request-timeout` on each kubectl request and a
//! hard deadline on the process, so an unreachable cluster is one clear
//! error within seconds, never a hang.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use serde::Deserialize;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Each kubectl request gives up after this long.
const REQUEST_TIMEOUT: &str = "10s";
/// A kubectl process is killed after this long whatever it is doing: a
/// server that accepts but never answers costs kubectl several 10 s TLS
/// handshake timeouts (55 s measured here), too long for a "no".
const PROCESS_DEADLINE: Duration = Duration::from_secs(30);

/// Why the cluster could not be used; each names the fix.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("kubectl is not installed or not on PATH: install kubectl, or write the Job with `rackbench k8s job` and submit it yourself")]
    NoKubectl,
    #[error("no kubeconfig: {0}; point KUBECONFIG at your cluster's config (or create ~/.kube/config), check with `kubectl cluster-info`")]
    NoKubeconfig(String),
    #[error("cannot reach the cluster of the current kubeconfig ({0}); check `kubectl cluster-info`, or set KUBECONFIG to a reachable cluster")]
    Unreachable(String),
    #[error("kubectl {0}: {1}")]
    Kubectl(String, String),
    #[error("kubectl {0} did not finish within {1} s; check `kubectl cluster-info`")]
    Hung(String, u64),
    #[error("cannot read kubectl's answer to {0}: {1}")]
    Answer(String, String),
}

/// The kubectl command for one namespace (None: the kubeconfig's).
#[derive(Debug, Clone)]
pub struct Kubectl {
    pub namespace: Option<String>,
}

#[derive(Deserialize)]
struct Items<T> {
    items: Vec<T>,
}

impl Kubectl {
    /// Fails early, without a network call, when kubectl would fall back
    /// to localhost:8080 for want of any configuration.
    pub fn check_config() -> Result<(), ClusterError> {
        if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
            return Ok(()); // in a pod: kubectl uses the service account
        }
        match std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
            Some(list) => {
                let paths: Vec<PathBuf> = std::env::split_paths(&list).collect();
                if paths.iter().any(|p| p.is_file()) {
                    Ok(())
                } else {
                    Err(ClusterError::NoKubeconfig(format!(
                        "KUBECONFIG={} names no file",
                        list.to_string_lossy()
                    )))
                }
            }
            None => {
                let home = std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .unwrap_or_default();
                if home.join(".kube/config").is_file() {
                    Ok(())
                } else {
                    Err(ClusterError::NoKubeconfig(
                        "KUBECONFIG is unset and ~/.kube/config does not exist".into(),
                    ))
                }
            }
        }
    }

    /// Creates `yaml`'s objects (create, not apply: a Job of the same name
    /// is an error, not a silent change to a finished Job).
    pub fn create(&self, yaml: &str) -> Result<(), ClusterError> {
        self.run(&["create", "-f", "-"], Some(yaml.as_bytes()))
            .map(drop)
    }

    pub fn job(&self, name: &str) -> Result<Job, ClusterError> {
        let out = self.run(&["get", "job", name, "-o", "json"], None)?;
        serde_json::from_slice(&out)
            .map_err(|e| ClusterError::Answer(format!("get job {name}"), e.to_string()))
    }

    /// The pods the Job controller made for `job` (its `job-name` label).
    pub fn pods(&self, job: &str) -> Result<Vec<Pod>, ClusterError> {
        let selector = format!("job-name={job}");
        let out = self.run(&["get", "pods", "-l", &selector, "-o", "json"], None)?;
        serde_json::from_slice::<Items<Pod>>(&out)
            .map(|l| l.items)
            .map_err(|e| ClusterError::Answer(format!("get pods -l {selector}"), e.to_string()))
    }

    /// The load container's log of one pod.
    pub fn logs(&self, pod: &str) -> Result<String, ClusterError> {
        let out = self.run(&["logs", pod, "-c", "load"], None)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn run(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<Vec<u8>, ClusterError> {
        let mut cmd = Command::new("kubectl");
        cmd.arg(format!("--request-timeout={REQUEST_TIMEOUT}"));
        if let Some(ns) = &self.namespace {
            cmd.args(["--namespace", ns]);
        }
        cmd.args(args);
        let what = args.iter().take(3).copied().collect::<Vec<_>>().join(" ");
        let (ok, stdout, stderr) =
            run_bounded(cmd, stdin, PROCESS_DEADLINE).map_err(|e| match e {
                RunError::Missing => ClusterError::NoKubectl,
                RunError::Hung => ClusterError::Hung(what.clone(), PROCESS_DEADLINE.as_secs()),
                RunError::Io(e) => ClusterError::Kubectl(what.clone(), e.to_string()),
            })?;
        if ok {
            return Ok(stdout);
        }
        let detail = last_message(&String::from_utf8_lossy(&stderr));
        if is_unreachable(&detail) {
            Err(ClusterError::Unreachable(network_part(&detail)))
        } else {
            Err(ClusterError::Kubectl(what, detail))
        }
    }
}

/// kubectl's own last line, without its klog lines (`E1123 20:26:38 ...`).
fn last_message(stderr: &str) -> String {
    let klog = |l: &str| {
        let b = l.as_bytes();
        b.len() > 5 && b"EWIF".contains(&b[0]) && b[1..5].iter().all(u8::is_ascii_digit)
    };
    stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !klog(l))
        .or_else(|| stderr.lines().rev().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("failed without a message")
        .to_string()
}

/// The network error inside a long kubectl message ("dial tcp ...:
/// connection refused"), or the whole message.
fn network_part(message: &str) -> String {
    match message.find("dial tcp") {
        Some(at) => message[at..]
            .split(';')
            .next()
            .unwrap_or_default()
            .to_string(),
        None => message.to_string(),
    }
}

fn is_unreachable(message: &str) -> bool {
    [
        "was refused",
        "Unable to connect to the server",
        "dial tcp",
        "no such host",
        "i/o timeout",
        "context deadline exceeded",
        "Client.Timeout",
    ]
    .iter()
    .any(|m| message.contains(m))
}

enum RunError {
    Missing,
    Hung,
    Io(std::io::Error),
}

/// Runs `cmd` to its end or kills it at `deadline`.
fn run_bounded(
    mut cmd: Command,
    stdin: Option<&[u8]>,
    deadline: Duration,
) -> Result<(bool, Vec<u8>, Vec<u8>), RunError> {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => RunError::Missing,
        _ => RunError::Io(e),
    })?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input).map_err(RunError::Io)?;
    }
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(RunError::Io)? {
            break status;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(RunError::Hung);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    Ok((status.success(), stdout, stderr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_messages_are_read_past_klog_lines() {
        let stderr = "E1123 20:26:38.341612   18648 memcache.go:265] \"Unhandled Error\"\n\
                      The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?\n";
        let m = last_message(stderr);
        assert!(m.starts_with("The connection to the server"), "{m}");
        assert!(is_unreachable(&m));
        let m = "error: error validating \"STDIN\": failed to download openapi: Get \"https://127.0.0.1:1/openapi/v2\": dial tcp 127.0.0.1:1: connect: connection refused; if you choose to ignore these errors, turn validation off";
        assert_eq!(
            network_part(m),
            "dial tcp 127.0.0.1:1: connect: connection refused"
        );
        let m = last_message("Error from server (NotFound): jobs.batch \"rb\" not found\n");
        assert!(!is_unreachable(&m), "{m}");
        assert_eq!(last_message(""), "failed without a message");
    }

    #[test]
    fn a_process_past_its_deadline_is_killed() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let start = Instant::now();
        let r = run_bounded(cmd, None, Duration::from_millis(200));
        assert!(matches!(r, Err(RunError::Hung)));
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
