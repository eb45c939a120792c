//! Servers as data: a command template, what the server can do, how to read
//! its version, and the config file it needs. The built-in adapters live in
//! `ruby/servers/servers.toml`; a user's own server is the same kind of
//! entry in their own file (`--servers-file`) or a bare `--command`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use thiserror::Error;

/// The built-in adapters, compiled in so the binary works from anywhere.
pub const BUILTIN_SERVERS: &str = include_str!("../../ruby/servers/servers.toml");

/// Config templates the built-in adapters refer to by name.
pub const BUILTIN_TEMPLATES: &[(&str, &str)] = &[
    ("unicorn.rb", include_str!("../../ruby/servers/unicorn.rb")),
    ("puma.rb", include_str!("../../ruby/servers/puma.rb")),
    ("nginx.conf", include_str!("../../ruby/servers/nginx.conf")),
];

#[derive(Debug, Error)]
pub enum SpecError {
    #[error("{file}: {message}")]
    Parse { file: String, message: String },
    #[error("cannot read {file}: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("unknown server '{name}'; known servers: {known} (or define it with --command or --servers-file)")]
    Unknown { name: String, known: String },
    #[error("{file}: server '{name}' uses config template '{template}', which is neither built in nor a readable file")]
    Template {
        file: String,
        name: String,
        template: String,
    },
}

/// How one server is started and what it can do.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    #[serde(skip_deserializing)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The command line template; see `server::template` for the syntax.
    pub command: String,
    /// Prints the version; its first line that has a digit is kept.
    #[serde(default)]
    pub version_command: Option<String>,
    /// Executables that must be on PATH for the server to count as installed.
    #[serde(default)]
    pub requires: Vec<String>,
    /// A config file rendered into the trial directory before the start;
    /// its path is `{{config}}` in the command.
    #[serde(default)]
    pub config_template: Option<String>,
    /// Signal that stops the server cleanly: TERM, INT or QUIT.
    #[serde(default = "default_stop_signal")]
    pub stop_signal: String,
    /// Accepts more than one worker process (`{{workers}}`).
    #[serde(default)]
    pub processes: bool,
    /// Runs requests on several threads per process (`{{threads}}`).
    #[serde(default)]
    pub threads: bool,
    /// Can listen on a unix socket (`{{socket}}`), used behind nginx.
    #[serde(default)]
    pub unix_socket: bool,
    /// Keeps client connections alive between requests.
    #[serde(default = "yes")]
    pub keep_alive: bool,
    #[serde(default = "one")]
    pub default_workers: u32,
    #[serde(default = "one")]
    pub default_threads: u32,
    /// Server-specific knobs with their defaults, usable as placeholders and
    /// changed per trial with `--set name=value` (e.g. uwsgi's rb_gc_freq).
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// Environment for the server process.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How long start-up may take before the trial fails.
    #[serde(default = "default_start_timeout")]
    pub start_timeout_s: f64,
    /// What a user should know (shown by `rackbench servers`).
    #[serde(default)]
    pub notes: String,
    /// The server's own view of its queue, read with telemetry on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<StatsSource>,
    /// How its operators restart it under load, by kind name
    /// (`--restart KIND`); `kill-worker` is built in for any server with
    /// `processes` and is not declared here.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub restarts: BTreeMap<String, RestartKind>,
}

/// One way to restart a server under load: a signal to its main process
/// (the one rackbench started, or the master that replaced it), or a
/// command run beside it. Exactly one of `signal` and `command`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct RestartKind {
    /// Signal sent to the main process: USR1, USR2, HUP, ... (SIG optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// What follows the signal: "quit-old-master" waits for the new master
    /// (its pid file names another live process with its workers up) and
    /// then sends QUIT to the old one (unicorn's documented sequence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub then: Option<String>,
    /// A command template (the server's placeholders, e.g. `{{run_dir}}`,
    /// `{{app_dir}}`), run with the server's environment; exit 0 is success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Refused without worker processes (--workers 1 or more).
    #[serde(default)]
    pub needs_workers: bool,
    /// How long the restart may take to complete before it counts as failed.
    #[serde(default = "default_restart_timeout")]
    pub timeout_s: f64,
}

/// The built-in kind every preforking server has: SIGKILL to one worker.
pub const KILL_WORKER: &str = "kill-worker";

/// What `then` may say.
pub const QUIT_OLD_MASTER: &str = "quit-old-master";

fn default_restart_timeout() -> f64 {
    30.0
}

impl RestartKind {
    /// The built-in `kill-worker`.
    pub fn kill_worker() -> RestartKind {
        RestartKind {
            signal: Some("KILL".into()),
            needs_workers: true,
            timeout_s: default_restart_timeout(),
            ..RestartKind::default()
        }
    }

    /// The signal's number, for the names a restart uses.
    pub fn signal_number(name: &str) -> Option<i32> {
        Some(match name.trim_start_matches("SIG") {
            "HUP" => libc::SIGHUP,
            "INT" => libc::SIGINT,
            "QUIT" => libc::SIGQUIT,
            "KILL" => libc::SIGKILL,
            "USR1" => libc::SIGUSR1,
            "USR2" => libc::SIGUSR2,
            "TERM" => libc::SIGTERM,
            "WINCH" => libc::SIGWINCH,
            "TTIN" => libc::SIGTTIN,
            "TTOU" => libc::SIGTTOU,
            "URG" => libc::SIGURG,
            _ => return None,
        })
    }

    /// What is wrong with a declared kind, in words naming the fix.
    fn check(&self) -> Result<(), String> {
        match (&self.signal, &self.command) {
            (Some(_), Some(_)) | (None, None) => {
                return Err("give either signal = \"USR2\" or command = \"...\"".into())
            }
            (Some(s), None) if RestartKind::signal_number(s).is_none() => {
                return Err(format!(
                    "signal '{s}' is not one of HUP, INT, QUIT, KILL, USR1, USR2, TERM, WINCH, TTIN, TTOU, URG"
                ))
            }
            _ => {}
        }
        if let Some(t) = self.then.as_deref().filter(|t| *t != QUIT_OLD_MASTER) {
            return Err(format!(
                "then = \"{t}\": the one sequence known is \"{QUIT_OLD_MASTER}\""
            ));
        }
        if self.then.is_some() && self.signal.is_none() {
            return Err(format!("then = \"{QUIT_OLD_MASTER}\" follows a signal"));
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return Err(format!(
                "timeout_s = {}: give seconds above 0",
                self.timeout_s
            ));
        }
        Ok(())
    }
}

/// Where a server reports its own queue: an HTTP GET of `path` on
/// 127.0.0.1:`{{stats_port}}`, answered with JSON (puma's control server).
/// Each field named in `fields` is summed over every place it occurs in
/// the answer, so a cluster's per-worker figures add up. The command
/// template opens the port with `{{?telemetry ...}}` and
/// `{{stats_port}}`/`{{stats_token}}`, so nothing changes without
/// telemetry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StatsSource {
    /// Path and query, a template (`/stats?token={{stats_token}}`).
    pub path: String,
    /// JSON keys to read, e.g. ["backlog", "running"].
    pub fields: Vec<String>,
}

fn default_stop_signal() -> String {
    "TERM".into()
}
fn yes() -> bool {
    true
}
fn one() -> u32 {
    1
}
fn default_start_timeout() -> f64 {
    60.0
}

/// Something a trial asks of a server that the server cannot do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// More than one worker process from a server that runs one.
    Processes(u32),
    /// More than one thread from a server without a thread pool.
    Threads(u32),
    /// A setting the adapter does not have.
    Setting(String),
}

impl ServerSpec {
    /// The one capability check, for a trial (`lab`, an error naming the
    /// fix) and a plan (`plan`, a skipped combination or an error at the
    /// setting's line): workers, then threads, then settings.
    pub fn missing<'a>(
        &self,
        workers: Option<u32>,
        threads: Option<u32>,
        settings: impl IntoIterator<Item = &'a String>,
    ) -> Option<Missing> {
        if let Some(w) = workers.filter(|&w| w > 1 && !self.processes) {
            return Some(Missing::Processes(w));
        }
        if let Some(t) = threads.filter(|&t| t > 1 && !self.threads) {
            return Some(Missing::Threads(t));
        }
        settings
            .into_iter()
            .find(|k| !self.settings.contains_key(*k))
            .map(|k| Missing::Setting(k.clone()))
    }

    /// The adapter's settings, comma-separated.
    pub fn setting_names(&self) -> String {
        self.settings.keys().cloned().collect::<Vec<_>>().join(", ")
    }
}

impl ServerSpec {
    /// A user's server from a bare command template.
    pub fn custom(name: &str, command: &str) -> ServerSpec {
        ServerSpec {
            name: name.to_string(),
            description: "user-defined command template".into(),
            command: command.to_string(),
            version_command: None,
            requires: Vec::new(),
            config_template: None,
            stop_signal: default_stop_signal(),
            processes: command.contains("{{workers}}"),
            threads: command.contains("{{threads}}"),
            unix_socket: command.contains("{{socket}}"),
            keep_alive: true,
            default_workers: 1,
            default_threads: 1,
            settings: BTreeMap::new(),
            env: BTreeMap::new(),
            start_timeout_s: default_start_timeout(),
            notes: String::new(),
            stats: None,
            restarts: BTreeMap::new(),
        }
    }

    /// The restart kinds this server has: its own, plus `kill-worker` for
    /// a server with worker processes.
    pub fn restart_kinds(&self) -> BTreeMap<String, RestartKind> {
        let mut kinds = self.restarts.clone();
        if self.processes {
            kinds
                .entry(KILL_WORKER.into())
                .or_insert_with(RestartKind::kill_worker);
        }
        kinds
    }

    /// The restart `kind` asks, or a one-line refusal naming the kinds this
    /// server has; `workers` is what the trial runs with (None: the
    /// adapter's default), refused for a kind that needs workers.
    pub fn restart_kind(&self, kind: &str, workers: Option<u32>) -> Result<RestartKind, String> {
        let kinds = self.restart_kinds();
        let Some(k) = kinds.get(kind) else {
            return Err(if kinds.is_empty() {
                format!(
                    "{} has no restart kinds (declare them as restarts = {{ NAME = {{ signal = \"USR2\" }} }} in a servers file)",
                    self.name
                )
            } else {
                format!(
                    "{} has no restart kind '{kind}': its kinds are {}",
                    self.name,
                    kinds.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            });
        };
        if k.needs_workers && workers.unwrap_or(self.default_workers) == 0 {
            return Err(format!(
                "--restart {kind} needs worker processes: {} runs without them here; give --workers 2",
                self.name
            ));
        }
        Ok(k.clone())
    }

    pub fn stop_signal_number(&self) -> Option<i32> {
        match self.stop_signal.trim_start_matches("SIG") {
            "TERM" => Some(libc::SIGTERM),
            "INT" => Some(libc::SIGINT),
            "QUIT" => Some(libc::SIGQUIT),
            "KILL" => Some(libc::SIGKILL),
            _ => None,
        }
    }

    /// The template text of the config file, if the server needs one.
    pub fn config_text(&self, base: Option<&Path>) -> Option<Result<String, std::io::Error>> {
        let name = self.config_template.as_deref()?;
        if let Some((_, text)) = BUILTIN_TEMPLATES.iter().find(|(n, _)| *n == name) {
            return Some(Ok(text.to_string()));
        }
        let path = base.map_or_else(|| Path::new(name).to_path_buf(), |b| b.join(name));
        Some(std::fs::read_to_string(path))
    }

    /// A server whose command never says where to listen (and that has no
    /// config file that could) would only wait out its start timeout, or
    /// find another process on the port: refused before anything starts.
    pub fn check_listens(&self) -> Result<(), String> {
        if self.config_template.is_some()
            || LISTEN_PLACEHOLDERS.iter().any(|p| self.command.contains(p))
        {
            return Ok(());
        }
        Err(format!(
            "server '{}': its command '{}' never says where to listen: put {} in it, e.g. puma -b tcp://{{{{host}}}}:{{{{port}}}} {{{{app}}}}",
            self.name,
            self.command,
            LISTEN_PLACEHOLDERS.join(", ")
        ))
    }

    /// Whether every required executable is on PATH.
    pub fn installed(&self) -> bool {
        self.requires.iter().all(|exe| which(exe).is_some())
    }
}

/// The placeholders that tell a server where to listen.
pub const LISTEN_PLACEHOLDERS: &[&str] =
    &["{{port}}", "{{listen}}", "{{listen_url}}", "{{socket}}"];

/// Finds an executable on PATH.
pub fn which(exe: &str) -> Option<std::path::PathBuf> {
    if exe.contains('/') {
        return Path::new(exe).is_file().then(|| exe.into());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(exe))
            .find(|p| {
                use std::os::unix::fs::PermissionsExt;
                p.metadata()
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    })
}

/// Parses a servers file: a table per server.
pub fn parse_servers(text: &str, file: &str) -> Result<Vec<ServerSpec>, SpecError> {
    let table: BTreeMap<String, ServerSpec> =
        toml::from_str(text).map_err(|e| SpecError::Parse {
            file: file.to_string(),
            message: e.to_string(),
        })?;
    let mut out = Vec::new();
    for (name, mut spec) in table {
        spec.name = name.clone();
        if spec.stop_signal_number().is_none() {
            return Err(SpecError::Parse {
                file: file.to_string(),
                message: format!(
                    "server '{name}': stop_signal '{}' must be TERM, INT, QUIT or KILL",
                    spec.stop_signal
                ),
            });
        }
        spec.check_listens().map_err(|message| SpecError::Parse {
            file: file.to_string(),
            message,
        })?;
        for (kind, k) in &spec.restarts {
            k.check().map_err(|why| SpecError::Parse {
                file: file.to_string(),
                message: format!("server '{name}': restart '{kind}': {why}"),
            })?;
        }
        out.push(spec);
    }
    Ok(out)
}

/// The built-in servers plus any from the user's files (which win on a
/// name clash).
#[derive(Debug, Clone)]
pub struct Registry {
    pub servers: Vec<ServerSpec>,
}

impl Registry {
    pub fn builtin() -> Registry {
        Registry {
            servers: parse_servers(BUILTIN_SERVERS, "ruby/servers/servers.toml")
                .expect("built-in servers.toml is valid"),
        }
    }

    pub fn add_file(&mut self, path: &Path) -> Result<(), SpecError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| SpecError::Read {
            file: file.clone(),
            source: e,
        })?;
        let base = path.parent();
        for spec in parse_servers(&text, &file)? {
            if let Some(Err(_)) = spec.config_text(base) {
                return Err(SpecError::Template {
                    file,
                    name: spec.name.clone(),
                    template: spec.config_template.clone().unwrap_or_default(),
                });
            }
            self.servers.retain(|s| s.name != spec.name);
            self.servers.push(spec);
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> Result<&ServerSpec, SpecError> {
        self.servers
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| SpecError::Unknown {
                name: name.to_string(),
                known: self
                    .servers
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

/// Whether a server can run here, and its version: installed means its
/// executables are on PATH and, when it has a version command, that the
/// command answers (one that fails means a missing piece, a plugin or a
/// library, even when the executable is there).
pub fn installed_version(spec: &ServerSpec) -> (bool, Option<String>) {
    if !spec.installed() {
        return (false, None);
    }
    let version = read_version(spec);
    (spec.version_command.is_none() || version.is_some(), version)
}

/// Runs a server's version command and keeps the first line with a digit.
pub fn read_version(spec: &ServerSpec) -> Option<String> {
    read_version_with(spec, |_| {})
}

/// [`read_version`], with `setup` given the shell command before it runs
/// (a runtime's root, PATH and environment).
pub fn read_version_with(
    spec: &ServerSpec,
    setup: impl FnOnce(&mut std::process::Command),
) -> Option<String> {
    let cmd = spec.version_command.as_deref()?;
    let home = crate::host::rackbench_home();
    let cmd = cmd.replace("{{rackbench_home}}", &home.display().to_string());
    let mut command = std::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(&cmd)
        .stdin(std::process::Stdio::null());
    setup(&mut command);
    let out = command.output().ok()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .map(str::trim)
        .find(|l| l.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_names_the_first_thing_a_server_cannot_do() {
        let r = Registry::builtin();
        let webrick = r.get("webrick").unwrap(); // one process
        let unicorn = r.get("unicorn").unwrap(); // no threads
        let puma = r.get("puma").unwrap();
        let none: [&String; 0] = [];
        let bogus = "no_such_setting".to_string();
        type Row<'a> = (
            &'a ServerSpec,
            Option<u32>,
            Option<u32>,
            Vec<&'a String>,
            Option<Missing>,
        );
        let rows: [Row; 7] = [
            (puma, Some(4), Some(8), vec![], None),
            (webrick, Some(1), None, vec![], None),
            (webrick, Some(2), None, vec![], Some(Missing::Processes(2))),
            (unicorn, Some(2), Some(1), vec![], None),
            (unicorn, None, Some(4), vec![], Some(Missing::Threads(4))),
            (
                puma,
                None,
                None,
                vec![&bogus],
                Some(Missing::Setting(bogus.clone())),
            ),
            // Workers are named before a bad setting.
            (
                webrick,
                Some(3),
                None,
                vec![&bogus],
                Some(Missing::Processes(3)),
            ),
        ];
        for (spec, w, t, settings, want) in rows {
            assert_eq!(
                spec.missing(w, t, settings),
                want,
                "{} {w:?} {t:?}",
                spec.name
            );
        }
        assert_eq!(puma.missing(None, None, none), None);
    }

    #[test]
    fn builtin_servers_parse_and_name_their_needs() {
        let r = Registry::builtin();
        for name in ["puma", "unicorn", "thin", "passenger", "webrick", "uwsgi"] {
            let s = r.get(name).unwrap();
            assert!(!s.requires.is_empty(), "{name} must say what it needs");
            assert!(
                s.version_command.is_some(),
                "{name} must say how to read its version"
            );
            if let Some(res) = s.config_text(None) {
                res.unwrap_or_else(|e| panic!("{name}: config template: {e}"));
            }
        }
    }

    #[test]
    fn restart_kinds_come_from_the_adapter_and_kill_worker_from_processes() {
        let r = Registry::builtin();
        let kinds = |name: &str| -> Vec<String> {
            r.get(name).unwrap().restart_kinds().into_keys().collect()
        };
        assert_eq!(kinds("puma"), ["hot", "kill-worker", "phased"]);
        assert_eq!(kinds("unicorn"), ["kill-worker", "reexec"]);
        assert_eq!(kinds("passenger"), ["kill-worker", "restart"]);
        assert!(kinds("thin").is_empty() && kinds("webrick").is_empty());
        let puma = r.get("puma").unwrap();
        // (kind, workers, Ok or the refusal's telling part)
        let rows: &[(&str, Option<u32>, Result<&str, &str>)] = &[
            ("phased", Some(2), Ok("USR1")),
            ("hot", Some(2), Ok("USR2")),
            ("kill-worker", Some(2), Ok("KILL")),
            ("phased", None, Err("give --workers 2")),
            ("phased", Some(0), Err("needs worker processes")),
            ("kill-worker", Some(0), Err("needs worker processes")),
            (
                "reexec",
                Some(2),
                Err("its kinds are hot, kill-worker, phased"),
            ),
        ];
        for (kind, workers, want) in rows {
            let got = puma.restart_kind(kind, *workers);
            match (want, got) {
                (Ok(sig), Ok(k)) => assert_eq!(k.signal.as_deref(), Some(*sig), "{kind}"),
                (Err(part), Err(e)) => {
                    assert!(e.contains(part) && !e.contains('\n'), "{kind}: {e}")
                }
                (want, got) => panic!("{kind} {workers:?}: want {want:?}, got {got:?}"),
            }
        }
        let thin = r
            .get("thin")
            .unwrap()
            .restart_kind("hot", None)
            .unwrap_err();
        assert!(
            thin.contains("no restart kinds") && thin.contains("restarts ="),
            "{thin}"
        );
    }

    #[test]
    fn a_servers_file_declares_restart_kinds_checked_at_parse() {
        let ok = "[mine]\ncommand = \"srv {{port}}\"\nrestarts = { graceful = { signal = \"HUP\", timeout_s = 5 }, deploy = { command = \"touch {{dir}}/x\" } }\n";
        let s = &parse_servers(ok, "my.toml").unwrap()[0];
        assert_eq!(s.restarts["graceful"].timeout_s, 5.0);
        assert_eq!(s.restarts["deploy"].timeout_s, 30.0);
        let rows = [
            ("{ signal = \"FOO\" }", "signal 'FOO'"),
            ("{ }", "either signal"),
            ("{ signal = \"HUP\", command = \"x\" }", "either signal"),
            ("{ signal = \"HUP\", then = \"wait\" }", "quit-old-master"),
            (
                "{ command = \"x\", then = \"quit-old-master\" }",
                "follows a signal",
            ),
            ("{ signal = \"HUP\", timeout_s = 0 }", "above 0"),
            ("{ signal = \"HUP\", sginal = 1 }", "sginal"),
        ];
        for (kind, part) in rows {
            let text =
                format!("[mine]\ncommand = \"srv {{{{port}}}}\"\nrestarts = {{ k = {kind} }}\n");
            let err = parse_servers(&text, "my.toml").unwrap_err().to_string();
            assert!(
                err.contains("my.toml") && err.contains(part),
                "{kind}: {err}"
            );
        }
    }

    #[test]
    fn servers_file_typos_are_refused_with_the_file_name() {
        let bad = "[mine]\ncomand = \"x\"\n";
        let err = parse_servers(bad, "my.toml").unwrap_err().to_string();
        assert!(err.contains("my.toml") && err.contains("comand"), "{err}");
        let bad_signal = "[mine]\ncommand = \"x\"\nstop_signal = \"HUP\"\n";
        assert!(parse_servers(bad_signal, "my.toml")
            .unwrap_err()
            .to_string()
            .contains("stop_signal"));
    }

    #[test]
    fn a_server_that_never_says_where_to_listen_is_refused() {
        for s in &Registry::builtin().servers {
            s.check_listens().unwrap();
        }
        let err = parse_servers("[deaf]\ncommand = \"deaf-server {{app}}\"\n", "my.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("my.toml") && err.contains("'deaf'") && err.contains("{{port}}"),
            "{err}"
        );
        parse_servers(
            "[ok]\ncommand = \"srv --listen {{listen}} {{app}}\"\n",
            "my.toml",
        )
        .unwrap();
    }

    #[test]
    fn seed_000s_passenger_and_unicorn_settings_reach_their_command_lines() {
        use crate::server::template::{render, Vars};
        let r = Registry::builtin();
        let render_with = |name: &str, text: &str, extra: &[(&str, &str)]| {
            let s = r.get(name).unwrap();
            let mut v = Vars::default();
            for k in [
                "host", "port", "socket", "app", "dir", "run_dir", "pidfile", "config",
            ] {
                v.set(k, "x");
            }
            v.set("workers", 6).set("listen", "/s.sock");
            for (k, val) in &s.settings {
                v.set(k, val);
            }
            for (k, val) in extra {
                v.set(k, val);
            }
            render(text, &v).unwrap()
        };
        let p = r.get("passenger").unwrap().command.clone();
        let default = render_with("passenger", &p, &[]);
        assert!(default.contains("--min-instances 6 "), "{default}");
        assert!(
            default.contains("--max-request-queue-size 100 "),
            "{default}"
        );
        let seed = render_with(
            "passenger",
            &p,
            &[("min_instances", "4"), ("max_request_queue_size", "0")],
        );
        assert!(
            seed.contains("--max-pool-size 6 --min-instances 4 --max-request-queue-size 0 "),
            "{seed}"
        );
        let unicorn = r
            .get("unicorn")
            .unwrap()
            .config_text(None)
            .unwrap()
            .unwrap();
        let conf = render_with("unicorn", &unicorn, &[("backlog", "512")]);
        assert!(conf.contains("listen \"/s.sock\", backlog: 512"), "{conf}");
    }

    #[test]
    fn unknown_server_lists_the_known_ones() {
        let err = Registry::builtin().get("pumma").unwrap_err().to_string();
        assert!(
            err.contains("pumma") && err.contains("puma") && err.contains("--command"),
            "{err}"
        );
    }

    #[test]
    fn custom_server_capabilities_follow_its_placeholders() {
        let s = ServerSpec::custom(
            "falcon",
            "falcon serve -b http://{{host}}:{{port}} -n {{workers}} -c {{app}}",
        );
        assert!(s.processes && !s.threads && !s.unix_socket);
    }
}
