//! `runtime add|list|remove`: the places servers run from
//! (docs/RUNTIMES.md): the registry's rows, a root built, JRuby built, a
//! user's Ruby saved, one removed.

use super::sink::Sink;
use super::usage::usage;
use crate::runtime::{debian, list, Registry, UserRuby, JRUBY, SYSTEM};
use anyhow::Result;
use std::path::PathBuf;

/// Every runtime, ready or not.
pub fn list() -> Result<Vec<list::Listed>> {
    let registry = Registry::load(&Default::default()).map_err(|e| usage(e.to_string()))?;
    Ok(list::list(&registry))
}

/// Saves the user's own Ruby `name` (`ruby`, probed first, with its
/// `gemfile`), builds JRuby with Puma, or builds a Debian release root
/// (with the extra packages `with`); what it does is said to `sink`, the
/// runtime made is its result. Refusals are usage errors naming the fix.
pub fn add(
    name: &str,
    with: &[String],
    ruby: Option<PathBuf>,
    gemfile: Option<PathBuf>,
    sink: &dyn Sink,
) -> Result<()> {
    if let Some(ruby) = ruby {
        if name == SYSTEM || name == JRUBY || debian::release(name).is_some() {
            return Err(usage(format!(
                "'{name}' is a built-in runtime: save your Ruby under another name"
            )));
        }
        let ruby = std::path::absolute(&ruby)?;
        let gemfile = gemfile.map(std::path::absolute).transpose()?;
        let u = UserRuby { ruby, gemfile };
        let mut users = std::collections::BTreeMap::new();
        users.insert(name.to_string(), u.clone());
        // Probed before it is saved: a path that is not a Ruby is refused.
        let rt = Registry::load(&users)
            .and_then(|r| r.resolve(name, &mut |m| sink.note(m)))
            .map_err(|e| usage(e.to_string()))?;
        let file = crate::runtime::users::save(name, &u).map_err(|e| usage(e.to_string()))?;
        sink.out(&format!(
            "{name}: {} (saved in {})\n",
            rt.facts.ruby_description,
            file.display()
        ));
        return Ok(());
    }
    if name == JRUBY {
        let bin = crate::runtime::probe::jruby_bin(&mut |m| sink.note(m))
            .map_err(|e| usage(e.to_string()))?;
        sink.out(&format!("jruby: {}\n", bin.display()));
        return Ok(());
    }
    let Some(release) = debian::release(name) else {
        return Err(usage(format!(
            "'{name}' is not a Debian release rackbench builds ({}); for your own Ruby give --ruby PATH",
            debian::RELEASES
                .iter()
                .map(|r| r.name)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    if debian::built(release).is_some() && !with.is_empty() {
        return Err(usage(format!(
            "{name} is built already; to add packages remove it first: rackbench runtime remove {name}"
        )));
    }
    let started = std::time::Instant::now();
    sink.note(&format!(
        "building {name} from Debian {} ({})",
        release.suite,
        debian::mirror()
    ));
    let dir = debian::build(release, with).map_err(|e| usage(e.to_string()))?;
    sink.out(&format!(
        "{name}: {} ({:.0} s)\n",
        dir.display(),
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// Removes a built root or forgets a saved Ruby; the built-in ones and
/// names that are neither are usage errors.
pub fn remove(name: &str, sink: &dyn Sink) -> Result<()> {
    let done = if let Some(release) = debian::release(name) {
        debian::remove(release).map_err(|e| usage(e.to_string()))?
    } else if name == SYSTEM || name == JRUBY {
        return Err(usage(format!(
            "'{name}' is built in and cannot be removed{}",
            if name == JRUBY {
                " (its build is in the cache: scripts/jruby-puma.sh path)"
            } else {
                ""
            }
        )));
    } else {
        crate::runtime::users::remove(name).map_err(|e| usage(e.to_string()))?
    };
    if !done {
        return Err(usage(format!(
            "no runtime '{name}' to remove (see `rackbench runtime list`)"
        )));
    }
    sink.out(&format!("removed {name}\n"));
    Ok(())
}
