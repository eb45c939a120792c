//! Who got served (issue 39), held to the test server's truth: a server
//! that accepts only K of N connections leaves exactly N − K starved and
//! K answered, in the closed loop and in the open loop's pool; one that
//! serves every connection alike shows an even share.

mod common;

use common::test_server as server;
use rackbench::load::report::Fairness;
use rackbench::load::{self, IoMode, LoadConfig, LoadReport, Pacing};
use rackbench::testserver::{TestServer, TestServerConfig};
use std::time::Duration;

/// The loop under test, as in tests/load_engine.rs: `RACKBENCH_TEST_IO`
/// picks it, otherwise `auto`.
fn io_mode() -> IoMode {
    match std::env::var("RACKBENCH_TEST_IO").as_deref() {
        Ok("epoll") => IoMode::Epoll,
        Ok("io_uring") => IoMode::Uring,
        _ => IoMode::Auto,
    }
}

/// `connections` against `s` for a 1.5 s window after 0.5 s of warm-up,
/// with a timeout longer than the run (a starved request is never given
/// up and retried on a new socket).
fn config(s: &TestServer, connections: usize) -> LoadConfig {
    let mut c = LoadConfig::get(&s.url()).unwrap();
    c.io = io_mode();
    c.connections = connections;
    c.warmup = Duration::from_millis(500);
    c.duration = Some(Duration::from_millis(1500));
    c.timeout = Duration::from_secs(30);
    c
}

fn run(c: LoadConfig) -> LoadReport {
    let r = load::run(c, |_| {}).expect("load runs");
    let doc = serde_json::to_value(&r).unwrap();
    common::schema::assert_valid("load-v1", &doc, "a load report with fairness");
    r
}

fn fairness(r: &LoadReport) -> &Fairness {
    r.fairness.as_ref().expect("every run writes fairness")
}

/// A server that keeps 3 connections accepted and the other 5 in its
/// backlog (puma's threads held by kept-alive connections, issue 39):
/// 3 answered, 5 starved, whatever the p50 of the answers says. The
/// closed loop sends on every connection; the open loop at 1000/s with
/// 50 ms answers needs all 8 of its pool within the first 8 ms, so each
/// carries a request.
#[test]
fn a_server_that_accepts_k_of_n_connections_starves_exactly_n_minus_k() {
    const N: usize = 8;
    const K: usize = 3;
    for rate in [None, Some(1000.0)] {
        let s = server(TestServerConfig {
            accept_at_most: K,
            delay: Duration::from_millis(if rate.is_some() { 50 } else { 2 }),
            ..Default::default()
        });
        let mut c = config(&s, N);
        if let Some(r) = rate {
            c.pacing = Pacing::Rate(r);
        }
        let r = run(c);
        let f = fairness(&r);
        let what = format!("rate {rate:?}: {f:?}");
        assert_eq!(f.connections_answered, K as u64, "{what}");
        assert_eq!(f.connections_starved, (N - K) as u64, "{what}");
        // K of N sharing everything: at most K/N, reached when even.
        let jain = f.jain_index.expect("answers came back");
        assert!(jain > 0.0 && jain <= K as f64 / N as f64 + 1e-9, "{what}");
        // Fewer than ten connections: the busiest one's share, at least
        // a third of what the three answered connections got.
        let top = f.top10_share.expect("answers came back");
        assert!((1.0 / K as f64 - 1e-9..=1.0).contains(&top), "{what}");
        // The count of sockets never answered, and its warning, stay.
        assert_eq!(r.connections.never_answered, (N - K) as u64, "{what}");
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("never got a single answer")),
            "{what}: {:?}",
            r.warnings
        );
    }
}

/// A server that serves every connection alike: none starved, an index
/// near 1, and the answers per connection (kept, as a segment keeps them)
/// add up to the OK answers of the window, which every answer here is.
#[test]
fn a_server_that_serves_every_connection_alike_shows_an_even_share() {
    const N: usize = 8;
    let s = server(TestServerConfig {
        delay: Duration::from_millis(1),
        ..Default::default()
    });
    let mut c = config(&s, N);
    c.keep_histograms = true;
    let r = run(c);
    let f = fairness(&r);
    assert_eq!(f.connections_starved, 0, "{f:?}");
    assert_eq!(f.connections_answered, N as u64, "{f:?}");
    let jain = f.jain_index.expect("answers came back");
    assert!(jain > 0.9, "{f:?}");
    let counts = f.answers_per_connection.as_ref().expect("kept");
    assert_eq!(counts.len(), N, "{f:?}");
    assert!(
        counts.windows(2).all(|w| w[0] >= w[1]),
        "busiest first: {counts:?}"
    );
    assert_eq!(counts.iter().sum::<u64>(), r.ok_in_window(), "{f:?}");
    assert_eq!(r.errors.total(), 0);
    // A document without the counts keeps only the figures.
    let plain = run(config(&s, N));
    assert_eq!(fairness(&plain).answers_per_connection, None);
}

/// The open loop's pool at a rate one connection keeps up with: the
/// connections the window never needed carried nothing and are neither
/// answered nor starved (they are no clients left waiting).
#[test]
fn pool_connections_the_window_never_needed_are_not_starved() {
    let s = server(TestServerConfig::default());
    let mut c = config(&s, 16);
    c.pacing = Pacing::Rate(50.0);
    let r = run(c);
    let f = fairness(&r);
    assert_eq!(f.connections_starved, 0, "{f:?}");
    assert!((1..=16).contains(&f.connections_answered), "{f:?}");
    assert_eq!(r.errors.total(), 0);
}

/// A server that closes every connection after its answer, with no length
/// (the close ends the body, as unicorn answers an app that sets no
/// Content-Length): each slot reconnects for every request, and its
/// answers still count for it. Before 2026-11-28 an answer ended by the
/// close was not counted, so every connection read as starved while
/// thousands of answers came back.
#[test]
fn answers_ended_by_the_servers_close_count_for_their_connection() {
    const N: usize = 4;
    let s = server(TestServerConfig {
        framing: rackbench::testserver::Framing::Close,
        ..Default::default()
    });
    let mut c = config(&s, N);
    c.keep_histograms = true;
    let r = run(c);
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert!(
        r.connections.opened > N as u64,
        "the server closed each one"
    );
    let f = fairness(&r);
    assert_eq!(f.connections_starved, 0, "{f:?}");
    assert_eq!(f.connections_answered, N as u64, "{f:?}");
    let counts = f.answers_per_connection.as_ref().expect("kept");
    assert_eq!(counts.iter().sum::<u64>(), r.ok_in_window(), "{f:?}");
}
