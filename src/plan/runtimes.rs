//! A plan's runtimes: each name its trials use, checked (known) and then
//! resolved once, before the first trial, and what a runtime cannot do
//! (a switch its Ruby cannot honour, a server it lacks) refused at the
//! plan's line, with the fix. Resolving is the caller's closure (it may
//! build a Debian root); this file starts no server and runs no trial.

use super::error::at_line;
use super::{Expanded, Plan, PlanError, PlannedTrial};
use crate::runtime::{Registry, Runtime, RuntimeError, Switches, SYSTEM};
use std::collections::BTreeMap;

/// The runtimes a plan's trials run from, by name, resolved.
pub type Resolved = BTreeMap<String, Runtime>;

/// The runtime a trial needs resolved: the one it names, the host's Ruby
/// when it asks a switch of it, or None (the host, unread, as before
/// runtimes).
pub fn runtime_of(t: &PlannedTrial) -> Option<&str> {
    match &t.runtime {
        Some(r) => Some(r),
        None if !t.switches.is_empty() => Some(SYSTEM),
        None => None,
    }
}

/// Every runtime the trials need, each once, in their order.
pub fn needed(e: &Expanded) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for name in e.trials.iter().filter_map(runtime_of) {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

impl Plan {
    /// The runtimes this plan can name: the built-in ones, the saved user
    /// Rubies and its own `[runtime_defs.NAME]`.
    pub fn runtime_registry(&self, text: &str, file: &str) -> Result<Registry, PlanError> {
        Registry::load(&self.runtime_defs)
            .map_err(|e| at_line(text, file)("runtime_defs", e.to_string()))
    }

    /// Refuses a runtime name the registry does not know, at its line,
    /// listing the known ones; resolves nothing (a dry run's check).
    pub fn check_runtime_names(
        &self,
        text: &str,
        file: &str,
        e: &Expanded,
        registry: &Registry,
    ) -> Result<(), PlanError> {
        let at = at_line(text, file);
        match needed(e).into_iter().find(|n| !registry.knows(n)) {
            Some(name) => Err(at(
                &format!("\"{name}\""),
                RuntimeError::Unknown {
                    known: registry.known(),
                    name,
                }
                .to_string(),
            )),
            None => Ok(()),
        }
    }

    /// Resolves every runtime the trials need, once each, with `resolve`
    /// (which may build a root), then checks every trial against its
    /// runtime: the switches can be honoured, the server is there. A
    /// server a runtime lacks is skipped and listed with the package that
    /// gives it, as a server the host lacks is (`run --runtime debian-13`
    /// on the default plan runs all but passenger and uWSGI); a plan left
    /// with no trial is refused. Each refusal is at the plan's line that
    /// asks it.
    pub fn check_runtimes(
        &self,
        text: &str,
        file: &str,
        e: &mut Expanded,
        resolve: &mut dyn FnMut(&str) -> Result<Runtime, RuntimeError>,
    ) -> Result<Resolved, PlanError> {
        let at = at_line(text, file);
        let mut resolved = Resolved::new();
        for name in needed(e) {
            let rt = resolve(&name).map_err(|err| at(&format!("\"{name}\""), err.to_string()))?;
            resolved.insert(name, rt);
        }
        let mut missing: Vec<(String, String)> = Vec::new();
        for t in &e.trials {
            let Some(rt) = runtime_of(t).map(|n| &resolved[n]) else {
                continue;
            };
            if let Err(err) = t.switches.env(rt) {
                return Err(at(refused_key(&t.switches, rt), err.to_string()));
            }
            if let Some(spec) = &t.spec {
                if let Err(err) = rt.check_server(&t.server, &spec.requires) {
                    missing.push((t.id.clone(), err.to_string()));
                }
            }
        }
        if missing.len() == e.trials.len() {
            if let Some((id, why)) = missing.first() {
                let server = e
                    .trials
                    .iter()
                    .find(|t| &t.id == id)
                    .map_or(String::new(), |t| t.server.clone());
                return Err(at(&format!("\"{server}\""), why.clone()));
            }
        }
        e.trials
            .retain(|t| !missing.iter().any(|(id, _)| id == &t.id));
        for (_, why) in missing {
            if !e.skipped.contains(&why) {
                e.skipped.push(why);
            }
        }
        Ok(resolved)
    }
}

/// The plan key whose value `rt` refuses: the first switch refused on its
/// own, else `malloc_arena_max` (refused only beside jemalloc).
fn refused_key(s: &Switches, rt: &Runtime) -> &'static str {
    let alone = [
        (
            "yjit",
            Switches {
                yjit: s.yjit,
                ..Switches::default()
            },
        ),
        (
            "allocator",
            Switches {
                allocator: s.allocator,
                ..Switches::default()
            },
        ),
    ];
    alone
        .into_iter()
        .find(|(_, one)| one.env(rt).is_err())
        .map_or("malloc_arena_max", |(key, _)| key)
}

#[cfg(test)]
mod tests {
    use super::super::tests::all_installed;
    use super::*;
    use crate::runtime::{debian, Facts, Kind};

    /// `system` has YJIT and jemalloc, `debian-13` has neither, `bare` is a root without
    /// servers; any other name is unknown.
    fn fake(name: &str) -> Result<Runtime, RuntimeError> {
        let facts = |yjit| Facts {
            ruby_description: "ruby 3.3.8 (2025-04-09) [x86_64-linux-gnu]".into(),
            ruby_version: "3.3.8".into(),
            engine: "ruby".into(),
            yjit,
            ..Facts::default()
        };
        let (kind, facts) = match name {
            "system" => (
                Kind::System,
                Facts {
                    jemalloc: Some("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2".into()),
                    ..facts(true)
                },
            ),
            "debian-13" => (Kind::System, facts(false)),
            "bare" => (
                Kind::Root {
                    release: debian::release("debian-13").unwrap(),
                    dir: "/nonexistent/rackbench-root".into(),
                },
                facts(false),
            ),
            _ => {
                return Err(RuntimeError::Unknown {
                    name: name.into(),
                    known: "system, debian-13, bare".into(),
                })
            }
        };
        Ok(Runtime {
            name: name.into(),
            kind,
            facts,
        })
    }

    fn check(head: &str) -> Result<Resolved, String> {
        let text = format!(
            "name = \"t\"\napps = [\"hello\"]\n{head}\nservers = [\"puma\"]\n[load]\nconnections = [10]\n"
        );
        let plan = Plan::parse(&text, "t.toml").map_err(|e| e.to_string())?;
        let mut e = plan
            .expand(&text, "t.toml", &all_installed())
            .map_err(|e| e.to_string())?;
        // Installed on any host (all_installed), but a runtime is asked
        // for its executable.
        for t in &mut e.trials {
            t.spec.as_mut().expect("resolved").requires = vec!["puma".into()];
        }
        let mut registry = Registry::default();
        let bare = crate::runtime::UserRuby {
            ruby: "/nonexistent/ruby".into(),
            gemfile: None,
        };
        registry.users.insert("bare".into(), bare);
        plan.check_runtime_names(&text, "t.toml", &e, &registry)
            .map_err(|e| e.to_string())?;
        plan.check_runtimes(&text, "t.toml", &mut e, &mut fake)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn what_a_runtime_cannot_do_is_refused_at_the_plans_line_with_the_fix() {
        let rows: &[(&str, &str)] = &[
            (
                "runtimes = [\"system\", \"debian-14\"]",
                "t.toml, line 3: unknown runtime 'debian-14'; known runtimes: system, jruby, debian-12",
            ),
            (
                "runtimes = [\"debian-13\"]\nyjit = [true]",
                "t.toml, line 4: runtime 'debian-13': ruby 3.3.8 (debian-13) has no YJIT",
            ),
            (
                "runtimes = [\"bare\"]",
                "t.toml, line 4: runtime 'bare' has no puma: puma comes from Debian's puma package",
            ),
            (
                "runtimes = [\"system\"]\nallocator = [\"jemalloc\"]\nmalloc_arena_max = [2]",
                "t.toml, line 5: runtime 'system': MALLOC_ARENA_MAX tunes glibc's malloc",
            ),
            (
                "malloc_arena_max = [0]",
                "t.toml, line 3: malloc_arena_max 0: each must be at least 1",
            ),
            (
                "yjit = [true, true]",
                "t.toml, line 3: yjit names true twice",
            ),
            (
                "allocator = [\"tcmalloc\"]",
                "`allocator`: tcmalloc is none of glibc, jemalloc",
            ),
        ];
        for (head, want) in rows {
            let err = check(head).unwrap_err();
            assert!(err.contains(want), "{head}: want '{want}' in: {err}");
            // One line, but for a refusal as read (which shows the line).
            assert!(
                !err.contains('\n') || err.starts_with("t.toml, line 3: "),
                "{err}"
            );
        }
    }

    #[test]
    fn each_runtime_is_resolved_once_and_a_plan_without_any_resolves_none() {
        let got = check("runtimes = [\"system\", \"debian-13\"]\nyjit = [false]").unwrap();
        assert_eq!(got.keys().collect::<Vec<_>>(), ["debian-13", "system"]);
        assert!(check("").unwrap().is_empty(), "the host, unread, as before");
        // A switch without a runtime asks the host's Ruby.
        let got = check("yjit = [false, true]").unwrap();
        assert_eq!(got.keys().collect::<Vec<_>>(), ["system"]);
    }
}
