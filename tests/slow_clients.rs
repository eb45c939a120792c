//! Slow clients beside the load (`load::slow`): each mode checked by the
//! test server's own account (heads trickled at about the configured
//! rate and never finished, bodies trickled, writes blocked by a slow
//! reader), the normal load's counts equal to what the server answered,
//! and the lore against real servers: unicorn direct starves under a
//! slowloris, nginx in front shields it, puma keeps serving.

mod common;

use common::{rackbench, test_server};
use rackbench::load::slow::{SlowClients, SlowMode};
use rackbench::load::{self, LoadConfig, LoadReport};
use rackbench::testserver::TestServerConfig;
use std::time::Duration;

/// `slow` beside a closed loop of 2 connections for `secs` against `s`.
fn run_beside(s: &rackbench::testserver::TestServer, slow: SlowClients, secs: u64) -> LoadReport {
    let mut c = LoadConfig::get(&s.url()).unwrap();
    c.connections = 2;
    c.duration = Some(Duration::from_secs(secs));
    c.slow = Some(slow);
    load::run(c, |_| {}).expect("load runs")
}

fn pace(mode: SlowMode, count: usize) -> SlowClients {
    SlowClients {
        bytes_per_step: 4,
        every: Duration::from_millis(200),
        ..SlowClients::new(count, mode)
    }
}

#[test]
fn headers_mode_trickles_heads_the_server_never_sees_finished() {
    let s = test_server(TestServerConfig::default());
    let r = run_beside(&s, pace(SlowMode::Headers, 3), 3);
    let seen = s.stats();
    let slow = r.slow_clients.as_ref().expect("slow_clients in the report");
    // 4 bytes every 200 ms for 3 s is about 60 bytes a connection.
    assert!(
        (35..=80).contains(&seen.slow.head_bytes_max),
        "{:?} {slow:?}",
        seen.slow
    );
    assert_eq!(seen.slow.slow_heads, 3, "{:?}", seen.slow);
    assert!(seen.slow.longest_head_us >= 2_500_000, "{:?}", seen.slow);
    assert_eq!((slow.accepted, slow.closed_by_server), (3, 0), "{slow:?}");
    // None closed: no held sample; all three open at the end, held at
    // least the run (cut off by its end, not the server).
    assert_eq!(slow.held_s.count, 0, "{slow:?}");
    assert_eq!(slow.open_at_end, 3, "{slow:?}");
    assert!(slow.open_at_end_min_s >= 2.9, "{slow:?}");
    // The normal clients' figures are theirs alone: every OK the load
    // counted is an answer the server wrote, and no slow head was one.
    assert_eq!(r.errors.total(), 0, "{r:?}");
    assert_answers_are_the_loads(seen.answered, &r, 2);
}

/// Regression: this test once asserted `answered == ok + unfinished` and
/// failed with 277,508 answers against 277,509 (a request counted
/// unfinished that had not reached the server: a send queued in the
/// loop's last turn on io_uring, now handed to the kernel before the run
/// ends). Even so, equality is more than the test can know: a request the
/// load counted unfinished may be answered after the server's count is
/// read, or never (on its way when the client closed). What it can know:
/// the server counts an answer before writing it, so every OK is among
/// its answers; every answer went to a request the load counted, OK or
/// unfinished; and a closed loop of `connections` has at most one request
/// each unfinished.
fn assert_answers_are_the_loads(answered: u64, r: &LoadReport, connections: u64) {
    let (ok, unfinished) = (r.requests.ok, r.requests.unfinished);
    assert!(unfinished <= connections, "{unfinished} unfinished: {r:?}");
    assert!(
        (ok..=ok + unfinished).contains(&answered),
        "the server answered {answered}; the load counted {ok} OK and {unfinished} unfinished"
    );
}

#[test]
fn body_mode_sends_a_whole_head_and_trickles_the_declared_body() {
    let s = test_server(TestServerConfig::default());
    let r = run_beside(&s, pace(SlowMode::Body, 2), 3);
    let seen = s.stats().slow;
    assert_eq!(seen.slow_heads, 0, "{seen:?}");
    assert_eq!(seen.slow_bodies, 2, "{seen:?}");
    assert_eq!(seen.body_declared_bytes_max, 1_000_000);
    assert!(
        (35..=80).contains(&seen.body_received_bytes_max),
        "{seen:?}"
    );
    let slow = r.slow_clients.unwrap();
    assert_eq!(slow.closed_by_server, 0, "{slow:?}");
}

#[test]
fn read_mode_reads_so_slowly_the_servers_writes_block() {
    // A 12 MiB answer cannot fit the small receive buffer and the kernel's
    // send buffer (4 MiB at most here) together: the server's write waits
    // for the reader.
    let s = test_server(TestServerConfig {
        body: vec![b'a'; 12 << 20],
        ..TestServerConfig::default()
    });
    let r = run_beside(&s, pace(SlowMode::Read, 2), 3);
    let seen = s.stats();
    assert_eq!(
        seen.slow.blocked_writes, 2,
        "{:?} {:?}",
        seen.slow, r.slow_clients
    );
    assert_eq!(seen.slow.slow_heads + seen.slow.slow_bodies, 0);
    let slow = r.slow_clients.clone().unwrap();
    // 4 bytes every 200 ms for 3 s each: about 60, never a whole answer.
    assert!((2 * 40..=2 * 80).contains(&slow.bytes_received), "{slow:?}");
    assert_eq!((slow.responses, slow.closed_by_server), (0, 0), "{slow:?}");
    // The normal clients read theirs at full speed.
    assert!(r.requests.ok > 10, "{r:?}");
    // The server's count holds the two it is still writing to the slow
    // readers; the load's, requests it is still sending.
    let ok = r.requests.ok;
    assert!(
        (ok..=ok + r.requests.unfinished + 2).contains(&seen.answered),
        "{} answered, {r:?}",
        seen.answered
    );
}

/// One trial of `server` through the binary, 4 normal connections, with
/// `slow` headers clients beside them (0: none); its record.
fn trial(server: &[&str], slow: usize) -> serde_json::Value {
    let mut args = vec![
        "trial", "--app", "hello", "-c", "4", "-d", "3s", "--warmup", "1s", "--json",
    ];
    args.extend_from_slice(server);
    let n = slow.to_string();
    if slow > 0 {
        args.extend_from_slice(&["--slow-clients", &n, "--slow-mode", "headers"]);
    }
    let out = rackbench(&args);
    assert!(
        out.status.success() || slow > 0,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// Throughput with 4 slowloris clients over throughput without them.
fn share_kept(server: &[&str]) -> f64 {
    let without = trial(server, 0)["load"]["throughput_rps"].as_f64().unwrap();
    let with = trial(server, 4);
    let slow = &with["load"]["slow_clients"];
    assert_eq!(slow["count"], 4, "{slow}");
    assert!(slow["accepted"].as_u64().unwrap() >= 4, "{slow}");
    with["load"]["throughput_rps"].as_f64().unwrap() / without
}

/// Unicorn's documentation: a slow client ties up a worker. Two workers,
/// four slowloris clients: the normal clients get almost nothing.
#[test]
fn unicorn_direct_starves_under_a_slowloris() {
    if !common::have("unicorn", "apt-get install unicorn") {
        return;
    }
    let kept = share_kept(&["--server", "unicorn", "--workers", "2"]);
    assert!(
        kept < 0.10,
        "unicorn direct kept {:.0}% of its throughput",
        kept * 100.0
    );
}

/// nginx reads the slow heads itself; unicorn never sees them.
#[test]
fn unicorn_behind_nginx_serves_as_if_they_were_not_there() {
    if !common::have("unicorn", "apt-get install unicorn") || !common::have_nginx() {
        return;
    }
    let kept = share_kept(&["--server", "unicorn", "--workers", "2", "--behind", "nginx"]);
    assert!(
        kept > 0.70,
        "unicorn behind nginx kept {:.0}%",
        kept * 100.0
    );
}

/// Puma's reactor buffers a request until it is whole; its 5 threads
/// keep serving.
#[test]
fn puma_keeps_serving_under_a_slowloris() {
    if !common::have("puma", "apt-get install puma") {
        return;
    }
    let kept = share_kept(&["--server", "puma", "--workers", "0", "--threads", "5"]);
    assert!(kept > 0.50, "puma kept {:.0}%", kept * 100.0);
}
