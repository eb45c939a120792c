//! `rackbench servers`: every adapter, whether it is installed, its version.

use crate::server::spec::{installed_version, Registry};
use anyhow::Result;
use clap::Args;
use serde::Serialize;
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

#[derive(Debug, Serialize)]
struct Row {
    name: String,
    installed: bool,
    version: Option<String>,
    description: String,
    processes: bool,
    threads: bool,
    unix_socket: bool,
    keep_alive: bool,
    command: String,
    notes: String,
}

pub fn registry(files: &[PathBuf]) -> Result<Registry> {
    let mut reg = Registry::builtin();
    for f in files {
        reg.add_file(f).map_err(|e| super::usage(e.to_string()))?;
    }
    Ok(reg)
}

pub fn run(args: ServersArgs) -> Result<ExitCode> {
    let reg = registry(&args.servers_file)?;
    let rows: Vec<Row> = reg
        .servers
        .iter()
        .map(|s| {
            let (installed, version) = installed_version(s);
            Row {
                name: s.name.clone(),
                installed,
                version,
                description: s.description.clone(),
                processes: s.processes,
                threads: s.threads,
                unix_socket: s.unix_socket,
                keep_alive: s.keep_alive,
                command: s.command.clone(),
                notes: s.notes.clone(),
            }
        })
        .collect();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<11} {:<10} {:<40} can do",
        "server", "installed", "version"
    );
    for r in &rows {
        let mut can = Vec::new();
        if r.processes {
            can.push("workers");
        }
        if r.threads {
            can.push("threads");
        }
        if r.unix_socket {
            can.push("unix socket");
        }
        if r.keep_alive {
            can.push("keep-alive");
        }
        println!(
            "{:<11} {:<10} {:<40} {}",
            r.name,
            if r.installed { "yes" } else { "no" },
            r.version.as_deref().unwrap_or("-"),
            can.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}
