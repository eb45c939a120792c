//! rackbench: a lab for benchmarking Ruby Rack application servers.
//!
//! # Layout
//!
//! - [`load`]: the load engine. Drives HTTP/1.1 requests at a URL from
//!   hand-written epoll loops and records latency, errors and a per-second
//!   timeline. Knows nothing about servers, plans or disk.
//! - [`cli`]: the command line: clap types, one file per subcommand, each
//!   turning flags into a library call and the result into output.
//! - [`testserver`]: a small HTTP server with delay, stall and fault knobs,
//!   for tests and benchmarks of the engine itself.
//! - [`require`]: what a test needs from the machine; skips locally, fails
//!   under `RACKBENCH_REQUIRE=all` (CI).
//!
//! Dependencies point one way: `cli` → `load`; nothing in `load` reaches up.

pub mod checks;
pub mod cli;
pub mod lab;
pub mod load;
pub mod mirror;
pub mod plan;
pub mod report;
pub mod require;
pub mod sampler;
pub mod search;
pub mod server;
pub mod store;
pub mod testserver;
pub mod units;
