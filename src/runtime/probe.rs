//! A runtime's facts, read from its own Ruby before any trial: its
//! version, whether it was built with YJIT, where its gems' executables
//! are, and whether it has libjemalloc to preload. JRuby's are read from
//! its build script instead: booting a JVM to learn them costs seconds.

use super::home::{runtimes_dir, RuntimeError};
use super::kind::{Facts, Kind, JRUBY};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Printed by the runtime's Ruby, one fact a line.
const SCRIPT: &str = r#"require "rbconfig"
puts RUBY_DESCRIPTION, RUBY_VERSION, (defined?(RUBY_ENGINE) ? RUBY_ENGINE : "ruby")
puts(defined?(RubyVM::YJIT) ? "yjit" : "no-yjit")
puts RbConfig.ruby
begin
  require "rubygems"
  puts Gem.bindir, File.join(Gem.user_dir, "bin")
rescue LoadError, StandardError
  puts "", ""
end
puts RbConfig::CONFIG["MAINLIBS"].to_s
"#;

/// Where Debian and other distributions put libjemalloc.
const JEMALLOC: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
    "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
    "/usr/lib64/libjemalloc.so.2",
    "/usr/lib/libjemalloc.so.2",
    "/usr/local/lib/libjemalloc.so.2",
];

/// Reads the facts of runtime `name` of `kind`.
pub fn facts(name: &str, kind: &Kind) -> Result<Facts, RuntimeError> {
    let err = |why: String| RuntimeError::Probe {
        name: name.into(),
        why,
    };
    match kind {
        Kind::Jruby { .. } => return jruby_facts().map_err(err),
        Kind::System => run_script(Command::new("ruby"), None),
        Kind::Root { dir, .. } => {
            let fs = crate::server::rootfs::RootFs::new(dir).map_err(err)?;
            let mut cmd = Command::new("/usr/bin/ruby");
            fs.apply(&mut cmd);
            run_script(cmd, Some(&fs))
        }
        Kind::Ruby(u) => {
            if !u.ruby.is_file() {
                return Err(err(format!(
                    "{}: no such Ruby (give the path of its bin/ruby)",
                    u.ruby.display()
                )));
            }
            run_script(Command::new(&u.ruby), None)
        }
    }
    .and_then(|text| parse(&text).ok_or_else(|| format!("its Ruby printed {text:?}")))
    .map(|mut f| {
        if let Kind::Ruby(u) = kind {
            f.bin_dirs = user_bin_dirs(name, &u.ruby, &f.bin_dirs);
        }
        f.jemalloc = find_jemalloc(kind);
        f
    })
    .map_err(err)
}

fn run_script(
    mut cmd: Command,
    root: Option<&crate::server::rootfs::RootFs>,
) -> Result<String, String> {
    let out = cmd
        .arg("-e")
        .arg(SCRIPT)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| match root {
            Some(r) => r.explain(&e),
            None => format!("cannot run its Ruby: {e}"),
        })?;
    if !out.status.success() {
        return Err(format!(
            "its Ruby failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The script's lines as facts; bin dirs are the gem dirs it printed.
fn parse(text: &str) -> Option<Facts> {
    let l: Vec<&str> = text.lines().collect();
    if l.len() < 8 {
        return None;
    }
    Some(Facts {
        ruby_description: l[0].into(),
        ruby_version: l[1].into(),
        engine: l[2].into(),
        yjit: l[3] == "yjit",
        bin_dirs: [l[4], l[5], l[6]]
            .iter()
            .enumerate()
            .filter(|(_, d)| !d.is_empty())
            .map(|(i, d)| {
                let p = PathBuf::from(d);
                // RbConfig.ruby is the interpreter: its folder.
                if i == 0 {
                    p.parent().map(Path::to_path_buf).unwrap_or(p)
                } else {
                    p
                }
            })
            .collect(),
        jemalloc: None,
        linked_jemalloc: l[7].contains("jemalloc"),
    })
}

/// A user Ruby's executables: its own folder first (a shim folder holding
/// `ruby` first of all when the interpreter has another name, so scripts
/// run with `#!/usr/bin/env ruby` get this Ruby), then its gem folders.
fn user_bin_dirs(name: &str, ruby: &Path, gem_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if ruby.file_name().is_some_and(|f| f != "ruby") {
        let shim = runtimes_dir().join(format!("{name}.bin"));
        let link = shim.join("ruby");
        let _ = std::fs::create_dir_all(&shim);
        let _ = std::fs::remove_file(&link);
        if std::os::unix::fs::symlink(ruby, &link).is_ok() {
            dirs.push(shim);
        }
    }
    if let Some(d) = ruby.parent() {
        dirs.push(d.to_path_buf());
    }
    for d in gem_dirs {
        if !dirs.contains(d) {
            dirs.push(d.clone());
        }
    }
    dirs
}

fn find_jemalloc(kind: &Kind) -> Option<PathBuf> {
    let base = match kind {
        Kind::Root { dir, .. } => dir.clone(),
        Kind::Jruby { .. } => return None,
        _ => PathBuf::from("/"),
    };
    JEMALLOC
        .iter()
        .find(|p| base.join(p.trim_start_matches('/')).exists())
        .map(PathBuf::from)
}

/// The jruby-puma script, from rackbench's own files.
fn jruby_script() -> PathBuf {
    crate::host::rackbench_home().join("scripts/jruby-puma.sh")
}

/// JRuby's bin directory, built on first use (downloads JRuby and
/// compiles Puma's Java extension: a minute or two, once).
pub fn jruby_bin(progress: &mut dyn FnMut(&str)) -> Result<PathBuf, RuntimeError> {
    let err = |why: String| RuntimeError::Build {
        name: JRUBY.into(),
        why,
    };
    let script = jruby_script();
    let path = Command::new(&script)
        .arg("path")
        .output()
        .map_err(|e| err(format!("{}: {e}", script.display())))?;
    let bin = PathBuf::from(String::from_utf8_lossy(&path.stdout).trim());
    if bin.join("puma").is_file() {
        return Ok(bin);
    }
    progress("building runtime jruby (JRuby from Maven Central, Puma's Java extension; first use)");
    let out = Command::new(&script)
        .arg("build")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| err(format!("{}: {e}", script.display())))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
        return Err(err(last.unwrap_or("the build script failed").trim().into()));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let bin = stdout.lines().last().unwrap_or("").trim();
    Ok(PathBuf::from(bin))
}

/// JRuby's facts from its build script's `version` line
/// (`jruby 9.4.8.0 / puma 5.6.5`).
fn jruby_facts() -> Result<Facts, String> {
    let out = Command::new(jruby_script())
        .arg("version")
        .output()
        .map_err(|e| e.to_string())?;
    let line = String::from_utf8_lossy(&out.stdout);
    let jruby = line
        .split(" / ")
        .next()
        .unwrap_or("jruby")
        .trim()
        .to_string();
    let bin = Command::new(jruby_script())
        .arg("path")
        .output()
        .map_err(|e| e.to_string())?;
    Ok(Facts {
        ruby_version: String::new(),
        ruby_description: jruby,
        engine: "jruby".into(),
        yjit: false,
        bin_dirs: vec![PathBuf::from(String::from_utf8_lossy(&bin.stdout).trim())],
        jemalloc: None,
        linked_jemalloc: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_lines_give_the_rubys_facts_and_its_executables_folders() {
        let text = "ruby 3.1.2p20 (2022-04-12 revision 4491bb740a) [x86_64-linux-gnu]\n3.1.2\nruby\nyjit\n/usr/bin/ruby3.1\n/usr/local/bin\n/root/.local/share/gem/ruby/3.1.0/bin\n-lz -lpthread\n";
        let f = parse(text).unwrap();
        assert_eq!(f.ruby_version, "3.1.2");
        assert!(f.yjit);
        assert!(!f.linked_jemalloc);
        assert_eq!(
            f.bin_dirs,
            [
                PathBuf::from("/usr/bin"),
                "/usr/local/bin".into(),
                "/root/.local/share/gem/ruby/3.1.0/bin".into()
            ]
        );
    }

    #[test]
    fn a_ruby_built_without_yjit_or_with_jemalloc_says_so() {
        let text = "ruby 3.3.8\n3.3.8\nruby\nno-yjit\n/usr/bin/ruby3.3\n\n\n-ljemalloc -lz\n";
        let f = parse(text).unwrap();
        assert!(!f.yjit);
        assert!(f.linked_jemalloc);
        assert_eq!(f.bin_dirs, [PathBuf::from("/usr/bin")]);
    }

    #[test]
    fn output_that_is_not_the_scripts_is_refused() {
        assert!(parse("ruby: command not found\n").is_none());
    }
}
