//! `rackbench serve-test`: the built-in test server in the foreground.
//! Hidden: it exists for rackbench's own benchmarks (comparing the
//! generator's latency with the server's own service time).

use anyhow::Result;
use clap::Args;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct ServeTestArgs {}

pub fn run(_args: ServeTestArgs) -> Result<ExitCode> {
    anyhow::bail!("not wired yet")
}
