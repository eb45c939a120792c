//! `replay`'s schedule: the requests of a record file or an nginx access
//! log read, their idle gaps cut to `--max-gap`, and laid out in time
//! (`load::schedule`).

use super::sink::Sink;
use super::usage::usage;
use crate::load::schedule::{self, Schedule};
use crate::load::target::Url;
use anyhow::Result;
use std::path::PathBuf;
use std::time::Duration;

/// A schedule to build.
#[derive(Debug, Clone)]
pub struct ScheduleRequest {
    pub file: PathBuf,
    /// The file is an nginx access log, not a record file.
    pub nginx: bool,
    pub url: Url,
    /// Idle gaps longer than this are cut to it.
    pub max_gap: Option<Duration>,
    pub speed: f64,
    /// Loop over the file (`--loop`).
    pub repeat: bool,
    pub keep_alive: bool,
}

/// Reads the file and builds its schedule; notes (requests skipped, gaps
/// cut) go to `sink`. Every failure is a usage error naming the fix.
pub fn schedule(req: &ScheduleRequest, sink: &dyn Sink) -> Result<Schedule> {
    let mut entries = read_entries(req, sink).map_err(|e| usage(e.to_string()))?;
    if let Some(gap) = req.max_gap {
        if gap.is_zero() {
            return Err(usage(
                "--max-gap must be longer than zero, e.g. --max-gap 10s".into(),
            ));
        }
        let cut = schedule::cap_gaps(&mut entries, gap);
        if cut > 0 {
            sink.note(&format!(
                "note: {cut} gap(s) between recorded requests cut to {} (--max-gap)",
                schedule::fmt_length(gap)
            ));
        }
    }
    Schedule::build(entries, &req.url, req.speed, req.repeat, req.keep_alive).map_err(|e| match e {
        schedule::ScheduleError::TooLong { .. } => usage(format!(
            "{e}: replay it faster (--speed), cut its idle gaps (e.g. --max-gap 10s), or replay a part of the file"
        )),
        e => usage(e.to_string()),
    })
}

/// Reads a record file, or an nginx log, into entries; errors name the line.
fn read_entries(
    req: &ScheduleRequest,
    sink: &dyn Sink,
) -> std::result::Result<Vec<schedule::Entry>, schedule::ScheduleError> {
    let path = &req.file;
    let file = std::fs::File::open(path).map_err(|err| schedule::ScheduleError::Io {
        what: path.display().to_string(),
        err,
    })?;
    let input = std::io::BufReader::with_capacity(1 << 20, file);
    let name = path.display().to_string();
    if req.nginx {
        let log = schedule::read_nginx_log(input, &name)?;
        if log.skipped_methods > 0 {
            sink.note(&format!(
                "note: {} request(s) other than GET/HEAD in {name} skipped (their bodies are not in the log)",
                log.skipped_methods
            ));
        }
        Ok(log.entries)
    } else {
        schedule::read_record(input, &name)
    }
}
