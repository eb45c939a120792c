//! `rackbench merge FILES...`: the files to app::merge; the merged
//! load-v1 document or its summary to standard output.

use crate::app::merge;
use crate::app::sink::Terminal;
use crate::load::merge::render_segments;
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The segments' load-v1 JSON documents (one per segment).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print the merged JSON document (rackbench/load-v1 with `segments`)
    /// instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Also write the merged JSON document to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(args: MergeArgs) -> Result<ExitCode> {
    let report = merge::merge(&args.files, args.out.as_deref(), &Terminal::new())?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", report.render_text())?;
        write!(out, "{}", render_segments(&report))?;
    }
    Ok(ExitCode::SUCCESS)
}
