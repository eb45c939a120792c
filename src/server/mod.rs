//! Server processes: adapters as data (`spec`), command templates
//! (`template`), start/readiness/stop of a process tree (`supervisor`), the
//! one-shot HTTP probe (`probe`), and entering another release's root
//! filesystem (`rootfs`).
//!
//! It never drives load and never reads or writes results. It borrows three
//! small things from below rather than owning copies: `load::Endpoint`
//! (where a server listens is where the load connects), `load::cpus` (the
//! CPU-list syntax shared by `--cpus` and `--server-cpus`), and `sampler`'s
//! process-tree walk (stopping a server means finding every process it
//! forked). Nothing from `lab`, `plan`, `store` or `report` is used here.

pub mod probe;
pub mod rootfs;
pub mod spec;
pub mod supervisor;
pub mod template;
