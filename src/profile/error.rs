//! What goes wrong when profiling, each error naming its fix, and the
//! pinned rbspy those fixes name. Knows no other file of the profiler.

use thiserror::Error;

/// The rbspy scripts/deps.sh installs (crates.io, MIT): the newest 0.x
/// when this was written; it read Debian 12's Ruby 3.1 in puma and
/// unicorn clusters (tests/profile.rs).
pub const VERSION: &str = "0.55.0";

/// The command that installs it, as the errors say it.
pub fn install_command() -> String {
    format!("scripts/deps.sh test (or: cargo install rbspy --version {VERSION} --locked)")
}

#[derive(Debug, Error)]
pub enum ProfileError {
    #[error(
        "rbspy is not installed (looked on PATH and in ~/.cargo/bin): run {}",
        install_command()
    )]
    Missing,
    #[error("pid {pid} runs JRuby ({exe}): rbspy reads only MRI's stacks, not the JVM's; profile it with a JVM profiler such as async-profiler (asprof -d SECONDS -f flame.html {pid})")]
    Jruby { pid: u32, exe: String },
    #[error("no Ruby process in the tree of pid {root} (its processes: {seen}); rbspy reads MRI processes only")]
    NoRuby { root: u32, seen: String },
    #[error("{rbspy} cannot read pid {pid}'s Ruby ({ruby}): {why}; use a Ruby that {rbspy} supports, or pin a newer rbspy (scripts/deps.sh and profile::rbspy::VERSION)")]
    Unreadable {
        pid: u32,
        ruby: String,
        rbspy: String,
        why: String,
    },
    #[error("rbspy may not read pid {pid}'s memory ({why}): run rackbench as root or with CAP_SYS_PTRACE; kernel.yama.ptrace_scope must be 0, or 1 with the capability (sysctl kernel.yama.ptrace_scope=0)")]
    NoPtrace { pid: u32, why: String },
    #[error("cannot start rbspy ({path}): {source}")]
    Spawn {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("rbspy's raw file {path} cannot be read: {why}")]
    RawFile { path: String, why: String },
}
