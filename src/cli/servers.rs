//! `rackbench servers`: every adapter, whether it is installed, its version
//! (app::servers' rows; the table is app::text::servers).

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct ServersArgs {
    /// Also list the servers defined in this file.
    #[arg(long)]
    pub servers_file: Vec<PathBuf>,
    /// Print a JSON list of {name, installed, version, ...}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ServersArgs) -> Result<ExitCode> {
    let rows = crate::app::servers::rows(&args.servers_file)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", crate::app::text::servers::table(&rows));
    Ok(ExitCode::SUCCESS)
}
