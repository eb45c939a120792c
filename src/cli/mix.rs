//! `rackbench mix --from-record FILE` / `--from-nginx-log FILE`: a mix
//! file (docs/MIX_FORMAT.md) that reproduces the recorded proportions,
//! to standard output or `--out` (see `load::mixgen`, `load::recorded`).

use super::usage;
use crate::load::mixgen;
use crate::load::recorded::{self, DEFAULT_MAX_ENDPOINTS};
use anyhow::{Context, Result};
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
    if args.max_endpoints == 0 {
        return Err(usage(
            "--max-endpoints must be at least 1, e.g. --max-endpoints 20".into(),
        ));
    }
    let (path, flag) = match (&args.from_record, &args.from_nginx_log) {
        (Some(p), _) => (p, "--from-record"),
        (None, Some(p)) => (p, "--from-nginx-log"),
        (None, None) => unreachable!("clap requires one"),
    };
    let name = path.display().to_string();
    let file =
        std::fs::File::open(path).map_err(|e| usage(format!("cannot read {flag} {name}: {e}")))?;
    let input = std::io::BufReader::with_capacity(1 << 20, file);
    let traffic = if args.from_record.is_some() {
        mixgen::from_record(input, &name)
    } else {
        mixgen::from_nginx_log(input, &name)
    }
    .map_err(|e| usage(e.to_string()))?;
    let endpoints = recorded::endpoints(&traffic, args.max_endpoints);
    let text = mixgen::render(
        &traffic,
        &endpoints,
        &format!("rackbench mix {flag} {name}"),
    );
    if let Some(out) = &args.folded_out {
        std::fs::write(out, mixgen::folded_list(&endpoints))
            .with_context(|| format!("cannot write --folded-out {}", out.display()))?;
    }
    match &args.out {
        Some(out) => {
            std::fs::write(out, &text)
                .with_context(|| format!("cannot write --out {}", out.display()))?;
            eprintln!(
                "{}: {} endpoint(s) from {} requests",
                out.display(),
                endpoints.len(),
                traffic.requests
            );
        }
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}
