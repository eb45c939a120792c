//! `rackbench report DIR`: every report from a results directory alone.

use super::usage;
use crate::report;
use crate::store::study::Study;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The results directory `rackbench run` wrote.
    pub dir: PathBuf,
    /// Write the HTML report here instead of DIR/report.html.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Print only the paths written, not the table.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: ReportArgs) -> Result<ExitCode> {
    let study = Study::open(&args.dir).map_err(|e| usage(e.to_string()))?;
    let written = report::write_study(&study, args.html.as_deref())?;
    if !args.quiet {
        print!("{}", written.table);
        println!();
    }
    for p in written.paths() {
        println!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}
