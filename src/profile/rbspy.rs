//! rbspy's binary: where it is, the command that records one process tree
//! in one view, stopping it, and what its failures mean. Also which
//! processes of a tree are Ruby at all (rbspy is started on the topmost
//! ones) and which are JRuby (refused).
//!
//! Never links rbspy: its binary is installed by scripts/deps.sh at
//! [`VERSION`] (error.rs holds it, beside the errors that name it), which
//! keeps rackbench's own build small.

use super::error::ProfileError;
pub use super::error::{install_command, VERSION};
use super::record::View;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// rbspy on PATH, else in ~/.cargo/bin (where `cargo install` puts it and
/// which a root's PATH often lacks).
pub fn find() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("rbspy"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let home = std::env::var_os("HOME")?;
        let p = Path::new(&home).join(".cargo/bin/rbspy");
        p.is_file().then_some(p)
    })
}

/// `rbspy --version`'s answer ("rbspy 0.55.0"), or None.
pub fn version(bin: &Path) -> Option<String> {
    let out = Command::new(bin).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// One rbspy process recording `root` and every process it forks.
pub struct Recorder {
    pub root: u32,
    pub view: View,
    pub raw: PathBuf,
    pub log: PathBuf,
    child: Child,
}

/// Starts rbspy on `root` and its subprocesses in `view`, its raw samples
/// into `raw`, its messages into `log`. `--nonblocking`: the Ruby is never
/// paused to be read (the cost of reading it under load is the run's, see
/// the record's `overhead`), at the price of a rare torn stack, which rbspy
/// drops; and two views may then read one process side by side, where two
/// tracers that stop it could not both attach.
pub fn start(
    bin: &Path,
    root: u32,
    view: View,
    rate_hz: u32,
    raw: PathBuf,
    log: PathBuf,
) -> Result<Recorder, ProfileError> {
    let spawn_err = |source| ProfileError::Spawn {
        path: bin.display().to_string(),
        source,
    };
    let log_file = std::fs::File::create(&log).map_err(spawn_err)?;
    let mut cmd = Command::new(bin);
    cmd.args(["record", "--pid", &root.to_string(), "--subprocesses"])
        .args(["--rate", &rate_hz.to_string(), "--nonblocking", "--silent"])
        .arg("--raw-file")
        .arg(&raw)
        // Only the raw file is read; its own rendering is not wanted.
        .args(["--format", "collapsed", "--file", "/dev/null"])
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().map_err(spawn_err)?)
        .stderr(log_file)
        .process_group(0);
    if view == View::OnCpu {
        cmd.arg("--on-cpu");
    }
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // rbspy never outlives rackbench; SIGINT still writes its file.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT);
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(spawn_err)?;
    Ok(Recorder {
        root,
        view,
        raw,
        log,
        child,
    })
}

impl Recorder {
    /// The CPU seconds (user + system, every thread) this rbspy has used
    /// so far; None once it is gone.
    pub fn cpu_s(&self) -> Option<f64> {
        let raw = std::fs::read(format!("/proc/{}/stat", self.child.id())).ok()?;
        let stat = crate::sampler::parse_stat(raw)?;
        Some((stat.utime + stat.stime) as f64 / crate::sampler::clock_ticks())
    }

    /// Stops recording as Ctrl-C does (rbspy then finishes its raw file),
    /// waits up to `grace`, then kills it. The log's text when rbspy
    /// failed (exited non-zero before it was asked to stop, or after).
    pub fn stop(mut self, grace: Duration) -> Result<(), String> {
        let pid = self.child.id() as i32;
        if matches!(self.child.try_wait(), Ok(None)) {
            // SAFETY: a signal to our own child, which we have not reaped.
            unsafe { libc::kill(pid, libc::SIGINT) };
        }
        let deadline = Instant::now() + grace;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
            }
        };
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        match status {
            Some(s) if s.success() => Ok(()),
            Some(s) => Err(format!("rbspy {s}: {}", last_lines(&log))),
            None => Err(format!(
                "rbspy did not stop in {grace:?}: {}",
                last_lines(&log)
            )),
        }
    }
}

impl Drop for Recorder {
    /// A recorder dropped unstopped (its caller failed mid-window) is
    /// killed: no rbspy outlives the recording it belongs to.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn last_lines(log: &str) -> String {
    let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}

/// What rbspy's failure on `pid` means, from its log: no right to read
/// the process, or a Ruby it cannot read (named with `ruby`'s version).
pub fn explain(pid: u32, ruby: &str, rbspy: &str, why: String) -> ProfileError {
    let w = why.to_ascii_lowercase();
    if w.contains("permission denied") || w.contains("operation not permitted") {
        ProfileError::NoPtrace { pid, why }
    } else {
        ProfileError::Unreadable {
            pid,
            ruby: ruby.to_string(),
            rbspy: rbspy.to_string(),
            why,
        }
    }
}

/// What a process runs, from its executable and the libraries it maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runs {
    /// MRI, with its version where the library's name tells it.
    Ruby(Option<String>),
    /// JRuby on a JVM.
    Jruby,
    Other,
}

/// What `pid` runs, or None when it is gone.
pub fn runs(pid: u32) -> Option<Runs> {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    Some(classify(
        &exe.to_string_lossy(),
        &String::from_utf8_lossy(&cmdline),
        &maps,
    ))
}

/// [`runs`] over the text it reads.
pub fn classify(exe: &str, cmdline: &str, maps: &str) -> Runs {
    let name = exe.rsplit('/').next().unwrap_or(exe);
    if name.starts_with("java") && cmdline.to_ascii_lowercase().contains("jruby") {
        return Runs::Jruby;
    }
    let lib = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            p.rsplit('/')
                .next()
                .is_some_and(|f| f.starts_with("libruby"))
        });
    if let Some(lib) = lib {
        return Runs::Ruby(ruby_version_of(lib));
    }
    if name.starts_with("ruby") {
        return Runs::Ruby(None);
    }
    Runs::Other
}

/// "3.1.2" from `/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.2`.
fn ruby_version_of(lib: &str) -> Option<String> {
    let file = lib.rsplit('/').next()?;
    let after = file.split(".so.").nth(1)?;
    let v: String = after
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    (v.matches('.').count() >= 1).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_are_told_apart_by_executable_and_libruby() {
        let libruby =
            "7f0-7f1 r-xp 00000000 fe:01 1 /usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.2\n";
        let cases: &[(&str, &str, &str, Runs)] = &[
            (
                "/usr/bin/ruby3.1",
                "puma: cluster worker 0",
                libruby,
                Runs::Ruby(Some("3.1.2".into())),
            ),
            ("/usr/local/bin/ruby", "ruby app.rb", "", Runs::Ruby(None)),
            (
                "/usr/bin/uwsgi-core",
                "uwsgi --plugin rack_ruby31",
                libruby,
                Runs::Ruby(Some("3.1.2".into())),
            ),
            (
                "/usr/lib/jvm/java-17/bin/java",
                "java -jar jruby.jar",
                "",
                Runs::Jruby,
            ),
            (
                "/usr/lib/jvm/java-17/bin/java",
                "java -jar app.jar",
                "",
                Runs::Other,
            ),
            ("/usr/sbin/nginx", "nginx: worker process", "", Runs::Other),
        ];
        for (exe, cmdline, maps, want) in cases {
            assert_eq!(&classify(exe, cmdline, maps), want, "{exe}");
        }
    }

    #[test]
    fn a_failure_is_told_as_rights_or_as_an_unreadable_ruby() {
        let no_rights = explain(
            9,
            "3.1.2",
            "rbspy 0.55.0",
            "Permission denied (os error 13)".into(),
        );
        assert!(matches!(no_rights, ProfileError::NoPtrace { pid: 9, .. }));
        let msg = no_rights.to_string();
        assert!(
            msg.contains("ptrace_scope") && msg.contains("CAP_SYS_PTRACE"),
            "{msg}"
        );
        let unreadable = explain(
            9,
            "3.5.0",
            "rbspy 0.55.0",
            "Couldn't get ruby version".into(),
        );
        let msg = unreadable.to_string();
        assert!(
            msg.contains("3.5.0") && msg.contains("rbspy 0.55.0"),
            "{msg}"
        );
    }
}
