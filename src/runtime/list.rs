//! `rackbench runtime list`: every runtime a name can refer to, whether it
//! is ready, its Ruby and the versions of the servers it has, each read
//! from the runtime itself.

use super::kind::{Kind, Runtime, JRUBY, SYSTEM};
use super::{debian, probe, Registry};
use crate::server::spec::Registry as Servers;
use serde::Serialize;

/// One runtime as `runtime list` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    pub name: String,
    pub kind: String,
    /// Built (roots, JRuby) or found (user Rubies): usable now.
    pub ready: bool,
    pub ruby_description: Option<String>,
    pub yjit_available: Option<bool>,
    pub jemalloc_available: Option<bool>,
    /// "puma 6.6.0", one per built-in server the runtime has.
    pub servers: Vec<String>,
    /// Where it is (a root's directory, a Ruby's path, JRuby's bin).
    pub location: Option<String>,
    /// What to do with it: how to build it, or why it cannot be read.
    pub note: Option<String>,
}

/// Lists every runtime; builds nothing.
pub fn list(reg: &Registry) -> Vec<Listed> {
    let mut out = vec![listed(SYSTEM, "system", Ok(Kind::System))];
    out.push(listed(JRUBY, "jruby", jruby_kind()));
    for r in debian::RELEASES {
        let kind = debian::built(r)
            .map(|dir| Kind::Root { release: r, dir })
            .ok_or_else(|| format!("not built: rackbench runtime add {}", r.name));
        out.push(listed(r.name, "debian", kind));
    }
    for (name, u) in &reg.users {
        out.push(listed(name, "ruby", Ok(Kind::Ruby(u.clone()))));
    }
    out
}

fn jruby_kind() -> Result<Kind, String> {
    let script = crate::host::rackbench_home().join("scripts/jruby-puma.sh");
    let path = std::process::Command::new(&script)
        .arg("path")
        .output()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    let bin = std::path::PathBuf::from(String::from_utf8_lossy(&path.stdout).trim());
    if bin.join("puma").is_file() {
        Ok(Kind::Jruby { bin })
    } else {
        Err("not built: rackbench runtime add jruby (downloads JRuby, compiles Puma's Java extension)".into())
    }
}

fn listed(name: &str, word: &str, kind: Result<Kind, String>) -> Listed {
    let blank = |note: String| Listed {
        name: name.into(),
        kind: word.into(),
        ready: false,
        ruby_description: None,
        yjit_available: None,
        jemalloc_available: None,
        servers: Vec::new(),
        location: None,
        note: Some(note),
    };
    let kind = match kind {
        Ok(k) => k,
        Err(note) => return blank(note),
    };
    let facts = match probe::facts(name, &kind) {
        Ok(f) => f,
        Err(e) => return blank(e.to_string()),
    };
    let location = match &kind {
        Kind::System => None,
        Kind::Root { dir, .. } => Some(dir.display().to_string()),
        Kind::Ruby(u) => Some(u.ruby.display().to_string()),
        Kind::Jruby { bin } => Some(bin.display().to_string()),
    };
    let rt = Runtime {
        name: name.into(),
        kind,
        facts,
    };
    Listed {
        name: name.into(),
        kind: word.into(),
        ready: true,
        ruby_description: Some(rt.facts.ruby_description.clone()),
        yjit_available: Some(rt.facts.yjit),
        jemalloc_available: Some(rt.facts.jemalloc.is_some() || rt.facts.linked_jemalloc),
        servers: server_versions(&rt),
        location,
        note: None,
    }
}

/// The built-in servers this runtime has, with their versions.
fn server_versions(rt: &Runtime) -> Vec<String> {
    let servers = Servers::builtin();
    let mut out = Vec::new();
    for name in ["puma", "unicorn", "thin", "passenger"] {
        let Ok(spec) = servers.get(name) else {
            continue;
        };
        let has = spec.requires.iter().all(|e| rt.find(e).is_some());
        if has && matches!(rt.kind, Kind::Jruby { .. }) && name != "puma" {
            continue;
        }
        if has {
            let v = rt
                .server_version(spec)
                .unwrap_or_else(|| format!("{name} (version unknown)"));
            out.push(v);
        }
    }
    out
}
