//! `rackbench mix --from-record FILE` / `--from-nginx-log FILE`: flags →
//! app::mix's request; the mix to standard output, or a line on stderr
//! when `--out` took it.

use crate::app::mix;
use crate::load::recorded::DEFAULT_MAX_ENDPOINTS;
use anyhow::Result;
use clap::{ArgGroup, Args};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("source").required(true).args(["from_record", "from_nginx_log"])))]
pub struct MixArgs {
    /// A record file (rackbench/record-v1, from `rackbench record`).
    #[arg(long, value_name = "FILE")]
    pub from_record: Option<PathBuf>,
    /// An nginx access log in the combined format.
    #[arg(long, value_name = "FILE")]
    pub from_nginx_log: Option<PathBuf>,
    /// Write the mix here instead of to standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The most endpoints written; rarer shapes are folded into the
    /// nearest kept one, and the file says which.
    #[arg(long, default_value_t = DEFAULT_MAX_ENDPOINTS)]
    pub max_endpoints: usize,
    /// Write every shape folded past --max-endpoints here, one a line
    /// (count, shape, the endpoint it went into); the mix's header names
    /// only how many and the first few.
    #[arg(long, value_name = "FILE")]
    pub folded_out: Option<PathBuf>,
}

pub fn run(args: MixArgs) -> Result<ExitCode> {
    let (source, path) = match (args.from_record, args.from_nginx_log) {
        (Some(p), _) => (mix::Source::Record, p),
        (None, Some(p)) => (mix::Source::NginxLog, p),
        (None, None) => unreachable!("clap requires one"),
    };
    let made = mix::mix(&mix::MixRequest {
        source,
        path,
        max_endpoints: args.max_endpoints,
        out: args.out.clone(),
        folded_out: args.folded_out,
    })?;
    match &args.out {
        Some(out) => eprintln!(
            "{}: {} endpoint(s) from {} requests",
            out.display(),
            made.endpoints,
            made.requests
        ),
        None => std::io::stdout().lock().write_all(made.text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}
