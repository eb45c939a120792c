//! `rackbench doctor`: checks this machine before a study (see `doctor`);
//! exit 0 when nothing stands in the way, 1 when a problem does.

use crate::doctor::examine;
use anyhow::Result;
use clap::Args;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Watch the machine this many seconds for steal and busy processes.
    #[arg(long, default_value_t = 2.0, value_name = "N")]
    pub seconds: f64,
    /// Print the rackbench/doctor-v1 JSON document instead of the text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: DoctorArgs) -> Result<ExitCode> {
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 3600.0) {
        return Err(super::usage(format!(
            "--seconds {} must be a number of seconds above 0 and at most 3600, e.g. --seconds 2",
            args.seconds
        )));
    }
    let exam = examine(Duration::from_secs_f64(args.seconds));
    if args.json {
        println!("{}", serde_json::to_string_pretty(&exam)?);
    } else {
        print!("{}", exam.render());
    }
    Ok(if exam.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
