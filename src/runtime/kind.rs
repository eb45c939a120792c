//! A runtime as data: what kind of place it is, its Ruby's facts, and how
//! a server command is launched there. Reads nothing itself: the facts
//! come from `probe`, the roots from `debian`.

use super::debian;
use super::home::RuntimeError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The host's own Ruby and servers.
pub const SYSTEM: &str = "system";
/// JRuby with Puma built for it.
pub const JRUBY: &str = "jruby";

/// A user's own Ruby, as declared in `[runtime_defs.NAME]` or by
/// `rackbench runtime add NAME --ruby PATH`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserRuby {
    /// The interpreter (rbenv, asdf, chruby or ruby-install layouts all
    /// have one at `.../bin/ruby`).
    pub ruby: PathBuf,
    /// A Bundler app's Gemfile: its servers run through `bundle exec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gemfile: Option<PathBuf>,
}

/// What kind of place a runtime is.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    System,
    /// A Debian release's root filesystem, built.
    Root {
        release: &'static debian::Release,
        dir: PathBuf,
    },
    Ruby(UserRuby),
    /// JRuby's bin directory (`ruby`, `jruby`, `puma` launchers).
    Jruby {
        bin: PathBuf,
    },
}

impl Kind {
    /// The word the record and the reports use: system, debian, ruby, jruby.
    pub fn word(&self) -> &'static str {
        match self {
            Kind::System => "system",
            Kind::Root { .. } => "debian",
            Kind::Ruby(_) => "ruby",
            Kind::Jruby { .. } => "jruby",
        }
    }
}

/// What a runtime's Ruby is and has.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Facts {
    /// `RUBY_DESCRIPTION`.
    pub ruby_description: String,
    pub ruby_version: String,
    /// `ruby` or `jruby`.
    pub engine: String,
    /// Built with YJIT (`RubyVM::YJIT` defined).
    pub yjit: bool,
    /// Where its executables are (user Rubies and JRuby), first first.
    pub bin_dirs: Vec<PathBuf>,
    /// libjemalloc as the server sees it (inside a root: its own path).
    pub jemalloc: Option<PathBuf>,
    /// The Ruby itself links jemalloc (`--with-jemalloc`).
    pub linked_jemalloc: bool,
}

/// A runtime, resolved: where it is and what its Ruby is.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub name: String,
    pub kind: Kind,
    pub facts: Facts,
}

/// How a server command is launched in a runtime.
#[derive(Debug, Clone, Default)]
pub struct Launching {
    /// Entered before exec (Debian release roots).
    pub root: Option<PathBuf>,
    /// Prepended to PATH.
    pub path: Vec<PathBuf>,
    /// Set in the server's environment.
    pub env: Vec<(String, String)>,
    /// Put before the command (`bundle exec `).
    pub prefix: String,
}

impl Launching {
    /// PATH with this runtime's folders first, or None when it adds none.
    pub fn path_var(&self) -> Option<String> {
        if self.path.is_empty() {
            return None;
        }
        let host = std::env::var_os("PATH").unwrap_or_default();
        let all = self
            .path
            .iter()
            .cloned()
            .chain(std::env::split_paths(&host));
        std::env::join_paths(all)
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    }
}

impl Runtime {
    /// The host, its facts unread: for a trial that asks nothing of its
    /// Ruby (no switch), so a server without Ruby runs as it always did.
    pub fn unprobed_system() -> Runtime {
        Runtime {
            name: SYSTEM.into(),
            kind: Kind::System,
            facts: Facts::default(),
        }
    }

    /// Sets `cmd` up to run in this runtime: its root, PATH and
    /// environment (not the `bundle exec` prefix, which is the caller's).
    pub fn setup(&self, cmd: &mut std::process::Command) {
        let l = self.launching();
        if let Some(root) = &l.root {
            if let Ok(fs) = crate::server::rootfs::RootFs::new(root) {
                fs.apply(cmd);
            }
        }
        if let Some(path) = l.path_var() {
            cmd.env("PATH", path);
        }
        for (k, v) in &l.env {
            cmd.env(k, v);
        }
    }

    /// The server's version as this runtime has it (its version command
    /// run inside it).
    pub fn server_version(&self, spec: &crate::server::spec::ServerSpec) -> Option<String> {
        crate::server::spec::read_version_with(spec, |c| self.setup(c))
    }

    pub fn is_system(&self) -> bool {
        self.kind == Kind::System
    }

    /// What a server command needs to run here.
    pub fn launching(&self) -> Launching {
        match &self.kind {
            Kind::System => Launching::default(),
            Kind::Root { dir, .. } => Launching {
                root: Some(dir.clone()),
                ..Launching::default()
            },
            Kind::Ruby(u) => Launching {
                path: self.facts.bin_dirs.clone(),
                env: u
                    .gemfile
                    .iter()
                    .map(|g| ("BUNDLE_GEMFILE".to_string(), g.display().to_string()))
                    .collect(),
                prefix: if u.gemfile.is_some() {
                    "bundle exec ".into()
                } else {
                    String::new()
                },
                ..Launching::default()
            },
            Kind::Jruby { bin } => Launching {
                path: vec![bin.clone()],
                ..Launching::default()
            },
        }
    }

    /// Where executable `exe` is in this runtime (the path as the server
    /// sees it), or None.
    pub fn find(&self, exe: &str) -> Option<PathBuf> {
        match &self.kind {
            Kind::System => crate::server::spec::which(exe),
            Kind::Root { dir, .. } => ["usr/bin", "usr/sbin", "usr/local/bin"]
                .iter()
                .map(|d| Path::new("/").join(d).join(exe))
                .find(|p| is_executable(&dir.join(p.strip_prefix("/").unwrap_or(p)))),
            Kind::Ruby(_) | Kind::Jruby { .. } => self
                .facts
                .bin_dirs
                .iter()
                .map(|d| d.join(exe))
                .find(|p| is_executable(p)),
        }
    }

    /// The command that runs a Ruby script as this runtime's servers run
    /// Ruby: its own `ruby` (inside a root, the root's `/usr/bin/ruby`),
    /// through `bundle exec` when it has a Gemfile. Run it with
    /// [`Runtime::setup`] (root, PATH, environment).
    pub fn ruby_command(&self) -> Vec<String> {
        let found = |exe: &str| {
            self.find(exe)
                .map_or_else(|| exe.to_string(), |p| p.display().to_string())
        };
        match &self.kind {
            // The host's PATH decides, as it does for the servers.
            Kind::System => vec!["ruby".into()],
            Kind::Ruby(UserRuby {
                gemfile: Some(_), ..
            }) => vec![found("bundle"), "exec".into(), found("ruby")],
            Kind::Root { .. } | Kind::Ruby(_) | Kind::Jruby { .. } => vec![found("ruby")],
        }
    }

    /// How to give this runtime's Ruby what a script needs: Debian's
    /// `packages` on the host or in a root, `gems` for a user's Ruby or
    /// its Gemfile.
    pub fn add_gems(&self, packages: &[&str], gems: &[&str]) -> String {
        let with = |flag: &str| {
            packages
                .iter()
                .map(|p| format!("{flag}{p}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        match &self.kind {
            Kind::System => format!("apt-get install {}", with("")),
            Kind::Root { release, .. } => format!(
                "rebuild the root with them: rackbench runtime remove {n} && rackbench runtime add {n} {}",
                with("--with "),
                n = release.name
            ),
            Kind::Ruby(UserRuby {
                gemfile: Some(g), ..
            }) => format!(
                "add {} to {} and run bundle install",
                gems.iter()
                    .map(|g| format!("gem \"{g}\""))
                    .collect::<Vec<_>>()
                    .join(", "),
                g.display()
            ),
            Kind::Ruby(_) | Kind::Jruby { .. } => {
                let gem = self
                    .find("gem")
                    .map_or_else(|| "gem".to_string(), |p| p.display().to_string());
                format!("{gem} install {}", gems.join(" "))
            }
        }
    }

    /// Refuses a server whose executables this runtime lacks, naming what
    /// gives them. A Bundler runtime is not checked here: the Gemfile
    /// decides, and `bundle exec` names what is missing.
    pub fn check_server(&self, server: &str, requires: &[String]) -> Result<(), RuntimeError> {
        if self.is_system() || matches!(&self.kind, Kind::Ruby(u) if u.gemfile.is_some()) {
            return Ok(());
        }
        let Some(exe) = requires.iter().find(|e| self.find(e).is_none()) else {
            return Ok(());
        };
        let fix = match &self.kind {
            Kind::Root { release, .. } => {
                let package = debian::package_of(exe);
                format!(
                    "{exe} comes from Debian's {package} package; rebuild the root with it: rackbench runtime remove {n} && rackbench runtime add {n} --with {package}",
                    n = release.name
                )
            }
            Kind::Jruby { .. } => {
                "only puma (and ruby, jruby) is built for JRuby; for Rack apps on JRuby use the jruby-jetty server".into()
            }
            _ => format!(
                "no {exe} in {}: install it for that Ruby (gem install {}), or give the runtime a gemfile",
                self.facts
                    .bin_dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                debian::gem_of(exe)
            ),
        };
        Err(RuntimeError::NoServer {
            runtime: self.name.clone(),
            server: server.into(),
            fix,
        })
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    // A root's /usr/bin/ruby is a link to ruby3.3: follow it inside the root.
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        || p.symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory holding executables `exes` under `sub` (`bin`, `usr/bin`).
    fn with_exes(name: &str, sub: &str, exes: &[&str]) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let dir =
            std::env::temp_dir().join(format!("rackbench-kind-{name}-{}", std::process::id()));
        let bin = dir.join(sub);
        std::fs::create_dir_all(&bin).unwrap();
        for exe in exes {
            let p = bin.join(exe);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    }

    fn runtime(name: &str, kind: Kind, bin_dirs: Vec<PathBuf>) -> Runtime {
        Runtime {
            name: name.into(),
            kind,
            facts: Facts {
                bin_dirs,
                ..Facts::default()
            },
        }
    }

    #[test]
    fn each_kind_of_runtime_runs_a_script_with_its_own_ruby_and_names_its_way_to_add_gems() {
        let root = with_exes("root", "usr/bin", &["ruby"]);
        let mine = with_exes("mine", "bin", &["ruby", "gem", "bundle"]);
        let bin = mine.join("bin");
        let user = |gemfile: Option<&str>| {
            Kind::Ruby(UserRuby {
                ruby: bin.join("ruby"),
                gemfile: gemfile.map(PathBuf::from),
            })
        };
        let debian_12 = debian::release("debian-12").unwrap();
        let ruby = bin.join("ruby").display().to_string();
        let cases: Vec<(Runtime, Vec<String>, String)> = vec![
            (
                runtime(SYSTEM, Kind::System, vec![]),
                vec!["ruby".into()],
                "apt-get install ruby-rails ruby-sqlite3".into(),
            ),
            (
                runtime(
                    "debian-12",
                    Kind::Root {
                        release: debian_12,
                        dir: root.clone(),
                    },
                    vec![],
                ),
                // As the server sees it, inside the root.
                vec!["/usr/bin/ruby".into()],
                "rackbench runtime remove debian-12 && rackbench runtime add debian-12 --with ruby-rails --with ruby-sqlite3".into(),
            ),
            (
                runtime("mine", user(None), vec![bin.clone()]),
                vec![ruby.clone()],
                format!("{} install rails sqlite3", bin.join("gem").display()),
            ),
            (
                runtime("bundled", user(Some("/app/Gemfile")), vec![bin.clone()]),
                vec![bin.join("bundle").display().to_string(), "exec".into(), ruby.clone()],
                "add gem \"rails\", gem \"sqlite3\" to /app/Gemfile and run bundle install".into(),
            ),
            (
                // A root whose Ruby is not found: left to PATH inside it.
                runtime(
                    "debian-12",
                    Kind::Root {
                        release: debian_12,
                        dir: mine.join("no-such-root"),
                    },
                    vec![],
                ),
                vec!["ruby".into()],
                "--with ruby-rails".into(),
            ),
        ];
        for (rt, command, fix) in cases {
            assert_eq!(rt.ruby_command(), command, "{}", rt.name);
            let got = rt.add_gems(&["ruby-rails", "ruby-sqlite3"], &["rails", "sqlite3"]);
            assert!(got.contains(&fix), "{}: {got}", rt.name);
        }
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(&mine);
    }
}
