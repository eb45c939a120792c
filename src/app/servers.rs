//! The servers a command may start: the built-in adapters and those of
//! each `--servers-file`.

use super::usage::usage;
use crate::server::spec::Registry;
use anyhow::Result;
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
