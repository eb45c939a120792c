//! `rackbench runtime add|list|remove`: the places servers run from
//! (docs/RUNTIMES.md).

use super::usage;
use crate::runtime::{debian, list, Registry, UserRuby, JRUBY, SYSTEM};
use anyhow::Result;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct RuntimeArgs {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, Subcommand)]
pub enum Action {
    /// Every runtime: ready or not, its Ruby, its servers' versions.
    List {
        /// Print a JSON list.
        #[arg(long)]
        json: bool,
    },
    /// Build a Debian release root (debian-12, debian-13, debian-unstable),
    /// build JRuby with Puma (jruby), or save your own Ruby (NAME --ruby PATH).
    Add {
        name: String,
        /// Extra Debian packages for a release root (e.g. passenger).
        #[arg(long = "with", value_name = "PACKAGE")]
        with: Vec<String>,
        /// Your own Ruby's interpreter (rbenv, asdf, chruby, ruby-install: .../bin/ruby).
        #[arg(long)]
        ruby: Option<PathBuf>,
        /// A Bundler app's Gemfile: servers run through `bundle exec`.
        #[arg(long, requires = "ruby")]
        gemfile: Option<PathBuf>,
    },
    /// Remove a built root, JRuby's build is kept (its cache is shared), or forget a saved Ruby.
    Remove { name: String },
}

pub fn run(args: RuntimeArgs) -> Result<ExitCode> {
    match args.action {
        Action::List { json } => list_runtimes(json),
        Action::Add {
            name,
            with,
            ruby,
            gemfile,
        } => add(&name, &with, ruby, gemfile),
        Action::Remove { name } => remove(&name),
    }
}

fn registry() -> Result<Registry> {
    Registry::load(&Default::default()).map_err(|e| usage(e.to_string()))
}

fn list_runtimes(json: bool) -> Result<ExitCode> {
    let rows = list::list(&registry()?);
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    for r in &rows {
        let ruby = r.ruby_description.as_deref().unwrap_or("-");
        let ruby = ruby.split(" (").next().unwrap_or(ruby);
        println!(
            "{:<16} {:<7} {}",
            r.name,
            r.kind,
            if r.ready { ruby } else { "-" }
        );
        if r.ready {
            let mut has = r.servers.clone();
            if r.yjit_available == Some(true) {
                has.push("yjit".into());
            }
            if r.jemalloc_available == Some(true) {
                has.push("jemalloc".into());
            }
            println!("{:<24} {}", "", has.join(", "));
        }
        if let Some(where_) = &r.location {
            println!("{:<24} {where_}", "");
        }
        if let Some(note) = &r.note {
            println!("{:<24} {note}", "");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn add(
    name: &str,
    with: &[String],
    ruby: Option<PathBuf>,
    gemfile: Option<PathBuf>,
) -> Result<ExitCode> {
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
            .and_then(|r| r.resolve(name, &mut |m| eprintln!("{m}")))
            .map_err(|e| usage(e.to_string()))?;
        let file = crate::runtime::users::save(name, &u).map_err(|e| usage(e.to_string()))?;
        println!(
            "{name}: {} (saved in {})",
            rt.facts.ruby_description,
            file.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if name == JRUBY {
        let bin = crate::runtime::probe::jruby_bin(&mut |m| eprintln!("{m}"))
            .map_err(|e| usage(e.to_string()))?;
        println!("jruby: {}", bin.display());
        return Ok(ExitCode::SUCCESS);
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
    eprintln!(
        "building {name} from Debian {} ({})",
        release.suite,
        debian::mirror()
    );
    let dir = debian::build(release, with).map_err(|e| usage(e.to_string()))?;
    println!(
        "{name}: {} ({:.0} s)",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

fn remove(name: &str) -> Result<ExitCode> {
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
    println!("removed {name}");
    Ok(ExitCode::SUCCESS)
}
