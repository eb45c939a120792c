//! `mix`: a mix file (docs/MIX_FORMAT.md) from a record file or an nginx
//! access log, with the proportions it recorded (see `load::mixgen`,
//! `load::recorded`); the mix and the folded list written where asked.

use super::usage::usage;
use crate::load::mixgen;
use crate::load::recorded;
use anyhow::{Context, Result};
use std::path::PathBuf;

/// What the traffic is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A record file (rackbench/record-v1).
    Record,
    /// An nginx access log in the combined format.
    NginxLog,
}

impl Source {
    /// The flag that names this source's file.
    pub fn flag(self) -> &'static str {
        match self {
            Source::Record => "--from-record",
            Source::NginxLog => "--from-nginx-log",
        }
    }
}

/// A mix to make.
#[derive(Debug, Clone)]
pub struct MixRequest {
    pub source: Source,
    pub path: PathBuf,
    /// The most endpoints written (at least 1).
    pub max_endpoints: usize,
    /// Where the mix goes; `None` keeps it in [`Mix::text`] only.
    pub out: Option<PathBuf>,
    /// Where every folded shape goes, one a line.
    pub folded_out: Option<PathBuf>,
}

/// A mix made.
#[derive(Debug, Clone)]
pub struct Mix {
    /// The mix file's text.
    pub text: String,
    /// How many endpoints it holds.
    pub endpoints: usize,
    /// How many requests it was made from.
    pub requests: u64,
}

/// Reads the source, makes the mix and writes `out` and `folded_out`.
/// An unreadable or empty source is a usage error naming its flag.
pub fn mix(req: &MixRequest) -> Result<Mix> {
    if req.max_endpoints == 0 {
        return Err(usage(
            "--max-endpoints must be at least 1, e.g. --max-endpoints 20".into(),
        ));
    }
    let flag = req.source.flag();
    let name = req.path.display().to_string();
    let file = std::fs::File::open(&req.path)
        .map_err(|e| usage(format!("cannot read {flag} {name}: {e}")))?;
    let input = std::io::BufReader::with_capacity(1 << 20, file);
    let traffic = match req.source {
        Source::Record => mixgen::from_record(input, &name),
        Source::NginxLog => mixgen::from_nginx_log(input, &name),
    }
    .map_err(|e| usage(e.to_string()))?;
    let endpoints = recorded::endpoints(&traffic, req.max_endpoints);
    let text = mixgen::render(
        &traffic,
        &endpoints,
        &format!("rackbench mix {flag} {name}"),
    );
    if let Some(out) = &req.folded_out {
        std::fs::write(out, mixgen::folded_list(&endpoints))
            .with_context(|| format!("cannot write --folded-out {}", out.display()))?;
    }
    if let Some(out) = &req.out {
        std::fs::write(out, &text)
            .with_context(|| format!("cannot write --out {}", out.display()))?;
    }
    Ok(Mix {
        text,
        endpoints: endpoints.len(),
        requests: traffic.requests,
    })
}
