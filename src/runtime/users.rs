//! Users' own Rubies saved with `rackbench runtime add NAME --ruby PATH`:
//! a small TOML file each, beside the roots. Forgetting one leaves the
//! Ruby itself alone.

use super::home::{runtimes_dir, RuntimeError};
use super::kind::UserRuby;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The file a user's Ruby is saved in.
fn user_file(name: &str) -> PathBuf {
    runtimes_dir().join(format!("{name}.toml"))
}

/// The user Rubies saved with `rackbench runtime add NAME --ruby PATH`.
pub fn saved() -> Result<BTreeMap<String, UserRuby>, RuntimeError> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(runtimes_dir()) else {
        return Ok(out);
    };
    for e in entries.flatten() {
        let p = e.path();
        let (Some(stem), Some("toml")) = (
            p.file_stem().and_then(|s| s.to_str()),
            p.extension().and_then(|s| s.to_str()),
        ) else {
            continue;
        };
        let text = std::fs::read_to_string(&p)
            .map_err(|e| RuntimeError::Io(format!("{}: {e}", p.display())))?;
        let u: UserRuby =
            toml::from_str(&text).map_err(|e| RuntimeError::Io(format!("{}: {e}", p.display())))?;
        out.insert(stem.to_string(), u);
    }
    Ok(out)
}

/// Saves a user's Ruby under `name`.
pub fn save(name: &str, u: &UserRuby) -> Result<PathBuf, RuntimeError> {
    let p = user_file(name);
    std::fs::create_dir_all(runtimes_dir()).map_err(|e| RuntimeError::Io(e.to_string()))?;
    let text = toml::to_string(u).map_err(|e| RuntimeError::Io(e.to_string()))?;
    std::fs::write(&p, text).map_err(|e| RuntimeError::Io(format!("{}: {e}", p.display())))?;
    Ok(p)
}

/// Forgets a saved user Ruby (its files are the user's: untouched).
pub fn remove(name: &str) -> Result<bool, RuntimeError> {
    let p = user_file(name);
    if !p.exists() {
        return Ok(false);
    }
    std::fs::remove_file(&p).map_err(|e| RuntimeError::Io(format!("{}: {e}", p.display())))?;
    Ok(true)
}
