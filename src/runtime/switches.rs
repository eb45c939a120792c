//! The switches a study varies on a runtime: YJIT, the allocator and
//! glibc's arena count. Each becomes the server's environment, or is
//! refused at once, in one line, when the runtime cannot honour it.

use super::home::RuntimeError;
use super::kind::{Kind, Runtime};
use serde::{Deserialize, Serialize};

/// The malloc the server runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Allocator {
    Glibc,
    Jemalloc,
}

impl Allocator {
    pub fn name(self) -> &'static str {
        match self {
            Allocator::Glibc => "glibc",
            Allocator::Jemalloc => "jemalloc",
        }
    }
}

impl std::str::FromStr for Allocator {
    type Err = String;
    fn from_str(s: &str) -> Result<Allocator, String> {
        match s {
            "glibc" => Ok(Allocator::Glibc),
            "jemalloc" => Ok(Allocator::Jemalloc),
            other => Err(format!(
                "unknown allocator '{other}': use glibc or jemalloc"
            )),
        }
    }
}

impl std::fmt::Display for Allocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a trial asks of its runtime; None leaves the runtime's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Switches {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yjit: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator: Option<Allocator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malloc_arena_max: Option<u32>,
}

impl Switches {
    pub fn is_empty(&self) -> bool {
        *self == Switches::default()
    }

    /// The server's environment for these switches in `rt`, or why `rt`
    /// cannot run them.
    pub fn env(&self, rt: &Runtime) -> Result<Vec<(String, String)>, RuntimeError> {
        let refuse = |why: String| RuntimeError::Refused {
            runtime: rt.name.clone(),
            why,
        };
        let f = &rt.facts;
        let mut env = Vec::new();
        // Off is the default everywhere: nothing to set (and Ruby 3.1 reads
        // RUBY_YJIT_ENABLE=0 as on).
        if self.yjit == Some(true) {
            if !f.yjit {
                return Err(refuse(format!(
                    "{} has no YJIT (it was built without it): drop --yjit, or use a runtime whose Ruby has it (Debian 12's Ruby 3.1: system or debian-12)",
                    describe(rt)
                )));
            }
            env.push(("RUBY_YJIT_ENABLE".into(), "1".into()));
        }
        match self.allocator {
            None => {}
            Some(_) if f.engine == "jruby" => {
                return Err(refuse(
                    "JRuby allocates on the JVM's heap, not through malloc: drop --allocator (tune the heap with --set heap=...)".into(),
                ))
            }
            Some(Allocator::Jemalloc) if f.linked_jemalloc => {}
            Some(Allocator::Jemalloc) => {
                let Some(lib) = &f.jemalloc else {
                    return Err(refuse(match &rt.kind {
                        Kind::Root { release, .. } => format!(
                            "no libjemalloc in its root: rackbench runtime remove {n} && rackbench runtime add {n} --with libjemalloc2",
                            n = release.name
                        ),
                        _ => "no libjemalloc.so.2 found: apt-get install libjemalloc2".into(),
                    }));
                };
                env.push(("LD_PRELOAD".into(), lib.display().to_string()));
            }
            Some(Allocator::Glibc) if f.linked_jemalloc => {
                return Err(refuse(format!(
                    "{} is linked with jemalloc, so glibc's malloc cannot be chosen: compare it with a Ruby built without --with-jemalloc",
                    describe(rt)
                )))
            }
            Some(Allocator::Glibc) => {}
        }
        if let Some(n) = self.malloc_arena_max {
            if n == 0 {
                return Err(refuse("malloc_arena_max must be 1 or more".into()));
            }
            if self.allocator == Some(Allocator::Jemalloc) || f.linked_jemalloc {
                return Err(refuse(
                    "MALLOC_ARENA_MAX tunes glibc's malloc and does nothing under jemalloc: drop one of the two".into(),
                ));
            }
            env.push(("MALLOC_ARENA_MAX".into(), n.to_string()));
        }
        Ok(env)
    }

    /// A short label of what is set: "yjit, jemalloc", "" when nothing.
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        match self.yjit {
            Some(true) => parts.push("yjit".to_string()),
            Some(false) => parts.push("no-yjit".to_string()),
            None => {}
        }
        if let Some(a) = self.allocator {
            parts.push(a.name().to_string());
        }
        if let Some(n) = self.malloc_arena_max {
            parts.push(format!("arenas={n}"));
        }
        parts.join(", ")
    }
}

fn describe(rt: &Runtime) -> String {
    let d = &rt.facts.ruby_description;
    let short = d.split(" (").next().unwrap_or(d);
    format!("{short} ({})", rt.name)
}

#[cfg(test)]
mod tests {
    use super::super::kind::Facts;
    use super::*;

    fn runtime(yjit: bool, jemalloc: bool, engine: &str) -> Runtime {
        Runtime {
            name: "r".into(),
            kind: Kind::System,
            facts: Facts {
                ruby_description: "ruby 3.3.8 (2025-04-09 revision b200bad6cd) [x86_64-linux-gnu]"
                    .into(),
                ruby_version: "3.3.8".into(),
                engine: engine.into(),
                yjit,
                bin_dirs: vec![],
                jemalloc: jemalloc.then(|| "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2".into()),
                linked_jemalloc: false,
            },
        }
    }

    #[test]
    fn each_switch_becomes_the_environment_its_runtime_reads() {
        let s = Switches {
            yjit: Some(true),
            allocator: Some(Allocator::Jemalloc),
            malloc_arena_max: None,
        };
        let env = s.env(&runtime(true, true, "ruby")).unwrap();
        assert_eq!(
            env,
            [
                ("RUBY_YJIT_ENABLE".to_string(), "1".to_string()),
                (
                    "LD_PRELOAD".into(),
                    "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2".into()
                )
            ]
        );
        let arenas = Switches {
            malloc_arena_max: Some(2),
            ..Switches::default()
        };
        assert_eq!(
            arenas.env(&runtime(false, false, "ruby")).unwrap(),
            [("MALLOC_ARENA_MAX".to_string(), "2".to_string())]
        );
    }

    #[test]
    fn yjit_off_sets_nothing_since_ruby_3_1_reads_0_as_on() {
        let s = Switches {
            yjit: Some(false),
            ..Switches::default()
        };
        assert!(s.env(&runtime(true, false, "ruby")).unwrap().is_empty());
    }

    #[test]
    fn what_a_runtime_cannot_honour_is_refused_in_one_line_with_the_fix() {
        let cases = [
            (
                Switches {
                    yjit: Some(true),
                    ..Switches::default()
                },
                runtime(false, true, "ruby"),
                "has no YJIT",
            ),
            (
                Switches {
                    allocator: Some(Allocator::Jemalloc),
                    ..Switches::default()
                },
                runtime(true, false, "ruby"),
                "apt-get install libjemalloc2",
            ),
            (
                Switches {
                    allocator: Some(Allocator::Glibc),
                    ..Switches::default()
                },
                runtime(false, false, "jruby"),
                "JVM's heap",
            ),
            (
                Switches {
                    allocator: Some(Allocator::Jemalloc),
                    malloc_arena_max: Some(2),
                    ..Switches::default()
                },
                runtime(true, true, "ruby"),
                "does nothing under jemalloc",
            ),
        ];
        for (s, rt, want) in cases {
            let e = s.env(&rt).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
