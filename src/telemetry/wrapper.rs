//! The rackup file that puts the telemetry middleware around a user's app
//! unchanged, and the middleware's source beside it.

use super::{DIR_ENV, MIDDLEWARE_RB};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

const WRAPPER_RU: &str = include_str!("../../ruby/telemetry/wrapper.ru");

/// What [`write_wrapper`] made: the rackup file to give the server in
/// place of the user's, and the environment to start the server with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrapper {
    /// The generated rackup file (the middleware's source sits beside it).
    pub rackup: PathBuf,
    /// Where the processes write their lines; read it with [`read`].
    pub data_dir: PathBuf,
    /// `RACKBENCH_TELEMETRY_DIR=<data_dir>`. The wrapper also names the
    /// directory itself, so a server that scrubs its apps' environment
    /// still reports.
    pub env: Vec<(String, String)>,
}

/// A Ruby double-quoted string literal for `s`, with nothing interpolated.
pub(super) fn ruby_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '#' => out.push_str("\\#"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Writes `telemetry.ru` (the user's `app` inside the middleware) and
/// `rackbench_telemetry.rb` into `wrapper_dir`, and creates `data_dir`
/// empty (lines of an earlier run there are removed, so one trial reads
/// only its own). `app` is made absolute; the user's file is read by the
/// server at start, not copied, so it runs unchanged from where it is.
pub fn write_wrapper(app: &Path, wrapper_dir: &Path, data_dir: &Path) -> Result<Wrapper> {
    let app = std::path::absolute(app).with_context(|| format!("locating {}", app.display()))?;
    if !app.is_file() {
        bail!(
            "{}: no such rackup file: give the path of the app's config.ru",
            app.display()
        );
    }
    let data_dir = std::path::absolute(data_dir)?;
    let (Some(app_s), Some(data_s)) = (app.to_str(), data_dir.to_str()) else {
        bail!("telemetry needs UTF-8 paths: rename {}", app.display());
    };
    std::fs::create_dir_all(wrapper_dir)
        .with_context(|| format!("creating {}", wrapper_dir.display()))?;
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    for e in std::fs::read_dir(&data_dir)?.flatten() {
        let n = e.file_name();
        let n = n.to_string_lossy();
        if n.starts_with("telemetry-") && n.ends_with(".jsonl") {
            std::fs::remove_file(e.path())?;
        }
    }
    std::fs::write(wrapper_dir.join("rackbench_telemetry.rb"), MIDDLEWARE_RB)?;
    let ru = WRAPPER_RU
        .replace("{{dir}}", &ruby_string(data_s))
        .replace("{{app}}", &ruby_string(app_s));
    let rackup = std::path::absolute(wrapper_dir.join("telemetry.ru"))?;
    std::fs::write(&rackup, ru).with_context(|| format!("writing {}", rackup.display()))?;
    Ok(Wrapper {
        rackup,
        env: vec![(DIR_ENV.to_string(), data_s.to_string())],
        data_dir,
    })
}
