//! Runtimes: the named places servers run from, each with its Ruby, its
//! gems and its server executables (docs/RUNTIMES.md).
//!
//! - `system`: the host, as rackbench always ran.
//! - `debian-12`, `debian-13`, `debian-unstable`: a Debian release's root
//!   filesystem built with mmdebstrap under the runtimes directory
//!   ([`debian`]); servers run from it with the host's network, processes
//!   and files (`server::rootfs`).
//! - a user's own Ruby: `ruby = "/path/to/bin/ruby"`, optionally with a
//!   `gemfile` (servers then run through `bundle exec`), declared with
//!   `rackbench runtime add NAME --ruby PATH` or a plan's `[runtime_defs.NAME]`.
//! - `jruby`: JRuby from Maven Central with Puma's Java extension built
//!   for it (`scripts/jruby-puma.sh`).
//!
//! A [`Runtime`] is resolved once, before any trial: its facts are read
//! from its own Ruby ([`probe`]), so a switch it cannot honour ([`Switches`]:
//! YJIT, jemalloc, MALLOC_ARENA_MAX) is refused at once, and a server it
//! lacks is named with the package or gem that gives it. What the server
//! actually ran with is read again from inside the server process
//! ([`inside`]) for the trial record. Starts no server and drives no load.

mod home;
mod kind;

pub mod debian;
pub mod inside;
pub mod list;
pub mod probe;
pub mod switches;
pub mod users;

pub use home::{runtimes_dir, RuntimeError};
pub use inside::RuntimeRecord;
pub use kind::{Facts, Kind, Launching, Runtime, UserRuby, JRUBY, SYSTEM};
pub use switches::{Allocator, Switches};

use std::collections::BTreeMap;

/// The host, probed.
pub fn system() -> Result<Runtime, RuntimeError> {
    let kind = Kind::System;
    let facts = probe::facts(SYSTEM, &kind)?;
    Ok(Runtime {
        name: SYSTEM.into(),
        kind,
        facts,
    })
}

/// Every runtime a name can refer to: the built-in ones, the Debian roots
/// built, and users' own Rubies (saved ones and a plan's).
#[derive(Debug, Clone, Default)]
pub struct Registry {
    pub users: BTreeMap<String, UserRuby>,
}

impl Registry {
    /// The saved user Rubies, plus `extra` (a plan's [runtimes]), which
    /// win over saved ones of the same name.
    pub fn load(extra: &BTreeMap<String, UserRuby>) -> Result<Registry, RuntimeError> {
        let mut users = users::saved()?;
        users.extend(extra.clone());
        for name in users.keys() {
            if name == SYSTEM || name == JRUBY || debian::release(name).is_some() {
                return Err(RuntimeError::Refused {
                    runtime: name.clone(),
                    why: "this name is built in: give your Ruby another name".into(),
                });
            }
        }
        Ok(Registry { users })
    }

    /// Whether `name` names a runtime (built or not), without resolving it.
    pub fn knows(&self, name: &str) -> bool {
        name == SYSTEM
            || name == JRUBY
            || debian::release(name).is_some()
            || self.users.contains_key(name)
    }

    /// Every name, for messages.
    pub fn known(&self) -> String {
        let mut names = vec![SYSTEM.to_string(), JRUBY.to_string()];
        names.extend(debian::RELEASES.iter().map(|r| r.name.to_string()));
        names.extend(self.users.keys().cloned());
        names.join(", ")
    }

    /// Resolves `name`, building a Debian root or JRuby on first use
    /// (`progress` hears about it), and reads its facts.
    pub fn resolve(
        &self,
        name: &str,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Runtime, RuntimeError> {
        let kind = if name == SYSTEM {
            Kind::System
        } else if name == JRUBY {
            Kind::Jruby {
                bin: probe::jruby_bin(progress)?,
            }
        } else if let Some(release) = debian::release(name) {
            let dir = match debian::built(release) {
                Some(dir) => dir,
                None => {
                    progress(&format!(
                        "building runtime {name} (Debian {}, first use; reused afterwards)",
                        release.suite
                    ));
                    debian::build(release, &[])?
                }
            };
            Kind::Root { release, dir }
        } else if let Some(u) = self.users.get(name) {
            Kind::Ruby(u.clone())
        } else {
            return Err(RuntimeError::Unknown {
                name: name.into(),
                known: self.known(),
            });
        };
        let facts = probe::facts(name, &kind)?;
        Ok(Runtime {
            name: name.into(),
            kind,
            facts,
        })
    }
}
