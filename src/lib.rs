//! rackbench: a lab for benchmarking Ruby Rack application servers.
//!
//! # Layout
//!
//! From the top down; each part uses only parts listed below it (docs/
//! ARCHITECTURE.md has the file-by-file map).
//!
//! - [`cli`]: the command line: clap types, one file per subcommand, each
//!   turning flags into a typed request for `app` (or a library call) and
//!   the result into output.
//! - [`app`]: the use cases (run a plan, sweep, fit, a break-point search)
//!   over typed requests; what they say goes to a sink (terminal, JSON
//!   lines, a test's), so a use case neither prints nor moves standard
//!   output.
//! - [`doctor`]: checks of this machine before a study (CPU frequency,
//!   steal and busy processes, kernel limits, cgroups, Ruby and servers),
//!   each finding with its fix; reads and probes, never changes a setting.
//! - [`k8s`]: load from many nodes as a Kubernetes Indexed Job (k8s-openapi
//!   types, submitted with kubectl); runs `rackbench load` and `merge` only
//!   as the binary, never through their types.
//! - [`report`]: terminal, Markdown, CSV, JSON and HTML reports, built from
//!   a results directory alone (`store`), never from a live run; the
//!   mirror's page from its mirror-v1 document alone.
//! - [`history`]: the same groups over many runs (results directories
//!   in date order): each point's median and its interval, its verdict
//!   against a baseline by compare's statistics, the steps between
//!   neighbouring runs; the history-v1 document.
//! - [`mirror`]: the traffic-duplicating proxy (primary and shadows) and
//!   the request recorder; relays what arrives, never drives load itself.
//! - [`plan`]: plan files, their expansion into trials, and the runner that
//!   runs them and writes each record the moment it ends.
//! - [`store`]: results on disk: the records (manifest, trials, break
//!   points, summary) and their atomic writes; the only reader of a
//!   results directory (the one check, typed records, the one list of a
//!   trial's figures, the samples `stats` compares).
//! - [`lab`]: one trial: start the server (behind nginx if asked), verify
//!   its answer, load it while sampling it, stop it, return the record.
//! - [`runtime`]: where servers run from (the host, a Debian release's
//!   root, a user's Ruby, JRuby) and the switches asked of its Ruby
//!   (YJIT, allocator); what the server ran with, read from inside it.
//! - [`database`]: the database behind an app that needs one: SQLite (a
//!   file) or PostgreSQL (a server started, seeded and stopped per trial),
//!   the rows seeded and written; starts no app server, drives no load.
//! - [`profile`]: where a server's CPU and time go: every Ruby process of
//!   its tree sampled by rbspy's binary over a window, on-CPU and wall
//!   clock; collapsed stacks, speedscope JSON, the top frames; never
//!   starts a server or drives load.
//! - [`leftovers`]: what a killed rackbench process left (its control
//!   groups, PostgreSQL's data directory, its run dir), found when its
//!   maker is gone and removed by the next command that starts servers;
//!   listed by `doctor`; never kills a process.
//! - [`ab`]: the paired rounds of an A/B over a closure that runs one
//!   window: the order drawn per round, disturbed rounds run again, the
//!   always-valid interval updated until it decides; the ab-v1 document.
//! - [`tune`]: the GC's rules (`tune gc`): from a control's telemetry to
//!   environment variables to try, per Ruby version; pure.
//! - [`search`]: the break-point search over a closure that runs one step.
//! - [`checks`]: `--check` thresholds on a load's figures.
//! - [`server`]: server adapters as data, command templates, the
//!   supervisor that stops a process tree when dropped.
//! - [`budget`]: memory and CPU budgets: the control group (v1 or v2) a
//!   server's process tree runs in, its limits, and what it saw.
//! - [`sampler`]: CPU and memory of a process tree, from /proc.
//! - [`testserver`]: a small HTTP server with delay, stall and fault knobs,
//!   for tests and benchmarks of the engine itself.
//! - [`telemetry`]: where the time goes inside the server: the Rack
//!   middleware's figures read back, the wrapper rackup, accept queues
//!   (of a server at the load engine's `Endpoint`).
//! - [`live`]: the live endpoint (`--metrics-listen`): the board the
//!   engine (through `load::Observer`), the lab and the mirror feed as
//!   they measure, served as OpenMetrics or Prometheus text, as
//!   `/live.json` and as a page, from a thread on std's listener.
//! - [`load`]: the load engine. Drives HTTP/1.1 requests at a URL from
//!   hand-written io_uring/epoll loops and records latency, errors and a
//!   per-second timeline. Knows nothing about servers, plans or disk.
//! - [`stats`]: arithmetic over samples already measured: spread across
//!   repeats, bootstrap intervals, rank tests with Holm's adjustment, the
//!   A-versus-B comparison and the sweep's analysis, the USL fit, the
//!   always-valid interval of a sequential A/B; never a file or a JSON
//!   value.
//! - [`host`]: rackbench's own files, a free port, the UTC clock.
//! - [`units`]: durations as people write them, names in the order they
//!   read them ("c2" before "c16").
//! - [`require`]: what a test needs from the machine; skips locally, fails
//!   under `RACKBENCH_REQUIRE=all` (CI).

pub mod ab;
pub mod app;
pub mod budget;
pub mod checks;
pub mod cli;
pub mod database;
pub mod doctor;
pub mod history;
pub mod host;
pub mod k8s;
pub mod lab;
pub mod leftovers;
pub mod live;
pub mod load;
pub mod mirror;
pub mod plan;
pub mod profile;
pub mod report;
pub mod require;
pub mod runtime;
pub mod sampler;
pub mod search;
pub mod server;
pub mod stats;
pub mod store;
pub mod telemetry;
pub mod testserver;
pub mod tune;
pub mod units;
