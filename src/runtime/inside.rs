//! What the server ran with, read from inside its own process: the rackup
//! wrapper (`ruby/runtime/inside.ru`) that every trial's server loads
//! writes its Ruby, YJIT state, malloc and its server's version to a
//! file per process, and [`read`] turns those files into the record's
//! `runtime` object. The host's `ruby -v` never stands in for it. The
//! `answered-PID` marks beside them (a process's first request) are read
//! by a restart under load (`lab::restart`), not here.

use super::kind::{Kind, Runtime};
use super::switches::Switches;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const WRAPPER_RU: &str = include_str!("../../ruby/runtime/inside.ru");

/// The trial record's `runtime` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeRecord {
    /// The runtime's name: system, debian-13, jruby, a user's name.
    pub name: String,
    /// system, debian, ruby or jruby.
    #[serde(default)]
    pub kind: String,
    /// The server process's `RUBY_DESCRIPTION`; null when no process of
    /// the server loaded the wrapper (a server that ignores `{{app}}`).
    pub ruby_description: Option<String>,
    pub ruby_version: Option<String>,
    /// `ruby` or `jruby`.
    pub engine: Option<String>,
    /// YJIT enabled in the server process.
    pub yjit: Option<bool>,
    /// `jemalloc` when the server process maps it, else `glibc`.
    pub allocator: Option<String>,
    /// The server as this runtime has it ("puma 6.6.0").
    pub server_version: Option<String>,
    /// Where `server_version` came from: `process` (the server's own
    /// constant) or `command` (the adapter's version command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version_from: Option<String>,
    /// Bundler's version when the server ran through `bundle exec` (a
    /// runtime with a gemfile), read from the server process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundler: Option<String>,
    /// The Gemfile the runtime names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gemfile: Option<String>,
    /// What the trial asked (yjit, allocator, malloc_arena_max).
    #[serde(default, skip_serializing_if = "Switches::is_empty")]
    pub asked: Switches,
    /// The processes that reported, and the one these figures are from.
    #[serde(default)]
    pub processes_reporting: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_from_pid: Option<u32>,
    /// What the switches asked and the process reported disagree on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mismatches: Vec<String>,
    /// A Debian root's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

/// The wrapper written for one trial: the rackup the server is given and
/// where its processes write.
#[derive(Debug, Clone)]
pub struct Wrapper {
    pub rackup: PathBuf,
    pub data_dir: PathBuf,
}

/// Writes the wrapper around `inner` (the app's rackup, or telemetry's).
pub fn write_wrapper(inner: &Path, dir: &Path) -> std::io::Result<Wrapper> {
    let data_dir = std::path::absolute(dir.join("runtime"))?;
    std::fs::create_dir_all(&data_dir)?;
    for e in std::fs::read_dir(&data_dir)?.flatten() {
        std::fs::remove_file(e.path())?;
    }
    let inner = std::path::absolute(inner)?;
    let ru = WRAPPER_RU
        .replace("{{dir}}", &ruby_string(&data_dir.display().to_string()))
        .replace("{{app}}", &ruby_string(&inner.display().to_string()));
    let rackup = std::path::absolute(dir.join("runtime-wrapper.ru"))?;
    std::fs::write(&rackup, ru)?;
    Ok(Wrapper { rackup, data_dir })
}

/// A Ruby string literal of `s`.
fn ruby_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' | '#' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One process's report: its `key=value` lines.
fn parse(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The record's `runtime` from what the server's processes wrote in
/// `data_dir`, preferring `main_pid`'s own report. `command_version` is
/// asks the adapter's version command, used only when no process knew
/// its server's version.
pub fn read(
    rt: &Runtime,
    asked: Switches,
    data_dir: &Path,
    main_pid: u32,
    command_version: impl FnOnce() -> Option<String>,
) -> RuntimeRecord {
    let mut reports: Vec<BTreeMap<String, String>> = std::fs::read_dir(data_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".txt"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .map(|t| parse(&t))
        .collect();
    let pid_of = |r: &BTreeMap<String, String>| r.get("pid").and_then(|p| p.parse::<u32>().ok());
    reports.sort_by_key(|r| (pid_of(r) != Some(main_pid), pid_of(r)));
    let known = reports
        .first()
        .and_then(|r| r.get("server_version"))
        .is_some_and(|v| !v.is_empty());
    let command_version = if known { None } else { command_version() };
    of_reports(rt, asked, &reports, command_version)
}

fn of_reports(
    rt: &Runtime,
    asked: Switches,
    reports: &[BTreeMap<String, String>],
    command_version: Option<String>,
) -> RuntimeRecord {
    let first = reports.first();
    let get = |k: &str| {
        first
            .and_then(|r| r.get(k))
            .filter(|v| !v.is_empty())
            .cloned()
    };
    let from_process = get("server_version");
    let server_version_from = match (&from_process, &command_version) {
        (Some(_), _) => Some("process".to_string()),
        (None, Some(_)) => Some("command".to_string()),
        _ => None,
    };
    let yjit = get("yjit").map(|v| v == "true");
    let allocator = get("allocator");
    let mut mismatches = Vec::new();
    if let (Some(want), Some(got)) = (asked.yjit, yjit) {
        if want != got {
            mismatches.push(format!("yjit asked {want}, the server ran with {got}"));
        }
    }
    if let (Some(want), Some(got)) = (asked.allocator, &allocator) {
        if want.name() != got {
            mismatches.push(format!("allocator asked {want}, the server mapped {got}"));
        }
    }
    let disagree: Vec<_> = ["yjit", "allocator", "ruby_description"]
        .into_iter()
        .filter(|k| {
            reports
                .iter()
                .any(|r| r.get(*k) != first.and_then(|f| f.get(*k)))
        })
        .collect();
    if !disagree.is_empty() {
        mismatches.push(format!(
            "the server's processes disagree on {}",
            disagree.join(", ")
        ));
    }
    RuntimeRecord {
        name: rt.name.clone(),
        kind: rt.kind.word().into(),
        ruby_description: get("ruby_description"),
        ruby_version: get("ruby_version"),
        engine: get("engine"),
        yjit,
        allocator,
        server_version: from_process.or(command_version),
        server_version_from,
        bundler: get("bundler"),
        gemfile: match &rt.kind {
            Kind::Ruby(u) => u.gemfile.as_ref().map(|g| g.display().to_string()),
            _ => None,
        },
        asked,
        processes_reporting: reports.len() as u32,
        read_from_pid: first
            .and_then(|r| r.get("pid"))
            .and_then(|p| p.parse().ok()),
        mismatches,
        root: match &rt.kind {
            Kind::Root { dir, .. } => Some(dir.display().to_string()),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::kind::Facts;
    use super::super::switches::Allocator;
    use super::*;

    fn rt() -> Runtime {
        Runtime {
            name: "system".into(),
            kind: Kind::System,
            facts: Facts::default(),
        }
    }

    fn report(pid: u32, yjit: &str, server: &str) -> BTreeMap<String, String> {
        parse(&format!(
            "pid={pid}\nruby_description=ruby 3.1.2p20 (2022-04-12) [x86_64-linux-gnu]\nruby_version=3.1.2\nengine=ruby\nyjit={yjit}\nallocator=glibc\nserver_version={server}\n"
        ))
    }

    #[test]
    fn the_record_says_what_the_server_process_reported() {
        let r = of_reports(
            &rt(),
            Switches::default(),
            &[report(7, "true", "puma 5.6.5")],
            None,
        );
        assert_eq!(r.ruby_version.as_deref(), Some("3.1.2"));
        assert_eq!(r.yjit, Some(true));
        assert_eq!(r.allocator.as_deref(), Some("glibc"));
        assert_eq!(r.server_version.as_deref(), Some("puma 5.6.5"));
        assert_eq!(r.server_version_from.as_deref(), Some("process"));
        assert_eq!(r.read_from_pid, Some(7));
        assert!(r.mismatches.is_empty());
    }

    #[test]
    fn a_switch_the_server_did_not_run_with_is_named() {
        let asked = Switches {
            yjit: Some(true),
            allocator: Some(Allocator::Jemalloc),
            malloc_arena_max: None,
        };
        let r = of_reports(
            &rt(),
            asked,
            &[report(7, "false", "")],
            Some("uwsgi 2.0.21".into()),
        );
        assert_eq!(r.mismatches.len(), 2, "{:?}", r.mismatches);
        assert_eq!(r.server_version.as_deref(), Some("uwsgi 2.0.21"));
        assert_eq!(r.server_version_from.as_deref(), Some("command"));
    }

    #[test]
    fn with_no_report_every_figure_is_unknown_rather_than_the_hosts() {
        let r = of_reports(&rt(), Switches::default(), &[], None);
        assert_eq!(r.ruby_description, None);
        assert_eq!(r.yjit, None);
        assert_eq!(r.processes_reporting, 0);
    }

    #[test]
    fn workers_that_disagree_are_named() {
        let r = of_reports(
            &rt(),
            Switches::default(),
            &[
                report(7, "true", "puma 6.6.0"),
                report(8, "false", "puma 6.6.0"),
            ],
            None,
        );
        assert!(
            r.mismatches[0].contains("disagree on yjit"),
            "{:?}",
            r.mismatches
        );
    }
}
