//! `rackbench k8s run` on a real Kubernetes (issue 44): scripts/cluster.sh
//! brings up two nodes on this machine (the second in a network
//! namespace), the Indexed Job's two segments run one per node against a
//! test server on the host's address, and their merge is checked against
//! the server's own count and the segments' histograms; then `down`
//! leaves no process, mount, namespace, link, cgroup or directory.
//!
//! Needs root and the Kubernetes binaries in rackbench's cache, which
//! `make test-cluster` builds (about 11 minutes on 2 cores). Without them
//! the test prints one SKIP line and passes, even under
//! `RACKBENCH_REQUIRE=all`: CI cannot build Kubernetes within its budget,
//! and the committed run (bench/runs/2026-11-28-k8s-cluster/) carries the
//! proof. `RACKBENCH_REQUIRE=kubernetes` (what `make test-cluster` sets)
//! fails instead.
//!
//! Its own test target with one test: the cluster's addresses, ports and
//! namespace are fixed, so only one can be up at a time.

mod common;

use common::EXE;
use rackbench::load::recorder::new_histogram;
use rackbench::load::report::headline;
use rackbench::stats::histogram::decode;
use rackbench::testserver::{TestServer, TestServerConfig};
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/cluster.sh");
/// The subject RACKBENCH_REQUIRE must name for a missing cluster to fail.
const SUBJECT: &str = "kubernetes";

/// scripts/cluster.sh with the test's own state dir.
fn script(state: &Path, args: &[&str]) -> Output {
    Command::new(SCRIPT)
        .args(args)
        .env("RACKBENCH_CLUSTER_DIR", state)
        .env("RACKBENCH_BIN", EXE)
        .output()
        .expect("run scripts/cluster.sh")
}

/// `scripts/cluster.sh env`: KEY=VALUE lines.
fn cluster_env(state: &Path) -> BTreeMap<String, String> {
    let out = script(state, &["env"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Whether the test can run; when not, one SKIP line, or a failure when
/// RACKBENCH_REQUIRE names `kubernetes` (not `all`: see the top).
fn can_run(bin: &Path) -> bool {
    let root = unsafe { libc::geteuid() } == 0;
    let cached = [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
    ]
    .iter()
    .chain(&["kubelet", "kubectl", "pause", "pause.tar"])
    .all(|c| bin.join(c).is_file());
    let why = match (root, cached) {
        (true, true) => return true,
        (false, _) => "not root (the cluster makes a network namespace, mounts, cgroups)",
        (true, false) => "Kubernetes binaries not cached: make test-cluster builds them",
    };
    let require = std::env::var(rackbench::require::ENV).unwrap_or_default();
    let named = require
        .split(',')
        .any(|w| w.trim().eq_ignore_ascii_case(SUBJECT));
    assert!(!named, "RACKBENCH_REQUIRE={require}: {why}");
    // Straight to the stream, as rackbench::require does: libtest
    // captures `eprintln!` of a passing test.
    use std::io::Write;
    let line = format!(
        "SKIP: a_job_runs_on_two_nodes_and_merges_to_the_servers_count: {why} \
         (CI does not build Kubernetes: it does not fit its budget)\n"
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
    false
}

/// `down` on drop, so a failed assertion leaves no cluster behind.
struct Cluster {
    state: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = script(&self.state, &["down"]);
    }
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_job_runs_on_two_nodes_and_merges_to_the_servers_count() {
    let state = std::env::temp_dir().join("rackbench-cluster-test");
    let env = cluster_env(&state);
    if !can_run(Path::new(&env["BIN"])) {
        return;
    }
    let up = script(&state, &["up", "--nodes", "2"]);
    let cluster = Cluster {
        state: state.clone(),
    };
    assert!(
        up.status.success(),
        "cluster up: {}",
        String::from_utf8_lossy(&up.stderr)
    );

    // The server under test on the host's address, which node 1's pods
    // reach on the host and node 2's through the veth pair.
    let host: SocketAddr = format!("{}:0", env["HOST_IP"]).parse().unwrap();
    let mut server = TestServer::start(TestServerConfig {
        bind: rackbench::load::Endpoint::Tcp(host),
        ..Default::default()
    })
    .expect("test server on the host's cluster address");

    let out_dir = common::work_dir("cluster-run");
    let path = format!(
        "{}:{}",
        env["BIN"],
        std::env::var("PATH").unwrap_or_default()
    );
    let requests = 6000;
    let run = common::rackbench_cmd()
        .args([
            "k8s",
            "run",
            "--segments",
            "2",
            "--image",
            &env["IMAGE"],
            "--name",
            "cluster-test",
            "--host-network",
            "--spread",
            "required",
            "--cpu",
            "500m",
            "--memory",
            "128Mi",
            "--start-in",
            "40s",
            "--deadline",
            "5m",
            "--out",
        ])
        .arg(&out_dir)
        .args(["--", "load", &server.url(), "-c", "4", "-n"])
        .arg(requests.to_string())
        .args(["--warmup", "0s"])
        .env("KUBECONFIG", &env["KUBECONFIG"])
        .env("PATH", path)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .expect("run rackbench k8s run");
    let answered = server.stats().answered;
    server.shutdown();
    assert!(
        run.status.success(),
        "k8s run: {}",
        String::from_utf8_lossy(&run.stderr)
    );

    // One segment per node: the pods' nodeName.
    let pods = Command::new(Path::new(&env["BIN"]).join("kubectl"))
        .args([
            "get",
            "pods",
            "-l",
            "rackbench.dev/job=cluster-test",
            "-o",
            "jsonpath={.items[*].spec.nodeName}",
        ])
        .env("KUBECONFIG", &env["KUBECONFIG"])
        .output()
        .expect("kubectl get pods");
    let mut nodes: Vec<String> = String::from_utf8_lossy(&pods.stdout)
        .split_whitespace()
        .map(String::from)
        .collect();
    nodes.sort();
    assert_eq!(nodes, ["node-1", "node-2"], "where the segments ran");

    let segs: Vec<Value> = (0..2)
        .map(|i| read_json(&out_dir.join(format!("segment-{i}.json"))))
        .collect();
    let merged = read_json(&out_dir.join("merged.json"));
    check_merge(&segs, &merged, requests, answered);

    drop(cluster);
    let left = script(&state, &["leftovers"]);
    let left = String::from_utf8_lossy(&left.stdout);
    assert!(left.trim().is_empty(), "down left: {left}");
    assert!(!state.exists());
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mounts.contains(state.to_str().unwrap()),
        "a mount under {} is left",
        state.display()
    );
    assert!(!Path::new("/run/netns/rackbench-node-2").exists());
}

/// The merge counts exactly what the server answered, the segments
/// started together, and the merged percentiles are those of the
/// segments' histograms added.
fn check_merge(segs: &[Value], merged: &Value, requests: u64, answered: u64) {
    for s in segs.iter().chain([merged]) {
        common::schema::assert_valid("load-v1", s, "a cluster run's document");
    }
    // -n: every request finishes, so the counts are exact.
    let ok = u(&merged["requests"]["ok"]);
    assert_eq!(ok, requests, "merged OK answers");
    assert_eq!(ok, answered, "merged OK answers vs the server's count");
    let sum_ok: u64 = segs.iter().map(|s| u(&s["requests"]["ok"])).sum();
    assert_eq!(sum_ok, ok);

    // One start instant: both segments took the Job's one --start-at and
    // began on it, not late (each holds its own clock against it; here
    // both nodes share the host's). The on-the-wire skew between the
    // nodes is measured in bench/runs/2026-11-28-k8s-cluster/.
    let start = &segs[0]["segment"]["start_at"];
    assert!(start.is_string(), "no start_at: {}", segs[0]["segment"]);
    for s in segs {
        let seg = &s["segment"];
        assert_eq!(&seg["start_at"], start, "one --start-at for all");
        assert_eq!(seg["late_ms"].as_f64(), Some(0.0), "a late segment: {seg}");
        assert_eq!(
            seg["run_start_unix_ms"],
            segs[0]["segment"]["run_start_unix_ms"]
        );
    }

    let sum = |what: &str| {
        let mut all = new_histogram(3);
        for s in segs {
            if let Some(text) = s["histograms"][what].as_str() {
                all.add(decode(text).unwrap()).unwrap();
            }
        }
        all
    };
    let ok_hist = sum("ok");
    assert_eq!(ok_hist.len(), ok);
    let failed = ["status", "body"]
        .iter()
        .map(|k| u(&merged["errors"][k]))
        .sum();
    let (all, _) = headline(&ok_hist, &sum("censored"), &sum("unanswered"), failed);
    let lat = &merged["latency_us"];
    for (field, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)] {
        assert_eq!(u(&lat[field]), all.value_at_quantile(q), "{field}");
    }
    assert_eq!(u(&lat["max"]), all.max());
}
