//! A trial's record as the terminal shows it (`rackbench trial`): the
//! server and app, the load's summary, the server's CPU and memory, its
//! database, and where the time went inside it when telemetry was on.

use crate::lab::trial::{Topology, TrialRecord};
use crate::units::{fmt_bytes, fmt_us};

pub fn render_trial(r: &TrialRecord) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let m = &r.server_metrics;
    let _ = writeln!(
        s,
        "{} {} ({} workers, {} threads) · app {} · {}",
        r.server.name,
        r.server.version.as_deref().unwrap_or(""),
        r.server.workers,
        r.server.threads,
        if r.app.is_plain_get() {
            r.app.name.clone()
        } else {
            format!("{} ({} {})", r.app.name, r.app.method, r.app.path)
        },
        match &r.topology.topology {
            t @ Topology::Direct => t.label(),
            t @ Topology::Nginx { instances, .. } => format!(
                "behind {}{}",
                t.label(),
                if *instances > 1 {
                    format!(" · {instances} instances")
                } else {
                    String::new()
                }
            ),
        }
    );
    s.push_str(&r.load.render_text());
    let _ = writeln!(
        s,
        "  server:      cpu {:.2}s user + {:.2}s sys ({} per request), RSS peak {}, PSS peak {}, USS peak {}, {} processes",
        m.cpu_user_s,
        m.cpu_sys_s,
        m.cpu_ms_per_request.map_or("-".into(), |v| fmt_us(v * 1000.0)),
        fmt_bytes(m.rss_peak_bytes),
        m.pss_peak_bytes.map_or("-".into(), fmt_bytes),
        m.uss_peak_bytes.map_or("-".into(), fmt_bytes),
        m.processes_peak
    );
    render_inside(&mut s, r);
    if let Some(d) = &r.database {
        let _ = writeln!(s, "  database:    {}", database_line(d));
    }
    if let Some(soak) = &r.soak {
        for w in &soak.workers {
            let _ = writeln!(s, "  soak:        {}", w.verdict);
        }
        let _ = writeln!(s, "  soak:        {}", soak.rackbench.verdict);
    }
    if let Some(d) = &r.disturbance {
        let _ = writeln!(s, "  machine:     {}", d.describe());
    }
    if let Some(x) = &r.restart {
        let _ = writeln!(
            s,
            "  restart:     {} at {:.1}s: {}",
            x.kind, x.at_s, x.verdict
        );
        let _ = writeln!(
            s,
            "               pids {:?} -> {:?}",
            x.pids_before, x.pids_after
        );
    }
    if let Some(p) = &r.profile {
        s.push_str(&crate::report::profile::trial_lines(p, &r.dir));
    }
    if let Some(e) = &r.profile_error {
        let _ = writeln!(s, "  PROFILE:     {e}");
    }
    for f in r.faults.sentences() {
        let _ = writeln!(s, "  FAULT:       {f}");
    }
    if let Some(e) = &r.server_exit {
        let _ = writeln!(s, "  SERVER DIED: {e}");
    }
    let _ = writeln!(s, "  logs:        {}", r.dir);
    s
}

/// The database in one line: which, its rows, and PostgreSQL's own cost.
fn database_line(d: &crate::database::DatabaseRecord) -> String {
    let mut line = format!(
        "{} ({}), {} rows seeded, {} written",
        d.kind,
        d.version,
        d.rows_seeded,
        d.rows_written.map_or("?".into(), |n| n.to_string())
    );
    // Which Ruby seeded, when it is not the host's.
    if !d.seed_runtime.is_empty() && d.seed_runtime != crate::runtime::SYSTEM {
        line.push_str(&format!(
            " (seeded on {}, ActiveRecord {})",
            d.seed_runtime,
            d.seed_activerecord.as_deref().unwrap_or("?")
        ));
    }
    if let (Some(u), Some(sys), Some(rss)) = (d.cpu_user_s, d.cpu_sys_s, d.rss_peak_bytes) {
        line.push_str(&format!(
            "; cpu {u:.2}s user + {sys:.2}s sys, RSS peak {}, {} processes",
            fmt_bytes(rss),
            d.processes_peak.unwrap_or(0)
        ));
    }
    line
}

/// The accept queue, and with telemetry where the time went inside.
fn render_inside(s: &mut String, r: &TrialRecord) {
    use std::fmt::Write;
    let m = &r.server_metrics;
    if let Some(q) = &m.accept_queue {
        let _ = writeln!(
            s,
            "  queue:       accept queue max {}, mean {:.1} (connections waiting for a worker)",
            q.max, q.mean
        );
    }
    if !r.telemetry {
        return;
    }
    let Some(t) = m.telemetry.as_ref().filter(|t| t.requests > 0) else {
        let _ = writeln!(
            s,
            "  inside:      telemetry was on but no request reached the middleware; see the server log"
        );
        return;
    };
    let _ = writeln!(
        s,
        "  inside:      app p50 {}, p99 {}{}; GC {:.1} per 1k requests{}, {:.0} objects per request ({} requests, {} processes)",
        fmt_us(t.app_us.p50),
        fmt_us(t.app_us.p99),
        t.queue_us
            .map_or(String::new(), |q| format!("; queue p50 {}, p99 {}", fmt_us(q.p50), fmt_us(q.p99))),
        t.gc_runs_per_1k_requests,
        t.gc_time_share
            .map_or(String::new(), |g| format!(", {:.1}% of app time", g * 100.0)),
        t.allocated_objects_per_request,
        t.requests,
        t.processes
    );
    if let (Some(db), Some(pool)) = (t.db_us, t.pool_wait_us) {
        let _ = writeln!(
            s,
            "  database:    SQL p50 {}, p99 {} ({:.0}% of app time); pool wait p50 {}, p99 {}",
            fmt_us(db.p50),
            fmt_us(db.p99),
            t.db_time_share.unwrap_or(0.0) * 100.0,
            fmt_us(pool.p50),
            fmt_us(pool.p99)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_line_names_the_runtime_that_seeded_unless_it_is_the_host() {
        let blog: serde_json::Value =
            serde_json::from_str(include_str!("../../../tests/contracts/trial-v1-blog.json"))
                .unwrap();
        let mut d: crate::database::DatabaseRecord =
            serde_json::from_value(blog["database"].clone()).unwrap();
        assert_eq!(d.seed_runtime, "system");
        assert!(!database_line(&d).contains("seeded on"));
        d.seed_runtime = "debian-13".into();
        d.seed_activerecord = Some("7.2.2.2".into());
        assert!(
            database_line(&d).contains(
                "6050 rows seeded, 0 written (seeded on debian-13, ActiveRecord 7.2.2.2)"
            ),
            "{}",
            database_line(&d)
        );
    }

    /// A trial with telemetry prints where the time went; one without
    /// says nothing of it (a real record: tests/contracts/trial-v1.json).
    #[test]
    fn the_trial_text_says_what_telemetry_saw() {
        let mut r: TrialRecord =
            serde_json::from_str(include_str!("../../../tests/contracts/trial-v1.json")).unwrap();
        let text = render_trial(&r);
        assert!(text.contains("  inside:      app p50 "), "{text}");
        assert!(text.contains("per 1k requests"), "{text}");
        assert!(text.contains("  queue:       accept queue max "), "{text}");
        r.telemetry = false;
        r.server_metrics.telemetry = None;
        assert!(!render_trial(&r).contains("inside:"));
    }

    /// The machine line says what disturbed the trial and who was busy.
    #[test]
    fn the_trial_text_says_what_the_machine_did() {
        let mut r: TrialRecord =
            serde_json::from_str(include_str!("../../../tests/contracts/trial-v1.json")).unwrap();
        let text = render_trial(&r);
        assert!(
            text.contains("  machine:     steal 0.0%, foreign CPU 60.2% of CPUs 0-1 over 9.9 s, DISTURBED (thresholds 5% steal, 10% foreign CPU); busiest: rustc 5.25 s"),
            "{text}"
        );
        r.disturbance = None;
        assert!(!render_trial(&r).contains("machine:"));
    }
}
