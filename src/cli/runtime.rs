//! `rackbench runtime add|list|remove`: the places servers run from
//! (docs/RUNTIMES.md); app::runtime does the work, the list is printed
//! here.

use crate::app::runtime;
use crate::app::sink::Terminal;
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
        Action::List { json } => return list_runtimes(json),
        Action::Add {
            name,
            with,
            ruby,
            gemfile,
        } => runtime::add(&name, &with, ruby, gemfile, &Terminal::new())?,
        Action::Remove { name } => runtime::remove(&name, &Terminal::new())?,
    }
    Ok(ExitCode::SUCCESS)
}

fn list_runtimes(json: bool) -> Result<ExitCode> {
    let rows = runtime::list()?;
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
