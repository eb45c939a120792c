//! The servers a command may start: the built-in adapters and those of
//! each `--servers-file`.

use super::usage::usage;
use crate::server::spec::{installed_version, Registry};
use anyhow::Result;
use serde::Serialize;
use std::path::PathBuf;

/// The built-in adapters, then each file's definitions; a file that does
/// not read is a usage error naming it.
pub fn registry(files: &[PathBuf]) -> Result<Registry> {
    let mut reg = Registry::builtin();
    for f in files {
        reg.add_file(f).map_err(|e| usage(e.to_string()))?;
    }
    Ok(reg)
}

/// An adapter as `rackbench servers` lists it: what it can do and
/// whether it is installed here (its JSON is the `--json` list's row).
#[derive(Debug, Serialize)]
pub struct Row {
    pub name: String,
    pub installed: bool,
    pub version: Option<String>,
    pub description: String,
    pub processes: bool,
    pub threads: bool,
    pub unix_socket: bool,
    pub keep_alive: bool,
    pub command: String,
    pub notes: String,
}

/// Every server of the registry (the built-in adapters and `files`'), with
/// whether it is installed and its version.
pub fn rows(files: &[PathBuf]) -> Result<Vec<Row>> {
    let reg = registry(files)?;
    Ok(reg
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
        .collect())
}
